//! `run` and `replay` against an implementation behind the adapter protocol (`--impl CMD`),
//! the `--expect` judgement, and `serve`.
//!
//! With `--impl`, `--jobs` workers each drive one adapter process (`protocol::ExternalSubject`,
//! reused across scenarios when the adapter speaks protocol 2) and, in process, the reference
//! under the same strategy and seed: the reference's trace is what the implementation's is
//! diffed against (`protocol::diff`). `--check-determinism` runs each scenario twice, in a
//! fresh and in a reused process, and compares the traces. Without `--impl` the cases
//! run on the in-process reference as before; `--expect` and `--format markdown` work for both.

use std::path::PathBuf;
use std::time::Duration;

use crate::check::{self, Violation};
use crate::deviations::{self, Comparison};
use crate::implementation::Implementation;
use crate::protocol::diff::{first_divergence, first_raw_divergence, first_run_difference};
use crate::protocol::wire::Hello;
use crate::protocol::{AdapterFailure, ExternalSubject, SharedExternal};
use crate::scenario::LoadedScenario;
use crate::sim::{BoxedSubject, StrategyKind, SubjectFailure};
use crate::suite::{self, CaseReport, Verdict};
use crate::trace::Event;
use crate::zoo::Mutant;

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
    let corpus = match suite::load_corpus(&args.paths) {
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
    let (reports, hello) = match &args.implementation {
        Some(command) => {
            let pool = Pool {
                implementation: Implementation::adapter(command.clone(), args.step_timeout).with_mutant(args.mutant),
                strategy: args.strategy,
                seed: args.seed,
                check_determinism: args.check_determinism,
                raw_divergence: args.raw_divergence,
            };
            pool.run(&corpus, args.jobs)
        }
        None => {
            let reports = corpus
                .iter()
                .map(|loaded| {
                    suite::run_case(
                        loaded,
                        args.strategy,
                        args.seed,
                        &Implementation::reference().with_mutant(args.mutant),
                    )
                    .against_reference(loaded)
                })
                .collect();
            (reports, None)
        }
    };
    let mut reports = reports;
    for report in &mut reports {
        report.restrict(&args.selection);
    }
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
            let text = report::json_judged(
                &reports,
                args.strategy,
                args.seed,
                &args.selection,
                hello.as_ref(),
                &corpus,
            );
            // Every JSON report names its implementation (`agentsim dashboard` reads it).
            let mut value: serde_json::Value = serde_json::from_str(&text).expect("the report is JSON");
            value["implementation"] = serde_json::json!(implementation);
            if let (Some((path, file)), Some(comparison)) = (&expectations, &comparison) {
                value["expectations"] = report::expectation_json(path, file, comparison);
            }
            let mut text = serde_json::to_string_pretty(&value).expect("reports serialize");
            text.push('\n');
            text
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
    match &comparison {
        Some(comparison) => exit_code_expected(&reports, comparison),
        None => exit_code(&reports),
    }
}

/// `agentsim replay FILE --impl CMD`: one case on the implementation, with its divergence. A
/// bad answer to the `reset` that ends the run is the case's verdict, as in `run`.
pub(super) fn replay_case(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    seed: u64,
    implementation: &Implementation,
    after: Option<(&LoadedScenario, u64)>,
) -> CaseReport {
    let (command, step_timeout) = implementation
        .adapter_command()
        .expect("replay_case replays an adapter");
    let subject = SharedExternal::new(ExternalSubject::new(command, Duration::from_millis(step_timeout)));
    if let Some((before, before_seed)) = after {
        // `--after`: the same process runs the other scenario first, unjudged; a breach of its
        // reset is what this case's start finds, and its verdict.
        subject.lock().name_run(&before.name);
        let mut boxed = implementation.wrap(Box::new(subject.clone()));
        let _ = suite::run_case_owned(before, strategy, before_seed, implementation, &mut boxed);
    }
    subject.lock().name_run(&loaded.name);
    let mut boxed = implementation.wrap(Box::new(subject.clone()));
    let mut case = run_on(loaded, strategy, seed, implementation, &mut boxed, false);
    case.after = after.map(|(before, before_seed)| (before.path.clone(), before_seed));
    let shut_down = subject.lock().shut_down();
    if let (Err(failure), false) = (shut_down, matches!(case.verdict, Verdict::Broken(_))) {
        case.break_with(failure);
    }
    case
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

/// The `--impl` runner: `jobs` worker threads, each with its own adapter process (reused across
/// scenarios when it speaks protocol 2), taking the corpus's scenarios in order from one shared
/// counter. Reports are kept in corpus order, so the report does not depend on `jobs` or on
/// which worker ran which scenario, as long as the adapter resets cleanly (which
/// `--check-determinism` checks). A reset that does not (a line after its `idle`) shows only in
/// the adapter's next line: in the next case's start, or when the worker shuts the adapter down.
/// Either way the verdict goes to the case whose run the reset ended, and a case whose start
/// found it runs again on a fresh process, so that the report is the same whoever found it.
struct Pool {
    implementation: Implementation,
    strategy: StrategyKind,
    seed: u64,
    check_determinism: bool,
    raw_divergence: bool,
}

/// With `--check-determinism`, a worker takes this many scenarios in corpus order at a time, so
/// that a scenario's predecessor is mostly the run its process has just made.
const CHECKED_CHUNK: usize = 8;

/// What the worker's reused process ran last: the corpus index of the scenario, on which
/// process. `--check-determinism` runs a scenario after a fixed other one, its predecessor in
/// the corpus, and needs no extra run when the process has just run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LastRun {
    index: usize,
    pid: u32,
}

