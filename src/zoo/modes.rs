//! Mode bugs: `runMode` and `runLibrary` around the runtime: which mode runs, what is written
//! to the sink, and what the caller is told.

use serde_json::Value;

use crate::model::Operation;
use crate::runtime::{Cause, Completion, Effect, Input, OpValue, RunReason, Settlement, StoreOutcome};

use super::seam::{Bug, Seam};

/// An unknown mode name falls back to `print` instead of being rejected.
#[derive(Default)]
pub(crate) struct UnknownModeFallsBackToPrint;

impl Bug for UnknownModeFallsBackToPrint {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        seam.deliver(match input {
            Input::Operation {
                op,
                operation: Operation::Mode { mode, text },
            } if !matches!(mode.as_str(), "interactive" | "print" | "json") => Input::Operation {
                op,
                operation: Operation::Mode {
                    mode: "print".into(),
                    text,
                },
            },
            input => input,
        });
    }
}

/// Which of the sink's errors a mode wraps.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WriteErrors {
    Every,
    /// Only one that comes back after the next run got a model response (the interleaving
    /// tier: the canonical schedule answers a write before the next run's first response).
    Late,
}

/// The sink's error is wrapped in a mode error of the runtime's own (`mode.output_failed`)
/// instead of returned unchanged to the mode's caller.
pub(crate) struct WriteErrorWrapped {
    pub wraps: WriteErrors,
    /// The error of the write the world just answered, when this bug wraps it.
    failure: Option<Cause>,
}

impl WriteErrorWrapped {
    pub fn new(wraps: WriteErrors) -> WriteErrorWrapped {
        WriteErrorWrapped { wraps, failure: None }
    }
}

impl Bug for WriteErrorWrapped {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        self.failure = match &input {
            Input::Complete {
                completion: Completion::Write(StoreOutcome::Failed(cause)),
                ..
            } => {
                let late = seam
                    .watch()
                    .responses_before_write_answer
                    .is_some_and(|responses| responses >= 1);
                match self.wraps {
                    WriteErrors::Every => Some(cause.clone()),
                    WriteErrors::Late => late.then(|| cause.clone()),
                }
            }
            _ => None,
        };
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Settled {
                op,
                settlement: Settlement::Rejected(cause),
            } if self.failure.as_ref() == Some(&cause) => seam.settle(
                op,
                Settlement::Rejected(Cause::new("mode.output_failed", format!("output failed: {cause}"))),
            ),
            effect => seam.emit(effect),
        }
    }
}

/// The library adapter always reports reason `stop`, whatever ended the run.
#[derive(Default)]
pub(crate) struct LibraryReasonAlwaysStop;

impl Bug for LibraryReasonAlwaysStop {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Settled {
                op,
                settlement: Settlement::Resolved(OpValue::Library { text, .. }),
            } => seam.settle(
                op,
                Settlement::Resolved(OpValue::Library {
                    reason: RunReason::Stop,
                    text,
                }),
            ),
            effect => seam.emit(effect),
        }
    }
}

/// json mode lists only the run's new messages (those it stored), not the transcript.
#[derive(Default)]
pub(crate) struct JsonMessagesSuffixOnly {
    /// Appends shown since the last write or the last prompt's run result.
    appends_this_run: usize,
}

impl Bug for JsonMessagesSuffixOnly {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Append { .. } => {
                self.appends_this_run += 1;
                seam.emit(effect);
            }
            Effect::Write { effect, text } => {
                let text = keep_last_messages(&text, self.appends_this_run);
                self.appends_this_run = 0;
                seam.emit(Effect::Write { effect, text });
            }
            Effect::Settled {
                op,
                settlement: Settlement::Resolved(OpValue::Run(_) | OpValue::Library { .. }),
            } if seam.watch().prompts.contains(&op) => {
                self.appends_this_run = 0;
                seam.emit(effect);
            }
            effect => seam.emit(effect),
        }
    }
}

/// json mode output with only the last `keep` messages.
fn keep_last_messages(text: &str, keep: usize) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(text.trim_end()) else {
        return text.to_string();
    };
    if let Some(Value::Array(messages)) = value.get_mut("messages") {
        let drop = messages.len().saturating_sub(keep);
        messages.drain(..drop);
    }
    format!("{value}\n")
}
