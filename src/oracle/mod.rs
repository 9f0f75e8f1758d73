//! The whole-trace oracle: the reference, run on an implementation's inputs, as the
//! specification of every output (REF-1).
//!
//! A trace is the world's side (operations delivered, effects answered) interleaved with the
//! runtime's outputs (effects issued, abort signals, settlements). [`replay`] re-feeds the
//! world's side of any trace (canonical, explored, networked) to another subject, usually the
//! reference, one input at a time, as Temporal's replayer re-feeds a recorded history: each
//! operation at the same point, each answer to the subject's effect of the same identity
//! ([`identity`]). After each input, the outputs both issued until quiescent (one *step*) are
//! matched by identity and compared as JSON, with the contract's [`freedoms`] set aside.
//!
//! The result is the first output that differs, typed: **missing** (the reference issued it in
//! that step, the implementation did not), **extra** (the other way round) or **different**
//! (both, with the first differing field), or none. A settlement that comes a step late is a
//! missing output in the step where the reference settles; a value wrong in its second
//! occurrence only is a different output at that occurrence.

pub mod freedoms;
pub mod identity;
pub mod record;

use std::collections::BTreeMap;

use serde_json::Value;

pub use crate::check::reference::DifferenceKind;
use crate::model::first_json_difference;
use crate::protocol::diff::{Divergence, FieldDifference};
use crate::runtime::{Completion, Effect, EffectId, Input, StoreOutcome};
use crate::scenario::Scenario;
use crate::sim::Subject;
use crate::trace::{render_line, Event, Trace};

pub use freedoms::Freedoms;
use freedoms::Normalizer;
use identity::{answered, Identity, Namer};

/// The first output of an implementation's trace that the reference, fed the same inputs,
/// does not issue the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub kind: DifferenceKind,
    /// Which output (for a refused input, the input).
    pub identity: String,
    /// The input the step began with: `the restore`, `deliver op 2 (prompt)`, `the answer to
    /// model request 1`.
    pub step: String,
    /// 1-based lines, in the implementation's trace and in the reference's replay.
    pub implementation_line: Option<usize>,
    pub reference_line: Option<usize>,
    /// Both outputs, rendered as trace lines.
    pub implementation: Option<String>,
    pub reference: Option<String>,
    /// The first differing field, with the freedoms set aside (`Different` only).
    pub field: Option<FieldDifference>,
    /// An extra input rather than an extra output: the reference failed to take it (its
    /// failure is in `reference`).
    pub refused: bool,
}

impl Difference {
    /// One sentence: what differs, where, and both sides.
    pub fn message(&self) -> String {
        let side = |line: &Option<String>| line.clone().unwrap_or_else(|| "nothing".into());
        match self.kind {
            DifferenceKind::Missing => format!(
                "{} is missing after {}: the reference, fed the same inputs, issues `{}` there; the implementation does not",
                self.identity,
                self.step,
                side(&self.reference)
            ),
            DifferenceKind::Extra if self.refused => format!(
                "the reference cannot take {} after {}, which the implementation's trace gives: {}",
                self.identity,
                self.step,
                side(&self.reference)
            ),
            DifferenceKind::Extra => format!(
                "{} is extra after {}: the implementation issues `{}`; the reference, fed the same inputs, does not",
                self.identity,
                self.step,
                side(&self.implementation)
            ),
            DifferenceKind::Different => match &self.field {
                Some(field) => format!(
                    "{} differs after {} at `{}`: the reference, fed the same inputs, gives {}, the implementation {}",
                    self.identity, self.step, field.path, field.reference, field.implementation
                ),
                None => format!("{} differs after {}", self.identity, self.step),
            },
        }
    }

    /// The difference as REF-1's checker reads it.
    pub fn for_rule(&self) -> crate::check::reference::ReferenceDifference {
        crate::check::reference::ReferenceDifference {
            kind: self.kind,
            line: self.implementation_line.unwrap_or(1),
            message: self.message(),
        }
    }