/// A worker's finished cases: the corpus index, the report and the `hello`.
type Done = Vec<(usize, CaseReport, Option<Hello>)>;

impl Pool {
    /// A new adapter subject of the pool's command.
    fn adapter(&self) -> ExternalSubject {
        let (command, step_timeout) = self
            .implementation
            .adapter_command()
            .expect("the --impl runner runs an adapter");
        ExternalSubject::new(command, Duration::from_millis(step_timeout))
    }

    /// Every case of `corpus`, in corpus order, and the `hello` of the first case that got one.
    fn run(&self, corpus: &[LoadedScenario], jobs: usize) -> (Vec<CaseReport>, Option<Hello>) {
        let jobs = jobs.clamp(1, corpus.len().max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut results: Done = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..jobs).map(|_| scope.spawn(|| self.worker(corpus, &next))).collect();
            workers
                .into_iter()
                .flat_map(|worker| worker.join().unwrap_or_default())
                .collect()
        });
        results.sort_by_key(|(index, _, _)| *index);
        let hello = results.iter().find_map(|(_, _, hello)| hello.clone());
        (results.into_iter().map(|(_, report, _)| report).collect(), hello)
    }

    fn worker(&self, corpus: &[LoadedScenario], next: &std::sync::atomic::AtomicUsize) -> Done {
        let subject = SharedExternal::new(self.adapter());
        let mut done: Done = Vec::new();
        let chunk = if self.check_determinism { CHECKED_CHUNK } else { 1 };
        let mut last: Option<LastRun> = None;
        'chunks: loop {
            let first = next.fetch_add(chunk, std::sync::atomic::Ordering::Relaxed);
            for index in first..first + chunk {
                if index >= corpus.len() {
                    break 'chunks;
                }
                let loaded = &corpus[index];
                let report = if self.check_determinism {
                    self.run_checked(corpus, index, &subject, &mut last, &mut done)
                } else {
                    let mut report = self.run_one(loaded, &subject);
                    if let Some(failure) = breach_of_an_earlier_reset(&report) {
                        // The earlier case's verdict; this one runs again, on a fresh process.
                        blame_reset(&mut done, failure);
                        report = self.run_one(loaded, &subject);
                    }
                    report
                };
                let hello = subject.lock().hello().cloned();
                done.push((index, report, hello));
            }
        }
        // The last case's reset is judged by what the adapter writes before it exits.
        if let Err(failure) = subject.lock().shut_down() {
            blame_reset(&mut done, failure);
        }
        done
    }

    /// One scenario on `subject` and on the in-process reference: the adapter's case, with
    /// its divergence from the reference.
    fn run_one(&self, loaded: &LoadedScenario, subject: &SharedExternal) -> CaseReport {
        subject.lock().name_run(&loaded.name);
        let mut boxed = self.implementation.wrap(Box::new(subject.clone()));
        run_on(
            loaded,
            self.strategy,
            self.seed,
            &self.implementation,
            &mut boxed,
            self.raw_divergence,
        )
    }

    /// A run of `loaded` on `subject` that is not reported, only compared or used to set the
    /// process's state; a breach it finds of an earlier run's reset goes to that run's case.
    fn unreported_run(&self, loaded: &LoadedScenario, subject: &SharedExternal, done: &mut Done) -> CaseReport {
        subject.lock().name_run(&loaded.name);
        let mut boxed = self.implementation.wrap(Box::new(subject.clone()));
        let case = suite::run_case_owned(loaded, self.strategy, self.seed, &self.implementation, &mut boxed);
        if let Some(failure) = breach_of_an_earlier_reset(&case) {
            blame_reset(done, failure);
        }
        case
    }

    /// `--check-determinism`: the scenario at `index` in a fresh adapter process; then in the
    /// worker's reused process right after the scenario before it in the corpus (run there
    /// first unless the process has just run it), which is the reported run; then once more
    /// right after itself, which puts the reset on trial. Both later runs are compared with the
    /// fresh one, and the reported case is broken with `subject.nondeterministic` at the first
    /// difference. What precedes each compared run is fixed by the corpus, never by which worker
    /// took which scenario, so the verdict is the same for every `--jobs`.
    fn run_checked(
        &self,
        corpus: &[LoadedScenario],
        index: usize,
        subject: &SharedExternal,
        last: &mut Option<LastRun>,
        done: &mut Done,
    ) -> CaseReport {
        let loaded = &corpus[index];
        let fresh = {
            let mut fresh = self.implementation.wrap(Box::new(self.adapter().fresh_each_run()));
            suite::run_case_owned(loaded, self.strategy, self.seed, &self.implementation, &mut fresh)
        };
        if matches!(fresh.verdict, Verdict::NotApplicable { .. }) {
            // Nothing runs: the adapter's `hello` declines what the scenario uses.
            return fresh;
        }
        let pid = || subject.lock().pid();
        let reused = |process: Option<u32>| process.is_some() && process == pid();
        // The nearest scenario before this one (cyclically) that the adapter runs; one it
        // declines sends nothing and leaves the process as it was.
        let mut before = None;
        for other in suite::before_in_corpus(index, corpus.len()) {
            if last.is_some_and(|last| last.index == other && Some(last.pid) == pid()) {
                before = Some(other);
                break;
            }
            let warm_up = self.unreported_run(&corpus[other], subject, done);
            match warm_up.verdict {
                Verdict::NotApplicable { .. } => continue,
                Verdict::Broken(_) => {}
                _ => before = Some(other),
            }
            break;
        }
        let process = pid();
        let mut case = self.run_one(loaded, subject);
        let mut preceded = before.filter(|_| reused(process)).map(|other| &corpus[other]);
        if let Some(failure) = breach_of_an_earlier_reset(&case) {
            // The reset of the run before was breached: that run's verdict; this one runs
            // again, on a new process.
            blame_reset(done, failure);
            case = self.run_one(loaded, subject);
            preceded = None;
        }
        let after = match preceded {
            Some(other) => format!("reused process after `{}`", other.name),
            None => "second fresh process".to_string(),
        };
        *last = None;
        if matches!(case.verdict, Verdict::Broken(_)) {
            // Broken in the reused process: a difference when the fresh run was not.
            if let Some(verdict) = nondeterminism(&fresh, &case, &after) {
                case.verdict = verdict;
                case.after = preceded.map(|other| (other.path.clone(), self.seed));
            }
            return case;
        }
        let process = pid();
        let again = self.unreported_run(loaded, subject, done);
        if let Verdict::Broken(failure) = &again.verdict {
            if AdapterFailure::reset_breached(failure) == Some(Some(loaded.name.as_str())) {
                // The reset that ended the reported run was breached: this case's verdict.
                case.break_with(failure.clone());
                return case;
            }
        }
        let after_itself = if reused(process) {
            "reused process after this scenario"
        } else {
            "second fresh process"
        };
        if let Some(pid) = pid().filter(|_| reused(process)) {
            *last = Some(LastRun { index, pid });
        }
        // The replay command runs the scenario where it differed: after the other scenario,
        // or after itself.
        if let Some(verdict) = nondeterminism(&fresh, &case, &after) {
            case.verdict = verdict;
            case.after = preceded.map(|other| (other.path.clone(), self.seed));
        } else if let Some(verdict) = nondeterminism(&fresh, &again, after_itself) {
            case.verdict = verdict;
            case.after = Some((loaded.path.clone(), self.seed)).filter(|_| reused(process));
        }
        case
    }
}

