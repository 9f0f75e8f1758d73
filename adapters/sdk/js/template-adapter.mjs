#!/usr/bin/env node
// A template for an agentsim adapter built on agentsim-adapter.mjs: copy this file, replace the
// toy runtime with yours, keep the mapping's shape.
//
// The toy runtime is an in-memory agent that does the least a runtime can: `prompt` sends one
// model request, then appends the user message and the assistant message to the session, one
// append at a time and in that order, moving the leaf after each accepted append, and resolves
// after both. Prompts queue: each run starts after the previous prompt has settled (see
// `#enqueue`). `flush` waits for the prompts before it; `dispose` waits for them too and then
// closes the runtime. It runs no tools, no hooks and no observers, and has no steer, follow-up,
// abort, output modes or library adapter: those are declared unsupported in `hello`. So the kit
// will report rule failures for this adapter (that is allowed); it never breaks the protocol.
//
//   agentsim run --impl "node adapters/sdk/js/template-adapter.mjs" scenarios/wiring

import { causeError, runAdapter } from "agentsim/adapter";

// ---------------------------------------------------------------------------------------------
// The toy runtime: what you replace with your own.
// ---------------------------------------------------------------------------------------------

class ToyRuntime {
    /**
     * @param {object} options
     * @param {Map<string, object>} options.entries  the restored session, by entry id
     * @param {string|null} options.leaf             the active leaf
     * @param {object} options.deps                  what the runtime calls out to (below)
     */
    constructor({ entries, leaf, deps }) {
        this.entries = entries;
        this.leaf = leaf;
        this.deps = deps;
        this.queue = Promise.resolve();
        this.disposed = false;
        /** Appends the store accepted since the restore. */
        this.persisted = 0;
    }

    /** The messages on the path from the root to the leaf. */
    transcript() {
        const path = [];
        const seen = new Set();
        for (let id = this.leaf; id !== null && id !== undefined; id = this.entries.get(id)?.parentId ?? null) {
            if (seen.has(id)) break;
            seen.add(id);
            const entry = this.entries.get(id);
            if (!entry) break;
            if (entry.type === "message") path.push(entry.message);
        }
        return path.reverse();
    }

    /**
     * Runs `work` after everything queued before it, and starts the next queued work only once
     * this one has *settled for its caller*: a prompt settles before the next queued run starts.
     * The caller (here the adapter, which writes `settled`) sees `result` a few microtasks after
     * it resolves, while `.then(next)` alone would start the next run one microtask after it, so
     * that run's model request would reach the kit before this prompt's settlement. All
     * microtasks run before the next macrotask: waiting for one (`setImmediate`) lets every
     * caller of `result` finish first.
     */
    #enqueue(work) {
        const result = this.queue.then(work);
        this.queue = result.catch(() => {}).then(() => new Promise((resolve) => setImmediate(resolve)));
        return result;
    }

    #checkOpen() {
        if (this.disposed) throw Object.assign(new Error("the runtime is disposed"), { code: "runtime.disposed" });
    }

    prompt(text) {
        this.#checkOpen();
        return this.#enqueue(async () => {
            this.#checkOpen();
            const { deps } = this;
            const user = { role: "user", content: text, timestamp: deps.now() };
            const signal = new AbortController().signal;
            const assistant = await deps.model({ systemPrompt: deps.systemPrompt, messages: [...this.transcript(), user], tools: deps.tools }, signal);
            for (const message of [user, assistant]) {
                const entry = { type: "message", id: deps.createId(), parentId: this.leaf, timestamp: new Date(deps.now()).toISOString(), message };
                await deps.append(entry); // throws the store's error
                this.entries.set(entry.id, entry);
                this.persisted += 1;
                this.leaf = entry.id;
            }
            const reason = { length: "length", error: "error", aborted: "aborted" }[assistant.stopReason] ?? "stop";
            return { reason, steps: 1, messages: this.transcript() };
        });
    }

    flush() {
        return this.#enqueue(() => {});
    }

    dispose() {
        return this.#enqueue(() => {
            this.disposed = true;
        });
    }
}

