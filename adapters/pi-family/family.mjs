// The part of the agentsim adapters for Pi-family runtimes that does not depend on which
// runtime it drives: real Pi (../pi/adapter.mjs, @mariozechner/pi-coding-agent) and oh-my-pi
// (../oh-my-pi/adapter.mjs, @oh-my-pi/pi-coding-agent) share their model, tools, extension hooks,
// observers, operations, ids and clock, output sink, private folder and reset through this file.
//
// An adapter built on it supplies only what differs between the runtimes (README.md in this
// folder lists the seams): how the runtime is loaded, how a scenario's session is restored, how
// its AgentSession is created with the kit's model, tools and extensions, where its store is,
// how an output mode runs and what a reset must clear beyond the shared state. Nothing here
// reimplements runtime logic: every function maps a protocol line onto the runtime's own API or
// back.
//
// Built on the JavaScript adapter SDK (../sdk/js): the SDK owns the wire, this file the mapping
// that both runtimes share. Plain ESM with no build step, for Node 20 (Pi) and Bun (oh-my-pi).

import crypto from "node:crypto";
import fs from "node:fs";
import module from "node:module";
import os from "node:os";
import path from "node:path";
import vm from "node:vm";

import { causeError, causeOf, currentRun, log, RunBroken, runAdapter, setStdoutSink } from "../sdk/js/agentsim-adapter.mjs";

export { causeError, causeOf, currentRun, log };

/** The working directory the runtime is told about. Fixed, so that it reads the same in every run. */
export const FAMILY_CWD = "/agentsim/project";
/** The kit-owned model, named as the kit's scripted responses name it (src/sim/fakes.rs). */
export const PROVIDER = "agentsim";
export const API = "agentsim";
export const MODEL_ID = "scripted";

// ---------------------------------------------------------------------------------------------
// A private folder per process (`--jobs N` runs N adapters side by side), named after the pid
// ---------------------------------------------------------------------------------------------

/**
 * Creates `$TMPDIR/<prefix><pid>-*` with `agent/` and `sessions/` below it, removed at exit. The
 * kit kills an adapter's process group at the end of a broken run, so the exit handler does not
 * always run: folders of adapters with this prefix that are no longer alive are removed first.
 * Both folders exist from here on; a reset empties them (`emptyFolder`).
 */