/// The `subject.nondeterministic` verdict when `other`'s run (on the process `where_` names)
/// differs from the run of the same case in a fresh process.
fn nondeterminism(fresh: &CaseReport, other: &CaseReport, where_: &str) -> Option<Verdict> {
    match (&fresh.outcome, &other.outcome) {
        (Some(first), Some(second)) => {
            let difference = first_run_difference(&first.trace, &second.trace)?;
            let side = |line: &Option<String>| line.clone().unwrap_or_else(|| "(end of trace)".to_string());
            let field = difference
                .field
                .as_ref()
                .filter(|field| field.path != "event")
                .map(|field| format!("; field {}: {} / {}", field.path, field.reference, field.implementation))
                .unwrap_or_default();
            Some(Verdict::Broken(SubjectFailure::Nondeterministic {
                line: difference.line,
                detail: format!(
                    "fresh process `{}` / {where_} `{}`{field}",
                    side(&difference.reference),
                    side(&difference.implementation)
                ),
            }))
        }
        // Both broke: where and how must be the same too (a crash point that moves is a
        // finding, not two alike "broken" cases).
        _ if matches!((&fresh.verdict, &other.verdict), (Verdict::Broken(first), Verdict::Broken(second))
            if first.code() != second.code() || first.to_string() != second.to_string()) =>
        {
            let (Verdict::Broken(first), Verdict::Broken(second)) = (&fresh.verdict, &other.verdict) else {
                return None;
            };
            Some(Verdict::Broken(SubjectFailure::Nondeterministic {
                line: 0,
                detail: format!(
                    "the run in a fresh process broke with `{first}` ({}), the run in a {where_} with `{second}` ({})",
                    first.code(),
                    second.code()
                ),
            }))
        }
        _ if fresh.status() != other.status() => Some(Verdict::Broken(SubjectFailure::Nondeterministic {
            line: 0,
            detail: format!(
                "the run in a fresh process was {}, the run in a {where_} {}",
                fresh.status(),
                other.status()
            ),
        })),
        _ => None,
    }
}

