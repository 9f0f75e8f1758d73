//! Swimlanes: a trace laid out as lanes (operations, model, hooks and tools, store, output)
//! with time as trace steps. Every event is a tick in its lane; every effect is a span from the
//! step that issued it to the step that completed it (open to the end when it never did), and
//! every operation a span from delivery to settlement.

use std::collections::BTreeMap;

use crate::runtime::Settlement;
use crate::trace::{AppendAnswer, Event, Trace};

/// The lanes, top to bottom.
pub const LANES: [Lane; 5] = [Lane::Operations, Lane::Model, Lane::Tools, Lane::Store, Lane::Output];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lane {
    Operations,
    Model,
    /// Extension hooks and tool calls.
    Tools,
    Store,
    Output,
}

impl Lane {
    /// The stable name tests and styles use (`data-lane`).
    pub fn id(self) -> &'static str {
        match self {
            Lane::Operations => "operations",
            Lane::Model => "model",
            Lane::Tools => "tools",
            Lane::Store => "store",
            Lane::Output => "output",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Lane::Operations => "operations",
            Lane::Model => "model",
            Lane::Tools => "hooks and tools",
            Lane::Store => "store",
            Lane::Output => "output",
        }
    }
}

/// The lane an event is drawn in.
pub fn lane_of(event: &Event) -> Lane {
    match event {
        Event::Restored { .. }
        | Event::RestoreFailed { .. }
        | Event::Deliver { .. }
        | Event::Settled { .. }
        | Event::AbortSignal { .. }
        | Event::State { .. }
        | Event::End { .. } => Lane::Operations,
        Event::ModelRequest { .. } | Event::ModelChunk { .. } | Event::ModelResponse { .. } => Lane::Model,
        Event::Hook { .. }
        | Event::HookAnswer { .. }
        | Event::ToolCall { .. }
        | Event::ToolAnswer { .. }
        | Event::Notify { .. }
        | Event::NotifyAnswer { .. } => Lane::Tools,
        Event::Append { .. }
        | Event::AppendAnswer { .. }
        | Event::Net { .. }
        | Event::StoreOpened { .. }
        | Event::Reopened { .. } => Lane::Store,
        Event::Write { .. } | Event::WriteAnswer { .. } => Lane::Output,
    }
}

/// What kind of mark a tick is: issue, completion, a settlement, an abort signal, or a point.
pub fn tick_kind(event: &Event) -> &'static str {
    match event {
        Event::Deliver { .. }
        | Event::ModelRequest { .. }
        | Event::Hook { .. }
        | Event::ToolCall { .. }
        | Event::Append { .. }
        | Event::Write { .. }
        | Event::Notify { .. } => "issue",
        Event::ModelResponse { .. }
        | Event::HookAnswer { .. }
        | Event::ToolAnswer { .. }
        | Event::AppendAnswer { .. }
        | Event::WriteAnswer { .. }
        | Event::NotifyAnswer { .. } => "complete",
        Event::Settled {
            settlement: Settlement::Rejected(_),
            ..
        } => "settled rejected",
        Event::Settled { .. } => "settled resolved",
        Event::AbortSignal { .. } => "abort",
        Event::ModelChunk { .. } => "chunk",
        _ => "point",
    }
}

/// One span: an effect from issue to completion, or an operation from delivery to settlement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub lane: Lane,
    /// 1-based trace lines.
    pub from: usize,
    /// The completing line; `None` when the span never completed.
    pub to: Option<usize>,
    /// Short label, e.g. `e3 append entry-1` or `op1 prompt`.
    pub label: String,
    /// A class: `ok`, `failed` (an append not applied, a tool that threw, a rejection).
    pub outcome: &'static str,
    /// The sub-row inside the lane, so that overlapping spans do not hide each other.
    pub track: usize,
}

