// agentsim adapter SDK for JavaScript (Node >= 20 or Bun, ESM, no dependencies).
//
// An adapter lets the agentsim kit drive an agent runtime through the adapter protocol
// (docs/protocol.md, version 1, and its version 2 delta: many runs per process, `reset`, the
// `notify` effect of extension observers). This module owns everything the protocol asks of an
// adapter that is not about the runtime itself:
//
// - framing: JSON lines on stdin/stdout, at most 4 MiB, UTF-8; stdout carries protocol lines only
//   (process.stdout.write and console.log are redirected, to stderr by default);
// - turn-taking: `hello`; after every kit line, the runtime runs until it is quiescent (only
//   waiting for the kit), every effect / abort_signal / settled goes out in the order it happened,
//   then exactly one `idle`; nothing is ever written after `idle` until the kit writes again;
// - strict parsing of kit lines: a bad line is answered with an `error` message, never a crash;
// - effect ids and the pending-effect table, for asynchronous (`ctx.effect`) and synchronous
//   (`ctx.effectSync`, for runtimes whose store API is synchronous) effects, sharing one reader;
// - abort-signal ids, settlements, the `ids` and `clock` rules, reset, shutdown, end of input.
//
// The implementer writes the mapping only: an adapter definition with `hello`, `start`,
// `operation` and (for protocol 2) `reset`, handed to `runAdapter`. README.md in this folder is
// the reference; agentsim-adapter.d.ts has the types; template-adapter.mjs is a working example.

import fs from "node:fs";
import fsPromises from "node:fs/promises";
import module from "node:module";
import timers from "node:timers";
import timersPromises from "node:timers/promises";
import util from "node:util";

/** The newest protocol version this SDK speaks (the default in `hello`). */
export const PROTOCOL_VERSION = 2;
/** The versions this SDK can speak. */
export const PROTOCOL_VERSIONS = Object.freeze([1, 2]);
/** The longest line either side may write, newline excluded. */
export const LINE_BYTES_MAX = 4 * 1024 * 1024;

/** Effect kinds, and the completion kinds that answer each. */
const COMPLETES = Object.freeze({
    model_request: ["model_chunk", "model_final"],
    tool_call: ["tool"],
    hook: ["hook"],
    append: ["append"],
    write: ["write"],
    notify: ["notify"],
});
/** Effect kinds that only protocol 2 has. */
const V2_EFFECTS = new Set(["notify"]);

// =============================================================================================
// Errors
// =============================================================================================

/**
 * Thrown by `ctx.effectSync` when the run it belongs to was reset or replaced while the runtime
 * was blocked waiting for the kit (and at once by `effectSync` in a run already discarded). The
 * runtime's stack unwinds; nothing the discarded run does afterwards reaches the kit.
 */
export class RunDiscarded extends Error {
    constructor(message = "the run was reset by the kit") {
        super(message);
        this.name = "RunDiscarded";
        this.code = "agentsim.run_discarded";
    }
}

/**
 * Thrown by a mapping when the implementation cannot go on with this run but the process is
 * sound: say, a walk of the runtime's that the adapter stopped at a time limit (the runtime's
 * stack was unwound, nothing of it runs on). From `start` or from `operation` (thrown, or the
 * rejection of the promise it returned), the SDK writes an `error` line marked `recoverable`,
 * discards the run (nothing it does afterwards reaches the kit) and ends the answer with `idle`;
 * the kit reports the run broken, writes `reset`, and the next run uses this process, instead
 * of paying for a new one. Under protocol 1 (no `reset`) it is `ctx.fail`: the adapter exits.
 */
export class RunBroken extends Error {
    constructor(code, message) {
        super(message);
        this.name = "RunBroken";
        this.code = code;
    }
}

/** A kit line the adapter cannot apply: answered with an `error` message (`code`, `message`). */
export class KitLineError extends Error {
    constructor(code, message) {
        super(message);
        this.name = "KitLineError";
        this.code = code;
    }
}

/**
 * The cause a rejected operation reports: `{code, message}` from an Error (`code`, else `name`,
 * else "Error"), or from any other thrown value.
 */
export function causeOf(error) {
    if (error && typeof error === "object" && "message" in error) {
        return { code: String(error.code ?? error.name ?? "Error"), message: String(error.message) };
    }
    return { code: "Error", message: String(error) };
}

/** An Error carrying a protocol cause (`{code, message}`), as the runtime would throw it. */
export function causeError(cause) {
    const error = new Error(cause?.message ?? "failure");
    if (cause?.code !== undefined) error.code = cause.code;
    return error;
}

// =============================================================================================
// Raw output: synchronous writes, in order, never through a stream
// =============================================================================================

const sleepCell = new Int32Array(new SharedArrayBuffer(4));
function sleepMs(ms) {
    Atomics.wait(sleepCell, 0, 0, ms);
}

function writeAllSync(fd, text) {
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

let logPrefix = "[adapter]";

/** Diagnostics: one line on stderr, prefixed with the adapter's name. Never touches stdout. */
export function log(...parts) {
    const text = parts
        .map((part) => {
            if (typeof part === "string") return part;
            if (part instanceof Error) return part.stack ?? String(part);
            try {
                return JSON.stringify(part);
            } catch {
                return String(part);
            }
        })
        .join(" ");
    try {
        writeAllSync(2, `${logPrefix} ${text}\n`);
    } catch {
        // stderr is gone: nothing left to tell anyone
    }
}

// ---------------------------------------------------------------------------------------------
// stdout belongs to the protocol. Whatever else the process writes to process.stdout (console.log
// included) goes to the sink: stderr unless the adapter sets another (setStdoutSink).
// ---------------------------------------------------------------------------------------------

function defaultStdoutSink(text) {
    writeAllSync(2, text);
}
let stdoutSink = defaultStdoutSink;

/**
 * Where process.stdout.write (and console.log) output goes: `sink(text)` is called synchronously
 * for each write; `null` restores the default (stderr). A sink that throws makes that write throw.
 */
export function setStdoutSink(sink) {
    if (sink !== null && typeof sink !== "function") throw new TypeError("setStdoutSink(sink): sink must be a function or null");
    stdoutSink = sink ?? defaultStdoutSink;
}

process.stdout.write = function writeToStdoutSink(chunk, encodingOrCallback, callback) {
    const done = typeof encodingOrCallback === "function" ? encodingOrCallback : callback;
    const encoding = typeof encodingOrCallback === "string" ? encodingOrCallback : "utf8";
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk, encoding).toString("utf8");
    stdoutSink(text);
    if (done) queueMicrotask(() => done(null));
    return true;
};

// console's stdout methods format and write to the sink themselves: Node's would reach it through
// process.stdout.write, but Bun's console writes to the descriptor directly.
for (const name of ["log", "info", "debug"]) {
    console[name] = (...args) => stdoutSink(`${util.format(...args)}\n`);
}
console.dir = (value, options) => stdoutSink(`${util.inspect(value, options)}\n`);

// =============================================================================================
// Input: one synchronous line reader, shared by the main loop and by synchronous effects
// =============================================================================================

/**
 * A descriptor of the same pipe as `fd` that blocks on read, where the platform gives one: Node
 * (or a runtime that touches `process.stdin`) makes a pipe on stdin non-blocking, and a reader
 * that then polls it with 1 ms sleeps spends most of an exploration waiting for lines that have
 * already arrived. On Linux, opening `/proc/self/fd/N` opens the pipe anew, with flags of its
 * own. Anything else (not Linux, not a pipe, the open fails) keeps `fd` and its polling.
 */
function blockingReadFd(fd) {
    if (process.platform !== "linux") return fd;
    try {
        if (!fs.fstatSync(fd).isFIFO()) return fd;
        return fs.openSync(`/proc/self/fd/${fd}`, "r");
    } catch {
        return fd;
    }
}

/**
 * Reads newline-terminated lines from a file descriptor synchronously (fs.readSync), so that a
 * runtime blocked in a synchronous call can wait for the kit's answer exactly where it would
 * wait for a disk. `next()` returns `{line}` (a string, newline removed), `{oversize: bytes}` for
 * a line longer than the limit (its bytes are skipped up to the newline), `{invalidUtf8: true}`,
 * or `null` at end of input. A final line without a newline is still a line.
 */
export class LineReader {
    constructor(fd = 0, limit = LINE_BYTES_MAX) {
        this.fd = blockingReadFd(fd);
        this.limit = limit;
        this.chunk = Buffer.alloc(64 * 1024);
        this.start = 0;
        this.end = 0;
        this.parts = [];
        this.partBytes = 0;
        this.discarding = false;
        this.eof = false;
        this.decoder = new TextDecoder("utf-8", { fatal: true });
    }

