//! The session tree of one run: the restored entries, the active path the run restored, the
//! entries the run appended (with the store's answer), the leaf as each acknowledged append
//! moves it, and per model request the context entries that were not on the stored path
//! (the run's temporary suffix).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{path_to, SessionEntry};
use crate::trace::{AppendAnswer, Event, Trace};

use super::escape;

/// An entry of the tree with what the run did to it.
struct Node<'a> {
    entry: &'a SessionEntry,
    /// The trace line of its append, for appended entries.
    appended_at: Option<usize>,
    /// `ok`, `rejected`, `applied_then_failed`, `lost`, or `pending` (never answered).
    answer: Option<&'static str>,
}

/// The tree section's inner HTML.
pub fn render(session: &[SessionEntry], trace: &Trace) -> String {
    let restored_leaf = trace.events.iter().find_map(|event| match event {
        Event::Restored { leaf, .. } => Some(leaf.clone()),
        _ => None,
    });
    let mut nodes: Vec<Node<'_>> = session
        .iter()
        .map(|entry| Node {
            entry,
            appended_at: None,
            answer: None,
        })
        .collect();
    let mut append_of_effect: BTreeMap<u32, usize> = BTreeMap::new();
    // The store as acknowledged so far, and the leaf moves: (line, leaf).
    let mut acknowledged: Vec<SessionEntry> = session.to_vec();
    let mut leaf: Option<String> = restored_leaf.clone().flatten();
    let mut moves: Vec<(usize, String)> = Vec::new();
    if let Some(Some(restored)) = &restored_leaf {
        let line = trace
            .events
            .iter()
            .position(|event| matches!(event, Event::Restored { .. }))
            .unwrap_or(0);
        moves.push((line + 1, restored.clone()));
    }
    let mut requests: Vec<String> = Vec::new();
    for (index, event) in trace.events.iter().enumerate() {
        let line = index + 1;
        match event {
            Event::Append { effect, entry } => {
                append_of_effect.insert(effect.0, nodes.len());
                nodes.push(Node {
                    entry,
                    appended_at: Some(line),
                    answer: Some("pending"),
                });
            }
            Event::AppendAnswer { effect, answer } => {
                if let Some(node) = append_of_effect
                    .remove(&effect.0)
                    .and_then(|index| nodes.get_mut(index))
                {
                    node.answer = Some(match answer {
                        AppendAnswer::Ok => "ok",
                        AppendAnswer::Rejected { .. } => "rejected",
                        AppendAnswer::AppliedThenFailed { .. } => "applied_then_failed",
                        AppendAnswer::Lost { .. } => "lost",
                    });
                    if answer.applied() {
                        acknowledged.push(node.entry.clone());
                    }
                    if matches!(answer, AppendAnswer::Ok) {
                        leaf = Some(node.entry.id.clone());
                        moves.push((line, node.entry.id.clone()));
                    }
                }
            }
            Event::ModelRequest { effect, messages, .. } => {
                let stored = leaf
                    .as_deref()
                    .and_then(|leaf| path_to(&acknowledged, leaf).ok())
                    .map(|path| path.iter().filter(|entry| entry.as_message().is_some()).count())
                    .unwrap_or(0);
                let temporary: Vec<&str> = messages.iter().skip(stored).map(|message| message.role()).collect();
                requests.push(format!(
                    "<li data-event=\"{line}\"><span class=\"step\">{line:04}</span> {effect}: {} messages, {} on the stored path to <code>{}</code>, {} temporary [{}]</li>",
                    messages.len(),
                    messages.len() - temporary.len(),
                    escape(leaf.as_deref().unwrap_or("null")),
                    temporary.len(),
                    escape(&temporary.join(", "))
                ));
            }
            _ => {}
        }
    }
    let active: BTreeSet<String> = match restored_leaf.clone().flatten() {
        Some(leaf) => path_to(session, &leaf)
            .map(|path| path.into_iter().map(|entry| entry.id).collect())
            .unwrap_or_default(),
        None => BTreeSet::new(),
    };
    let final_leaf = leaf;
    let mut html = String::new();
    html.push_str(&format!(
        "<p>Restored at leaf <code id=\"restored-leaf\">{}</code>; {} restored entries, {} appended by the run; the leaf as the store acknowledged appends ends at <code id=\"final-leaf\">{}</code>.</p>\n",
        escape(restored_leaf.flatten().as_deref().unwrap_or("null")),
        session.len(),
        nodes.len() - session.len(),
        escape(final_leaf.as_deref().unwrap_or("null"))
    ));
    html.push_str("<div class=\"tree-legend\"><span class=\"legend-item entry restored\">restored</span> <span class=\"legend-item entry restored on-path\">active path</span> <span class=\"legend-item entry appended ok\">appended</span> <span class=\"legend-item entry appended failed\">append failed</span> <span class=\"legend-item entry leaf\">leaf</span></div>\n");
    html.push_str("<ul class=\"tree\">\n");
    let ids: BTreeSet<&str> = nodes.iter().map(|node| node.entry.id.as_str()).collect();
    let mut visited: BTreeSet<usize> = BTreeSet::new();
    for (index, node) in nodes.iter().enumerate() {
        let is_root = match &node.entry.parent_id {
            None => true,
            Some(parent) => !ids.contains(parent.as_str()),
        };
        if is_root {
            render_node(&nodes, index, &active, final_leaf.as_deref(), &mut visited, &mut html);
        }
    }
    // Entries on a cycle have no root; show them flat rather than not at all.
    for index in 0..nodes.len() {
        if !visited.contains(&index) {
            render_node(&nodes, index, &active, final_leaf.as_deref(), &mut visited, &mut html);
        }
    }
    html.push_str("</ul>\n<h3>The leaf as it moves</h3>\n<ol class=\"leaf-moves\">\n");
    for (line, leaf) in &moves {
        html.push_str(&format!(
            "<li data-event=\"{line}\"><span class=\"step\">{line:04}</span> leaf <code>{}</code></li>\n",
            escape(leaf)
        ));
    }
    html.push_str("</ol>\n<h3>Context per model request</h3>\n<ul class=\"requests\">\n");
    for request in requests {
        html.push_str(&request);
        html.push('\n');
    }
    html.push_str("</ul>\n");
    html
}

