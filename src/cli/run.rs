//! `agentsim run`: the corpus on the in-process reference (or a mutant of it), or on an
//! implementation behind the adapter protocol (`--impl CMD`, through the worker pool of
//! `pool.rs`); the report in its four formats, the `--expect` judgement, and `serve`.

use std::path::PathBuf;
use std::time::Duration;

use crate::check;
use crate::deviations::{self, Comparison};
use crate::implementation::Implementation;
use crate::protocol::wire::Hello;
use crate::run::{CaseReport, Run, Verdict};
use crate::sim::StrategyKind;
use crate::suite;
use crate::zoo::Mutant;

use super::pool::Pool;
use super::{exit_code, matrix, report, Format, EXIT_BAD_INPUT, EXIT_PASSED, EXIT_VIOLATION};

/// What `agentsim run` was asked to do.
pub(super) struct RunArgs {
    pub paths: Vec<PathBuf>,
    pub strategy: StrategyKind,
    pub seed: u64,
    pub format: Format,
    pub mutant: Option<Mutant>,
    pub implementation: Option<String>,
    pub step_timeout: Duration,
    pub expect: Option<PathBuf>,
    pub html_dir: Option<PathBuf>,
    /// Where `--record` writes one recording per case.
    pub record: Option<PathBuf>,
    /// Adapter processes run in parallel (`--impl` only).
    pub jobs: usize,
    /// Run every scenario in a fresh and in a reused adapter process and compare the traces.
    pub check_determinism: bool,
    /// The rules that judge (`--rules`, `--level`).
    pub selection: check::Selection,
    /// Show the raw first divergence (`--raw-divergence`).
    pub raw_divergence: bool,
}

