//! `ExternalSubject`: an implementation in another process, driven through the adapter
//! protocol as a [`Subject`].
//!
//! `start` spawns the adapter when none is running, reads `hello` (checking the version and
//! whether the scenario uses something the adapter declared unsupported), writes `start` and
//! reads up to `idle`. Every `deliver` writes one `operation` or `complete` and collects the
//! effects, abort signals and settlements up to the next `idle`. `finish` ends the run: it checks
//! that nothing came after the last `idle`, then, for a protocol-2 adapter, writes `reset` and
//! reads its `idle`, so the next `start` reuses the process; a protocol-1 adapter (or a subject
//! made with [`ExternalSubject::fresh_each_run`]) is shut down instead, one process per run.
//! Whether anything followed that `idle` shows only when the adapter next writes: in its answer
//! to the next `start`, whose first line must be `started` or `restore_failed`, or before it
//! exits on `shutdown` ([`ExternalSubject::shut_down`]). Either way the breach is the reset's,
//! reported as [`AdapterFailure::LineAfterReset`] naming the run the reset ended
//! ([`ExternalSubject::name_run`]), the same verdict whenever the kit happened to look.
//! After a failure the process is killed and the next run spawns a new one. Every wait is
//! bounded by the step timeout; whatever the adapter does wrong becomes a typed
//! [`AdapterFailure`] (wrapped into `SubjectFailure`), never a panic or a hang. Dropping the subject asks the adapter to shut
//! down, then kills its process group.
//!
//! This module owns the turn-taking; reading the adapter's lines and making a verdict of each
//! way they go wrong is `lines.rs`'s; the bytes and the process are `process`'s, the shapes are
//! `wire`'s.

mod lines;
mod probe;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::model::Operation;
use crate::runtime::{Cause, Effect, EffectId, Input, OpId, Settlement, SignalId};
use crate::scenario::Scenario;
use crate::sim::{Restored, Subject, SubjectFailure};

use super::convert::{effect_from_wire, input_to_wire, settlement_from_wire};
use super::failure::AdapterFailure;
use super::process::{AdapterProcess, Next};

