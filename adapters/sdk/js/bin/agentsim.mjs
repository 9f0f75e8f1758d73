#!/usr/bin/env node
// `agentsim` on npm: runs the kit's binary from the platform package npm installed beside this
// one (`@agentsim/cli-<platform>-<arch>`, an optional dependency for each platform, as biome and
// esbuild ship theirs). AGENTSIM_BINARY names another binary. Arguments, stdin, stdout, stderr
// and the exit code pass through unchanged; a signal this process gets is passed on, and a
// binary ended by a signal ends this process by the same signal, so `npx agentsim` is the kit.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const platform = `${process.platform}-${process.arch}`;
const packageName = `@agentsim/cli-${platform}`;

function binaryPath() {
    if (process.env.AGENTSIM_BINARY) {
        return process.env.AGENTSIM_BINARY;
    }
    try {
        return require.resolve(`${packageName}/bin/agentsim`);
    } catch {
        process.stderr.write(
            `agentsim: no binary for ${platform}: the package ${packageName} is not installed ` +
                "(npm installs the one for your platform as an optional dependency of agentsim; " +
                "binaries are published for linux-x64; elsewhere build it with `cargo install` and " +
                "set AGENTSIM_BINARY)\n",
        );
        process.exit(127);
    }
}

const child = spawn(binaryPath(), process.argv.slice(2), { stdio: "inherit" });
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
for (const signal of forwarded) {
    process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => {
    process.stderr.write(`agentsim: cannot start ${error.path ?? "the binary"}: ${error.message}\n`);
    process.exit(127);
});
child.on("exit", (code, signal) => {
    if (signal) {
        for (const name of forwarded) {
            process.removeAllListeners(name);
        }
        process.kill(process.pid, signal);
        return;
    }
    process.exit(code ?? 1);
});