/// `agentsim run`: runs the corpus, prints the report, returns the exit code.
pub(super) fn run(args: RunArgs) -> u8 {
    let corpus = match suite::load_or_built_in(&args.paths) {
        Ok(corpus) => corpus,
        Err(error) => {
            eprintln!("agentsim: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let expectations = match &args.expect {
        Some(path) => match deviations::load(path) {
            Ok(file) => Some((path.clone(), file)),
            Err(error) => {
                eprintln!("agentsim: {error}");
                return EXIT_BAD_INPUT;
            }
        },
        None => None,
    };
    if args.check_determinism && args.implementation.is_none() {
        eprintln!("agentsim: --check-determinism judges an implementation: it needs --impl CMD");
        return EXIT_BAD_INPUT;
    }
    let implementation = match &args.implementation {
        Some(command) => Implementation::adapter(command.clone(), args.step_timeout),
        None => Implementation::reference(),
    }
    .with_mutant(args.mutant);
    let pool = Pool {
        template: Run::at(PathBuf::new())
            .seeded(args.strategy, args.seed)
            .on(&implementation)
            .judged_by(&args.selection),
        check_determinism: args.check_determinism,
        raw_divergence: args.raw_divergence,
    };
    let (reports, hello) = match &args.implementation {
        Some(_) => pool.run(&corpus, args.jobs),
        None => (
            corpus
                .iter()
                .map(|loaded| pool.run_of(loaded).execute(loaded))
                .collect(),
            None,
        ),
    };
    // Deviations of rules that do not judge this run are neither confirmed nor stale.
    let expectations = expectations.map(|(path, mut file)| {
        file.retain_rules(|rule| rule.starts_with("broken:") || args.selection.judges(rule));
        (path, file)
    });
    let comparison = expectations
        .as_ref()
        .map(|(_, file)| deviations::compare(file, &reports));
    let implementation = implementation_name(&args, hello.as_ref());
    let text = match args.format {
        Format::Human => {
            let mut text = report::human_cases(&reports);
            text.push_str(&report::corpus_summary(
                &reports,
                &args.selection,
                hello.as_ref(),
                &corpus,
            ));
            // The expectation lines go before the summary, which stays the last line.
            if let (Some((path, file)), Some(comparison)) = (&expectations, &comparison) {
                for line in report::expectation_lines(path, file, comparison, &implementation) {
                    text.push_str(&line);
                    text.push('\n');
                }
            }
            text.push_str(&report::summary(&reports));
            text
        }
        Format::Json => {
            let mut value = report::json_judged(
                &reports,
                args.strategy,
                args.seed,
                &args.selection,
                hello.as_ref(),
                &corpus,
            );
            // Every JSON report names its implementation (`agentsim dashboard` reads it).
            value["implementation"] = serde_json::json!(implementation);
            if let (Some((path, file)), Some(comparison)) = (&expectations, &comparison) {
                value["expectations"] = report::expectation_json(path, file, comparison);
            }
            report::pretty(&value)
        }
        Format::Junit => report::junit(&reports),
        Format::Markdown => {
            let header = matrix::Header {
                implementation: implementation.clone(),
                command: args.implementation.clone(),
                paths: args.paths.clone(),
                strategy: args.strategy,
                seed: args.seed,
                rules: corpus
                    .iter()
                    .map(|loaded| (loaded.name.clone(), loaded.scenario.rules.clone()))
                    .collect(),
            };
            let expectation = match (&expectations, &comparison) {
                (Some((path, file)), Some(comparison)) => {
                    Some(report::expectation_lines(path, file, comparison, &implementation))
                }
                _ => None,
            };
            matrix::markdown(&reports, &header, expectation.as_deref())
        }
    };
    print!("{text}");
    if let Some(dir) = &args.html_dir {
        if let Err(code) = super::report_pages(dir, crate::html::write_run_pages(dir, &corpus, &reports)) {
            return code;
        }
    }
    if let Some(dir) = &args.record {
        match super::recorded::write_recordings(dir, &corpus, &reports) {
            Ok(count) => eprintln!("agentsim: {count} recordings written to {}", dir.display()),
            Err(code) => return code,
        }
    }
    match &comparison {
        Some(comparison) => exit_code_expected(&reports, comparison),
        None => exit_code(&reports),
    }
}

/// `agentsim serve`: the reference as an adapter on stdin/stdout, with a mutant of the zoo
/// around it when one is named.
pub(super) fn serve(mutant: Option<Mutant>, protocol: u32) -> u8 {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    match crate::protocol::serve::serve(stdin, stdout, mutant, protocol) {
        Ok(()) => EXIT_PASSED,
        Err(error) => {
            eprintln!("agentsim serve: {error} ({})", error.code());
            EXIT_BAD_INPUT
        }
    }
}

/// The exit code with `--expect`: rule failures count only when they differ from the file.
fn exit_code_expected(reports: &[CaseReport], comparison: &Comparison) -> u8 {
    // Rule failures and listed broken verdicts are judged by the comparison alone.
    let listed_broken = |report: &CaseReport| match &report.verdict {
        Verdict::Broken(failure) => comparison
            .confirmed
            .iter()
            .any(|pair| pair.scenario == report.name && pair.rule == deviations::broken_rule(failure)),
        _ => false,
    };
    let others: Vec<CaseReport> = reports
        .iter()
        .filter(|report| report.verdict != Verdict::Failed && !listed_broken(report))
        .cloned()
        .collect();
    let code = exit_code(&others);
    if comparison.holds() {
        code
    } else {
        code.max(EXIT_VIOLATION)
    }
}

/// `name version` from the adapter's hello; the reference's own name in process.
fn implementation_name(args: &RunArgs, hello: Option<&Hello>) -> String {
    match (&args.implementation, hello) {
        (Some(_), Some(hello)) => match args.mutant {
            Some(mutant) => format!("{}+{}", hello.implementation, mutant.name()),
            None => hello.implementation.to_string(),
        },
        (Some(_), None) => "(the adapter never said hello)".to_string(),
        (None, _) => {
            let mut hello = crate::protocol::serve::hello(args.mutant);
            hello.implementation.name.push_str(" (in process)");
            hello.implementation.to_string()
        }
    }
}
