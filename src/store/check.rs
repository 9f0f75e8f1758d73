//! `check_session`: what is wrong with a parsed session file, one finding per problem, each on
//! its 1-based line with a stable code.
//!
//! The checks read the raw JSON records, not `model::SessionEntry`, so that an entry of a type
//! the kit does not model (or a new one Pi adds) is judged by its identity fields alone and never
//! stops the other checks. Every check is a pure function of the records; findings are sorted by
//! line, then code, and no hash-map order reaches them. Every check is linear in the file (up to
//! ordered-map lookups): a damaged file of 100,000 lines is judged in well under a second.
//!
//! The findings and what they mean:
//!
//! | code | on the line of | meaning |
//! |---|---|---|
//! | `header.missing` | the first record | line 1 is an entry: the header was lost, or the file recreated without it |
//! | `header.misplaced` | the extra header | a `session` header on a later line |
//! | `header.invalid` | line 1 | the header's `version` is not 3, or `id`, `timestamp`, `cwd` are not strings |
//! | `entry.malformed` | the entry | not an object, or no string `id` or `type`, or `parentId` not a string or null |
//! | `entry.duplicate_id` | the later entry | two entries share an id (both lines named) |
//! | `entry.orphan` | the entry | its `parentId` names no entry of the file |
//! | `entry.cycle` | the cycle's first line | following `parentId` comes back to the entry |
//! | `entry.extra_root` | each root after the first | more than one entry has `parentId: null` |
//! | `tool.unanswered_call` | the assistant entry | a tool call no `toolResult` in the file answers |
//! | `tool.unmatched_result` | the tool result | its `toolCallId` matches no earlier tool call |
//! | `tool.interleaved_entry` | the entry in between | a non-result entry between a call and its result |
//! | `tool.duplicate_result` | the later result | a second result for one call on one path (a provider rejects it) |
//! | `file.torn_tail` | the last line | the last line lacks its newline: a write cut short |

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use super::file::{ParsedSession, Record};

/// The only header version Pi 0.73 writes.
pub const PI_SESSION_VERSION: u64 = 3;

/// One problem of a session file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SessionFinding {
    /// 1-based line number.
    pub line: usize,
    pub code: FindingCode,
    pub message: String,
}

/// The kind of a finding; [`as_str`](Self::as_str) is its stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FindingCode {
    HeaderMissing,
    HeaderMisplaced,
    HeaderInvalid,
    EntryMalformed,
    EntryDuplicateId,
    EntryOrphan,
    EntryCycle,
    EntryExtraRoot,
    ToolUnansweredCall,
    ToolUnmatchedResult,
    ToolInterleavedEntry,
    ToolDuplicateResult,
    FileTornTail,
}

impl FindingCode {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingCode::HeaderMissing => "header.missing",
            FindingCode::HeaderMisplaced => "header.misplaced",
            FindingCode::HeaderInvalid => "header.invalid",
            FindingCode::EntryMalformed => "entry.malformed",
            FindingCode::EntryDuplicateId => "entry.duplicate_id",
            FindingCode::EntryOrphan => "entry.orphan",
            FindingCode::EntryCycle => "entry.cycle",
            FindingCode::EntryExtraRoot => "entry.extra_root",
            FindingCode::ToolUnansweredCall => "tool.unanswered_call",
            FindingCode::ToolUnmatchedResult => "tool.unmatched_result",
            FindingCode::ToolInterleavedEntry => "tool.interleaved_entry",
            FindingCode::ToolDuplicateResult => "tool.duplicate_result",
            FindingCode::FileTornTail => "file.torn_tail",
        }
    }
}

