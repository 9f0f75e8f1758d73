// The SDK's wire behaviour, through the template adapter: exact lines in, exact lines out.
import assert from "node:assert/strict";
import path from "node:path";
import { after, describe, test } from "node:test";

import { ASSISTANT, AdapterProcess, FIXTURES, IDLE, TEMPLATE, appendOk, complete, final, prompt, start } from "./helpers.mjs";

const HELLO =
    '{"type":"hello","protocol":2,"implementation":{"name":"agentsim-template","version":"0.1.0"},' +
    '"features":["prompt","flush","dispose","chunks"],"unsupported":{"steer":"the toy runtime has no steering queue",' +
    '"followUp":"the toy runtime has no follow-up queue","abort":"the toy runtime cannot abort a run",' +
    '"mode":"the toy runtime has no output modes","library":"the toy runtime has no library adapter",' +
    '"observers":"the toy runtime has no extension events"}}';

const STARTED_EMPTY = ['{"type":"started","leaf":null,"messages":0}', IDLE];

const processes = [];
function adapter({ script = TEMPLATE, ...options } = {}) {
    const process = new AdapterProcess(script, options);
    processes.push(process);
    return process;
}
after(() => processes.forEach((process) => process.kill()));

/** One prompt answered all the way: returns every line written, in order. */
async function promptRun(kit) {
    const lines = [];
    lines.push(...(await kit.send(prompt(1, "检查 parser"))));
    lines.push(...(await kit.send(final(1, "好的"))));
    lines.push(...(await kit.send(appendOk(2))));
    lines.push(...(await kit.send(appendOk(3))));
    return lines;
}

describe("hello and start", () => {
    test("hello is the first line, exactly", async () => {
        const kit = adapter();
        assert.equal(await kit.hello(), HELLO);
        await kit.quiet(100);
    });

    test("start is answered by started, then idle, then silence", async () => {
        const kit = adapter();
        await kit.hello();
        assert.deepEqual(await kit.send(start(), { quietMs: 150 }), STARTED_EMPTY);
    });

    test("a leaf that is not in the session is a restore failure", async () => {
        const kit = adapter();
        await kit.hello();
        assert.deepEqual(await kit.send(start({ config: { activeLeafId: "nowhere" } })), [
            '{"type":"restore_failed","cause":{"code":"restore.unknown_leaf","message":"the leaf nowhere is not in the session"}}',
            IDLE,
        ]);
    });
});

describe("a run", () => {
    test("prompt: one model request, two appends one at a time, then the settlement", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        assert.deepEqual(await kit.send(prompt(1, "hi")), [
            '{"type":"effect","effect":{"kind":"model_request","id":1,"signal":1,"request":{"systemPrompt":"BASE SYSTEM","messages":[{"role":"user","content":"hi","timestamp":1767225600000}],"tools":[]}}}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send(complete(1, { kind: "model_chunk", text: "he" })), [IDLE]);
        assert.deepEqual(await kit.send(final(1, "hello")), [
            '{"type":"effect","effect":{"kind":"append","id":2,"entry":{"type":"message","id":"entry-1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1767225600000}}}}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send(appendOk(2)), [
            `{"type":"effect","effect":{"kind":"append","id":3,"entry":{"type":"message","id":"entry-2","parentId":"entry-1","timestamp":"2026-01-01T00:00:02.000Z","message":${ASSISTANT("hello")}}}}`,
            IDLE,
        ]);
        assert.deepEqual(await kit.send(appendOk(3)), [
            `{"type":"settled","op":1,"settlement":{"status":"resolved","value":{"kind":"run","reason":"stop","steps":1,"messages":[{"role":"user","content":"hi","timestamp":1767225600000},${ASSISTANT("hello")}]}}}`,
            IDLE,
        ]);
    });

    test("a failed append rejects the prompt with the store's cause", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        await kit.send(prompt(1, "hi"));
        await kit.send(final(1));
        assert.deepEqual(await kit.send(complete(2, { kind: "append", outcome: { kind: "failed", cause: { code: "diskError", message: "disk full" } } })), [
            '{"type":"settled","op":1,"settlement":{"status":"rejected","cause":{"code":"diskError","message":"disk full"}}}',
            IDLE,
        ]);
    });

    test("a queued prompt's run starts only after the prompt before it has settled", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        assert.match((await kit.send(prompt(1, "one")))[0], /"kind":"model_request","id":1,/);
        assert.deepEqual(await kit.send(prompt(2, "two")), [IDLE]);
        await kit.send(final(1, "first"));
        await kit.send(appendOk(2));
        const [settled, request, idle] = await kit.send(appendOk(3));
        assert.match(settled, /^\{"type":"settled","op":1,/);
        assert.match(request, /"kind":"model_request","id":4,/);
        assert.equal(idle, IDLE);
    });

    test("flush and dispose resolve with unit after the prompts before them", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        await kit.send(prompt(1, "hi"));
        assert.deepEqual(await kit.send({ type: "operation", op: 2, operation: { op: "flush" } }), [IDLE]);
        await kit.send(final(1));
        await kit.send(appendOk(2));
        const last = await kit.send(appendOk(3));
        assert.equal(last.length, 3);
        assert.match(last[0], /^\{"type":"settled","op":1,/);
        assert.equal(last[1], '{"type":"settled","op":2,"settlement":{"status":"resolved","value":{"kind":"unit"}}}');
        assert.deepEqual(await kit.send({ type: "operation", op: 3, operation: { op: "dispose" } }), [
            '{"type":"settled","op":3,"settlement":{"status":"resolved","value":{"kind":"unit"}}}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send(prompt(4, "again")), [
            '{"type":"settled","op":4,"settlement":{"status":"rejected","cause":{"code":"runtime.disposed","message":"the runtime is disposed"}}}',
            IDLE,
        ]);
    });
});

