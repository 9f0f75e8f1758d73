//! Fair by construction: a different-but-correct implementation passes everything.
//!
//! `sim::variant::ConformingVariant` is the reference as another conforming runtime shows
//! itself: its clock is read at other points (every timestamp differs), its ids are drawn with
//! gaps, its effect and signal ids are numbered another way. No rule, `expect` block or request
//! check may tell it from the reference: the whole corpus passes on it, on the canonical
//! schedule and under random and pct exploration.

use std::path::Path;

use agentsim::implementation::Implementation;
use agentsim::protocol::diff::{first_divergence, first_raw_divergence};
use agentsim::run::{CaseReport, Run, Verdict};
use agentsim::sim::StrategyKind;
use agentsim::suite::load_corpus;

fn corpus() -> Vec<agentsim::scenario::LoadedScenario> {
    load_corpus(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")]).expect("the corpus loads")
}

fn describe(report: &CaseReport) -> String {
    let mut text = format!(
        "{} ({} seed {}): {:?}\n",
        report.name,
        report.run.strategy().spelling(),
        report.run.seed(),
        report.verdict
    );
    for violation in &report.violations {
        text.push_str(&format!(
            "  {} {:?} {}\n",
            violation.rule, violation.lines, violation.message
        ));
    }
    text
}

#[test]
fn a_different_but_correct_implementation_passes_every_scenario() {
    let mut failures = String::new();
    let mut judged = 0;
    let strategies = [
        (StrategyKind::Scripted, 0..1),
        (StrategyKind::Random, 0..20),
        (StrategyKind::Pct { depth: 3 }, 0..20),
    ];
    for loaded in corpus() {
        for (strategy, seeds) in strategies.clone() {
            for seed in seeds {
                let report = Run::of(&loaded)
                    .seeded(strategy, seed)
                    .on(&Implementation::conforming_variant())
                    .execute(&loaded);
                match report.verdict {
                    Verdict::Passed => judged += 1,
                    _ => failures.push_str(&describe(&report)),
                }
            }
        }
    }
    if !failures.is_empty() {
        let mut by_rule: std::collections::BTreeMap<String, (usize, String)> = Default::default();
        for line in failures.lines().filter(|line| line.starts_with("  ")) {
            let rule = line.split_whitespace().next().unwrap_or("-").to_string();
            let slot = by_rule.entry(rule).or_insert((0, line.to_string()));
            slot.0 += 1;
        }
        let summary: Vec<String> = by_rule
            .iter()
            .map(|(rule, (count, example))| format!("{rule}: {count} violations, e.g.{example}"))
            .collect();
        panic!(
            "{judged} cases passed; the others broke:\n{}\n\n{failures}",
            summary.join("\n")
        );
    }
}

/// OBSERVE-2 judges each notification against the run whose event it carries, not the run in
/// progress when it is issued: a runtime whose event bus hands each observer its next event
/// only after it answered the previous one (and never waits for observers) is conforming, and
/// passes every scenario with observers on the canonical schedule and under exploration.
#[test]
fn a_serial_event_bus_per_observer_passes_under_exploration() {
    let mut failures = String::new();
    let mut judged = 0;
    let mut held_back = 0;
    for loaded in corpus()
        .into_iter()
        .filter(|loaded| !loaded.scenario.observers.is_empty())
    {
        for (strategy, seeds) in [
            (StrategyKind::Scripted, 0..1),
            (StrategyKind::Random, 0..60),
            (StrategyKind::Pct { depth: 3 }, 0..60),
        ] {
            for seed in seeds {
                let implementation = Implementation::conforming_variant_with_serial_observers();
                let report = Run::of(&loaded)
                    .seeded(strategy, seed)
                    .on(&implementation)
                    .execute(&loaded);
                match report.verdict {
                    Verdict::Passed => judged += 1,
                    _ => failures.push_str(&describe(&report)),
                }
                let reference = Run::of(&loaded)
                    .seeded(strategy, seed)
                    .on(&Implementation::reference())
                    .execute(&loaded);
                if let (Some(serial), Some(reference)) = (&report.outcome, &reference.outcome) {
                    held_back += usize::from(first_divergence(&reference.trace, &serial.trace).is_some());
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{judged} cases passed; the others broke:\n{failures}"
    );
    // The bus must actually reorder something, or the test proves nothing.
    assert!(
        held_back > 20,
        "only {held_back} traces differ from the reference's: the bus holds nothing back"
    );
}

/// A runtime that differs from the reference only in the choices the seed leaves open (the
/// variant's clock, ids and numbering) and in the wording of its error results fails no MUST
/// rule, no `expect` block and no request check: only WIRE-9, a SHOULD rule whose clauses its
/// report names, in the scenarios that pin those texts.
#[test]
fn a_runtime_that_words_its_errors_otherwise_fails_only_the_should_rule_on_wording() {
    use agentsim::check::{level_of, Level};
    use agentsim::zoo::Mutant;
    let reworded = Mutant::from_name("error-texts-reworded").expect("the zoo has the wording mutant");
    let implementation = Implementation::conforming_variant().with_mutant(Some(reworded));
    let mut other = String::new();
    let mut failing = Vec::new();
    for loaded in corpus() {
        let report = Run::of(&loaded)
            .seeded(StrategyKind::Scripted, 0)
            .on(&implementation)
            .execute(&loaded);
        match report.verdict {
            Verdict::Passed => {}
            Verdict::Failed => {
                failing.push(loaded.name.clone());
                for violation in &report.violations {
                    let named = violation.clause.is_some_and(|clause| clause.starts_with("WIRE-9."));
                    if !named || level_of(&violation.rule) != Some(Level::Should) {
                        other.push_str(&describe(&report));
                        break;
                    }
                }
            }
            _ => other.push_str(&describe(&report)),
        }
    }
    assert!(other.is_empty(), "failures beyond WIRE-9's wording:\n{other}");
    for pinned in [
        "wiring/executor-error-texts",
        "wiring/hook-failures-name-extension-and-phase",
    ] {
        assert!(
            failing.iter().any(|name| name == pinned),
            "{pinned} passed: WIRE-9 judges nothing"
        );
    }
}

/// The divergence a report shows is the first one that matters: against the reference, the
/// variant has none on any schedule, while its raw traces do differ (its timestamps and ids).
#[test]
fn a_different_but_correct_implementation_has_no_divergence_that_matters() {
    let mut diverging = Vec::new();
    let mut raw = 0;
    let mut compared = 0;
    for loaded in corpus() {
        if loaded.scenario.net.is_some() {
            // The networked world numbers its own effects and orders its events by latency.
            continue;
        }
        for (strategy, seed) in [
            (StrategyKind::Scripted, 0),
            (StrategyKind::Random, 7),
            (StrategyKind::Pct { depth: 3 }, 3),
        ] {
            let reference = Run::of(&loaded)
                .seeded(strategy, seed)
                .on(&Implementation::reference())
                .execute(&loaded);
            let variant = Run::of(&loaded)
                .seeded(strategy, seed)
                .on(&Implementation::conforming_variant())
                .execute(&loaded);
            let (Some(reference), Some(variant)) = (&reference.outcome, &variant.outcome) else {
                continue;
            };
            compared += 1;
            if first_raw_divergence(&reference.trace, &variant.trace).is_some() {
                raw += 1;
            }
            if let Some(divergence) = first_divergence(&reference.trace, &variant.trace) {
                diverging.push(format!("{} ({}): {:?}", loaded.name, strategy.spelling(), divergence));
            }
        }
    }
    assert!(
        diverging.is_empty(),
        "{} of {compared} diverge:\n{}",
        diverging.len(),
        diverging.join("\n")
    );
    // Most runs append or stamp something, so the raw comparison must see the variant's choices.
    assert!(
        raw * 2 > compared,
        "only {raw} of {compared} raw traces differ: the variant changes too little"
    );
}

/// PROJECT-1 judges a run's first request even when the run's first append failed, from the
/// run's user message alone; a steer delivered before the request could have joined it, so
/// then the request is not judged. On the reference's trace of `poison/reject-at-first-append`,
/// a steer's message added to the first request is a violation without the steer's delivery
/// and none with it.
#[test]
fn a_cut_short_runs_first_request_is_judged_only_when_nothing_but_its_prompt_precedes_it() {
    use agentsim::model::{Message, Operation, UserContent, UserMessage};
    use agentsim::runtime::OpId;
    use agentsim::trace::Event;

    let (scenario, outcome) = &reject_at_first_append();
    let project_1 = |trace: &agentsim::trace::Trace| project_1_violations(scenario, outcome, trace);
    assert_eq!(project_1(&outcome.trace), 0, "the reference's own trace is clean");

    let request = outcome
        .trace
        .events
        .iter()
        .position(|event| matches!(event, Event::ModelRequest { .. }))
        .expect("the run makes a request");
    let mut steered_request = outcome.trace.clone();
    let Event::ModelRequest { messages, .. } = &mut steered_request.events[request] else {
        unreachable!("the event at `request` is a model request")
    };
    let timestamp = match messages.last() {
        Some(Message::User(user)) => user.timestamp,
        other => panic!("the run's first request ends with its user message, not {other:?}"),
    };
    messages.push(Message::User(UserMessage {
        content: UserContent::Text("look at the lexer too".into()),
        timestamp,
    }));
    assert_eq!(
        project_1(&steered_request),
        1,
        "a message the run never had, in its first request, breaks PROJECT-1"
    );

    let mut delivered = steered_request.clone();
    delivered.events.insert(
        request,
        Event::Deliver {
            op: OpId(scenario.operations.len() as u32 + 1),
            operation: Operation::Steer {
                text: "look at the lexer too".into(),
            },
        },
    );
    assert_eq!(
        project_1(&delivered),
        0,
        "with a steer delivered before it, the first request is not judged from the prompt alone"
    );
}

/// The scenario `poison/reject-at-first-append` and the reference's scripted run of it.
fn reject_at_first_append() -> (agentsim::scenario::Scenario, agentsim::sim::RunOutcome) {
    use agentsim::sim::reference::ReferenceSubject;
    use agentsim::sim::{simulate, Scripted};

    let loaded = corpus()
        .into_iter()
        .find(|loaded| loaded.name == "poison/reject-at-first-append")
        .expect("the corpus has the scenario");
    let outcome = simulate(&loaded.scenario, &mut ReferenceSubject::new(), &mut Scripted).expect("the reference runs");
    (loaded.scenario, outcome)
}

/// How many PROJECT-1 violations `trace` has, in place of the trace of `outcome` (whose store
/// it is judged with).
fn project_1_violations(
    scenario: &agentsim::scenario::Scenario,
    outcome: &agentsim::sim::RunOutcome,
    trace: &agentsim::trace::Trace,
) -> usize {
    let stored = outcome.stored(scenario);
    agentsim::check::check_all(scenario, trace, &stored)
        .into_iter()
        .filter(|violation| violation.rule == "PROJECT-1")
        .count()
}

/// A run whose first append fails goes on unstored; its second request is judged with the
/// response and tool result it never appended taken from the request itself, found by their
/// tool call ids: the result's content and timestamp (the runtime's hooks and clock) are not
/// judged, what the request carries around them is. On the reference's trace of
/// `poison/reject-at-first-append`, another timestamp and content of that result are no
/// violation; the run's prompt dropped from the request, or the result dropped, is one.
#[test]
fn an_unstored_runs_later_request_is_judged_around_what_only_the_runtime_knows() {
    use agentsim::model::{ContentBlock, Message};
    use agentsim::trace::Event;

    let (scenario, outcome) = &reject_at_first_append();
    let project_1 = |trace: &agentsim::trace::Trace| project_1_violations(scenario, outcome, trace);
    assert_eq!(project_1(&outcome.trace), 0, "the reference's own trace is clean");
    let second = outcome
        .trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(event, Event::ModelRequest { .. }))
        .nth(1)
        .map(|(line, _)| line)
        .expect("the run makes a second request");
    let edited = |edit: &dyn Fn(&mut Vec<Message>)| {
        let mut trace = outcome.trace.clone();
        let Event::ModelRequest { messages, .. } = &mut trace.events[second] else {
            unreachable!("the event at `second` is a model request")
        };
        edit(messages);
        project_1(&trace)
    };

    let other_result = edited(&|messages| {
        let Some(Message::ToolResult(result)) = messages.last_mut() else {
            panic!(
                "the second request ends with the tool result, not {:?}",
                messages.last()
            )
        };
        result.timestamp += 12_345;
        result.content = vec![ContentBlock::text("rewritten by an after hook")];
    });
    assert_eq!(
        other_result, 0,
        "the unstored result's timestamp and content are the runtime's"
    );

    let prompt = outcome
        .trace
        .events
        .iter()
        .find_map(|event| match event {
            Event::Append { entry, .. } => entry.as_message().cloned(),
            _ => None,
        })
        .expect("the run appends its prompt (the append fails)");
    let without_prompt = edited(&|messages| messages.retain(|message| *message != prompt));
    assert_eq!(without_prompt, 1, "the run's prompt dropped from its second request");
    let without_result = edited(&|messages| {
        messages.pop();
    });
    assert_eq!(
        without_result, 1,
        "the unstored tool result dropped from the second request"
    );
}
