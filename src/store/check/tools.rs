//! The tool calls' check: unanswered calls, results without an earlier call, second results
//! for one call, and entries between a call and its result, found by one depth-first walk of
//! the index's parent tree.

use std::collections::HashMap;

use super::{About, FindingCode, Found, Tree, NONE};

/// Unanswered calls, results without an earlier call, second results for one call, and entries
/// between a call and its result.
///
/// Linear in the file (up to hash lookups): one depth-first walk of the parent tree finds, for
/// every tool result, the nearest entry above it that made its call and whether an earlier result
/// on the same path already answered that call; then each entry between a call and its result is
/// reported once, found by walking up over entries not yet reported (a union-find with path
/// compression skips the ones already reported and every tool result). Entries in or below a
/// parent cycle are left to `entry.cycle`.
pub(super) fn check_tool_calls(tree: &Tree, found: &mut Vec<Found>) {
    // Per string: answered by some tool result of the file; called by a tool call seen so far.
    let mut answered = vec![false; tree.strings.len()];
    for node in &tree.nodes {
        if node.result_call_id != NONE {
            answered[node.result_call_id] = true;
        }
    }
    let mut called = vec![false; tree.strings.len()];
    let walk = ToolWalk::new(tree);
    // Entries between a call and its result not yet reported; the rest are skipped on the way up.
    let mut live: Vec<bool> = tree.nodes.iter().map(|node| !node.is_tool_result).collect();
    let mut next_up: Vec<usize> = tree.parent.clone();
    for (index, node) in tree.nodes.iter().enumerate() {
        for &call_id in tree.tool_call_ids(index) {
            called[call_id] = true;
            if !answered[call_id] {
                found.push(Found {
                    line: node.line,
                    code: FindingCode::ToolUnansweredCall,
                    about: About::UnansweredCall { call_id },
                });
            }
        }
        let call_id = node.result_call_id;
        if call_id == NONE {
            continue;
        }
        if !called[call_id] {
            found.push(Found {
                line: node.line,
                code: FindingCode::ToolUnmatchedResult,
                about: About::UnmatchedResult { call_id },
            });
            continue;
        }
        let Some(answer) = &walk.answers[index] else {
            continue;
        };
        if let Some(first_line) = answer.earlier_result_line {
            found.push(Found {
                line: node.line,
                code: FindingCode::ToolDuplicateResult,
                about: About::DuplicateResult { call_id, first_line },
            });
        }
        let call_depth = walk.depth[answer.call];
        let mut current = find_live(tree.parent[index], &live, &mut next_up);
        while current != NONE && walk.depth[current] > call_depth {
            found.push(Found {
                line: tree.nodes[current].line,
                code: FindingCode::ToolInterleavedEntry,
                about: About::Interleaved {
                    node: current,
                    call_id,
                    result_line: node.line,
                },
            });
            live[current] = false;
            current = find_live(tree.parent[current], &live, &mut next_up);
        }
    }
}

/// The nearest live node at or above `start`, compressing the path walked.
fn find_live(start: usize, live: &[bool], next_up: &mut [usize]) -> usize {
    let mut found = start;
    while found != NONE && !live[found] {
        found = next_up[found];
    }
    let mut current = start;
    while current != NONE && current != found {
        let up = next_up[current];
        next_up[current] = found;
        current = up;
    }
    found
}

/// What the tree walk found for one tool result.
struct Answer {
    /// The node that made the call: the nearest one above the result whose tool calls include it.
    call: usize,
    /// The line of an earlier result for the same call on the path between them.
    earlier_result_line: Option<usize>,
}

/// The depth-first walk of the parent tree (nothing in or below a cycle): every node's depth
/// and, per tool result, what answers it.
struct ToolWalk {
    depth: Vec<usize>,
    answers: Vec<Option<Answer>>,
}