describe("many runs in one process (protocol 2)", () => {
    test("reset is answered by one idle; the next run writes the same bytes (effect ids, ids and clock restart)", async () => {
        const kit = adapter();
        await kit.hello();
        assert.deepEqual(await kit.send(start()), STARTED_EMPTY);
        const first = await promptRun(kit);
        assert.deepEqual(await kit.send({ type: "reset" }, { quietMs: 150 }), [IDLE]);
        assert.deepEqual(await kit.send(start()), STARTED_EMPTY);
        const second = await promptRun(kit);
        assert.deepEqual(second, first);
        assert.match(second[0], /"kind":"model_request","id":1,"signal":1,/);
    });

    test("reset in the middle of a run discards its pending effects", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        await kit.send(prompt(1, "hi"));
        await kit.send(final(1));
        assert.deepEqual(await kit.send({ type: "reset" }), [IDLE]);
        // fx#2 belonged to the discarded run.
        assert.deepEqual(await kit.send(appendOk(2)), [
            '{"type":"error","code":"input.unknown_effect","message":"fx#2 is not a pending effect"}',
            IDLE,
        ]);
        await kit.send(start());
        const run = await promptRun(kit);
        assert.match(run[0], /"id":1,/);
    });

    test("start without reset acts as reset, then start", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        const first = await promptRun(kit);
        await kit.send(prompt(2, "pending"));
        assert.deepEqual(await kit.send(start()), STARTED_EMPTY);
        assert.deepEqual(await promptRun(kit), first);
    });

    test("reset with no run is answered by idle", async () => {
        const kit = adapter();
        await kit.hello();
        assert.deepEqual(await kit.send({ type: "reset" }), [IDLE]);
        assert.deepEqual(await kit.send({ type: "reset" }), [IDLE]);
    });
});

