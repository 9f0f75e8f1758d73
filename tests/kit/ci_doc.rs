//! docs/ci.md stays honest: every `agentsim ...` command in its code blocks parses with the
//! current command line (`agentsim::cli::parse_args`), after the recipes' variables get sample
//! values. The recipes must keep sharding, JUnit, HTML pages and `--expect` in them.

use std::path::Path;

/// Sample values of the variables the recipes use; an unknown variable fails the test.
const VARIABLES: &[(&str, &str)] = &[
    ("SHARD", "2"),
    ("CI_NODE_INDEX", "2"),
    ("CI_NODE_TOTAL", "4"),
    ("ADAPTER", "node adapters/pi/adapter.mjs"),
    ("SCENARIOS", "scenarios/"),
    ("SEEDS", "2000"),
];

/// The `agentsim` commands in the fenced code blocks, continuation lines joined; [`words`]
/// cuts each at the first shell operator (`>`, `|`, `&&`, `;`).
fn commands(markdown: &str) -> Vec<String> {
    crate::binary::fenced_commands(markdown)
}

/// Shell words of `command` up to its first operator: quotes removed, `$VAR` and `${VAR}`
/// expanded from [`VARIABLES`].
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(character) = chars.next() {
        match (quote, character) {
            (Some(open), c) if c == open => quote = None,
            (Some('\''), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(character);
                started = true;
            }
            (_, '$') => {
                let braced = chars.peek() == Some(&'{');
                if braced {
                    chars.next();
                }
                let mut name = String::new();
                while let Some(&next) = chars.peek() {
                    if next.is_ascii_alphanumeric() || next == '_' {
                        name.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if braced {
                    assert_eq!(chars.next(), Some('}'), "`{command}`: an unclosed ${{");
                }
                let value = VARIABLES
                    .iter()
                    .find(|(known, _)| *known == name)
                    .unwrap_or_else(|| panic!("`{command}`: no sample value for ${name}"))
                    .1;
                word.push_str(value);
                started = true;
            }
            (None, '>' | '|' | ';' | '&') => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (_, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    assert_eq!(quote, None, "`{command}`: an unclosed quote");
    if started {
        words.push(word);
    }
    words
}

/// The document at `relative` and its `agentsim` commands, each checked to parse.
fn parsed_commands(relative: &str) -> (String, Vec<String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let markdown = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{relative} exists"));
    let commands = commands(&markdown);
    assert!(
        commands.len() >= 8,
        "{relative}: too few agentsim commands found: {commands:?}"
    );
    for command in &commands {
        let words = words(command);
        agentsim::cli::parse_args(&words)
            .unwrap_or_else(|error| panic!("{relative}: `{command}` does not parse:\n{error}"));
    }
    (markdown, commands)
}

#[test]
fn ci_doc_commands_parse_with_the_current_cli() {
    let (markdown, commands) = parsed_commands("docs/ci.md");
    // The recipes cover what the issue asks of them.
    let all = commands.join("\n");
    for needle in [
        "--shard",
        "--format junit",
        "--html-dir",
        "--expect",
        "--impl",
        "--html ",
    ] {
        assert!(all.contains(needle), "no command of docs/ci.md uses {needle}");
    }
    assert!(markdown.contains("## GitHub Actions") && markdown.contains("## GitLab CI"));
}

#[test]
fn ci_doc_parser_rejects_an_unknown_flag() {
    // The check can fail: a flag the CLI does not have is refused.
    let unknown = words("agentsim explore scenarios/ --shards 2/4");
    assert!(agentsim::cli::parse_args(&unknown).is_err());
    assert_eq!(
        words("agentsim run --impl \"$ADAPTER\" x > out.xml"),
        ["agentsim", "run", "--impl", "node adapters/pi/adapter.mjs", "x"]
    );
}

#[test]
fn implementers_guide_commands_parse_with_the_current_cli() {
    let (_, commands) = parsed_commands("docs/implementers-guide.md");
    // The guide walks through what an implementer needs, from one scenario to the matrix.
    let all = commands.join("\n");
    for needle in [
        "--impl",
        "--check-determinism",
        "--jobs",
        "--expect",
        "--format markdown",
        "replay ",
    ] {
        assert!(
            all.contains(needle),
            "no command of the implementers' guide uses {needle}"
        );
    }
}

/// The implementers' guide's CI job (section 12), executed exactly as printed: its step's `run:`
/// script, taken from the guide, runs in a fresh folder with the corpus and an expectations file,
/// `agentsim` on the PATH and `ADAPTER` a runtime with recorded deviations (the reference served
/// over the protocol with its error texts worded otherwise, whose WIRE-9 failures are listed as
/// one cause). Every command of the job must pass: a recipe that is red for a runtime that meets
/// its recorded expectations is wrong.
#[test]
fn implementers_guide_ci_job_runs_green_as_printed() {
    use crate::binary::{root, scratch, BIN};
    let guide = std::fs::read_to_string(root().join("docs/implementers-guide.md")).expect("the guide");
    let section = guide
        .split("## 12. Continuous integration\n")
        .nth(1)
        .expect("the guide has its CI section");
    let block = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the CI section has a yaml block");
    // The step that decides the job: its `run: |` lines, their indentation removed.
    let step = block
        .split("- name: the implementation against its expected deviations\n")
        .nth(1)
        .expect("the job has the step the guide describes");
    let mut lines = step.lines();
    assert!(
        lines.next().is_some_and(|line| line.trim() == "run: |"),
        "the step runs a script"
    );
    let body: Vec<&str> = lines.take_while(|line| line.starts_with("          ")).collect();
    assert!(body.len() >= 3, "the step's script: {body:?}");
    let script: String = body.iter().map(|line| format!("{}\n", line.trim_start())).collect();
    let folder = scratch("ci_doc", "guide-job");
    std::os::unix::fs::symlink(root().join("scenarios"), folder.join("scenarios")).expect("scenarios linked");
    std::fs::create_dir_all(folder.join("expectations")).expect("a folder");
    let adapter = "agentsim serve --mutant error-texts-reworded";
    // Its deviations, recorded from a run: every failing pair, under one cause.
    let report = crate::binary::agentsim(
        &[
            "run",
            "--impl",
            &format!("{BIN} serve --mutant error-texts-reworded"),
            "scenarios/",
            "--format",
            "json",
        ],
        &[],
    );
    let report: serde_json::Value = serde_json::from_str(&report.stdout).expect("a JSON report");
    let mut pairs: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for case in report["results"].as_array().expect("results") {
        for violation in case["violations"].as_array().into_iter().flatten() {
            let rule = violation["rule"].as_str().expect("a rule").to_string();
            let scenario = case["name"].as_str().expect("a name").to_string();
            let scenarios = pairs.entry(rule).or_default();
            if !scenarios.contains(&scenario) {
                scenarios.push(scenario);
            }
        }
    }
    assert!(!pairs.is_empty(), "the worded-otherwise runtime deviates");
    let expectations = serde_json::json!({
        "implementation": "my-runtime-1.0",
        "causes": [{
            "id": "error-texts",
            "verdict": "choice",
            "reason": "the executor and the hooks word their errors their own way",
            "source": {"file": "src/executor.rs", "function": "reword", "line": 1},
            "pairs": pairs,
        }],
    });
    std::fs::write(
        folder.join("expectations/my-runtime-1.0.json"),
        serde_json::to_string_pretty(&expectations).expect("JSON"),
    )
    .expect("written");
    let bin_dir = std::path::Path::new(BIN).parent().expect("the binary's folder");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let output = std::process::Command::new("sh")
        .args(["-e", "-c", &script])
        .current_dir(&folder)
        .env("PATH", path)
        .env("ADAPTER", adapter)
        .output()
        .expect("sh runs");
    assert!(
        output.status.success(),
        "the guide's CI job failed ({}):\n{script}\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
            .chars()
            .rev()
            .take(2000)
            .collect::<String>()
            .chars()
            .rev()
            .collect::<String>(),
        String::from_utf8_lossy(&output.stderr)
    );
    let matrix = std::fs::read_to_string(folder.join("conformance.md")).expect("the job writes its matrix");
    assert!(matrix.contains("RESTORE-1"), "the matrix lists the rules");
    assert!(
        folder.join("pages/impl/index.html").exists(),
        "the job writes its pages' index"
    );
}
