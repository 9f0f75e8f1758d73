// Synchronous effects (ctx.effectSync): the runtime blocks until the kit answers, the SDK keeps
// the turn-taking exact around it (one idle per kit line) and survives a reset meanwhile.
import assert from "node:assert/strict";
import path from "node:path";
import { after, describe, test } from "node:test";

import { ASSISTANT, AdapterProcess, FIXTURES, IDLE, appendOk, complete, final, prompt, start } from "./helpers.mjs";

const SYNC = path.join(FIXTURES, "sync-adapter.mjs");
const processes = [];
function adapter(options) {
    const process = new AdapterProcess(SYNC, options);
    processes.push(process);
    return process;
}
after(() => processes.forEach((process) => process.kill()));

const APPEND_1 =
    '{"type":"effect","effect":{"kind":"append","id":2,"entry":{"type":"message","id":"entry-1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":0}}}}';
const APPEND_2 =
    `{"type":"effect","effect":{"kind":"append","id":3,"entry":{"type":"message","id":"entry-2","parentId":"entry-1","timestamp":"2026-01-01T00:00:01.000Z","message":${ASSISTANT("done")}}}}`;
const SETTLED_1 = '{"type":"settled","op":1,"settlement":{"status":"resolved","value":{"kind":"run","reason":"stop","steps":1,"messages":[]}}}';

async function started() {
    const kit = adapter();
    await kit.hello();
    await kit.send(start());
    return kit;
}

