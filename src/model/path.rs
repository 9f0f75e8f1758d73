//! `path_to`: the ancestor chain of a chosen leaf, root first, with distinct diagnostics.
//!
//! The tree walk is the only place that follows `parentId`; the runtime never re-implements it.

use std::collections::{BTreeMap, BTreeSet};

use super::entry::SessionEntry;

/// Why a path could not be built. Each variant has a stable `code()`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    #[error("unknown leaf `{leaf}`: no entry has this id")]
    UnknownLeaf { leaf: String },
    #[error("duplicate id `{id}`: {count} entries share it")]
    DuplicateId { id: String, count: usize },
    #[error("missing parent: entry `{entry}` names parent `{parent}`, which does not exist")]
    MissingParent { entry: String, parent: String },
    #[error("cycle on the ancestor chain of `{leaf}`: `{entry}` is reached twice")]
    Cycle { leaf: String, entry: String },
}

impl PathError {
    pub fn code(&self) -> &'static str {
        match self {
            PathError::UnknownLeaf { .. } => "path.unknown_leaf",
            PathError::DuplicateId { .. } => "path.duplicate_id",
            PathError::MissingParent { .. } => "path.missing_parent",
            PathError::Cycle { .. } => "path.cycle",
        }
    }
}

/// The entries from the root to `leaf`, root first (cloned).
///
/// Checks, in this order: duplicate ids anywhere in `entries` (the first duplicated id in file
/// order is reported), then that `leaf` exists, then walks `parentId` upwards reporting a
/// missing parent or a cycle on the selected chain. Sibling branches are never included.
pub fn path_to(entries: &[SessionEntry], leaf: &str) -> Result<Vec<SessionEntry>, PathError> {
    Ok(path_to_borrowed(entries, leaf)?.into_iter().cloned().collect())
}

/// `path_to` lent from `entries` rather than copied: for readers that keep the entries
/// alongside (the checkers' timeline, over the session and the trace), to whom a copy of every
/// entry is pure cost.
pub fn path_to_borrowed<'e>(
    entries: impl IntoIterator<Item = &'e SessionEntry>,
    leaf: &str,
) -> Result<Vec<&'e SessionEntry>, PathError> {
    let entries: Vec<&'e SessionEntry> = entries.into_iter().collect();
    // The entries sorted by id, so the duplicate check and each step up are binary searches:
    // every run restores a session, and maps of it cost more than the walk.
    let mut by_id = entries.clone();
    by_id.sort_unstable_by(|entry, other| entry.id.cmp(&other.id));
    if by_id.windows(2).any(|pair| pair[0].id == pair[1].id) {
        check_unique_ids(&entries)?;
    }
    let find = |id: &str| {
        by_id
            .binary_search_by(|entry| entry.id.as_str().cmp(id))
            .ok()
            .map(|index| by_id[index])
    };
    let mut current = find(leaf).ok_or_else(|| PathError::UnknownLeaf { leaf: leaf.to_string() })?;

    let mut path_leaf_first: Vec<&'e SessionEntry> = Vec::new();
    loop {
        path_leaf_first.push(current);
        // Longer than the entries, the chain went round a cycle: ids are unique, so the walk
        // repeats itself from its first revisited entry and never reaches a missing parent.
        if path_leaf_first.len() > entries.len() {
            return Err(PathError::Cycle {
                leaf: leaf.to_string(),
                entry: first_revisited(&path_leaf_first).to_string(),
            });
        }
        let Some(parent_id) = current.parent_id.as_deref() else {
            break;
        };
        current = find(parent_id).ok_or_else(|| PathError::MissingParent {
            entry: current.id.clone(),
            parent: parent_id.to_string(),
        })?;
    }
    path_leaf_first.reverse();
    Ok(path_leaf_first)
}

/// The id of the first entry a walk longer than the entries reaches a second time.
fn first_revisited<'e>(walk: &[&'e SessionEntry]) -> &'e str {
    let mut visited_ids: BTreeSet<&str> = BTreeSet::new();
    let revisited = walk
        .iter()
        .find(|entry| !visited_ids.insert(entry.id.as_str()))
        .expect("a walk longer than the entries reaches one of them twice");
    revisited.id.as_str()
}

