//! PERSIST-9's quick test: whether a store's entries can give `check-session` nothing to find
//! that its initial entries do not, decided by a sort of the ids rather than the file's whole
//! index, so that the rule costs little on the sound sessions most traces end with. A property
//! test holds it to `check-session`: it never calls a store sound that `check-session` faults.

use crate::model::{AssistantBlock, Message, SessionEntry};

/// Whether `check-session` can find nothing in the store that its first `initial` entries do not
/// give, decided by a test that costs a sort of the ids rather than the file's whole index (most
/// traces store a sound session, and every trace is judged): every id is stored once; each added
/// entry's parent was stored before it (so no orphan, no cycle) and no initial entry's parent is
/// an added one; an added root is the store's first; each added tool call has a result stored;
/// and each added result hangs below its call with only results of other calls between them.
/// `true` is the exact answer; `false` may be a false alarm, and the checker then asks
/// `check-session` (a test holds the two to that).
pub(super) fn plainly_sound(store: &[&SessionEntry], initial: usize) -> bool {
    let mut by_id: Vec<(&str, usize)> = store
        .iter()
        .enumerate()
        .map(|(at, entry)| (entry.id.as_str(), at))
        .collect();
    by_id.sort_unstable();
    if by_id.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        return false;
    }
    let position = |id: &str| {
        by_id
            .binary_search_by(|(other, _)| other.cmp(&id))
            .ok()
            .map(|found| by_id[found].1)
    };
    let parent_at = |entry: &SessionEntry| entry.parent_id.as_deref().and_then(position);
    if store[..initial]
        .iter()
        .any(|entry| parent_at(entry).is_some_and(|at| at >= initial))
    {
        return false;
    }
    let mut answered: Vec<&str> = store.iter().filter_map(|entry| result_call(entry)).collect();
    answered.sort_unstable();
    let mut root_seen = store[..initial].iter().any(|entry| entry.parent_id.is_none());
    for (at, entry) in store.iter().enumerate().skip(initial) {
        match (&entry.parent_id, parent_at(entry)) {
            (None, _) if root_seen => return false,
            (None, _) => root_seen = true,
            (Some(_), Some(parent)) if parent < at => {}
            (Some(_), _) => return false,
        }
        if calls(entry).any(|call| answered.binary_search(&call).is_err()) {
            return false;
        }
        let Some(call) = result_call(entry) else {
            continue;
        };
        // Up over the results of other calls to the entry that made this one.
        let mut below = at;
        loop {
            match parent_at(store[below]) {
                Some(above) if above < below => {
                    if calls(store[above]).any(|made| made == call) {
                        break;
                    }
                    if result_call(store[above]).is_none_or(|other| other == call) {
                        return false;
                    }
                    below = above;
                }
                _ => return false,
            }
        }
    }
    true
}

/// The tool call ids of an assistant message entry, in order.
pub(super) fn calls(entry: &SessionEntry) -> impl Iterator<Item = &str> {
    let content = match entry.as_message() {
        Some(Message::Assistant(assistant)) => assistant.content.as_slice(),
        _ => &[],
    };
    content.iter().filter_map(|block| match block {
        AssistantBlock::ToolCall(call) => Some(call.id.as_str()),
        _ => None,
    })
}

