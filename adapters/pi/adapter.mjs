#!/usr/bin/env node
// agentsim adapter for real Pi (@mariozechner/pi-coding-agent, pinned 0.73.1).
//
// Speaks the agentsim adapter protocol, version 1 (docs/protocol.md), over stdin/stdout as JSON
// lines and drives Pi's own AgentSession in process: a kit-owned model provider, kit-owned tools
// made with defineTool, one inline extension per scenario extension, and the kit as the store
// behind SessionManager._persist. README.md in this folder explains every mapping and every
// deviation; this file is plain Node 20 ESM with no build step.
//
// Invariants:
// - stdout carries protocol lines only, written synchronously (fs.writeSync) in the order things
//   happen. Anything Pi itself writes to process.stdout goes to stderr (outside an output mode)
//   or becomes a `write` effect (inside one). Diagnostics go to stderr.
// - stdin is read synchronously (fs.readSync), never through process.stdin, so that Pi's
//   synchronous store (SessionManager._persist, appendFileSync in a real session file) can wait
//   for the kit's answer to an `append` exactly where Pi would wait for the disk.
// - Ids and times come from the scenario's rules: crypto.randomUUID (Pi's entry ids) and Date
//   (Pi's timestamps) are replaced inside this process only.

import crypto from "node:crypto";
import fs from "node:fs";
import module from "node:module";
import os from "node:os";
import path from "node:path";
import vm from "node:vm";

// ---------------------------------------------------------------------------------------------
// Environment: before Pi is loaded. UTC so that Pi's "Current date" line does not depend on the
// machine; offline and a private agent dir so that nothing reads or writes the user's ~/.pi.
// ---------------------------------------------------------------------------------------------

process.env.TZ = "UTC";
process.env.PI_OFFLINE = "1";
process.env.PI_SKIP_VERSION_CHECK = "1";
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentsim-pi-"));
const agentDir = path.join(workDir, "agent");
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
// Diagnostics and wire output
// ---------------------------------------------------------------------------------------------

function log(...parts) {
    const text = parts.map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" ");
    writeAll(2, `[pi-adapter] ${text}\n`);
}

function writeAll(fd, text) {
    const buffer = Buffer.from(text, "utf8");
    let offset = 0;
    while (offset < buffer.length) {
        try {
            offset += fs.writeSync(fd, buffer, offset, buffer.length - offset);
        } catch (error) {
            if (error.code === "EAGAIN") {
                sleepMs(1);
                continue;
            }
            throw error;
        }
    }
}

function send(message) {
    writeAll(1, `${JSON.stringify(message)}\n`);
}

/** The adapter cannot go on: tell the kit (`error`), say why on stderr, exit non-zero. */
function fail(message, code) {
    log(`fatal: ${code}: ${message}`);
    try {
        send({ type: "error", code, message });
    } finally {
        process.exit(1);
    }
}

const sleepCell = new Int32Array(new SharedArrayBuffer(4));
function sleepMs(ms) {
    Atomics.wait(sleepCell, 0, 0, ms);
}

// Pi (or a library under it) writing to process.stdout must never corrupt the protocol. Outside
// an output mode it goes to stderr; while an output mode runs it is the mode's output sink (a
// `write` effect). What Pi prints with console.error during a mode is kept for its rejection.
const outputModes = new Set();
process.stdout.write = (chunk, encodingOrCallback, callback) => {
    const done = typeof encodingOrCallback === "function" ? encodingOrCallback : callback;
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    if (outputModes.size > 0) {
        writeToOutputSink(text);
    } else {
        writeAll(2, text);
    }
    if (done) queueMicrotask(() => done(null));
    return true;
};
const realConsoleError = console.error.bind(console);
console.error = (...parts) => {
    for (const mode of outputModes) mode.consoleErrors.push(parts.map(String).join(" "));
    realConsoleError(...parts);
};

// ---------------------------------------------------------------------------------------------
// stdin: synchronous line reader
// ---------------------------------------------------------------------------------------------

const LINE_BYTES_MAX = 4 * 1024 * 1024;
const readState = { pending: [], pendingBytes: 0, lines: [] };

