//! The `--impl` runner: worker threads, each driving one adapter process, and
//! `--check-determinism`'s fixed predecessors.
//!
//! Each worker takes the corpus's scenarios in order and executes each case's [`Run`] on its
//! process (reused across scenarios when the adapter speaks protocol 2); the run compares the
//! adapter's trace with the reference's (`protocol::diff`). `--check-determinism` runs each
//! scenario in a fresh and in a reused process and compares the traces.

use std::time::Duration;

use crate::protocol::diff::first_run_difference;
use crate::protocol::wire::Hello;
use crate::protocol::{AdapterFailure, ExternalSubject, SharedExternal};
use crate::run::{CaseReport, Driver, Run, Verdict};
use crate::scenario::LoadedScenario;
use crate::sim::SubjectFailure;
use crate::suite;

/// The `--impl` runner: `jobs` worker threads, each with its own adapter process (reused across
/// scenarios when it speaks protocol 2), taking the corpus's scenarios in order from one shared
/// counter. Reports are kept in corpus order, so the report does not depend on `jobs` or on
/// which worker ran which scenario, as long as the adapter resets cleanly (which
/// `--check-determinism` checks). A reset that does not (a line after its `idle`) shows only in
/// the adapter's next line: in the next case's start, or when the worker shuts the adapter down.
/// Either way the verdict goes to the case whose run the reset ended, and a case whose start
/// found it runs again on a fresh process, so that the report is the same whoever found it.
pub(super) struct Pool {
    /// Every case's run but its scenario.
    pub template: Run,
    pub check_determinism: bool,
    pub raw_divergence: bool,
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
    /// The case of `loaded`.
    pub fn run_of(&self, loaded: &LoadedScenario) -> Run {
        Run {
            scenario: loaded.path.clone(),
            ..self.template.clone()
        }
    }

    /// A new adapter subject of the pool's command.
    fn adapter(&self) -> ExternalSubject {
        let (command, step_timeout) = self
            .template
            .implementation
            .adapter_command()
            .expect("the --impl runner runs an adapter");
        ExternalSubject::new(command, Duration::from_millis(step_timeout))
    }

    /// Every case of `corpus`, in corpus order, and the `hello` of the first case that got one.
    pub fn run(&self, corpus: &[LoadedScenario], jobs: usize) -> (Vec<CaseReport>, Option<Hello>) {
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
        let mut boxed = self.template.implementation.wrap(Box::new(subject.clone()));
        let driver = Driver::on(&mut boxed).raw_divergence(self.raw_divergence);
        self.run_of(loaded).execute_with(loaded, driver)
    }

    /// A run of `loaded` on `subject` that is not reported, only compared or used to set the
    /// process's state; a breach it finds of an earlier run's reset goes to that run's case.
    fn unreported_run(&self, loaded: &LoadedScenario, subject: &SharedExternal, done: &mut Done) -> CaseReport {
        subject.lock().name_run(&loaded.name);
        let mut boxed = self.template.implementation.wrap(Box::new(subject.clone()));
        let case = self.run_of(loaded).execute_with(loaded, Driver::on(&mut boxed));
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
            let mut fresh = self
                .template
                .implementation
                .wrap(Box::new(self.adapter().fresh_each_run()));
            self.run_of(loaded).execute_with(loaded, Driver::on(&mut fresh))
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
                case.run.after = preceded.map(|other| (other.path.clone(), self.template.seed()));
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
            case.run.after = preceded.map(|other| (other.path.clone(), self.template.seed()));
        } else if let Some(verdict) = nondeterminism(&fresh, &again, after_itself) {
            case.verdict = verdict;
            case.run.after = Some((loaded.path.clone(), self.template.seed())).filter(|_| reused(process));
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
