//! What makes an output the same output on two runtimes: its identity, never its id.
//!
//! An implementation numbers its effects and signals as it likes, so the oracle matches the
//! implementation's outputs with the reference's by what they are (Temporal's replayer matches
//! commands the same way): the Nth model request of the run, the tool call with this call id,
//! the hook of this extension and phase on this call, the Nth append, the Nth write, the Nth
//! notification of this observer, the settlement of this operation. Each kind counts its own
//! occurrences, so two outputs of one kind issued in another order within one step read as
//! different outputs, while outputs of different kinds may come in any order.

use std::collections::BTreeMap;
use std::fmt;

use crate::runtime::{EffectId, HookPhase, OpId, SignalId};
use crate::trace::Event;

/// The identity of one output of a runtime.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Identity {
    /// The restore (or its failure).
    Restore,
    /// The Nth model request of the run (1-based).
    Model(u32),
    /// The Nth call of the tool call with this id (1-based; a call runs once, AGENT-5).
    Tool {
        call: String,
        nth: u32,
    },
    /// The Nth hook of this extension and phase on this tool call.
    Hook {
        extension: String,
        phase: HookPhase,
        call: String,
        nth: u32,
    },
    /// The Nth append of the run.
    Append(u32),
    /// The Nth write of an output mode.
    Write(u32),
    /// The Nth notification of this observer.
    Notify {
        observer: String,
        nth: u32,
    },
    /// An abort signal fired, named by the first effect that carried it, and which firing of
    /// it this is (or, for a signal no effect carried, the Nth such signal).
    Abort(Box<Identity>, u32),
    UncarriedAbort(u32),
    /// The settlement of this operation.
    Settled(OpId),
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Identity::Restore => write!(f, "the restore"),
            Identity::Model(nth) => write!(f, "model request {nth}"),
            Identity::Tool { call, nth: 1 } => write!(f, "tool call `{call}`"),
            Identity::Tool { call, nth } => write!(f, "tool call `{call}` (call {nth})"),
            Identity::Hook {
                extension,
                phase,
                call,
                nth,
            } => {
                write!(f, "{} hook of `{extension}` on `{call}`", phase.as_str())?;
                if *nth > 1 {
                    write!(f, " (hook {nth})")?;
                }
                Ok(())
            }
            Identity::Append(nth) => write!(f, "append {nth}"),
            Identity::Write(nth) => write!(f, "write {nth}"),
            Identity::Notify { observer, nth } => write!(f, "notification {nth} of observer `{observer}`"),
            Identity::Abort(carrier, 1) => write!(f, "the abort signal of {carrier}"),
            Identity::Abort(carrier, nth) => write!(f, "the abort signal of {carrier} (fired {nth} times)"),
            Identity::UncarriedAbort(nth) => write!(f, "uncarried abort signal {nth}"),
            Identity::Settled(op) => write!(f, "the settlement of {op}"),
        }
    }
}

/// Names the outputs of one trace as they come: counts each kind's occurrences and remembers
/// which identity each effect id and signal id stands for.
#[derive(Debug, Default)]
pub struct Namer {
    counts: BTreeMap<(u8, String), u32>,
    effects: BTreeMap<EffectId, Identity>,
    signals: BTreeMap<SignalId, Identity>,
}

impl Namer {
    fn next(&mut self, kind: u8, key: String) -> u32 {
        let count = self.counts.entry((kind, key)).or_insert(0);
        *count += 1;
        *count
    }

    /// The identity of an output event (`None` for the world's events), counted.
    pub fn name(&mut self, event: &Event) -> Option<Identity> {
        let (identity, effect, signal) = match event {
            Event::Restored { .. } | Event::RestoreFailed { .. } => (Identity::Restore, None, None),
            Event::ModelRequest { effect, signal, .. } => (
                Identity::Model(self.next(0, String::new())),
                Some(*effect),
                Some(*signal),
            ),
            Event::ToolCall { effect, signal, call } => (
                Identity::Tool {
                    call: call.id.clone(),
                    nth: self.next(1, call.id.clone()),
                },
                Some(*effect),
                Some(*signal),
            ),
            Event::Hook {
                effect,
                extension,
                phase,
                call,
                ..
            } => (
                Identity::Hook {
                    extension: extension.clone(),
                    phase: *phase,
                    call: call.id.clone(),
                    nth: self.next(2, format!("{extension}\u{0}{}\u{0}{}", phase.as_str(), call.id)),
                },
                Some(*effect),
                None,
            ),
            Event::Append { effect, .. } => (Identity::Append(self.next(3, String::new())), Some(*effect), None),
            Event::Write { effect, .. } => (Identity::Write(self.next(4, String::new())), Some(*effect), None),
            Event::Notify { effect, observer, .. } => (
                Identity::Notify {
                    observer: observer.clone(),
                    nth: self.next(5, observer.clone()),
                },
                Some(*effect),
                None,
            ),
            Event::AbortSignal { signal } => {
                let identity = match self.signals.get(signal).cloned() {
                    Some(carrier) => {
                        let nth = self.next(7, carrier.to_string());
                        Identity::Abort(Box::new(carrier), nth)
                    }
                    None => Identity::UncarriedAbort(self.next(6, String::new())),
                };
                (identity, None, None)
            }
            Event::Settled { op, .. } => (Identity::Settled(*op), None, None),
            _ => return None,
        };
        if let Some(effect) = effect {
            self.effects.insert(effect, identity.clone());
        }
        if let Some(signal) = signal {
            self.signals.entry(signal).or_insert_with(|| identity.clone());
        }
        Some(identity)
    }

    /// The identity of the output that issued `effect`.
    pub fn effect(&self, effect: EffectId) -> Option<&Identity> {
        self.effects.get(&effect)
    }

    /// The identity of the first output that carried `signal`.
    pub fn signal(&self, signal: SignalId) -> Option<&Identity> {
        self.signals.get(&signal)
    }
}

/// The effect an event of the world's side answers, if it is one.
pub fn answered(event: &Event) -> Option<EffectId> {
    event.answered()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;

    fn tool_call(effect: u32, signal: u32, id: &str) -> Event {
        Event::ToolCall {
            effect: EffectId(effect),
            signal: SignalId(signal),
            call: ToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: serde_json::json!({}),
            },
        }
    }

    #[test]
    fn ids_do_not_name_outputs_identities_do() {
        let mut namer = Namer::default();
        assert_eq!(
            namer.name(&tool_call(900, 7, "call-1")),
            Some(Identity::Tool {
                call: "call-1".into(),
                nth: 1
            })
        );
        assert_eq!(
            namer.name(&tool_call(901, 7, "call-1")),
            Some(Identity::Tool {
                call: "call-1".into(),
                nth: 2
            })
        );
        assert_eq!(
            namer.name(&Event::AbortSignal { signal: SignalId(7) }),
            Some(Identity::Abort(
                Box::new(Identity::Tool {
                    call: "call-1".into(),
                    nth: 1
                }),
                1
            ))
        );
        assert_eq!(
            namer.name(&Event::AbortSignal { signal: SignalId(8) }),
            Some(Identity::UncarriedAbort(1))
        );
        assert_eq!(
            namer.effect(EffectId(901)).map(ToString::to_string).as_deref(),
            Some("tool call `call-1` (call 2)")
        );
        assert_eq!(namer.effect(EffectId(1)), None);
    }
}
