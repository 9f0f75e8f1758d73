//! The scenario suite: one libtest-mimic trial per file under `scenarios/`.
//!
//! Each trial runs its scenario twice on the reference under the canonical (scripted)
//! schedule, demands byte-identical traces, checks every rule and the scenario's expectations,
//! and compares the rendered trace with its golden snapshot in `golden/` (same path as the
//! scenario). `cargo test --test scenarios -- NAME` runs one; `-- --list` lists them.
//! New or changed goldens: `INSTA_UPDATE=always cargo test --test scenarios`, then review.

use std::path::{Path, PathBuf};

use agentsim::implementation::Implementation;
use agentsim::run::{CaseReport, Run, Verdict};
use agentsim::sim::StrategyKind;
use agentsim::suite;
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let arguments = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = match suite::load_corpus(&[root.join("scenarios")]) {
        Ok(corpus) => corpus,
        Err(error) => {
            eprintln!("scenario corpus: {error}");
            std::process::exit(2);
        }
    };
    let trials = corpus
        .into_iter()
        .map(|loaded| {
            let name = loaded.name.clone();
            Trial::test(name, move || run_trial(&loaded))
        })
        .collect();
    libtest_mimic::run(&arguments, trials).exit();
}

fn run_trial(loaded: &agentsim::scenario::LoadedScenario) -> Result<(), Failed> {
    let first = Run::of(loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::reference())
        .execute(loaded);
    let second = Run::of(loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::reference())
        .execute(loaded);
    let render = |case: &CaseReport| {
        case.outcome
            .as_ref()
            .map(|outcome| outcome.trace.render())
            .unwrap_or_default()
    };
    let trace = render(&first);
    if trace != render(&second) {
        return Err("nondeterminism: two runs of the same scenario gave different traces".into());
    }
    match &first.verdict {
        Verdict::Passed => {}
        Verdict::Failed => {
            let mut message = String::from("rule violations:\n");
            for violation in &first.violations {
                message.push_str(&format!(
                    "  {} {:?} {}\n",
                    violation.rule, violation.lines, violation.message
                ));
            }
            message.push_str(&format!("replay: {}", first.replay_command()));
            return Err(message.into());
        }
        Verdict::BadScenario(error) => return Err(format!("bad scenario: {error}").into()),
        Verdict::Broken(failure) => return Err(format!("subject broken: {failure}").into()),
        Verdict::NotApplicable { reason } => return Err(format!("not applicable on the reference: {reason}").into()),
    }
    let (folder, file) = golden_location(&loaded.name);
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(folder);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_input_file(&loaded.path);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        settings.bind(|| insta::assert_snapshot!(file, trace));
    }));
    outcome.map_err(|_| Failed::from(format!("golden trace differs: golden/{}.snap", loaded.name)))
}

/// `golden/<folder>/` and the file stem for a scenario named `<folder>/<stem>`.
fn golden_location(name: &str) -> (PathBuf, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden");
    match name.rsplit_once('/') {
        Some((folder, stem)) => (root.join(folder), stem.to_string()),
        None => (root, name.to_string()),
    }
}
