// agentsim adapter for oh-my-pi (@oh-my-pi/pi-coding-agent): 18.2.3 from this folder's
// node_modules, or another pinned release from releases/<version>/ (`--release VERSION`, or the
// environment variable AGENTSIM_OMP_RELEASE), run by Bun (node_modules/.bin/bun of the same
// folder, from the npm package `bun`; ./run is the launcher that picks and checks it).
//
// Speaks the agentsim adapter protocol, version 2, through the JavaScript adapter SDK (../sdk/js)
// and the Pi-family mapping it shares with the Pi adapter (../pi-family/family.mjs: model, tools,
// hooks, observers, operations, ids and clock, output sink, reset). This file is what is
// oh-my-pi's own: where it is installed, how a scenario's session is restored (SessionManager.open
// over a SessionStorage), its store (the SessionStorage the SessionManager writes through), its
// createAgentSession options, its print mode and its module-level state. README.md in this
// folder explains every mapping and every deviation; plain ESM, no build step (Bun runs
// oh-my-pi's TypeScript sources directly).

import nodeCrypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import {
    FAMILY_CWD,
    PROVIDER,
    API,
    MODEL_ID,
    SetupError,
    idsFromRule,
    importInstalled,
    installedPackage,
    kitExtensionFactories,
    kitModelDefinition,
    kitToolExecute,
    log,
    restoredContext,
    runFamilyAdapter,
    sessionFileText,
    sessionHeader,
    storeOutcome,
    streamFromKit,
    withOutputSink,
} from "../pi-family/family.mjs";

// ---------------------------------------------------------------------------------------------
// Which release: this folder's node_modules (18.2.3), or releases/<version>/node_modules
// ---------------------------------------------------------------------------------------------

const ADAPTER_DIR = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_RELEASE = "18.2.3";
const releaseChoice = chosenRelease();
const release = releaseChoice.version ?? DEFAULT_RELEASE;
/** Where the release is pinned: this folder for the default, releases/<version>/ for another. */
const RELEASE_DIR = release === DEFAULT_RELEASE ? ADAPTER_DIR : path.join(ADAPTER_DIR, "releases", release);
// AGENTSIM_OMP_ROOT: another install prefix (a folder holding node_modules), for oh-my-pi installed elsewhere.
const INSTALL_ROOT = process.env.AGENTSIM_OMP_ROOT || RELEASE_DIR;
const installCommand = `(cd ${shownPath(INSTALL_ROOT)} && npm ci)`;

/** A folder as the install command names it: relative to the working directory when below it. */
function shownPath(dir) {
    const relative = path.relative(process.cwd(), dir);
    return relative === "" ? "." : relative.startsWith("..") || path.isAbsolute(relative) ? dir : relative;
}

/**
 * `--release VERSION` (as the Pi adapter takes it), else AGENTSIM_OMP_RELEASE, else the default.
 * A `--release` without a version, or a version that is no folder name, is kept as a problem
 * for `locate` to answer (an `adapter.setup` error), never read as the default.
 */
function chosenRelease() {
    const at = process.argv.indexOf("--release");
    const given = at >= 0 ? process.argv[at + 1] : process.env.AGENTSIM_OMP_RELEASE || undefined;
    if (at >= 0 && (given === undefined || given.startsWith("--"))) return { problem: "`--release` needs a version, e.g. `--release 18.2.3`" };
    if (given !== undefined && !/^[0-9A-Za-z][0-9A-Za-z.+_-]*$/.test(given)) return { problem: `${JSON.stringify(given)} is not a release version` };
    return { version: given };
}

/** The releases pinned here: the default (this folder) and every releases/<version>/ with a package.json. */
function pinnedReleases() {
    let folders = [];
    try {
        folders = fs.readdirSync(path.join(ADAPTER_DIR, "releases")).filter((name) => fs.existsSync(path.join(ADAPTER_DIR, "releases", name, "package.json")));
    } catch {
        // no releases/ folder: only the default
    }
    return [DEFAULT_RELEASE, ...folders.sort()];
}

// ---------------------------------------------------------------------------------------------
// Environment: before oh-my-pi is loaded
// ---------------------------------------------------------------------------------------------