describe("effectSync", () => {
    test("each synchronous effect is followed by idle; the answer continues the blocked turn", async () => {
        const kit = await started();
        assert.match((await kit.send(prompt(1, "hi")))[0], /"kind":"model_request","id":1,/);
        assert.deepEqual(await kit.send(final(1)), [APPEND_1, IDLE]);
        assert.deepEqual(await kit.send(appendOk(2)), [APPEND_2, IDLE]);
        assert.deepEqual(await kit.send(appendOk(3)), [SETTLED_1, IDLE]);
    });

    test("lines that arrive while blocked are acknowledged with idle and applied after the answer, in order", async () => {
        const kit = await started();
        await kit.send(prompt(1, "hi"));
        await kit.send(final(1));
        assert.deepEqual(await kit.send({ type: "operation", op: 2, operation: { op: "steer", text: "x" } }), [IDLE]);
        assert.deepEqual(await kit.send(appendOk(2)), [APPEND_2, IDLE]);
        assert.deepEqual(await kit.send(appendOk(3)), [
            SETTLED_1,
            '{"type":"settled","op":2,"settlement":{"status":"resolved","value":{"kind":"unit"}}}',
            IDLE,
        ]);
    });

    test("a wrong completion or an unknown id while blocked is an error; the wait goes on", async () => {
        const kit = await started();
        await kit.send(prompt(1, "hi"));
        await kit.send(final(1));
        assert.deepEqual(await kit.send(complete(2, { kind: "write", outcome: { kind: "ok" } })), [
            '{"type":"error","code":"input.wrong_completion","message":"fx#2 (a pending append effect) cannot take a completion of kind write"}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send(appendOk(7)), ['{"type":"error","code":"input.unknown_effect","message":"fx#7 is not a pending effect"}', IDLE]);
        // The parser's own words differ between JavaScript engines: the rest is the SDK's.
        const answer = await kit.send("{garbage");
        assert.equal(answer.length, 2, `one error line, then idle: ${JSON.stringify(answer)}`);
        assert.equal(answer[1], IDLE);
        const error = JSON.parse(answer[0]);
        assert.deepEqual(Object.keys(error), ["type", "code", "message"]);
        assert.deepEqual([error.type, error.code], ["error", "input.garbage"]);
        assert.match(error.message, /^not JSON \(.+\): \{garbage$/);
        assert.deepEqual(await kit.send(appendOk(2)), [APPEND_2, IDLE]);
    });

    test("a failed synchronous append throws into the runtime", async () => {
        const kit = await started();
        await kit.send(prompt(1, "hi"));
        await kit.send(final(1));
        assert.deepEqual(await kit.send(complete(2, { kind: "append", outcome: { kind: "failed", cause: { code: "diskError", message: "disk full" } } })), [
            '{"type":"settled","op":1,"settlement":{"status":"rejected","cause":{"code":"diskError","message":"disk full"}}}',
            IDLE,
        ]);
    });

    test("a write effect from a synchronous output sink", async () => {
        const kit = await started();
        assert.deepEqual(await kit.send({ type: "operation", op: 1, operation: { op: "mode", mode: "print", text: "out" } }), [
            '{"type":"effect","effect":{"kind":"write","id":1,"text":"out"}}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send(complete(1, { kind: "write", outcome: { kind: "ok" } })), [
            '{"type":"settled","op":1,"settlement":{"status":"resolved","value":{"kind":"unit"}}}',
            IDLE,
        ]);
    });
});

describe("the kit ends the run while the runtime is blocked", () => {
    test("reset: the run is discarded (RunDiscarded unwinds the runtime), one idle, the next run is a fresh one", async () => {
        const kit = await started();
        const first = [...(await kit.send(prompt(1, "hi"))), ...(await kit.send(final(1)))];
        assert.deepEqual(await kit.send({ type: "reset" }, { quietMs: 150 }), [IDLE]);
        assert.match(kit.stderr, /fixture: RunDiscarded reached the runtime/);
        // The discarded run's pending effect is gone.
        assert.deepEqual(await kit.send(appendOk(2)), ['{"type":"error","code":"input.unknown_effect","message":"fx#2 is not a pending effect"}', IDLE]);
        await kit.send(start());
        const second = [...(await kit.send(prompt(1, "hi"))), ...(await kit.send(final(1)))];
        assert.deepEqual(second, first);
        assert.deepEqual(await kit.send(appendOk(2)), [APPEND_2, IDLE]);
    });

    test("reset discards the lines deferred during the wait", async () => {
        const kit = await started();
        await kit.send(prompt(1, "hi"));
        await kit.send(final(1));
        assert.deepEqual(await kit.send({ type: "operation", op: 2, operation: { op: "steer", text: "x" } }), [IDLE]);
        assert.deepEqual(await kit.send({ type: "reset" }), [IDLE]);
    });

    test("start: reset, then start, one answer", async () => {
        const kit = await started();
        await kit.send(prompt(1, "hi"));
        await kit.send(final(1));
        assert.deepEqual(await kit.send(start()), ['{"type":"started","leaf":null,"messages":0}', IDLE]);
        assert.match((await kit.send(prompt(1, "hi")))[0], /"kind":"model_request","id":1,/);
    });

    test("shutdown exits 0", async () => {
        const kit = await started();
        await kit.send(prompt(1, "hi"));
        await kit.send(final(1));
        kit.write({ type: "shutdown" });
        assert.deepEqual(await kit.exit, { code: 0, signal: null });
    });

    test("end of input exits 0", async () => {
        const kit = await started();
        await kit.send(prompt(1, "hi"));
        await kit.send(final(1));
        assert.deepEqual(await kit.close(), { code: 0, signal: null });
    });
});

describe("observers (protocol 2)", () => {
    test("notify effects are answered with notify completions", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start({ observers: [{ name: "audit", events: ["agent_end"] }, { name: "metrics", events: ["agent_end"] }] }));
        assert.deepEqual(await kit.send(prompt(1, "hi")), [
            '{"type":"effect","effect":{"kind":"notify","id":1,"observer":"audit","event":{"type":"agent_end","messages":[]}}}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send(complete(1, { kind: "append", outcome: { kind: "ok" } })), [
            '{"type":"error","code":"input.wrong_completion","message":"fx#1 (a pending notify effect) cannot take a completion of kind append"}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send(complete(1, { kind: "notify", outcome: { kind: "threw", message: "observer failed" } })), [
            '{"type":"effect","effect":{"kind":"notify","id":2,"observer":"metrics","event":{"type":"agent_end","messages":[]}}}',
            IDLE,
        ]);
        assert.match(kit.stderr, /fixture: observer audit threw observer failed/);
        assert.match((await kit.send(complete(2, { kind: "notify", outcome: { kind: "ok" } })))[0], /"kind":"model_request","id":3,/);
    });

    test("protocol 1 has no notify effect: the SDK refuses to write one", async () => {
        const kit = adapter({ env: { AGENTSIM_PROTOCOL: "1" } });
        await kit.hello();
        await kit.send(start());
        assert.deepEqual(await kit.send({ type: "operation", op: 1, operation: { op: "followUp", text: "x" } }), [
            '{"type":"settled","op":1,"settlement":{"status":"rejected","cause":{"code":"TypeError","message":"the `notify` effect needs protocol 2 (this adapter speaks 1)"}}}',
            IDLE,
        ]);
        // Nothing was written for it: the next effect gets id 1.
        assert.match((await kit.send(prompt(2, "hi")))[0], /"kind":"model_request","id":1,/);
    });
});

