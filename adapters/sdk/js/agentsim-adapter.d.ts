// Types of the agentsim adapter SDK for JavaScript (agentsim-adapter.mjs). Hand-written; they
// describe the adapter protocol, version 1 and 2 (docs/protocol.md and its version 2 delta).

// ---------------------------------------------------------------------------------------------
// Pi / pi-ai payloads. The SDK checks their envelope (objects where objects belong); their
// contents are the runtime's business and pass through unchanged.
// ---------------------------------------------------------------------------------------------

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** A pi-ai message: `{role: "user" | "assistant" | "toolResult", ...}`. */
export type Message = JsonObject & { role?: string };
/** A pi-ai assistant message (`content`, `stopReason`, `timestamp`, ...). */
export type AssistantMessage = Message;
/** A Pi session entry: `{type, id, parentId, timestamp, ...}`. */
export type SessionEntry = JsonObject & { type?: string; id?: string; parentId?: string | null };
/** A content block: `{type: "text", text}`, `{type: "image", ...}`, ... */
export type ContentBlock = JsonObject & { type?: string };
export type ToolCall = JsonObject & { id?: string; name?: string; arguments?: JsonValue };
export interface ToolSpec {
    name: string;
    description?: string;
    parameters?: JsonValue;
}

/** An error value; two causes are "the same" when both fields are equal. */
export interface Cause {
    code: string;
    message: string;
}

// ---------------------------------------------------------------------------------------------
// Kit -> adapter
// ---------------------------------------------------------------------------------------------

export interface Scenario {
    config: {
        /** `null`: a new conversation on an empty session. */
        activeLeafId: string | null;
        systemPrompt: string | null;
        maxSteps: number;
        context: { total: number; reservedOutput: number; safetyMargin: number };
    };
    session: SessionEntry[];
    resources: {
        instructions?: { path: string; content: string }[];
        skills?: { name: string; description: string; body?: string }[];
    };
    tools: ToolSpec[];
    /** Extension names, in the order their hooks run. */
    extensions: string[];
    ids: { prefix: string; start: number };
    clock: { startMs: number; stepMs: number };
    /** Informational: the kit answers every append and write itself. */
    faults: {
        appends: { at: number; fault: string; error?: Cause; until?: JsonValue }[];
        writes: { at: number; error: Cause }[];
    };
    /** Protocol 2: extensions observing agent events; absent when there are none. */
    observers?: Observer[];
    /** Informational: the chunks each scripted model response streams, in request order;
     * absent when none streams any. */
    chunks?: number[];
}

export interface Observer {
    name: string;
    /** `message_end`, `turn_end`, `agent_end`. */
    events: string[];
}

export type Operation =
    | { op: "prompt"; text: string }
    | { op: "flush" }
    | { op: "dispose" }
    | { op: "steer"; text: string }
    | { op: "followUp"; text: string }
    | { op: "abort" }
    | { op: "mode"; mode: string; text: string }
    | { op: "library"; text: string };

export type StoreOutcome = { kind: "ok" } | { kind: "failed"; cause: Cause };

export type Completion =
    | { kind: "model_chunk"; text: string }
    | { kind: "model_final"; message: AssistantMessage }
    | {
          kind: "tool";
          outcome:
              | { kind: "ok"; content: ContentBlock[]; details?: JsonValue; isError: boolean }
              | { kind: "threw"; message: string }
              | { kind: "aborted" };
      }
    | {
          kind: "hook";
          answer:
              | { kind: "allow" }
              | { kind: "deny"; reason: string }
              | { kind: "rewrite_arguments"; arguments: JsonValue }
              | { kind: "observe" }
              | { kind: "rewrite_result"; content: ContentBlock[]; isError: boolean }
              | { kind: "threw"; message: string };
      }
    | { kind: "append"; outcome: StoreOutcome }
    | { kind: "write"; outcome: StoreOutcome }
    | { kind: "notify"; outcome: { kind: "ok" } | { kind: "threw"; message: string } };

export type ModelChunk = Extract<Completion, { kind: "model_chunk" }>;

// ---------------------------------------------------------------------------------------------
// Adapter -> kit
// ---------------------------------------------------------------------------------------------

