//! `check_session`: what is wrong with a parsed session file, one finding per problem, each on
//! its 1-based line with a stable code.
//!
//! The checks read the few facts of each raw JSON record they need ([`LineFacts`]), not
//! `model::SessionEntry`, so that an entry of a type the kit does not model (or a new one Pi
//! adds) is judged by its identity fields alone and never stops the other checks.
//!
//! **Streamed.** [`check_session_from`] reads a file line by line and keeps only the tree's
//! index: every entry's line, id, parent, type, tool calls and tool result, with each id held
//! once (interned), and the findings as line, code and the numbers of what they name; a finding's
//! message is written only when it is shown. Its memory grows with the entries and their ids,
//! never with the text around them (tool results, messages, usage), and the file is read once.
//! [`check_session`] judges a file already parsed the same way, from the same facts.
//!
//! One concept: the checks all read one index, built as the file streams, and the index's types
//! are theirs alone. The longest check, the tool calls' walk of the tree, is the child module
//! `tools.rs`, which reads those types where they are; a store's own typed entries are indexed
//! without a file by `stored.rs` ([`check_stored_entries`]).
//!
//! Every check is a pure function of the index; findings are sorted by line, then code, then
//! message, and no hash-map order reaches them (the maps are only looked up). Every check is
//! linear in the file (up to hash lookups).
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

mod stored;
mod tools;

pub use stored::check_stored_entries;

use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};
use std::io::BufRead;

use hashbrown::HashTable;

use serde::Serialize;
use serde_json::Value;

use super::facts::{Field, LineFacts, Shape};
use super::file::{read_session, Keep, Limits, ParsedSession, SessionFileError, TornTail};

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

/// Every finding of a parsed session file, sorted by line, then code, then message.
pub fn check_session(session: &ParsedSession) -> Vec<SessionFinding> {
    let mut index = SessionIndex::default();
    if let Some(header) = &session.header {
        index.add_header(header.line, &header.value);
    }
    for record in &session.records {
        index.add_record(record.line, LineFacts::of_value(&record.value));
    }
    index.torn = session.torn;
    index.check().findings().collect()
}

/// Reads a session file line by line and judges it, keeping only the tree's index (see the
/// module docs); `Err` when it is not a session file at all, as [`super::parse_session_from`].
pub fn check_session_from(reader: impl BufRead, limits: Limits) -> Result<SessionCheck, SessionFileError> {
    let mut index = SessionIndex::default();
    let torn = read_session(reader, limits, Keep::Facts, |line| {
        match (&line.value, line.is_header) {
            (Some(header), true) => index.add_header(line.line, header),
            _ => index.add_record(line.line, line.facts),
        }
    })?;
    index.torn = torn;
    Ok(index.check())
}

/// A judged session file: its findings in order, each rendered when it is asked for.
pub struct SessionCheck {
    /// The header and every other complete, non-blank line.
    records: usize,
    /// Sorted by line, then code, then message.
    found: Vec<Found>,
    tree: Tree,
}

impl SessionCheck {
    /// How many records the file holds: the header and every other complete, non-blank line.
    pub fn records(&self) -> usize {
        self.records
    }

    pub fn len(&self) -> usize {
        self.found.len()
    }

    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Every finding, in order, its message written as it is yielded.
    pub fn findings(&self) -> impl Iterator<Item = SessionFinding> + '_ {
        self.found.iter().map(|found| self.tree.render(found))
    }

    /// How many findings of each code.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for found in &self.found {
            *counts.entry(found.code.as_str()).or_default() += 1;
        }
        counts
    }
}

/// No node or no string: above a root, outside the tree, or not there.
const NONE: usize = usize::MAX;

/// Every distinct string of the index (ids, parent ids, call ids, types), held once in one
/// buffer and known by its number in order of first appearance.
#[derive(Default)]
struct Strings {
    /// Every string, one after the other.
    text: String,
    /// Where each string ends in `text` (it starts where the one before it ends).
    ends: Vec<usize>,
}

