#!/usr/bin/env node
// agentsim adapter for real Pi (@mariozechner/pi-coding-agent): 0.73.1 from this folder's
// node_modules, or another pinned release from releases/<version>/ (`--release 0.70.6`, or the
// environment variable AGENTSIM_PI_RELEASE).
//
// Speaks the agentsim adapter protocol, version 2, through the JavaScript adapter SDK (../sdk/js)
// and the Pi-family mapping it shares with the oh-my-pi adapter (../pi-family/family.mjs: model,
// tools, hooks, observers, operations, ids and clock, output sink, reset). This file is what is
// Pi's own: where Pi is installed, how a scenario's session is restored (a session file opened by
// SessionManager.open), its AgentSession's options, its store (SessionManager._persist), its
// print mode and its module-level state. README.md in this folder explains every mapping and
// every deviation; plain Node 20 ESM with no build step.

import crypto from "node:crypto";
import fs from "node:fs";
import module from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

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
// Which release: this folder's node_modules (0.73.1), or releases/<version>/node_modules
// ---------------------------------------------------------------------------------------------

const ADAPTER_DIR = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_RELEASE = "0.73.1";
const release = releaseArgument() ?? process.env.AGENTSIM_PI_RELEASE ?? DEFAULT_RELEASE;
// AGENTSIM_PI_ROOT: another install prefix (a folder holding node_modules), for a Pi installed elsewhere.
const releaseRoot =
    process.env.AGENTSIM_PI_ROOT || (release === DEFAULT_RELEASE ? ADAPTER_DIR : path.join(ADAPTER_DIR, "releases", release));
const installCommand = `(cd ${shownPath(releaseRoot)} && npm ci)`;

/** A folder as the install command names it: relative to the working directory when below it. */
function shownPath(dir) {
    const relative = path.relative(process.cwd(), dir);
    return relative === "" ? "." : relative.startsWith("..") || path.isAbsolute(relative) ? dir : relative;
}

function releaseArgument() {
    const at = process.argv.indexOf("--release");
    return at >= 0 ? process.argv[at + 1] : undefined;
}

// ---------------------------------------------------------------------------------------------
// Environment: before Pi is loaded. UTC so that Pi's "Current date" line does not depend on the
// machine; offline and a private agent dir so that nothing reads or writes the user's ~/.pi.
// ---------------------------------------------------------------------------------------------

process.env.TZ = "UTC";
process.env.PI_OFFLINE = "1";
process.env.PI_SKIP_VERSION_CHECK = "1";

// Pi's generateId (session-manager.js) is `randomUUID().slice(0, 8)` from node:crypto, its only
// caller; so every call reads the ids rule.
idsFromRule({ targets: [crypto], idSlice: (start, end) => start === 0 && end === 8, consume: "call" });

let pi;
let piAi;

// ---------------------------------------------------------------------------------------------
// The store: the lines SessionManager._persist appends to the session file
// ---------------------------------------------------------------------------------------------

// Pi's SessionManager writes each entry with fs.appendFileSync (session-manager.js _persist: once
// the session holds an assistant message; before that it writes nothing, then every entry at
// once). appendFileSync is replaced (module.syncBuiltinESMExports makes Pi's named import see it):
// a line for the run's session file is an `append` of that entry, answered before the call
// returns, as a disk write would be; a `failed` answer throws out of appendFileSync into Pi. Every
// other file is written as before. The session header is the file's first line, not an entry, and
// is not sent; every entry line is, an entry Pi writes a second time included (its first flush
// writes every entry it holds, the opened file's own when it has no assistant message yet, and
// again after a failed flush: Pi's behaviour, judged by the kit).
const sessionStores = new Map();
const realAppendFileSync = fs.appendFileSync;
fs.appendFileSync = function appendThroughKit(target, data, options) {
    const store = typeof target === "string" ? sessionStores.get(target) : undefined;
    if (!store) return realAppendFileSync.call(this, target, data, options);
    return store(String(data));
};
module.syncBuiltinESMExports();