export function privateWorkDir(prefix) {
    const pattern = new RegExp(`^${prefix.replace(/[-]/g, "\\-")}(\\d+)-`);
    let names = [];
    try {
        names = fs.readdirSync(os.tmpdir());
    } catch {
        // no temp folder to tidy
    }
    for (const name of names) {
        const pid = Number(pattern.exec(name)?.[1]);
        if (!pid || pid === process.pid) continue;
        try {
            process.kill(pid, 0);
            continue; // alive (or not ours to judge)
        } catch (error) {
            if (error.code !== "ESRCH") continue;
        }
        try {
            fs.rmSync(path.join(os.tmpdir(), name), { recursive: true, force: true });
        } catch {
            // another adapter got there first, or it is not ours
        }
    }
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}${process.pid}-`));
    const agentDir = path.join(workDir, "agent");
    const sessionDir = path.join(workDir, "sessions");
    fs.mkdirSync(agentDir, { recursive: true });
    fs.mkdirSync(sessionDir, { recursive: true });
    process.on("exit", () => {
        // AGENTSIM_KEEP_WORKDIR=1 keeps it for a post-mortem (the runtime's own logs are there).
        if (process.env.AGENTSIM_KEEP_WORKDIR === "1") return;
        try {
            fs.rmSync(workDir, { recursive: true, force: true });
        } catch {
            // best effort
        }
    });
    return { workDir, agentDir, sessionDir };
}

/**
 * Removes everything in `dir`, but not `dir` itself: a reset leaves the private folders as a
 * fresh process finds them. Removing and creating the folders instead cost 2.5 to 4.2 ms of every
 * run of Pi under `explore` (an `rmdir` on this machine's ext4 takes milliseconds), more than Pi's
 * own session set-up; removing the files in them costs about 0.1 ms.
 */
function emptyFolder(dir) {
    for (const name of fs.readdirSync(dir)) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------
// Output that is not the protocol
// ---------------------------------------------------------------------------------------------

// The runtime (or a library under it) writing to process.stdout must never corrupt the protocol
// (the SDK routes process.stdout.write through a sink). Outside an output mode it goes to stderr;
// while an output mode runs it is the mode's output sink (a `write` effect). What the runtime
// prints with console.error during a mode is kept for its rejection.
const outputModes = new Set();
setStdoutSink((text) => {
    const mode = [...outputModes].at(-1);
    if (mode) writeToOutputSink(mode.ctx, text);
    else fs.writeSync(2, text);
});
const realConsoleError = console.error.bind(console);
console.error = (...parts) => {
    for (const mode of outputModes) mode.consoleErrors.push(parts.map(String).join(" "));
    realConsoleError(...parts);
};

/** The output sink of the modes: one `write` effect per write, answered synchronously. */
function writeToOutputSink(ctx, text) {
    // An empty write (Pi's flushRawStdout waits for the stream with one) is not output.
    if (text === "") return;
    storeOutcome(ctx.effectSync("write", { text }));
}

/**
 * Runs `run()` (an output mode of the runtime) with process.stdout as the `write` effect of this
 * run; returns its value and what it printed with console.error meanwhile.
 */
export async function withOutputSink(ctx, run) {
    const outputMode = { ctx, consoleErrors: [] };
    outputModes.add(outputMode);
    try {
        return { value: await run(), consoleErrors: outputMode.consoleErrors };
    } finally {
        outputModes.delete(outputMode);
    }
}

/** A `failed` store or sink answer becomes the error the runtime's storage would throw. */
export function storeOutcome(completion) {
    if (completion.outcome.kind === "ok") return;
    throw causeError(completion.outcome.cause);
}

// ---------------------------------------------------------------------------------------------
// Determinism: the `ids` and `clock` rules of the current run
// ---------------------------------------------------------------------------------------------

// Readings outside a run (while the runtime loads, between runs) follow the default rules from a
// counter that every `start` rewinds, as in a fresh process; nothing of them reaches a run.
const outsideRun = { ids: 0, clock: 0 };
function nextId() {
    const run = currentRun();
    if (run) return run.ids.next();
    return `entry-${1 + outsideRun.ids++}`;
}
function readClock() {
    const run = currentRun();
    if (run) return run.clock.now();
    return 1767225600000 + outsideRun.clock++ * 1000;
}
function rewindOutsideRun() {
    outsideRun.ids = 0;
    outsideRun.clock = 0;
}

/**
 * Both runtimes make an entry id from `randomUUID()`: Pi takes `slice(0, 8)`, oh-my-pi
 * `slice(-8)`, each retried on a collision. Every `crypto.randomUUID` in `targets` is replaced by
 * one that returns the next id of the `ids` rule as a string object whose `idSlice` keeps the
 * whole id (a rule id may be longer than eight characters). `consume` says when the rule is read:
 * `"call"` (at every call, Pi's only caller is its id generator) or `"slice"` (only when the id
 * slice is taken: oh-my-pi also calls randomUUID for temporary file names and lock tokens, which
 * then get a real random UUID and leave the rule untouched).
 */
export function idsFromRule({ targets, idSlice, consume }) {
    const realRandomUUID = crypto.randomUUID.bind(crypto);
    const realSlice = String.prototype.slice;
    const replacement = function randomUUIDFromRule() {
        if (consume === "call") {
            const id = nextId();
            const boxed = new String(id);
            boxed.slice = (start, end) => (idSlice(start, end) ? id : realSlice.call(id, start, end));
            return boxed;
        }
        const random = realRandomUUID();
        const boxed = new String(random);
        boxed.slice = (start, end) => (idSlice(start, end) ? nextId() : realSlice.call(random, start, end));
        return boxed;
    };
    for (const target of targets) target.randomUUID = replacement;
    module.syncBuiltinESMExports();
}

// Date.now() and `new Date()` read the clock rule; every other use of Date is untouched.
export const RealDate = Date;
function RuleDate(...args) {
    if (!new.target) return new RealDate(readClock()).toString();
    return args.length === 0 ? new RealDate(readClock()) : new RealDate(...args);
}
RuleDate.prototype = RealDate.prototype;
RuleDate.now = readClock;
RuleDate.parse = RealDate.parse;
RuleDate.UTC = RealDate.UTC;
globalThis.Date = RuleDate;

// ---------------------------------------------------------------------------------------------
// The kit-owned model: a provider whose stream function issues a `model_request`
// ---------------------------------------------------------------------------------------------

/** Messages cross the protocol as they are unless the implementation maps them (`protocolMessage`). */
export function sameMessage(message) {
    return message;
}

function toolSpec(tool) {
    return { name: tool.name, description: tool.description ?? "", parameters: tool.parameters ?? {} };
}

/**
 * The provider's stream function: issues `model_request` with the request exactly as the runtime
 * passes it to its provider and returns the runtime's own assistant-message event stream, which
 * the kit's `model_chunk` and `model_final` answers fill as a real provider fills it: every
 * `model_chunk` is a text delta; the final answer streams each content block that was not
 * streamed yet (`text_*`, `thinking_*`, `toolcall_*` events, as pi-ai's providers do), then `done`
 * or `error`. (oh-my-pi keeps only the tool calls whose `toolcall_end` it saw.)
 * `systemPrompt(context)` gives the request's system prompt as one string (or null).
 */
export function streamFromKit(ctx, { createStream, systemPrompt, protocolMessage = sameMessage }, context, options) {
    const stream = createStream();
    const request = {
        systemPrompt: systemPrompt(context),
        messages: context.messages.map(protocolMessage),
        tools: (context.tools ?? []).map(toolSpec),
    };
    const pending = { stream, started: false, textIndex: -1, partial: null };
    ctx.effect("model_request", { signal: ctx.signalId(options?.signal), request }, { onChunk: (chunk) => pushChunk(pending, chunk) }).then(
        (final) => pushFinal(pending, final),
    );
    return stream;
}

function emptyPartial() {
    return {
        role: "assistant",
        content: [],
        api: API,
        provider: PROVIDER,
        model: MODEL_ID,
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
        stopReason: "stop",
        timestamp: 0,
    };
}

function startStream(pending) {
    if (pending.started) return;
    pending.started = true;
    pending.partial = emptyPartial();
    pending.stream.push({ type: "start", partial: structuredClone(pending.partial) });
}

/** `model_chunk`: the stream starts, a text block opens, the delta is pushed. */
function pushChunk(pending, completion) {
    startStream(pending);
    if (pending.textIndex < 0) {
        pending.textIndex = pending.partial.content.length;
        pending.partial.content.push({ type: "text", text: "" });
        pending.stream.push({ type: "text_start", contentIndex: pending.textIndex, partial: structuredClone(pending.partial) });
    }
    pending.partial.content[pending.textIndex].text += completion.text;
    pending.stream.push({
        type: "text_delta",
        contentIndex: pending.textIndex,
        delta: completion.text,
        partial: structuredClone(pending.partial),
    });
}

/** The content blocks of the final message that were not streamed as chunks, as a provider streams them. */
function pushBlocks(pending, message) {
    const partial = pending.partial;
    message.content.forEach((block, index) => {
        if (index === pending.textIndex) return;
        const push = (event) => pending.stream.push({ ...event, contentIndex: index, partial: structuredClone(partial) });
        partial.content[index] = structuredClone(block);
        switch (block.type) {
            case "text":
                push({ type: "text_start" });
                push({ type: "text_delta", delta: block.text });
                push({ type: "text_end", content: block.text });
                break;
            case "thinking":
                push({ type: "thinking_start" });
                push({ type: "thinking_delta", delta: block.thinking });
                push({ type: "thinking_end", content: block.thinking });
                break;
            case "toolCall":
                push({ type: "toolcall_start" });
                push({ type: "toolcall_delta", delta: JSON.stringify(block.arguments ?? {}) });
                push({ type: "toolcall_end", toolCall: structuredClone(block) });
                break;
            default:
                break;
        }
    });
}

/** `model_final`: the text block closes, then `done` or `error` with the kit's message. */
function pushFinal(pending, completion) {
    const stream = pending.stream;
    // A pi-ai AssistantMessage has `role: "assistant"`; kits before 0.2 sent the message without
    // it, and both runtimes record a message only by its role, so the adapter makes sure it is there.
    const message = { role: "assistant", ...completion.message };
    startStream(pending);
    if (pending.textIndex >= 0) {
        stream.push({
            type: "text_end",
            contentIndex: pending.textIndex,
            content: pending.partial.content[pending.textIndex].text,
            partial: structuredClone(pending.partial),
        });
    }
    pushBlocks(pending, message);
    if (message.stopReason === "error" || message.stopReason === "aborted") {
        stream.push({ type: "error", reason: message.stopReason, error: message });
    } else {
        stream.push({ type: "done", reason: message.stopReason, message });
    }
    stream.end(message);
}

/** The model entry the runtime's model registry gets for the kit-owned provider. */
export function kitModelDefinition(config) {
    return {
        id: MODEL_ID,
        name: MODEL_ID,
        reasoning: false,
        input: ["text", "image"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: config.context.total,
        maxTokens: 16384,
    };
}

// ---------------------------------------------------------------------------------------------
// Kit-owned tools, extensions and observers
// ---------------------------------------------------------------------------------------------

function textOf(content) {
    return (content ?? [])
        .filter((block) => block?.type === "text")
        .map((block) => block.text)
        .join("");
}

/**
 * The tool's `execute(toolCallId, params, signal)` (the first three arguments of both runtimes'
 * tool definitions): issues `tool_call` and settles with the kit's `tool` answer.
 */
export function kitToolExecute(ctx, spec) {
    return async (toolCallId, params, signal) => {
        const completion = await ctx.effect("tool_call", {
            signal: ctx.signalId(signal),
            call: { id: toolCallId, name: spec.name, arguments: params },
        });
        const outcome = completion.outcome;
        switch (outcome.kind) {
            case "ok":
                // A tool of these runtimes reports an error result only by throwing; the error's
                // message becomes the result text (Pi: agent-loop.js createErrorToolResult).
                if (outcome.isError) throw new Error(textOf(outcome.content));
                return { content: outcome.content, details: outcome.details };
            case "threw":
                throw new Error(outcome.message);
            default:
                // `aborted`: what the runtimes' own tools throw when their signal fires.
                throw new Error("Operation aborted");
        }
    };
}

/**
 * One scenario extension: `tool_call` and `tool_result` handlers that issue `hook` effects.
 * `rewriteArguments` is how the runtime takes a before hook's new arguments: `"mutate"` (Pi:
 * mutate `event.input` in place, its documented way) or `"return"` (oh-my-pi: return
 * `{input}`, its documented ToolCallEventResult field).
 */
export function kitExtension(ctx, name, { rewriteArguments }) {
    return (extensionApi) => {
        extensionApi.on("tool_call", async (event) => {
            const completion = await ctx.effect("hook", {
                extension: name,
                phase: "before",
                call: { id: event.toolCallId, name: event.toolName, arguments: event.input },
                result: null,
            });
            return hookAnswer(event, completion.answer, rewriteArguments);
        });
        extensionApi.on("tool_result", async (event) => {
            const completion = await ctx.effect("hook", {
                extension: name,
                phase: "after",
                call: { id: event.toolCallId, name: event.toolName, arguments: event.input },
                // The runtimes' tool_result events carry no message timestamp.
                result: {
                    role: "toolResult",
                    toolCallId: event.toolCallId,
                    toolName: event.toolName,
                    content: event.content,
                    details: event.details,
                    isError: event.isError,
                    timestamp: 0,
                },
            });
            return hookAnswer(event, completion.answer, rewriteArguments);
        });
    };
}

function hookAnswer(event, answer, rewriteArguments) {
    switch (answer.kind) {
        case "deny":
            return { block: true, reason: answer.reason };
        case "rewrite_arguments": {
            if (rewriteArguments === "return") return { input: structuredClone(answer.arguments) };
            const input = event.input;
            for (const key of Object.keys(input)) delete input[key];
            Object.assign(input, structuredClone(answer.arguments));
            return undefined;
        }
        case "rewrite_result":
            return { content: answer.content, isError: answer.isError };
        case "threw":
            throw new Error(answer.message);
        default:
            // `allow`, `observe`
            return undefined;
    }
}

/** The fields of each observed event, as the protocol's `notify` carries them. */
const OBSERVED_FIELDS = {
    message_end: ["type", "message"],
    turn_end: ["type", "message", "toolResults"],
    agent_end: ["type", "messages"],
};

/**
 * An observer: an extension whose handler for each listed event issues a `notify` effect and
 * waits for the kit; `threw` makes the handler throw (both runtimes contain it: their
 * ExtensionRunner reports it through emitError and goes on).
 */
export function kitObserver(ctx, observer, protocolMessage = sameMessage) {
    return (extensionApi) => {
        for (const eventName of observer.events) {
            extensionApi.on(eventName, async (event) => {
                const fields = OBSERVED_FIELDS[eventName] ?? Object.keys(event);
                const observed = Object.fromEntries(fields.filter((key) => key in event).map((key) => [key, protocolEventField(key, event[key], protocolMessage)]));
                const completion = await ctx.effect("notify", { observer: observer.name, event: observed });
                if (completion.outcome.kind === "threw") throw new Error(completion.outcome.message);
                return undefined;
            });
        }
    };
}

function protocolEventField(key, value, protocolMessage) {
    if (key === "message") return protocolMessage(value);
    if (key === "messages" || key === "toolResults") return value.map(protocolMessage);
    return value;
}

/** The scenario's extensions in order, then one extension per observer. */
export function kitExtensionFactories(ctx, scenario, options) {
    return [
        ...scenario.extensions.map((name) => kitExtension(ctx, name, options)),
        ...ctx.observers.map((observer) => kitObserver(ctx, observer, options.protocolMessage)),
    ];
}

// ---------------------------------------------------------------------------------------------
// Restore
// ---------------------------------------------------------------------------------------------

/**
 * The runtime's walk of the restored session from its leaf to the root
 * (`sessionManager.buildSessionContext()`, `hang` says how it is reported if it does not return).
 * Both runtimes follow parentId links without a visited set, so a parent cycle on the chosen chain
 * never returns. When the session's parent links hold a cycle anywhere, the walk runs under the
 * time limit of `withinTimeLimit`; when they hold none, every walk ends, and it runs as it is: the
 * limit starts and joins a watchdog thread at every call, which cost 1.5 ms of every run of Pi
 * under `explore` on a loaded machine, for a walk of a few microseconds.
 */
export function restoredContext(sessionManager, hang) {
    const walk = () => sessionManager.buildSessionContext();
    return parentChainsEnd(sessionManager) ? walk() : withinTimeLimit(hang, walk);
}

/**
 * Whether the parentId chain of every entry of the session ends, followed through the runtime's
 * own index (`getEntry`, in which a later entry with the same id shadows an earlier one) as its
 * walk follows it. A chain that comes back to an id already on it is a cycle. (A null or absent
 * parentId ends a chain; any other value is followed, also one the runtime would stop at, so a
 * doubtful session is walked under the limit.)
 */
function parentChainsEnd(sessionManager) {
    const ending = new Set();
    for (const { id } of sessionManager.getEntries()) {
        const chain = new Set();
        let entry = sessionManager.getEntry(id);
        while (entry !== undefined && !ending.has(entry.id)) {
            if (chain.has(entry.id)) return false;
            chain.add(entry.id);
            entry = entry.parentId === null || entry.parentId === undefined ? undefined : sessionManager.getEntry(entry.parentId);
        }
        for (const id of chain) ending.add(id);
    }
    return true;
}

/**
 * Runs a synchronous tree walk of the runtime under a 200 ms limit (a walk of a scenario's session takes well under a millisecond): Pi walks parentId links without a
 * visited set and never returns on a parent cycle. When the limit trips, V8 stops the walk and
 * unwinds its stack, and the adapter breaks the run (`RunBroken`: an `error` line marked
 * recoverable, `code` e.g. `pi.hang`, saying `what` did not return and `why`): the kit reports
 * the run broken at once instead of after its step timeout, and the process, whose runtime
 * state of the run is discarded at the `reset`, serves the next run without a new start (which
 * re-imports the runtime: over a second of CPU).
 */
function withinTimeLimit({ code, what, why }, fn) {
    // One context and one compiled call for every walk: creating a V8 context per call cost a
    // few milliseconds of every run (a profile of Pi under explore: 6% of the adapter's time).
    limitContext.fn = fn;
    try {
        return limitCall.runInContext(limitContext, { timeout: WALK_LIMIT_MS });
    } catch (error) {
        if (error?.code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
            throw new RunBroken(code, `${what} did not return within ${WALK_LIMIT_MS} ms: ${why} (the adapter stops it here instead of letting the kit's step timeout fire)`);
        }
        throw error;
    } finally {
        limitContext.fn = null;
    }
}

