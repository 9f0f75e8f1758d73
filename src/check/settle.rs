//! SETTLE: every settlement is one the contract allows for its operation in the state the
//! operation met. The other rules say what a runtime must not do; this one says what a healthy
//! runtime must accept: an operation is only ever resolved with its kind of value, or rejected
//! with a cause the contract names for that state (the poison cause, `runtime.disposed`,
//! `mode.unknown`, the sink's own error). The table is [`allowed`], and conformance.md prints
//! it.

use crate::model::Operation;
use crate::runtime::{Cause, OpId, OpValue, Settlement};
use crate::trace::Event;

use super::timeline::{EffectKind, Line, OpInfo, Timeline};
use super::Violation;

/// What an operation is, for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Prompt,
    /// An output mode the runtime knows (`interactive`, `print`, `json`).
    Mode,
    /// A mode name it does not know.
    UnknownMode,
    Library,
    Flush,
    Dispose,
    /// steer, followUp, abort.
    Control,
}

impl Kind {
    pub(crate) fn of(operation: &Operation) -> Kind {
        match operation {
            Operation::Prompt { .. } => Kind::Prompt,
            Operation::Mode { mode, .. } if matches!(mode.as_str(), "interactive" | "print" | "json") => Kind::Mode,
            Operation::Mode { .. } => Kind::UnknownMode,
            Operation::Library { .. } => Kind::Library,
            Operation::Flush => Kind::Flush,
            Operation::Dispose => Kind::Dispose,
            Operation::Steer { .. } | Operation::FollowUp { .. } | Operation::Abort => Kind::Control,
        }
    }
}

/// The state of the runtime an operation met, as the trace shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct State {
    /// An append had failed before the operation was delivered: the runtime is poisoned.
    pub poisoned: bool,
    /// A dispose was delivered before it: the entry is closed.
    pub disposed: bool,
    /// An append failed after delivery and before the operation settled.
    pub poisoned_while_waiting: bool,
    /// The operation's own output write failed (a mode).
    pub write_failed: bool,
}

/// The value a resolution carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// A run result (prompt, mode).
    Run,
    /// `{reason, text}` (the library call).
    Library,
    /// Nothing (flush, dispose, steer, followUp, abort).
    Unit,
}

/// A cause the contract names for a rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The cause of the first failed append (POISON).
    Poison,
    /// `runtime.disposed` (LIFE-4).
    Disposed,
    /// `mode.unknown` (MODE-3).
    UnknownMode,
    /// The sink's own error, unchanged (MODE-4).
    SinkError,
}

/// What the contract allows one operation to settle with in one state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Allowed {
    pub resolved: Option<Value>,
    pub rejected: Vec<Reason>,
}

/// The table: the settlements an operation of `kind` may get in `state`.
pub fn allowed(kind: Kind, state: State) -> Allowed {
    let mut allowed = Allowed::default();
    let closed = |allowed: &mut Allowed| {
        // A poisoned runtime refuses with the poison's cause, a disposed one with
        // `runtime.disposed`; with both, either is the contract's.
        if state.poisoned {
            allowed.rejected.push(Reason::Poison);
        }
        if state.disposed {
            allowed.rejected.push(Reason::Disposed);
        }
    };
    match kind {
        Kind::Control | Kind::Dispose => allowed.resolved = Some(Value::Unit),
        Kind::Flush if state.poisoned || state.poisoned_while_waiting => allowed.rejected.push(Reason::Poison),
        Kind::Flush => allowed.resolved = Some(Value::Unit),
        Kind::UnknownMode => {
            allowed.rejected.push(Reason::UnknownMode);
            closed(&mut allowed);
        }
        Kind::Prompt | Kind::Mode | Kind::Library if state.poisoned || state.disposed => closed(&mut allowed),
        Kind::Prompt | Kind::Mode | Kind::Library => {
            allowed.resolved = Some(match kind {
                Kind::Library => Value::Library,
                _ => Value::Run,
            });
            if state.poisoned_while_waiting {
                allowed.rejected.push(Reason::Poison);
            }
            if kind == Kind::Mode && state.write_failed {
                allowed.rejected.push(Reason::SinkError);
            }
        }
    }
    allowed
}

impl Value {
    fn of(value: &OpValue) -> Value {
        match value {
            OpValue::Run(_) => Value::Run,
            OpValue::Library { .. } => Value::Library,
            OpValue::Unit => Value::Unit,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Value::Run => "a run result",
            Value::Library => "{reason, text}",
            Value::Unit => "nothing",
        }
    }
}