describe("errors: a line the adapter cannot apply is answered with `error`, then idle, never a crash", () => {
    const cases = [
        ["an unknown type", { type: "bogus" }, "input.unknown_type", 'unknown message type "bogus" (protocol 2)'],
        ["an unknown top-level field", { type: "shutdown", now: true }, "input.malformed", "bad `shutdown` message: shutdown: unknown field `now`"],
        [
            "an unknown nested field",
            { type: "start", scenario: { ...start().scenario, extra: 1 } },
            "input.malformed",
            "bad `start` message: start.scenario: unknown field `extra`",
        ],
        [
            "a missing field",
            { type: "operation", op: 1 },
            "input.malformed",
            "bad `operation` message: operation: missing field `operation`",
        ],
        [
            "a mistyped field",
            { type: "operation", op: "1", operation: { op: "flush" } },
            "input.malformed",
            'bad `operation` message: operation.op: expected a non-negative integer, got "1"',
        ],
        [
            "an unknown operation",
            { type: "operation", op: 1, operation: { op: "sing" } },
            "input.malformed",
            'bad `operation` message: operation.operation.op: unknown variant "sing" (expected one of prompt, flush, dispose, steer, followUp, abort, mode, library)',
        ],
        [
            "a completion with an unknown field",
            complete(1, { kind: "append", outcome: { kind: "ok", late: true } }),
            "input.malformed",
            "bad `complete` message: complete.completion.outcome: unknown field `late`",
        ],
        ["a type that is not a string", { type: 7 }, "input.malformed", 'a kit message needs a string `type`, got a number: {"type":7}'],
        ["a line that is not JSON", "{not json", "input.garbage", null],
        ["a JSON array", "[1,2]", "input.garbage", "not a JSON object but an array: [1,2]"],
    ];
    for (const [what, line, code, message] of cases) {
        test(what, async () => {
            const kit = adapter();
            await kit.hello();
            await kit.send(start());
            const answer = await kit.send(line);
            assert.equal(answer.length, 2, answer.join("\n"));
            const error = JSON.parse(answer[0]);
            assert.equal(error.type, "error");
            assert.equal(error.code, code);
            if (message !== null) assert.equal(error.message, message);
            assert.equal(answer[1], IDLE);
            // The adapter goes on.
            assert.match((await kit.send(prompt(1, "hi")))[0], /"kind":"model_request","id":1,/);
        });
    }

    test("a complete for an unknown effect id", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        assert.deepEqual(await kit.send(appendOk(9)), ['{"type":"error","code":"input.unknown_effect","message":"fx#9 is not a pending effect"}', IDLE]);
    });

    test("a completion of the wrong kind leaves the effect pending", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        await kit.send(prompt(1, "hi"));
        assert.deepEqual(await kit.send(appendOk(1)), [
            '{"type":"error","code":"input.wrong_completion","message":"fx#1 (a pending model_request effect) cannot take a completion of kind append"}',
            IDLE,
        ]);
        assert.match((await kit.send(final(1)))[0], /"kind":"append","id":2,/);
    });

    test("an operation hello declared unsupported", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        assert.deepEqual(await kit.send({ type: "operation", op: 1, operation: { op: "steer", text: "x" } }), [
            '{"type":"error","code":"input.unsupported","message":"`steer` was declared unsupported: the toy runtime has no steering queue"}',
            IDLE,
        ]);
    });

    test("an operation before start", async () => {
        const kit = adapter();
        await kit.hello();
        assert.deepEqual(await kit.send(prompt(1, "hi")), ['{"type":"error","code":"input.out_of_turn","message":"operation 1 before `start`"}', IDLE]);
    });

    test("an operation number delivered twice", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        await kit.send(prompt(1, "hi"));
        assert.deepEqual(await kit.send(prompt(1, "again")), [
            '{"type":"error","code":"input.malformed","message":"operation number 1 is 0 or was already delivered in this run"}',
            IDLE,
        ]);
    });

    test("a line over 4 MiB is skipped up to its newline and reported", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        const huge = JSON.stringify(prompt(1, "x".repeat(4 * 1024 * 1024)));
        const answer = await kit.send(huge);
        assert.deepEqual(answer, [
            `{"type":"error","code":"input.oversize","message":"an input line of ${Buffer.byteLength(huge)} bytes exceeds 4194304"}`,
            IDLE,
        ]);
        assert.match((await kit.send(prompt(1, "hi")))[0], /"kind":"model_request","id":1,/);
    });

    test("a line of exactly 4 MiB is accepted", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        const base = JSON.stringify(prompt(1, ""));
        const line = JSON.stringify(prompt(1, "y".repeat(4 * 1024 * 1024 - Buffer.byteLength(base))));
        assert.equal(Buffer.byteLength(line), 4 * 1024 * 1024);
        kit.write(line);
        // The model request carries the text back: more than 4 MiB on one line. The SDK refuses to
        // write it, says why with `error`, and exits 1.
        const error = JSON.parse(await kit.nextLine());
        assert.equal(error.type, "error");
        assert.equal(error.code, "adapter.oversize");
        assert.equal(error.message, "a `effect` line would exceed 4194304 bytes; it was not written");
        assert.equal((await kit.exit).code, 1);
        assert.deepEqual(kit.lines, []);
        assert.match(kit.stderr, /adapter\.oversize/);
    });
});