function readLineSync() {
    const chunk = Buffer.alloc(64 * 1024);
    while (readState.lines.length === 0) {
        let count;
        try {
            count = fs.readSync(0, chunk, 0, chunk.length, null);
        } catch (error) {
            if (error.code === "EAGAIN") {
                sleepMs(1);
                continue;
            }
            if (error.code === "EOF") {
                count = 0;
            } else {
                throw error;
            }
        }
        if (count === 0) {
            // The kit closed stdin: the same as shutdown.
            process.exit(0);
        }
        let start = 0;
        for (let index = 0; index < count; index++) {
            if (chunk[index] !== 0x0a) continue;
            readState.pending.push(Buffer.from(chunk.subarray(start, index)));
            readState.lines.push(Buffer.concat(readState.pending).toString("utf8"));
            readState.pending = [];
            readState.pendingBytes = 0;
            start = index + 1;
        }
        if (start < count) {
            readState.pending.push(Buffer.from(chunk.subarray(start, count)));
            readState.pendingBytes += count - start;
            if (readState.pendingBytes > LINE_BYTES_MAX) fail("an input line exceeds 4 MiB", "input.oversize");
        }
    }
    return readState.lines.shift();
}

function readMessageSync() {
    for (;;) {
        const line = readLineSync();
        if (line.trim() === "") continue;
        let message;
        try {
            message = JSON.parse(line);
        } catch (error) {
            fail(`an input line is not JSON (${error.message}): ${line.slice(0, 200)}`, "input.garbage");
        }
        if (message === null || typeof message !== "object" || typeof message.type !== "string") {
            fail(`an input line has no "type": ${line.slice(0, 200)}`, "input.garbage");
        }
        return message;
    }
}

// ---------------------------------------------------------------------------------------------
// Determinism: the `ids` and `clock` rules
// ---------------------------------------------------------------------------------------------

const rules = {
    ids: { prefix: "entry-", start: 1 },
    clock: { startMs: 1767225600000, stepMs: 1000 },
    idsIssued: 0,
    clockReads: 0,
};

// Pi's generateId (session-manager.js) is `randomUUID().slice(0, 8)`, retried on collision. The
// k-th call of randomUUID returns the k-th id of the rule; the returned string object keeps the
// whole id through that `slice(0, 8)` (a rule id may be longer than eight characters).
const realSlice = String.prototype.slice;
crypto.randomUUID = function randomUUIDFromRule() {
    const id = `${rules.ids.prefix}${rules.ids.start + rules.idsIssued}`;
    rules.idsIssued += 1;
    const boxed = new String(id);
    boxed.slice = (start, end) => (start === 0 && end === 8 ? id : realSlice.call(id, start, end));
    return boxed;
};
module.syncBuiltinESMExports();

// Date.now() and `new Date()` read the clock rule; every other use of Date is untouched.
const RealDate = Date;
function readClock() {
    const value = rules.clock.startMs + rules.clockReads * rules.clock.stepMs;
    rules.clockReads += 1;
    return value;
}
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
// Effects the kit completes
// ---------------------------------------------------------------------------------------------

const effects = { next: 1, pending: new Map() };
/** Input lines read while Pi was blocked in a synchronous store call; handled once it returns. */
const deferred = [];

function emitEffect(effect, pending) {
    const id = effects.next++;
    send({ type: "effect", effect: { kind: effect.kind, id, ...effect } });
    if (pending) effects.pending.set(id, pending);
    return id;
}

const signals = { ids: new Map(), next: 1 };
/** A small integer for each distinct AbortSignal object; `abort_signal` when it fires. */
function signalId(signal) {
    if (!signal) return 0;
    let id = signals.ids.get(signal);
    if (id !== undefined) return id;
    id = signals.next++;
    signals.ids.set(signal, id);
    const fired = () => send({ type: "abort_signal", signal: id });
    if (signal.aborted) queueMicrotask(fired);
    else signal.addEventListener("abort", fired, { once: true });
    return id;
}

/**
 * A synchronous store call (SessionManager._persist, a write of an output mode): the effect is
 * issued, the adapter reports `idle` (the process can do nothing but wait for this answer), and
 * reads the kit's lines until the answer comes. Other lines are kept and handled, in order, as
 * soon as Pi's event loop is quiescent again.
 */