/** The fields of each effect kind, without `kind` and `id` (the SDK writes those). */
export interface EffectFields {
    model_request: {
        /** The signal id the request was given (`ctx.signalId(signal)`; 0 for none). */
        signal: number;
        request: { systemPrompt: string | null; messages: Message[]; tools: ToolSpec[] };
    };
    tool_call: { signal: number; call: ToolCall };
    hook: { extension: string; phase: "before" | "after"; call: ToolCall; result: Message | null };
    append: { entry: SessionEntry };
    write: { text: string };
    /** Protocol 2. `event`: `{type: "message_end", message}`, `{type: "turn_end", message, toolResults}`, `{type: "agent_end", messages}`. */
    notify: { observer: string; event: JsonObject & { type: string } };
}
export type EffectKind = keyof EffectFields;

/** The completion that finally answers each effect kind (a model request's chunks go to onChunk). */
export interface CompletionOf {
    model_request: Extract<Completion, { kind: "model_final" }>;
    tool_call: Extract<Completion, { kind: "tool" }>;
    hook: Extract<Completion, { kind: "hook" }>;
    append: Extract<Completion, { kind: "append" }>;
    write: Extract<Completion, { kind: "write" }>;
    notify: Extract<Completion, { kind: "notify" }>;
}

export type RunReason = "stop" | "length" | "error" | "aborted" | "max_steps";
export type Value =
    | { kind: "unit" }
    | { kind: "run"; reason: RunReason; steps: number; messages: Message[] }
    | { kind: "library"; reason: RunReason; text: string };
export type Settlement = { status: "resolved"; value: Value } | { status: "rejected"; cause: Cause };

export interface HelloInfo {
    implementation: { name: string; version: string };
    /** Operations and behaviours supported: `steer`, `followUp`, `abort`, `mode`, `library`, `chunks`, `observers`, ... */
    features?: string[];
    /** Operations or behaviours the adapter cannot run, each with its reason (the kit reports those scenarios not applicable). */
    unsupported?: Record<string, string>;
    /**
     * Protocol 2: what the adapter reports of its runtime at every `idle` of a run. `"state"`:
     * the definition's `state(ctx)` gives the runtime's own leaf and persisted count (PERSIST-10
     * judges them). Declare it only when the runtime exposes both.
     */
    probes?: "state"[];
}

/** The runtime's own state, as `state(ctx)` reports it (never a value the adapter computes). */
export interface StateProbe {
    /** The id of the entry the runtime's leaf names (`null`: none). */
    leaf: string | null;
    /** How many appends the runtime counts as persisted (accepted by the store) since it was restored. */
    persisted: number;
}

export type StartResult = { leaf: string | null; messages: number } | { restoreFailed: Cause };

// ---------------------------------------------------------------------------------------------
// The SDK
// ---------------------------------------------------------------------------------------------

export interface EffectOptions {
    /** Called synchronously for each `model_chunk` of a `model_request` (the effect stays pending). */
    onChunk?: (chunk: ModelChunk) => void;
}

/** The per-run context the mapping gets: created at `start`, discarded at `reset`. */
export interface RunContext {
    /** The scenario `start` carried (validated). */
    readonly scenario: Scenario;
    /** 1 for the first run of this process, 2 for the next, ... */
    readonly number: number;
    /** False once the kit reset or replaced the run: nothing it does reaches the kit any more. */
    readonly live: boolean;
    /** The scenario's observers (`[]` when none). */
    readonly observers: Observer[];
    /** Promises held with `hold` that have not settled. */
    readonly holds: number;
    /** The `ids` rule: the k-th `next()` (0-based) returns `prefix + (start + k)`. */
    readonly ids: { readonly rule: { prefix: string; start: number }; count: number; next(): string };
    /** The `clock` rule: the k-th `now()` (0-based) returns `startMs + k * stepMs`. */
    readonly clock: { readonly rule: { startMs: number; stepMs: number }; count: number; now(): number };
    /** Effects the kit has not completed yet (asynchronous ones). */
    readonly pendingEffects: number;