/// Reports the first id, in file order, that more than one entry carries.
fn check_unique_ids(entries: &[&SessionEntry]) -> Result<(), PathError> {
    let mut count_by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for entry in entries {
        *count_by_id.entry(entry.id.as_str()).or_insert(0) += 1;
    }
    for entry in entries {
        let count = count_by_id[entry.id.as_str()];
        if count > 1 {
            return Err(PathError::DuplicateId {
                id: entry.id.clone(),
                count,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::entry::{EntryBody, Metadata};
    use crate::model::message::Message;

    fn message_entry(id: &str, parent_id: Option<&str>) -> SessionEntry {
        SessionEntry::message(
            id,
            parent_id,
            "2026-01-01T00:00:00.000Z",
            Message::user(format!("text of {id}"), 0),
        )
    }

    fn model_change_entry(id: &str, parent_id: Option<&str>) -> SessionEntry {
        SessionEntry {
            body: EntryBody::ModelChange(Metadata::default()),
            id: id.to_string(),
            parent_id: parent_id.map(str::to_string),
            timestamp: "2026-01-01T00:00:00.000Z".to_string(),
        }
    }

    fn ids(path: &[SessionEntry]) -> Vec<&str> {
        path.iter().map(|entry| entry.id.as_str()).collect()
    }

    #[test]
    fn path_is_root_first_and_excludes_sibling_branch() {
        let entries = vec![
            message_entry("root", None),
            message_entry("a1", Some("root")),
            message_entry("b1", Some("root")),
            message_entry("a2", Some("a1")),
            message_entry("b2", Some("b1")),
        ];
        let path = path_to(&entries, "a2").unwrap();
        assert_eq!(ids(&path), ["root", "a1", "a2"]);
        let path = path_to(&entries, "b2").unwrap();
        assert_eq!(ids(&path), ["root", "b1", "b2"]);
    }

    #[test]
    fn path_keeps_metadata_entries() {
        let entries = vec![
            message_entry("root", None),
            model_change_entry("meta", Some("root")),
            message_entry("leaf", Some("meta")),
        ];
        let path = path_to(&entries, "leaf").unwrap();
        assert_eq!(ids(&path), ["root", "meta", "leaf"]);
        assert_eq!(path[1].kind(), "model_change");
        assert_eq!(path, entries);
    }

    #[test]
    fn path_to_a_root_leaf_is_that_entry() {
        let entries = vec![message_entry("root", None)];
        assert_eq!(ids(&path_to(&entries, "root").unwrap()), ["root"]);
    }

    #[test]
    fn duplicate_id_reports_first_duplicated_id_in_file_order_with_count() {
        // `z` sorts after `a` but is duplicated first in file order.
        let entries = vec![
            message_entry("z", None),
            message_entry("a", Some("z")),
            message_entry("z", Some("a")),
            message_entry("a", Some("z")),
            message_entry("z", Some("a")),
        ];
        let error = path_to(&entries, "a").unwrap_err();
        assert_eq!(
            error,
            PathError::DuplicateId {
                id: "z".to_string(),
                count: 3
            }
        );
        assert_eq!(error.code(), "path.duplicate_id");
    }

    #[test]
    fn duplicate_id_is_reported_before_unknown_leaf() {
        let entries = vec![message_entry("x", None), message_entry("x", None)];
        let error = path_to(&entries, "nowhere").unwrap_err();
        assert_eq!(error.code(), "path.duplicate_id");
    }

    #[test]
    fn unknown_leaf_is_reported() {
        let entries = vec![message_entry("root", None)];
        let error = path_to(&entries, "missing").unwrap_err();
        assert_eq!(
            error,
            PathError::UnknownLeaf {
                leaf: "missing".to_string()
            }
        );
        assert_eq!(error.code(), "path.unknown_leaf");
        assert_eq!(path_to(&[], "x").unwrap_err().code(), "path.unknown_leaf");
    }

    #[test]
    fn missing_parent_names_the_child_and_the_parent() {
        let entries = vec![
            message_entry("root", None),
            message_entry("child", Some("ghost")),
            message_entry("leaf", Some("child")),
        ];
        let error = path_to(&entries, "leaf").unwrap_err();
        assert_eq!(
            error,
            PathError::MissingParent {
                entry: "child".to_string(),
                parent: "ghost".to_string()
            }
        );
        assert_eq!(error.code(), "path.missing_parent");
    }

    #[test]
    fn missing_parent_off_the_selected_chain_is_not_reported() {
        let entries = vec![
            message_entry("root", None),
            message_entry("orphan", Some("ghost")),
            message_entry("leaf", Some("root")),
        ];
        assert_eq!(ids(&path_to(&entries, "leaf").unwrap()), ["root", "leaf"]);
    }

    #[test]
    fn cycle_reports_the_entry_reached_twice() {
        let entries = vec![
            message_entry("a", Some("c")),
            message_entry("b", Some("a")),
            message_entry("c", Some("b")),
            message_entry("leaf", Some("c")),
        ];
        let error = path_to(&entries, "leaf").unwrap_err();
        assert_eq!(
            error,
            PathError::Cycle {
                leaf: "leaf".to_string(),
                entry: "c".to_string()
            }
        );
        assert_eq!(error.code(), "path.cycle");
    }

    #[test]
    fn self_parent_is_a_cycle() {
        let entries = vec![message_entry("self", Some("self"))];
        let error = path_to(&entries, "self").unwrap_err();
        assert_eq!(
            error,
            PathError::Cycle {
                leaf: "self".to_string(),
                entry: "self".to_string()
            }
        );
    }
}
