//! Generated scenarios: random session trees, model scripts with tool calls, hooks, fault
//! plans, and one to four concurrent prompts with flush, dispose, steer, followUp and abort at
//! random points, each run under the canonical schedule and several random and pct seeds, with
//! every rule checked on every trace.
//!
//! A failure shrinks (proptest) to a minimal scenario, written as an ordinary scenario file to
//! `target/shrunk/` with its replay command printed; copy it to `scenarios/regressions/` to keep
//! it. Failing seeds persist in `tests/kit/proptest-regressions/`.

use std::path::PathBuf;

use agentsim::model::{ContextBudget, Message, OperationKind, SessionEntry, ToolCall};
use agentsim::runtime::{Cause, ClockRule, IdRule};
use agentsim::scenario::{
    After, AfterAnswer, AppendFault, AppendFaultKind, BeforeAnswer, Config, Expectations, ExtensionScript, FaultPlan,
    ModelStep, OperationSpec, RewrittenResult, Scenario, ToolScript, ToolStep,
};
use agentsim::sim::reference::ReferenceSubject;
use agentsim::sim::{make_strategy, simulate, StrategyKind};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence};

fn session_entry(index: usize, parent: Option<usize>) -> SessionEntry {
    let id = format!("s{index}");
    let parent = parent.map(|parent| format!("s{parent}"));
    let message = if index.is_multiple_of(2) {
        Message::user(format!("old question {index}"), 1_000 + index as u64)
    } else {
        Message::Assistant(agentsim::model::AssistantMessage {
            content: vec![agentsim::model::AssistantBlock::Text {
                text: format!("old answer {index}"),
            }],
            api: "agentsim".into(),
            provider: "agentsim".into(),
            model: "scripted".into(),
            usage: Default::default(),
            stop_reason: agentsim::model::StopReason::Stop,
            error_message: None,
            timestamp: 1_000 + index as u64,
        })
    };
    SessionEntry::message(id, parent.as_deref(), "2026-01-01T00:00:00.000Z", message)
}

/// A session tree of `parents.len()` entries (entry i's parent is one of 0..i) and a leaf.
fn session() -> impl Strategy<Value = (Vec<SessionEntry>, Option<String>)> {
    (0usize..6)
        .prop_flat_map(|count| {
            let parents: Vec<BoxedStrategy<usize>> = (1..count).map(|index| (0..index).boxed()).collect();
            (Just(count), parents, 0..count.max(1))
        })
        .prop_map(|(count, parents, leaf)| {
            let entries: Vec<SessionEntry> = (0..count)
                .map(|index| session_entry(index, index.checked_sub(1).map(|i| parents[i])))
                .collect();
            let leaf = (count > 0).then(|| format!("s{leaf}"));
            (entries, leaf)
        })
}

fn model_step() -> impl Strategy<Value = ModelStep> {
    prop_oneof![
        3 => (1u32..4, "[a-z]{1,12}").prop_map(|(chunks, text)| ModelStep {
            text: Some(format!("answer {text}")),
            chunks: Some(chunks),
            ..ModelStep::default()
        }),
        3 => (1usize..3, any::<bool>()).prop_map(|(calls, valid)| ModelStep {
            tool_calls: (0..calls)
                .map(|index| ToolCall {
                    id: format!("call-{index}"),
                    name: "note".into(),
                    arguments: if valid || index > 0 {
                        serde_json::json!({"note": format!("n{index}")})
                    } else {
                        serde_json::json!({"note": 7})
                    },
                })
                .collect(),
            ..ModelStep::default()
        }),
        1 => Just(ModelStep {
            error: Some("provider failed".into()),
            ..ModelStep::default()
        }),
    ]
}

fn tool_step() -> impl Strategy<Value = ToolStep> {
    prop_oneof![
        4 => Just(ToolStep::Result("noted".into())),
        1 => Just(ToolStep::Error("bad note".into())),
        1 => Just(ToolStep::Throw("tool crashed".into())),
        1 => Just(ToolStep::Hang),
    ]
}