/// Nanoseconds every adapter subject of the process spent waiting for its adapter's next line
/// (`agentsim bench --impl`: what of a schedule is the adapter's, what the kit's).
static WAITED_NANOS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn count_wait(waited: Duration) {
    WAITED_NANOS.fetch_add(waited.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
}

/// The time every adapter subject of the process has spent waiting for its adapter so far.
pub fn time_waited_for_adapters() -> Duration {
    Duration::from_nanos(WAITED_NANOS.load(std::sync::atomic::Ordering::Relaxed))
}
use super::wire::{parse_adapter_line, to_line, AdapterMessage, Hello, KitMessage, StartScenario};
use lines::quote_line;

/// The default bound on every wait (`--step-timeout-ms`).
pub const STEP_TIMEOUT_DEFAULT: Duration = Duration::from_millis(10_000);

/// More messages than this between two `idle`s is a runaway adapter.
const MESSAGES_PER_STEP_MAX: usize = 100_000;

/// How long the adapter gets to exit after `shutdown` before its group is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(1_000);

/// An implementation behind the adapter protocol. See the module documentation.
pub struct ExternalSubject {
    command: String,
    step_timeout: Duration,
    process: Option<AdapterProcess>,
    hello: Option<Hello>,
    effect_ids: BTreeSet<u32>,
    /// The operations delivered in this run: a `settled` for any other is a protocol breach.
    ops_delivered: BTreeSet<u32>,
    /// What each delivered operation is, as `hello.unsupported` names it (`prompt`,
    /// `mode:interactive`), for an operation the adapter settles as unsupported.
    ops_named: BTreeMap<u32, String>,
    /// A failure was reported: the process is killed, not asked to shut down.
    failed: bool,
    /// A run was started on the process and not yet finished.
    run_live: bool,
    /// Shut the adapter down after every run, even one that speaks protocol 2.
    fresh_each_run: bool,
    /// How many adapter processes this subject has spawned.
    spawned: usize,
    /// The name of the current run, when the runner gave one ([`ExternalSubject::name_run`]).
    run_name: Option<String>,
    /// The runtime's state as the last `idle` of the run reported it (`hello.probes`: `state`).
    state: Option<crate::trace::StateProbe>,
    /// The `reset` whose `idle` the kit read last, until the adapter's next line shows nothing
    /// followed that `idle`: the name of the run it ended, if it had one.
    reset_pending: Option<Option<String>>,
}

impl ExternalSubject {
    /// A subject that runs `sh -c command` for each run, bounding every wait by `step_timeout`.
    pub fn new(command: impl Into<String>, step_timeout: Duration) -> ExternalSubject {
        ExternalSubject {
            command: command.into(),
            step_timeout,
            process: None,
            hello: None,
            effect_ids: BTreeSet::new(),
            ops_delivered: BTreeSet::new(),
            ops_named: BTreeMap::new(),
            failed: false,
            run_live: false,
            fresh_each_run: false,
            spawned: 0,
            run_name: None,
            state: None,
            reset_pending: None,
        }
    }

    /// One adapter process per run, whatever protocol it speaks (`--check-determinism`'s first
    /// pass, and what protocol 1 means anyway).
    pub fn fresh_each_run(mut self) -> ExternalSubject {
        self.fresh_each_run = true;
        self
    }

    /// A subject for the same command that has started nothing yet, and this one handed over
    /// with its process (the networked world borrows a subject this way).
    pub fn take(&mut self) -> ExternalSubject {
        let empty = ExternalSubject::new(self.command.clone(), self.step_timeout);
        let empty = if self.fresh_each_run {
            empty.fresh_each_run()
        } else {
            empty
        };
        std::mem::replace(self, empty)
    }

    /// Names the run about to start (its scenario, for a runner of a corpus): a breach of the
    /// `reset` that ends it, found only when the adapter next writes, names it.
    pub fn name_run(&mut self, name: &str) {
        self.run_name = Some(name.to_string());
    }

    /// How many adapter processes this subject has started so far.
    pub fn processes_spawned(&self) -> usize {
        self.spawned
    }

    /// Whether the running adapter serves many runs (`hello.protocol` 2 or more).
    fn reusable(&self) -> bool {
        !self.fresh_each_run && self.hello.as_ref().is_some_and(|hello| hello.protocol >= 2)
    }

    pub fn command(&self) -> &str {
        &self.command
    }

    pub fn step_timeout(&self) -> Duration {
        self.step_timeout
    }

    /// The adapter's `hello`, once a run has started.
    pub fn hello(&self) -> Option<&Hello> {
        self.hello.as_ref()
    }

    /// The pid of the running adapter (`sh`), if any; tests use it to check for leftovers.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(AdapterProcess::id)
    }

    /// Ends the current adapter process: `shutdown`, a short grace, then the group is killed.
    pub fn stop(&mut self) {
        self.hello = None;
        self.run_live = false;
        self.reset_pending = None;
        if let Some(mut process) = self.process.take() {
            if !self.failed {
                process.send(to_line(&KitMessage::Shutdown {}));
                process.close_stdin();
                process.wait_exit(Instant::now() + SHUTDOWN_GRACE.min(self.step_timeout));
            }
            // Dropping kills the group (anything the adapter left running) and reaps the child.
            drop(process);
        }
    }

    fn send(&mut self, message: &KitMessage) {
        if let Some(process) = &mut self.process {
            process.send(to_line(message));
        }
    }

    /// The first operation or behaviour of `scenario` that the adapter declared unsupported.
    fn unsupported_use(scenario: &Scenario, hello: &Hello) -> Option<(String, String)> {
        let mut used: Vec<String> = Vec::new();
        for spec in &scenario.operations {
            let operation = spec.operation();
            used.push(operation.name().to_string());
            if let Operation::Mode { mode, .. } = &operation {
                used.push(mode_key(mode));
            }
        }
        if scenario.model.iter().any(|step| step.chunks.unwrap_or(1) > 1) {
            used.push("chunks".into());
        }
        if !scenario.observers.is_empty() {
            if hello.protocol < 2 {
                return Some((
                    "observers".to_string(),
                    "extension event observers (`notify` effects) need protocol 2".to_string(),
                ));
            }
            used.push("observers".into());
        }
        used.into_iter().find_map(|name| {
            let reason = hello.unsupported.get(&name)?.clone();
            Some((name, reason))
        })
    }
}

