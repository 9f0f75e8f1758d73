// Quiescence: whatever asynchronous work the runtime does before its next effect, the effect is
// written before `idle`, and nothing comes after it. Background timers do not hold `idle` back.
import assert from "node:assert/strict";
import path from "node:path";
import { after, describe, test } from "node:test";

import { ADAPTER_RUNTIME, AdapterProcess, FIXTURES, IDLE, prompt, start } from "./helpers.mjs";

const QUIET = path.join(FIXTURES, "quiet-adapter.mjs");
const processes = [];
after(() => processes.forEach((process) => process.kill()));

async function started(fixture = QUIET) {
    const kit = new AdapterProcess(fixture);
    processes.push(kit);
    await kit.hello();
    await kit.send(start());
    return kit;
}

const requestFor = (text) =>
    `{"type":"effect","effect":{"kind":"model_request","id":1,"signal":0,"request":{"systemPrompt":null,"messages":[{"role":"user","content":"${text}","timestamp":0}],"tools":[]}}}`;

// Under Node every kind of work below is seen; under another runtime (AGENTSIM_JS_RUNTIME, Bun)
// a promise timer imported by name from node:timers/promises is not (the SDK's README says why).
const WORK = ["timeout", "timers-promises", "immediates", "fs", "ticks", "hold"];
if (ADAPTER_RUNTIME === process.execPath) WORK.push("timers-promises-named");

describe("the effect after asynchronous work comes before idle", () => {
    for (const work of WORK) {
        test(work, async () => {
            const kit = await started();
            assert.deepEqual(await kit.send(prompt(1, work), { quietMs: 200 }), [requestFor(work), IDLE]);
        });
    }
});

describe("background timers do not hold idle back", () => {
    for (const work of ["far-timer", "interval"]) {
        test(work, async () => {
            const kit = await started();
            const began = Date.now();
            assert.deepEqual(await kit.send(prompt(1, work), { quietMs: 100 }), [requestFor(work), IDLE]);
            assert.ok(Date.now() - began < 1500, `idle took ${Date.now() - began} ms`);
        });
    }
});

describe("stdout is the protocol's", () => {
    test("console.log and process.stdout.write go to stderr", async () => {
        const kit = await started();
        assert.deepEqual(await kit.send(prompt(1, "console")), [requestFor("console"), IDLE]);
        assert.match(kit.stderr, /console\.log must not reach stdout\nneither must process\.stdout\.write\n/);
    });
});

describe("virtual time (quiescence.virtualTime): promise timers come due at once, in due order", () => {
    const VIRTUAL = path.join(FIXTURES, "virtual-time-adapter.mjs");
    const virtual = () => started(VIRTUAL);
    test("two seconds of sleeps pass on the runtime's clock, not on the wall", async () => {
        const kit = await virtual();
        const began = Date.now();
        assert.deepEqual(await kit.send(prompt(1, "sleeps")), [requestFor("slept at least 2000 ms"), IDLE]);
        assert.ok(Date.now() - began < 1500, `the sleeps took ${Date.now() - began} ms of real time`);
    });
    test("Bun.sleep too, under Bun", async () => {
        const kit = await virtual();
        const began = Date.now();
        const expected = ADAPTER_RUNTIME === process.execPath ? "no Bun" : "slept at least 2000 ms";
        assert.deepEqual(await kit.send(prompt(1, "bun-sleep")), [requestFor(expected), IDLE]);
        assert.ok(Date.now() - began < 1500, `the sleeps took ${Date.now() - began} ms of real time`);
    });
    test("the earliest due first, equals in creation order", async () => {
        const kit = await virtual();
        assert.deepEqual(await kit.send(prompt(1, "order")), [requestFor("early,late,late-second"), IDLE]);
    });
    test("an aborted wait rejects with an AbortError", async () => {
        const kit = await virtual();
        assert.deepEqual(await kit.send(prompt(1, "abort")), [requestFor("AbortError"), IDLE]);
    });
});