/**
 * The bound on one tree walk; it is paid in full on every run of a scenario whose walk hangs
 * (6 of the 474 schedules of CI's exploration of Pi: at 500 ms they were a quarter of its CPU
 * time, 101 to 103 schedules per second against 132 to 133 at 200 ms). A walk that ends takes
 * microseconds (over Pi's run of the corpus: median 6.5 us, at most 0.19 ms), so 200 ms still
 * leaves it a GC pause or a loaded machine's wait many times over.
 */
const WALK_LIMIT_MS = 200;
const limitContext = vm.createContext({ fn: null });
const limitCall = new vm.Script("fn()");

/** The session header the adapter writes before the scenario's entries (fixed values, no clock reading). */
export function sessionHeader(version, ctx) {
    return {
        type: "session",
        version,
        id: "agentsim-session",
        timestamp: new RealDate(ctx.clock.rule.startMs).toISOString(),
        cwd: FAMILY_CWD,
    };
}

/** The scenario's session as a session file: the header, then the entries verbatim. */
export function sessionFileText(header, entries) {
    return [header, ...entries].map((entry) => JSON.stringify(entry)).join("\n") + "\n";
}

// ---------------------------------------------------------------------------------------------
// Operations and settlements
// ---------------------------------------------------------------------------------------------