fn extension(index: usize) -> impl Strategy<Value = ExtensionScript> {
    let before = prop_oneof![
        4 => Just(BeforeAnswer::Allow),
        1 => Just(BeforeAnswer::Deny("not allowed".into())),
        1 => Just(BeforeAnswer::Rewrite(serde_json::json!({"note": "rewritten"}))),
        1 => Just(BeforeAnswer::Throw("policy crashed".into())),
    ];
    let after = prop_oneof![
        3 => Just(AfterAnswer::Observe),
        1 => Just(AfterAnswer::Rewrite(RewrittenResult { text: "redacted".into(), is_error: false })),
        1 => Just(AfterAnswer::Throw("observer crashed".into())),
    ];
    (prop::collection::vec(before, 0..3), prop::collection::vec(after, 0..3)).prop_map(move |(before, after)| {
        ExtensionScript {
            name: format!("ext-{index}"),
            before,
            after,
        }
    })
}

fn fault() -> impl Strategy<Value = AppendFault> {
    (
        1u32..9,
        prop_oneof![Just(AppendFaultKind::Reject), Just(AppendFaultKind::AppliedThenFail)],
    )
        .prop_map(|(at, fault)| AppendFault {
            at,
            fault,
            error: Some(Cause::new("diskError", "disk full")),
            until: None,
        })
}

/// An operation and where it lands: (kind, after-condition selector).
fn operation() -> impl Strategy<Value = (OperationKind, u8, u32)> {
    let kind = prop_oneof![
        6 => Just(OperationKind::Prompt),
        1 => Just(OperationKind::Flush),
        1 => Just(OperationKind::Dispose),
        1 => Just(OperationKind::Steer),
        1 => Just(OperationKind::FollowUp),
        1 => Just(OperationKind::Abort),
        1 => Just(OperationKind::Library),
    ];
    (kind, 0u8..5, 1u32..3)
}

