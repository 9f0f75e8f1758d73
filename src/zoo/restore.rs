//! Restore bugs: which branch a runtime resumes and what it takes from it.

use crate::model::{PathError, SessionEntry};
use crate::runtime::{projection_failure, Cause, Completion, Effect, OpValue, ProjectionError, Settlement};
use crate::scenario::Scenario;
use crate::sim::Restored;

use super::seam::{Bug, Facts, Seam};

/// A non-empty session with a null leaf resumes at its last entry (the physical last line
/// chooses the branch).
#[derive(Default)]
pub(crate) struct NullLeafResumesLast;

impl Bug for NullLeafResumesLast {
    fn start(&mut self, given: &mut Scenario, _: &Facts) -> Result<(), Cause> {
        if given.config.active_leaf_id.is_none() {
            given.config.active_leaf_id = given.session.last().map(|entry| entry.id.clone());
        }
        Ok(())
    }
}

/// Restore walks parents leniently: the first entry with an id wins, a missing parent ends the
/// walk as if it were the root, and a cycle stops where it closes (an unknown leaf is still
/// refused). The runtime is given the path it walked, as a tree with nothing wrong in it.
#[derive(Default)]
pub(crate) struct RestoreAcceptsBrokenTree;

impl Bug for RestoreAcceptsBrokenTree {
    fn start(&mut self, given: &mut Scenario, _: &Facts) -> Result<(), Cause> {
        if let Some(leaf) = given.config.active_leaf_id.clone() {
            if let Ok(mut path) = lenient_path(&given.session, &leaf) {
                if let Some(root) = path.first_mut() {
                    root.parent_id = None;
                }
                given.session = path;
            }
        }
        Ok(())
    }
}

/// A parent walk without diagnostics (see [`RestoreAcceptsBrokenTree`]).
fn lenient_path(entries: &[SessionEntry], leaf: &str) -> Result<Vec<SessionEntry>, PathError> {
    let find = |id: &str| entries.iter().find(|entry| entry.id == id);
    let mut current = find(leaf).ok_or_else(|| PathError::UnknownLeaf { leaf: leaf.to_string() })?;
    let mut path = vec![current.clone()];
    while let Some(parent) = current.parent_id.as_deref().and_then(find) {
        if path.iter().any(|seen| seen.id == parent.id) {
            break;
        }
        path.push(parent.clone());
        current = parent;
    }
    path.reverse();
    Ok(path)
}

/// Restore takes every message entry of the file, siblings included: the agent's transcript
/// (what restore reports and every run result carries) starts with the whole file's messages,
/// while the projection still walks the chosen path.
#[derive(Default)]
pub(crate) struct RestoreWholeFile;

impl RestoreWholeFile {
    fn file_messages(facts: &Facts) -> Vec<crate::model::Message> {
        facts
            .session
            .iter()
            .filter_map(SessionEntry::as_message)
            .cloned()
            .collect()
    }
}

impl Bug for RestoreWholeFile {
    fn restored(&mut self, started: Result<Restored, Cause>, facts: &Facts) -> Result<Restored, Cause> {
        started.map(|restored| Restored {
            messages: Self::file_messages(facts).len(),
            ..restored
        })
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let Effect::Settled {
            op,
            settlement: Settlement::Resolved(OpValue::Run(mut result)),
        } = effect
        else {
            return seam.emit(effect);
        };
        // The run result's transcript: the restored path's messages replaced by the file's.
        let restored_path = seam.watch().restored_messages();
        if result.messages.starts_with(restored_path) {
            let mut messages = Self::file_messages(seam.facts);
            messages.extend(result.messages.drain(restored_path.len()..));
            result.messages = messages;
        }
        seam.settle(op, Settlement::Resolved(OpValue::Run(result)));
    }
}

/// The persisted count counts every entry of the restored path, metadata and compaction
/// entries included: every projection takes that many more messages as persisted, so the first
/// messages of each run's suffix are left out of the request; when the count passes the
/// transcript's length, the projection fails and the run ends with that error.
#[derive(Default)]
pub(crate) struct CountIncludesMetadata;

impl Bug for CountIncludesMetadata {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let Effect::ModelRequest {
            effect: id,
            signal,
            mut request,
        } = effect
        else {
            return seam.emit(effect);
        };
        let watch = seam.watch();
        let extra = watch
            .restored_path()
            .iter()
            .filter(|entry| entry.as_message().is_none())
            .count();
        if extra == 0 {
            return seam.emit(Effect::ModelRequest {
                effect: id,
                signal,
                request,
            });
        }
        let persisted = watch.persisted_prefix(&request.messages);
        let suffix = request.messages.len() - persisted;
        if extra > suffix {
            let error = ProjectionError::CountOutOfRange {
                count: watch.persisted.len() + extra,
                len: watch.persisted.len() + suffix,
            };
            let message = projection_failure(&error, seam.facts.clock.start_ms);
            return seam.answer(id, Completion::ModelFinal { message });
        }
        request.messages.drain(persisted..persisted + extra);
        seam.emit(Effect::ModelRequest {
            effect: id,
            signal,
            request,
        });
    }
}

/// Every tree diagnostic (a missing parent, a duplicate id, a cycle, an unknown leaf) becomes
/// one generic restore error: the caller cannot tell what is wrong with the file.
#[derive(Default)]
pub(crate) struct PathErrorsGeneric;

impl Bug for PathErrorsGeneric {
    fn restored(&mut self, started: Result<Restored, Cause>, _: &Facts) -> Result<Restored, Cause> {
        started.map_err(|cause| {
            if !cause.code.starts_with("path.") {
                return cause;
            }
            Cause::new(
                "restore.invalid_tree",
                format!("the session tree is invalid ({})", cause.message),
            )
        })
    }
}

/// An empty session ignores the given leaf and starts a new conversation (instead of refusing
/// a leaf it does not hold).
#[derive(Default)]
pub(crate) struct EmptySessionIgnoresLeaf;

impl Bug for EmptySessionIgnoresLeaf {
    fn start(&mut self, given: &mut Scenario, _: &Facts) -> Result<(), Cause> {
        if given.session.is_empty() {
            given.config.active_leaf_id = None;
        }
        Ok(())
    }
}

/// A null leaf is refused even on an empty session, where it means "a new conversation".
#[derive(Default)]
pub(crate) struct NullLeafAlwaysRejected;

impl Bug for NullLeafAlwaysRejected {
    fn start(&mut self, given: &mut Scenario, _: &Facts) -> Result<(), Cause> {
        match given.config.active_leaf_id {
            Some(_) => Ok(()),
            None => Err(Cause::new(
                "restore.leaf_required",
                "activeLeafId is null: choose a branch explicitly",
            )),
        }
    }
}

/// The restore reports the session file's last entry as the leaf it resumed at, whatever leaf
/// was chosen (the transcript itself is the chosen branch's).
#[derive(Default)]
pub(crate) struct StartedLeafIsLastEntry;

impl Bug for StartedLeafIsLastEntry {
    fn restored(&mut self, started: Result<Restored, Cause>, facts: &Facts) -> Result<Restored, Cause> {
        started.map(|restored| Restored {
            leaf: facts
                .session
                .last()
                .map(|entry| entry.id.clone())
                .or(restored.leaf.clone()),
            ..restored
        })
    }
}