impl Reason {
    fn words(self) -> &'static str {
        match self {
            Reason::Poison => "the failed append's cause",
            Reason::Disposed => "runtime.disposed",
            Reason::UnknownMode => "mode.unknown",
            Reason::SinkError => "the sink's error",
        }
    }
}

impl Allowed {
    fn words(&self) -> String {
        let mut words = Vec::new();
        if let Some(value) = self.resolved {
            words.push(format!("resolved with {}", value.words()));
        }
        if !self.rejected.is_empty() {
            let reasons: Vec<&str> = self.rejected.iter().map(|reason| reason.words()).collect();
            words.push(format!("rejected with {}", reasons.join(" or ")));
        }
        words.join(", or ")
    }
}

impl State {
    fn words(self) -> &'static str {
        match (self.poisoned, self.disposed, self.poisoned_while_waiting) {
            (true, true, _) => "a poisoned and disposed runtime",
            (true, false, _) => "a poisoned runtime",
            (false, true, _) => "a disposed runtime",
            (false, false, true) => "a healthy runtime, poisoned before it settled",
            (false, false, false) => "a healthy runtime",
        }
    }
}

/// The state `info` met, and its settlement's cause matched against the named ones.
fn state_of(timeline: &Timeline<'_>, info: &OpInfo<'_>, settled: Line) -> State {
    let failure = timeline.first_failure().map(|(line, _, _)| line);
    let disposed = timeline
        .ops
        .iter()
        .filter(|other| matches!(other.operation, Operation::Dispose))
        .any(|dispose| dispose.delivered < info.delivered);
    State {
        poisoned: failure.is_some_and(|line| line < info.delivered),
        disposed,
        poisoned_while_waiting: failure.is_some_and(|line| line > info.delivered && line < settled),
        write_failed: timeline
            .writes
            .iter()
            .any(|write| write.op == Some(info.op) && matches!(write.answer, Some((_, Some(_))))),
    }
}

fn reason_matches(timeline: &Timeline<'_>, info: &OpInfo<'_>, reason: Reason, cause: &Cause) -> bool {
    match reason {
        Reason::Poison => timeline.first_failure().is_some_and(|(_, poison, _)| poison == cause),
        Reason::Disposed => cause.code == crate::runtime::disposed_cause().code,
        Reason::UnknownMode => cause.code == "mode.unknown",
        Reason::SinkError => timeline.writes.iter().any(|write| {
            write.op == Some(info.op) && matches!(write.answer, Some((_, Some(failed))) if failed == cause)
        }),
    }
}

pub fn settlement_is_allowed(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for info in &timeline.ops {
        let Some((settled, settlement)) = info.settled else {
            continue;
        };
        let state = state_of(timeline, info, settled);
        let allowed = allowed(Kind::of(info.operation), state);
        let admitted = match settlement {
            Settlement::Resolved(value) => allowed.resolved == Some(Value::of(value)),
            Settlement::Rejected(cause) => allowed
                .rejected
                .iter()
                .any(|reason| reason_matches(timeline, info, *reason, cause)),
        };
        if !admitted {
            // Spelled only for a violation: a passing run builds no text.
            let got = match settlement {
                Settlement::Resolved(value) => format!("resolved with {}", Value::of(value).words()),
                Settlement::Rejected(cause) => format!("rejected {}: {}", cause.code, cause.message),
            };
            let clause = match settlement {
                Settlement::Resolved(_) => "SETTLE-1.a",
                Settlement::Rejected(_) => "SETTLE-1.b",
            };
            violations.push(Violation::new(
                clause,
                &[info.delivered, settled],
                format!(
                    "{} {}{} met {} and settled {got}; the contract allows it only to be {}",
                    info.operation.name(),
                    info.op,
                    match Kind::of(info.operation) {
                        Kind::UnknownMode => " (a mode name it does not know)",
                        _ => "",
                    },
                    state.words(),
                    allowed.words()
                ),
            ));
        }
    }
    violations
}

/// The table's last column: the latest point each operation may settle at. It settles within
/// the step that follows that point's input (before the world's next input), because nothing
/// the contract lets it wait for is still outstanding there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latest {
    /// Its delivery: refused at the call (poisoned, disposed, an unknown mode).
    Delivery,
    /// Its run's work: its turn in the queue (every prompt accepted before it finished) and the
    /// last answer its run waited for (requests, tool calls, hooks, appends; never an observer).
    Run,
    /// A mode writes by its run's work and settles by its write's answer.
    Write,
    /// Every prompt accepted before it has finished (flush, dispose; a later dispose also by the
    /// first).
    AcceptedWork,
    /// At once: a control call (AGENT-7's, a SHOULD; not SETTLE-2's).
    AtOnce,
}