// UTC (oh-my-pi prints dates); a fixed terminal name (its system prompt names the terminal).
process.env.TZ = "UTC";
process.env.TERM = "dumb";
delete process.env.TERM_PROGRAM;
delete process.env.TERM_PROGRAM_VERSION;
delete process.env.COLORTERM;

// oh-my-pi's entry ids are `crypto.randomUUID().slice(-8)` (session-migrations.ts generateId,
// Web Crypto's global randomUUID); it also calls randomUUID for temporary file names, lock tokens
// and request ids, so the ids rule is read only when the id slice is taken.
idsFromRule({ targets: [globalThis.crypto, nodeCrypto], idSlice: (start, end) => start === -8 && end === undefined, consume: "slice" });

// Bun lists no pending work in process.getActiveResourcesInfo(): the SDK, loaded above (through
// family.mjs) before oh-my-pi, tracks it itself (its README, "Quiescence").

let omp;
let ompAi;
/** pi-agent-core, for its process-wide YieldGate (`rewindYieldGate`). */
let ompAgentCore;
/** modes/print-mode.ts: `omp -p` and `omp --mode json` (main.ts imports it on demand; the package index does not export it). */
let ompPrintMode;

// ---------------------------------------------------------------------------------------------
// Messages across the protocol
// ---------------------------------------------------------------------------------------------

/**
 * oh-my-pi's user messages carry `attribution` ("user" or "agent": who typed it), a field the
 * protocol's Pi-shaped user message (`{role, content, timestamp}`) does not have and the kit
 * rejects; it is left out wherever a message crosses the protocol (requests, appended entries,
 * observed events, run values). Every other message crosses as oh-my-pi built it.
 */
function protocolMessage(message) {
    if (message?.role !== "user") return message;
    const { role, content, timestamp } = message;
    return { role, content, timestamp };
}

function protocolEntry(entry) {
    return entry.type === "message" ? { ...entry, message: protocolMessage(entry.message) } : entry;
}

// ---------------------------------------------------------------------------------------------
// The store: the SessionStorage behind oh-my-pi's SessionManager
// ---------------------------------------------------------------------------------------------

/**
 * oh-my-pi's SessionManager writes its session file only through a SessionStorage
 * (session-storage.ts): one line per entry through a writer's appendSync, or the whole file
 * (title slot, header and every entry) through writeTextSync when it rewrites it (the first write
 * of a new session, recovery after a failed write, a title change, a discarded entry), guarded by
 * `expectedSize`: the byte length oh-my-pi last wrote or loaded, which the storage compares with
 * the file's and refuses the rewrite (SessionWriteConflictError, nothing written) when they differ.
 *
 * This storage is oh-my-pi's own in-memory one, kept as a mirror of the kit's store (what the
 * session file holds), with the kit in front of the session file:
 *
 * - a line appended is one `append`, answered before the write returns (the storage API is
 *   synchronous). `ok`: the mirror takes the line. `failed`: the write throws into oh-my-pi as a
 *   failing disk would; the mirror takes the line only when the store applied it all the same
 *   (the scenario's fault plan, `start.faults`, names that append `appliedThenFail`: the kit's
 *   answer carries only the cause), so the file is one line longer than oh-my-pi believes and
 *   its next rewrite meets its own size check, as it would on a disk where the line landed.
 * - a rewrite replaces the file. The kit's store is append-only, so it is rendered as what it
 *   adds to the file: one `append` per entry the store does not hold (never sent, or sent and
 *   not applied), in file order. An entry the store holds (acknowledged, or applied and then
 *   reported failed) is the same line written again in place and is not sent again. A rewrite
 *   the kit fails at one of its entries throws, and, as oh-my-pi's rewrites are atomic (a temp
 *   file renamed over the session file), leaves the mirror as it was; the entries the store took
 *   from it before the failure stay stored and are not sent again either.
 */