impl std::fmt::Display for FindingCode {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

// Findings sort by the code's text, so that the order is the documented one.
impl Ord for FindingCode {
    fn cmp(&self, other: &FindingCode) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for FindingCode {
    fn partial_cmp(&self, other: &FindingCode) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for FindingCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// An entry's identity fields, read from its raw record.
struct Node<'a> {
    line: usize,
    id: &'a str,
    /// `None` for a root (`parentId: null`).
    parent_id: Option<&'a str>,
    record: &'a Record,
}

/// Every finding of a parsed session file, sorted by line, then code.
pub fn check_session(session: &ParsedSession) -> Vec<SessionFinding> {
    let mut findings = Vec::new();
    check_header(session, &mut findings);
    let nodes = check_identity(session, &mut findings);
    // The first entry of each id; later duplicates are reported and then ignored.
    let mut nodes_by_id: BTreeMap<&str, &Node> = BTreeMap::new();
    for node in &nodes {
        nodes_by_id.entry(node.id).or_insert(node);
    }
    check_tree(&nodes, &nodes_by_id, &mut findings);
    check_tool_calls(&nodes, &nodes_by_id, &mut findings);
    if let Some(torn) = session.torn {
        findings.push(SessionFinding {
            line: torn.line,
            code: FindingCode::FileTornTail,
            message: format!(
                "the last line ({} bytes) has no terminating newline: a write cut short, not part of the session",
                torn.bytes
            ),
        });
    }
    findings.sort();
    findings
}

fn check_header(session: &ParsedSession, findings: &mut Vec<SessionFinding>) {
    match &session.header {
        Some(header) => {
            let problems = header_problems(&header.value);
            if !problems.is_empty() {
                findings.push(SessionFinding {
                    line: header.line,
                    code: FindingCode::HeaderInvalid,
                    message: problems.join("; "),
                });
            }
        }
        None => {
            if let Some(first) = session.records.iter().find(|record| record.kind() != Some("session")) {
                let first_is_line_one = first.line == 1;
                findings.push(SessionFinding {
                    line: first.line,
                    code: FindingCode::HeaderMissing,
                    message: if first_is_line_one {
                        "line 1 is an entry, not the `session` header: the header was lost or the file was recreated \
                         without it"
                            .into()
                    } else {
                        "no `session` header on line 1: the header was lost or the file was recreated without it".into()
                    },
                });
            }
        }
    }
    for record in &session.records {
        if record.kind() == Some("session") {
            findings.push(SessionFinding {
                line: record.line,
                code: FindingCode::HeaderMisplaced,
                message: "a `session` header on a later line: the header belongs on line 1 only".into(),
            });
        }
    }
}

/// What is wrong with a header object: version 3 and string `id`, `timestamp`, `cwd`.
fn header_problems(header: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    match header.get("version") {
        Some(Value::Number(version)) if version.as_u64() == Some(PI_SESSION_VERSION) => {}
        Some(version) => problems.push(format!("field `version`: {version}, expected {PI_SESSION_VERSION}")),
        None => problems.push("field `version`: missing".to_string()),
    }
    for key in ["id", "timestamp", "cwd"] {
        match header.get(key) {
            Some(Value::String(_)) => {}
            Some(_) => problems.push(format!("field `{key}`: must be a string")),
            None => problems.push(format!("field `{key}`: missing")),
        }
    }
    problems
}

/// Reads every entry's identity; reports malformed entries and duplicate ids.
fn check_identity<'a>(session: &'a ParsedSession, findings: &mut Vec<SessionFinding>) -> Vec<Node<'a>> {
    let mut nodes = Vec::new();
    let mut first_line_by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for record in &session.records {
        if record.kind() == Some("session") {
            continue;
        }
        let node = match identity(record) {
            Ok(node) => node,
            Err(problem) => {
                findings.push(SessionFinding {
                    line: record.line,
                    code: FindingCode::EntryMalformed,
                    message: problem,
                });
                continue;
            }
        };
        match first_line_by_id.get(node.id) {
            Some(first_line) => findings.push(SessionFinding {
                line: node.line,
                code: FindingCode::EntryDuplicateId,
                message: format!("id `{}` is also the id of line {first_line}", node.id),
            }),
            None => {
                first_line_by_id.insert(node.id, node.line);
            }
        }
        nodes.push(node);
    }
    nodes
}

