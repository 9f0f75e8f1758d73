// Pending work that the adapter SDK cannot see under Bun.
//
// The SDK decides that the runtime is quiescent (and writes `idle`) when rounds of setImmediate
// find nothing pending; in Node it also reads process.getActiveResourcesInfo(), which lists
// file-system requests in flight. Bun's getActiveResourcesInfo() always returns [] (measured with
// Bun 1.4.5), so an `await` on asynchronous I/O (oh-my-pi reads prompt files, stats paths,
// probes the GPU, writes logs) would look like quiescence and the kit would see `idle` before
// the runtime's next effect. The SDK's documented answer is ctx.hold(promise): this module wraps
// Bun's and node:fs's asynchronous I/O entry points, before oh-my-pi is loaded, so that every
// call made while a run is live is held until it settles. It changes no result and no order:
// each wrapper calls the original and returns its promise (or calls back) unchanged.
//
// Timers are the SDK's business (it wraps setTimeout/setInterval); Bun.sleep is a timer too, so a
// sleep within the SDK's horizon is held like a near setTimeout and a longer one is background.

import fs from "node:fs";
import fsPromises from "node:fs/promises";
import module from "node:module";
import timersPromises from "node:timers/promises";

import { currentRun } from "../sdk/js/agentsim-adapter.mjs";

/** The SDK's default timer horizon: a timer due sooner is pending work, a later one background. */
const SLEEP_HORIZON_MS = 1000;

function hold(promise) {
    const run = currentRun();
    if (run?.live) run.hold(Promise.resolve(promise).catch(() => {}));
    return promise;
}

/** A promise timer: pending work when due within the horizon, background otherwise (as the SDK treats setTimeout). */
function heldTimer(promise, delay) {
    return Number(delay ?? 0) <= SLEEP_HORIZON_MS ? hold(promise) : promise;
}

function wrapPromiseFunctions(target, names) {
    for (const name of names) {
        const original = target[name];
        if (typeof original !== "function") continue;
        target[name] = function heldAsync(...args) {
            return hold(original.apply(this, args));
        };
    }
}

/** node:fs callback functions: held from the call until the callback runs. */
function wrapCallbackFunctions(target, names) {
    for (const name of names) {
        const original = target[name];
        if (typeof original !== "function") continue;
        const wrapped = function heldCallback(...args) {
            const callbackAt = args.findLastIndex((arg) => typeof arg === "function");
            if (callbackAt < 0) return original.apply(this, args);
            let release;
            hold(new Promise((resolve) => (release = resolve)));
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

/** Installs the wrappers. Call before the runtime is imported (it binds node:fs exports at import). */
export function holdBunPendingWork() {
    const promiseNames = Object.keys(fsPromises).filter((name) => typeof fsPromises[name] === "function" && name !== "constants");
    wrapPromiseFunctions(fsPromises, promiseNames);
    if (fs.promises !== fsPromises) wrapPromiseFunctions(fs.promises, promiseNames);
    wrapCallbackFunctions(fs, [
        "access", "appendFile", "chmod", "close", "copyFile", "exists", "fstat", "fsync", "lstat", "mkdir", "mkdtemp",
        "open", "read", "readdir", "readFile", "readlink", "realpath", "rename", "rm", "rmdir", "stat", "symlink",
        "truncate", "unlink", "utimes", "write", "writeFile",
    ]);
    // node:timers/promises: a promise timer within the horizon is pending work (oh-my-pi's agent
    // loop sleeps 20 ms through scheduler.wait at the top of every turn, pi-agent-core yieldIfDue).
    const realWait = timersPromises.scheduler.wait.bind(timersPromises.scheduler);
    timersPromises.scheduler.wait = (delay, options) => heldTimer(realWait(delay, options), delay);
    const realPromiseTimeout = timersPromises.setTimeout;
    timersPromises.setTimeout = (delay, ...rest) => heldTimer(realPromiseTimeout(delay, ...rest), delay);
    module.syncBuiltinESMExports();

    if (typeof Bun === "undefined") return;
    // Bun.file() returns a Blob (BunFile) whose reading and writing methods are asynchronous.
    const blobPrototype = Object.getPrototypeOf(Bun.file("/"));
    wrapPromiseFunctions(blobPrototype, ["text", "json", "arrayBuffer", "bytes", "exists", "stat", "formData", "delete", "unlink", "write"]);
    const realWrite = Bun.write.bind(Bun);
    Bun.write = (...args) => hold(realWrite(...args));
    const realSleep = Bun.sleep.bind(Bun);
    Bun.sleep = (ms) => heldTimer(realSleep(ms), ms instanceof Date ? ms.getTime() - Date.now() : ms);
    const realSpawn = Bun.spawn.bind(Bun);
    Bun.spawn = (...args) => {
        const child = realSpawn(...args);
        hold(child.exited);
        return child;
    };
    const realFetch = globalThis.fetch;
    globalThis.fetch = (...args) => hold(realFetch(...args));
}