/// The code of a rejection by which an adapter says it cannot run an operation
/// (`docs/protocol.md`): the case is not applicable.
pub const UNSUPPORTED_CODE: &str = "adapter.unsupported";

/// How `hello.unsupported` names one output mode: `mode:<name>`.
fn mode_key(mode: &str) -> String {
    format!("mode:{mode}")
}

/// How `hello.unsupported` names an operation: its name, or [`mode_key`] for an output mode.
fn unsupported_name(operation: &Operation) -> String {
    match operation {
        Operation::Mode { mode, .. } => mode_key(mode),
        other => other.name().to_string(),
    }
}

impl ExternalSubject {
    /// Reads the first line after `start` on a process that answered a `reset` (of the run named
    /// `after`): anything but an answer to `start` followed the `idle` that answered the reset,
    /// whether it was written before the kit wrote `start` or after.
    fn read_first_after_reset(
        &mut self,
        after: Option<String>,
        waiting_for: &str,
        deadline: Instant,
    ) -> Result<AdapterMessage, SubjectFailure> {
        let line = self.read_line(waiting_for, deadline)?;
        let quoted = quote_line(&String::from_utf8_lossy(&line));
        match std::str::from_utf8(&line).ok().map(parse_adapter_line) {
            Some(Ok(
                message @ (AdapterMessage::Started { .. }
                | AdapterMessage::RestoreFailed { .. }
                | AdapterMessage::Error { .. }),
            )) => {
                // The reset left nothing behind: from here on a verdict shows this run's stderr.
                // Not on an `error`: the adapter wrote its reason to stderr before that line, and
                // clearing would race the reader for it (the verdict's tail changed run to run).
                if let (Some(process), false) = (&self.process, matches!(message, AdapterMessage::Error { .. })) {
                    process.clear_stderr_tail();
                }
                Ok(message)
            }
            _ => Err(self.fail_running(|stderr_tail| AdapterFailure::LineAfterReset {
                after,
                line: quoted,
                stderr_tail,
            })),
        }
    }

    /// Ends the adapter process as [`stop`](Self::stop) does, but first reads what the adapter
    /// wrote after the `idle` that answered the last `reset`, up to its exit: a line there is a
    /// breach of that reset ([`AdapterFailure::LineAfterReset`]). A runner calls it when it is
    /// done with the subject, so that the last run's reset is judged like every other.
    pub fn shut_down(&mut self) -> Result<(), SubjectFailure> {
        let after = match self.reset_pending.take() {
            Some(after) if !self.failed && !self.run_live => after,
            _ => {
                self.stop();
                return Ok(());
            }
        };
        let Some(process) = &mut self.process else {
            return Ok(());
        };
        process.send(to_line(&KitMessage::Shutdown {}));
        process.close_stdin();
        let next = process.next_line(Instant::now() + SHUTDOWN_GRACE.min(self.step_timeout));
        let result = match next {
            Next::Line(line) => {
                let line = quote_line(&String::from_utf8_lossy(&line));
                Err(self.fail_running(|stderr_tail| AdapterFailure::LineAfterReset {
                    after,
                    line,
                    stderr_tail,
                }))
            }
            // It exited, or it is killed now: neither is a verdict, as for `stop`.
            Next::Oversize | Next::Closed(_) | Next::TimedOut => Ok(()),
        };
        self.hello = None;
        // Dropping kills the group (anything the adapter left running) and reaps the child.
        self.process = None;
        result
    }

    /// Starts the adapter process and reads its `hello`.
    fn spawn(&mut self) -> Result<(), SubjectFailure> {
        let process = AdapterProcess::spawn(&self.command).map_err(|error| AdapterFailure::Spawn {
            message: format!("sh -c {}: {error}", crate::trace::quote(&self.command)),
        })?;
        self.process = Some(process);
        self.spawned += 1;
        let deadline = Instant::now() + self.step_timeout;
        match self.read_message("`hello`", deadline)? {
            AdapterMessage::Hello(hello) if !hello.probes.is_empty() && hello.protocol < 2 => {
                let message = format!(
                    "`hello` declares probes ({}) but speaks protocol {}: probes are protocol 2",
                    hello
                        .probes
                        .iter()
                        .map(|probe| format!("{probe:?}").to_ascii_lowercase())
                        .collect::<Vec<_>>()
                        .join(", "),
                    hello.protocol
                );
                Err(self.malformed(message))
            }
            AdapterMessage::Hello(hello) => {
                self.hello = Some(hello);
                Ok(())
            }
            other => {
                let message = format!("the first line must be `hello`, not `{}`", other.type_name());
                Err(self.malformed(message))
            }
        }
    }