function kitSessionStorage(ctx, file, faults) {
    /** Ids of the entries the kit's store holds: the scenario's, and every append it applied. */
    const stored = new Set();
    /** The run's appends so far: the fault plan numbers them from 1 over the run, as the kit's store does. */
    let appends = 0;
    const appliedThenFail = new Set((faults?.appends ?? []).filter((fault) => fault.fault === "appliedThenFail").map((fault) => fault.at));
    let seeding = true;
    class KitSessionStorage extends omp.MemorySessionStorage {
        /** The scenario's session file, written before oh-my-pi opens it; not an effect. */
        seed(content, entries) {
            super.writeTextSync(file, content);
            for (const entry of entries) if (typeof entry?.id === "string") stored.add(entry.id);
            seeding = false;
        }
        appendSync(target, chunk) {
            if (target === file) {
                try {
                    sendToKit(chunk, "append");
                } catch (error) {
                    // Applied, then reported failed: the file holds the line, oh-my-pi was told it does not.
                    if (error.applied) super.appendSync(target, chunk);
                    throw error;
                }
            }
            super.appendSync(target, chunk);
        }
        writeTextSync(target, content, options) {
            if (target === file && !seeding) {
                const conflict = conflicts(this, target, options);
                if (conflict) {
                    if (ctx.live) log(`a rewrite of the session file expects ${conflict.expected} bytes, the file holds ${conflict.actual}: oh-my-pi's storage refuses it (SessionWriteConflictError) and nothing is written`);
                } else {
                    sendToKit(content, "rewrite");
                }
            }
            super.writeTextSync(target, content, options);
        }
    }
    /** MemorySessionStorage.writeTextSync's own precondition: it throws without writing. */
    function conflicts(storage, target, options) {
        if (options?.expectedSize === undefined) return null;
        const actual = storage.existsSync(target) ? storage.statSync(target).size : null;
        return actual === options.expectedSize ? null : { expected: options.expectedSize, actual };
    }
    function sendToKit(text, how) {
        const ids = [];
        for (const line of text.split("\n")) {
            if (line.trim() === "") continue;
            const entry = JSON.parse(line);
            // The header and the title slot are not entries.
            if (entry.type === "session" || entry.type === "title" || typeof entry.id !== "string") continue;
            ids.push(entry.id);
            // A rewrite replaces the file: an entry the store holds is in it again, once. An
            // appended line is a new line in the file, whatever its id.
            if (how === "rewrite" && stored.has(entry.id)) continue;
            appends += 1;
            const completion = ctx.effectSync("append", { entry: protocolEntry(entry) });
            // Applied, and its acknowledgement lost: the fault plan says so of this append.
            const applied = completion.outcome.kind === "ok" || appliedThenFail.has(appends);
            if (applied) stored.add(entry.id);
            try {
                storeOutcome(completion);
            } catch (error) {
                error.applied = applied;
                if (ctx.live) log(`${how} carrying ${entry.id} failed${applied ? " (the store applied it)" : ""}; the SessionStorage write throws ${error.code}: ${error.message} into oh-my-pi`);
                throw error;
            }
        }
        if (how === "rewrite") {
            const kept = new Set(ids);
            const dropped = [...stored].filter((id) => !kept.has(id));
            if (dropped.length > 0) log(`a rewrite of the session file leaves out stored entries ${dropped.join(", ")} (the protocol cannot take an entry back)`);
        }
    }
    return new KitSessionStorage();
}

// ---------------------------------------------------------------------------------------------
// Restore: SessionManager.open over the storage, then branch(leaf)
// ---------------------------------------------------------------------------------------------

async function restore(scenario, ctx, runtime, dirs) {
    const config = scenario.config;
    const session = scenario.session;
    const file = path.join(dirs.sessionDir, "session.jsonl");
    const storage = kitSessionStorage(ctx, file, scenario.faults);
    storage.seed(sessionFileText(sessionHeader(omp.CURRENT_SESSION_VERSION ?? 3, ctx), session), session);
    // The header's cwd does not exist on this machine; `initialCwd` is what oh-my-pi then uses.
    // No breadcrumb: it is the terminal's "continue where I was" pointer, a file outside the store.
    const sessionManager = await omp.SessionManager.open(file, dirs.sessionDir, storage, { initialCwd: FAMILY_CWD, suppressBreadcrumb: true });
    const leaf = config.activeLeafId;
    if (leaf !== null) {
        try {
            sessionManager.branch(leaf);
        } catch (error) {
            // oh-my-pi's one restore diagnostic: branch() throws "Entry <id> not found".
            const code = session.length === 0 ? "restore.unknown_leaf" : "path.unknown_leaf";
            runtime.restoreFailure = { code, message: error.message };
            return { restoreFailed: runtime.restoreFailure };
        }
    }
    runtime.sessionManager = sessionManager;
    runtime.extra.storage = storage;
    const restored = restoredContext(sessionManager, {
        code: "oh-my-pi.hang",
        what: `SessionManager.buildSessionContext() at leaf ${JSON.stringify(sessionManager.getLeafId())}`,
        why: "oh-my-pi walks the parentId chain without cycle detection, so a parent cycle on the chosen chain hangs it",
    });
    return { leaf: sessionManager.getLeafId() ?? null, messages: restored.messages.length };
}

