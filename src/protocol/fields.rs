//! Every field of every line an adapter writes, named by a path through the shape tables
//! ([`super::shape`]), and a way to change one field's value in a line: what the field coverage
//! test (`tests/kit/fields.rs`) needs to show that each field is judged by some rule, or is
//! listed in [`UNJUDGED`] with the reason no rule reads it.
//!
//! A path joins keys with `.`; a tagged object's variant follows its key in braces, the line's
//! own type first (`{effect}.effect{append}.entry{message}.message{assistant}.usage.cost.total`);
//! an array's items are `[]` (`{settled}.settlement{resolved}.value{run}.messages[]`). Tags
//! themselves are not fields here: a changed tag is another variant, which the schema or the
//! rules of that variant judge.
//!
//! [`Perturbed`] wraps any subject and changes one field in every line it sends that has it:
//! a string gains a character, a number grows by one, a boolean flips, an enumeration takes its
//! next value, an array loses its last item. Never used to judge an implementation; only to
//! show that the kit would notice.

use serde_json::Value;

use crate::runtime::{Cause, Effect, Input};
use crate::scenario::Scenario;
use crate::sim::{Restored, Subject, SubjectFailure};
use crate::trace::StateProbe;

use super::convert::{effect_from_wire, effect_to_wire, settlement_from_wire};
use super::shape::{Field, Shape, Tagged, ADAPTER_MESSAGE, CONTENT_BLOCK_SHAPE};
use super::wire::{AdapterMessage, WireState};

/// Fields of the adapter's lines that no rule judges, each with the reason. The field coverage
/// test checks both ways: every field is judged or listed here, and no field listed here is
/// judged.
pub const UNJUDGED: &[(&str, &str)] = &[
    (
        "{restore_failed}.cause.message",
        "diagnostic text: a rejected restore is judged by its code (RESTORE-2, RESTORE-3, PATH-1..4)",
    ),
    (
        "{effect}.effect{hook}.result.timestamp",
        "a clock reading made for the result the after hook is shown, which is not stored; when the \
         runtime reads its clock is its own choice (conformance.md, fairness), and the stored result's \
         stamp is judged (PERSIST-6, PROJECT-1)",
    ),
];

/// Fields the reference never sends on the corpus, by a part of their path, each with the
/// reason; what judges them cannot be shown here. The coverage test checks that each pattern
/// names fields that are never sent, and that no field that is sent hides behind one.
pub const NOT_SENT: &[(&str, &str)] = &[
    (
        "entry{compaction}.",
        "the reference appends message entries only; an implementation's own entries are judged whole \
         (PERSIST-2: the parent chain; QUEUE-2: a run appends its own messages first)",
    ),
    (
        "entry{branch_summary}.",
        "as entry{compaction}: the reference appends message entries only",
    ),
    (
        "entry{model_change}.",
        "as entry{compaction}: the reference appends message entries only",
    ),
    (
        "entry{thinking_level_change}.",
        "as entry{compaction}: the reference appends message entries only",
    ),
    (
        "entry{custom}.",
        "as entry{compaction}: the reference appends message entries only",
    ),
    (
        "entry{custom_message}.",
        "as entry{compaction}: the reference appends message entries only",
    ),
    (
        "entry{label}.",
        "as entry{compaction}: the reference appends message entries only",
    ),
    (
        "entry{session_info}.",
        "as entry{compaction}: the reference appends message entries only",
    ),
    (
        "{image}.",
        "no scenario has images: scripted models and tools answer with text",
    ),
    (".details", "no scripted tool returns details"),
    (
        "{user}.content[]{text}.",
        "the reference sends a user message's content as a string (a string and text blocks are both Pi's shape)",
    ),
    (
        "event{turn_end}.message{user}.",
        "a turn ends with the model's response; OBSERVE-2 judges that the message is the run's response",
    ),
    (
        "event{turn_end}.message{toolResult}.",
        "a turn ends with the model's response; OBSERVE-2 judges that the message is the run's response",
    ),
    (
        "event{turn_end}.toolResults[]{user}.",
        "a turn's results are tool results; OBSERVE-2 judges them against the stored results",
    ),
    (
        "event{turn_end}.toolResults[]{assistant}.",
        "a turn's results are tool results; OBSERVE-2 judges them against the stored results",
    ),
    (
        "event{message_end}.message{assistant}.content[]{thinking}.thinking",
        "no observer scenario scripts a thinking block (the field is judged in requests, appends and results)",
    ),
    (
        "event{message_end}.message{assistant}.errorMessage",
        "no observer scenario scripts a model error (the field is judged in requests, appends and results)",
    ),
    (
        "event{turn_end}.message{assistant}.content[]{thinking}.thinking",
        "no observer scenario scripts a thinking block (the field is judged in requests, appends and results)",
    ),
    (
        "event{turn_end}.message{assistant}.errorMessage",
        "no observer scenario scripts a model error (the field is judged in requests, appends and results)",
    ),
    (
        "event{agent_end}.messages[]{assistant}.content[]{thinking}.thinking",
        "no observer scenario scripts a thinking block (the field is judged in requests, appends and results)",
    ),
    (
        "event{agent_end}.messages[]{assistant}.errorMessage",
        "no observer scenario scripts a model error (the field is judged in requests, appends and results)",
    ),
];

