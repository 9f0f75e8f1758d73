// The template adapter against the real kit: `agentsim run` over scenarios/wiring must judge every
// case (pass, fail or not applicable), never call one broken. Skipped when there is no kit binary
// (AGENTSIM_BIN, or target/release/agentsim in the repository).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { ADAPTER_RUNTIME, REPO_ROOT, TEMPLATE } from "./helpers.mjs";

const kit = process.env.AGENTSIM_BIN || path.join(REPO_ROOT, "target", "release", "agentsim");
const present = fs.existsSync(kit);

/** The template adapter as the kit starts it (`sh -c`), on the runtime the tests' adapters run on. */
const templateCommand = () => `'${ADAPTER_RUNTIME.replaceAll("'", "'\\''")}' ${path.relative(REPO_ROOT, TEMPLATE)}`;

function runKit(args) {
    const result = spawnSync(kit, args, { cwd: REPO_ROOT, encoding: "utf8", maxBuffer: 256 * 1024 * 1024, timeout: 600_000 });
    if (result.error) throw result.error;
    return result;
}

test("the template adapter is never broken on scenarios/wiring", { skip: present ? false : `no kit at ${kit}` }, () => {
    const command = templateCommand();
    const result = runKit(["run", "--impl", command, "scenarios/wiring", "--format", "json"]);
    assert.ok(result.status === 0 || result.status === 1, `exit ${result.status}; stderr:\n${result.stderr.slice(-4000)}`);
    const report = JSON.parse(result.stdout);
    assert.ok(report.results.length > 0, "no case was run");
    const broken = report.results.filter((result) => result.status === "broken");
    assert.deepEqual(
        broken.map((result) => `${result.name}: ${result.detail}`),
        [],
    );
});

test("the template settles each prompt before the next queued run starts", { skip: present ? false : `no kit at ${kit}` }, () => {
    const command = templateCommand();
    const scenarios = ["scenarios/persist/two-prompts-near-simultaneous.json", "scenarios/persist/three-prompts-arrival-order.json"];
    const result = runKit(["run", "--impl", command, ...scenarios, "--format", "json"]);
    assert.equal(result.status, 0, `exit ${result.status}; stdout:\n${result.stdout.slice(-4000)}`);
    const report = JSON.parse(result.stdout);
    assert.deepEqual(
        report.results.map((result) => `${result.name}: ${result.status}`),
        ["three-prompts-arrival-order: passed", "two-prompts-near-simultaneous: passed"],
    );
});