    /// The difference as a report's divergence (its line is the implementation's).
    pub fn divergence(&self) -> Divergence {
        Divergence {
            line: self.implementation_line.unwrap_or(0),
            reference: self.reference.clone(),
            implementation: self.implementation.clone(),
            field: self.field.clone(),
            oracle: Some((self.kind, self.identity.clone(), self.step.clone())),
        }
    }
}

/// The replay of a trace on a subject: the subject's trace, and the first difference.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub trace: Trace,
    pub difference: Option<Difference>,
}

/// One output: its identity and its 0-based index in its side's trace.
struct Output {
    identity: Identity,
    index: usize,
}

/// One side of the comparison: its names, its normalizer, and its notifications so far.
#[derive(Default)]
struct Side {
    namer: Namer,
    normalizer: Normalizer,
    notifications: Vec<Output>,
}

impl Side {
    /// Names the output at 0-based `index`; notifications go aside.
    fn take(&mut self, index: usize, event: &Event, freedoms: Freedoms, step: &mut Vec<Output>) {
        let Some(identity) = self.namer.name(event) else {
            return;
        };
        self.normalizer.register(event, freedoms);
        let output = Output { identity, index };
        if matches!(event, Event::Notify { .. }) {
            self.notifications.push(output);
        } else {
            step.push(output);
        }
    }
}

/// One side's trace and names, as a comparison reads them.
#[derive(Clone, Copy)]
struct Seen<'s> {
    events: &'s [Event],
    side: &'s Side,
    freedoms: Freedoms,
}

impl Seen<'_> {
    fn event(&self, output: &Output) -> &Event {
        &self.events[output.index]
    }

    fn rendered(&self, output: &Output) -> String {
        render_line(output.index + 1, self.event(output))
    }

    fn value(&self, output: &Output) -> Value {
        self.side
            .normalizer
            .output(self.event(output), &self.side.namer, self.freedoms)
    }
}

/// Whether an event is the world's input to the runtime (an operation or an answer).
fn is_input(event: &Event) -> bool {
    event.is_input()
}

/// What the world gave, as the input a subject takes.
fn completion(event: &Event) -> Option<Completion> {
    Some(match event {
        Event::ModelChunk { text, .. } => Completion::ModelChunk { text: text.clone() },
        Event::ModelResponse { message, .. } => Completion::ModelFinal {
            message: message.clone(),
        },
        Event::ToolAnswer { answer, .. } => Completion::Tool(answer.clone()),
        Event::HookAnswer { answer, .. } => Completion::Hook(answer.clone()),
        Event::AppendAnswer { answer, .. } => Completion::Append(match answer.cause() {
            None => StoreOutcome::Ok,
            Some(cause) => StoreOutcome::Failed(cause.clone()),
        }),
        Event::WriteAnswer { error, .. } => Completion::Write(match error {
            None => StoreOutcome::Ok,
            Some(cause) => StoreOutcome::Failed(cause.clone()),
        }),
        Event::NotifyAnswer { answer, .. } => Completion::Notify(answer.clone()),
        _ => return None,
    })
}

/// The world's event with the subject's own effect id.
fn with_effect(event: &Event, id: EffectId) -> Event {
    let mut event = event.clone();
    match &mut event {
        Event::ModelChunk { effect, .. }
        | Event::ModelResponse { effect, .. }
        | Event::ToolAnswer { effect, .. }
        | Event::HookAnswer { effect, .. }
        | Event::AppendAnswer { effect, .. }
        | Event::WriteAnswer { effect, .. }
        | Event::NotifyAnswer { effect, .. } => *effect = id,
        _ => {}
    }
    event
}

/// The replaying subject's run: its trace, its side of the comparison, and its effects still
/// pending, by identity.
struct Replaying<'s> {
    subject: &'s mut dyn Subject,
    trace: Trace,
    side: Side,
    pending: BTreeMap<Identity, EffectId>,
    freedoms: Freedoms,
    /// The subject's state where it changed, recorded as the scheduler records it (no output:
    /// PERSIST-10 judges it, the comparison never sees it).
    states: crate::trace::StateRecorder,
}