impl Strings {
    fn text(&self, number: usize) -> &str {
        let start = if number == 0 { 0 } else { self.ends[number - 1] };
        &self.text[start..self.ends[number]]
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// [`Strings`] while the file is read: each string's number found by the hash of its text. The
/// table is dropped once the file is read.
struct Interner {
    strings: Strings,
    numbers: HashTable<usize>,
    hasher: RandomState,
}

impl Default for Interner {
    fn default() -> Interner {
        Interner {
            strings: Strings::default(),
            numbers: HashTable::new(),
            hasher: RandomState::new(),
        }
    }
}

impl Interner {
    fn intern(&mut self, text: &str) -> usize {
        let hash = self.hasher.hash_one(text);
        let Interner {
            strings,
            numbers,
            hasher,
        } = self;
        if let Some(number) = numbers.find(hash, |number| strings.text(*number) == text) {
            return *number;
        }
        let number = strings.len();
        strings.text.push_str(text);
        strings.ends.push(strings.text.len());
        numbers.insert_unique(hash, number, |number| hasher.hash_one(strings.text(*number)));
        number
    }
}

/// One entry of the file: its identity fields and the facts the tool checks need, with every
/// string a number of [`Strings`].
struct Node {
    line: usize,
    id: usize,
    /// `NONE` for a root (`parentId: null`).
    parent_id: usize,
    kind: usize,
    /// Where its tool calls (an assistant message's) start in [`SessionIndex::call_ids`]; they
    /// end where the next node's start.
    calls_start: usize,
    /// The `toolCallId` of a tool result message whose id is a string, else `NONE`.
    result_call_id: usize,
    /// A message entry whose role is `toolResult`, whatever its `toolCallId`.
    is_tool_result: bool,
}

/// A finding as the checks record it: its line, its code and what its message names, as
/// numbers of the index; the message is written by [`Tree::render`] when it is shown.
struct Found {
    line: usize,
    code: FindingCode,
    about: About,
}

/// What a finding's message says, by code.
enum About {
    /// A message that names nothing of the file.
    Fixed(&'static str),
    /// `header.invalid`: the header's problems.
    Text(String),
    DuplicateId {
        id: usize,
        first_line: usize,
    },
    Orphan {
        node: usize,
    },
    ExtraRoot {
        node: usize,
        root_line: usize,
    },
    /// The cycle's member on its first line; the others follow by parent.
    Cycle {
        first: usize,
    },
    UnansweredCall {
        call_id: usize,
    },
    UnmatchedResult {
        call_id: usize,
    },
    DuplicateResult {
        call_id: usize,
        first_line: usize,
    },
    Interleaved {
        node: usize,
        call_id: usize,
        result_line: usize,
    },
    TornTail {
        bytes: u64,
    },
}

/// What the checks gather while the file is read, one record at a time.
#[derive(Default)]
struct SessionIndex {
    records: usize,
    header_seen: bool,
    /// The line of the first record that is not a `session` header.
    first_entry_line: Option<usize>,
    interner: Interner,
    /// Per string: the first node whose id it is, or `NONE`.
    first_node_by_id: Vec<usize>,
    nodes: Vec<Node>,
    /// The tool calls of every node, in node order ([`Node::calls_start`]).
    call_ids: Vec<usize>,
    first_root_line: Option<usize>,
    found: Vec<Found>,
    torn: Option<TornTail>,
}

impl SessionIndex {
    fn intern(&mut self, text: &str) -> usize {
        let number = self.interner.intern(text);
        if number == self.first_node_by_id.len() {
            self.first_node_by_id.push(NONE);
        }
        number
    }

    /// The `session` header on line 1.
    fn add_header(&mut self, line: usize, header: &Value) {
        self.records += 1;
        self.header_seen = true;
        let problems = header_problems(header);
        if !problems.is_empty() {
            self.found.push(Found {
                line,
                code: FindingCode::HeaderInvalid,
                about: About::Text(problems.join("; ")),
            });
        }
    }

    /// Any other record, in file order.
    fn add_record(&mut self, line: usize, facts: LineFacts) {
        self.records += 1;
        if facts.kind() == Some("session") {
            self.found.push(Found {
                line,
                code: FindingCode::HeaderMisplaced,
                about: About::Fixed("a `session` header on a later line: the header belongs on line 1 only"),
            });
            return;
        }
        self.first_entry_line.get_or_insert(line);
        let (kind, id, parent_id) = match identity(&facts) {
            Ok(identity) => identity,
            Err(problem) => {
                self.found.push(Found {
                    line,
                    code: FindingCode::EntryMalformed,
                    about: About::Fixed(problem),
                });
                return;
            }
        };
        let index = self.nodes.len();
        let kind = self.intern(kind);
        let id = self.intern(id);
        let parent_id = parent_id.map_or(NONE, |parent_id| self.intern(parent_id));
        match self.first_node_by_id[id] {
            NONE => self.first_node_by_id[id] = index,
            first => self.found.push(Found {
                line,
                code: FindingCode::EntryDuplicateId,
                about: About::DuplicateId {
                    id,
                    first_line: self.nodes[first].line,
                },
            }),
        }
        if parent_id == NONE {
            match self.first_root_line {
                None => self.first_root_line = Some(line),
                Some(root_line) => self.found.push(Found {
                    line,
                    code: FindingCode::EntryExtraRoot,
                    about: About::ExtraRoot { node: index, root_line },
                }),
            }
        }
        let calls_start = self.call_ids.len();
        for call_id in facts.tool_call_ids() {
            let call_id = self.intern(call_id);
            self.call_ids.push(call_id);
        }
        let result_call_id = facts.tool_result_call_id().map_or(NONE, |call_id| self.intern(call_id));
        self.nodes.push(Node {
            line,
            id,
            parent_id,
            kind,
            calls_start,
            result_call_id,
            is_tool_result: facts.is_tool_result(),
        });
    }

    /// The checks that need the whole file: a lost header, orphans, cycles, the tool calls,
    /// a torn tail; then the findings in order.
    fn check(self) -> SessionCheck {
        let SessionIndex {
            records,
            header_seen,
            first_entry_line,
            interner,
            first_node_by_id,
            nodes,
            call_ids,
            first_root_line: _,
            mut found,
            torn,
        } = self;
        if let (false, Some(line)) = (header_seen, first_entry_line) {
            found.push(Found {
                line,
                code: FindingCode::HeaderMissing,
                about: About::Fixed(if line == 1 {
                    "line 1 is an entry, not the `session` header: the header was lost or the file was recreated \
                     without it"
                } else {
                    "no `session` header on line 1: the header was lost or the file was recreated without it"
                }),
            });
        }
        // The first entry of each id; later duplicates were reported and are not parents.
        let parent: Vec<usize> = nodes
            .iter()
            .map(|node| match node.parent_id {
                NONE => NONE,
                parent_id => first_node_by_id[parent_id],
            })
            .collect();
        for (index, node) in nodes.iter().enumerate() {
            if node.parent_id != NONE && parent[index] == NONE {
                found.push(Found {
                    line: node.line,
                    code: FindingCode::EntryOrphan,
                    about: About::Orphan { node: index },
                });
            }
        }
        // The hash table is not needed any more: only the texts, for the messages.
        let Interner { strings, numbers, .. } = interner;
        drop(numbers);
        let tree = Tree {
            strings,
            nodes,
            call_ids,
            parent,
        };
        find_cycles(&tree, &first_node_by_id, &mut found);
        drop(first_node_by_id);
        tools::check_tool_calls(&tree, &mut found);
        if let Some(torn) = torn {
            found.push(Found {
                line: torn.line,
                code: FindingCode::FileTornTail,
                about: About::TornTail { bytes: torn.bytes },
            });
        }
        sort_findings(&tree, &mut found);
        SessionCheck { records, found, tree }
    }
}

/// Findings by line, then code, then message: only findings that share a line and a code
/// (several unanswered calls of one entry) have their messages written to be compared.
fn sort_findings(tree: &Tree, found: &mut [Found]) {
    found.sort_unstable_by_key(|found| (found.line, found.code));
    let mut start = 0;
    while start < found.len() {
        let key = (found[start].line, found[start].code);
        let end = start
            + found[start..]
                .iter()
                .take_while(|next| (next.line, next.code) == key)
                .count();
        if end - start > 1 {
            found[start..end].sort_by_cached_key(|found| tree.render(found).message);
        }
        start = end;
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

/// An entry's `type`, `id` and `parentId` (`None` for a root), or what is malformed.
fn identity(facts: &LineFacts) -> Result<(&str, &str, Option<&str>), &'static str> {
    if facts.shape != Shape::Object {
        return Err("not a JSON object");
    }
    let kind = match &facts.kind {
        Field::String(kind) => kind.as_str(),
        Field::Missing => return Err("field `type`: missing"),
        Field::Null | Field::Other => return Err("field `type`: must be a string"),
    };
    let id = match &facts.id {
        Field::String(id) => id.as_str(),
        Field::Missing => return Err("field `id`: missing"),
        Field::Null | Field::Other => return Err("field `id`: must be a string"),
    };
    let parent_id = match &facts.parent_id {
        Field::String(parent_id) => Some(parent_id.as_str()),
        Field::Null => None,
        Field::Missing => return Err("field `parentId`: missing"),
        Field::Other => return Err("field `parentId`: must be a string or null"),
    };
    Ok((kind, id, parent_id))
}

/// The index once the whole file is read: the nodes and their parents, which the checks walk
/// and the messages name.
struct Tree {
    strings: Strings,
    nodes: Vec<Node>,
    call_ids: Vec<usize>,
    /// Per node, the first node of its parent's id, or `NONE` (a root or an orphan).
    parent: Vec<usize>,
}

impl Tree {
    fn tool_call_ids(&self, node: usize) -> &[usize] {
        let end = self
            .nodes
            .get(node + 1)
            .map_or(self.call_ids.len(), |next| next.calls_start);
        &self.call_ids[self.nodes[node].calls_start..end]
    }

    fn id(&self, node: usize) -> &str {
        self.strings.text(self.nodes[node].id)
    }

    /// The finding with its message written.
    fn render(&self, found: &Found) -> SessionFinding {
        let text = |number: usize| self.strings.text(number);
        let message = match &found.about {
            About::Fixed(message) => message.to_string(),
            About::Text(message) => message.clone(),
            About::DuplicateId { id, first_line } => {
                format!("id `{}` is also the id of line {first_line}", text(*id))
            }
            About::Orphan { node } => format!(
                "entry `{}` names parent `{}`, which no entry of the file has",
                self.id(*node),
                text(self.nodes[*node].parent_id)
            ),
            About::ExtraRoot { node, root_line } => format!(
                "entry `{}` is a second root (`parentId: null`); line {root_line} is the first",
                self.id(*node)
            ),
            About::Cycle { first } => {
                let mut members = vec![*first];
                let mut current = self.parent[*first];
                while current != *first && current != NONE {
                    members.push(current);
                    current = self.parent[current];
                }
                let ids: Vec<String> = members
                    .iter()
                    .map(|member| format!("`{}` (line {})", self.id(*member), self.nodes[*member].line))
                    .collect();
                format!(
                    "the parent chain loops: {} -> `{}` again",
                    ids.join(" -> "),
                    self.id(*first)
                )
            }
            About::UnansweredCall { call_id } => {
                format!("tool call `{}` has no toolResult anywhere in the file", text(*call_id))
            }
            About::UnmatchedResult { call_id } => {
                format!("toolResult for `{}` matches no earlier tool call", text(*call_id))
            }
            About::DuplicateResult { call_id, first_line } => format!(
                "a second toolResult for tool call `{}` on the same path (line {first_line} answered it first): \
                 a provider rejects a second result for one call id",
                text(*call_id)
            ),
            About::Interleaved {
                node,
                call_id,
                result_line,
            } => format!(
                "`{}` entry `{}` sits between tool call `{}` and its result on line {result_line}",
                text(self.nodes[*node].kind),
                self.id(*node),
                text(*call_id)
            ),
            About::TornTail { bytes } => format!(
                "the last line ({bytes} bytes) has no terminating newline: a write cut short, not part of the session"
            ),
        };
        SessionFinding {
            line: found.line,
            code: found.code,
            message,
        }
    }
}

/// One finding per parent cycle, on the cycle's first line.
///
/// Each first entry of an id is walked up once: a walk stops at an entry already settled (its
/// chain ends at a root, an orphan or a reported cycle) or at one already on the walk, which
/// closes a cycle. A later entry of a duplicate id is never a parent, and its id was settled
/// with the first.
fn find_cycles(tree: &Tree, first_node_by_id: &[usize], found: &mut Vec<Found>) {
    const UNKNOWN: u8 = 0;
    const ON_WALK: u8 = 1;
    const SETTLED: u8 = 2;
    let mut state = vec![UNKNOWN; tree.nodes.len()];
    let mut position = vec![0usize; tree.nodes.len()];
    let mut chain: Vec<usize> = Vec::new();
    for (start, node) in tree.nodes.iter().enumerate() {
        if first_node_by_id[node.id] != start {
            continue;
        }
        let mut current = start;
        while current != NONE && state[current] != SETTLED {
            if state[current] == ON_WALK {
                let cycle = &chain[position[current]..];
                let first = cycle
                    .iter()
                    .copied()
                    .min_by_key(|member| tree.nodes[*member].line)
                    .unwrap_or(current);
                found.push(Found {
                    line: tree.nodes[first].line,
                    code: FindingCode::EntryCycle,
                    about: About::Cycle { first },
                });
                break;
            }
            state[current] = ON_WALK;
            position[current] = chain.len();
            chain.push(current);
            current = tree.parent[current];
        }
        for member in chain.drain(..) {
            state[member] = SETTLED;
        }
    }
}