    /**
     * Issues an effect: the SDK gives it the next id, writes it now, and resolves with the kit's
     * final completion. In a discarded run nothing is written and the promise never settles.
     * Throws a TypeError for a call the protocol has no place for (nothing is written then);
     * fields of the wrong shape stop the adapter with `adapter.malformed` (the line is not
     * written).
     */
    effect<K extends EffectKind>(kind: K, fields: EffectFields[K], options?: EffectOptions): Promise<CompletionOf[K]>;
    /**
     * Issues an effect and blocks until the kit completes it (a synchronous store): writes the
     * effect, then `idle`, and reads stdin until the answer. Throws RunDiscarded if the kit
     * resets or restarts the run meanwhile (and at once in a discarded run).
     */
    effectSync<K extends EffectKind>(kind: K, fields: EffectFields[K], options?: EffectOptions): CompletionOf[K];
    /** Writes `abort_signal` for a signal id. */
    abortSignal(id: number): void;
    /** The id of an AbortSignal in this run (1, 2, ... in first-seen order; 0 for none); writes `abort_signal` when it fires. */
    signalId(signal: AbortSignal | null | undefined): number;
    /** Writes `settled` for a delivered operation (once per operation); a settlement of the wrong shape stops the adapter with `adapter.malformed`. */
    settle(op: number, settlement: Settlement): void;
    /** `settle(op, {status: "resolved", value})`; `undefined` is `{kind: "unit"}`. */
    resolve(op: number, value?: Value): void;
    /** `settle(op, {status: "rejected", cause})` from an Error (`causeOf`) or a `{code, message}`. */
    reject(op: number, error: unknown): void;
    /** Whether `op` has been settled in this run. */
    isSettled(op: number): boolean;
    /** Counts `promise` as pending work until it settles (work the SDK cannot see). */
    hold<T>(promise: Promise<T>): Promise<T>;
    /** Diagnostics on stderr. */
    log(...parts: unknown[]): void;
    /** The adapter cannot go on: an `error` line with `code`, then exit 1. */
    fail(code: string, message: string): never;
}

export interface QuiescenceOptions {
    /** Consecutive event-loop rounds with nothing pending before the runtime counts as quiescent (default 3). */
    quietRounds?: number;
    /** The longest one drain waits for pending timers and requests, in ms (default 2000). */
    maxWaitMs?: number;
    /** One-shot timers due later than this (ms) are background, not pending work (default 1000). Intervals always are. */
    timerHorizonMs?: number;
    /** Extra `process.getActiveResourcesInfo()` names that count as pending work. */
    busyResources?: string[];
    /** Resource names that never count as pending work. */
    idleResources?: string[];
    /**
     * Promise timers due within the horizon (`node:timers/promises` `scheduler.wait` and
     * `setTimeout`, `Bun.sleep` of a number) come due at once, one per event-loop turn, earliest
     * first, and `performance.now()` moves forward to each one's due time (default false).
     */
    virtualTime?: boolean;
}

export interface AdapterDefinition {
    /** The name in stderr diagnostics (`[name] ...`). */
    name?: string;
    /** The protocol version to speak (default 2); the environment variable AGENTSIM_PROTOCOL overrides it. */
    protocol?: 1 | 2;
    /** What `hello` says (or a function returning it). Written before `init`. */
    hello: HelloInfo | (() => HelloInfo);
    /** Called once after `hello`, before the first kit line: load the runtime here. */
    init?(): void | Promise<void>;
    /** Creates the runtime for a run: `{leaf, messages}` (started) or `{restoreFailed: cause}`. No effects during start. */
    start(scenario: Scenario, ctx: RunContext): StartResult | Promise<StartResult>;
    /**
     * Protocol 2, optional: called right after `started` is written, for what the runtime does
     * while it is created (an SDK that appends entries of its own as it opens a session). Its
     * effects are set-up effects, written before the `idle` that ends the answer to `start`;
     * the kit answers them before it delivers the first operation. Its promise's failure is the
     * mapping's to keep (say, to reject the operations with the runtime's creation error).
     */
    setup?(ctx: RunContext): void | Promise<void>;
    /**
     * Delivers operation `op`. Return a value or a promise of one to have the SDK settle it
     * (resolved with the value, `undefined` meaning `{kind: "unit"}`; rejected with
     * `causeOf(error)`); return `undefined` to settle it yourself with `ctx.settle`.
     */
    operation(op: number, operation: Operation, ctx: RunContext): Value | undefined | void | Promise<Value | undefined | void>;
    /** Protocol 2: the run `ctx` is over (already discarded and quiescent). Drop the runtime and every per-run state. */
    reset?(ctx: RunContext): void | Promise<void>;
    /**
     * Protocol 2, required when `hello.probes` holds `"state"`: the runtime's own leaf and
     * persisted count, read synchronously when an answer is complete (quiescent), for the
     * `idle` that ends it. Called for every `idle` of a run whose `start` returned a runtime.
     */
    state?(ctx: RunContext): StateProbe;
    /** Called just before the process exits on `shutdown` or end of input. */
    shutdown?(): void;
    /** Where process.stdout.write and console.log go (default: stderr). */
    stdout?: (text: string) => void;
    quiescence?: QuiescenceOptions;
}