impl Replaying<'_> {
    /// Records the subject's outputs into its trace, naming each and keeping the pending ones.
    fn record(&mut self, effects: Vec<Effect>, step: &mut Vec<Output>) {
        for effect in effects {
            let pending = effect.pending_id();
            let event = Event::from_effect(effect);
            let index = self.trace.events.len();
            self.side.take(index, &event, self.freedoms, step);
            if let Some(identity) = pending.and_then(|id| self.side.namer.effect(id)) {
                self.pending.insert(identity.clone(), pending.expect("named by it"));
            }
            self.trace.push(event);
        }
    }

    /// Delivers one input; `Err` carries the subject's failure as text.
    fn deliver(&mut self, world: Event, input: Input, step: &mut Vec<Output>) -> Result<(), String> {
        self.trace.push(world);
        let mut effects = Vec::new();
        self.subject
            .deliver(input, &mut effects)
            .map_err(|failure| failure.to_string())?;
        self.record(effects, step);
        self.trace.events.extend(self.states.observe(self.subject.state()));
        Ok(())
    }
}

/// Every rule's violations on a trace and its final store, REF-1's included: the trace is
/// replayed on the reference ([`replay`]) for it. What `check::check_all` is without the oracle.
pub fn check_with_reference(
    scenario: &Scenario,
    trace: &Trace,
    store: &[&crate::model::SessionEntry],
) -> Vec<crate::check::Violation> {
    let difference = replay(
        scenario,
        trace,
        &mut crate::sim::reference::ReferenceSubject::new(),
        Freedoms::ALL,
    )
    .difference
    .map(|difference| difference.for_rule());
    crate::check::check_timeline(&crate::check::Timeline::new(scenario, trace, store).with_reference(difference))
}

/// Re-feeds the world's side of `recorded` to `subject` (see the module documentation) and
/// returns the subject's trace and the first output of `recorded` it does not issue the same
/// way. The subject is started from `scenario` and finished at the end.
pub fn replay(scenario: &Scenario, recorded: &Trace, subject: &mut dyn Subject, freedoms: Freedoms) -> Replayed {
    let mut theirs = Side::default();
    let mut ours = Replaying {
        subject,
        trace: Trace::default(),
        side: Side::default(),
        pending: BTreeMap::new(),
        freedoms,
        states: crate::trace::StateRecorder::default(),
    };
    let difference = replay_steps(scenario, recorded, &mut ours, &mut theirs);
    let _ = ours.subject.finish();
    Replayed {
        trace: ours.trace,
        difference,
    }
}