// ---------------------------------------------------------------------------------------------
// The AgentSession
// ---------------------------------------------------------------------------------------------

/** oh-my-pi's request carries its system prompt as blocks; pi-ai's providers send them joined by a blank line. */
function systemPromptOf(context) {
    const prompt = context.systemPrompt;
    if (prompt === undefined || prompt === null) return null;
    return Array.isArray(prompt) ? prompt.join("\n\n") : prompt;
}

async function createSession(state, dirs) {
    const { ctx, scenario } = state;
    const config = scenario.config;
    const resources = scenario.resources;

    const settings = omp.Settings.isolated({ "compaction.enabled": false, "retry.enabled": false });
    const authStorage = await ompAi.AuthStorage.create(path.join(dirs.agentDir, "agent.db"));
    state.extra.authStorage = authStorage;
    authStorage.setRuntimeApiKey(PROVIDER, "agentsim");
    const modelRegistry = new omp.ModelRegistry(authStorage, path.join(dirs.agentDir, "models.yml"), {
        settings,
        cacheDbPath: path.join(dirs.agentDir, "models.db"),
        // No network: model discovery answers at once.
        fetch: () => Promise.reject(new Error("agentsim: no network")),
    });
    modelRegistry.registerProvider(PROVIDER, {
        api: API,
        baseUrl: "http://agentsim.invalid",
        apiKey: "agentsim",
        streamSimple: (_model, context, options) =>
            streamFromKit(ctx, { createStream: ompAi.createAssistantMessageEventStream, systemPrompt: systemPromptOf, protocolMessage }, context, options),
        models: [kitModelDefinition(config)],
    });
    const model = modelRegistry.find(PROVIDER, MODEL_ID);
    if (!model) ctx.fail("adapter.setup", "the agentsim model was not registered");

    const skillRoot = path.posix.join(FAMILY_CWD, ".omp", "skills");
    // oh-my-pi's SDK custom tool (extensibility/custom-tools/types.ts CustomTool): its execute
    // takes (toolCallId, params, onUpdate, ctx, signal).
    const tools = scenario.tools.map((spec) => {
        const execute = kitToolExecute(ctx, spec);
        return {
            name: spec.name,
            label: spec.name,
            description: spec.description ?? "",
            parameters: spec.parameters ?? { type: "object" },
            execute: (toolCallId, params, _onUpdate, _toolContext, signal) => execute(toolCallId, params, signal),
        };
    });
    const { session } = await omp.createAgentSession({
        cwd: FAMILY_CWD,
        agentDir: dirs.agentDir,
        settings,
        authStorage,
        modelRegistry,
        model,
        sessionManager: state.sessionManager,
        // The configured prompt is oh-my-pi's custom system prompt (`omp --system-prompt`).
        customSystemPrompt: config.systemPrompt ?? undefined,
        contextFiles: (resources.instructions ?? []).map((file) => ({ path: file.path, content: file.content })),
        skills: (resources.skills ?? []).map((skill) => ({
            name: skill.name,
            description: skill.description,
            filePath: path.posix.join(skillRoot, skill.name, "SKILL.md"),
            baseDir: path.posix.join(skillRoot, skill.name),
            source: "agentsim",
        })),
        rules: [],
        promptTemplates: [],
        slashCommands: [],
        customTools: tools,
        toolNames: tools.map((tool) => tool.name),
        // oh-my-pi's documented way to take a before hook's new arguments: return {input}.
        extensions: kitExtensionFactories(ctx, scenario, { rewriteArguments: "return", protocolMessage }),
        disableExtensionDiscovery: true,
        enableMCP: false,
        enableLsp: false,
        enableIrc: false,
        skipPythonPreflight: true,
        hasUI: false,
    });
    // On a resumed session oh-my-pi starts a scan for the advisors' past spend "off the
    // critical path" (sdk.ts, `beginInitialAdvisorCostRestore`) and emits `advisor_cost_changed`
    // when its file system reads settle: real I/O the kit's quiescence cannot see on Bun, so the
    // event landed before `agent_start` in a json run or after it, by timing (`run
    // --check-determinism` caught it). The session is handed over once the scan has settled, as
    // on a machine whose disk answers at once: the event precedes every operation.
    await session.advisorCostRestore;
    return session;
}