/// The fields a line has, as indexes into `paths`.
pub fn present(line: &Value, paths: &[String]) -> Vec<usize> {
    (0..paths.len())
        .filter(|index| perturb(&mut line.clone(), &paths[*index]))
        .collect()
}

/// Lines whose fields are judged by the protocol itself or concern the handshake, not a run:
/// `hello` (what the adapter is and supports), `error` (the adapter's own failure, a broken
/// verdict). The coverage walks the rest, `idle`'s `state` probe included.
const HANDSHAKE: &[&str] = &["hello", "error"];

/// How deep the walk goes (the tables nest messages in entries in effects, a few levels).
const DEPTH_MAX: usize = 24;

/// Every field path of the lines a run sends (effects, notifications, settlements, abort
/// signals, the restore), in table order.
pub fn field_paths() -> Vec<String> {
    let mut paths = Vec::new();
    for (variant, record) in ADAPTER_MESSAGE.variants {
        if HANDSHAKE.contains(variant) {
            continue;
        }
        for field in record.fields {
            walk(&field.shape, &format!("{{{variant}}}.{}", field.name), &mut paths, 0);
        }
    }
    paths
}

fn walk(shape: &Shape, path: &str, paths: &mut Vec<String>, depth: usize) {
    if depth > DEPTH_MAX {
        return;
    }
    match shape {
        Shape::Nullable(inner) => walk(inner, path, paths, depth + 1),
        Shape::Array(item) => {
            paths.push(path.to_string());
            walk(item, &format!("{path}[]"), paths, depth + 1);
        }
        Shape::UserContent => {
            paths.push(path.to_string());
            walk(&CONTENT_BLOCK_SHAPE, &format!("{path}[]"), paths, depth + 1);
        }
        Shape::Record(record) => {
            for field in record.fields {
                walk(&field.shape, &format!("{path}.{}", field.name), paths, depth + 1);
            }
        }
        Shape::Tagged(tagged) => walk_variants(tagged, path, paths, depth),
        _ => paths.push(path.to_string()),
    }
}

fn walk_variants(tagged: &Tagged, path: &str, paths: &mut Vec<String>, depth: usize) {
    for (variant, record) in tagged.variants {
        for field in record.fields {
            walk(
                &field.shape,
                &format!("{path}{{{variant}}}.{}", field.name),
                paths,
                depth + 1,
            );
        }
    }
}

/// Changes the field at `path` wherever `line` has it; whether anything changed.
pub fn perturb(line: &mut Value, path: &str) -> bool {
    change(&Shape::Tagged(&ADAPTER_MESSAGE), line, path)
}

/// `key` and what follows it (`{variant}.…`, `[]…`, `.…` or nothing).
fn split_key(path: &str) -> (&str, &str) {
    let end = path.find(['.', '{', '[']).unwrap_or(path.len());
    path.split_at(end)
}

/// Walks `value` (of `shape`) along `rest`, changing what it names.
fn change(shape: &Shape, value: &mut Value, rest: &str) -> bool {
    match shape {
        Shape::Nullable(inner) => !value.is_null() && change(inner, value, rest),
        Shape::Array(item) => change_array(item, value, rest),
        Shape::UserContent => match value {
            Value::String(_) if rest.is_empty() => change_leaf(&Shape::Str, value),
            Value::Array(_) => change_array(&CONTENT_BLOCK_SHAPE, value, rest),
            _ => false,
        },
        Shape::Record(record) => change_field(record.fields, value, rest),
        Shape::Tagged(tagged) => {
            let Some(rest) = rest.strip_prefix('{') else {
                return false;
            };
            let Some((variant, rest)) = rest.split_once('}') else {
                return false;
            };
            if value.get(tagged.tag).and_then(Value::as_str) != Some(variant) {
                return false;
            }
            match tagged.variants.iter().find(|(name, _)| *name == variant) {
                Some((_, record)) => change_field(record.fields, value, rest),
                None => false,
            }
        }
        leaf if rest.is_empty() => change_leaf(leaf, value),
        _ => false,
    }
}