fn replay_steps(
    scenario: &Scenario,
    recorded: &Trace,
    ours: &mut Replaying<'_>,
    theirs: &mut Side,
) -> Option<Difference> {
    let freedoms = ours.freedoms;
    let events = &recorded.events;
    // The restore: the subject's own start, compared with what the recorded trace shows before
    // its first input.
    let mut our_step = Vec::new();
    match ours.subject.start(scenario) {
        Err(failure) => {
            return Some(refused("the restore".into(), "the restore", failure.to_string()));
        }
        Ok(Ok(restored)) => {
            let index = ours.trace.events.len();
            ours.states = crate::trace::StateRecorder::restored(restored.leaf.as_deref());
            let event = Event::Restored {
                leaf: restored.leaf,
                messages: restored.messages,
                probed: ours.subject.state().is_some(),
            };
            ours.side.take(index, &event, freedoms, &mut our_step);
            ours.trace.push(event);
            ours.record(restored.setup, &mut our_step);
            let state = ours.states.observe(ours.subject.state());
            ours.trace.events.extend(state);
        }
        Ok(Err(cause)) => {
            let event = Event::RestoreFailed { cause };
            ours.side.take(0, &event, freedoms, &mut our_step);
            ours.trace.push(event);
        }
    }
    let mut index = 0;
    let mut their_step = Vec::new();
    while index < events.len() && !is_input(&events[index]) {
        theirs.take(index, &events[index], freedoms, &mut their_step);
        index += 1;
    }
    let (our_seen, their_seen) = seen(ours, events, theirs);
    if let Some(difference) = compare(our_seen, &our_step, their_seen, &their_step, "the restore") {
        return Some(placed(difference, index));
    }
    // Notification answers whose notification the replaying subject has not issued yet.
    let mut deferred: Vec<(Identity, usize)> = Vec::new();
    while index < events.len() {
        let input_at = index;
        let world = &events[input_at];
        index += 1;
        let mut their_step = Vec::new();
        while index < events.len() && !is_input(&events[index]) {
            theirs.take(index, &events[index], freedoms, &mut their_step);
            index += 1;
        }
        let mut our_step = Vec::new();
        let step = match world {
            Event::Deliver { op, operation } => {
                let step = format!("deliver {op} ({})", operation.kind().name());
                let input = Input::Operation {
                    op: *op,
                    operation: operation.clone(),
                };
                if let Err(failure) = ours.deliver(world.clone(), input, &mut our_step) {
                    return Some(placed(refused(format!("{op}"), &step, failure), input_at + 1));
                }
                step
            }
            _ => {
                let effect = answered(world).expect("inputs are operations or answers");
                let Some(identity) = theirs.namer.effect(effect).cloned() else {
                    // An answer to an effect the recorded trace never issued: a broken trace.
                    let step = format!("the answer at line {}", input_at + 1);
                    return Some(refused(
                        format!("effect {}", effect.0),
                        &step,
                        "no output issued this effect".into(),
                    ));
                };
                let step = format!("the answer to {identity}");
                match ours.pending.get(&identity).copied() {
                    Some(id) => {
                        if let Err(failure) = answer(ours, world, id, &identity, &mut our_step) {
                            return Some(placed(refused(identity.to_string(), &step, failure), input_at + 1));
                        }
                    }
                    None if matches!(identity, Identity::Notify { .. }) => deferred.push((identity, input_at)),
                    None => {
                        return Some(Difference {
                            kind: DifferenceKind::Extra,
                            identity: identity.to_string(),
                            step: step.clone(),
                            implementation_line: Some(input_at + 1),
                            reference_line: None,
                            implementation: Some(render_line(input_at + 1, world)),
                            reference: None,
                            field: None,
                            refused: false,
                        });
                    }
                }
                step
            }
        };
        // Answer the notifications the subject has issued by now.
        let mut waiting = Vec::new();
        for (identity, at) in std::mem::take(&mut deferred) {
            match ours.pending.get(&identity).copied() {
                Some(id) => {
                    if let Err(failure) = answer(ours, &events[at], id, &identity, &mut our_step) {
                        return Some(placed(refused(identity.to_string(), &step, failure), at + 1));
                    }
                }
                None => waiting.push((identity, at)),
            }
        }
        deferred = waiting;
        let (our_seen, their_seen) = seen(ours, events, theirs);
        if let Some(difference) = compare(our_seen, &our_step, their_seen, &their_step, &step) {
            return Some(placed(difference, index));
        }
    }
    let (our_seen, their_seen) = seen(ours, events, theirs);
    let step = "the run (notifications are compared per observer, in order)";
    compare(
        our_seen,
        &ours.side.notifications,
        their_seen,
        &theirs.notifications,
        step,
    )
    .map(|difference| placed(difference, events.len()))
}

/// Both sides as a comparison reads them.
fn seen<'s>(ours: &'s Replaying<'_>, events: &'s [Event], theirs: &'s Side) -> (Seen<'s>, Seen<'s>) {
    let freedoms = ours.freedoms;
    (
        Seen {
            events: &ours.trace.events,
            side: &ours.side,
            freedoms,
        },
        Seen {
            events,
            side: theirs,
            freedoms,
        },
    )
}