/// The call a tool result message entry answers.
pub(super) fn result_call(entry: &SessionEntry) -> Option<&str> {
    match entry.as_message() {
        Some(Message::ToolResult(result)) => Some(result.tool_call_id.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::model::SessionEntry;

    /// An entry: a user message (kind 0), an assistant message making `calls` (1), the result
    /// of `calls[0]` (2) or a metadata entry (3).
    fn entry(kind: u8, id: &str, parent: Option<&str>, calls: &[&str]) -> SessionEntry {
        let parent = parent.map_or("null".to_string(), |parent| format!("\"{parent}\""));
        let identity = format!("\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\"");
        let blocks: Vec<String> = calls
            .iter()
            .map(|call| format!("{{\"type\":\"toolCall\",\"id\":\"{call}\",\"name\":\"t\",\"arguments\":{{}}}}"))
            .collect();
        let text = match kind {
            0 => format!("{{\"type\":\"message\",{identity},\"message\":{{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":0}}}}"),
            1 => format!(
                "{{\"type\":\"message\",{identity},\"message\":{{\"role\":\"assistant\",\"content\":[{}],\"api\":\"a\",\
                 \"provider\":\"p\",\"model\":\"m\",\"usage\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\
                 \"totalTokens\":0,\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}}},\
                 \"stopReason\":\"toolUse\",\"timestamp\":0}}}}",
                blocks.join(",")
            ),
            2 => format!(
                "{{\"type\":\"message\",{identity},\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"{}\",\
                 \"toolName\":\"t\",\"content\":[],\"isError\":false,\"timestamp\":0}}}}",
                calls[0]
            ),
            _ => format!("{{\"type\":\"custom\",{identity},\"customType\":\"note\"}}"),
        };
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    /// A sound store, one chain of `blocks` (0 a user message, 1 an assistant message whose one
    /// call is answered, 2 one whose two calls are, 3 a metadata entry, 4 an assistant message
    /// without calls), then bent by `damage`: each `(how, at, other)` sets entry `at`'s parent to
    /// entry `other`'s id (1), to a missing id (2) or to none (3), gives it entry `other`'s id
    /// (4), drops it (5), stores a metadata entry between it and the entry below it (6), moves it
    /// to the end of the store (7), or leaves it (0).
    fn generated_store(blocks: &[u8], damage: &[(u8, u8, u8)]) -> Vec<SessionEntry> {
        let mut store: Vec<SessionEntry> = Vec::new();
        let push = |store: &mut Vec<SessionEntry>, kind: u8, calls: &[&str]| {
            let parent = store.last().map(|last: &SessionEntry| last.id.clone());
            let id = format!("e{}", store.len());
            store.push(entry(kind, &id, parent.as_deref(), calls));
        };
        for (block, kind) in blocks.iter().enumerate() {
            let (first, second) = (format!("c{block}a"), format!("c{block}b"));
            match kind % 5 {
                0 => push(&mut store, 0, &[]),
                1 => {
                    push(&mut store, 1, &[&first]);
                    push(&mut store, 2, &[&first]);
                }
                2 => {
                    push(&mut store, 1, &[&first, &second]);
                    push(&mut store, 2, &[&first]);
                    push(&mut store, 2, &[&second]);
                }
                3 => push(&mut store, 3, &[]),
                _ => push(&mut store, 1, &[]),
            }
        }
        for (how, at, other) in damage {
            if store.is_empty() {
                break;
            }
            let at = usize::from(*at) % store.len();
            let other = store[usize::from(*other) % store.len()].id.clone();
            match how % 8 {
                1 => store[at].parent_id = Some(other),
                2 => store[at].parent_id = Some("missing".into()),
                3 => store[at].parent_id = None,
                4 => store[at].id = other,
                5 => {
                    store.remove(at);
                }
                6 => {
                    let id = format!("m{at}");
                    let above = store[at].id.clone();
                    for below in store
                        .iter_mut()
                        .filter(|below| below.parent_id.as_deref() == Some(&above))
                    {
                        below.parent_id = Some(id.clone());
                    }
                    store.insert(at + 1, entry(3, &id, Some(&above), &[]));
                }
                7 => {
                    let moved = store.remove(at);
                    store.push(moved);
                }
                _ => {}
            }
        }
        store
    }

    /// A run's sound suffix below a restored leaf is plainly sound; with a metadata entry between
    /// a call and its result it is not, and `check-session` names the entry.
    #[test]
    fn a_sound_suffix_is_plainly_sound() {
        let store = generated_store(&[0, 4, 0, 2, 3, 1, 4], &[]);
        let lent: Vec<&SessionEntry> = store.iter().collect();
        assert!(super::plainly_sound(&lent, 2));
        assert!(super::super::stored_findings(&lent, &store[..2]).is_empty());
        // Block 3's calls are entries 3 to 5: a metadata entry below the call.
        let store = generated_store(&[0, 4, 0, 2, 3, 1, 4], &[(6, 3, 0)]);
        let lent: Vec<&SessionEntry> = store.iter().collect();
        assert!(!super::plainly_sound(&lent, 2));
        let codes: Vec<&str> = super::super::stored_findings(&lent, &store[..2])
            .iter()
            .map(|(_, finding)| finding.code.as_str())
            .collect();
        assert_eq!(codes, ["tool.interleaved_entry"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// The quick test never hides a finding: when it says a store is plainly sound,
        /// `check-session` finds nothing its initial entries do not give.
        #[test]
        fn plainly_sound_hides_no_finding(
            blocks in proptest::collection::vec(0u8..5, 0..6),
            damage in proptest::collection::vec((0u8..16, 0u8..16, 0u8..16), 0..3),
            initial in 0usize..8,
        ) {
            let store = generated_store(&blocks, &damage);
            let initial = initial.min(store.len());
            let lent: Vec<&SessionEntry> = store.iter().collect();
            if super::plainly_sound(&lent, initial) {
                let found = super::super::stored_findings(&lent, &store[..initial]);
                proptest::prop_assert!(found.is_empty(), "{found:?}");
            }
        }
    }
}