export interface RunOptions {
    /** The file descriptor kit lines are read from (default 0). */
    fd?: number;
    quiescence?: QuiescenceOptions;
}

/** Serves the protocol on stdin/stdout until `shutdown` or end of input, then exits 0. Never returns. */
export function runAdapter(definition: AdapterDefinition, options?: RunOptions): Promise<never>;

/** The run the kit is driving (possibly discarded and unwinding), or null between runs. */
export function currentRun(): RunContext | null;

/** Thrown by `effectSync` when the kit resets or restarts the run while the runtime waits. */
export class RunDiscarded extends Error {
    readonly code: "agentsim.run_discarded";
}

/**
 * Thrown by the mapping (from `start`, or from `operation`, thrown or as its promise's rejection)
 * when the implementation cannot go on with this run but the process is sound (a walk the
 * adapter stopped at a time limit): the SDK writes `error` marked `recoverable`, discards the
 * run and ends the answer with `idle`; the kit reports the run broken and reuses the process
 * after `reset`. Under protocol 1 it acts as `ctx.fail`.
 */
export class RunBroken extends Error {
    constructor(code: string, message: string);
    readonly code: string;
}

/** A kit line the adapter cannot apply. */
export class KitLineError extends Error {
    readonly code: string;
}

/** `{code: error.code ?? error.name ?? "Error", message}` of an Error; `{code: "Error", message: String(x)}` otherwise. */
export function causeOf(error: unknown): Cause;
/** An Error with `code` and `message` from a cause. */
export function causeError(cause: Cause): Error & { code: string };
/** Diagnostics: one line on stderr. */
export function log(...parts: unknown[]): void;
/** Where process.stdout.write (and console.log) output goes; `null` restores the default (stderr). */
export function setStdoutSink(sink: ((text: string) => void) | null): void;
/** Parses one kit line strictly; throws KitLineError (`input.garbage`, `input.malformed`, `input.unknown_type`). */
/** Where a line departs from the kit's shapes (docs/protocol.md, "Errors in adapter lines"). */
export interface ShapeProblem {
    code: "wire.malformed" | "wire.unknown_type" | "wire.unknown_effect_kind" | "wire.version";
    /** The JSON path of the bad value, e.g. `effect.entry.message.content[0].type`. */
    path: string;
    /** What the shape wants there, in the kit's words, e.g. `one of "text", "image"`. */
    expected: string;
    got: string;
}
/** Checks an adapter line (as JSON.parse reads it) against the kit's shapes; null if it fits. */
export function checkAdapterMessage(message: unknown): ShapeProblem | null;
/** What a line is about, as the kit's verdicts say it: `effect append fx#6`, `settlement of op#1`. */
export function describeMessage(message: unknown): string;

export function parseKitLine(line: string, protocol?: 1 | 2): { type: string; [key: string]: unknown };

/** A synchronous line reader (fs.readSync); what the SDK reads stdin with. */
export class LineReader {
    constructor(fd?: number, limit?: number);
    next(): { line: string } | { oversize: number } | { invalidUtf8: true } | null;
}

export const PROTOCOL_VERSION: 2;
export const PROTOCOL_VERSIONS: readonly (1 | 2)[];
export const LINE_BYTES_MAX: number;
