use std::path::PathBuf;

use super::*;
use crate::sim::reference::ReferenceSubject;
use crate::sim::{simulate, Random, Scripted};

fn scenario(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name);
    crate::suite::load_corpus(&[path])
        .expect("a corpus scenario loads")
        .remove(0)
        .scenario
}

fn reference_trace(scenario: &Scenario, seed: Option<u64>) -> Trace {
    let mut subject = ReferenceSubject::new();
    let outcome = match seed {
        None => simulate(scenario, &mut subject, &mut Scripted),
        Some(seed) => simulate(scenario, &mut subject, &mut Random::new(seed)),
    };
    outcome.expect("the reference runs").trace
}

fn replayed(scenario: &Scenario, trace: &Trace) -> Option<Difference> {
    replay(scenario, trace, &mut ReferenceSubject::new(), Freedoms::ALL).difference
}

#[test]
fn the_references_own_trace_replays_without_difference() {
    let scenario = scenario("wiring/walkthrough.json");
    for seed in [None, Some(1), Some(2), Some(3)] {
        let trace = reference_trace(&scenario, seed);
        let replay = replay(&scenario, &trace, &mut ReferenceSubject::new(), Freedoms::RAW);
        assert_eq!(replay.difference, None, "seed {seed:?}");
        // The replay re-feeds the same inputs: its trace is the trace, line for line.
        assert_eq!(
            replay.trace.events,
            trace.events[..trace.events.len() - 1],
            "seed {seed:?}"
        );
    }
}

#[test]
fn a_settlement_one_step_late_is_missing_where_the_reference_settles() {
    let scenario = scenario("persist/parent-chain-across-three-prompts.json");
    let mut trace = reference_trace(&scenario, None);
    let settled = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::Settled { .. }))
        .expect("an operation settles");
    // Move it behind the next input.
    let event = trace.events.remove(settled);
    let next = trace.events[settled..]
        .iter()
        .position(is_input)
        .expect("an input follows");
    trace.events.insert(settled + next + 1, event);
    let difference = replayed(&scenario, &trace).expect("a late settlement differs");
    assert_eq!(difference.kind, DifferenceKind::Missing, "{}", difference.message());
    assert!(
        difference.identity.starts_with("the settlement of"),
        "{}",
        difference.message()
    );
}

#[test]
fn a_value_wrong_in_a_later_occurrence_only_is_different_there() {
    let scenario = scenario("wiring/walkthrough.json");
    let mut trace = reference_trace(&scenario, None);
    let requests: Vec<usize> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(event, Event::ModelRequest { .. }))
        .map(|(index, _)| index)
        .collect();
    assert!(requests.len() >= 2, "the walk-through sends two requests");
    if let Event::ModelRequest { system_prompt, .. } = &mut trace.events[requests[1]] {
        *system_prompt = Some("another prompt".into());
    }
    let difference = replayed(&scenario, &trace).expect("the second request differs");
    assert_eq!(difference.kind, DifferenceKind::Different);
    assert_eq!(difference.identity, "model request 2");
    assert_eq!(difference.implementation_line, Some(requests[1] + 1));
    assert_eq!(
        difference.field.as_ref().map(|field| field.path.as_str()),
        Some("system_prompt")
    );
}

#[test]
fn an_output_the_reference_never_issues_is_extra() {
    let scenario = scenario("wiring/walkthrough.json");
    let mut trace = reference_trace(&scenario, None);
    let at = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::Settled { .. }))
        .expect("a settlement");
    let mut extra = trace.events[at].clone();
    if let Event::Settled { op, .. } = &mut extra {
        op.0 += 40;
    }
    trace.events.insert(at, extra);
    let difference = replayed(&scenario, &trace).expect("an extra settlement");
    assert_eq!(difference.kind, DifferenceKind::Extra, "{}", difference.message());
    assert_eq!(difference.implementation_line, Some(at + 1));
}

/// The freedoms of conformance.md, each used by an edited trace of the reference that must
/// replay with no difference: outputs of one step in another order, other model-client fields,
/// other diagnostic texts, other clock readings and other appended ids.
#[test]
fn a_trace_that_uses_the_freedoms_replays_without_difference() {
    use crate::model::Message;
    let scenario = scenario("poison/two-prompts-dispose-failing-append.json");
    let mut trace = reference_trace(&scenario, None);
    // The order within a step: the first step with two outputs has them swapped.
    let output = |event: &Event| !is_input(event) && !matches!(event, Event::End { .. } | Event::Restored { .. });
    let at = (1..trace.events.len() - 1)
        .find(|at| output(&trace.events[*at]) && output(&trace.events[at + 1]))
        .expect("a step with two outputs");
    trace.events.swap(at, at + 1);
    let mut renamed = std::collections::BTreeMap::new();
    for event in &mut trace.events {
        match event {
            // Clock readings and appended ids.
            Event::Append { entry, .. } => {
                let id = format!("other-{}", entry.id);
                renamed.insert(entry.id.clone(), id.clone());
                entry.id = id;
                if let Some(parent) = entry
                    .parent_id
                    .as_mut()
                    .and_then(|parent| renamed.get(parent).cloned().map(|new| (parent, new)))
                {
                    *parent.0 = parent.1;
                }
                entry.timestamp = "2030-01-01T00:00:00.000Z".into();
            }
            // Model-client fields in what the runtime sends back to the model.
            Event::ModelRequest { messages, .. } => {
                for message in messages.iter_mut() {
                    if let Message::Assistant(assistant) = message {
                        assistant.provider = "another-client".into();
                        assistant.usage.input += 7;
                    }
                }
            }
            // Diagnostic texts.
            Event::Settled {
                settlement: crate::runtime::Settlement::Rejected(cause),
                ..
            } => cause.message = "worded otherwise".into(),
            _ => {}
        }
    }
    assert_eq!(replayed(&scenario, &trace), None);
    // And without the freedoms, the same trace differs.
    let raw = replay(&scenario, &trace, &mut ReferenceSubject::new(), Freedoms::RAW).difference;
    assert!(raw.is_some(), "the raw comparison sees the changes");
}