/// The spans of a trace, each with its track.
pub fn spans(trace: &Trace) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    // Open spans by effect id (and by operation id, under a separate key space).
    let mut open_effects: BTreeMap<u32, usize> = BTreeMap::new();
    let mut open_ops: BTreeMap<u32, usize> = BTreeMap::new();
    for (index, event) in trace.events.iter().enumerate() {
        let line = index + 1;
        let lane = lane_of(event);
        let open = |key: u32, label: String, spans: &mut Vec<Span>, map: &mut BTreeMap<u32, usize>| {
            map.insert(key, spans.len());
            spans.push(Span {
                lane,
                from: line,
                to: None,
                label,
                outcome: "ok",
                track: 0,
            });
        };
        match event {
            Event::Deliver { op, operation } => {
                open(op.0, format!("{op} {}", operation.name()), &mut spans, &mut open_ops)
            }
            Event::ModelRequest { effect, .. } => {
                open(effect.0, format!("{effect} model"), &mut spans, &mut open_effects)
            }
            Event::Hook {
                effect,
                extension,
                phase,
                call,
                ..
            } => open(
                effect.0,
                format!("{effect} {extension} {} {}", phase.as_str(), call.name),
                &mut spans,
                &mut open_effects,
            ),
            Event::ToolCall { effect, call, .. } => open(
                effect.0,
                format!("{effect} tool {}", call.name),
                &mut spans,
                &mut open_effects,
            ),
            Event::Append { effect, entry } => open(
                effect.0,
                format!("{effect} append {}", entry.id),
                &mut spans,
                &mut open_effects,
            ),
            Event::Write { effect, .. } => open(effect.0, format!("{effect} write"), &mut spans, &mut open_effects),
            Event::Notify {
                effect,
                observer,
                agent_event,
            } => open(
                effect.0,
                format!("{effect} {observer} {}", agent_event.kind().name()),
                &mut spans,
                &mut open_effects,
            ),
            Event::Settled { op, settlement } => {
                if let Some(index) = open_ops.remove(&op.0) {
                    spans[index].to = Some(line);
                    if matches!(settlement, Settlement::Rejected(_)) {
                        spans[index].outcome = "failed";
                    }
                }
            }
            Event::ModelResponse { effect, .. }
            | Event::HookAnswer { effect, .. }
            | Event::ToolAnswer { effect, .. }
            | Event::AppendAnswer { effect, .. }
            | Event::WriteAnswer { effect, .. }
            | Event::NotifyAnswer { effect, .. } => {
                if let Some(index) = open_effects.remove(&effect.0) {
                    spans[index].to = Some(line);
                    let failed = match event {
                        Event::AppendAnswer { answer, .. } => !matches!(answer, AppendAnswer::Ok),
                        Event::ToolAnswer { answer, .. } => !matches!(answer, crate::runtime::ToolOutcome::Ok { .. }),
                        Event::WriteAnswer { error, .. } => error.is_some(),
                        Event::NotifyAnswer { answer, .. } => {
                            matches!(answer, crate::runtime::NotifyOutcome::Threw { .. })
                        }
                        _ => false,
                    };
                    if failed {
                        spans[index].outcome = "failed";
                    }
                }
            }
            _ => {}
        }
    }
    assign_tracks(&mut spans, trace.events.len());
    spans
}

/// Greedy interval packing per lane: each span takes the first track free at its start.
fn assign_tracks(spans: &mut [Span], length: usize) {
    let mut ends: BTreeMap<Lane, Vec<usize>> = BTreeMap::new();
    for span in spans.iter_mut() {
        let end = span.to.unwrap_or(length + 1);
        let tracks = ends.entry(span.lane).or_default();
        match tracks.iter().position(|last| *last < span.from) {
            Some(track) => {
                tracks[track] = end;
                span.track = track;
            }
            None => {
                span.track = tracks.len();
                tracks.push(end);
            }
        }
    }
}

/// How many tracks each lane needs (at least one).
pub fn tracks_per_lane(spans: &[Span]) -> BTreeMap<Lane, usize> {
    let mut tracks: BTreeMap<Lane, usize> = LANES.iter().map(|lane| (*lane, 1)).collect();
    for span in spans {
        let entry = tracks.entry(span.lane).or_insert(1);
        *entry = (*entry).max(span.track + 1);
    }
    tracks
}