/** Restores the session the kit gives: entries by id, the leaf checked. */
function restore(session, leaf) {
    const entries = new Map();
    for (const entry of session) {
        if (entries.has(entry.id)) return { error: { code: "path.duplicate_id", message: `entry ${entry.id} appears twice` } };
        entries.set(entry.id, entry);
    }
    if (leaf === null) {
        if (entries.size > 0) return { error: { code: "restore.leaf_required", message: "a non-empty session needs an explicit leaf" } };
        return { entries, leaf };
    }
    if (!entries.has(leaf)) {
        const code = entries.size === 0 ? "restore.unknown_leaf" : "path.unknown_leaf";
        return { error: { code, message: `the leaf ${leaf} is not in the session` } };
    }
    const seen = new Set();
    for (let id = leaf; id !== null; ) {
        if (seen.has(id)) return { error: { code: "path.cycle", message: `the parent chain of ${leaf} loops at ${id}` } };
        seen.add(id);
        const entry = entries.get(id);
        if (!entry) return { error: { code: "path.missing_parent", message: `entry ${id} is missing on the path to ${leaf}` } };
        id = entry.parentId ?? null;
    }
    return { entries, leaf };
}

// ---------------------------------------------------------------------------------------------
// The mapping: kit messages onto the runtime. This is what an adapter consists of.
// ---------------------------------------------------------------------------------------------

let runtime = null;

// The state probe (protocol 2): with AGENTSIM_TEMPLATE_PROBES=1 the adapter declares
// `probes: ["state"]` and every `idle` carries the runtime's own leaf and persisted count, read
// from the runtime (an adapter maps, it never computes them). PERSIST-10 judges them.
const probes = process.env.AGENTSIM_TEMPLATE_PROBES === "1";

await runAdapter({
    name: "template-adapter",
    hello: {
        implementation: { name: "agentsim-template", version: "0.1.0" },
        features: ["prompt", "flush", "dispose", "chunks"],
        unsupported: {
            steer: "the toy runtime has no steering queue",
            followUp: "the toy runtime has no follow-up queue",
            abort: "the toy runtime cannot abort a run",
            mode: "the toy runtime has no output modes",
            library: "the toy runtime has no library adapter",
            observers: "the toy runtime has no extension events",
        },
        ...(probes ? { probes: ["state"] } : {}),
    },

    state() {
        return { leaf: runtime.leaf, persisted: runtime.persisted };
    },

    start(scenario, ctx) {
        const restored = restore(scenario.session, scenario.config.activeLeafId);
        if (restored.error) return { restoreFailed: restored.error };
        runtime = new ToyRuntime({
            entries: restored.entries,
            leaf: restored.leaf,
            deps: {
                systemPrompt: scenario.config.systemPrompt,
                tools: scenario.tools.map(({ name, description, parameters }) => ({
                    name,
                    description: description ?? "",
                    parameters: parameters ?? { type: "object" },
                })),
                createId: () => ctx.ids.next(),
                now: () => ctx.clock.now(),
                // The model is the kit: one model_request, answered (after any chunks) by a final
                // assistant message.
                model: async (request, signal) => {
                    const completion = await ctx.effect("model_request", { signal: ctx.signalId(signal), request });
                    return { role: "assistant", ...completion.message };
                },
                // The store is the kit: one append, answered ok or failed.
                append: async (entry) => {
                    const completion = await ctx.effect("append", { entry });
                    if (completion.outcome.kind === "failed") throw causeError(completion.outcome.cause);
                },
            },
        });
        return { leaf: runtime.leaf, messages: runtime.transcript().length };
    },

    // Returning a promise lets the SDK settle the operation: its value resolves it (undefined is
    // {kind: "unit"}), its error rejects it with {code: error.code ?? error.name, message}.
    async operation(op, operation) {
        switch (operation.op) {
            case "prompt":
                return { kind: "run", ...(await runtime.prompt(operation.text)) };
            case "flush":
                return runtime.flush();
            case "dispose":
                return runtime.dispose();
            default:
                // Not reached: the kit sends no operation that hello declares unsupported.
                throw Object.assign(new Error(`${operation.op} is not supported`), { code: "adapter.unsupported" });
        }
    },

    reset() {
        runtime = null;
    },
});
