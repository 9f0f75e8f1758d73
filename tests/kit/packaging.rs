//! The kit as its users install it: the corpus inside the binary (`run` and `explore` with no
//! path, `scenarios list|show|export`, replay commands that work with no checkout), the
//! packages' versions in step, the npm package's launcher (the platform package's binary found,
//! exit codes and SIGTERM passed through), the implementers' guide's first steps run as
//! written, and the GitHub Action's steps run as written.
//!
//! The guide's install lines and the action's install step need the packed packages: `.ci/run`
//! packs them (`packages/pack`) and sets `AGENTSIM_PACKAGES` to their folder; they are copied
//! into the test's project folder and the lines run as written (`npm i -D ./agentsim-0.1.0.tgz
//! ...`, `pip install ./agentsim-0.1.0-*.whl`, npm offline). Without it, the install lines are
//! replaced by what the packages install (the npm package's files and this build's binary in
//! `node_modules`, the Python SDK's package and this binary in the venv), which the test says;
//! every other line runs as written.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::binary::{root, scratch, Outcome, BIN};

/// Runs the binary in `folder`.
fn agentsim_in(folder: &Path, args: &[&str]) -> Outcome {
    crate::binary::agentsim_in(folder, args, &[])
}

/// `script` run by bash in `folder`, with `env` and this build's binary first on `PATH`.
fn bash_in(folder: &Path, script: &str, env: &[(&str, String)]) -> Outcome {
    let started = std::time::Instant::now();
    let bin_dir = Path::new(BIN).parent().expect("the binary's folder");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("bash")
        .args(["-c", script])
        .current_dir(folder)
        .env("PATH", path)
        .env("HOME", folder.join(".home"))
        .envs(env.iter().map(|(key, value)| (*key, value.as_str())))
        .output()
        .expect("bash runs");
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// The scenario files of the repository's corpus, counted on disk.
fn scenario_files_on_disk() -> usize {
    fn count(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .expect("a folder of the corpus")
            .map(|entry| entry.expect("an entry").path())
            .map(|path| {
                if path.is_dir() {
                    count(&path)
                } else {
                    usize::from(path.extension().is_some_and(|extension| extension == "json"))
                }
            })
            .sum()
    }
    count(&root().join("scenarios"))
}

#[test]
fn packaging_run_without_a_path_judges_the_built_in_corpus_anywhere() {
    let folder = scratch("packaging", "no-checkout");
    let listed = agentsim_in(&folder, &["scenarios", "list"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let names: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(names.len(), scenario_files_on_disk(), "one built-in scenario per file");
    assert!(names.contains(&"wiring/walkthrough") && names.windows(2).all(|pair| pair[0] < pair[1]));
    let summary = format!("{} passed, 0 failed", names.len());
    let run = agentsim_in(&folder, &["run"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout.lines().last(), Some(summary.as_str()));
    let served = agentsim_in(&folder, &["run", "--impl", &format!("{BIN} serve")]);
    assert_eq!(served.code, 0, "{}{}", served.stdout, served.stderr);
    assert_eq!(served.stdout.lines().last(), Some(summary.as_str()));
    // The run judges: a mutant fails the same corpus.
    let mutant = agentsim_in(&folder, &["run", "poison", "--mutant", "poison-not-stored"]);
    assert_eq!(mutant.code, 1, "{}", mutant.stdout);
    let explored = agentsim_in(&folder, &["explore", "wiring", "--strategy", "random", "--seeds", "2"]);
    assert_eq!(explored.code, 0, "{}{}", explored.stdout, explored.stderr);
    assert!(
        std::fs::read_dir(&folder).expect("the folder").next().is_none(),
        "nothing written"
    );
}

#[test]
fn packaging_replay_commands_of_built_in_scenarios_work_without_a_checkout() {
    let folder = scratch("packaging", "replay");
    let run = agentsim_in(&folder, &["run", "poison", "--mutant", "poison-not-stored"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let replays: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|line| line.trim().strip_prefix("replay: "))
        .collect();
    assert!(replays.len() >= 2, "{}", run.stdout);
    for replay in replays.iter().take(3) {
        assert!(replay.starts_with("agentsim replay poison/"), "{replay}");
        let replayed = bash_in(&folder, replay, &[]);
        assert_eq!(replayed.code, 1, "{replay}: {}{}", replayed.stdout, replayed.stderr);
        assert!(replayed.stdout.contains("ROOT"), "{replay}: {}", replayed.stdout);
    }
    // A shrunk failure of a built-in scenario is written as an ordinary file, and replays.
    let shrunk = bash_in(
        &folder,
        "agentsim explore poison/disk-error-on-entry-2 --mutant poison-not-stored --seeds 3 --shrink-to shrunk",
        &[],
    );
    assert_eq!(shrunk.code, 1, "{}{}", shrunk.stdout, shrunk.stderr);
    let line = shrunk
        .stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("replay: agentsim replay shrunk/"))
        .unwrap_or_else(|| panic!("a replay of the shrunk file: {}", shrunk.stdout));
    assert!(folder
        .join("shrunk")
        .join(line.split(' ').next().unwrap_or_default())
        .is_file());
}

#[test]
fn packaging_export_writes_files_that_run_under_the_same_names() {
    let folder = scratch("packaging", "export");
    let exported = agentsim_in(&folder, &["scenarios", "export", "corpus", "wiring", "persist"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let from_files = agentsim_in(&folder, &["run", "corpus/wiring", "corpus/persist"]);
    let built_in = agentsim_in(&folder, &["run", "wiring", "persist"]);
    assert_eq!(from_files.code, 0, "{}", from_files.stdout);
    assert_eq!(
        from_files.stdout, built_in.stdout,
        "the same cases under the same names"
    );
    // In the repository, the corpus's own folders give the same report.
    let in_repository = crate::binary::agentsim(&["run", "scenarios/wiring", "scenarios/persist"], &[]);
    assert_eq!(in_repository.stdout, built_in.stdout);
    let whole = agentsim_in(&folder, &["run", "corpus"]);
    let names = |report: &str| report.lines().filter(|line| line.starts_with("ok ")).count();
    assert_eq!(names(&whole.stdout), names(&built_in.stdout));
    let walkthrough = folder.join("corpus/wiring/walkthrough.json");
    let shown = agentsim_in(&folder, &["scenarios", "show", "wiring/walkthrough"]);
    assert_eq!(std::fs::read_to_string(&walkthrough).expect("exported"), shown.stdout);
    // Again: nothing to write. A file changed since: refused, nothing written, unless --force.
    let again = agentsim_in(&folder, &["scenarios", "export", "corpus", "wiring"]);
    assert_eq!(again.code, 0);
    assert!(again.stderr.contains("wrote 0 of"), "{}", again.stderr);
    std::fs::write(&walkthrough, "{}").expect("a change");
    let listed = agentsim_in(&folder, &["scenarios", "list", "wiring"]);
    let other = listed
        .stdout
        .lines()
        .find(|name| *name != "wiring/walkthrough")
        .expect("another wiring scenario");
    let removed = folder.join(format!("corpus/{other}.json"));
    std::fs::remove_file(&removed).expect("an exported file");
    let refused = agentsim_in(&folder, &["scenarios", "export", "corpus", "wiring"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("corpus/wiring/walkthrough.json: exists with other contents"),
        "{}",
        refused.stderr
    );
    assert!(!removed.exists(), "a refused export writes nothing");
    let forced = agentsim_in(&folder, &["scenarios", "export", "corpus", "wiring", "--force"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(std::fs::read_to_string(&walkthrough).expect("rewritten"), shown.stdout);
}

#[test]
fn packaging_scenarios_refuse_unknown_names_and_folders_where_one_is_asked() {
    let folder = scratch("packaging", "names");
    let unknown = agentsim_in(&folder, &["scenarios", "show", "wiring/no-such"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("`wiring/no-such`: no built-in scenario"),
        "{}",
        unknown.stderr
    );
    let folder_asked = agentsim_in(&folder, &["scenarios", "show", "wiring"]);
    assert_eq!(folder_asked.code, 2);
    assert!(
        folder_asked.stderr.contains("is a folder of"),
        "{}",
        folder_asked.stderr
    );
    let listed = agentsim_in(&folder, &["scenarios", "list", "wiring/", "lab13"]);
    assert!(listed
        .stdout
        .lines()
        .all(|name| name.starts_with("wiring/") || name.starts_with("lab13/")));
    assert!(listed.stdout.lines().any(|name| name.starts_with("lab13/")));
    // replay takes one scenario: a built-in folder is refused as a folder on disk is.
    let replayed = agentsim_in(&folder, &["replay", "wiring"]);
    assert_eq!(replayed.code, 2, "{}", replayed.stdout);
    assert!(
        replayed
            .stderr
            .contains("wiring: a folder: replay takes one scenario file"),
        "{}",
        replayed.stderr
    );
    let missing = agentsim_in(&folder, &["run", "wiring/no-such"]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("agentsim scenarios list"), "{}", missing.stderr);
    // A file on disk wins over the built-in scenario of its name.
    std::fs::create_dir_all(folder.join("wiring")).expect("a folder");
    std::fs::write(folder.join("wiring/walkthrough.json"), "{\"version\": 1}").expect("a file");
    let shadowed = agentsim_in(&folder, &["run", "wiring/walkthrough.json"]);
    assert_eq!(shadowed.code, 2, "{}", shadowed.stdout);
    assert!(
        shadowed.stderr.contains("wiring/walkthrough.json:"),
        "{}",
        shadowed.stderr
    );
}

/// The `"version"` of a package.json.
fn json_version(relative: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(root().join(relative)).expect("a package.json");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn packaging_versions_are_the_crate_s() {
    let version = env!("CARGO_PKG_VERSION");
    let main = json_version("adapters/sdk/js/package.json");
    let platform = json_version("packages/npm/cli-linux-x64/package.json");
    assert_eq!(main["name"], "agentsim");
    assert_eq!(main["version"], version);
    assert_eq!(platform["version"], version);
    assert_eq!(
        main["optionalDependencies"][platform["name"].as_str().expect("a name")],
        version
    );
    assert_eq!(main["exports"]["./adapter"]["types"], "./agentsim-adapter.d.ts");
    for file in main["files"].as_array().expect("files") {
        let file = file.as_str().expect("a path");
        assert!(
            root().join("adapters/sdk/js").join(file).is_file(),
            "{file} is packed but missing"
        );
    }
    let pyproject = std::fs::read_to_string(root().join("packages/pypi/pyproject.toml")).expect("pyproject");
    assert!(
        pyproject.contains(&format!("\nversion = \"{version}\"\n")),
        "pyproject's version"
    );
    assert!(pyproject.contains("\nbindings = \"bin\"\n"));
    // The action installs what its caller names: never the registry's `agentsim`, an unrelated
    // package today.
    let action = std::fs::read_to_string(root().join("action.yml")).expect("action.yml");
    let (inputs, _) = read_action(&action);
    assert!(inputs
        .iter()
        .any(|(name, required, default)| name == "package" && *required && default.is_none()));
    // The documents install this version's files.
    for document in ["README.md", "docs/implementers-guide.md"] {
        let text = std::fs::read_to_string(root().join(document)).expect("a document");
        let files = format!("./agentsim-{version}.tgz ./agentsim-cli-linux-x64-{version}.tgz");
        assert!(text.contains(&files), "{document}");
    }
}

/// The guide's install lines, and what replaces each without the packed packages: what the
/// package installs, put in place (the npm package's files and this build's binary in
/// `node_modules`; the Python SDK's package and this binary in the venv).
fn install_lines() -> [(String, String); 2] {
    let version = env!("CARGO_PKG_VERSION");
    let sdk = root().join("adapters/sdk/js");
    let package = json_version("adapters/sdk/js/package.json");
    let mut files: Vec<String> = package["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|file| format!("--parents {}", file.as_str().expect("a path")))
        .collect();
    files.push("package.json".into());
    let copies: Vec<String> = files
        .iter()
        .map(|file| format!("(cd {} && cp {file} \"$OLDPWD/node_modules/agentsim/\")", sdk.display()))
        .collect();
    [
        (
            format!("npm i -D ./agentsim-{version}.tgz ./agentsim-cli-linux-x64-{version}.tgz"),
            format!(
                "mkdir -p node_modules/agentsim node_modules/@agentsim/cli-linux-x64/bin node_modules/.bin && {} && ln -s {BIN} node_modules/@agentsim/cli-linux-x64/bin/agentsim && ln -s ../agentsim/bin/agentsim.mjs node_modules/.bin/agentsim",
                copies.join(" && ")
            ),
        ),
        (
            format!("pip install ./agentsim-{version}-*.whl"),
            format!(
                "ln -s {} \"$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')/agentsim_adapter\" && ln -s {BIN} \"$VIRTUAL_ENV/bin/agentsim\"",
                root().join("packages/pypi/python/agentsim_adapter").display()
            ),
        ),
    ]
}

/// Copies the packed packages into `folder`, as an implementer copies them into a project.
fn copy_packages(dir: &Path, folder: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the packed packages") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().expect("a name").to_string_lossy().into_owned();
        if name.starts_with("agentsim-") {
            std::fs::copy(&path, folder.join(&name)).expect("copied");
            names.push(name);
        }
    }
    names.sort();
    names
}

/// The packed packages' folder, when `.ci/run` gives it.
fn packages() -> Option<PathBuf> {
    let dir = std::env::var_os("AGENTSIM_PACKAGES").map(PathBuf::from);
    if dir.is_none() {
        eprintln!("packaging: AGENTSIM_PACKAGES is not set: the install lines are replaced by what the packages install (.ci/run runs them with the packed packages)");
    }
    dir
}

/// The fenced `sh` blocks of `section`.
fn sh_blocks(section: &str) -> Vec<String> {
    section
        .split("```sh\n")
        .skip(1)
        .map(|rest| rest.split("```").next().expect("a closed block").to_string())
        .collect()
}

#[test]
fn packaging_the_guide_s_first_steps_run_as_written() {
    let guide = std::fs::read_to_string(root().join("docs/implementers-guide.md")).expect("the guide");
    let section = guide
        .split("## 3. Copy the template and run it\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## 4.").next())
        .expect("the guide's section 3");
    let blocks = sh_blocks(section);
    assert!(
        blocks.len() >= 3,
        "an install block per language, then the runs: {blocks:?}"
    );
    let packages = packages();
    let installs = install_lines();
    let runs: Vec<(&str, i32)> = blocks[2..]
        .iter()
        .flat_map(|block| block.lines())
        .filter(|line| line.starts_with("agentsim "))
        .map(|line| match line.split_once("# exits ") {
            Some((command, code)) => (command.trim_end(), code.trim().parse().expect("an exit code")),
            None => (line, 0),
        })
        .collect();
    assert!(runs.len() >= 3, "the section's runs: {runs:?}");
    for (language, block) in ["JavaScript", "Python"].iter().zip(&blocks[..2]) {
        let mut install = block.clone();
        let installing: Vec<_> = installs
            .iter()
            .filter(|(line, _)| block.contains(line.as_str()))
            .collect();
        assert_eq!(
            installing.len(),
            1,
            "{language}: the block installs this version's package: {block}"
        );
        let folder = scratch("packaging", &format!("guide-{language}"));
        match &packages {
            Some(dir) => drop(copy_packages(dir, &folder)),
            None => install = install.replace(&installing[0].0, &installing[0].1),
        }
        let mut script = format!("set -e\n{install}set +e\n");
        for (command, _) in &runs {
            script.push_str(&format!("{command}\necho \"== exit $?\"\n"));
        }
        let outcome = bash_in(&folder, &script, &[("npm_config_offline", "true".into())]);
        assert_eq!(outcome.code, 0, "{language}: {}{}", outcome.stdout, outcome.stderr);
        let codes: Vec<i32> = outcome
            .stdout
            .lines()
            .filter_map(|line| line.strip_prefix("== exit "))
            .map(|code| code.parse().expect("a number"))
            .collect();
        let expected: Vec<i32> = runs.iter().map(|(_, code)| *code).collect();
        assert_eq!(codes, expected, "{language}: {}{}", outcome.stdout, outcome.stderr);
        assert!(!outcome.stdout.contains("BROKEN"), "{language}: {}", outcome.stdout);
        // The whole corpus ran: the last run's counts add up to every scenario.
        assert!(
            outcome.stdout.contains(" not applicable\n"),
            "{language}: {}",
            outcome.stdout
        );
    }
}

/// One step of a composite action, as far as the test reads it.
#[derive(Debug, Default)]
struct Step {
    name: String,
    condition: Option<String>,
    env: Vec<(String, String)>,
    run: String,
}

/// An input of the action: its name, whether it is required, its default.
type Input = (String, bool, Option<String>);

/// The inputs and steps of action.yml. The reader knows the file's
/// shape only (two-space indentation, `run: |` blocks); anything else in it fails the test.
fn read_action(text: &str) -> (Vec<Input>, Vec<Step>) {
    let unquote = |value: &str| value.trim().trim_matches('"').to_string();
    let mut inputs: Vec<Input> = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut part = "";
    let mut in_env = false;
    let mut in_run = false;
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() && !in_run {
            continue;
        }
        if !line.starts_with(' ') {
            part = line.trim_end_matches(|c: char| c != ':');
            in_run = false;
            continue;
        }
        match part {
            "inputs:" => {
                if let Some(name) = line.strip_prefix("  ").filter(|rest| !rest.starts_with(' ')) {
                    inputs.push((name.trim_end_matches(':').to_string(), false, None));
                } else if let Some(required) = line.strip_prefix("    required: ") {
                    inputs.last_mut().expect("an input").1 = required == "true";
                } else if let Some(default) = line.strip_prefix("    default: ") {
                    inputs.last_mut().expect("an input").2 = Some(unquote(default));
                }
            }
            "runs:" => {
                if in_run && (line.starts_with("        ") || line.trim().is_empty()) {
                    let step = steps.last_mut().expect("a step");
                    step.run.push_str(line.get(8..).unwrap_or_default());
                    step.run.push('\n');
                    continue;
                }
                in_run = false;
                if let Some(name) = line.strip_prefix("    - name: ") {
                    steps.push(Step {
                        name: name.to_string(),
                        ..Step::default()
                    });
                    in_env = false;
                } else if let Some(condition) = line.strip_prefix("      if: ") {
                    steps.last_mut().expect("a step").condition = Some(condition.to_string());
                } else if line == "      env:" {
                    in_env = true;
                } else if line == "      run: |" {
                    in_run = true;
                } else if let (true, Some(pair)) = (in_env, line.strip_prefix("        ")) {
                    let (key, value) = pair.split_once(": ").expect("KEY: value");
                    steps
                        .last_mut()
                        .expect("a step")
                        .env
                        .push((key.to_string(), unquote(value)));
                } else {
                    in_env = false;
                    let known = ["  using: composite", "  steps:", "      shell: bash"];
                    assert!(
                        known.contains(&line) || line.starts_with("      working-directory: "),
                        "action.yml: a line the test does not read: `{line}`"
                    );
                }
            }
            _ => {}
        }
    }
    (inputs, steps)
}

/// `text` with every `${{ inputs.NAME }}` replaced by the input's value.
fn substitute(text: &str, values: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (name, value) in values {
        out = out.replace(&format!("${{{{ inputs.{name} }}}}"), value);
    }
    assert!(!out.contains("${{"), "an expression the test does not know: {out}");
    out
}

/// Runs the action's steps as GitHub runs a composite action's bash steps (`bash -e -o
/// pipefail`, `GITHUB_PATH` read after each), with `given` inputs over the defaults; the exit
/// code of each step that ran.
fn run_action(folder: &Path, given: &[(&str, String)], packages: Option<&Path>) -> Vec<(String, i32)> {
    let text = std::fs::read_to_string(root().join("action.yml")).expect("action.yml");
    let (inputs, steps) = read_action(&text);
    let values: Vec<(String, String)> = inputs
        .iter()
        .map(|(name, _, default)| {
            let value = given
                .iter()
                .find(|(given, _)| given == name)
                .map(|(_, value)| value.clone());
            (name.clone(), value.or(default.clone()).unwrap_or_default())
        })
        .collect();
    let runner_temp = folder.join("runner-temp");
    std::fs::create_dir_all(&runner_temp).expect("a folder");
    let github_path = folder.join("github-path");
    std::fs::write(&github_path, "").expect("GITHUB_PATH");
    let mut codes = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        if let Some(condition) = &step.condition {
            let name = condition
                .strip_prefix("inputs.")
                .and_then(|rest| rest.strip_suffix(" != ''"))
                .unwrap_or_else(|| panic!("a condition the test does not read: {condition}"));
            let value = &values
                .iter()
                .find(|(input, _)| input == name)
                .expect("a declared input")
                .1;
            if value.is_empty() {
                continue;
            }
        }
        if index == 0 && packages.is_none() {
            // The install step needs the packed packages; this build's binary is on the PATH.
            assert!(step.run.contains("npm install"), "the first step installs the kit");
            continue;
        }
        let mut env: Vec<(&str, String)> = step
            .env
            .iter()
            .map(|(key, value)| (key.as_str(), substitute(value, &values)))
            .collect();
        let added: Vec<String> = std::fs::read_to_string(&github_path)
            .expect("GITHUB_PATH")
            .lines()
            .map(String::from)
            .collect();
        let bin_dir = Path::new(BIN).parent().expect("the binary's folder");
        let mut path: Vec<String> = added.into_iter().rev().collect();
        if packages.is_none() {
            path.push(bin_dir.display().to_string());
        }
        path.push(std::env::var("PATH").unwrap_or_default());
        env.push(("RUNNER_TEMP", runner_temp.display().to_string()));
        env.push(("GITHUB_PATH", github_path.display().to_string()));
        env.push(("npm_config_offline", "true".into()));
        let output = Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &step.run])
            .current_dir(folder)
            .env("HOME", folder.join(".home"))
            .envs(env.iter().map(|(key, value)| (*key, value.as_str())))
            .env("PATH", path.join(":"))
            .output()
            .expect("bash runs");
        let code = output.status.code().unwrap_or(-1);
        if code != 0 {
            eprintln!(
                "{}: exit {code}\n{}{}",
                step.name,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        codes.push((step.name.clone(), code));
    }
    codes
}

#[test]
fn packaging_the_action_runs_its_steps_as_written() {
    let text = std::fs::read_to_string(root().join("action.yml")).expect("action.yml");
    let (inputs, steps) = read_action(&text);
    let names: Vec<&str> = inputs.iter().map(|(name, _, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "adapter",
            "expect",
            "strategy",
            "seeds",
            "scenarios",
            "package",
            "working-directory"
        ]
    );
    for (name, required, default) in &inputs {
        assert!(*required != default.is_some(), "{name}: required, or with a default");
        assert!(
            text.contains(&format!("${{{{ inputs.{name} }}}}")) || text.contains(&format!("inputs.{name} ")),
            "{name} is used"
        );
    }
    assert_eq!(steps.len(), 3, "{steps:?}");
    let packages = packages();
    // The adapter: the reference with its error texts worded otherwise (WIRE-9 fails), and
    // its deviations recorded from a run, as an implementer records them.
    let folder = scratch("packaging", "action");
    // The tarballs, committed to the caller's repository: named relative to it.
    let package = |folder: &Path| {
        packages.as_ref().map(|dir| {
            copy_packages(dir, folder)
                .into_iter()
                .filter(|name| name.ends_with(".tgz"))
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    let adapter = "agentsim serve --mutant error-texts-reworded".to_string();
    let recorded = bash_in(
        &folder,
        &format!(
            "set -e\nagentsim run --impl \"{adapter}\" wiring --format json > report.json || true\n\
             name=$(python3 -c 'import json; print(json.load(open(\"report.json\"))[\"implementation\"].replace(\" \", \"-\"))')\n\
             python3 {} \"$name\" report.json > expected.json",
            root().join("adapters/sdk/python/record_expectations.py").display()
        ),
        &[],
    );
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let mut given = vec![
        ("adapter", adapter.clone()),
        ("scenarios", "wiring".to_string()),
        ("expect", "expected.json".to_string()),
        ("strategy", "random".to_string()),
        ("seeds", "2".to_string()),
    ];
    given.extend(package(&folder).map(|package| ("package", package)));
    let codes = run_action(&folder, &given, packages.as_deref());
    let ran: Vec<i32> = codes.iter().map(|(_, code)| *code).collect();
    assert_eq!(ran, vec![0; 2 + usize::from(packages.is_some())], "{codes:?}");
    // Without the expectations the same adapter fails the run step: the step can fail.
    let bare = scratch("packaging", "action-bare");
    let mut given = vec![("adapter", adapter), ("scenarios", "wiring".to_string())];
    given.extend(package(&bare).map(|package| ("package", package)));
    let codes = run_action(&bare, &given, packages.as_deref());
    assert_eq!(codes.last().map(|(_, code)| *code), Some(1), "{codes:?}");
}

#[test]
fn packaging_the_npm_launcher_passes_the_binary_through() {
    let folder = scratch("packaging", "launcher");
    let package = folder.join("node_modules/agentsim");
    std::fs::create_dir_all(package.join("bin")).expect("a folder");
    let sdk = root().join("adapters/sdk/js");
    for file in ["package.json", "bin/agentsim.mjs"] {
        std::fs::copy(sdk.join(file), package.join(file)).expect("copied");
    }
    let launcher = package.join("bin/agentsim.mjs");
    let launch = |args: &[&str]| {
        let output = Command::new("node")
            .arg(&launcher)
            .args(args)
            .current_dir(&folder)
            .env_remove("AGENTSIM_BINARY")
            .output()
            .expect("node runs");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    // Without the platform package: a message naming it, and 127 as a shell's missing command.
    let (code, _, stderr) = launch(&["--version"]);
    assert_eq!(code, 127, "{stderr}");
    assert!(
        stderr.contains("@agentsim/cli-") && stderr.contains("is not installed"),
        "{stderr}"
    );
    // With it: arguments, output and exit codes are the binary's.
    let platform = folder.join("node_modules/@agentsim/cli-linux-x64/bin");
    std::fs::create_dir_all(&platform).expect("a folder");
    std::os::unix::fs::symlink(BIN, platform.join("agentsim")).expect("linked");
    let (code, stdout, _) = launch(&["--version"]);
    assert_eq!(
        (code, stdout.trim()),
        (0, format!("agentsim {}", env!("CARGO_PKG_VERSION")).as_str())
    );
    assert_eq!(launch(&["run", "poison", "--mutant", "poison-not-stored"]).0, 1);
    assert_eq!(launch(&["scenarios", "show", "no-such"]).0, 2);
    // A SIGTERM to the launcher reaches the kit, which stops and says so (exit 143).
    let child = Command::new("node")
        .arg(&launcher)
        .args(["explore", "--seeds", "100000"])
        .current_dir(&folder)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node runs");
    // The kit is running once the launcher's child is the binary, exploring (its handlers are
    // installed before it loads the corpus); then some more time, for a loaded machine.
    let started = std::time::Instant::now();
    while !kit_child_of(child.id()) && started.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    let sent = unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(sent, 0);
    let output = child.wait_with_output().expect("the launcher ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
}

/// Whether a child of `parent` runs the kit's binary (Linux's /proc).
fn kit_child_of(parent: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid ...`: the name may hold spaces, the fields after it do not.
        let Some((name, rest)) = stat.split_once(" (").and_then(|(_, rest)| rest.rsplit_once(") ")) else {
            return false;
        };
        name == "agentsim" && rest.split(' ').nth(1) == Some(parent.to_string().as_str())
    })
}
