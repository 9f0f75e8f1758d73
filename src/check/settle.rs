//! SETTLE: every settlement is one the contract allows for its operation in the state the
//! operation met. The other rules say what a runtime must not do; this one says what a healthy
//! runtime must accept: an operation is only ever resolved with its kind of value, or rejected
//! with a cause the contract names for that state (the poison cause, `runtime.disposed`,
//! `mode.unknown`, the sink's own error). The table is [`allowed`], and conformance.md prints
//! it.

use crate::model::Operation;
use crate::runtime::{Cause, OpValue, Settlement};

use super::timeline::{Line, OpInfo, Timeline};
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
    fn of(operation: &Operation) -> Kind {
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
}