function completeSynchronously(effect) {
    const id = emitEffect(effect, null);
    for (;;) {
        send({ type: "idle" });
        const message = readMessageSync();
        if (message.type === "shutdown") process.exit(0);
        if (message.type === "complete" && message.effect === id) return message.completion;
        if (message.type === "complete" && !effects.pending.has(message.effect)) {
            fail(`fx#${message.effect} is not a pending effect`, "input.unknown_effect");
        }
        deferred.push(message);
    }
}

function causeError(cause) {
    const error = new Error(cause?.message ?? "store failure");
    if (cause?.code !== undefined) error.code = cause.code;
    return error;
}

function storeOutcome(completion, kind) {
    if (completion?.kind !== kind) fail(`effect answered with ${completion?.kind}, expected ${kind}`, "input.wrong_completion");
    if (completion.outcome?.kind === "ok") return;
    if (completion.outcome?.kind === "failed") throw causeError(completion.outcome.cause);
    fail(`unknown ${kind} outcome ${JSON.stringify(completion.outcome)}`, "input.malformed");
}

// ---------------------------------------------------------------------------------------------
// The kit-owned model: a provider whose streamSimple issues a `model_request`
// ---------------------------------------------------------------------------------------------

function toolSpec(tool) {
    return { name: tool.name, description: tool.description ?? "", parameters: tool.parameters ?? {} };
}

