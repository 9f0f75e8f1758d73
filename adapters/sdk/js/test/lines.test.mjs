// The SDK checks every line it writes against the kit's shapes: the shared fixtures of
// tests/fixtures/protocol/lines.json (which the kit's and the Python SDK's tests read too) give
// the same verdict, path and expectation here as in the kit; a mapping that asks for a bad line
// is stopped with `adapter.malformed`, naming the field, and the line is never written.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";

import { AdapterProcess, FIXTURES, REPO_ROOT, final, prompt, start } from "./helpers.mjs";

// Importing the SDK hands process.stdout to the protocol (its writes go to stderr, as text); the
// test runner reports on stdout (in binary), so it gets stdout back as it was.
const stdoutWrite = process.stdout.write;
const { checkAdapterMessage, describeMessage } = await import("../agentsim-adapter.mjs");
process.stdout.write = stdoutWrite;

const LINES = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "tests", "fixtures", "protocol", "lines.json"), "utf8"));

describe("the shared line fixtures", () => {
    test("every valid line fits", () => {
        assert.ok(LINES.valid.length >= 30);
        for (const { name, line } of LINES.valid) assert.equal(checkAdapterMessage(line), null, name);
    });

    test("every invalid line gives the kit's code, path and expectation", () => {
        const objects = LINES.invalid.filter((entry) => "line" in entry);
        assert.ok(objects.length >= 60);
        for (const { name, line, code, path: where, expected } of objects) {
            const problem = checkAdapterMessage(line);
            assert.notEqual(problem, null, name);
            assert.deepEqual({ code: problem.code, path: problem.path, expected: problem.expected }, { code, path: where, expected }, name);
        }
    });

    test("a line is described as the kit describes it", () => {
        assert.equal(describeMessage({ type: "effect", effect: { kind: "append", id: 6 } }), "effect append fx#6");
        assert.equal(describeMessage({ type: "settled", op: 1 }), "settlement of op#1");
        assert.equal(describeMessage({ type: "started" }), "`started`");
    });
});

const processes = [];
function adapter(options) {
    const process = new AdapterProcess(path.join(FIXTURES, "malformed-adapter.mjs"), options);
    processes.push(process);
    return process;
}
after(() => processes.forEach((process) => process.kill()));

/** Sends `prompt(1, text)` (and the model's answer, when it asks) and returns the `error` line. */
async function stopped(text, { answer = false } = {}) {
    const kit = adapter();
    await kit.hello();
    await kit.send(start());
    if (answer) {
        const asked = await kit.send(prompt(1, text));
        assert.match(asked[0], /"kind":"model_request"/);
        kit.write(final(1, "ok"));
    } else {
        kit.write(prompt(1, text));
    }
    // The adapter writes `error` and exits 1: no `idle`, and the bad line itself never came.
    const { code } = await kit.exit;
    assert.equal(code, 1);
    const written = [...kit.lines, kit.partial].filter((line) => line !== "");
    assert.equal(written.length, 1, JSON.stringify(written));
    return { error: JSON.parse(written[0]), stderr: kit.stderr };
}

describe("a mapping that asks for a bad line is stopped before it is written", () => {
    test("an assistant message without role, in an append", async () => {
        const { error, stderr } = await stopped("assistant without role", { answer: true });
        assert.equal(error.type, "error");
        assert.equal(error.code, "adapter.malformed");
        assert.equal(
            error.message,
            'bad effect append fx#2, not written: `effect.entry.message.role`: expected one of "user", "assistant", "toolResult", got nothing (the field is missing)',
        );
        // Where the mapping asked for it: the stack on stderr names the fixture.
        assert.match(stderr, /malformed-adapter\.mjs/);
    });

    test("a tool result whose content is a string, in a model request", async () => {
        const { error } = await stopped("tool result with string content");
        assert.equal(error.message, 'bad effect model_request fx#1, not written: `effect.request.messages[1].content`: expected an array, got "ok"');
    });

    test("a run result with a reason of pi-ai's", async () => {
        const { error } = await stopped("run result with toolUse");
        assert.equal(
            error.message,
            'bad settlement of op#1, not written: `settlement.value.reason`: expected one of "stop", "length", "error", "aborted", "max_steps", got "toolUse"',
        );
    });
});
