// Bad input stays typed: a Pi-family adapter whose runtime is missing, or does not import, makes
// the kit report the run broken (exit code 3) with an `adapter.setup` error that names what is
// missing and the command that installs it, at once: never a hang, never a stack-trace wall.
//
//     AGENTSIM_BIN=target/release/agentsim node --test adapters/pi-family/test/
//
// Drives the real kit (AGENTSIM_BIN, or target/release/agentsim) on one scenario. The missing
// installs are simulated with the adapters' install-prefix variables (AGENTSIM_PI_ROOT,
// AGENTSIM_OMP_ROOT) pointing at temporary folders; the import errors with a fake package whose
// entry module throws. The oh-my-pi import test runs the Bun that `npm ci` installed in
// adapters/oh-my-pi (CI installs it first).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const KIT = process.env.AGENTSIM_BIN || path.join(REPO_ROOT, "target", "release", "agentsim");
const SCENARIO = "scenarios/wiring/walkthrough.json";
const BUN = path.join(REPO_ROOT, "adapters", "oh-my-pi", "node_modules", ".bin", "bun");

/** Temporary folders (install prefixes, HOMEs), removed when the tests end. */
const temporaryRoots = [];
after(() => {
    for (const root of temporaryRoots) fs.rmSync(root, { recursive: true, force: true });
});

function temporaryRoot() {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "agentsim-setup-test-"));
    temporaryRoots.push(root);
    return root;
}

/** A package under root/node_modules whose entry module throws when imported. */
function brokenPackage(root, name, version) {
    const dir = path.join(root, "node_modules", ...name.split("/"));
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, version, type: "module", exports: { ".": { import: "./index.js" } } }));
    fs.writeFileSync(path.join(dir, "index.js"), 'throw new Error("deliberately broken install");\n');
}

/** Runs the kit on one scenario with the adapter command and environment; returns exit status and output. */
function runKit(command, env) {
    assert.ok(fs.existsSync(KIT), `no kit at ${KIT}: build it (cargo build --release) or set AGENTSIM_BIN`);
    const started = Date.now();
    const result = spawnSync(KIT, ["run", "--impl", command, SCENARIO], {
        cwd: REPO_ROOT,
        env: { ...process.env, HOME: temporaryRoot(), ...env },
        encoding: "utf8",
        timeout: 120_000,
    });
    if (result.error) throw result.error;
    return { status: result.status, output: `${result.stdout}\n${result.stderr}`, seconds: (Date.now() - started) / 1000 };
}

function assertSetupVerdict(run, ...mentions) {
    assert.equal(run.status, 3, `exit ${run.status}, expected 3; output:\n${run.output}`);
    assert.match(run.output, /adapter\.setup: /, run.output);
    assert.match(run.output, /subject\.malformed/, run.output);
    for (const mention of mentions) assert.ok(run.output.includes(mention), `the verdict does not mention ${JSON.stringify(mention)}:\n${run.output}`);
    assert.doesNotMatch(run.output, /^\s+at .*\(.*:\d+:\d+\)$/m, `a stack trace reached the verdict:\n${run.output}`);
    assert.ok(run.seconds < 30, `the verdict took ${run.seconds} s`);
}

test("Pi not installed: adapter.setup names the missing package and `npm ci`", () => {
    const root = temporaryRoot();
    const run = runKit("node adapters/pi/adapter.mjs", { AGENTSIM_PI_ROOT: root });
    assertSetupVerdict(run, "@mariozechner/pi-coding-agent is not installed", `(cd ${root} && npm ci)`);
});

test("a Pi release that is not installed: the release's own install command", () => {
    const run = runKit("node adapters/pi/adapter.mjs --release 0.0.1", {});
    assertSetupVerdict(run, "releases/0.0.1", "(cd adapters/pi/releases/0.0.1 && npm ci)");
});

test("Pi that does not import: adapter.setup says so and names `npm ci`", () => {
    const root = temporaryRoot();
    brokenPackage(root, "@mariozechner/pi-coding-agent", "0.73.1");
    brokenPackage(root, "@mariozechner/pi-ai", "0.73.1");
    const run = runKit("node adapters/pi/adapter.mjs", { AGENTSIM_PI_ROOT: root });
    assertSetupVerdict(run, "is installed but does not import", "deliberately broken install", `(cd ${root} && npm ci)`);
});

test("oh-my-pi without Bun: the launcher's adapter.setup names the missing binary and `npm ci`", () => {
    const root = temporaryRoot();
    const run = runKit("adapters/oh-my-pi/run", { AGENTSIM_OMP_ROOT: root });
    assertSetupVerdict(run, "Bun is not installed", path.join(root, "node_modules", ".bin", "bun"), `(cd ${root} && npm ci)`);
});

test("oh-my-pi's adapter started by Node instead of Bun: adapter.setup says to use the launcher", () => {
    const run = runKit("node adapters/oh-my-pi/adapter.mjs", {});
    assertSetupVerdict(run, "oh-my-pi runs on Bun", "adapters/oh-my-pi/run");
});

test("oh-my-pi not installed next to a working Bun: adapter.setup names the package and `npm ci`", () => {
    assert.ok(fs.existsSync(BUN), `no Bun at ${BUN}: install oh-my-pi first, \`(cd adapters/oh-my-pi && npm ci)\``);
    const root = temporaryRoot();
    fs.mkdirSync(path.join(root, "node_modules", ".bin"), { recursive: true });
    fs.symlinkSync(fs.realpathSync(BUN), path.join(root, "node_modules", ".bin", "bun"));
    const run = runKit("adapters/oh-my-pi/run", { AGENTSIM_OMP_ROOT: root });
    assertSetupVerdict(run, "@oh-my-pi/pi-coding-agent is not installed", `(cd ${root} && npm ci)`);
});

test("oh-my-pi that does not import: adapter.setup says so and names `npm ci`", () => {
    assert.ok(fs.existsSync(BUN), `no Bun at ${BUN}: install oh-my-pi first, \`(cd adapters/oh-my-pi && npm ci)\``);
    const root = temporaryRoot();
    fs.mkdirSync(path.join(root, "node_modules", ".bin"), { recursive: true });
    fs.symlinkSync(fs.realpathSync(BUN), path.join(root, "node_modules", ".bin", "bun"));
    brokenPackage(root, "@oh-my-pi/pi-coding-agent", "18.2.3");
    brokenPackage(root, "@oh-my-pi/pi-ai", "18.2.3");
    brokenPackage(root, "@oh-my-pi/pi-agent-core", "18.2.3");
    const run = runKit("adapters/oh-my-pi/run", { AGENTSIM_OMP_ROOT: root });
    assertSetupVerdict(run, "is installed but does not import", "deliberately broken install", `(cd ${root} && npm ci)`);
});