fn identity(record: &Record) -> Result<Node<'_>, String> {
    let Value::Object(object) = &record.value else {
        return Err("not a JSON object".into());
    };
    match object.get("type") {
        Some(Value::String(_)) => {}
        Some(_) => return Err("field `type`: must be a string".into()),
        None => return Err("field `type`: missing".into()),
    }
    let id = match object.get("id") {
        Some(Value::String(id)) => id.as_str(),
        Some(_) => return Err("field `id`: must be a string".into()),
        None => return Err("field `id`: missing".into()),
    };
    let parent_id = match object.get("parentId") {
        Some(Value::String(parent_id)) => Some(parent_id.as_str()),
        Some(Value::Null) => None,
        Some(_) => return Err("field `parentId`: must be a string or null".into()),
        None => return Err("field `parentId`: missing".into()),
    };
    Ok(Node {
        line: record.line,
        id,
        parent_id,
        record,
    })
}

/// Orphans, cycles and extra roots.
fn check_tree(nodes: &[Node], nodes_by_id: &BTreeMap<&str, &Node>, findings: &mut Vec<SessionFinding>) {
    let mut first_root_line: Option<usize> = None;
    for node in nodes {
        match node.parent_id {
            None => match first_root_line {
                None => first_root_line = Some(node.line),
                Some(root_line) => findings.push(SessionFinding {
                    line: node.line,
                    code: FindingCode::EntryExtraRoot,
                    message: format!(
                        "entry `{}` is a second root (`parentId: null`); line {root_line} is the first",
                        node.id
                    ),
                }),
            },
            Some(parent_id) if !nodes_by_id.contains_key(parent_id) => findings.push(SessionFinding {
                line: node.line,
                code: FindingCode::EntryOrphan,
                message: format!(
                    "entry `{}` names parent `{parent_id}`, which no entry of the file has",
                    node.id
                ),
            }),
            Some(_) => {}
        }
    }
    findings.extend(find_cycles(nodes, nodes_by_id));
}

/// One finding per parent cycle, on the cycle's first line, naming its ids in chain order.
fn find_cycles(nodes: &[Node], nodes_by_id: &BTreeMap<&str, &Node>) -> Vec<SessionFinding> {
    let mut findings = Vec::new();
    // Ids whose chain is known to end (at a root, an orphan or an already reported cycle).
    let mut settled: BTreeSet<&str> = BTreeSet::new();
    for start in nodes {
        let mut chain: Vec<&Node> = Vec::new();
        let mut on_chain: BTreeMap<&str, usize> = BTreeMap::new();
        let mut current = Some(start);
        while let Some(node) = current {
            if settled.contains(node.id) {
                break;
            }
            if let Some(&position) = on_chain.get(node.id) {
                let cycle = &chain[position..];
                let first = cycle
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, member)| member.line)
                    .map_or(0, |(index, _)| index);
                let ids: Vec<String> = cycle[first..]
                    .iter()
                    .chain(&cycle[..first])
                    .map(|member| format!("`{}` (line {})", member.id, member.line))
                    .collect();
                findings.push(SessionFinding {
                    line: cycle[first].line,
                    code: FindingCode::EntryCycle,
                    message: format!(
                        "the parent chain loops: {} -> `{}` again",
                        ids.join(" -> "),
                        cycle[first].id
                    ),
                });
                break;
            }
            on_chain.insert(node.id, chain.len());
            chain.push(node);
            current = node.parent_id.and_then(|parent_id| nodes_by_id.get(parent_id).copied());
        }
        settled.extend(chain.iter().map(|node| node.id));
    }
    findings
}