/// The latest point for an operation of `kind` that met `state`.
pub fn latest(kind: Kind, state: State) -> Latest {
    match kind {
        Kind::Control => Latest::AtOnce,
        Kind::UnknownMode => Latest::Delivery,
        Kind::Prompt | Kind::Mode | Kind::Library if state.poisoned || state.disposed => Latest::Delivery,
        Kind::Prompt | Kind::Library => Latest::Run,
        Kind::Mode => Latest::Write,
        Kind::Flush | Kind::Dispose => Latest::AcceptedWork,
    }
}

/// The line of the last input `op`'s run may have waited for: the answers to the effects
/// attributed to it (requests, tool calls, hooks, appends, and with `writes` a mode's writes;
/// never an observer's) issued before it settled. `None` when one of them was still unanswered
/// when it settled (or is at the end, while it has not): it may have waited for that one;
/// `Some(None)` when it waited for nothing.
fn run_work(timeline: &Timeline<'_>, op: OpId, settled: Option<Line>, writes: bool) -> Option<Option<Line>> {
    let mut last = None;
    for (kind, issued, answer) in timeline.effects_of(op) {
        let waited_for = match kind {
            EffectKind::Notify => false,
            EffectKind::Write => writes,
            _ => true,
        };
        // Issued once it had settled: not its run's.
        if !waited_for || settled.is_some_and(|settled| issued > settled) {
            continue;
        }
        match (answer, settled) {
            (Some(at), Some(settled)) if at < settled => last = last.max(Some(at)),
            (Some(at), None) => last = last.max(Some(at)),
            // Still unanswered when it settled, or never answered: it may have waited for it
            // all along (and settled for another reason, an abort say), so no point is known.
            _ => return None,
        }
    }
    Some(last)
}

/// What a deadline is, for the message.
fn deadline_words(timeline: &Timeline<'_>, line: Line) -> String {
    match &timeline.events[line] {
        Event::Deliver { op, operation } => format!("its delivery ({} {op}, line {})", operation.name(), line + 1),
        event => match event.answered() {
            Some(effect) => format!("the answer to {effect} (line {})", line + 1),
            None => format!("line {}", line + 1),
        },
    }
}

fn input_words(event: &Event) -> String {
    match event {
        Event::Deliver { op, operation } => format!("{} {op} was delivered", operation.name()),
        event => match event.answered() {
            Some(effect) => format!("the world answered {effect}"),
            None => "the world's next input".into(),
        },
    }
}