/** `print` is `omp -p` (runPrintMode, mode "text"); `json` is `omp --mode json`; other names go to runPrintMode unchanged. */
async function runMode(state, session, mode, text) {
    if (mode === "interactive") {
        // oh-my-pi's interactive mode is its terminal UI (InteractiveMode): it needs a TTY and a human.
        const error = new Error("oh-my-pi's interactive mode is a terminal UI that the adapter cannot drive in process");
        error.code = "adapter.unsupported";
        throw error;
    }
    const printMode = mode === "print" ? "text" : mode;
    const { value: exitCode, consoleErrors } = await withOutputSink(state.ctx, () => ompPrintMode.runPrintMode(session, { mode: printMode, initialMessage: text }));
    if (exitCode === 0) return;
    const error = new Error(consoleErrors.join("\n") || `runPrintMode returned exit code ${exitCode}`);
    error.code = `exitCode.${exitCode}`;
    throw error;
}

// ---------------------------------------------------------------------------------------------
// The adapter
// ---------------------------------------------------------------------------------------------

await runFamilyAdapter({
    name: "omp-adapter",
    implementation: "oh-my-pi",
    workPrefix: "agentsim-omp-",
    features: ["steer", "followUp", "abort", "flush", "dispose", "mode", "chunks", "observers", "sync-store", "sync-sink"],
    // pi-agent-core's agent loop calls its YieldGate at every turn, and under the kit's clock
    // rule (a step of 50 ms or more between reads; 1 s by default) every call sleeps 20 ms of
    // `performance.now()` through `node:timers/promises` (utils/yield.ts, sleepAtLeast): 220 ms
    // of real waiting in a walk-through schedule, during which nothing the kit answers can come.
    // In virtual time (the JS SDK's README) those sleeps come due at once and the runtime's clock
    // moves past them: the same reports (README, "Virtual time"), three to four times faster.
    quiescence: { virtualTime: true },
    unsupported: {
        library: "oh-my-pi has no library adapter returning {reason, text}; its SDK is AgentSession itself",
        "mode:interactive": "oh-my-pi's interactive mode is its terminal UI (InteractiveMode), which needs a TTY and a human: the adapter cannot drive it in process",
    },
    environment(dirs) {
        // oh-my-pi keeps logs, caches and its agent dir under the home folder: the private one.
        const home = path.join(dirs.workDir, "home");
        fs.mkdirSync(home, { recursive: true });
        process.env.HOME = home;
        process.env.PI_CODING_AGENT_DIR = dirs.agentDir;
    },
    locate() {
        if (releaseChoice.problem) {
            throw new SetupError(`${releaseChoice.problem}; the releases pinned in ${shownPath(ADAPTER_DIR)}: ${pinnedReleases().join(", ")}`);
        }
        if (!process.env.AGENTSIM_OMP_ROOT && !fs.existsSync(path.join(RELEASE_DIR, "package.json"))) {
            throw new SetupError(
                `oh-my-pi ${release} is not pinned: there is no ${shownPath(path.join(RELEASE_DIR, "package.json"))} ` +
                    `(releases/<version>/ holds a package.json and a package-lock.json pinning @oh-my-pi/pi-coding-agent and bun at that version; pinned: ${pinnedReleases().join(", ")}); ` +
                    `pin it there, then install it with \`${installCommand}\``,
            );
        }
        if (typeof Bun === "undefined") {
            throw new SetupError(`oh-my-pi runs on Bun: start the adapter with adapters/oh-my-pi/run (node_modules/.bin/bun, installed by \`${installCommand}\`)`);
        }
        const found = installedPackage(INSTALL_ROOT, "@oh-my-pi/pi-coding-agent", installCommand);
        const foundAi = installedPackage(INSTALL_ROOT, "@oh-my-pi/pi-ai", installCommand);
        const foundAgentCore = installedPackage(INSTALL_ROOT, "@oh-my-pi/pi-agent-core", installCommand);
        if (found.manifest.version !== release) {
            throw new SetupError(`${found.dir} holds @oh-my-pi/pi-coding-agent ${found.manifest.version}, not the release ${release}; reinstall it with \`${installCommand}\``);
        }
        return { version: found.manifest.version, found, foundAi, foundAgentCore };
    },
    async load(located) {
        omp = await importInstalled(located.found, "@oh-my-pi/pi-coding-agent", installCommand);
        ompAi = await importInstalled(located.foundAi, "@oh-my-pi/pi-ai", installCommand);
        ompAgentCore = await importInstalled(located.foundAgentCore, "@oh-my-pi/pi-agent-core", installCommand);
        const printModeFile = { ...located.found, url: pathToFileURL(path.join(located.found.dir, "src", "modes", "print-mode.ts")).href };
        ompPrintMode = await importInstalled(printModeFile, "@oh-my-pi/pi-coding-agent/modes/print-mode", installCommand);
        // oh-my-pi's logger stamps every line with `new Date()` and opens its file lazily at the
        // first line: it would read the run's clock a varying number of times (once more in a fresh
        // process). Off, unless AGENTSIM_OMP_LOG=1 asks for its log file (in the private home's .omp/logs).
        if (process.env.AGENTSIM_OMP_LOG !== "1") omp.logger.setTransports({ file: false, console: false });
        if (omp.VERSION !== located.version) {
            throw new SetupError(`oh-my-pi reports version ${omp.VERSION}, its package.json ${located.version}; reinstall it with \`${installCommand}\``);
        }
    },
    restore,
    createSession,
    // oh-my-pi's transcript may hold its own message kinds (developer, custom, fileMention, ...);
    // convertToLlm is its own mapping of them onto pi-ai messages.
    transcript: (session) => omp.convertToLlm(session.messages).map(protocolMessage),
    waitForIdle: (session) => session.agent.waitForIdle(),
    dispose: (session) => session.dispose(),
    runMode,
    discard(state) {
        // A discarded run's session: dispose() unsubscribes it, releases its agent registration
        // and its singletons; whatever it would append reaches no kit (the run is discarded).
        state.session?.dispose().catch((error) => log("reset: AgentSession.dispose() rejected:", error));
        state.extra.authStorage?.close?.();
    },
    async reset() {
        // pi-ai's process-wide custom API registry holds the run's stream function
        // (ModelRegistry.registerProvider put it there under the api name, with no source id).
        ompAi.unregisterCustomApis(undefined);
        await rewindYieldGate();
    },
});

/**
 * pi-agent-core's agent loop yields through one process-wide `YieldGate` (utils/yield.ts), which
 * sleeps only when `Date.now()` is at least 50 ms past its last sleep, or before it, and keeps
 * that time (a private field) across runs. Under the kit's clock rule a run's clock starts again
 * at the scenario's start, so whether a yield of this run sleeps (and reads the clock once more)
 * depended on the clock time of the previous run's last yield, on the same process: a run at a
 * clock step under 50 ms that starts within 50 ms after where the previous run's yields ended
 * skips its first sleeps, and at the default 1 s step a yield that reads exactly the previous
 * run's last time does. Back to a fresh process's state (0): the gate is asked once with
 * `Date.now()` at 0; a gate whose last sleep is later sleeps its 20 ms and takes 0, one at 0
 * returns at once.
 */
async function rewindYieldGate() {
    const ruleNow = Date.now;
    Date.now = () => 0;
    try {
        await ompAgentCore.yieldIfDue();
    } finally {
        Date.now = ruleNow;
    }
}