/// The breach `report` found of a reset that ended another case's run (not its own: with
/// `--check-determinism` a case's warm-up run is reset before its reported run starts).
fn breach_of_an_earlier_reset(report: &CaseReport) -> Option<SubjectFailure> {
    let Verdict::Broken(failure) = &report.verdict else {
        return None;
    };
    match AdapterFailure::reset_breached(failure) {
        Some(Some(after)) if after != report.name => Some(failure.clone()),
        _ => None,
    }
}

/// Gives the breach of a reset to the case whose run the reset ended: the latest of `done` of
/// that name.
fn blame_reset(done: &mut [(usize, CaseReport, Option<Hello>)], failure: SubjectFailure) {
    let Some(Some(after)) = AdapterFailure::reset_breached(&failure) else {
        return;
    };
    if let Some((_, report, _)) = done.iter_mut().rev().find(|(_, report, _)| report.name == *after) {
        report.break_with(failure);
    }
}

/// Runs one scenario on the adapter behind `subject` and on the reference; returns the
/// adapter's case, with its divergence from the reference.
fn run_on(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    seed: u64,
    implementation: &Implementation,
    subject: &mut BoxedSubject,
    raw_divergence: bool,
) -> CaseReport {
    let mut case = suite::run_case_owned(loaded, strategy, seed, implementation, subject);
    let reference_case = suite::run_case(loaded, strategy, seed, &Implementation::reference());
    if let Verdict::BadScenario(_) = case.verdict {
        if !matches!(reference_case.verdict, Verdict::BadScenario(_)) {
            judge_undelivered(loaded, &mut case);
        }
    }
    if let (Some(implementation), Some(reference)) = (&case.outcome, &reference_case.outcome) {
        case.set_divergence(if raw_divergence {
            first_raw_divergence(&reference.trace, &implementation.trace)
        } else {
            first_divergence(&reference.trace, &implementation.trace)
        });
    }
    case
}

/// On the canonical schedule an operation whose `after` never held is a bad scenario, unless
/// the condition holds on the reference: then the implementation never got there, which is a
/// failure of the implementation. The case is judged like any other, plus that failure.
fn judge_undelivered(loaded: &LoadedScenario, case: &mut CaseReport) {
    let Some(outcome) = &case.outcome else {
        return;
    };
    let scenario = &loaded.scenario;
    // The rules judge it; the scenario's own checks describe the reference only.
    let mut violations = outcome.violations(scenario);
    if let Some(Event::End { undelivered, .. }) = outcome.trace.events.last() {
        if let Some(op) = undelivered.first() {
            violations.push(Violation {
                rule: "expect".into(),
                clause: None,
                lines: vec![outcome.trace.events.len()],
                message: format!(
                    "{op} was never delivered: its `after` condition never held on this implementation (it holds on the reference)"
                ),
                evident_at: None,
            });
        }
    }
    case.violations = check::cause::order_by_cause(scenario, &outcome.trace, &outcome.stored(scenario), violations);
    case.verdict = Verdict::Failed;
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