fn render_node(
    nodes: &[Node<'_>],
    index: usize,
    active: &BTreeSet<String>,
    final_leaf: Option<&str>,
    visited: &mut BTreeSet<usize>,
    html: &mut String,
) {
    if !visited.insert(index) {
        return;
    }
    let node = &nodes[index];
    let entry = node.entry;
    let mut classes = vec!["entry"];
    match node.answer {
        None => classes.push("restored"),
        Some(answer) => {
            classes.push("appended");
            classes.push(match answer {
                "ok" => "ok",
                "pending" => "pending",
                _ => "failed",
            });
        }
    }
    if active.contains(&entry.id) {
        classes.push("on-path");
    }
    if final_leaf == Some(entry.id.as_str()) {
        classes.push("leaf");
    }
    let what = match entry.as_message() {
        Some(message) => message.role().to_string(),
        None => entry.kind().to_string(),
    };
    let event = node
        .appended_at
        .map(|line| format!(" data-event=\"{line}\""))
        .unwrap_or_default();
    let answer = node
        .answer
        .map(|answer| format!(" <span class=\"answer\">{answer}</span>"))
        .unwrap_or_default();
    html.push_str(&format!(
        "<li><span class=\"{}\" data-entry=\"{}\"{event}><code>{}</code> {}{answer}</span>",
        classes.join(" "),
        escape(&entry.id),
        escape(&entry.id),
        escape(&what)
    ));
    let children: Vec<usize> = nodes
        .iter()
        .enumerate()
        .filter(|(_, child)| child.entry.parent_id.as_deref() == Some(entry.id.as_str()))
        .map(|(child, _)| child)
        .collect();
    if !children.is_empty() {
        html.push_str("<ul>");
        for child in children {
            render_node(nodes, child, active, final_leaf, visited, html);
        }
        html.push_str("</ul>");
    }
    html.push_str("</li>\n");
}