function kitSessionFile(ctx) {
    return (text) => {
        for (const line of text.split("\n")) {
            if (line.trim() === "") continue;
            const entry = JSON.parse(line);
            if (entry.type === "session") continue;
            try {
                storeOutcome(ctx.effectSync("append", { entry }));
            } catch (error) {
                if (ctx.live) log(`append of ${entry.id} failed; appendFileSync throws ${error.code}: ${error.message} into Pi's SessionManager._persist`);
                throw error;
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Restore: Pi's own path, a session file opened by SessionManager.open, then branch(leaf)
// ---------------------------------------------------------------------------------------------

function restore(scenario, ctx, runtime, dirs) {
    const config = scenario.config;
    const session = scenario.session;
    const file = path.join(dirs.sessionDir, "session.jsonl");
    fs.writeFileSync(file, sessionFileText(sessionHeader(pi.CURRENT_SESSION_VERSION, ctx), session));
    const sessionManager = pi.SessionManager.open(file, dirs.sessionDir, FAMILY_CWD);
    const leaf = config.activeLeafId;
    if (leaf !== null) {
        try {
            sessionManager.branch(leaf);
        } catch (error) {
            // Pi's one restore diagnostic: branch() throws "Entry <id> not found".
            const code = session.length === 0 ? "restore.unknown_leaf" : "path.unknown_leaf";
            runtime.restoreFailure = { code, message: error.message };
            return { restoreFailed: runtime.restoreFailure };
        }
    }
    // With a null leaf Pi keeps the leaf its index chose: the physically last entry.
    // The kit is the store from here on: every line Pi's SessionManager._persist writes to the
    // session file (appendFileSync, below) becomes an `append`, answered before it returns.
    sessionStores.set(file, kitSessionFile(ctx));
    runtime.sessionManager = sessionManager;
    // The state probe's baseline: the entries Pi's SessionManager holds once the file is opened.
    runtime.extra.restoredEntries = sessionManager.getEntries().length;
    const restored = restoredContext(sessionManager, {
        code: "pi.hang",
        what: `SessionManager.buildSessionContext() at leaf ${JSON.stringify(sessionManager.getLeafId())}`,
        why: "Pi walks the parentId chain without cycle detection, so a parent cycle on the chosen chain hangs it",
    });
    return { leaf: sessionManager.getLeafId() ?? null, messages: restored.messages.length };
}

// ---------------------------------------------------------------------------------------------
// The AgentSession
// ---------------------------------------------------------------------------------------------

async function createSession(state, dirs) {
    const { ctx, scenario } = state;
    const config = scenario.config;
    const resources = scenario.resources;

    const authStorage = pi.AuthStorage.inMemory();
    authStorage.setRuntimeApiKey(PROVIDER, "agentsim");
    const modelRegistry = pi.ModelRegistry.inMemory(authStorage);
    modelRegistry.registerProvider(PROVIDER, {
        api: API,
        baseUrl: "http://agentsim.invalid",
        apiKey: "agentsim",
        streamSimple: (_model, context, options) =>
            streamFromKit(
                ctx,
                {
                    createStream: piAi.createAssistantMessageEventStream,
                    systemPrompt: (request) => (request.systemPrompt === undefined ? null : request.systemPrompt),
                },
                context,
                options,
            ),
        models: [kitModelDefinition(config)],
    });
    const model = modelRegistry.find(PROVIDER, MODEL_ID);
    if (!model) ctx.fail("adapter.setup", "the agentsim model was not registered");

    const settingsManager = pi.SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } });
    const skillRoot = path.posix.join(FAMILY_CWD, ".pi", "skills");
    const resourceLoader = new pi.DefaultResourceLoader({
        cwd: FAMILY_CWD,
        agentDir: dirs.agentDir,
        settingsManager,
        noExtensions: true,
        noSkills: true,
        noPromptTemplates: true,
        noThemes: true,
        noContextFiles: true,
        systemPrompt: config.systemPrompt ?? undefined,
        appendSystemPrompt: [],
        agentsFilesOverride: () => ({
            agentsFiles: (resources.instructions ?? []).map((file) => ({ path: file.path, content: file.content })),
        }),
        skillsOverride: () => ({
            skills: (resources.skills ?? []).map((skill) => ({
                name: skill.name,
                description: skill.description,
                filePath: path.posix.join(skillRoot, skill.name, "SKILL.md"),
                baseDir: path.posix.join(skillRoot, skill.name),
                sourceInfo: pi.createSyntheticSourceInfo(path.posix.join(skillRoot, skill.name, "SKILL.md"), { source: "agentsim" }),
                disableModelInvocation: false,
            })),
            diagnostics: [],
        }),
        // Pi's documented way to take a before hook's new arguments: mutate event.input in place.
        extensionFactories: kitExtensionFactories(ctx, scenario, { rewriteArguments: "mutate" }),
    });
    await resourceLoader.reload();

    const tools = scenario.tools.map((spec) =>
        pi.defineTool({
            name: spec.name,
            label: spec.name,
            description: spec.description ?? "",
            parameters: spec.parameters ?? { type: "object" },
            execute: kitToolExecute(ctx, spec),
        }),
    );
    const { session } = await pi.createAgentSession({
        cwd: FAMILY_CWD,
        agentDir: dirs.agentDir,
        model,
        authStorage,
        modelRegistry,
        settingsManager,
        sessionManager: state.sessionManager,
        resourceLoader,
        customTools: tools,
        tools: tools.map((tool) => tool.name),
    });
    return session;
}

/** `print` is `pi -p` (runPrintMode, mode "text"); `json` is `pi --mode json`; other names go to runPrintMode unchanged. */
async function runMode(state, session, mode, text) {
    if (mode === "interactive") {
        // Pi's interactive mode is the terminal UI (InteractiveMode): it needs a TTY and a human.
        const error = new Error("Pi's interactive mode is a terminal UI that the adapter cannot drive in process");
        error.code = "adapter.unsupported";
        throw error;
    }
    const printMode = mode === "print" ? "text" : mode;
    const host = {
        session,
        setRebindSession() {},
        // AgentSessionRuntime.dispose(): print mode is single-shot and ends the runtime.
        dispose: async () => session.dispose(),
    };
    const { value: exitCode, consoleErrors } = await withOutputSink(state.ctx, () => pi.runPrintMode(host, { mode: printMode, initialMessage: text }));
    if (exitCode === 0) return;
    const error = new Error(consoleErrors.join("\n") || `runPrintMode returned exit code ${exitCode}`);
    error.code = `exitCode.${exitCode}`;
    throw error;
}

/**
 * Pi's default system prompt names where its package is installed (its README, docs and
 * examples), so every request, and every count a rule makes of a request's tokens, would depend
 * on the folder this checkout sits in: two machines would see different traces. Pi reads that
 * folder from PI_PACKAGE_DIR when it is set (its own override, for store paths that tokenize
 * poorly); the adapter points it at a fixed link to the installed package, one per release, as
 * it fixes HOME, the clock and the ids. The package itself is unchanged.
 */
function fixedPackageDir() {
    const installed = path.join(releaseRoot, "node_modules", "@mariozechner", "pi-coding-agent");
    if (!fs.existsSync(path.join(installed, "package.json"))) return; // locate() reports it
    const fixed = path.join("/tmp", `agentsim-pi-${release}-package`);
    let current = null;
    try {
        current = fs.readlinkSync(fixed);
    } catch {}
    if (current !== installed) {
        // A new link renamed over the old one: a process reading it meanwhile sees one or the other.
        const fresh = `${fixed}.${process.pid}`;
        try {
            fs.rmSync(fresh, { force: true });
            fs.symlinkSync(installed, fresh);
            fs.renameSync(fresh, fixed);
        } catch (error) {
            log(`PI_PACKAGE_DIR: cannot link ${fixed} to ${installed}: ${error.message}; Pi's own folder is used`);
            return;
        }
    }
    process.env.PI_PACKAGE_DIR = fixed;
}

// ---------------------------------------------------------------------------------------------
// The adapter
// ---------------------------------------------------------------------------------------------

await runFamilyAdapter({
    name: "pi-adapter",
    implementation: "pi",
    workPrefix: "agentsim-pi-",
    features: ["steer", "followUp", "abort", "flush", "dispose", "mode", "chunks", "observers", "sync-store", "sync-sink"],
    unsupported: {
        library: "Pi has no library adapter returning {reason, text}; its SDK is AgentSession itself",
        "mode:interactive": "Pi's interactive mode is its terminal UI (InteractiveMode), which needs a TTY and a human: the adapter cannot drive it in process",
    },
    environment(dirs) {
        process.env.PI_CODING_AGENT_DIR = dirs.agentDir;
        fixedPackageDir();
    },
    locate() {
        const found = installedPackage(releaseRoot, "@mariozechner/pi-coding-agent", installCommand);
        const foundAi = installedPackage(releaseRoot, "@mariozechner/pi-ai", installCommand);
        if ((release !== DEFAULT_RELEASE || process.env.AGENTSIM_PI_ROOT) && found.manifest.version !== release) {
            throw new SetupError(
                `${releaseRoot} holds @mariozechner/pi-coding-agent ${found.manifest.version}, not the release ${release}; reinstall it with \`${installCommand}\``,
            );
        }
        return { version: found.manifest.version, found, foundAi };
    },
    async load(located) {
        pi = await importInstalled(located.found, "@mariozechner/pi-coding-agent", installCommand);
        piAi = await importInstalled(located.foundAi, "@mariozechner/pi-ai", installCommand);
        if (pi.VERSION !== located.version) {
            throw new SetupError(`Pi reports version ${pi.VERSION}, its package.json ${located.version}; reinstall it with \`${installCommand}\``);
        }
    },
    restore,
    // The state probe: Pi's own leaf (SessionManager.getLeafId()) and the entries its
    // SessionManager holds beyond those it opened (getEntries(): every entry _appendEntry took).
    state: (runtime) => ({
        leaf: runtime.sessionManager.getLeafId() ?? null,
        persisted: runtime.sessionManager.getEntries().length - runtime.extra.restoredEntries,
    }),
    createSession,
    // Pi's transcript may hold its own message kinds (compactionSummary, branchSummary, custom);
    // pi.convertToLlm is Pi's own mapping of them onto pi-ai messages.
    transcript: (session) => pi.convertToLlm(session.messages),
    waitForIdle: (session) => session.agent.waitForIdle(),
    dispose: (session) => session.dispose(),
    runMode,
    discard(state) {
        // dispose() disconnects the session from its agent, drops its listeners, invalidates its
        // extensions; it appends nothing.
        state.session?.dispose();
    },
    reset() {
        sessionStores.clear();
        // pi-ai's process-wide API registry holds the run's stream function
        // (ModelRegistry.registerProvider puts it there under `provider:agentsim`); the next run
        // registers its own.
        piAi.unregisterApiProviders?.(`provider:${PROVIDER}`);
    },
});