prop_compose! {
    fn scenario()(
        (session, leaf) in session(),
        model in prop::collection::vec(model_step(), 1..7),
        tool_results in prop::collection::vec(tool_step(), 0..4),
        extensions in prop::collection::vec(any::<()>(), 0..3),
        extension_scripts in (extension(0), extension(1)),
        faults in prop::collection::vec(fault(), 0..2),
        operations in prop::collection::vec(operation(), 1..6),
        steps_max in 1u32..5,
        total in prop_oneof![Just(100_000u64), 20u64..120],
    ) -> Scenario {
        // Call ids are unique in a transcript, as a model's are.
        let mut model = model;
        for (step, response) in model.iter_mut().enumerate() {
            for (index, call) in response.tool_calls.iter_mut().enumerate() {
                call.id = format!("call-{step}-{index}");
            }
        }
        let extensions: Vec<ExtensionScript> = [extension_scripts.0, extension_scripts.1]
            .into_iter()
            .take(extensions.len())
            .collect();
        let mut prompts = 0;
        let mut specs: Vec<OperationSpec> = operations
            .iter()
            .enumerate()
            .map(|(index, (kind, when, count))| {
                if *kind == OperationKind::Prompt || *kind == OperationKind::Library {
                    prompts += 1;
                }
                let text = match kind {
                    OperationKind::Prompt | OperationKind::Library => Some(format!("prompt {index}")),
                    OperationKind::Steer => Some(format!("steer {index}")),
                    OperationKind::FollowUp => Some(format!("follow {index}")),
                    _ => None,
                };
                let after = match when {
                    1 => Some(After::ModelRequests(*count)),
                    2 => Some(After::AppendsIssued(*count)),
                    3 if index > 0 => Some(After::Settled(index as u32)),
                    4 => Some(After::ToolCalls(1)),
                    _ => None,
                };
                OperationSpec { op: *kind, text, mode: None, after }
            })
            .collect();
        if prompts == 0 {
            specs.insert(0, OperationSpec { op: OperationKind::Prompt, text: Some("first".into()), mode: None, after: None });
        }
        Scenario {
            version: 1,
            description: "generated".into(),
            rules: vec!["PERSIST-1".into()],
            session,
            config: Config {
                active_leaf_id: leaf,
                system_prompt: Some("BASE SYSTEM".into()),
                max_steps: steps_max,
                context: ContextBudget { total, reserved_output: 4, safety_margin: 2 },
                ids: IdRule::default(),
                clock: ClockRule::default(),
            },
            resources: Default::default(),
            extensions,
            observers: Vec::new(),
            tools: vec![ToolScript {
                name: "note".into(),
                description: "Record a note".into(),
                parameters: serde_json::json!({"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}),
                results: tool_results,
            }],
            model,
            faults: FaultPlan { appends: faults, writes: Vec::new() },
            operations: specs,
            expect: Expectations::default(),
            net: None,
            schedule: None,
        }
    }
}

/// The schedules each generated scenario runs under.
fn schedules() -> Vec<(StrategyKind, u64)> {
    let mut schedules = vec![(StrategyKind::Scripted, 0)];
    schedules.extend((0..4).map(|seed| (StrategyKind::Random, seed)));
    schedules.extend((0..2).map(|seed| (StrategyKind::Pct { depth: 3 }, seed)));
    schedules
}

/// Runs `scenario` under every schedule; the first violation, with where to replay it.
fn violations_of(scenario: &Scenario) -> Result<(), String> {
    for (strategy, seed) in schedules() {
        let mut subject = ReferenceSubject::new();
        let outcome = simulate(scenario, &mut subject, make_strategy(strategy, seed).as_mut())
            .map_err(|failure| format!("the reference broke: {failure}"))?;
        let violations = outcome.violations(scenario);
        if let Some(first) = violations.first() {
            let path = write_shrunk(scenario, &first.rule);
            let mut replay = format!("agentsim replay {}", path.display());
            if strategy != StrategyKind::Scripted {
                replay.push_str(&format!(" --strategy {} --seed {seed}", strategy.spelling()));
            }
            return Err(format!(
                "{} {:?} {}\n  replay: {replay}",
                first.rule, first.lines, first.message
            ));
        }
    }
    Ok(())
}

/// Writes the failing scenario (the last written is the shrunk one) as an ordinary file.
fn write_shrunk(scenario: &Scenario, rule: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/shrunk");
    std::fs::create_dir_all(&dir).expect("target/ is writable");
    let mut file = scenario.clone();
    file.rules = vec![rule.to_string()];
    file.description = format!("Shrunk by the generated-scenario test: violates {rule}.");
    let path = dir.join(format!("{}.json", rule.to_lowercase()));
    std::fs::write(&path, serde_json::to_string_pretty(&file).expect("scenarios serialize")).expect("written");
    path
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(256),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("tests/kit/proptest-regressions/generated.txt"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_scenarios_keep_every_rule(scenario in scenario()) {
        if let Err(message) = violations_of(&scenario) {
            prop_assert!(false, "{}", message);
        }
    }
}

/// The generator can find real bugs: a mutant the corpus catches is caught here too, by a
/// rule of the area the bug breaks (POISON), not by whatever else fires.
#[test]
fn generated_scenarios_catch_the_poison_mutant() {
    use proptest::strategy::ValueTree;
    let mutant = agentsim::implementation::Implementation::mutant(agentsim::zoo::Mutant::QueuedRunAfterPoison);
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut caught = false;
    for _ in 0..400 {
        let scenario = scenario().new_tree(&mut runner).expect("generates").current();
        for (strategy, seed) in schedules() {
            let mut subject = mutant.subject();
            let outcome = simulate(&scenario, &mut subject, make_strategy(strategy, seed).as_mut()).expect("runs");
            let violations = outcome.violations(&scenario);
            if violations.iter().any(|violation| violation.rule.starts_with("POISON-")) {
                caught = true;
            }
        }
        if caught {
            break;
        }
    }
    assert!(caught, "400 generated scenarios never caught queued-run-after-poison");
}