const RUN_REASONS = { stop: "stop", length: "length", error: "error", aborted: "aborted", toolUse: "stop" };

/**
 * `{kind: "run", reason, steps, messages}`: `steps` is the number of assistant messages in the
 * run's `agent_end` event, `reason` the last one's stopReason (`toolUse`, possible only if every
 * tool asked to terminate, maps to `stop`), `messages` the runtime's transcript mapped onto pi-ai
 * messages by the runtime's own `convertToLlm`.
 */
function runValue(transcript, runMessages) {
    const messages = runMessages ?? [];
    const assistants = messages.filter((message) => message.role === "assistant");
    const last = assistants[assistants.length - 1];
    return {
        kind: "run",
        reason: last ? (RUN_REASONS[last.stopReason] ?? "stop") : "stop",
        steps: assistants.length,
        messages: JSON.parse(JSON.stringify(transcript)),
    };
}

function freshRuntime(ctx) {
    return {
        ctx,
        scenario: ctx?.scenario ?? null,
        sessionManager: null,
        sessionPromise: null,
        session: null,
        /** Every agent run that ended (Agent `agent_end`), in order: its new messages and the transcript then. */
        runs: [],
        restoreFailure: null,
        /** What the implementation keeps per run beyond these (its store, its host, ...). */
        extra: {},
    };
}