    /// A line the adapter wrote after its last `idle` without being asked is a breach.
    fn check_unsolicited(&mut self) -> Result<(), SubjectFailure> {
        let unsolicited = self.process.as_mut().and_then(AdapterProcess::pending_line);
        match unsolicited {
            Some(line) => {
                let line = quote_line(&String::from_utf8_lossy(&line));
                Err(self.malformed(format!(
                    "an unsolicited line after `idle`, before the kit sent anything: {line}"
                )))
            }
            None => Ok(()),
        }
    }
}

impl Drop for ExternalSubject {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `what` after an input, for timeouts and crashes: "`idle` after operation op#2 (prompt)".
fn describe_wait(input: &Input) -> String {
    match input {
        Input::Complete { effect, .. } => format!("`idle` after `complete` for {effect}"),
        Input::Operation { op, operation } => format!("`idle` after operation {op} ({})", operation.name()),
    }
}

impl Subject for ExternalSubject {
    /// `hello.features`: `sync-store` (an append returns only once written: the runtime's
    /// thread waits in it) and `sync-sink` (an output mode's write is synchronous).
    fn state(&self) -> Option<crate::trace::StateProbe> {
        self.state.clone()
    }

    fn blocking(&self) -> crate::sim::Blocking {
        let declared = |feature: &str| {
            self.hello
                .as_ref()
                .is_some_and(|hello| hello.features.iter().any(|declared| declared == feature))
        };
        crate::sim::Blocking {
            appends: declared("sync-store"),
            writes: declared("sync-sink"),
        }
    }

    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        if self.failed || self.run_live || !self.reusable() {
            self.stop();
        }
        self.failed = false;
        self.state = None;
        self.effect_ids.clear();
        self.ops_delivered.clear();
        self.ops_named.clear();
        if self.process.is_none() {
            self.spawn()?;
        } else if self.reset_pending.is_none() {
            // Reused with no run before (the scenarios before were not applicable): silent
            // since `hello`.
            self.check_unsolicited()?;
            // A verdict shows this run's stderr only, whichever runs the process served before.
            if let Some(process) = &self.process {
                process.clear_stderr_tail();
            }
        }
        let Some(hello) = &self.hello else {
            return Err(SubjectFailure::Protocol {
                message: "the adapter's `hello` is missing".into(),
            });
        };
        if let Some((operation, reason)) = Self::unsupported_use(scenario, hello) {
            // Nothing was sent for this scenario: a protocol-2 adapter goes on to the next (and
            // the last reset is still to be judged by the next line the adapter writes).
            return Err(SubjectFailure::Unsupported { operation, reason });
        }
        let mut after_reset = self.reset_pending.take();
        if let (Some(process), Some(_)) = (&self.process, &after_reset) {
            // The runs before are over: a verdict shows this run's stderr only, also when its
            // first line is an `error` (a `started` clears the lines of the restore again).
            process.clear_stderr_tail();
        }
        self.run_live = true;
        self.send(&KitMessage::Start {
            scenario: StartScenario::from_scenario(scenario),
        });
        let deadline = Instant::now() + self.step_timeout;
        let waiting_for = "`started` or `restore_failed`, then `idle`, after `start`";
        let mut restored: Option<Result<Restored, Cause>> = None;
        loop {
            let message = match after_reset.take() {
                Some(after) => self.read_first_after_reset(after, waiting_for, deadline)?,
                None => self.read_message(waiting_for, deadline)?,
            };
            match message {
                AdapterMessage::Started { leaf, messages } if restored.is_none() => {
                    restored = Some(Ok(Restored {
                        leaf,
                        messages,
                        setup: Vec::new(),
                    }));
                }
                // Version 2: what the runtime does while it is created, after `started` and
                // before its `idle` (an AgentSession that appends entries of its own as it
                // opens the session): set-up effects, answered before the first operation.
                AdapterMessage::Effect { effect }
                    if matches!(restored, Some(Ok(_)))
                        && self.hello.as_ref().is_some_and(|hello| hello.protocol >= 2) =>
                {
                    let id = effect.id();
                    if id == 0 || !self.effect_ids.insert(id) {
                        return Err(self.fail(|stderr_tail| AdapterFailure::UnknownEffect {
                            message: format!("set-up effect id {id} is 0 or was already used in this run"),
                            stderr_tail,
                        }));
                    }
                    if let Some(Ok(restored)) = &mut restored {
                        restored.setup.push(effect_from_wire(effect));
                    }
                }
                AdapterMessage::RestoreFailed { cause } if restored.is_none() => {
                    restored = Some(Err(cause.into()));
                }
                AdapterMessage::Idle { state } => match restored {
                    Some(restored) => {
                        let started = restored.is_ok();
                        let blocked = restored.as_ref().is_ok_and(|restored| self.blocked_in(&restored.setup));
                        self.take_state(state, started, "`start`")?;
                        if blocked {
                            // Blocked in a set-up append: the state is the restored one until it returns.
                            if let (Some(state), Ok(restored)) = (&mut self.state, &restored) {
                                *state = crate::trace::StateProbe::restored(restored.leaf.as_deref());
                            }
                        }
                        return Ok(restored);
                    }
                    None => return Err(self.malformed("`idle` before `started` or `restore_failed`".into())),
                },
                AdapterMessage::Error {
                    code,
                    message,
                    recoverable,
                } => {
                    let text = format!("the adapter reported an error after `start`: {code}: {message}");
                    return Err(self.reported_error(text, recoverable));
                }
                other => {
                    let message = format!(
                        "unexpected `{}` after `start` (only `started` or `restore_failed`, then set-up effects (version 2), then `idle`)",
                        other.type_name()
                    );
                    return Err(self.malformed(message));
                }
            }
        }
    }