    #fill() {
        for (;;) {
            try {
                const count = fs.readSync(this.fd, this.chunk, 0, this.chunk.length, null);
                this.start = 0;
                this.end = count;
                if (count === 0) this.eof = true;
                return;
            } catch (error) {
                if (error.code === "EAGAIN") {
                    sleepMs(1);
                    continue;
                }
                if (error.code === "EOF") {
                    this.start = 0;
                    this.end = 0;
                    this.eof = true;
                    return;
                }
                throw error;
            }
        }
    }

    #take(bytes) {
        if (this.discarding) {
            this.partBytes += bytes.length;
            return;
        }
        if (this.partBytes + bytes.length > this.limit) {
            this.discarding = true;
            this.partBytes += bytes.length;
            this.parts = [];
            return;
        }
        this.parts.push(Buffer.from(bytes));
        this.partBytes += bytes.length;
    }

    #finish() {
        const result = this.discarding
            ? { oversize: this.partBytes }
            : (() => {
                  try {
                      return { line: this.decoder.decode(Buffer.concat(this.parts, this.partBytes)) };
                  } catch {
                      return { invalidUtf8: true };
                  }
              })();
        this.parts = [];
        this.partBytes = 0;
        this.discarding = false;
        return result;
    }

    /** The next line, or null at end of input. Blocks the thread until one is there. */
    next() {
        for (;;) {
            if (this.start >= this.end) {
                if (this.eof) return null;
                this.#fill();
                if (this.eof) {
                    if (this.partBytes > 0 || this.discarding) return this.#finish();
                    return null;
                }
            }
            const newline = this.chunk.indexOf(0x0a, this.start);
            if (newline >= 0 && newline < this.end) {
                this.#take(this.chunk.subarray(this.start, newline));
                this.start = newline + 1;
                return this.#finish();
            }
            this.#take(this.chunk.subarray(this.start, this.end));
            this.start = this.end;
        }
    }
}

// =============================================================================================
// Strict parsing of kit lines
// =============================================================================================

class Malformed extends Error {}