/**
 * The adapter: `impl` is the implementation's part.
 *
 * | field | |
 * |---|---|
 * | `name`, `implementation` | stderr prefix; the `hello.implementation.name` and the prefix of its own error codes |
 * | `workPrefix` | prefix of the private temp folder |
 * | `features`, `unsupported` | `hello` |
 * | `locate(dirs)` | finds the installed runtime (synchronously, before `hello`): `{version, ...}`; throws a `SetupError` naming the install command |
 * | `load(located, dirs)` | imports it (after `hello`); throws a `SetupError` on an import error |
 * | `restore(scenario, ctx, runtime, dirs)` | opens the scenario's session; `{leaf, messages}` or `{restoreFailed}` |
 * | `createSession(runtime, dirs)` | the AgentSession, with the kit's model, tools, extensions and store |
 * | `transcript(session)` | the transcript as pi-ai messages (the runtime's convertToLlm) |
 * | `waitForIdle(session)`, `dispose(session)` | flush and dispose |
 * | `runMode(runtime, session, mode, text)` | an output mode; `withOutputSink` gives it the `write` effect |
 * | `reset(runtime, dirs)` | what a reset clears beyond the shared state |
 * | `state(runtime)` | optional, the state probe: `{leaf, persisted}`, the runtime's own leaf and entry count since the restore (declares `probes: ["state"]`) |
 */