/// Follows `.key` of `rest` into the object `value` (of these fields) and changes what the rest
/// names there.
fn change_field(fields: &[Field], value: &mut Value, rest: &str) -> bool {
    let Some(rest) = rest.strip_prefix('.') else {
        return false;
    };
    let (key, after) = split_key(rest);
    match (fields.iter().find(|field| field.name == key), value.get_mut(key)) {
        (Some(field), Some(inner)) => change(&field.shape, inner, after),
        _ => false,
    }
}

fn change_array(item: &Shape, value: &mut Value, rest: &str) -> bool {
    let Value::Array(items) = value else { return false };
    if rest.is_empty() {
        return items.pop().is_some();
    }
    let Some(rest) = rest.strip_prefix("[]") else {
        return false;
    };
    let mut changed = false;
    for element in items.iter_mut() {
        changed |= change(item, element, rest);
    }
    changed
}

fn change_leaf(shape: &Shape, value: &mut Value) -> bool {
    match (shape, &mut *value) {
        (Shape::Str, Value::String(text)) => {
            text.push('~');
            true
        }
        (Shape::Bool, Value::Bool(flag)) => {
            *flag = !*flag;
            true
        }
        (Shape::U32 | Shape::U64, Value::Number(number)) => match number.as_u64() {
            Some(number) => {
                *value = Value::from(number + 1);
                true
            }
            None => false,
        },
        (Shape::Number, Value::Number(number)) => match number.as_f64() {
            Some(number) => {
                *value = Value::from(number + 1.0);
                true
            }
            None => false,
        },
        (Shape::Enum(names), Value::String(name)) => match names.iter().position(|known| known == name) {
            Some(index) => {
                *name = names[(index + 1) % names.len()].to_string();
                true
            }
            None => false,
        },
        (Shape::Any | Shape::StrMap, Value::Object(object)) => {
            object.insert("~".into(), Value::from("~"));
            true
        }
        (Shape::Any, _) => {
            *value = Value::from("~");
            true
        }
        _ => false,
    }
}

/// A subject whose lines have one field changed ([`perturb`]): effects, notifications,
/// settlements and abort signals, as the world would read them off the wire. A change the
/// wire types cannot carry leaves the line as it was.
pub struct Perturbed<S> {
    pub inner: S,
    pub path: String,
    /// Lines changed so far.
    pub changed: usize,
    /// Only the line that is this occurrence of the field (0-based, in the order the lines
    /// are sent) is changed; `None`: every line that has it.
    occurrence: Option<usize>,
    /// Lines with the field seen so far.
    seen: usize,
    /// The state the last `idle` reports, as changed.
    state: Option<StateProbe>,
}

impl<S: Subject> Perturbed<S> {
    pub fn new(inner: S, path: &str) -> Perturbed<S> {
        Perturbed {
            inner,
            path: path.to_string(),
            changed: 0,
            occurrence: None,
            seen: 0,
            state: None,
        }
    }

    /// Changes the field in one line only: the `occurrence`-th line that has it (0-based).
    pub fn at(inner: S, path: &str, occurrence: usize) -> Perturbed<S> {
        Perturbed {
            occurrence: Some(occurrence),
            ..Perturbed::new(inner, path)
        }
    }

    /// `message` with the field changed, when it has the field, it is the occurrence to change
    /// and the wire types can carry the change.
    fn rewrite(&mut self, message: AdapterMessage) -> Option<AdapterMessage> {
        let mut line = serde_json::to_value(&message).ok()?;
        if !perturb(&mut line, &self.path) {
            return None;
        }
        let this = self.seen;
        self.seen += 1;
        if self.occurrence.is_some_and(|occurrence| occurrence != this) {
            return None;
        }
        let rewritten = serde_json::from_value(line).ok()?;
        self.changed += 1;
        Some(rewritten)
    }

    fn rewrite_effect(&mut self, effect: Effect) -> Effect {
        match self.rewrite(effect_to_wire(&effect)) {
            Some(AdapterMessage::Effect { effect }) => effect_from_wire(effect),
            Some(AdapterMessage::Settled { op, settlement }) => Effect::Settled {
                op: crate::runtime::OpId(op),
                settlement: settlement_from_wire(settlement),
            },
            Some(AdapterMessage::AbortSignal { signal }) => Effect::AbortSignal {
                signal: crate::runtime::SignalId(signal),
            },
            _ => effect,
        }
    }

    /// The inner subject's state as the `idle` that ends this answer carries it, changed.
    fn rewrite_state(&mut self, state: Option<StateProbe>) -> Option<StateProbe> {
        let state = state?;
        let line = AdapterMessage::Idle {
            state: Some(WireState::from(state.clone())),
        };
        match self.rewrite(line) {
            Some(AdapterMessage::Idle { state: Some(changed) }) => Some(changed.into()),
            _ => Some(state),
        }
    }
}

