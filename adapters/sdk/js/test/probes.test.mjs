// The state probe (`hello.probes: ["state"]`): every `idle` of a started run carries the
// runtime's own leaf and persisted count, from the definition's `state(ctx)`; none after a
// refused restore or a reset; a definition that declares the probe without `state` stops.
import assert from "node:assert/strict";
import path from "node:path";
import { after, describe, test } from "node:test";

import { AdapterProcess, FIXTURES, IDLE, TEMPLATE, appendOk, final, prompt, start } from "./helpers.mjs";

const processes = [];
function adapter(env = { AGENTSIM_TEMPLATE_PROBES: "1" }, script = TEMPLATE) {
    const process = new AdapterProcess(script, { env });
    processes.push(process);
    return process;
}
after(() => processes.forEach((process) => process.kill()));

const idleWith = (leaf, persisted) => JSON.stringify({ type: "idle", state: { leaf, persisted } });

describe("the state probe", () => {
    test("hello declares it", async () => {
        const kit = adapter();
        const hello = JSON.parse(await kit.hello());
        assert.deepEqual(hello.probes, ["state"]);
    });

    test("every idle of a run carries the runtime's leaf and persisted count; the leaf moves after each accepted append", async () => {
        const kit = adapter();
        await kit.hello();
        assert.deepEqual(await kit.send(start()), ['{"type":"started","leaf":null,"messages":0}', idleWith(null, 0)]);
        const requested = await kit.send(prompt(1, "检查 parser"));
        assert.equal(requested.at(-1), idleWith(null, 0));
        const appended = await kit.send(final(1, "好的"));
        assert.match(appended[0], /"kind":"append"/);
        assert.equal(appended.at(-1), idleWith(null, 0), "the leaf waits for the store");
        const second = await kit.send(appendOk(2));
        assert.equal(second.at(-1), idleWith("entry-1", 1));
        const settled = await kit.send(appendOk(3));
        assert.equal(settled.at(-1), idleWith("entry-2", 2));
        assert.deepEqual(await kit.send({ type: "reset" }), [IDLE], "no runtime after reset: no state");
    });

    test("a refused restore's idle carries no state", async () => {
        const kit = adapter();
        await kit.hello();
        const lines = await kit.send(start({ config: { activeLeafId: "nowhere" } }));
        assert.equal(lines.at(-1), IDLE);
    });

    test("without the probe, idle carries nothing", async () => {
        const kit = adapter({});
        const hello = JSON.parse(await kit.hello());
        assert.equal(hello.probes, undefined);
        assert.deepEqual(await kit.send(start()), ['{"type":"started","leaf":null,"messages":0}', IDLE]);
    });

    test("declaring the probe without state(ctx) stops the adapter before hello", async () => {
        const kit = adapter({}, path.join(FIXTURES, "probe-without-state-adapter.mjs"));
        const { code } = await kit.exit;
        assert.equal(code, 1);
        assert.match(kit.stderr, /declares `state` but the adapter definition has no `state\(ctx\)`/);
    });
});