function streamFromKit(_model, context, options) {
    const stream = piAi.createAssistantMessageEventStream();
    const request = {
        systemPrompt: context.systemPrompt === undefined ? null : context.systemPrompt,
        messages: context.messages,
        tools: (context.tools ?? []).map(toolSpec),
    };
    emitEffect(
        { kind: "model_request", signal: signalId(options?.signal), request },
        { kind: "model", stream, started: false, textIndex: -1, partial: null },
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

function completeModel(pending, completion) {
    const stream = pending.stream;
    if (completion.kind === "model_chunk") {
        startStream(pending);
        if (pending.textIndex < 0) {
            pending.textIndex = pending.partial.content.length;
            pending.partial.content.push({ type: "text", text: "" });
            stream.push({ type: "text_start", contentIndex: pending.textIndex, partial: structuredClone(pending.partial) });
        }
        pending.partial.content[pending.textIndex].text += completion.text;
        stream.push({
            type: "text_delta",
            contentIndex: pending.textIndex,
            delta: completion.text,
            partial: structuredClone(pending.partial),
        });
        return false;
    }
    if (completion.kind !== "model_final") fail(`model request answered with ${completion.kind}`, "input.wrong_completion");
    // A pi-ai AssistantMessage has `role: "assistant"`; the kit (0.x) sends the message without
    // it, and Pi records a message only by its role, so the adapter puts it back.
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
    return true;
}

// ---------------------------------------------------------------------------------------------
// Kit-owned tools (defineTool) and extensions (inline extension factories)
// ---------------------------------------------------------------------------------------------

function textOf(content) {
    return (content ?? [])
        .filter((block) => block?.type === "text")
        .map((block) => block.text)
        .join("");
}

function kitTool(spec) {
    return pi.defineTool({
        name: spec.name,
        label: spec.name,
        description: spec.description ?? "",
        parameters: spec.parameters ?? { type: "object" },
        execute: (toolCallId, params, signal) =>
            new Promise((resolve, reject) => {
                emitEffect(
                    {
                        kind: "tool_call",
                        signal: signalId(signal),
                        call: { id: toolCallId, name: spec.name, arguments: params },
                    },
                    { kind: "tool", resolve, reject },
                );
            }),
    });
}

function completeTool(pending, completion) {
    if (completion.kind !== "tool") fail(`tool call answered with ${completion.kind}`, "input.wrong_completion");
    const outcome = completion.outcome;
    switch (outcome?.kind) {
        case "ok":
            // A Pi tool reports an error result only by throwing; the error's message becomes
            // the result text (agent-loop.js createErrorToolResult).
            if (outcome.isError) pending.reject(new Error(textOf(outcome.content)));
            else pending.resolve({ content: outcome.content, details: outcome.details });
            return;
        case "threw":
            pending.reject(new Error(outcome.message));
            return;
        case "aborted":
            // What Pi's own tools do when their signal fires (tools/edit.js, find.js, ...).
            pending.reject(new Error("Operation aborted"));
            return;
        default:
            fail(`unknown tool outcome ${JSON.stringify(outcome)}`, "input.malformed");
    }
}

function kitExtension(name) {
    return (extensionApi) => {
        extensionApi.on("tool_call", (event) =>
            new Promise((resolve, reject) => {
                emitEffect(
                    {
                        kind: "hook",
                        extension: name,
                        phase: "before",
                        call: { id: event.toolCallId, name: event.toolName, arguments: event.input },
                        result: null,
                    },
                    { kind: "hook", phase: "before", event, resolve, reject },
                );
            }),
        );
        extensionApi.on("tool_result", (event) =>
            new Promise((resolve, reject) => {
                emitEffect(
                    {
                        kind: "hook",
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
                    },
                    { kind: "hook", phase: "after", event, resolve, reject },
                );
            }),
        );
    };
}

function completeHook(pending, completion) {
    if (completion.kind !== "hook") fail(`hook answered with ${completion.kind}`, "input.wrong_completion");
    const answer = completion.answer;
    switch (answer?.kind) {
        case "allow":
        case "observe":
            pending.resolve(undefined);
            return;
        case "deny":
            pending.resolve({ block: true, reason: answer.reason });
            return;
        case "rewrite_arguments": {
            // Pi's documented way: mutate event.input in place (extensions/types.d.ts).
            const input = pending.event.input;
            for (const key of Object.keys(input)) delete input[key];
            Object.assign(input, structuredClone(answer.arguments));
            pending.resolve(undefined);
            return;
        }
        case "rewrite_result":
            pending.resolve({ content: answer.content, isError: answer.isError });
            return;
        case "threw":
            pending.reject(new Error(answer.message));
            return;
        default:
            fail(`unknown hook answer ${JSON.stringify(answer)}`, "input.malformed");
    }
}

function handleComplete(message) {
    const pending = effects.pending.get(message.effect);
    if (!pending) fail(`fx#${message.effect} is not a pending effect`, "input.unknown_effect");
    const completion = message.completion;
    if (pending.kind === "model") {
        if (completeModel(pending, completion)) effects.pending.delete(message.effect);
        return;
    }
    effects.pending.delete(message.effect);
    if (pending.kind === "tool") completeTool(pending, completion);
    else if (pending.kind === "hook") completeHook(pending, completion);
    else fail(`fx#${message.effect} cannot be completed now`, "input.unknown_effect");
}

// ---------------------------------------------------------------------------------------------
// Restore and the AgentSession
// ---------------------------------------------------------------------------------------------

const runtime = {
    scenario: null,
    sessionManager: null,
    sessionPromise: null,
    session: null,
    /** The new messages of every agent run that ended (Agent `agent_end`), in order. */
    runs: [],
    restoreFailure: null,
};

/** Pi walks parentId links without a visited set; on a parent cycle it never returns. */
function withinTimeLimit(what, fn) {
    try {
        return vm.runInContext("fn()", vm.createContext({ fn }), { timeout: 2000 });
    } catch (error) {
        if (error?.code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
            fail(
                `${what} did not return within 2000 ms: Pi walks the parentId chain without cycle ` +
                    "detection, so a parent cycle on the chosen chain hangs it (the adapter stops it here instead " +
                    "of letting the kit's step timeout fire)",
                "pi.hang",
            );
        }
        throw error;
    }
}

function handleStart(scenario) {
    if (runtime.scenario) fail("start received twice", "input.out_of_turn");
    runtime.scenario = scenario;
    const config = scenario.config ?? {};
    const ids = scenario.ids ?? config.ids;
    const clock = scenario.clock ?? config.clock;
    if (ids) rules.ids = { prefix: String(ids.prefix ?? ""), start: Number(ids.start ?? 0) };
    if (clock) rules.clock = { startMs: Number(clock.startMs), stepMs: Number(clock.stepMs) };
    rules.idsIssued = 0;
    rules.clockReads = 0;

    // Pi's own restore path: a session file (header + entries) opened by SessionManager.open,
    // then branch(leaf). The header is the adapter's, with fixed values (no clock reading).
    const session = scenario.session ?? [];
    const header = {
        type: "session",
        version: pi.CURRENT_SESSION_VERSION,
        id: "agentsim-session",
        timestamp: new RealDate(rules.clock.startMs).toISOString(),
        cwd: PI_CWD,
    };
    const sessionDir = path.join(workDir, "sessions");
    fs.mkdirSync(sessionDir, { recursive: true });
    const file = path.join(sessionDir, "session.jsonl");
    fs.writeFileSync(file, [header, ...session].map((entry) => JSON.stringify(entry)).join("\n") + "\n");
    const sessionManager = pi.SessionManager.open(file, sessionDir, PI_CWD);
    const leaf = config.activeLeafId ?? null;
    if (leaf !== null) {
        try {
            sessionManager.branch(leaf);
        } catch (error) {
            // Pi's one restore diagnostic: branch() throws "Entry <id> not found".
            const code = session.length === 0 ? "restore.unknown_leaf" : "path.unknown_leaf";
            runtime.restoreFailure = { code, message: error.message };
            send({ type: "restore_failed", cause: runtime.restoreFailure });
            return;
        }
    }
    // With a null leaf Pi keeps the leaf its index chose: the physically last entry.
    // The kit is the store from here on: every entry Pi hands to storage becomes an `append`.
    sessionManager._persist = function persistThroughKit(entry) {
        try {
            storeOutcome(completeSynchronously({ kind: "append", entry }), "append");
        } catch (error) {
            log(`append of ${entry.id} failed; SessionManager._persist throws ${error.code}: ${error.message} into Pi`);
            throw error;
        }
    };
    runtime.sessionManager = sessionManager;
    const restored = withinTimeLimit(`SessionManager.buildSessionContext() at leaf ${JSON.stringify(sessionManager.getLeafId())}`, () =>
        sessionManager.buildSessionContext(),
    );
    send({ type: "started", leaf: sessionManager.getLeafId() ?? null, messages: restored.messages.length });
}

/**
 * createAgentSession appends entries to the session as it starts (thinking_level_change on a
 * restored branch without one; model_change and thinking_level_change on a new session). The
 * protocol carries no effect during `start`, so the AgentSession is created when the first
 * operation arrives, and those appends are that operation's first effects.
 */
function ensureSession() {
    if (!runtime.sessionPromise) {
        runtime.sessionPromise = createSession();
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

async function createSession() {
    const scenario = runtime.scenario;
    const config = scenario.config ?? {};
    const resources = scenario.resources ?? {};

    const authStorage = pi.AuthStorage.inMemory();
    authStorage.setRuntimeApiKey(PROVIDER, "agentsim");
    const modelRegistry = pi.ModelRegistry.inMemory(authStorage);
    modelRegistry.registerProvider(PROVIDER, {
        api: API,
        baseUrl: "http://agentsim.invalid",
        apiKey: "agentsim",
        streamSimple: streamFromKit,
        models: [
            {
                id: MODEL_ID,
                name: MODEL_ID,
                reasoning: false,
                input: ["text", "image"],
                cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
                contextWindow: config.context?.total ?? 100000,
                maxTokens: 16384,
            },
        ],
    });
    const model = modelRegistry.find(PROVIDER, MODEL_ID);
    if (!model) fail("the agentsim model was not registered", "adapter.setup");

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
        extensionFactories: (scenario.extensions ?? []).map((extension) =>
            kitExtension(typeof extension === "string" ? extension : extension.name),
        ),
    });
    await resourceLoader.reload();

    const tools = (scenario.tools ?? []).map(kitTool);
    const { session } = await pi.createAgentSession({
        cwd: PI_CWD,
        agentDir,
        model,
        authStorage,
        modelRegistry,
        settingsManager,
        sessionManager: runtime.sessionManager,
        resourceLoader,
        customTools: tools,
        tools: tools.map((tool) => tool.name),
    });
    session.agent.subscribe((event) => {
        if (event.type === "agent_end") runtime.runs.push(event.messages);
    });
    runtime.session = session;
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

function causeOf(error) {
    if (error && typeof error === "object" && "message" in error) {
        return { code: String(error.code ?? error.name ?? "Error"), message: String(error.message) };
    }
    return { code: "Error", message: String(error) };
}

async function prompt(text) {
    const session = await ensureSession();
    const runsBefore = runtime.runs.length;
    await session.prompt(text);
    return runValue(session, runtime.runs.slice(runsBefore).at(-1));
}

/** The output sink of the modes: one `write` effect per write, answered synchronously. */
function writeToOutputSink(text) {
    // flushRawStdout() writes "" to wait for the stream; that is not output.
    if (text === "") return;
    storeOutcome(completeSynchronously({ kind: "write", text }), "write");
}

async function runMode(mode, text) {
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
    const outputMode = { consoleErrors: [] };
    outputModes.add(outputMode);
    const runsBefore = runtime.runs.length;
    let exitCode;
    try {
        exitCode = await pi.runPrintMode(host, { mode: printMode, initialMessage: text });
    } finally {
        outputModes.delete(outputMode);
    }
    if (exitCode === 0) return runValue(session, runtime.runs.slice(runsBefore).at(-1));
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
        case "library": {
            const error = new Error("Pi has no library adapter ({reason, text}) of its own");
            error.code = "adapter.unsupported";
            throw error;
        }
        default:
            fail(`unknown operation ${JSON.stringify(operation.op)}`, "input.malformed");
    }
}

function handleOperation(message) {
    const op = message.op;
    runOperation(message.operation).then(
        (value) => send({ type: "settled", op, settlement: { status: "resolved", value } }),
        (error) => send({ type: "settled", op, settlement: { status: "rejected", cause: causeOf(error) } }),
    );
}

// ---------------------------------------------------------------------------------------------
// The loop: one input, run to quiescence, one idle
// ---------------------------------------------------------------------------------------------

const BUSY_RESOURCES = new Set(["Timeout", "Immediate", "FSReqCallback", "FSReqPromise", "FileHandleCloseReq", "GetAddrInfoReqWrap", "StatWatcher"]);

/** Runs until Pi's event loop has no runnable work: only effects the kit has not completed. */
async function drain() {
    let quietRounds = 0;
    let timerWaits = 0;
    while (quietRounds < 4) {
        await new Promise((resolve) => setImmediate(resolve));
        const busy = process.getActiveResourcesInfo().filter((name) => BUSY_RESOURCES.has(name) && name !== "Immediate");
        if (busy.length > 0 && timerWaits < 2000) {
            timerWaits += 1;
            quietRounds = 0;
            await new Promise((resolve) => setTimeout(resolve, 1));
            continue;
        }
        quietRounds += 1;
    }
}

async function dispatch(message) {
    switch (message.type) {
        case "start":
            if (runtime.scenario) fail("start received twice", "input.out_of_turn");
            handleStart(message.scenario ?? {});
            return;
        case "operation":
            if (!runtime.scenario) fail("operation before start", "input.out_of_turn");
            handleOperation(message);
            return;
        case "complete":
            handleComplete(message);
            return;
        case "shutdown":
            process.exit(0);
            return;
        default:
            fail(`unknown message type ${JSON.stringify(message.type)}`, "input.unknown_type");
    }
}

// `hello` goes out before Pi is loaded (loading it takes about a second, more on a busy
// machine), so the kit's first wait is short; the version comes from Pi's package.json.
const piEntry = new URL(import.meta.resolve("@mariozechner/pi-coding-agent")); // .../dist/index.js
const piPackage = JSON.parse(fs.readFileSync(new URL("../package.json", piEntry), "utf8"));
send({
    type: "hello",
    protocol: 1,
    implementation: { name: "pi", version: piPackage.version },
    features: ["steer", "followUp", "abort", "flush", "dispose", "mode", "chunks"],
    unsupported: {
        library: "Pi has no library adapter returning {reason, text}; its SDK is AgentSession itself",
    },
});
const pi = await import("@mariozechner/pi-coding-agent");
const piAi = await import("@mariozechner/pi-ai");
if (pi.VERSION !== piPackage.version) fail(`Pi reports version ${pi.VERSION}, its package.json ${piPackage.version}`, "adapter.setup");

process.on("unhandledRejection", (reason) => {
    log("unhandled rejection inside Pi:", reason instanceof Error ? reason.stack : String(reason));
});


for (;;) {
    const message = readMessageSync();
    await dispatch(message);
    await drain();
    while (deferred.length > 0) {
        await dispatch(deferred.shift());
        await drain();
    }
    send({ type: "idle" });
}
