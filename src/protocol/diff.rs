//! Differential traces: the first event at which an implementation's trace departs from the
//! reference's trace of the same (scenario, strategy, seed).
//!
//! Both traces are normalized before they are compared, and only for the comparison:
//!
//! 1. **Ids renumbered.** An adapter chooses its own effect and abort-signal ids; both traces
//!    have them renumbered 1, 2, 3, ... in order of first appearance. (The reference numbers
//!    them that way already, so its trace is unchanged.)
//! 2. **Fields redacted.** In every assistant message anywhere in an event (any JSON object with
//!    a `stopReason` key), the fields in [`REDACTED_ASSISTANT_FIELDS`] — `usage`, `api`,
//!    `provider`, `model` — are replaced by `"<redacted>"`: they describe the model client, and
//!    implementations legitimately fill them differently.
//!
//! 3. **Open choices set aside** (the first divergence *that matters*; `--raw-divergence` keeps
//!    them): the seed leaves open when a runtime reads its clock and which ids of the id rule it
//!    draws, so the timestamps a runtime stamps (on user and tool-result messages, on entries, in
//!    a json mode's output) read as `"<clock>"`, and the ids of appended entries (and the parents
//!    naming them) read as `<appended N>` by their order of first append. PERSIST-4 and PERSIST-8
//!    judge those values; a difference in them is no divergence from the contract.
//!
//! Events are compared as JSON (so a difference the one-line rendering does not show still
//! counts), and reported as both rendered lines plus the JSON path of the first differing field.
//! The list is documented in docs/protocol.md; change both together.
//!
//! A divergence is information, not a verdict: the rules judge the implementation's trace on
//! their own, and an implementation may diverge from the reference where the seed is open.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::first_json_difference;
use crate::runtime::{EffectId, SignalId};
use crate::trace::{render_line, Event, Trace};

/// The assistant-message fields blanked before comparing (see the module documentation).
pub const REDACTED_ASSISTANT_FIELDS: &[&str] = &["usage", "api", "provider", "model"];

/// What a redacted field reads as.
pub const REDACTED: &str = "<redacted>";