    fn finish(&mut self) -> Result<(), SubjectFailure> {
        let run_name = self.run_name.take();
        if !self.run_live || self.failed || self.process.is_none() {
            return Ok(());
        }
        self.check_unsolicited()?;
        self.run_live = false;
        if !self.reusable() {
            self.stop();
            return Ok(());
        }
        self.send(&KitMessage::Reset {});
        let deadline = Instant::now() + self.step_timeout;
        match self.read_message("`idle` after `reset`", deadline)? {
            AdapterMessage::Idle { state } => {
                self.take_state(state, false, "`reset`")?;
                // Whether anything follows this `idle` shows in the adapter's next line.
                self.reset_pending = Some(run_name);
                Ok(())
            }
            AdapterMessage::Error { code, message, .. } => Err(self.malformed(format!(
                "the adapter reported an error after `reset`: {code}: {message}"
            ))),
            other => {
                let message = format!("unexpected `{}` after `reset` (only `idle`)", other.type_name());
                Err(self.malformed(message))
            }
        }
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        if self.process.is_none() || self.failed {
            return Err(SubjectFailure::Protocol {
                message: "an input was delivered before a successful start".into(),
            });
        }
        let waiting_for = describe_wait(&input);
        // After `idle` the adapter speaks only when spoken to: a line already waiting now was
        // sent unasked (an extra `idle`, a late effect), and would be taken as this input's answer.
        self.check_unsolicited()?;
        if let Input::Operation { op, operation } = &input {
            self.ops_delivered.insert(op.0);
            self.ops_named.insert(op.0, unsupported_name(operation));
        }
        let first = effects.len();
        let wire = input_to_wire(&input);
        self.send(&wire);
        let deadline = Instant::now() + self.step_timeout;
        for _ in 0..MESSAGES_PER_STEP_MAX {
            match self.read_message(&waiting_for, deadline)? {
                AdapterMessage::Effect { effect } => {
                    let id = effect.id();
                    if id == 0 {
                        return Err(self.fail(|stderr_tail| AdapterFailure::UnknownEffect {
                            message: "effect id 0: effect ids are positive integers".into(),
                            stderr_tail,
                        }));
                    }
                    if !self.effect_ids.insert(id) {
                        return Err(self.fail(|stderr_tail| AdapterFailure::UnknownEffect {
                            message: format!("effect id {id} was already used in this run ({})", EffectId(id)),
                            stderr_tail,
                        }));
                    }
                    effects.push(effect_from_wire(effect));
                }
                AdapterMessage::AbortSignal { signal } => effects.push(Effect::AbortSignal {
                    signal: SignalId(signal),
                }),
                AdapterMessage::Settled { op, .. } if !self.ops_delivered.contains(&op) => {
                    return Err(self.malformed(format!(
                        "`settled` for {}, an operation the kit never delivered (while it waited for {waiting_for})",
                        OpId(op)
                    )))
                }
                AdapterMessage::Settled { op, settlement } => {
                    let settlement = settlement_from_wire(settlement);
                    // The adapter cannot run this operation (a feature it did not declare
                    // unsupported in `hello`, such as a terminal UI mode): the case is not
                    // applicable, never the runtime refusing the operation. The run is cut
                    // here; the process is not reused for the next start.
                    if let Settlement::Rejected(cause) = &settlement {
                        if cause.code == UNSUPPORTED_CODE {
                            let operation = self.ops_named.get(&op).cloned().unwrap_or_else(|| "operation".into());
                            return Err(SubjectFailure::Unsupported {
                                operation,
                                reason: cause.message.clone(),
                            });
                        }
                    }
                    effects.push(Effect::Settled {
                        op: OpId(op),
                        settlement,
                    })
                }
                AdapterMessage::Idle { state } => {
                    let before = self.state.clone();
                    self.take_state(state, true, &waiting_for)?;
                    if self.blocked_in(&effects[first..]) {
                        // A probe read while a synchronous append blocks the runtime is no
                        // quiescent state: the state stays what it was until the call returns.
                        self.state = before;
                    }
                    // More output right behind `idle` was written before the kit could answer.
                    let followed = self.process.as_ref().is_some_and(AdapterProcess::last_line_followed);
                    if followed {
                        let line = self.process.as_mut().and_then(AdapterProcess::pending_line);
                        let line = line.map_or_else(
                            || "more output".to_string(),
                            |line| quote_line(&String::from_utf8_lossy(&line)),
                        );
                        return Err(self.malformed(format!(
                            "an unsolicited line after `idle`, before the kit sent anything: {line}"
                        )));
                    }
                    return Ok(());
                }
                AdapterMessage::Error {
                    code,
                    message,
                    recoverable,
                } => {
                    let text = format!(
                        "the adapter reported an error while the kit waited for {waiting_for}: {code}: {message}"
                    );
                    return Err(self.reported_error(text, recoverable));
                }
                other => {
                    let message = format!(
                        "unexpected `{}` while the kit waited for {waiting_for}",
                        other.type_name()
                    );
                    return Err(self.malformed(message));
                }
            }
        }
        Err(self.malformed(format!(
            "more than {MESSAGES_PER_STEP_MAX} messages without `idle` while the kit waited for {waiting_for}"
        )))
    }
}

/// An [`ExternalSubject`] its owner keeps a handle to while a runner drives it (as a
/// [`BoxedSubject`](crate::sim::BoxedSubject), which the networked world takes for a run): the
/// owner reads the adapter's `hello` and pid between runs.
#[derive(Clone)]
pub struct SharedExternal(std::sync::Arc<std::sync::Mutex<ExternalSubject>>);

impl SharedExternal {
    pub fn new(subject: ExternalSubject) -> SharedExternal {
        SharedExternal(std::sync::Arc::new(std::sync::Mutex::new(subject)))
    }

    /// The subject, between runs. A runner that panicked while holding it poisons nothing the
    /// owner reads.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, ExternalSubject> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Subject for SharedExternal {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        self.lock().start(scenario)
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        self.lock().deliver(input, effects)
    }

    fn finish(&mut self) -> Result<(), SubjectFailure> {
        self.lock().finish()
    }

    fn blocking(&self) -> crate::sim::Blocking {
        self.lock().blocking()
    }

    fn state(&self) -> Option<crate::trace::StateProbe> {
        self.lock().state()
    }
}
