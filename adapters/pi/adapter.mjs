#!/usr/bin/env node
// agentsim adapter for real Pi (@mariozechner/pi-coding-agent, pinned 0.73.1).
//
// Speaks the agentsim adapter protocol, version 2 (docs/protocol.md and its v2 delta: many runs
// per process, `reset`, observers) through the JavaScript adapter SDK (../sdk/js), and drives
// Pi's own AgentSession in process: a kit-owned model provider, kit-owned tools made with
// defineTool, one inline extension per scenario extension and per scenario observer, and the kit
// as the store behind SessionManager._persist. README.md in this folder explains every mapping
// and every deviation; this file is plain Node 20 ESM with no build step.
//
// The SDK owns the wire: framing, turn-taking, strict parsing, effect ids, quiescence, reset.
// This file is the mapping, plus what Pi needs around it:
// - Pi's store is synchronous (SessionManager._persist), so appends and the output sink's writes
//   are `ctx.effectSync`: the SDK blocks on stdin until the kit answers, exactly where Pi would
//   wait for the disk.
// - Ids and times come from the scenario's rules: crypto.randomUUID (Pi's entry ids) and Date
//   (Pi's timestamps) are replaced inside this process and read the current run's rules.
// - One process serves many runs: Pi is imported once; `reset` discards everything of a run (see
//   resetPi), so that the next run behaves byte for byte as in a fresh process.

import crypto from "node:crypto";
import fs from "node:fs";
import module from "node:module";
import os from "node:os";
import path from "node:path";
import vm from "node:vm";

import { causeError, causeOf, currentRun, log, runAdapter, setStdoutSink } from "../sdk/js/agentsim-adapter.mjs";

// ---------------------------------------------------------------------------------------------
// Environment: before Pi is loaded. UTC so that Pi's "Current date" line does not depend on the
// machine; offline and a private agent dir so that nothing reads or writes the user's ~/.pi.
// ---------------------------------------------------------------------------------------------

process.env.TZ = "UTC";
process.env.PI_OFFLINE = "1";
process.env.PI_SKIP_VERSION_CHECK = "1";
// A private folder per process (`--jobs N` runs N adapters side by side), named after the pid.
// The kit kills an adapter's process group at the end of a broken run, so the exit handler below
// does not always run: folders of adapters that are no longer alive are removed at startup.
const WORK_PREFIX = "agentsim-pi-";
function removeStaleWorkDirs() {
    let names;
    try {
        names = fs.readdirSync(os.tmpdir());
    } catch {
        return;
    }
    for (const name of names) {
        const pid = Number(/^agentsim-pi-(\d+)-/.exec(name)?.[1]);
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
}
removeStaleWorkDirs();
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), `${WORK_PREFIX}${process.pid}-`));
const agentDir = path.join(workDir, "agent");
const sessionDir = path.join(workDir, "sessions");
fs.mkdirSync(agentDir, { recursive: true });
process.env.PI_CODING_AGENT_DIR = agentDir;
process.on("exit", () => {
    try {
        fs.rmSync(workDir, { recursive: true, force: true });
    } catch {
        // best effort
    }
});

/** The working directory Pi is told about. Fixed, so that it reads the same in every run. */
const PI_CWD = "/agentsim/project";
/** The kit-owned model, named as the kit's scripted responses name it (src/sim/fakes.rs). */
const PROVIDER = "agentsim";
const API = "agentsim";
const MODEL_ID = "scripted";

// ---------------------------------------------------------------------------------------------
// Output that is not the protocol
// ---------------------------------------------------------------------------------------------

// Pi (or a library under it) writing to process.stdout must never corrupt the protocol (the SDK
// routes process.stdout.write through a sink). Outside an output mode it goes to stderr; while
// an output mode runs it is the mode's output sink (a `write` effect). What Pi prints with
// console.error during a mode is kept for its rejection.
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

// ---------------------------------------------------------------------------------------------
// Determinism: the `ids` and `clock` rules of the current run
// ---------------------------------------------------------------------------------------------

// Readings outside a run (while Pi loads, between runs) follow the default rules from a counter
// that every `start` rewinds, as in a fresh process; nothing of them reaches a run.
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

// Pi's generateId (session-manager.js) is `randomUUID().slice(0, 8)`, retried on collision. The
// k-th call of randomUUID returns the k-th id of the rule; the returned string object keeps the
// whole id through that `slice(0, 8)` (a rule id may be longer than eight characters).
const realSlice = String.prototype.slice;
crypto.randomUUID = function randomUUIDFromRule() {
    const id = nextId();
    const boxed = new String(id);
    boxed.slice = (start, end) => (start === 0 && end === 8 ? id : realSlice.call(id, start, end));
    return boxed;
};
module.syncBuiltinESMExports();