/// The `idle` line that ends an answer of a subject that probes its state.
fn idle_line(state: Option<StateProbe>) -> Option<Value> {
    let state = state?;
    serde_json::to_value(AdapterMessage::Idle {
        state: Some(WireState::from(state)),
    })
    .ok()
}

/// The line that reports a restore's outcome.
fn restore_line(started: &Result<Restored, Cause>) -> AdapterMessage {
    match started {
        Ok(restored) => AdapterMessage::Started {
            leaf: restored.leaf.clone(),
            messages: restored.messages,
        },
        Err(cause) => AdapterMessage::RestoreFailed { cause: cause.into() },
    }
}

impl<S: Subject> Subject for Perturbed<S> {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        let started = self.inner.start(scenario)?;
        Ok(match self.rewrite(restore_line(&started)) {
            Some(AdapterMessage::Started { leaf, messages }) => Ok(Restored {
                leaf,
                messages,
                setup: Vec::new(),
            }),
            Some(AdapterMessage::RestoreFailed { cause }) => Err(cause.into()),
            _ => started,
        })
        .inspect(|_| self.state = self.rewrite_state(self.inner.state()))
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let from = effects.len();
        self.inner.deliver(input, effects)?;
        for effect in effects.iter_mut().skip(from) {
            *effect = self.rewrite_effect(effect.clone());
        }
        self.state = self.rewrite_state(self.inner.state());
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SubjectFailure> {
        self.inner.finish()
    }

    fn state(&self) -> Option<StateProbe> {
        self.state.clone()
    }
}

/// A subject whose lines are kept as the wire would carry them (effects, notifications,
/// settlements, abort signals, the restore), unchanged.
pub struct Recorded<S> {
    pub inner: S,
    pub lines: Vec<Value>,
    /// The `idle` lines that carry the subject's state, one per answer (apart from `lines`:
    /// they are no output the world can lose or repeat).
    pub states: Vec<Value>,
}

impl<S: Subject> Recorded<S> {
    pub fn new(inner: S) -> Recorded<S> {
        Recorded {
            inner,
            lines: Vec::new(),
            states: Vec::new(),
        }
    }
}

impl<S: Subject> Subject for Recorded<S> {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        let started = self.inner.start(scenario)?;
        if let Ok(line) = serde_json::to_value(restore_line(&started)) {
            self.lines.push(line);
        }
        if started.is_ok() {
            self.states.extend(idle_line(self.inner.state()));
        }
        Ok(started)
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let from = effects.len();
        self.inner.deliver(input, effects)?;
        for effect in &effects[from..] {
            if let Ok(line) = serde_json::to_value(effect_to_wire(effect)) {
                self.lines.push(line);
            }
        }
        self.states.extend(idle_line(self.inner.state()));
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SubjectFailure> {
        self.inner.finish()
    }

    fn state(&self) -> Option<StateProbe> {
        self.inner.state()
    }
}

/// What [`Mangled`] does to one output line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mangle {
    /// The line is never sent.
    Delete,
    /// The line is sent twice.
    Duplicate,
    /// The line is sent one step later: after the outputs of the next input.
    Delay,
}

/// A subject whose `target`-th output line (0-based over effects, notifications, settlements
/// and abort signals, in the order they are sent) is deleted, duplicated or delayed by a step.
pub struct Mangled<S> {
    pub inner: S,
    pub mangle: Mangle,
    pub target: usize,
    seen: usize,
    held: Vec<Effect>,
}

impl<S: Subject> Mangled<S> {
    pub fn new(inner: S, mangle: Mangle, target: usize) -> Mangled<S> {
        Mangled {
            inner,
            mangle,
            target,
            seen: 0,
            held: Vec::new(),
        }
    }
}

impl<S: Subject> Subject for Mangled<S> {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        self.inner.start(scenario)
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let from = effects.len();
        self.inner.deliver(input, effects)?;
        let produced: Vec<Effect> = effects.drain(from..).collect();
        let held = std::mem::take(&mut self.held);
        for effect in produced {
            let this = self.seen;
            self.seen += 1;
            match (this == self.target, self.mangle) {
                (false, _) => effects.push(effect),
                (true, Mangle::Delete) => {}
                (true, Mangle::Duplicate) => {
                    effects.push(effect.clone());
                    effects.push(effect);
                }
                (true, Mangle::Delay) => self.held.push(effect),
            }
        }
        effects.extend(held);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SubjectFailure> {
        self.inner.finish()
    }

    fn state(&self) -> Option<StateProbe> {
        self.inner.state()
    }
}