/// SETTLE-2: every operation settles by the latest point the table names for it, within the
/// step that follows it.
pub fn settled_in_time(timeline: &Timeline<'_>) -> Vec<Violation> {
    let failure = timeline.first_failure().map(|(line, _, _)| line);
    let mut violations = Vec::new();
    let mut late = |clause: &'static str, info: &OpInfo<'_>, what: &str, by: Option<Line>, done: Option<Line>| {
        let Some(by) = by else { return };
        let Some(next) = timeline.next_input_after(by) else {
            return;
        };
        if done.is_some_and(|done| done < next) {
            return;
        }
        let when = match done {
            Some(done) => format!("did so only at line {}", done + 1),
            None => "never did".into(),
        };
        violations.push(Violation::new(
            clause,
            &[info.delivered, by, next],
            format!(
                "{} {} had to {what} by the step after {}, before {} (line {}); it {when}",
                info.operation.name(),
                info.op,
                deadline_words(timeline, by),
                input_words(&timeline.events[next]),
                next + 1
            ),
        ));
    };
    // The point by which every prompt accepted so far must have finished (`None`: one may still
    // be waiting for an answer that never came).
    let mut tail: Option<Line> = Some(0);
    let mut first_dispose: Option<Option<Line>> = None;
    for info in &timeline.ops {
        let kind = Kind::of(info.operation);
        let state = State {
            poisoned: failure.is_some_and(|line| line < info.delivered),
            disposed: first_dispose.is_some(),
            ..State::default()
        };
        let settled = info.settled.map(|(line, _)| line);
        match latest(kind, state) {
            Latest::AtOnce => {}
            Latest::Delivery => late("SETTLE-2.c", info, "settle", Some(info.delivered), settled),
            Latest::Run | Latest::Write => {
                let turn = tail.map(|tail| tail.max(info.delivered));
                let by =
                    |work: Option<Option<Line>>| work.and_then(|work| turn.map(|turn| turn.max(work.unwrap_or(turn))));
                // The point its run's own work was done by: what the queue waits for.
                let finished = by(run_work(timeline, info.op, settled, false));
                if kind == Kind::Mode {
                    // Its output is its last write; one that streams writes while its run goes
                    // on writes its last before the run's work is done, and is judged only on
                    // when it settles.
                    let output = (timeline.writes.iter()).rfind(|write| write.op == Some(info.op));
                    let streamed = output.is_some_and(|output| finished.is_none_or(|finished| finished > output.line));
                    if !streamed {
                        // A mode may await each write before the next (a stream of lines): the
                        // writes before its last are its work too.
                        let done = output.map(|write| write.line).or(settled);
                        let written = (timeline.writes.iter())
                            .filter(|write| write.op == Some(info.op) && done.is_some_and(|done| write.line < done))
                            .map(|write| write.answer.map(|(at, _)| at))
                            .try_fold(finished, |by, answer| answer.map(|at| by.map(|by| by.max(at))));
                        late("SETTLE-2.b", info, "write its output", written.flatten(), done);
                    }
                    late(
                        "SETTLE-2.b",
                        info,
                        "settle",
                        by(run_work(timeline, info.op, settled, true)),
                        settled,
                    );
                } else {
                    late("SETTLE-2.a", info, "settle", finished, settled);
                }
                tail = finished;
            }
            Latest::AcceptedWork => {
                let mut by = tail.map(|tail| tail.max(info.delivered));
                if kind == Kind::Dispose {
                    match first_dispose {
                        Some(first) => by = by.zip(first).map(|(own, first)| own.max(first)),
                        None => first_dispose = Some(by),
                    }
                }
                late(
                    if kind == Kind::Flush {
                        "SETTLE-2.d"
                    } else {
                        "SETTLE-2.e"
                    },
                    info,
                    "settle",
                    by,
                    settled,
                );
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_healthy_runtime_resolves_every_operation_with_its_kind_of_value() {
        let healthy = State::default();
        assert_eq!(allowed(Kind::Prompt, healthy).resolved, Some(Value::Run));
        assert_eq!(allowed(Kind::Library, healthy).resolved, Some(Value::Library));
        assert_eq!(allowed(Kind::Flush, healthy).resolved, Some(Value::Unit));
        for kind in [
            Kind::Prompt,
            Kind::Mode,
            Kind::Library,
            Kind::Flush,
            Kind::Dispose,
            Kind::Control,
        ] {
            assert!(
                allowed(kind, healthy).rejected.is_empty(),
                "{kind:?} may be rejected while healthy"
            );
        }
    }

    #[test]
    fn a_closed_runtime_refuses_prompts_with_its_own_causes() {
        let poisoned = State {
            poisoned: true,
            ..State::default()
        };
        assert_eq!(
            allowed(Kind::Prompt, poisoned),
            Allowed {
                resolved: None,
                rejected: vec![Reason::Poison]
            }
        );
        let both = State {
            poisoned: true,
            disposed: true,
            ..State::default()
        };
        assert_eq!(
            allowed(Kind::Library, both).rejected,
            vec![Reason::Poison, Reason::Disposed]
        );
        assert_eq!(allowed(Kind::Dispose, both).resolved, Some(Value::Unit));
        assert_eq!(allowed(Kind::Flush, poisoned).rejected, vec![Reason::Poison]);
    }

    #[test]
    fn every_row_has_a_latest_point_and_a_refusal_is_due_at_its_call() {
        let healthy = State::default();
        let poisoned = State {
            poisoned: true,
            ..State::default()
        };
        let disposed = State {
            disposed: true,
            ..State::default()
        };
        assert_eq!(latest(Kind::Prompt, healthy), Latest::Run);
        assert_eq!(latest(Kind::Library, healthy), Latest::Run);
        assert_eq!(latest(Kind::Mode, healthy), Latest::Write);
        assert_eq!(latest(Kind::UnknownMode, healthy), Latest::Delivery);
        assert_eq!(latest(Kind::Flush, poisoned), Latest::AcceptedWork);
        assert_eq!(latest(Kind::Dispose, disposed), Latest::AcceptedWork);
        assert_eq!(latest(Kind::Control, disposed), Latest::AtOnce);
        for kind in [Kind::Prompt, Kind::Mode, Kind::Library] {
            assert_eq!(latest(kind, poisoned), Latest::Delivery, "{kind:?} poisoned");
            assert_eq!(latest(kind, disposed), Latest::Delivery, "{kind:?} disposed");
        }
    }
}
