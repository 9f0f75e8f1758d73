//! Projection bugs: what a model request carries, and under which signal.
//!
//! One verdict differs from the decorator struct two of these bugs were ported from (issue 22):
//! [`TemporarySuffixDropped`] on a compacted path. The old decorator took as persisted the
//! longest run of stored messages a request starts with, which a compaction's summary never
//! is, so it sent no message at all; this one keeps the persisted projection, summary first,
//! as the bug says. On the three compaction scenarios of `projection/` the first rule broken
//! is now PROJECT-1 instead of CONTEXT-3; the zoo's table does not change.

use std::collections::BTreeMap;

use crate::runtime::{
    projection_failure, temporary_entries, Completion, Effect, ModelRequest, ProjectionError, SignalId,
};

use super::seam::{Bug, Seam};

/// The model request the subject issued, rewritten by `rewrite`; every other effect as it is.
pub(super) fn rewrite_request(effect: Effect, seam: &mut Seam, rewrite: impl FnOnce(&mut ModelRequest, &Seam)) {
    match effect {
        Effect::ModelRequest {
            effect,
            signal,
            mut request,
        } => {
            rewrite(&mut request, seam);
            seam.emit(Effect::ModelRequest {
                effect,
                signal,
                request,
            });
        }
        other => seam.emit(other),
    }
}

/// The inactive skills' bodies are added to the system prompt.
#[derive(Default)]
pub(crate) struct InactiveSkillBodyShown;

impl Bug for InactiveSkillBodyShown {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        rewrite_request(effect, seam, |request, seam| {
            for skill in &seam.facts.resources.skills {
                let text = request.system_prompt.get_or_insert_with(String::new);
                text.push_str(&format!("\n{}", skill.body));
            }
        });
    }
}

/// The projection slices the last four messages of the transcript itself instead of using the
/// budget (the transcript is the persisted messages and the run's suffix).
#[derive(Default)]
pub(crate) struct ProjectionSlicesMessages;

impl Bug for ProjectionSlicesMessages {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        rewrite_request(effect, seam, |request, seam| {
            let watch = seam.watch();
            let prefix = watch.persisted_prefix(&request.messages);
            let mut transcript = watch.persisted.clone();
            transcript.extend_from_slice(&request.messages[prefix..]);
            let keep = transcript.len().saturating_sub(4);
            request.messages = transcript.split_off(keep);
        });
    }
}

/// The projection snapshot is captured once, at creation: every later request counts only the
/// restored messages as persisted, so the messages stored since are sent again as temporary.
#[derive(Default)]
pub(crate) struct SnapshotCapturedOnce;

impl Bug for SnapshotCapturedOnce {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        rewrite_request(effect, seam, |request, seam| {
            let watch = seam.watch();
            let prefix = watch.persisted_prefix(&request.messages);
            let stored_since = watch.persisted[watch.restored_messages().len()..].to_vec();
            let suffix = request.messages.split_off(prefix);
            request.messages.extend(stored_since);
            request.messages.extend(suffix);
        });
    }
}

/// Temporary ids are not prefixed on a collision: when the active path holds an entry
/// `__runtime_context_N` for one of the suffix's indices, the walk over path and temporary
/// entries breaks and the projection fails, ending the run with that error.
#[derive(Default)]
pub(crate) struct TemporaryIdNotPrefixed;

impl Bug for TemporaryIdNotPrefixed {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let Effect::ModelRequest {
            effect: id, request, ..
        } = &effect
        else {
            return seam.emit(effect);
        };
        let watch = seam.watch();
        let suffix = request.messages.len() - watch.persisted_prefix(&request.messages);
        let collides = (0..suffix).any(|index| {
            let temporary = format!("__runtime_context_{index}");
            watch.path.iter().any(|entry| entry.id == temporary)
        });
        if !collides {
            return seam.emit(effect);
        }
        let error = ProjectionError::CountOutOfRange {
            count: watch.persisted.len(),
            len: watch.persisted.len() + suffix,
        };
        let message = projection_failure(&error, seam.facts.clock.start_ms);
        seam.answer(*id, Completion::ModelFinal { message });
    }
}

/// The suffix is stored under its temporary `__runtime_context_N` ids before every model
/// request (the store's answers are ignored).
#[derive(Default)]
pub(crate) struct TemporaryEntriesStored;

impl Bug for TemporaryEntriesStored {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if let Effect::ModelRequest { request, .. } = &effect {
            let watch = seam.watch();
            let prefix = watch.persisted_prefix(&request.messages);
            let entries = temporary_entries(&watch.path, &request.messages[prefix..]);
            for entry in entries {
                let id = seam.fresh_effect();
                seam.inject(Effect::Append { effect: id, entry });
            }
        }
        seam.emit(effect);
    }
}

/// Every model request gets a fresh abort signal: the run's own signal (the one abort fires)
/// is never on a request, and the tools get the latest request's.
#[derive(Default)]
pub(crate) struct SignalPerRequest {
    next: u32,
    /// The subject's run signal -> (the run's signal as shown, the latest request's).
    runs: BTreeMap<SignalId, (SignalId, SignalId)>,
}

impl SignalPerRequest {
    fn fresh(&mut self) -> SignalId {
        self.next += 1;
        SignalId(self.next)
    }
}

impl Bug for SignalPerRequest {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::ModelRequest {
                effect,
                signal,
                request,
            } => {
                if !self.runs.contains_key(&signal) {
                    let run = self.fresh();
                    self.runs.insert(signal, (run, run));
                }
                let latest = self.fresh();
                if let Some(run) = self.runs.get_mut(&signal) {
                    run.1 = latest;
                }
                seam.emit(Effect::ModelRequest {
                    effect,
                    signal: latest,
                    request,
                });
            }
            Effect::ToolCall { effect, signal, call } => {
                let latest = self.runs.get(&signal).map_or(signal, |run| run.1);
                seam.emit(Effect::ToolCall {
                    effect,
                    signal: latest,
                    call,
                });
            }
            Effect::AbortSignal { signal } => {
                let run = self.runs.get(&signal).map_or(signal, |run| run.0);
                seam.emit(Effect::AbortSignal { signal: run });
            }
            other => seam.emit(other),
        }
    }
}

/// The projection sends only persisted messages: the run's temporary suffix (the prompt, the
/// responses and tool results not yet stored) is missing from every request.
#[derive(Default)]
pub(crate) struct TemporarySuffixDropped;

impl Bug for TemporarySuffixDropped {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        rewrite_request(effect, seam, |request, seam| {
            let persisted = seam.watch().persisted_prefix(&request.messages);
            request.messages.truncate(persisted);
        });
    }
}

/// The suffix is computed once per run, at its first request: later requests of the run lack
/// the tool calls and results that came since.
#[derive(Default)]
pub(crate) struct SuffixFrozenAtUser {
    /// The suffix's length at the run's first request.
    frozen: usize,
}

impl Bug for SuffixFrozenAtUser {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        rewrite_request(effect, seam, |request, seam| {
            let watch = seam.watch();
            let persisted = watch.persisted_prefix(&request.messages);
            if watch.run_requests == 0 {
                self.frozen = request.messages.len() - persisted;
            }
            request.messages.truncate(persisted + self.frozen);
        });
    }
}