// Date.now() and `new Date()` read the clock rule; every other use of Date is untouched.
const RealDate = Date;
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
// Pi, loaded once per process (after `hello`: loading it takes about a second)
// ---------------------------------------------------------------------------------------------

const piEntry = new URL(import.meta.resolve("@mariozechner/pi-coding-agent")); // .../dist/index.js
const piPackage = JSON.parse(fs.readFileSync(new URL("../package.json", piEntry), "utf8"));
let pi;
let piAi;

// ---------------------------------------------------------------------------------------------
// The per-run state. Everything a run creates hangs off `runtime`, replaced at every `start`.
// ---------------------------------------------------------------------------------------------

function freshRuntime(ctx) {
    return {
        ctx,
        scenario: ctx?.scenario ?? null,
        sessionManager: null,
        sessionPromise: null,
        session: null,
        /** The new messages of every agent run that ended (Agent `agent_end`), in order. */
        runs: [],
        restoreFailure: null,
    };
}
let runtime = freshRuntime(null);

function storeOutcome(completion) {
    if (completion.outcome.kind === "ok") return;
    throw causeError(completion.outcome.cause);
}

// ---------------------------------------------------------------------------------------------
// The kit-owned model: a provider whose streamSimple issues a `model_request`
// ---------------------------------------------------------------------------------------------

function toolSpec(tool) {
    return { name: tool.name, description: tool.description ?? "", parameters: tool.parameters ?? {} };
}