/// The tool calls of an assistant message entry, as `(call id)` in content order.
fn tool_call_ids(record: &Record) -> Vec<&str> {
    let Some(message) = message_of(record) else {
        return Vec::new();
    };
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return Vec::new();
    }
    let Some(content) = message.get("content").and_then(Value::as_array) else {
        return Vec::new();
    };
    content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("toolCall"))
        .filter_map(|block| block.get("id").and_then(Value::as_str))
        .collect()
}

/// The `toolCallId` of a tool result message entry.
fn tool_result_call_id(record: &Record) -> Option<&str> {
    let message = message_of(record)?;
    if message.get("role").and_then(Value::as_str) != Some("toolResult") {
        return None;
    }
    message.get("toolCallId").and_then(Value::as_str)
}

fn is_tool_result(record: &Record) -> bool {
    message_of(record)
        .and_then(|message| message.get("role"))
        .and_then(Value::as_str)
        == Some("toolResult")
}

fn message_of(record: &Record) -> Option<&Value> {
    if record.kind() != Some("message") {
        return None;
    }
    record.value.get("message")
}

/// Unanswered calls, results without an earlier call, second results for one call, and entries
/// between a call and its result.
///
/// Linear in the file (up to map lookups): one depth-first walk of the parent tree finds, for
/// every tool result, the nearest entry above it that made its call and whether an earlier result
/// on the same path already answered that call; then each entry between a call and its result is
/// reported once, found by walking up over entries not yet reported (a union-find with path
/// compression skips the ones already reported and every tool result). Entries in or below a
/// parent cycle are left to `entry.cycle`.
fn check_tool_calls(nodes: &[Node], nodes_by_id: &BTreeMap<&str, &Node>, findings: &mut Vec<SessionFinding>) {
    let answered: BTreeSet<&str> = nodes
        .iter()
        .filter_map(|node| tool_result_call_id(node.record))
        .collect();
    let tree = ToolTree::new(nodes, nodes_by_id);
    let mut calls_seen: BTreeSet<&str> = BTreeSet::new();
    // Entries between a call and its result not yet reported; the rest are skipped on the way up.
    let mut live: Vec<bool> = nodes.iter().map(|node| !is_tool_result(node.record)).collect();
    let mut next_up: Vec<usize> = tree.parent.clone();
    for (index, node) in nodes.iter().enumerate() {
        for call_id in tool_call_ids(node.record) {
            calls_seen.insert(call_id);
            if !answered.contains(call_id) {
                findings.push(SessionFinding {
                    line: node.line,
                    code: FindingCode::ToolUnansweredCall,
                    message: format!("tool call `{call_id}` has no toolResult anywhere in the file"),
                });
            }
        }
        let Some(call_id) = tool_result_call_id(node.record) else {
            continue;
        };
        if !calls_seen.contains(call_id) {
            findings.push(SessionFinding {
                line: node.line,
                code: FindingCode::ToolUnmatchedResult,
                message: format!("toolResult for `{call_id}` matches no earlier tool call"),
            });
            continue;
        }
        let Some(answer) = &tree.answers[index] else {
            continue;
        };
        if let Some(first_line) = answer.earlier_result_line {
            findings.push(SessionFinding {
                line: node.line,
                code: FindingCode::ToolDuplicateResult,
                message: format!(
                    "a second toolResult for tool call `{call_id}` on the same path (line {first_line} answered it first): \
                     a provider rejects a second result for one call id"
                ),
            });
        }
        let call_depth = tree.depth[answer.call];
        let mut current = find_live(tree.parent[index], &live, &mut next_up);
        while current != NONE && tree.depth[current] > call_depth {
            let between = &nodes[current];
            findings.push(SessionFinding {
                line: between.line,
                code: FindingCode::ToolInterleavedEntry,
                message: format!(
                    "`{}` entry `{}` sits between tool call `{call_id}` and its result on line {}",
                    between.record.kind().unwrap_or("?"),
                    between.id,
                    node.line
                ),
            });
            live[current] = false;
            current = find_live(tree.parent[current], &live, &mut next_up);
        }
    }
}