/// Where two traces first differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// 1-based trace line.
    pub line: usize,
    /// The reference's line (normalized rendering), `None` when its trace ended before.
    pub reference: Option<String>,
    /// The implementation's line (normalized rendering), `None` when its trace ended before.
    pub implementation: Option<String>,
    /// The JSON path of the first differing field in the event, e.g. `entry.timestamp`, with
    /// both values (compact JSON, cut); `None` when one trace ended.
    pub field: Option<FieldDifference>,
    /// For the whole-trace oracle's difference ([`crate::oracle`]): its kind, the output's
    /// identity and the step it was in; `None` for a line-by-line comparison.
    pub oracle: Option<(crate::oracle::DifferenceKind, String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDifference {
    pub path: String,
    pub reference: String,
    pub implementation: String,
}

impl Divergence {
    /// One line for reports: `line 0011: reference `...` / implementation `...``.
    pub fn summary(&self) -> String {
        let side = |line: &Option<String>| line.clone().unwrap_or_else(|| "(end of trace)".to_string());
        if let Some((kind, identity, step)) = &self.oracle {
            let side = |line: &Option<String>| line.clone().unwrap_or_else(|| "(nothing)".to_string());
            return format!(
                "line {:04}: {identity} {} after {step}: reference `{}` / implementation `{}`",
                self.line,
                kind.word(),
                side(&self.reference),
                side(&self.implementation)
            );
        }
        format!(
            "line {:04}: reference `{}` / implementation `{}`",
            self.line,
            side(&self.reference),
            side(&self.implementation)
        )
    }

    /// The lines a human report prints, without indentation.
    pub fn describe(&self) -> Vec<String> {
        let absent = if self.oracle.is_some() {
            "(nothing in this step)"
        } else {
            "(end of trace)"
        };
        let side = |line: &Option<String>| line.clone().unwrap_or_else(|| absent.to_string());
        let heading = match &self.oracle {
            Some((kind, identity, step)) => format!(
                "first difference from the reference fed the same inputs, at trace line {:04}: {identity} is {} after {step}",
                self.line,
                kind.word()
            ),
            None => format!("first divergence from the reference at trace line {:04}:", self.line),
        };
        let mut lines = vec![
            heading,
            format!("  reference:      {}", side(&self.reference)),
            format!("  implementation: {}", side(&self.implementation)),
        ];
        // When the events are of different kinds, the lines already say everything.
        if let Some(field) = self.field.as_ref().filter(|field| field.path != "event") {
            lines.push(format!(
                "  field {}: reference {} / implementation {}",
                field.path, field.reference, field.implementation
            ));
        }
        lines
    }
}

/// What a runtime-stamped timestamp reads as when open choices are set aside.
pub const CLOCK: &str = "<clock>";

/// The first divergence of `implementation` from `reference` that matters: ids renumbered,
/// client fields redacted, and the values the seed leaves open (clock readings, appended ids)
/// set aside. `None` when they agree.
pub fn first_divergence(reference: &Trace, implementation: &Trace) -> Option<Divergence> {
    let reference = without_open_choices(reference);
    let implementation = without_open_choices(implementation);
    first_difference_of(&reference, &implementation, |event| {
        let mut value = comparable(event);
        mask_clock(&mut value);
        value
    })
}

/// The raw first divergence: ids renumbered and client fields redacted, nothing else set aside
/// (`--raw-divergence`).
pub fn first_raw_divergence(reference: &Trace, implementation: &Trace) -> Option<Divergence> {
    first_difference_of(reference, implementation, comparable)
}

/// The trace with appended entries' ids (and parents naming them) renamed `<appended N>` by
/// their order of first append, and a json mode's output with its messages' timestamps masked.
fn without_open_choices(trace: &Trace) -> Trace {
    let mut appended: BTreeMap<String, String> = BTreeMap::new();
    for event in &trace.events {
        if let Event::Append { entry, .. } = event {
            let name = format!("<appended {}>", appended.len() + 1);
            appended.entry(entry.id.clone()).or_insert(name);
        }
    }
    let rename = |id: &mut String| {
        if let Some(name) = appended.get(id.as_str()) {
            *id = name.clone();
        }
    };
    let mut normalized = Trace::default();
    for event in &trace.events {
        let mut event = event.clone();
        match &mut event {
            Event::Append { entry, .. } => {
                rename(&mut entry.id);
                if let Some(parent) = entry.parent_id.as_mut() {
                    rename(parent);
                }
            }
            Event::State { leaf, .. } => leaf.iter_mut().for_each(rename),
            Event::Reopened { leaf, stored, outcome } => {
                leaf.iter_mut().for_each(rename);
                stored.iter_mut().for_each(rename);
                if let Ok(path) = outcome {
                    path.iter_mut().for_each(rename);
                }
            }
            Event::Write { text, .. } => {
                if let Ok(mut value) = serde_json::from_str::<Value>(text) {
                    mask_clock(&mut value);
                    let newline = if text.ends_with('\n') { "\n" } else { "" };
                    *text = format!("{}{newline}", serde_json::to_string(&value).expect("values serialize"));
                }
            }
            _ => {}
        }
        normalized.push(event);
    }
    normalized
}

/// Masks the timestamps a runtime stamps: of user and tool-result messages, and of entries.
/// An assistant message's timestamp is the model's, the world's answer, and stays.
pub(crate) fn mask_clock(value: &mut Value) {
    match value {
        Value::Object(object) => {
            // A hook's `result` is a tool result without its `role`.
            let runtime_message = matches!(object.get("role").and_then(Value::as_str), Some("user" | "toolResult"))
                || object.contains_key("toolCallId");
            let entry = object.contains_key("parentId") && object.contains_key("id");
            if runtime_message || entry {
                if let Some(slot) = object.get_mut("timestamp") {
                    *slot = Value::String(CLOCK.to_string());
                }
            }
            for child in object.values_mut() {
                mask_clock(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_clock),
        _ => {}
    }
}

/// Where two runs of the same implementation on the same (scenario, strategy, seed) first
/// differ (`run --check-determinism`): ids renumbered, nothing redacted, since one
/// implementation has no excuse to fill its own fields differently twice. `reference` holds
/// the first run's line, `implementation` the second's.
pub fn first_run_difference(first: &Trace, second: &Trace) -> Option<Divergence> {
    first_difference_of(first, second, |event| {
        serde_json::to_value(event).expect("trace events always serialize")
    })
}

fn first_difference_of(
    reference: &Trace,
    implementation: &Trace,
    comparable: fn(&Event) -> Value,
) -> Option<Divergence> {
    let (reference, implementation) = comparable_probes(normalize(reference), normalize(implementation));
    let length = reference.events.len().max(implementation.events.len());
    for index in 0..length {
        let left = reference.events.get(index);
        let right = implementation.events.get(index);
        let render = |event: Option<&Event>| event.map(|event| render_line(index + 1, event));
        match (left, right) {
            (Some(left), Some(right)) => {
                let left_json = comparable(left);
                let right_json = comparable(right);
                if left_json != right_json {
                    let field =
                        first_json_difference(&left_json, &right_json).map(|(path, reference, implementation)| {
                            FieldDifference {
                                path,
                                reference,
                                implementation,
                            }
                        });
                    return Some(Divergence {
                        line: index + 1,
                        reference: render(Some(left)),
                        implementation: render(Some(right)),
                        field,
                        oracle: None,
                    });
                }
            }
            _ => {
                return Some(Divergence {
                    line: index + 1,
                    reference: render(left),
                    implementation: render(right),
                    field: None,
                    oracle: None,
                })
            }
        }
    }
    None
}

/// Whether a trace's subject probed its state (`Event::Restored::probed`).
fn probed(trace: &Trace) -> bool {
    trace
        .events
        .iter()
        .any(|event| matches!(event, Event::Restored { probed: true, .. }))
}

/// Both traces as they can be compared: when only one subject probed its state (the reference
/// does, an adapter may not), neither keeps its state events or its mark, so that an adapter
/// that declares no probe does not diverge where the reference's state changed. PERSIST-10
/// judges the probes themselves.
fn comparable_probes(mut reference: Trace, mut implementation: Trace) -> (Trace, Trace) {
    if probed(&reference) != probed(&implementation) {
        for trace in [&mut reference, &mut implementation] {
            trace.events.retain(|event| !matches!(event, Event::State { .. }));
            for event in &mut trace.events {
                if let Event::Restored { probed, .. } = event {
                    *probed = false;
                }
            }
        }
    }
    (reference, implementation)
}

/// The event as JSON with assistant-client fields redacted.
fn comparable(event: &Event) -> Value {
    let mut value = serde_json::to_value(event).expect("trace events always serialize");
    redact(&mut value);
    value
}

pub(crate) fn redact(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if object.contains_key("stopReason") {
                for field in REDACTED_ASSISTANT_FIELDS {
                    if let Some(slot) = object.get_mut(*field) {
                        *slot = Value::String(REDACTED.to_string());
                    }
                }
            }
            for child in object.values_mut() {
                redact(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// The trace with effect and signal ids renumbered by first appearance.
pub fn normalize(trace: &Trace) -> Trace {
    let mut effects = Renumber::default();
    let mut signals = Renumber::default();
    let mut normalized = Trace::default();
    for event in &trace.events {
        let mut event = event.clone();
        match &mut event {
            Event::ModelRequest { effect, signal, .. } | Event::ToolCall { effect, signal, .. } => {
                *effect = EffectId(effects.map(effect.0));
                *signal = SignalId(signals.map(signal.0));
            }
            Event::ModelChunk { effect, .. }
            | Event::ModelResponse { effect, .. }
            | Event::Hook { effect, .. }
            | Event::HookAnswer { effect, .. }
            | Event::ToolAnswer { effect, .. }
            | Event::Append { effect, .. }
            | Event::AppendAnswer { effect, .. }
            | Event::Write { effect, .. }
            | Event::WriteAnswer { effect, .. }
            | Event::Notify { effect, .. }
            | Event::NotifyAnswer { effect, .. } => *effect = EffectId(effects.map(effect.0)),
            Event::AbortSignal { signal } => *signal = SignalId(signals.map(signal.0)),
            Event::End { pending, .. } => {
                for effect in pending.iter_mut() {
                    *effect = EffectId(effects.map(effect.0));
                }
            }
            Event::Restored { .. }
            | Event::RestoreFailed { .. }
            | Event::Deliver { .. }
            | Event::Settled { .. }
            | Event::State { .. }
            | Event::Net { .. }
            | Event::StoreOpened { .. }
            | Event::Reopened { .. } => {}
        }
        normalized.push(event);
    }
    normalized
}

#[derive(Default)]
struct Renumber {
    seen: BTreeMap<u32, u32>,
}

impl Renumber {
    fn map(&mut self, id: u32) -> u32 {
        let next = self.seen.len() as u32 + 1;
        *self.seen.entry(id).or_insert(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AssistantMessage, Operation, StopReason, Usage};
    use crate::runtime::{Cause, OpId};

    fn assistant(model: &str, text: &str) -> AssistantMessage {
        AssistantMessage {
            content: vec![crate::model::AssistantBlock::Text { text: text.into() }],
            api: "a".into(),
            provider: "p".into(),
            model: model.into(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp: 1,
        }
    }

    fn trace(events: Vec<Event>) -> Trace {
        Trace { events }
    }

    #[test]
    fn renumbered_ids_and_redacted_fields_do_not_diverge() {
        let reference = trace(vec![
            Event::Deliver {
                op: OpId(1),
                operation: Operation::Flush,
            },
            Event::ModelResponse {
                effect: EffectId(1),
                message: assistant("m1", "hi"),
            },
            Event::AbortSignal { signal: SignalId(1) },
        ]);
        let implementation = trace(vec![
            Event::Deliver {
                op: OpId(1),
                operation: Operation::Flush,
            },
            Event::ModelResponse {
                effect: EffectId(40),
                message: assistant("other-model", "hi"),
            },
            Event::AbortSignal { signal: SignalId(7) },
        ]);
        assert_eq!(first_divergence(&reference, &implementation), None);
    }

    #[test]
    fn the_first_differing_field_is_named() {
        let reference = trace(vec![Event::ModelResponse {
            effect: EffectId(1),
            message: assistant("m", "hi"),
        }]);
        let implementation = trace(vec![Event::ModelResponse {
            effect: EffectId(1),
            message: assistant("m", "ho"),
        }]);
        let divergence = first_divergence(&reference, &implementation).expect("they differ");
        assert_eq!(divergence.line, 1);
        let field = divergence.field.expect("a field");
        assert_eq!(field.path, "message.content[0].text");
        assert_eq!(
            (field.reference.as_str(), field.implementation.as_str()),
            ("\"hi\"", "\"ho\"")
        );
    }

    #[test]
    fn a_shorter_trace_diverges_where_it_ends() {
        let reference = trace(vec![
            Event::RestoreFailed {
                cause: Cause::new("a", "b"),
            },
            Event::End {
                pending: vec![],
                undelivered: vec![],
            },
        ]);
        let implementation = trace(vec![Event::RestoreFailed {
            cause: Cause::new("a", "b"),
        }]);
        let divergence = first_divergence(&reference, &implementation).expect("they differ");
        assert_eq!(divergence.line, 2);
        assert_eq!(divergence.implementation, None);
        assert!(divergence.summary().contains("(end of trace)"));
    }
}