/// A difference with no line of the implementation's own (a missing output, a refused input)
/// placed at `line`, the implementation's last line of the step: where it shows at the latest.
fn placed(mut difference: Difference, line: usize) -> Difference {
    difference.implementation_line.get_or_insert(line.max(1));
    difference
}

/// Gives the subject the world's answer recorded in `world`, to its effect `id`.
fn answer(
    ours: &mut Replaying<'_>,
    world: &Event,
    id: EffectId,
    identity: &Identity,
    step: &mut Vec<Output>,
) -> Result<(), String> {
    let completion = completion(world).expect("answers carry a completion");
    if !matches!(completion, Completion::ModelChunk { .. }) {
        ours.pending.remove(identity);
    }
    ours.deliver(with_effect(world, id), Input::Complete { effect: id, completion }, step)
}

fn refused(identity: String, step: &str, failure: String) -> Difference {
    Difference {
        kind: DifferenceKind::Extra,
        refused: true,
        identity,
        step: step.to_string(),
        implementation_line: None,
        reference_line: None,
        implementation: None,
        reference: Some(failure),
        field: None,
    }
}

/// The first difference between two steps' outputs, matched by identity: the
/// implementation's outputs in its order (extra or different), then the reference's it lacks
/// (missing).
fn compare(
    ours: Seen<'_>,
    our_step: &[Output],
    theirs: Seen<'_>,
    their_step: &[Output],
    step: &str,
) -> Option<Difference> {
    let by_identity = |outputs: &[Output]| -> BTreeMap<Identity, usize> {
        outputs
            .iter()
            .enumerate()
            .map(|(position, output)| (output.identity.clone(), position))
            .collect()
    };
    let our_index = by_identity(our_step);
    let their_index = by_identity(their_step);
    for their in their_step {
        match our_index.get(&their.identity) {
            None => return Some(one_sided(DifferenceKind::Extra, theirs, their, step)),
            Some(&position) => {
                if let Some(difference) = different(ours, &our_step[position], theirs, their, step) {
                    return Some(difference);
                }
            }
        }
    }
    our_step
        .iter()
        .find(|our| !their_index.contains_key(&our.identity))
        .map(|our| one_sided(DifferenceKind::Missing, ours, our, step))
}

fn one_sided(kind: DifferenceKind, seen: Seen<'_>, output: &Output, step: &str) -> Difference {
    let line = Some(output.index + 1);
    let rendered = Some(seen.rendered(output));
    let (implementation_line, implementation, reference_line, reference) = match kind {
        DifferenceKind::Extra => (line, rendered, None, None),
        _ => (None, None, line, rendered),
    };
    Difference {
        kind,
        identity: output.identity.to_string(),
        step: step.to_string(),
        implementation_line,
        reference_line,
        implementation,
        reference,
        field: None,
        refused: false,
    }
}

/// The difference between two outputs of one identity, if any: equal events (ids included)
/// are the same output without a look at their JSON.
fn different(ours: Seen<'_>, our: &Output, theirs: Seen<'_>, their: &Output, step: &str) -> Option<Difference> {
    if ours.event(our) == theirs.event(their) {
        return None;
    }
    let (our_value, their_value) = (ours.value(our), theirs.value(their));
    if our_value == their_value {
        return None;
    }
    let field =
        first_json_difference(&our_value, &their_value).map(|(path, reference, implementation)| FieldDifference {
            path,
            reference,
            implementation,
        });
    Some(Difference {
        kind: DifferenceKind::Different,
        identity: their.identity.to_string(),
        step: step.to_string(),
        implementation_line: Some(their.index + 1),
        reference_line: Some(our.index + 1),
        implementation: Some(theirs.rendered(their)),
        reference: Some(ours.rendered(our)),
        field,
        refused: false,
    })
}

#[cfg(test)]
mod tests;