/// No node: above a root, or outside the tree.
const NONE: usize = usize::MAX;

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

/// The parent tree of the entries (first entry of each id; nothing in or below a cycle) with,
/// per tool result, what answers it.
struct ToolTree {
    parent: Vec<usize>,
    depth: Vec<usize>,
    answers: Vec<Option<Answer>>,
}

impl ToolTree {
    fn new(nodes: &[Node], nodes_by_id: &BTreeMap<&str, &Node>) -> ToolTree {
        let count = nodes.len();
        let index_by_id: BTreeMap<&str, usize> = {
            let mut map = BTreeMap::new();
            for (index, node) in nodes.iter().enumerate() {
                map.entry(node.id).or_insert(index);
            }
            map
        };
        debug_assert_eq!(index_by_id.len(), nodes_by_id.len());
        let parent: Vec<usize> = nodes
            .iter()
            .map(|node| {
                node.parent_id
                    .and_then(|parent_id| index_by_id.get(parent_id).copied())
                    .unwrap_or(NONE)
            })
            .collect();
        // 0 unknown, 1 on the walk, 2 reaches a root, 3 reaches a cycle.
        let mut state = vec![0u8; count];
        let mut walk = Vec::new();
        for start in 0..count {
            let mut current = start;
            while current != NONE && state[current] == 0 {
                state[current] = 1;
                walk.push(current);
                current = parent[current];
            }
            let ends_in_cycle = current != NONE && matches!(state[current], 1 | 3);
            for node in walk.drain(..) {
                state[node] = if ends_in_cycle { 3 } else { 2 };
            }
        }
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); count];
        let mut roots = Vec::new();
        for index in 0..count {
            if state[index] != 2 {
                continue;
            }
            match parent[index] {
                NONE => roots.push(index),
                up => children[up].push(index),
            }
        }
        let mut tree = ToolTree {
            parent,
            depth: vec![0; count],
            answers: (0..count).map(|_| None).collect(),
        };
        // Per call id, the open calls on the current path: (node, line of the first result).
        let mut open_calls: BTreeMap<&str, Vec<(usize, Option<usize>)>> = BTreeMap::new();
        // (node, entered): a node is entered, its children walked, then it is left.
        let mut stack: Vec<(usize, bool)> = roots.iter().rev().map(|root| (*root, false)).collect();
        while let Some((index, entered)) = stack.pop() {
            let node = &nodes[index];
            if entered {
                for call_id in tool_call_ids(node.record) {
                    if let Some(frames) = open_calls.get_mut(call_id) {
                        frames.pop();
                    }
                }
                if let (Some(call_id), Some(answer)) = (tool_result_call_id(node.record), &tree.answers[index]) {
                    if answer.earlier_result_line.is_none() {
                        if let Some(frame) = open_calls.get_mut(call_id).and_then(|frames| frames.last_mut()) {
                            frame.1 = None;
                        }
                    }
                }
                continue;
            }
            tree.depth[index] = match tree.parent[index] {
                NONE => 0,
                up => tree.depth[up] + 1,
            };
            if let Some(call_id) = tool_result_call_id(node.record) {
                if let Some(frame) = open_calls.get_mut(call_id).and_then(|frames| frames.last_mut()) {
                    let earlier_result_line = frame.1;
                    if earlier_result_line.is_none() {
                        frame.1 = Some(node.line);
                    }
                    tree.answers[index] = Some(Answer {
                        call: frame.0,
                        earlier_result_line,
                    });
                }
            }
            for call_id in tool_call_ids(node.record) {
                open_calls.entry(call_id).or_default().push((index, None));
            }
            stack.push((index, true));
            stack.extend(children[index].iter().rev().map(|child| (*child, false)));
        }
        tree
    }
}