describe("the end", () => {
    test("end of input exits 0, even with effects pending", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        await kit.send(prompt(1, "hi"));
        assert.deepEqual(await kit.close(), { code: 0, signal: null });
    });

    test("shutdown exits 0 and writes nothing", async () => {
        const kit = adapter();
        await kit.hello();
        await kit.send(start());
        kit.write({ type: "shutdown" });
        assert.deepEqual(await kit.exit, { code: 0, signal: null });
        assert.deepEqual(kit.lines, []);
    });

    test("end of input before start exits 0", async () => {
        const kit = adapter();
        await kit.hello();
        assert.deepEqual(await kit.close(), { code: 0, signal: null });
    });
});

describe("protocol 1", () => {
    test("AGENTSIM_PROTOCOL=1: hello says 1, reset and observers are unknown", async () => {
        const kit = adapter({ env: { AGENTSIM_PROTOCOL: "1" } });
        assert.match(await kit.hello(), /^\{"type":"hello","protocol":1,/);
        assert.deepEqual(await kit.send({ type: "reset" }), ['{"type":"error","code":"input.unknown_type","message":"unknown message type \\"reset\\" (protocol 1)"}', IDLE]);
        const answer = await kit.send(start({ observers: [{ name: "audit", events: ["agent_end"] }] }));
        assert.equal(JSON.parse(answer[0]).code, "input.malformed");
        assert.deepEqual(await kit.send(start()), STARTED_EMPTY);
    });
});

describe("a broken run (RunBroken): `error` marked recoverable, then idle; the process serves the next run", () => {
    const BREAKING = path.join(FIXTURES, "breaking-adapter.mjs");

    test("broken at start: nothing but the error, then idle; after reset the next run starts as in a fresh process", async () => {
        const kit = adapter({ script: BREAKING });
        await kit.hello();
        assert.deepEqual(await kit.send(start({ config: { activeLeafId: "hang" } }), { quietMs: 150 }), [
            '{"type":"error","code":"fixture.hang","message":"the walk did not return","recoverable":true}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send({ type: "reset" }), [IDLE]);
        assert.deepEqual(await kit.send(start()), STARTED_EMPTY);
        assert.match(kit.stderr, /broken run: fixture\.hang: the walk did not return/);
    });

    test("broken by an operation, thrown or rejected: what the run does afterwards never reaches the kit", async () => {
        const kit = adapter({ script: BREAKING });
        await kit.hello();
        await kit.send(start());
        assert.deepEqual(await kit.send(prompt(1, "break")), [
            '{"type":"error","code":"fixture.break","message":"op#1 cannot go on","recoverable":true}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send({ type: "reset" }), [IDLE]);
        await kit.send(start());
        const request = await kit.send(prompt(1, "break-later"));
        assert.match(request[0], /"kind":"model_request","id":1,/);
        assert.deepEqual(await kit.send(final(1), { quietMs: 150 }), [
            '{"type":"error","code":"fixture.break","message":"op#1 cannot go on after its request","recoverable":true}',
            IDLE,
        ]);
        assert.deepEqual(await kit.send({ type: "reset" }), [IDLE]);
        await kit.send(start());
        const again = await kit.send(prompt(1, "fine"));
        assert.match(again[0], /"kind":"model_request","id":1,/);
    });

    test("under protocol 1 (no reset) a broken run stops the adapter", async () => {
        const kit = adapter({ script: BREAKING, env: { AGENTSIM_PROTOCOL: "1" } });
        await kit.hello();
        kit.write(start({ config: { activeLeafId: "hang" } }));
        assert.equal(await kit.nextLine(), '{"type":"error","code":"fixture.hang","message":"the walk did not return"}');
        assert.equal((await kit.exit).code, 1);
    });
});