function kindOf(value) {
    if (value === null) return "null";
    if (Array.isArray(value)) return "an array";
    return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

const S = {
    string: (value, at) => {
        if (typeof value !== "string") throw new Malformed(`${at}: expected a string, got ${kindOf(value)}`);
    },
    uint: (value, at) => {
        if (!Number.isSafeInteger(value) || value < 0) throw new Malformed(`${at}: expected a non-negative integer, got ${JSON.stringify(value)}`);
    },
    bool: (value, at) => {
        if (typeof value !== "boolean") throw new Malformed(`${at}: expected a boolean, got ${kindOf(value)}`);
    },
    any: () => {},
    object: (value, at) => {
        if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Malformed(`${at}: expected an object, got ${kindOf(value)}`);
    },
    nullable: (inner) => (value, at) => {
        if (value !== null) inner(value, at);
    },
    arrayOf: (inner) => (value, at) => {
        if (!Array.isArray(value)) throw new Malformed(`${at}: expected an array, got ${kindOf(value)}`);
        value.forEach((item, index) => inner(item, `${at}[${index}]`));
    },
    /** A strict object: exactly these keys (those in `optional` may be absent), no others. */
    record: (fields, optional = []) => (value, at) => {
        S.object(value, at);
        for (const key of Object.keys(value)) {
            if (!Object.hasOwn(fields, key)) throw new Malformed(`${at}: unknown field \`${key}\``);
        }
        for (const [key, check] of Object.entries(fields)) {
            if (!Object.hasOwn(value, key)) {
                if (optional.includes(key)) continue;
                throw new Malformed(`${at}: missing field \`${key}\``);
            }
            check(value[key], `${at}.${key}`);
        }
    },
    /** A strict tagged union: `value[tag]` names the variant, whose fields are then strict. */
    tagged: (tag, variants) => (value, at) => {
        S.object(value, at);
        const name = value[tag];
        if (typeof name !== "string") throw new Malformed(`${at}.${tag}: expected a string, got ${kindOf(name)}`);
        const variant = Object.hasOwn(variants, name) ? variants[name] : undefined;
        if (!variant) throw new Malformed(`${at}.${tag}: unknown variant ${JSON.stringify(name)} (expected one of ${Object.keys(variants).join(", ")})`);
        const fields = { [tag]: S.any, ...(variant.fields ?? variant) };
        S.record(fields, variant.optional ?? [])(value, at);
    },
};

const cause = S.record({ code: S.string, message: S.string });
const storeOutcome = S.tagged("kind", { ok: {}, failed: { cause } });
const completionSchema = S.tagged("kind", {
    model_chunk: { text: S.string },
    model_final: { message: S.object },
    tool: {
        outcome: S.tagged("kind", {
            ok: { fields: { content: S.arrayOf(S.object), details: S.any, isError: S.bool }, optional: ["details"] },
            threw: { message: S.string },
            aborted: {},
        }),
    },
    hook: {
        answer: S.tagged("kind", {
            allow: {},
            deny: { reason: S.string },
            rewrite_arguments: { arguments: S.any },
            observe: {},
            rewrite_result: { content: S.arrayOf(S.object), isError: S.bool },
            threw: { message: S.string },
        }),
    },
    append: { outcome: storeOutcome },
    write: { outcome: storeOutcome },
    notify: { outcome: S.tagged("kind", { ok: {}, threw: { message: S.string } }) },
});
const operationSchema = S.tagged("op", {
    prompt: { text: S.string },
    flush: {},
    dispose: {},
    steer: { text: S.string },
    followUp: { text: S.string },
    abort: {},
    mode: { mode: S.string, text: S.string },
    library: { text: S.string },
});
const scenarioFields = {
    config: S.record({
        activeLeafId: S.nullable(S.string),
        systemPrompt: S.nullable(S.string),
        maxSteps: S.uint,
        context: S.record({ total: S.uint, reservedOutput: S.uint, safetyMargin: S.uint }),
    }),
    session: S.arrayOf(S.object),
    resources: S.record(
        {
            instructions: S.arrayOf(S.record({ path: S.string, content: S.string })),
            skills: S.arrayOf(S.record({ name: S.string, description: S.string, body: S.string }, ["body"])),
        },
        ["instructions", "skills"],
    ),
    tools: S.arrayOf(S.record({ name: S.string, description: S.string, parameters: S.any }, ["description", "parameters"])),
    extensions: S.arrayOf(S.string),
    ids: S.record({ prefix: S.string, start: S.uint }),
    clock: S.record({ startMs: S.uint, stepMs: S.uint }),
    faults: S.record({
        appends: S.arrayOf(S.record({ at: S.uint, fault: S.string, error: cause, until: S.any }, ["error", "until"])),
        writes: S.arrayOf(S.record({ at: S.uint, error: cause })),
    }),
};
const observersSchema = S.arrayOf(S.record({ name: S.string, events: S.arrayOf(S.string) }));
/** Informational: the chunks each scripted model response streams (absent when none does). */
const chunksSchema = S.arrayOf(S.uint);

function messageSchemas(protocol) {
    const scenario =
        protocol >= 2
            ? S.record({ ...scenarioFields, observers: observersSchema, chunks: chunksSchema }, ["observers", "chunks"])
            : S.record({ ...scenarioFields, chunks: chunksSchema }, ["chunks"]);
    const schemas = {
        start: S.record({ type: S.any, scenario }),
        operation: S.record({ type: S.any, op: S.uint, operation: operationSchema }),
        complete: S.record({ type: S.any, effect: S.uint, completion: completionSchema }),
        shutdown: S.record({ type: S.any }),
    };
    if (protocol >= 2) schemas.reset = S.record({ type: S.any });
    return schemas;
}
const SCHEMAS = { 1: messageSchemas(1), 2: messageSchemas(2) };

/**
 * Parses one kit line strictly for a protocol version. Returns the message, or throws a
 * KitLineError whose `code` is `input.garbage` (not a JSON object), `input.malformed` (no string
 * `type`, or a missing, mistyped or unknown field) or `input.unknown_type`.
 */
export function parseKitLine(line, protocol = PROTOCOL_VERSION) {
    let message;
    try {
        message = JSON.parse(line);
    } catch (error) {
        throw new KitLineError("input.garbage", `not JSON (${error.message}): ${quote(line)}`);
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
        throw new KitLineError("input.garbage", `not a JSON object but ${kindOf(message)}: ${quote(line)}`);
    }
    if (typeof message.type !== "string") {
        throw new KitLineError("input.malformed", `a kit message needs a string \`type\`, got ${kindOf(message.type)}: ${quote(line)}`);
    }
    const schema = (SCHEMAS[protocol] ?? SCHEMAS[PROTOCOL_VERSION])[message.type];
    if (!schema) throw new KitLineError("input.unknown_type", `unknown message type ${JSON.stringify(message.type)} (protocol ${protocol})`);
    try {
        schema(message, message.type);
    } catch (error) {
        if (error instanceof Malformed) throw new KitLineError("input.malformed", `bad \`${message.type}\` message: ${error.message}`);
        throw error;
    }
    return message;
}

function quote(line) {
    return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

// ---------------------------------------------------------------------------------------------
// What the adapter writes: every line is checked against the kit's own shapes before it is
// written, so that a mapping bug (an assistant message without `role`, a tool result whose
// `content` is a string) stops the adapter with an error naming the field, never reaches the kit.
//
// The tables mirror the kit's (src/protocol/shape.rs) field for field, with the same paths and
// the same words; tests/fixtures/protocol/lines.json holds all three to the same answers
// (test/lines.test.mjs). docs/protocol.md, "Message shapes" and "Errors in adapter lines".
// ---------------------------------------------------------------------------------------------

const MALFORMED = "wire.malformed";
const Shape = Object.freeze({
    string: { kind: "string" },
    boolean: { kind: "boolean" },
    u32: { kind: "u32" },
    u64: { kind: "u64" },
    number: { kind: "number" },
    any: { kind: "any" },
    strMap: { kind: "strMap" },
    version: { kind: "version" },
    userContent: { kind: "userContent" },
});
const nullable = (inner) => ({ kind: "nullable", inner });
const arrayOf = (item) => ({ kind: "array", item });
const enumOf = (...names) => ({ kind: "enum", names });
const req = (name, shape) => ({ name, shape, optional: false });
const opt = (name, shape) => ({ name, shape, optional: true });
const closed = (fields) => ({ kind: "record", fields, closed: true });
const open = (fields) => ({ kind: "record", fields, closed: false });
const tagged = (tag, variants, { unknownCode = MALFORMED, missingCode = MALFORMED } = {}) => ({ kind: "tagged", tag, variants, unknownCode, missingCode });

const CAUSE = closed([req("code", Shape.string), req("message", Shape.string)]);
const CONTENT_BLOCK = tagged("type", [
    ["text", open([req("text", Shape.string)])],
    ["image", open([req("data", Shape.string), req("mimeType", Shape.string)])],
]);
const TOOL_CALL = open([req("id", Shape.string), req("name", Shape.string), req("arguments", Shape.any)]);
const ASSISTANT_BLOCK = tagged("type", [
    ["text", open([req("text", Shape.string)])],
    ["thinking", open([req("thinking", Shape.string)])],
    ["toolCall", open([req("id", Shape.string), req("name", Shape.string), req("arguments", Shape.any)])],
]);
const COST = open(["input", "output", "cacheRead", "cacheWrite", "total"].map((name) => req(name, Shape.number)));
const USAGE = open([...["input", "output", "cacheRead", "cacheWrite", "totalTokens"].map((name) => req(name, Shape.u64)), req("cost", COST)]);
const TOOL_RESULT_FIELDS = [
    req("toolCallId", Shape.string),
    req("toolName", Shape.string),
    req("content", arrayOf(CONTENT_BLOCK)),
    opt("details", Shape.any),
    req("isError", Shape.boolean),
    req("timestamp", Shape.u64),
];
const TOOL_RESULT = open(TOOL_RESULT_FIELDS);
const MESSAGE = tagged("role", [
    ["user", closed([req("content", Shape.userContent), req("timestamp", Shape.u64)])],
    [
        "assistant",
        open([
            req("content", arrayOf(ASSISTANT_BLOCK)),
            req("api", Shape.string),
            req("provider", Shape.string),
            req("model", Shape.string),
            req("usage", USAGE),
            req("stopReason", enumOf("stop", "length", "toolUse", "error", "aborted")),
            opt("errorMessage", nullable(Shape.string)),
            req("timestamp", Shape.u64),
        ]),
    ],
    ["toolResult", open(TOOL_RESULT_FIELDS)],
]);
const MESSAGES = arrayOf(MESSAGE);
const ENTRY_IDENTITY = [req("id", Shape.string), req("parentId", nullable(Shape.string)), req("timestamp", Shape.string)];
const METADATA = open(ENTRY_IDENTITY);
const ENTRY = tagged("type", [
    ["message", open([...ENTRY_IDENTITY, req("message", MESSAGE)])],
    ["compaction", open([...ENTRY_IDENTITY, req("summary", Shape.string), req("firstKeptEntryId", Shape.string), req("tokensBefore", Shape.u64)])],
    ...["branch_summary", "model_change", "thinking_level_change", "custom", "custom_message", "label", "session_info"].map((name) => [name, METADATA]),
]);
const TOOL_SPEC = closed([req("name", Shape.string), opt("description", Shape.string), opt("parameters", Shape.any)]);
const EVENT = tagged("type", [
    ["message_end", closed([req("message", MESSAGE)])],
    ["turn_end", closed([req("message", MESSAGE), req("toolResults", MESSAGES)])],
    ["agent_end", closed([req("messages", MESSAGES)])],
]);
const EFFECT = tagged(
    "kind",
    [
        [
            "model_request",
            closed([
                req("id", Shape.u32),
                req("signal", Shape.u32),
                req("request", closed([opt("systemPrompt", nullable(Shape.string)), req("messages", MESSAGES), req("tools", arrayOf(TOOL_SPEC))])),
            ]),
        ],
        ["tool_call", closed([req("id", Shape.u32), req("signal", Shape.u32), req("call", TOOL_CALL)])],
        [
            "hook",
            closed([
                req("id", Shape.u32),
                req("extension", Shape.string),
                req("phase", enumOf("before", "after")),
                req("call", TOOL_CALL),
                opt("result", nullable(TOOL_RESULT)),
            ]),
        ],
        ["append", closed([req("id", Shape.u32), req("entry", ENTRY)])],
        ["write", closed([req("id", Shape.u32), req("text", Shape.string)])],
        ["notify", closed([req("id", Shape.u32), req("observer", Shape.string), req("event", EVENT)])],
    ],
    { unknownCode: "wire.unknown_effect_kind" },
);
const RUN_REASON = enumOf("stop", "length", "error", "aborted", "max_steps");
const SETTLEMENT = tagged("status", [
    [
        "resolved",
        closed([
            req(
                "value",
                tagged("kind", [
                    ["unit", closed([])],
                    ["run", closed([req("reason", RUN_REASON), req("steps", Shape.u32), req("messages", MESSAGES)])],
                    ["library", closed([req("reason", RUN_REASON), req("text", Shape.string)])],
                ]),
            ),
        ]),
    ],
    ["rejected", closed([req("cause", CAUSE)])],
]);
const ADAPTER_MESSAGE = tagged(
    "type",
    [
        [
            "hello",
            closed([
                req("protocol", Shape.version),
                req("implementation", closed([req("name", Shape.string), req("version", Shape.string)])),
                opt("features", arrayOf(Shape.string)),
                opt("unsupported", Shape.strMap),
                opt("probes", arrayOf(enumOf("state"))),
            ]),
        ],
        ["started", closed([opt("leaf", nullable(Shape.string)), req("messages", Shape.u64)])],
        ["restore_failed", closed([req("cause", CAUSE)])],
        ["effect", closed([req("effect", EFFECT)])],
        ["abort_signal", closed([req("signal", Shape.u32)])],
        ["settled", closed([req("op", Shape.u32), req("settlement", SETTLEMENT)])],
        ["idle", closed([opt("state", nullable(closed([opt("leaf", nullable(Shape.string)), req("persisted", Shape.u64)])))])],
        ["error", closed([req("code", Shape.string), req("message", Shape.string), opt("recoverable", Shape.boolean)])],
    ],
    { unknownCode: "wire.unknown_type", missingCode: "wire.unknown_type" },
);

class ShapeMismatch extends Error {
    constructor(code, path, expected, got) {
        super(`\`${renderPath(path)}\`: expected ${expected}, got ${got}`);
        this.code = code;
        this.path = renderPath(path);
        this.expected = expected;
        this.got = got;
    }
}

function renderPath(path) {
    return path.reduce((text, step) => (typeof step === "number" ? `${text}[${step}]` : text === "" ? step : `${text}.${step}`), "");
}

const MISSING = "nothing (the field is missing)";

function describeValue(value) {
    if (value === null) return "null";
    if (Array.isArray(value)) return "an array";
    if (typeof value === "object") return "an object";
    if (typeof value === "string") return JSON.stringify([...value].length > 40 ? `${[...value].slice(0, 40).join("")}…` : value);
    return String(value);
}

const quoteNames = (names) => `one of ${names.map((name) => `"${name}"`).join(", ")}`;

function expectedOf(shape) {
    switch (shape.kind) {
        case "string":
            return "a string";
        case "boolean":
            return "a boolean";
        case "u32":
            return "an integer from 0 to 4294967295";
        case "u64":
            return "a non-negative integer";
        case "number":
            return "a number";
        case "any":
            return "any JSON value";
        case "nullable":
            return `${expectedOf(shape.inner)} or null`;
        case "array":
            return "an array";
        case "enum":
            return quoteNames(shape.names);
        case "version":
            return `one of ${PROTOCOL_VERSIONS.join(", ")}`;
        case "userContent":
            return "a string or an array";
        default:
            return "an object";
    }
}

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
// What JSON.stringify writes for these is what the kit's u64 reads: an integer below 2^64
// (from 1e21 on, JavaScript writes an exponent).
const isU64 = (value) => Number.isInteger(value) && value >= 0 && value < 2 ** 64 && value < 1e21;

function checkShape(shape, value, path) {
    const wrong = () => {
        throw new ShapeMismatch(MALFORMED, path, expectedOf(shape), describeValue(value));
    };
    switch (shape.kind) {
        case "string":
            if (typeof value !== "string") wrong();
            return;
        case "boolean":
            if (typeof value !== "boolean") wrong();
            return;
        case "u32":
            if (!Number.isInteger(value) || value < 0 || value > 4294967295) wrong();
            return;
        case "u64":
            if (!isU64(value)) wrong();
            return;
        case "number":
            if (typeof value !== "number") wrong();
            return;
        case "any":
            return;
        case "nullable":
            if (value === null) return;
            try {
                checkShape(shape.inner, value, path);
            } catch (error) {
                // The inner shape's own complaint names a deeper path; a wrong kind here is ours.
                if (error instanceof ShapeMismatch && error.path === renderPath(path)) {
                    throw new ShapeMismatch(error.code, path, expectedOf(shape), error.got);
                }
                throw error;
            }
            return;
        case "array":
            if (!Array.isArray(value)) wrong();
            value.forEach((item, index) => checkShape(shape.item, item, [...path, index]));
            return;
        case "strMap":
            if (!isObject(value)) wrong();
            for (const [key, item] of Object.entries(value)) checkShape(Shape.string, item, [...path, key]);
            return;
        case "enum":
            if (!shape.names.includes(value)) wrong();
            return;
        case "version":
            if (!PROTOCOL_VERSIONS.includes(value)) throw new ShapeMismatch("wire.version", path, expectedOf(shape), describeValue(value));
            return;
        case "userContent":
            if (typeof value === "string") return;
            if (!Array.isArray(value)) wrong();
            checkShape(arrayOf(CONTENT_BLOCK), value, path);
            return;
        case "record":
            if (!isObject(value)) wrong();
            checkRecord(shape, null, value, path);
            return;
        case "tagged": {
            if (!isObject(value)) wrong();
            const names = shape.variants.map(([name]) => name);
            if (!Object.hasOwn(value, shape.tag)) throw new ShapeMismatch(shape.missingCode, [...path, shape.tag], quoteNames(names), MISSING);
            const variant = shape.variants.find(([name]) => name === value[shape.tag]);
            if (!variant) throw new ShapeMismatch(shape.unknownCode, [...path, shape.tag], quoteNames(names), describeValue(value[shape.tag]));
            checkRecord(variant[1], shape.tag, value, path);
            return;
        }
        default:
            throw new Error(`unknown shape ${shape.kind}`);
    }
}

function checkRecord(record, tag, value, path) {
    if (record.closed) {
        for (const [key, item] of Object.entries(value)) {
            if (key === tag || record.fields.some((field) => field.name === key)) continue;
            const names = [...(tag === null ? [] : [tag]), ...record.fields.map((field) => field.name)];
            throw new ShapeMismatch(MALFORMED, [...path, key], `no such field (fields: ${names.length === 0 ? "none" : names.join(", ")})`, describeValue(item));
        }
    }
    for (const field of record.fields) {
        if (!Object.hasOwn(value, field.name)) {
            if (field.optional) continue;
            throw new ShapeMismatch(field.shape.kind === "version" ? "wire.version" : MALFORMED, [...path, field.name], expectedOf(field.shape), MISSING);
        }
        checkShape(field.shape, value[field.name], [...path, field.name]);
    }
}

/**
 * Where `message` (an adapter line, as JSON.parse reads it) departs from the kit's shapes, or
 * null if it fits: `{code, path, expected, got}`, `code` one of `wire.malformed`,
 * `wire.unknown_type`, `wire.unknown_effect_kind`, `wire.version` (docs/protocol.md, "Errors in
 * adapter lines").
 */
export function checkAdapterMessage(message) {
    try {
        checkShape(ADAPTER_MESSAGE, message, []);
        return null;
    } catch (error) {
        if (!(error instanceof ShapeMismatch)) throw error;
        return { code: error.code, path: error.path, expected: error.expected, got: error.got };
    }
}

/** What a line is about, as the kit's verdicts say it: `effect append fx#6`, `settlement of op#1`. */
export function describeMessage(message) {
    const type = typeof message?.type === "string" ? message.type : "line";
    if (type === "effect") {
        const kind = message.effect?.kind;
        const id = message.effect?.id;
        return `effect${typeof kind === "string" ? ` ${[...kind].slice(0, 40).join("")}` : ""}${isU64(id) ? ` fx#${id}` : ""}`;
    }
    if (type === "settled") return isU64(message.op) ? `settlement of op#${message.op}` : "settlement";
    return `\`${[...type].slice(0, 40).join("")}\``;
}

// =============================================================================================
// Quiescence: the runtime has no runnable work, only effects the kit has not completed
// =============================================================================================

const realSetTimeout = globalThis.setTimeout;
const realSetImmediate = globalThis.setImmediate;

const quiescence = {
    /** Consecutive event-loop rounds with nothing pending before the runtime counts as quiet. */
    quietRounds: 3,
    /** The longest one drain waits for pending timers and requests (then it logs and goes on). */
    maxWaitMs: 2000,
    /** A one-shot timer due later than this is background, not pending work (see README). */
    timerHorizonMs: 1000,
    /** Promise timers within the horizon run in virtual time (see `installVirtualTime`). */
    virtualTime: false,
    /** Extra resource names (process.getActiveResourcesInfo) that count as pending work. */
    busyResources: [],
    /** Resource names that never count as pending work (overrides the defaults). */
    idleResources: [],
};

// Requests (one-shot operations that will complete and run a callback) are pending work; handles
// (sockets, pipes, child processes, watchers, message ports) are long-lived and are not.
const REQUEST_NAME = /(Req|ReqWrap|ReqCallback|ReqPromise)$|^(WriteWrap|ShutdownWrap|ConnectWrap|SendWrap)$/;

// Timers: a pending setTimeout is work that will run, unless it is due far in the future (a
// watchdog) or repeats (a heartbeat). The SDK wraps the timer functions to know which is which;
// timers it did not see being created (timers/promises, internal ones) all count as pending.
const backgroundTimers = new Set();

/**
 * Whether the JavaScript runtime lists its pending work in `process.getActiveResourcesInfo()`.
 * Node does; Bun returns [] whatever is pending (Bun 1.4.5), so there the SDK counts what it can
 * see being started: near timers, immediates, file-system calls, promise timers and Bun's own
 * asynchronous I/O (`trackHiddenWork`).
 */
const RESOURCES_LISTED = (() => {
    if (typeof process.getActiveResourcesInfo !== "function") return false;
    const probe = realSetTimeout(() => {}, 60_000);
    const listed = process.getActiveResourcesInfo().includes("Timeout");
    globalThis.clearTimeout(probe);
    return listed;
})();
/** Where resources are not listed: near timers and immediates scheduled and not yet run or cleared. */
const nearTimers = new Set();
const pendingImmediates = new Set();

function wrapTimerFunctions() {
    const originalSetTimeout = globalThis.setTimeout;
    const originalSetInterval = globalThis.setInterval;
    const originalClearTimeout = globalThis.clearTimeout;
    const originalClearInterval = globalThis.clearInterval;
    function setTimeout(callback, delay, ...args) {
        if (typeof callback !== "function") return originalSetTimeout(callback, delay, ...args);
        const near = !(Number(delay) > quiescence.timerHorizonMs);
        if (near && RESOURCES_LISTED) return originalSetTimeout(callback, delay, ...args);
        const tracked = near ? nearTimers : backgroundTimers;
        let timer;
        const fire = function (...fireArgs) {
            tracked.delete(timer);
            return callback.apply(this, fireArgs);
        };
        timer = originalSetTimeout(fire, delay, ...args);
        tracked.add(timer);
        return timer;
    }
    function setInterval(callback, delay, ...args) {
        const timer = originalSetInterval(callback, delay, ...args);
        backgroundTimers.add(timer);
        return timer;
    }
    function clearTimeout(timer) {
        backgroundTimers.delete(timer);
        nearTimers.delete(timer);
        return originalClearTimeout(timer);
    }
    function clearInterval(timer) {
        backgroundTimers.delete(timer);
        return originalClearInterval(timer);
    }
    if (originalSetTimeout[Symbol.for("nodejs.util.promisify.custom")]) {
        setTimeout[Symbol.for("nodejs.util.promisify.custom")] = originalSetTimeout[Symbol.for("nodejs.util.promisify.custom")];
    }
    globalThis.setTimeout = setTimeout;
    globalThis.setInterval = setInterval;
    globalThis.clearTimeout = clearTimeout;
    globalThis.clearInterval = clearInterval;
    timers.setTimeout = setTimeout;
    timers.setInterval = setInterval;
    timers.clearTimeout = clearTimeout;
    timers.clearInterval = clearInterval;
    if (!RESOURCES_LISTED) {
        const originalSetImmediate = globalThis.setImmediate;
        const originalClearImmediate = globalThis.clearImmediate;
        const setImmediate = function (callback, ...args) {
            if (typeof callback !== "function") return originalSetImmediate(callback, ...args);
            let immediate;
            const run = function (...runArgs) {
                pendingImmediates.delete(immediate);
                return callback.apply(this, runArgs);
            };
            immediate = originalSetImmediate(run, ...args);
            pendingImmediates.add(immediate);
            return immediate;
        };
        const clearImmediate = function (immediate) {
            pendingImmediates.delete(immediate);
            return originalClearImmediate(immediate);
        };
        globalThis.setImmediate = setImmediate;
        globalThis.clearImmediate = clearImmediate;
        timers.setImmediate = setImmediate;
        timers.clearImmediate = clearImmediate;
    }
    module.syncBuiltinESMExports();
}
wrapTimerFunctions();

/** `promise` counted as pending work of the current run until it settles. */
function holdInRun(promise) {
    const run = server.run;
    if (run?.live) run.hold(Promise.resolve(promise).catch(() => {}));
    return promise;
}

/** A promise timer: pending work when due within the horizon, background otherwise. */
function heldTimer(promise, delay) {
    return Number(delay ?? 0) <= quiescence.timerHorizonMs ? holdInRun(promise) : promise;
}

function holdPromiseFunctions(target, names) {
    for (const name of names) {
        const original = target[name];
        if (typeof original !== "function") continue;
        target[name] = function heldAsync(...args) {
            return holdInRun(original.apply(this, args));
        };
    }
}

/** node:fs callback functions: held from the call until the callback runs. */
function holdCallbackFunctions(target, names) {
    for (const name of names) {
        const original = target[name];
        if (typeof original !== "function") continue;
        const wrapped = function heldCallback(...args) {
            const callbackAt = args.findLastIndex((arg) => typeof arg === "function");
            if (callbackAt < 0) return original.apply(this, args);
            let release;
            holdInRun(new Promise((resolve) => (release = resolve)));
            const callback = args[callbackAt];
            args[callbackAt] = function releasing(...results) {
                release();
                return callback.apply(this, results);
            };
            return original.apply(this, args);
        };
        if (original.__promisify__) wrapped.__promisify__ = original.__promisify__;
        target[name] = wrapped;
    }
}

/**
 * Where the runtime does not list its pending work, the asynchronous calls a runtime makes while
 * a run is live are held (as `ctx.hold`) from the call until they settle: `node:fs` (promises and
 * callbacks), `node:timers/promises` within the horizon, and Bun's file, write, sleep, spawn and
 * fetch. Each wrapper calls the original and returns what it returns: no result and no order
 * changes. Installed when this module loads, so a runtime imported after it binds the wrappers.
 */
function trackHiddenWork() {
    const promiseNames = Object.keys(fsPromises).filter((name) => typeof fsPromises[name] === "function" && name !== "constants");
    holdPromiseFunctions(fsPromises, promiseNames);
    if (fs.promises !== fsPromises) holdPromiseFunctions(fs.promises, promiseNames);
    holdCallbackFunctions(fs, [
        "access", "appendFile", "chmod", "close", "copyFile", "exists", "fstat", "fsync", "lstat", "mkdir", "mkdtemp",
        "open", "read", "readdir", "readFile", "readlink", "realpath", "rename", "rm", "rmdir", "stat", "symlink",
        "truncate", "unlink", "utimes", "write", "writeFile",
    ]);
    const realWait = timersPromises.scheduler?.wait?.bind(timersPromises.scheduler);
    if (realWait) timersPromises.scheduler.wait = (delay, options) => heldTimer(realWait(delay, options), delay);
    const realPromiseTimeout = timersPromises.setTimeout;
    timersPromises.setTimeout = (delay, ...rest) => heldTimer(realPromiseTimeout(delay, ...rest), delay);
    const realPromiseImmediate = timersPromises.setImmediate;
    timersPromises.setImmediate = (...args) => holdInRun(realPromiseImmediate(...args));
    module.syncBuiltinESMExports();

    if (typeof Bun === "undefined") return;
    // Bun.file() returns a Blob (BunFile) whose reading and writing methods are asynchronous.
    const blobPrototype = Object.getPrototypeOf(Bun.file("/"));
    holdPromiseFunctions(blobPrototype, ["text", "json", "arrayBuffer", "bytes", "exists", "stat", "formData", "delete", "unlink", "write"]);
    const realWrite = Bun.write.bind(Bun);
    Bun.write = (...args) => holdInRun(realWrite(...args));
    const realSleep = Bun.sleep.bind(Bun);
    Bun.sleep = (ms) => heldTimer(realSleep(ms), ms instanceof Date ? ms.getTime() - Date.now() : ms);
    const realSpawn = Bun.spawn.bind(Bun);
    Bun.spawn = (...args) => {
        const child = realSpawn(...args);
        holdInRun(child.exited);
        return child;
    };
    const realFetch = globalThis.fetch;
    globalThis.fetch = (...args) => holdInRun(realFetch(...args));
}
if (!RESOURCES_LISTED) trackHiddenWork();

/**
 * Virtual time (opt-in, `quiescence.virtualTime`): a promise timer within the horizon
 * (`node:timers/promises` `scheduler.wait` and `setTimeout`, `Bun.sleep` of a number) does not
 * wait in real time. The timers come due one per turn of the event loop, the earliest due first
 * (in creation order among equals), and when one comes due `performance.now()` is moved to its
 * due time if it is earlier: the runtime sees the time it slept pass, as on a machine where
 * nothing else runs, and the run goes on at once. For a runtime that sleeps to let its event loop
 * breathe (oh-my-pi's YieldGate sleeps 20 ms at every turn of its agent loop under the kit's
 * clock rule): nothing the kit answers can come during such a sleep, so waiting it out in real
 * time changes nothing but the speed. Off by default: a runtime whose trace depends on how long a
 * wait takes against other work is not deterministic either way.
 */
const realPerformanceNow = performance.now.bind(performance);
let virtualOffset = 0;
let virtualSeq = 0;
/** The virtual timers not yet due: `{due, seq, value, resolve, signal, onAbort}`. */
const virtualTimers = [];
let virtualTickScheduled = false;

function abortError(signal) {
    const error = new Error("The operation was aborted", { cause: signal?.reason });
    error.name = "AbortError";
    error.code = "ABORT_ERR";
    return error;
}

function virtualTick() {
    virtualTickScheduled = false;
    if (virtualTimers.length === 0) return;
    let next = 0;
    for (let index = 1; index < virtualTimers.length; index++) {
        const timer = virtualTimers[index];
        const best = virtualTimers[next];
        if (timer.due < best.due || (timer.due === best.due && timer.seq < best.seq)) next = index;
    }
    const [timer] = virtualTimers.splice(next, 1);
    const now = realPerformanceNow() + virtualOffset;
    if (timer.due > now) virtualOffset += timer.due - now;
    timer.signal?.removeEventListener("abort", timer.onAbort);
    scheduleVirtualTick();
    timer.resolve(timer.value);
}

function scheduleVirtualTick() {
    if (virtualTickScheduled || virtualTimers.length === 0) return;
    virtualTickScheduled = true;
    realSetTimeout(virtualTick, 0);
}

/** A promise that resolves with `value` when virtual time reaches `delay` ms from now. */
function virtualTimer(delay, value, signal) {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const promise = new Promise((resolve, reject) => {
        const timer = {
            due: realPerformanceNow() + virtualOffset + Math.max(0, Number(delay) || 0),
            seq: virtualSeq++,
            value,
            resolve,
            signal,
            onAbort: () => {
                const at = virtualTimers.indexOf(timer);
                if (at >= 0) virtualTimers.splice(at, 1);
                reject(abortError(signal));
            },
        };
        signal?.addEventListener("abort", timer.onAbort, { once: true });
        virtualTimers.push(timer);
        scheduleVirtualTick();
    });
    return holdInRun(promise);
}

/** Whether a promise timer of `delay` runs in virtual time. */
const virtualFor = (delay) => quiescence.virtualTime === true && typeof delay !== "object" && !(Number(delay ?? 0) > quiescence.timerHorizonMs);

function installVirtualTime() {
    const scheduler = timersPromises.scheduler;
    const wait = scheduler?.wait;
    if (typeof wait === "function") {
        scheduler.wait = function (delay, options) {
            return virtualFor(delay) ? virtualTimer(delay, undefined, options?.signal) : wait.call(this, delay, options);
        };
    }
    const promiseTimeout = timersPromises.setTimeout;
    timersPromises.setTimeout = function (delay, value, options) {
        return virtualFor(delay) ? virtualTimer(delay, value, options?.signal) : promiseTimeout.call(this, delay, value, options);
    };
    module.syncBuiltinESMExports();
    if (typeof Bun !== "undefined") {
        const sleep = Bun.sleep;
        Bun.sleep = (ms) => (virtualFor(ms) ? virtualTimer(ms, undefined, undefined) : sleep(ms));
    }
}
installVirtualTime();

/** The names of what keeps the runtime busy now; empty when it is quiescent. */
function pendingWork() {
    const busy = [];
    let timeouts = 0;
    for (const name of process.getActiveResourcesInfo()) {
        if (quiescence.idleResources.includes(name)) continue;
        if (name === "Timeout") timeouts += 1;
        else if (name === "Immediate" || REQUEST_NAME.test(name) || quiescence.busyResources.includes(name)) busy.push(name);
    }
    // Where the runtime lists nothing, the near timers and immediates the SDK saw scheduled.
    for (const timer of nearTimers) {
        if (typeof timer?.hasRef !== "function" || timer.hasRef()) busy.push("Timeout");
    }
    for (let index = 0; index < pendingImmediates.size; index++) busy.push("Immediate");
    if (timeouts > 0) {
        let background = 0;
        for (const timer of backgroundTimers) {
            if (timer._destroyed === true) backgroundTimers.delete(timer);
            else if (typeof timer.hasRef !== "function" || timer.hasRef()) background += 1;
        }
        for (let index = background; index < timeouts; index++) busy.push("Timeout");
    }
    // Work held by the current run (a discarded run's holds count until its reset is done).
    const holds = server.run?.holds ?? 0;
    if (holds > 0) busy.push(`hold×${holds}`);
    return busy;
}

const nextRound = () => new Promise((resolve) => realSetImmediate(resolve));
const pause = (ms) => new Promise((resolve) => realSetTimeout(resolve, ms));

/**
 * Runs the event loop until the runtime is quiescent: `quietRounds` consecutive rounds (each a
 * full turn of the event loop, so every microtask, nextTick and immediate queued before it has
 * run) in which no immediate, no near timer, no request (fs, dns, writes, ...) and no `hold` is
 * pending. Pending timers and requests are waited out in real time, up to `maxWaitMs`.
 */
async function drain() {
    const begin = realPerformanceNow();
    let quiet = 0;
    while (quiet < quiescence.quietRounds) {
        await nextRound();
        const busy = pendingWork();
        if (busy.length === 0) {
            quiet += 1;
            continue;
        }
        quiet = 0;
        if (busy.every((name) => name === "Immediate")) continue;
        if (realPerformanceNow() - begin > quiescence.maxWaitMs) {
            log(`quiescence: still pending after ${quiescence.maxWaitMs} ms (${busy.join(", ")}); treating the runtime as quiescent`);
            return;
        }
        await pause(1);
    }
}

// =============================================================================================
// The server: one per process
// =============================================================================================

const server = {
    protocol: PROTOCOL_VERSION,
    definition: null,
    reader: null,
    /** The current run (live, or discarded and still unwinding), or null between runs. */
    run: null,
    runsStarted: 0,
    /** Kit lines read while the runtime was blocked in effectSync; applied once it returns. */
    deferred: [],
    /** Final completions among `deferred`, by effect id (a second one is an error at once). */
    deferredFinals: new Set(),
    /** A `reset` (or `start`) read while the runtime was blocked; applied once it unwinds. */
    pendingReset: null,
    /** True between reading a kit line and writing its `idle`: the only time the SDK writes. */
    answering: false,
    /** True while the SDK waits for the kit inside effectSync. */
    waiting: false,
    /** True while `start` runs: the protocol carries no effect then. */
    starting: false,
    /** What `hello` said. */
    hello: null,
    /** `hello.probes` holds `state`: every `idle` of a started run carries the runtime's state. */
    probesState: false,
};

/**
 * Writes one line. Every line is checked against the kit's shapes first (`message` is plain JSON
 * data by now: the SDK builds it, or has read the mapping's values back through JSON); a line
 * that does not fit stops the adapter with `adapter.malformed`, naming the field, and is not
 * written.
 */
function send(message) {
    const problem = checkAdapterMessage(message);
    if (problem !== null) {
        log(`the mapping asked for this line, at:\n${new Error("here").stack.split("\n").slice(2).join("\n")}`);
        fatal("adapter.malformed", `bad ${describeMessage(message)}, not written: \`${problem.path}\`: expected ${problem.expected}, got ${problem.got}`);
    }
    const line = JSON.stringify(message);
    if (Buffer.byteLength(line, "utf8") > LINE_BYTES_MAX) {
        fatal("adapter.oversize", `a \`${message.type}\` line would exceed ${LINE_BYTES_MAX} bytes; it was not written`);
    }
    try {
        writeAllSync(1, `${line}\n`);
    } catch (error) {
        log(`stdout: ${error.code ?? error.message}; the kit is gone`);
        process.exit(error.code === "EPIPE" ? 0 : 1);
    }
}

/** Writes a line of the current answer. Outside an answer nothing is written (and it is logged). */
function emit(message) {
    if (!server.answering) {
        log(`dropped a \`${message.type}\` line written after \`idle\` (an adapter bug): ${quote(JSON.stringify(message))}`);
        return;
    }
    send(message);
}

function emitIdle() {
    const message = { type: "idle" };
    // The state probe (`hello.probes: ["state"]`): the runtime's own leaf and persisted count,
    // on every `idle` of a run whose runtime was created (`started`), read from the mapping's
    // `state(ctx)` when the answer is complete.
    const run = server.run;
    if (server.probesState && run && run.live && run._started) {
        let state;
        try {
            state = server.definition.state(run);
        } catch (error) {
            if (error instanceof RunDiscarded) throw error;
            fatal("adapter.exception", `state threw: ${error?.stack ?? error}`);
        }
        message.state = JSON.parse(JSON.stringify({ leaf: state?.leaf ?? null, persisted: state?.persisted ?? null }));
    }
    emit(message);
    server.answering = false;
}

function lineError(code, message) {
    log(`${code}: ${message}`);
    emit({ type: "error", code, message });
}

/**
 * The run cannot go on, the process can (`RunBroken`): the reason on stderr, an `error` line
 * marked `recoverable`, and the run discarded; the answer ends with `idle` as usual.
 */
function breakRun(run, error) {
    const code = String(error.code);
    const message = String(error.message).slice(0, 100000);
    if (server.protocol < 2) fatal(code, message);
    if (!run.live) return;
    log(`broken run: ${code}: ${message}`);
    emit({ type: "error", code, message, recoverable: true });
    run._discard();
}

/** The adapter cannot go on: an `error` line (if it may write), the reason on stderr, exit 1. */
function fatal(code, message) {
    log(`fatal: ${code}: ${message}`);
    if (server.answering) {
        try {
            writeAllSync(1, `${JSON.stringify({ type: "error", code, message: String(message).slice(0, 100000) })}\n`);
        } catch {
            // the kit is gone
        }
    }
    process.exit(1);
}

function exitNow(code) {
    try {
        server.definition?.shutdown?.();
    } catch (error) {
        log("shutdown hook threw:", error);
    }
    process.exit(code);
}

/** Reads and parses the next kit line; null at end of input; throws KitLineError for a bad one. */
function readKitMessage() {
    for (;;) {
        const item = server.reader.next();
        if (item === null) return null;
        // A blank line is not a message: skipped, not acknowledged (as `agentsim serve` does).
        if (item.line !== undefined && item.line.trim() === "") continue;
        server.answering = true;
        if (item.oversize !== undefined) throw new KitLineError("input.oversize", `an input line of ${item.oversize} bytes exceeds ${LINE_BYTES_MAX}`);
        if (item.invalidUtf8) throw new KitLineError("input.garbage", "an input line is not valid UTF-8");
        return parseKitLine(item.line, server.protocol);
    }
}

// =============================================================================================
// A run: the context the mapping gets
// =============================================================================================

/**
 * One run of a scenario: created at `start`, discarded at `reset`. Everything it counts (effect
 * ids, signal ids, the `ids` and `clock` rules) starts afresh in the next run.
 */
class RunContext {
    #effectNext = 1;
    #pending = new Map();
    #signals = new Map();
    #signalNext = 1;
    #delivered = new Set();
    #settled = new Set();

    constructor(scenario, number) {
        /** The `start.scenario` the kit sent (validated). */
        this.scenario = scenario;
        /** 1 for the first run of this process, 2 for the next, ... */
        this.number = number;
        /** False once the run was reset or replaced: then nothing it does reaches the kit. */
        this.live = true;
        /** True once `started` was written: the runtime exists, and `idle` carries its state. */
        this._started = false;
        /** Promises held with `hold` that have not settled yet. */
        this.holds = 0;
        const idRule = { prefix: scenario.ids.prefix, start: scenario.ids.start };
        const clockRule = { startMs: scenario.clock.startMs, stepMs: scenario.clock.stepMs };
        /** The `ids` rule: the k-th `next()` (0-based) returns `prefix + (start + k)`. */
        this.ids = {
            rule: idRule,
            count: 0,
            next: () => `${idRule.prefix}${idRule.start + this.ids.count++}`,
        };
        /** The `clock` rule: the k-th `now()` (0-based) returns `startMs + k * stepMs`. */
        this.clock = {
            rule: clockRule,
            count: 0,
            now: () => clockRule.startMs + this.clock.count++ * clockRule.stepMs,
        };
    }

    /** The scenario's observers (protocol 2), `[]` when it has none. */
    get observers() {
        return this.scenario.observers ?? [];
    }

    #checkEffect(kind, fields) {
        if (!Object.hasOwn(COMPLETES, kind)) throw new TypeError(`unknown effect kind ${JSON.stringify(kind)}`);
        if (V2_EFFECTS.has(kind) && server.protocol < 2) throw new TypeError(`the \`${kind}\` effect needs protocol 2 (this adapter speaks ${server.protocol})`);
        if (fields === null || typeof fields !== "object") throw new TypeError("effect fields must be an object");
        if ("kind" in fields || "id" in fields) throw new TypeError("effect fields must not carry `kind` or `id`: the SDK writes them");
        if (server.starting) throw new TypeError(`\`${kind}\` effect during \`start\`: the protocol carries no effect before \`started\``);
        if (server.waiting) throw new TypeError(`\`${kind}\` effect while the SDK waits for the kit in effectSync`);
        // What JSON.stringify writes is what the kit reads: `send` checks that, not the live
        // objects (a value JSON cannot carry, such as a BigInt or a cycle, throws here).
        return JSON.parse(JSON.stringify(fields));
    }

    #emitEffect(kind, wire) {
        const id = this.#effectNext++;
        emit({ type: "effect", effect: { kind, id, ...wire } });
        return id;
    }

    /**
     * Issues an effect: the SDK gives it the next id, writes the `effect` line now, and resolves
     * the promise with the kit's `completion` when it comes (`{kind, ...}` as docs/protocol.md
     * lists it). A `model_request` is answered by any number of `model_chunk` completions (each
     * passed to `options.onChunk`, synchronously, if given) and then one `model_final`, which
     * resolves the promise. In a discarded run nothing is written and the promise never settles.
     */
    effect(kind, fields, options = {}) {
        if (!this.live) return new Promise(() => {});
        const id = this.#emitEffect(kind, this.#checkEffect(kind, fields));
        return new Promise((resolve) => {
            this.#pending.set(id, { kind, resolve, onChunk: options.onChunk });
        });
    }

    /**
     * Issues an effect and blocks until the kit completes it, for runtimes that must have the
     * answer synchronously (a synchronous store). The SDK writes the effect, then `idle` (the
     * process can do nothing else but wait), and reads the kit's lines until the `complete` for
     * it arrives, which it returns. Other lines read meanwhile (operations, completions of other
     * effects) are acknowledged with `idle` each and applied, in order, once the runtime is
     * quiescent again. If the kit resets or restarts the run meanwhile, RunDiscarded is thrown
     * (and is thrown at once by every later call in this run); `shutdown` or end of input exits.
     */
    effectSync(kind, fields, options = {}) {
        if (!this.live) throw new RunDiscarded();
        const id = this.#emitEffect(kind, this.#checkEffect(kind, fields));
        return waitSync(this, id, kind, options);
    }

    /** The pending entry for an effect id, or undefined (internal). */
    _pending(id) {
        return this.#pending.get(id);
    }

    /** Applies a completion to a pending asynchronous effect (internal). */
    _complete(id, completion) {
        const pending = this.#pending.get(id);
        if (completion.kind === "model_chunk") {
            pending.onChunk?.(completion);
            return;
        }
        this.#pending.delete(id);
        pending.resolve(completion);
    }

    /** How many asynchronous effects wait for the kit. */
    get pendingEffects() {
        return this.#pending.size;
    }

    /** Discards the run: pending effects never settle, nothing more is written (internal). */
    _discard() {
        this.live = false;
        this.#pending.clear();
    }

    /** Writes `abort_signal` for a signal id (one the mapping chose, or from `signalId`). */
    abortSignal(id) {
        if (!this.live) return;
        emit({ type: "abort_signal", signal: id });
    }

    /**
     * The signal id of an AbortSignal: the next small integer the first time this run sees the
     * object, the same one afterwards; 0 for none. When the signal fires, `abort_signal` is
     * written (at once if it has already fired).
     */
    signalId(signal) {
        if (!signal) return 0;
        let id = this.#signals.get(signal);
        if (id !== undefined) return id;
        id = this.#signalNext++;
        this.#signals.set(signal, id);
        const fired = () => this.abortSignal(id);
        if (signal.aborted) queueMicrotask(fired);
        else signal.addEventListener("abort", fired, { once: true });
        return id;
    }

    /** Marks an operation as delivered (internal). */
    _deliver(op) {
        if (this.#delivered.has(op)) return false;
        this.#delivered.add(op);
        return true;
    }

    /** Whether operation `op` has been settled in this run. */
    isSettled(op) {
        return this.#settled.has(op);
    }

    /**
     * Writes `settled` for operation `op`: `{status: "resolved", value}` or
     * `{status: "rejected", cause: {code, message}}`. Each delivered operation settles once.
     */
    settle(op, settlement) {
        if (!this.live) return;
        if (!this.#delivered.has(op)) throw new TypeError(`settle(${op}): operation ${op} was never delivered in this run`);
        if (this.#settled.has(op)) throw new TypeError(`settle(${op}): operation ${op} is already settled`);
        const wire = JSON.parse(JSON.stringify(settlement));
        this.#settled.add(op);
        emit({ type: "settled", op, settlement: wire });
    }

    /** settle(op, {status: "resolved", value}); `undefined` is `{kind: "unit"}`. */
    resolve(op, value) {
        this.settle(op, { status: "resolved", value: value ?? { kind: "unit" } });
    }

    /** settle(op, {status: "rejected", cause}) from an Error (see causeOf) or a `{code, message}`. */
    reject(op, error) {
        const rejection = error instanceof Error || !(error && typeof error.code === "string") ? causeOf(error) : { code: error.code, message: String(error.message) };
        this.settle(op, { status: "rejected", cause: rejection });
    }

    /**
     * Counts `promise` as pending work until it settles: work the SDK cannot see otherwise (a
     * worker thread, thread-pool crypto or zlib, a child process). Never hold a promise that
     * waits for the kit: the runtime would never be quiescent (each drain then gives up after
     * `maxWaitMs`). Returns `promise`.
     */
    hold(promise) {
        this.holds += 1;
        const release = () => {
            this.holds -= 1;
        };
        Promise.resolve(promise).then(release, release);
        return promise;
    }

    /** Diagnostics to stderr. */
    log(...parts) {
        log(...parts);
    }

    /** The adapter cannot go on: writes an `error` line with `code`, logs, exits 1. */
    fail(code, message) {
        fatal(code, message);
    }
}

/** The run the kit is driving (possibly discarded and unwinding), or null between runs. */
export function currentRun() {
    return server.run;
}

// =============================================================================================
// Synchronous effects: block on the shared reader until the kit answers
// =============================================================================================

function waitSync(run, id, kind, options) {
    const expected = COMPLETES[kind];
    server.waiting = true;
    try {
        for (;;) {
            // Every line read here is acknowledged by one `idle`: the first one acknowledges the
            // line the runtime was answering when it blocked; the line that completes this effect
            // is acknowledged by the `idle` that ends the answer it continues.
            emitIdle();
            let message;
            try {
                message = readKitMessage();
            } catch (error) {
                if (!(error instanceof KitLineError)) throw error;
                lineError(error.code, error.message);
                continue;
            }
            if (message === null) exitNow(0);
            switch (message.type) {
                case "shutdown":
                    exitNow(0);
                    break;
                case "reset":
                case "start":
                    // The kit ends (or replaces) the run while the runtime is blocked here: the
                    // run is discarded and its stack unwinds; the reset happens once it has.
                    log(`\`${message.type}\` while the runtime was blocked on fx#${id} (${kind}): the run is discarded`);
                    server.pendingReset = message;
                    server.deferred = [];
                    server.deferredFinals.clear();
                    run._discard();
                    throw new RunDiscarded();
                case "operation":
                    server.deferred.push(message);
                    continue;
                case "complete": {
                    const completion = message.completion;
                    if (message.effect === id) {
                        if (!expected.includes(completion.kind)) {
                            lineError("input.wrong_completion", `fx#${id} (a pending ${kind} effect) cannot take a completion of kind ${completion.kind}`);
                            continue;
                        }
                        if (completion.kind === "model_chunk") {
                            options.onChunk?.(completion);
                            continue;
                        }
                        return completion;
                    }
                    const pending = run._pending(message.effect);
                    if (!pending || server.deferredFinals.has(message.effect)) {
                        lineError("input.unknown_effect", `fx#${message.effect} is not a pending effect`);
                        continue;
                    }
                    if (!COMPLETES[pending.kind].includes(completion.kind)) {
                        lineError("input.wrong_completion", `fx#${message.effect} (a pending ${pending.kind} effect) cannot take a completion of kind ${completion.kind}`);
                        continue;
                    }
                    if (completion.kind !== "model_chunk") server.deferredFinals.add(message.effect);
                    server.deferred.push(message);
                    continue;
                }
                default:
                    lineError("input.unknown_type", `unknown message type ${JSON.stringify(message.type)}`);
            }
        }
    } finally {
        server.waiting = false;
    }
}

// =============================================================================================
// Applying kit messages
// =============================================================================================

async function applyMessage(message) {
    switch (message.type) {
        case "":
            return; // nothing: used to finish an answer whose run was discarded
        case "start":
            if (server.run) await resetRun();
            await startRun(message.scenario);
            return;
        case "reset":
            await resetRun();
            return;
        case "shutdown":
            exitNow(0);
            return;
        case "operation":
            applyOperation(message);
            return;
        case "complete":
            applyComplete(message);
            return;
        default:
            lineError("input.unknown_type", `unknown message type ${JSON.stringify(message.type)}`);
    }
}

async function startRun(scenario) {
    const run = new RunContext(scenario, ++server.runsStarted);
    server.run = run;
    // One line per run on stderr: the kit shows an adapter's stderr tail in its verdicts, and a
    // process that serves many runs has the earlier runs' lines in it too. Nothing in it depends
    // on which runs came before (a report must not depend on how `--jobs` shared them out).
    log("start");
    server.starting = true;
    let result;
    try {
        result = await server.definition.start(scenario, run);
        await drain();
    } catch (error) {
        if (error instanceof RunDiscarded) throw error;
        if (error instanceof RunBroken) return breakRun(run, error);
        fatal("adapter.exception", `start threw: ${error?.stack ?? error}`);
    } finally {
        server.starting = false;
    }
    if (!run.live) return;
    if (result && typeof result === "object" && "restoreFailed" in result) {
        const failure = result.restoreFailed;
        const wire = { code: String(failure?.code ?? "restore.failed"), message: String(failure?.message ?? "") };
        emit({ type: "restore_failed", cause: wire });
        return;
    }
    const leaf = result?.leaf ?? null;
    const messages = result?.messages;
    if ((leaf !== null && typeof leaf !== "string") || !Number.isSafeInteger(messages) || messages < 0) {
        fatal("adapter.no_start_result", `start must return {leaf: string|null, messages: count} or {restoreFailed: {code, message}}, got ${JSON.stringify(result)}`);
    }
    emit({ type: "started", leaf, messages });
    run._started = true;
    // Protocol 2: what the runtime does while it is created, after `started` and before the
    // `idle` that ends the answer to `start` (an AgentSession that appends entries of its own
    // as it opens the session). Its effects are set-up effects: the kit answers them before it
    // delivers the first operation. Its promise is the mapping's (a failure is its to keep).
    if (server.definition.setup && server.protocol >= 2) {
        try {
            const setup = server.definition.setup(run);
            Promise.resolve(setup).catch((error) => {
                if (!(error instanceof RunDiscarded)) log("setup failed:", error?.message ?? error);
            });
        } catch (error) {
            if (error instanceof RunDiscarded) throw error;
            log("setup threw:", error?.message ?? error);
        }
    }
}

async function resetRun() {
    const run = server.run;
    if (!run) return;
    run._discard();
    // Let whatever the discarded run was doing unwind before anything of the next run starts,
    // so that none of its clock readings or ids land in the next run.
    await drain();
    try {
        await server.definition.reset?.(run);
    } catch (error) {
        fatal("adapter.exception", `reset threw: ${error?.stack ?? error}`);
    }
    await drain();
    server.run = null;
}

function applyOperation(message) {
    const run = server.run;
    if (!run || !run.live) {
        lineError("input.out_of_turn", `operation ${message.op} before \`start\``);
        return;
    }
    if (message.op === 0 || !run._deliver(message.op)) {
        lineError("input.malformed", `operation number ${message.op} is 0 or was already delivered in this run`);
        return;
    }
    const name = message.operation.op;
    if (Object.hasOwn(server.hello.unsupported ?? {}, name)) {
        // The kit sends no operation the adapter declared unsupported; a kit that does is told so.
        lineError("input.unsupported", `\`${name}\` was declared unsupported: ${server.hello.unsupported[name]}`);
        return;
    }
    const op = message.op;
    let returned;
    try {
        returned = server.definition.operation(op, message.operation, run);
    } catch (error) {
        if (error instanceof RunBroken) breakRun(run, error);
        else if (!(error instanceof RunDiscarded)) run.reject(op, error);
        return;
    }
    if (returned === undefined) return; // the mapping settles it with ctx.settle
    Promise.resolve(returned).then(
        (value) => {
            if (!run.live || run.isSettled(op)) return;
            try {
                run.resolve(op, value);
            } catch (error) {
                // A value JSON cannot carry (a BigInt, a cycle): a mapping bug, like a bad shape.
                fatal("adapter.malformed", `bad settlement of op#${op}, not written: the value is not JSON (${error.message})`);
            }
        },
        (error) => {
            if (error instanceof RunBroken) return breakRun(run, error);
            if (!run.live || run.isSettled(op) || error instanceof RunDiscarded) return;
            run.reject(op, error);
        },
    );
}

function applyComplete(message) {
    const run = server.run;
    const pending = run?.live ? run._pending(message.effect) : undefined;
    server.deferredFinals.delete(message.effect);
    if (!pending) {
        lineError("input.unknown_effect", `fx#${message.effect} is not a pending effect`);
        return;
    }
    const kind = message.completion.kind;
    if (!COMPLETES[pending.kind].includes(kind)) {
        lineError("input.wrong_completion", `fx#${message.effect} (a pending ${pending.kind} effect) cannot take a completion of kind ${kind}`);
        return;
    }
    run._complete(message.effect, message.completion);
}

/** Applies one kit line and everything it leads to, until the runtime is quiescent. */
async function answer(message) {
    await applyMessage(message);
    for (;;) {
        await drain();
        if (server.pendingReset) {
            const replacement = server.pendingReset;
            server.pendingReset = null;
            await resetRun();
            if (replacement.type === "start") await startRun(replacement.scenario);
            continue;
        }
        if (server.deferred.length > 0) {
            await applyMessage(server.deferred.shift());
            continue;
        }
        return;
    }
}

// =============================================================================================
// runAdapter
// =============================================================================================

function selectProtocol(definition) {
    const fromEnv = process.env.AGENTSIM_PROTOCOL;
    const protocol = fromEnv !== undefined && fromEnv !== "" ? Number(fromEnv) : (definition.protocol ?? PROTOCOL_VERSION);
    if (!PROTOCOL_VERSIONS.includes(protocol)) throw new TypeError(`protocol ${fromEnv ?? definition.protocol} is not one of ${PROTOCOL_VERSIONS.join(", ")}`);
    return protocol;
}

/**
 * Serves the adapter protocol on stdin/stdout with `definition` as the mapping, until `shutdown`
 * or end of input (then the process exits 0). Never returns. See README.md for the definition.
 */
export async function runAdapter(definition, options = {}) {
    if (server.definition) throw new Error("runAdapter was already called in this process");
    if (!definition || typeof definition.start !== "function" || typeof definition.operation !== "function") {
        throw new TypeError("runAdapter(definition): definition needs start(scenario, ctx) and operation(op, operation, ctx)");
    }
    server.definition = definition;
    server.protocol = selectProtocol(definition);
    if (definition.name) logPrefix = `[${definition.name}]`;
    Object.assign(quiescence, definition.quiescence ?? {}, options.quiescence ?? {});
    // Under virtual time the runtime reads a clock that the SDK moves forward (never back).
    if (quiescence.virtualTime === true) performance.now = () => realPerformanceNow() + virtualOffset;
    if (definition.stdout) setStdoutSink(definition.stdout);
    server.reader = new LineReader(options.fd ?? 0);

    process.on("unhandledRejection", (reason) => {
        if (reason instanceof RunDiscarded) return;
        log("unhandled rejection:", reason instanceof Error ? reason.stack : String(reason));
    });
    process.on("uncaughtException", (error) => {
        if (error instanceof RunDiscarded) return;
        if (error instanceof RunBroken) fatal(error.code, `${error.message} (thrown outside start and operation)`);
        fatal("adapter.exception", `uncaught exception: ${error?.stack ?? String(error)}`);
    });

    const helloInfo = typeof definition.hello === "function" ? definition.hello() : definition.hello;
    server.hello = helloInfo ?? {};
    const probes = helloInfo?.probes ?? [];
    server.answering = true;
    server.probesState = Array.isArray(probes) && probes.includes("state");
    if (server.probesState && server.protocol < 2) {
        fatal("adapter.malformed", "`hello.probes` declares `state`, a protocol 2 probe, under protocol 1");
    }
    if (server.probesState && typeof definition.state !== "function") {
        fatal("adapter.malformed", "`hello.probes` declares `state` but the adapter definition has no `state(ctx)`");
    }
    emit(
        JSON.parse(
            JSON.stringify({
                type: "hello",
                protocol: server.protocol,
                implementation: helloInfo?.implementation ?? null,
                features: helloInfo?.features ?? [],
                unsupported: helloInfo?.unsupported ?? {},
                ...(Array.isArray(probes) && probes.length === 0 ? {} : { probes }),
            }),
        ),
    );
    server.answering = false;
    // The kit writes `start` only after `hello`; loading a heavy runtime here keeps its first
    // wait short (it is bounded by the step timeout all the same).
    if (definition.init) {
        try {
            await definition.init();
        } catch (error) {
            log("init failed:", error);
            process.exit(1);
        }
    }
    for (;;) {
        let message;
        try {
            message = readKitMessage();
        } catch (error) {
            if (!(error instanceof KitLineError)) throw error;
            lineError(error.code, error.message);
            emitIdle();
            continue;
        }
        if (message === null) exitNow(0);
        try {
            await answer(message);
        } catch (error) {
            if (!(error instanceof RunDiscarded)) throw error;
            // A discarded run's stack unwound up to here: finish what the kit asked for.
            await answer({ type: "" });
        }
        emitIdle();
    }
}
