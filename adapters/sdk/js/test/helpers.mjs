// Test helpers: drive an adapter process through pipes the way the kit does, one line at a
// time, collecting its answer up to `idle`, and checking that it says nothing after `idle`.
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const SDK_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const TEMPLATE = path.join(SDK_DIR, "template-adapter.mjs");
export const FIXTURES = path.join(SDK_DIR, "fixtures");
export const REPO_ROOT = path.resolve(SDK_DIR, "..", "..", "..");

export const IDLE = '{"type":"idle"}';

/**
 * The JavaScript runtime the adapters under test run on: node (the one running the tests), or
 * `AGENTSIM_JS_RUNTIME` (a path to Bun, say: its event loop shows the SDK less of its pending work).
 */
export const ADAPTER_RUNTIME = process.env.AGENTSIM_JS_RUNTIME || process.execPath;

export class AdapterProcess {
    constructor(script, { env = {}, args = [] } = {}) {
        this.child = spawn(ADAPTER_RUNTIME, [script, ...args], {
            stdio: ["pipe", "pipe", "pipe"],
            env: { ...process.env, AGENTSIM_PROTOCOL: "", ...env },
        });
        this.lines = [];
        this.partial = "";
        this.stderr = "";
        this.waiters = [];
        this.exited = false;
        this.child.stdout.setEncoding("utf8");
        this.child.stdout.on("data", (data) => {
            const parts = (this.partial + data).split("\n");
            this.partial = parts.pop();
            this.lines.push(...parts);
            this.#wake();
        });
        this.child.stderr.setEncoding("utf8");
        this.child.stderr.on("data", (data) => (this.stderr += data));
        this.exit = once(this.child, "exit").then(([code, signal]) => {
            this.exited = true;
            this.#wake();
            return { code, signal };
        });
        this.child.stdin.on("error", () => {});
    }

    #wake() {
        for (const wake of this.waiters.splice(0)) wake();
    }

    /** The next stdout line, or throws after `timeoutMs`. */
    async nextLine(timeoutMs = 10000) {
        const deadline = Date.now() + timeoutMs;
        while (this.lines.length === 0) {
            if (this.exited) throw new Error(`the adapter exited; stderr:\n${this.stderr}`);
            const left = deadline - Date.now();
            if (left <= 0) throw new Error(`no line within ${timeoutMs} ms; stderr:\n${this.stderr}`);
            await new Promise((resolve) => {
                const timer = setTimeout(resolve, left);
                this.waiters.push(() => {
                    clearTimeout(timer);
                    resolve();
                });
            });
        }
        return this.lines.shift();
    }

    async hello() {
        return this.nextLine(20000);
    }

    /** Lines up to and including the next `idle`. */
    async untilIdle(timeoutMs) {
        const answer = [];
        for (;;) {
            const line = await this.nextLine(timeoutMs);
            answer.push(line);
            // An `idle` may carry the runtime's state (the state probe).
            if (line === IDLE || line.startsWith('{"type":"idle","state":')) return answer;
        }
    }

    /** Writes one kit line (an object or a raw string) without waiting. */
    write(message) {
        this.child.stdin.write(`${typeof message === "string" ? message : JSON.stringify(message)}\n`);
    }

    /** Writes one kit line and returns the answer up to `idle`, then checks the adapter is silent. */
    async send(message, { quietMs = 60, timeoutMs } = {}) {
        this.write(message);
        const answer = await this.untilIdle(timeoutMs);
        await this.quiet(quietMs);
        return answer;
    }

    /** Asserts that nothing arrives on stdout for `ms`. */
    async quiet(ms = 60) {
        await new Promise((resolve) => setTimeout(resolve, ms));
        if (this.lines.length > 0 || this.partial !== "") {
            throw new Error(`the adapter wrote after idle: ${JSON.stringify([...this.lines, this.partial])}`);
        }
    }

    close() {
        this.child.stdin.end();
        return this.exit;
    }

    kill() {
        if (!this.exited) this.child.kill("SIGKILL");
    }
}

export function scenario(overrides = {}) {
    return {
        config: {
            activeLeafId: null,
            systemPrompt: "BASE SYSTEM",
            maxSteps: 8,
            context: { total: 100000, reservedOutput: 0, safetyMargin: 0 },
            ...(overrides.config ?? {}),
        },
        session: overrides.session ?? [],
        resources: overrides.resources ?? { instructions: [], skills: [] },
        tools: overrides.tools ?? [],
        extensions: overrides.extensions ?? [],
        ids: overrides.ids ?? { prefix: "entry-", start: 1 },
        clock: overrides.clock ?? { startMs: 1767225600000, stepMs: 1000 },
        faults: overrides.faults ?? { appends: [], writes: [] },
        ...(overrides.observers ? { observers: overrides.observers } : {}),
    };
}

export const start = (overrides) => ({ type: "start", scenario: scenario(overrides) });
export const prompt = (op, text) => ({ type: "operation", op, operation: { op: "prompt", text } });
export const complete = (effect, completion) => ({ type: "complete", effect, completion });
export const appendOk = (effect) => complete(effect, { kind: "append", outcome: { kind: "ok" } });
/** An assistant message as the kit sends it in `model_final` (pi-ai's whole shape). */
export const assistantMessage = (text) => ({
    role: "assistant",
    content: [{ type: "text", text }],
    api: "agentsim",
    provider: "agentsim",
    model: "scripted",
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "stop",
    timestamp: 0,
});
/** `assistantMessage(text)` as one line writes it. */
export const ASSISTANT = (text) => JSON.stringify(assistantMessage(text));
export const final = (effect, text = "done") => complete(effect, { kind: "model_final", message: assistantMessage(text) });

export const parse = (lines) => lines.map((line) => JSON.parse(line));