impl ToolWalk {
    fn new(tree: &Tree) -> ToolWalk {
        let count = tree.nodes.len();
        let parent = &tree.parent;
        // Which nodes reach a root: the others are in or below a cycle.
        const UNKNOWN: u8 = 0;
        const ON_WALK: u8 = 1;
        const REACHES_ROOT: u8 = 2;
        const REACHES_CYCLE: u8 = 3;
        let mut state = vec![UNKNOWN; count];
        let mut walk = Vec::new();
        for start in 0..count {
            let mut current = start;
            while current != NONE && state[current] == UNKNOWN {
                state[current] = ON_WALK;
                walk.push(current);
                current = parent[current];
            }
            let ends_in_cycle = current != NONE && matches!(state[current], ON_WALK | REACHES_CYCLE);
            for node in walk.drain(..) {
                state[node] = if ends_in_cycle { REACHES_CYCLE } else { REACHES_ROOT };
            }
        }
        // The children of every node that reaches a root, in file order, packed in one list.
        let mut child_start = vec![0usize; count + 1];
        let mut roots = Vec::new();
        for index in 0..count {
            if state[index] != REACHES_ROOT {
                continue;
            }
            match parent[index] {
                NONE => roots.push(index),
                up => child_start[up + 1] += 1,
            }
        }
        for index in 0..count {
            child_start[index + 1] += child_start[index];
        }
        let mut children = vec![0usize; child_start[count]];
        let mut filled = child_start.clone();
        for index in 0..count {
            if state[index] == REACHES_ROOT && parent[index] != NONE {
                let up = parent[index];
                children[filled[up]] = index;
                filled[up] += 1;
            }
        }
        drop(filled);
        drop(state);
        let mut walk = ToolWalk {
            depth: vec![0; count],
            answers: (0..count).map(|_| None).collect(),
        };
        // The open calls on the current path, innermost last, and per call id its innermost one.
        let mut open_calls = OpenCalls::default();
        // (node, entered): a node is entered, its children walked, then it is left.
        let mut stack: Vec<(usize, bool)> = roots.iter().rev().map(|root| (*root, false)).collect();
        while let Some((index, entered)) = stack.pop() {
            let node = &tree.nodes[index];
            if entered {
                for _ in tree.tool_call_ids(index) {
                    open_calls.close();
                }
                if let (true, Some(answer)) = (node.result_call_id != NONE, &walk.answers[index]) {
                    if answer.earlier_result_line.is_none() {
                        if let Some(call) = open_calls.innermost(node.result_call_id) {
                            call.first_result_line = None;
                        }
                    }
                }
                continue;
            }
            walk.depth[index] = match parent[index] {
                NONE => 0,
                up => walk.depth[up] + 1,
            };
            if let Some(call) = open_calls.innermost(node.result_call_id) {
                let earlier_result_line = call.first_result_line;
                if earlier_result_line.is_none() {
                    call.first_result_line = Some(node.line);
                }
                walk.answers[index] = Some(Answer {
                    call: call.node,
                    earlier_result_line,
                });
            }
            for call_id in tree.tool_call_ids(index) {
                open_calls.open(*call_id, index);
            }
            stack.push((index, true));
            stack.extend(
                children[child_start[index]..child_start[index + 1]]
                    .iter()
                    .rev()
                    .map(|child| (*child, false)),
            );
        }
        walk
    }
}

/// A tool call open on the path the walk is on.
struct OpenCall {
    call_id: usize,
    /// The node that made it.
    node: usize,
    /// The line of the first result below it on the path, once there is one.
    first_result_line: Option<usize>,
    /// The next call of the same id further out, or `NONE`.
    outer: usize,
}

/// The open calls of the walk's path: one stack (calls close in the reverse order they open),
/// and per call id the innermost open one.
#[derive(Default)]
struct OpenCalls {
    calls: Vec<OpenCall>,
    innermost_by_id: HashMap<usize, usize>,
}

impl OpenCalls {
    fn open(&mut self, call_id: usize, node: usize) {
        let outer = self.innermost_by_id.insert(call_id, self.calls.len()).unwrap_or(NONE);
        self.calls.push(OpenCall {
            call_id,
            node,
            first_result_line: None,
            outer,
        });
    }

    /// Closes the innermost open call.
    fn close(&mut self) {
        let Some(call) = self.calls.pop() else {
            return;
        };
        match call.outer {
            NONE => self.innermost_by_id.remove(&call.call_id),
            outer => self.innermost_by_id.insert(call.call_id, outer),
        };
    }

    /// The innermost open call of `call_id` (none for `NONE`, which is no call id).
    fn innermost(&mut self, call_id: usize) -> Option<&mut OpenCall> {
        let position = *self.innermost_by_id.get(&call_id)?;
        self.calls.get_mut(position)
    }
}