export async function runFamilyAdapter(impl) {
    const dirs = privateWorkDir(impl.workPrefix);
    if (impl.environment) impl.environment(dirs);
    let runtime = freshRuntime(null);
    // The installed package is found before `hello` (which names its version); it is imported after.
    let setupFailure = null;
    let located = null;
    try {
        located = impl.locate(dirs);
    } catch (error) {
        setupFailure = setupMessage(impl, error);
    }
    const version = located?.version ?? "not-installed";

    /**
     * createAgentSession may append entries as it starts (Pi: a thinking_level_change on a
     * restored branch without one; model_change and thinking_level_change on a new session). It is
     * called in `setup`, right after `started` (protocol 2's set-up effects): those appends are the
     * runtime's own set-up, answered by the kit before the first operation, as a caller creates the
     * session before it calls anything.
     */
    function ensureSession() {
        if (!runtime.sessionPromise) {
            const state = runtime;
            // Creating the session does not wait for the kit (its appends are synchronous), but it may
            // wait for I/O the SDK cannot see (Bun reports no active resources): it is pending work.
            runtime.sessionPromise = state.ctx.hold(impl.createSession(state, dirs)).then((session) => {
                session.agent.subscribe((event) => {
                    // The transcript is taken here too: an output mode disposes the session when it
                    // ends (oh-my-pi's dispose then empties it), so a mode's result is its run's.
                    if (event.type === "agent_end") state.runs.push({ messages: event.messages, transcript: impl.transcript(session) });
                });
                state.session = session;
                return session;
            });
        }
        // If createAgentSession threw (an append it made failed), there is no AgentSession: every
        // call a caller makes fails with the error creating it gave (the runtime's own cause).
        return runtime.sessionPromise;
    }

    async function prompt(text) {
        const state = runtime;
        const session = await ensureSession();
        const runsBefore = state.runs.length;
        await session.prompt(text);
        return runValue(impl.transcript(session), state.runs.slice(runsBefore).at(-1)?.messages);
    }

    async function runMode(mode, text) {
        const state = runtime;
        const session = await ensureSession();
        const runsBefore = state.runs.length;
        await impl.runMode(state, session, mode, text);
        const run = state.runs.slice(runsBefore).at(-1);
        return runValue(run?.transcript ?? impl.transcript(session), run?.messages);
    }

    async function runOperation(operation) {
        if (runtime.restoreFailure) throw causeError(runtime.restoreFailure);
        switch (operation.op) {
            case "prompt":
                return prompt(operation.text);
            case "steer":
                await (await ensureSession()).steer(operation.text);
                return { kind: "unit" };
            case "followUp":
                await (await ensureSession()).followUp(operation.text);
                return { kind: "unit" };
            case "abort":
                await (await ensureSession()).abort();
                return { kind: "unit" };
            case "flush":
                // Neither runtime has a flush; Agent.waitForIdle() waits for the current run and its listeners.
                await impl.waitForIdle(await ensureSession());
                return { kind: "unit" };
            case "dispose": {
                // Pi's dispose() is synchronous, oh-my-pi's returns a promise.
                const disposing = impl.dispose(await ensureSession());
                if (disposing) await disposing;
                return { kind: "unit" };
            }
            case "mode":
                return runMode(operation.mode, operation.text);
            default: {
                // `library` (declared unsupported: the kit never sends it).
                const error = new Error(`${impl.implementation} has no library adapter ({reason, text}) of its own`);
                error.code = "adapter.unsupported";
                throw error;
            }
        }
    }

    /** The SIGTERM/SIGHUP listeners present before any run (an output mode may add its own). */
    const baselineSignalListeners = {};

    async function reset() {
        const state = runtime;
        runtime = freshRuntime(null);
        // The AgentSession: disconnect it from its agent and listeners (a discarded run's promises
        // never settle; it stays inert).
        try {
            impl.discard?.(state);
        } catch (error) {
            log("reset: discarding the AgentSession threw:", error);
        }
        // An output mode the kit abandoned mid-write: its sink and its console.error capture.
        outputModes.clear();
        // An output mode registers SIGTERM/SIGHUP handlers and removes them only when it returns;
        // an abandoned mode leaves them behind (they would dispose a dead session and exit).
        for (const [signal, baseline] of Object.entries(baselineSignalListeners)) {
            for (const listener of process.listeners(signal)) if (!baseline.has(listener)) process.off(signal, listener);
        }
        await impl.reset?.(state, dirs);
        // The session files of the run and anything the runtime wrote next to them; the agent dir back to empty.
        emptyFolder(dirs.sessionDir);
        emptyFolder(dirs.agentDir);
        rewindOutsideRun();
    }

    await runAdapter({
        name: impl.name,
        quiescence: impl.quiescence,
        hello: () => ({
            implementation: { name: impl.implementation, version },
            features: impl.features,
            unsupported: impl.unsupported,
            ...(impl.state ? { probes: ["state"] } : {}),
        }),
        // The state probe: read from the runtime's own session manager, never computed here.
        state: () => impl.state(runtime),
        async init() {
            if (!setupFailure) {
                try {
                    await impl.load(located, dirs);
                } catch (error) {
                    setupFailure = setupMessage(impl, error);
                }
            }
            // Reported as the answer to the first `start` (an `error` line the kit shows with its
            // code), not as a crash with a stack trace.
            if (setupFailure) log(`adapter.setup: ${setupFailure}`);
            for (const signal of ["SIGTERM", "SIGHUP"]) baselineSignalListeners[signal] = new Set(process.listeners(signal));
        },
        async start(scenario, ctx) {
            if (setupFailure) ctx.fail("adapter.setup", setupFailure);
            runtime = freshRuntime(ctx);
            rewindOutsideRun();
            return impl.restore(scenario, ctx, runtime, dirs);
        },
        // After `started`: the AgentSession is created, with its own appends as set-up effects.
        async setup() {
            if (runtime.restoreFailure) return;
            await ensureSession();
        },
        operation: (_op, operation) => runOperation(operation),
        reset,
    });
}

