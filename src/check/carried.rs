//! Which operations' prompts the user messages of a request carry, as sent or inside an envelope
//! of the runtime's own (a reminder it prepends): every prompt text is looked for in every user
//! message at once, by an Aho-Corasick automaton over the texts, so reading a request costs its
//! length, not its length times the operations in flight.
//!
//! Reads texts only; which run a request belongs to is the timeline's business.

use std::collections::{HashMap, VecDeque};

use crate::model::Message;

/// The automaton over the distinct non-empty prompt texts of a trace.
pub struct PromptFinder<'a> {
    /// Each distinct non-empty text's pattern number.
    patterns: HashMap<&'a str, usize>,
    /// Node 0 is the root.
    nodes: Vec<Node>,
}

#[derive(Default)]
struct Node {
    /// The byte edges, sorted by byte.
    next: Vec<(u8, usize)>,
    /// The longest proper suffix of this node's bytes that is a node.
    fail: usize,
    /// The pattern that ends here.
    pattern: Option<usize>,
    /// The nearest node on the fail chain, this one excluded, where a pattern ends.
    output: Option<usize>,
}

impl Node {
    fn edge(&self, byte: u8) -> Option<usize> {
        self.next
            .binary_search_by_key(&byte, |(edge, _)| *edge)
            .ok()
            .map(|index| self.next[index].1)
    }
}

/// How many user messages carry each text, from [`PromptFinder::count`].
pub struct Carried {
    /// By pattern number.
    by_pattern: HashMap<usize, usize>,
    /// User messages whose text is empty: the only ones that carry an empty prompt.
    empty: usize,
}

impl<'a> PromptFinder<'a> {
    pub fn new(texts: impl IntoIterator<Item = &'a str>) -> PromptFinder<'a> {
        let mut finder = PromptFinder {
            patterns: HashMap::new(),
            nodes: vec![Node::default()],
        };
        for text in texts.into_iter().filter(|text| !text.is_empty()) {
            if finder.patterns.contains_key(text) {
                continue;
            }
            let pattern = finder.patterns.len();
            finder.patterns.insert(text, pattern);
            let mut node = 0;
            for byte in text.bytes() {
                node = match finder.nodes[node].edge(byte) {
                    Some(next) => next,
                    None => {
                        let next = finder.nodes.len();
                        finder.nodes.push(Node::default());
                        let edges = &mut finder.nodes[node].next;
                        let at = edges.partition_point(|(edge, _)| *edge < byte);
                        edges.insert(at, (byte, next));
                        next
                    }
                };
            }
            finder.nodes[node].pattern = Some(pattern);
        }
        finder.link();
        finder
    }

    /// The fail and output links, breadth first from the root.
    fn link(&mut self) {
        let mut queue: VecDeque<usize> = self.nodes[0].next.iter().map(|(_, child)| *child).collect();
        while let Some(node) = queue.pop_front() {
            for (byte, child) in self.nodes[node].next.clone() {
                let mut fail = self.nodes[node].fail;
                let target = loop {
                    if let Some(next) = self.nodes[fail].edge(byte) {
                        break next;
                    }
                    if fail == 0 {
                        break 0;
                    }
                    fail = self.nodes[fail].fail;
                };
                let target = if target == child { 0 } else { target };
                self.nodes[child].fail = target;
                self.nodes[child].output = match self.nodes[target].pattern {
                    Some(_) => Some(target),
                    None => self.nodes[target].output,
                };
                queue.push_back(child);
            }
        }
    }

    /// The patterns `text` contains, each once, in no particular order, added to `found`.
    fn find(&self, text: &str, found: &mut Vec<usize>) {
        let start = found.len();
        let mut node = 0;
        for byte in text.bytes() {
            node = loop {
                if let Some(next) = self.nodes[node].edge(byte) {
                    break next;
                }
                if node == 0 {
                    break 0;
                }
                node = self.nodes[node].fail;
            };
            let mut at = if self.nodes[node].pattern.is_some() {
                Some(node)
            } else {
                self.nodes[node].output
            };
            while let Some(ending) = at {
                found.extend(self.nodes[ending].pattern);
                at = self.nodes[ending].output;
            }
        }
        found[start..].sort_unstable();
        let mut kept = start;
        for index in start..found.len() {
            if kept == start || found[kept - 1] != found[index] {
                found[kept] = found[index];
                kept += 1;
            }
        }
        found.truncate(kept);
    }

    /// How many of the user messages among `messages` carry each text.
    pub fn count<'m>(&self, messages: impl IntoIterator<Item = &'m Message>) -> Carried {
        let mut carried = Carried {
            by_pattern: HashMap::new(),
            empty: 0,
        };
        let mut found = Vec::new();
        for text in messages.into_iter().filter_map(super::user_text) {
            if text.is_empty() {
                carried.empty += 1;
                continue;
            }
            found.clear();
            self.find(&text, &mut found);
            for pattern in &found {
                *carried.by_pattern.entry(*pattern).or_default() += 1;
            }
        }
        carried
    }

    /// How many user messages `carried` counted that carry `text`: whose text is `text` or,
    /// for a text that is not empty, holds it.
    pub fn carrying(&self, carried: &Carried, text: &str) -> usize {
        if text.is_empty() {
            return carried.empty;
        }
        self.patterns
            .get(text)
            .and_then(|pattern| carried.by_pattern.get(pattern))
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The automaton's counts are those of a walk with `str::contains` over every pair, on texts
    /// that hold one another, share prefixes and suffixes, repeat, and are empty.
    #[test]
    fn counts_agree_with_contains_on_every_pair() {
        let prompts = [
            "a", "ab", "bab", "abab", "b", "检查", "查 p", "", "x (2)", "x (12)", "x", "ab",
        ];
        let messages: Vec<Message> = [
            "abab",
            "babab",
            "",
            "检查 parser",
            "x (12)",
            "x (2) and x (12)",
            "zzz",
            "a",
            "ab",
        ]
        .iter()
        .map(|text| Message::user(*text, 0))
        .chain([Message::ToolResult(crate::model::ToolResultMessage {
            tool_call_id: "call-1".into(),
            tool_name: "t".into(),
            content: vec![crate::model::ContentBlock::text("abab")],
            details: None,
            is_error: false,
            timestamp: 0,
        })])
        .collect();
        let finder = PromptFinder::new(prompts);
        let carried = finder.count(&messages);
        for prompt in prompts {
            let expected = messages
                .iter()
                .filter(|message| {
                    crate::check::is_user_text(message, prompt)
                        || (!prompt.is_empty()
                            && matches!(message, Message::User(_))
                            && message.text().contains(prompt))
                })
                .count();
            assert_eq!(finder.carrying(&carried, prompt), expected, "{prompt:?}");
        }
        assert_eq!(finder.carrying(&carried, "not a prompt"), 0);
    }
}