function streamFromKit(ctx, _model, context, options) {
    const stream = piAi.createAssistantMessageEventStream();
    const request = {
        systemPrompt: context.systemPrompt === undefined ? null : context.systemPrompt,
        messages: context.messages,
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

/** `model_final`: the text block closes, then `done` or `error` with the kit's message. */
function pushFinal(pending, completion) {
    const stream = pending.stream;
    // A pi-ai AssistantMessage has `role: "assistant"`; kits before 0.2 sent the message without
    // it, and Pi records a message only by its role, so the adapter makes sure it is there.
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
    if (message.stopReason === "error" || message.stopReason === "aborted") {
        stream.push({ type: "error", reason: message.stopReason, error: message });
    } else {
        stream.push({ type: "done", reason: message.stopReason, message });
    }
    stream.end(message);
}

// ---------------------------------------------------------------------------------------------
// Kit-owned tools (defineTool), extensions and observers (inline extension factories)
// ---------------------------------------------------------------------------------------------

function textOf(content) {
    return (content ?? [])
        .filter((block) => block?.type === "text")
        .map((block) => block.text)
        .join("");
}

function kitTool(ctx, spec) {
    return pi.defineTool({
        name: spec.name,
        label: spec.name,
        description: spec.description ?? "",
        parameters: spec.parameters ?? { type: "object" },
        execute: async (toolCallId, params, signal) => {
            const completion = await ctx.effect("tool_call", {
                signal: ctx.signalId(signal),
                call: { id: toolCallId, name: spec.name, arguments: params },
            });
            const outcome = completion.outcome;
            switch (outcome.kind) {
                case "ok":
                    // A Pi tool reports an error result only by throwing; the error's message
                    // becomes the result text (agent-loop.js createErrorToolResult).
                    if (outcome.isError) throw new Error(textOf(outcome.content));
                    return { content: outcome.content, details: outcome.details };
                case "threw":
                    throw new Error(outcome.message);
                default:
                    // `aborted`: what Pi's own tools throw when their signal fires (tools/edit.js, ...).
                    throw new Error("Operation aborted");
            }
        },
    });
}

function kitExtension(ctx, name) {
    return (extensionApi) => {
        extensionApi.on("tool_call", async (event) => {
            const completion = await ctx.effect("hook", {
                extension: name,
                phase: "before",
                call: { id: event.toolCallId, name: event.toolName, arguments: event.input },
                result: null,
            });
            return hookAnswer(event, completion.answer);
        });
        extensionApi.on("tool_result", async (event) => {
            const completion = await ctx.effect("hook", {
                extension: name,
                phase: "after",
                call: { id: event.toolCallId, name: event.toolName, arguments: event.input },
                // Pi's tool_result event carries no message timestamp.
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
            return hookAnswer(event, completion.answer);
        });
    };
}

function hookAnswer(event, answer) {
    switch (answer.kind) {
        case "deny":
            return { block: true, reason: answer.reason };
        case "rewrite_arguments": {
            // Pi's documented way: mutate event.input in place (extensions/types.d.ts).
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
 * waits for the kit; `threw` makes the handler throw (Pi contains it: ExtensionRunner reports
 * it through emitError and goes on).
 */
function kitObserver(ctx, observer) {
    return (extensionApi) => {
        for (const eventName of observer.events) {
            extensionApi.on(eventName, async (event) => {
                const fields = OBSERVED_FIELDS[eventName] ?? Object.keys(event);
                const observed = Object.fromEntries(fields.filter((key) => key in event).map((key) => [key, event[key]]));
                const completion = await ctx.effect("notify", { observer: observer.name, event: observed });
                if (completion.outcome.kind === "threw") throw new Error(completion.outcome.message);
                return undefined;
            });
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Restore and the AgentSession
// ---------------------------------------------------------------------------------------------

/** Pi walks parentId links without a visited set; on a parent cycle it never returns. */
function withinTimeLimit(ctx, what, fn) {
    try {
        return vm.runInContext("fn()", vm.createContext({ fn }), { timeout: 2000 });
    } catch (error) {
        if (error?.code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
            ctx.fail(
                "pi.hang",
                `${what} did not return within 2000 ms: Pi walks the parentId chain without cycle ` +
                    "detection, so a parent cycle on the chosen chain hangs it (the adapter stops it here instead " +
                    "of letting the kit's step timeout fire)",
            );
        }
        throw error;
    }
}

function startPi(scenario, ctx) {
    runtime = freshRuntime(ctx);
    outsideRun.ids = 0;
    outsideRun.clock = 0;
    const config = scenario.config;

    // Pi's own restore path: a session file (header + entries) opened by SessionManager.open,
    // then branch(leaf). The header is the adapter's, with fixed values (no clock reading).
    const session = scenario.session;
    const header = {
        type: "session",
        version: pi.CURRENT_SESSION_VERSION,
        id: "agentsim-session",
        timestamp: new RealDate(ctx.clock.rule.startMs).toISOString(),
        cwd: PI_CWD,
    };
    fs.mkdirSync(sessionDir, { recursive: true });
    const file = path.join(sessionDir, "session.jsonl");
    fs.writeFileSync(file, [header, ...session].map((entry) => JSON.stringify(entry)).join("\n") + "\n");
    const sessionManager = pi.SessionManager.open(file, sessionDir, PI_CWD);
    const leaf = config.activeLeafId;
    if (leaf !== null) {
        try {
            sessionManager.branch(leaf);
        } catch (error) {
            // Pi's one restore diagnostic: branch() throws "Entry <id> not found".
            const code = session.length === 0 ? "restore.unknown_leaf" : "path.unknown_leaf";
            runtime.restoreFailure = { code, message: error.message };
            return { restoreFailed: runtime.restoreFailure };
        }
    }
    // With a null leaf Pi keeps the leaf its index chose: the physically last entry.
    // The kit is the store from here on: every entry Pi hands to storage becomes an `append`,
    // answered before _persist returns (Pi's store is synchronous).
    sessionManager._persist = function persistThroughKit(entry) {
        try {
            storeOutcome(ctx.effectSync("append", { entry }));
        } catch (error) {
            if (ctx.live) log(`append of ${entry.id} failed; SessionManager._persist throws ${error.code}: ${error.message} into Pi`);
            throw error;
        }
    };
    runtime.sessionManager = sessionManager;
    const restored = withinTimeLimit(ctx, `SessionManager.buildSessionContext() at leaf ${JSON.stringify(sessionManager.getLeafId())}`, () =>
        sessionManager.buildSessionContext(),
    );
    return { leaf: sessionManager.getLeafId() ?? null, messages: restored.messages.length };
}

/**
 * createAgentSession appends entries to the session as it starts (thinking_level_change on a
 * restored branch without one; model_change and thinking_level_change on a new session). The
 * protocol carries no effect during `start`, so the AgentSession is created when the first
 * operation arrives, and those appends are that operation's first effects.
 */
function ensureSession() {
    if (!runtime.sessionPromise) {
        runtime.sessionPromise = createSession(runtime);
        return runtime.sessionPromise;
    }
    // If createAgentSession threw (an append it made failed), there is no AgentSession: the
    // operation that started it got Pi's error; later ones get the adapter's own code, so that
    // no one mistakes this for Pi repeating a poison cause.
    return runtime.sessionPromise.catch((error) => {
        const cause = causeOf(error);
        const failure = new Error(`there is no AgentSession: createAgentSession threw ${cause.code}: ${cause.message}`);
        failure.code = "adapter.no_session";
        throw failure;
    });
}

async function createSession(state) {
    const { ctx, scenario } = state;
    const config = scenario.config;
    const resources = scenario.resources;

    const authStorage = pi.AuthStorage.inMemory();
    authStorage.setRuntimeApiKey(PROVIDER, "agentsim");
    const modelRegistry = pi.ModelRegistry.inMemory(authStorage);
    modelRegistry.registerProvider(PROVIDER, {
        api: API,
        baseUrl: "http://agentsim.invalid",
        apiKey: "agentsim",
        streamSimple: (model, context, options) => streamFromKit(ctx, model, context, options),
        models: [
            {
                id: MODEL_ID,
                name: MODEL_ID,
                reasoning: false,
                input: ["text", "image"],
                cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
                contextWindow: config.context.total,
                maxTokens: 16384,
            },
        ],
    });
    const model = modelRegistry.find(PROVIDER, MODEL_ID);
    if (!model) ctx.fail("adapter.setup", "the agentsim model was not registered");

    const settingsManager = pi.SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } });
    const skillRoot = path.posix.join(PI_CWD, ".pi", "skills");
    const resourceLoader = new pi.DefaultResourceLoader({
        cwd: PI_CWD,
        agentDir,
        settingsManager,
        noExtensions: true,
        noSkills: true,
        noPromptTemplates: true,
        noThemes: true,
        noContextFiles: true,
        systemPrompt: config.systemPrompt ?? undefined,
        appendSystemPrompt: [],
        agentsFilesOverride: () => ({
            agentsFiles: (resources.instructions ?? []).map((file) => ({ path: file.path, content: file.content })),
        }),
        skillsOverride: () => ({
            skills: (resources.skills ?? []).map((skill) => ({
                name: skill.name,
                description: skill.description,
                filePath: path.posix.join(skillRoot, skill.name, "SKILL.md"),
                baseDir: path.posix.join(skillRoot, skill.name),
                sourceInfo: pi.createSyntheticSourceInfo(path.posix.join(skillRoot, skill.name, "SKILL.md"), { source: "agentsim" }),
                disableModelInvocation: false,
            })),
            diagnostics: [],
        }),
        // The scenario's extensions in order, then one extension per observer.
        extensionFactories: [
            ...scenario.extensions.map((name) => kitExtension(ctx, name)),
            ...ctx.observers.map((observer) => kitObserver(ctx, observer)),
        ],
    });
    await resourceLoader.reload();

    const tools = scenario.tools.map((spec) => kitTool(ctx, spec));
    const { session } = await pi.createAgentSession({
        cwd: PI_CWD,
        agentDir,
        model,
        authStorage,
        modelRegistry,
        settingsManager,
        sessionManager: state.sessionManager,
        resourceLoader,
        customTools: tools,
        tools: tools.map((tool) => tool.name),
    });
    session.agent.subscribe((event) => {
        if (event.type === "agent_end") state.runs.push(event.messages);
    });
    state.session = session;
    return session;
}

// ---------------------------------------------------------------------------------------------
// Operations and settlements
// ---------------------------------------------------------------------------------------------

const RUN_REASONS = { stop: "stop", length: "length", error: "error", aborted: "aborted", toolUse: "stop" };

function runValue(session, runMessages) {
    const messages = runMessages ?? [];
    const assistants = messages.filter((message) => message.role === "assistant");
    const last = assistants[assistants.length - 1];
    return {
        kind: "run",
        reason: last ? (RUN_REASONS[last.stopReason] ?? "stop") : "stop",
        steps: assistants.length,
        // Pi's transcript may hold its own message kinds (compactionSummary, branchSummary,
        // custom); pi.convertToLlm is Pi's own mapping of them onto pi-ai messages.
        messages: JSON.parse(JSON.stringify(pi.convertToLlm(session.messages))),
    };
}

async function prompt(text) {
    const state = runtime;
    const session = await ensureSession();
    const runsBefore = state.runs.length;
    await session.prompt(text);
    return runValue(session, state.runs.slice(runsBefore).at(-1));
}

/** The output sink of the modes: one `write` effect per write, answered synchronously. */
function writeToOutputSink(ctx, text) {
    // flushRawStdout() writes "" to wait for the stream; that is not output.
    if (text === "") return;
    storeOutcome(ctx.effectSync("write", { text }));
}

async function runMode(mode, text) {
    const state = runtime;
    const session = await ensureSession();
    if (mode === "interactive") {
        // Pi's interactive mode is the terminal UI (InteractiveMode): it needs a TTY and a human.
        const error = new Error("Pi's interactive mode is a terminal UI that the adapter cannot drive in process");
        error.code = "adapter.unsupported";
        throw error;
    }
    // `print` is `pi -p` (runPrintMode, mode "text"); `json` is `pi --mode json`; any other name is
    // handed to runPrintMode unchanged, as an in-process caller of Pi would.
    const printMode = mode === "print" ? "text" : mode;
    const host = {
        session,
        setRebindSession() {},
        // AgentSessionRuntime.dispose(): print mode is single-shot and ends the runtime.
        dispose: async () => session.dispose(),
    };
    const outputMode = { ctx: state.ctx, consoleErrors: [] };
    outputModes.add(outputMode);
    const runsBefore = state.runs.length;
    let exitCode;
    try {
        exitCode = await pi.runPrintMode(host, { mode: printMode, initialMessage: text });
    } finally {
        outputModes.delete(outputMode);
    }
    if (exitCode === 0) return runValue(session, state.runs.slice(runsBefore).at(-1));
    const error = new Error(outputMode.consoleErrors.join("\n") || `runPrintMode returned exit code ${exitCode}`);
    error.code = `exitCode.${exitCode}`;
    throw error;
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
            // Pi has no flush; Agent.waitForIdle() waits for the current run and its listeners.
            await (await ensureSession()).agent.waitForIdle();
            return { kind: "unit" };
        case "dispose":
            (await ensureSession()).dispose();
            return { kind: "unit" };
        case "mode":
            return runMode(operation.mode, operation.text);
        default: {
            // `library` (declared unsupported: the kit never sends it).
            const error = new Error("Pi has no library adapter ({reason, text}) of its own");
            error.code = "adapter.unsupported";
            throw error;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reset: everything a run left in this process goes, so that the next run starts as in a fresh one
// ---------------------------------------------------------------------------------------------

/** The SIGTERM/SIGHUP listeners present before any run (runPrintMode adds its own per mode). */
const baselineSignalListeners = {};
function recordSignalListeners() {
    for (const signal of ["SIGTERM", "SIGHUP"]) baselineSignalListeners[signal] = new Set(process.listeners(signal));
}

function resetPi() {
    const state = runtime;
    runtime = freshRuntime(null);
    // The AgentSession: disconnect it from its agent and listeners, invalidate its extensions
    // (dispose() appends nothing). A discarded run's promises never settle; it stays inert.
    try {
        state.session?.dispose();
    } catch (error) {
        log("reset: AgentSession.dispose() threw:", error);
    }
    // An output mode the kit abandoned mid-write: its sink and its console.error capture.
    outputModes.clear();
    // runPrintMode registers SIGTERM/SIGHUP handlers and removes them only when it returns; an
    // abandoned mode leaves them behind (they would dispose a dead session and exit the process).
    for (const [signal, baseline] of Object.entries(baselineSignalListeners)) {
        for (const listener of process.listeners(signal)) if (!baseline.has(listener)) process.off(signal, listener);
    }
    // pi-ai's process-wide API registry holds the run's stream function (ModelRegistry.registerProvider
    // puts it there under `provider:agentsim`); the next run registers its own.
    piAi.unregisterApiProviders?.(`provider:${PROVIDER}`);
    // The session file of the run and anything Pi wrote next to it; the agent dir back to empty.
    fs.rmSync(sessionDir, { recursive: true, force: true });
    fs.rmSync(agentDir, { recursive: true, force: true });
    fs.mkdirSync(agentDir, { recursive: true });
    // Readings outside a run start over, as in a fresh process.
    outsideRun.ids = 0;
    outsideRun.clock = 0;
}

// ---------------------------------------------------------------------------------------------
// The adapter
// ---------------------------------------------------------------------------------------------

await runAdapter({
    name: "pi-adapter",
    hello: {
        implementation: { name: "pi", version: piPackage.version },
        features: ["steer", "followUp", "abort", "flush", "dispose", "mode", "chunks", "observers"],
        unsupported: {
            library: "Pi has no library adapter returning {reason, text}; its SDK is AgentSession itself",
        },
    },
    async init() {
        pi = await import("@mariozechner/pi-coding-agent");
        piAi = await import("@mariozechner/pi-ai");
        if (pi.VERSION !== piPackage.version) {
            log(`fatal: adapter.setup: Pi reports version ${pi.VERSION}, its package.json ${piPackage.version}`);
            process.exit(1);
        }
        recordSignalListeners();
    },
    start: startPi,
    operation: (_op, operation) => runOperation(operation),
    reset: resetPi,
});