/** The runtime is not installed (or not the pinned version): the message names the command that installs it. */
export class SetupError extends Error {}

function setupMessage(impl, error) {
    return error instanceof SetupError ? error.message : `${impl.implementation} could not be set up: ${error?.stack ?? error}`;
}

/**
 * The entry module of an installed package below `root` (`root/node_modules/<name>`), resolved
 * from its package.json `exports["."]` (`import` condition) or `main`, as a file URL; and the
 * package.json. Throws a SetupError naming `installCommand` when it is not there.
 */
export function installedPackage(root, name, installCommand) {
    const packageDir = path.join(root, "node_modules", ...name.split("/"));
    const manifestPath = path.join(packageDir, "package.json");
    let manifest;
    try {
        manifest = JSON.parse(fs.readFileSync(manifestPath, "utf8"));
    } catch (error) {
        throw new SetupError(
            `${name} is not installed (${error.code === "ENOENT" ? `no ${manifestPath}` : `${manifestPath}: ${error.message}`}); install it with \`${installCommand}\``,
        );
    }
    const exported = manifest.exports?.["."];
    const entry = (typeof exported === "string" ? exported : (exported?.import ?? exported?.default)) ?? manifest.main ?? "index.js";
    return { manifest, url: new URL(`file://${path.join(packageDir, entry)}`).href, dir: packageDir };
}

/** Imports an installed package's entry module; an import error is a SetupError with the install command. */
export async function importInstalled(found, name, installCommand) {
    try {
        return await import(found.url);
    } catch (error) {
        throw new SetupError(`${name} ${found.manifest.version} is installed but does not import (${error?.message ?? error}); reinstall it with \`${installCommand}\``);
    }
}
