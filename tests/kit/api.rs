//! The few facts no trace can show, so no scenario file can state: the embedding API of the
//! in-process Runtime, two pure functions of its projection, the chapter-9 Agent's own refusal,
//! and the chapter's fault injection (a fact about the kit, not about a runtime).
//!
//! Everything a trace shows is a scenario file, one file one test (`tests/scenarios.rs`). Each
//! test here says why it cannot be one. They run the library's own world on scenario files
//! (`Run::execute`); where a fact is about the `Runtime` value itself, the [`Probe`] below
//! is that Runtime as a Subject, so a test reads its accessors between the inputs the world
//! delivers. The accessors that mirror the trace (`system_prompt()`, `resources()`,
//! `extensions()`, `tools()`, `pending_effects()`, `ids_issued()`, `poison()`, `is_closed()`,
//! `persisted_message_count()`, `state().streaming_text`, the agent events and the refusal of
//! an unknown or mismatched completion) are also checked after every input of every scenario
//! by the reference's self-check (`sim::reference`).
//!
//! The seed chapter's ten facts (Lab 13.1: 2, Lab 13.2: 3, Lab 13.3: 3, Lab 13.4: 2), where each
//! is stated (`lab13/…` is `scenarios/lab13/…`; the `lab13_` tests are in this file):
//!
//! | fact | scenario files | API tests |
//! |---|---|---|
//! | 13.1-1 the four restore combinations | `lab13/lab13-1-1`, `-1-1a`, `-1-1b`, `-1-1d` | |
//! | 13.1-2 only the chosen branch, as copies, with the caller's deps | `lab13/lab13-1-2`, `-1-1d`, `restore/metadata-entries-filtered` | `lab13_1_restore_keeps_the_callers_deps_and_owns_its_copies`, `lab13_1_control_exposes_no_prompt` |
//! | 13.2-1 the old path plus the temporary suffix, never stored | `lab13/lab13-2-1`, `projection/temporary-id-collides-with-path` | `lab13_2_projection_calls_no_create_id_and_requests_are_the_agent_transcript`, `lab13_2_temporary_entries_chain_from_the_leaf_and_step_around_the_path`, `lab13_2_project_refuses_a_persisted_count_past_the_transcript` |
//! | 13.2-2 fixed costs first, then only complete newest interactions | `lab13/lab13-2-2`, `-2-2b`, `-2-2c` | |
//! | 13.2-3 the registry's tools, one signal per run | `lab13/lab13-2-3`, `-2-3b` | |
//! | 13.3-1 resources and extension wired, prompts commit serially | `lab13/lab13-3-1`, `wiring/walkthrough` | |
//! | 13.3-2 only the new suffix; the first failed append poisons | `lab13/lab13-3-2`, `-3-2b` | `lab13_fault_injection_poison_not_stored_is_caught` |
//! | 13.3-3 flush waits, dispose closes and drains | `lab13/lab13-3-3`, `-3-3b`, `lifecycle/flush-on-idle-settles-at-once`, `lifecycle/dispose-twice-same-outcome` | |
//! | 13.4-1 a mode writes the final text or one JSON line | `lab13/lab13-4-1`, `-4-1b`, `modes/interactive-writes-final-assistant-text` | |
//! | 13.4-2 an unknown mode never prompts; a write error is returned unchanged | `lab13/lab13-4-2`, `modes/write-error-returned-unchanged` | |

use std::path::Path;

use agentsim::implementation::Implementation;
use agentsim::model::{
    AssistantBlock, AssistantMessage, ContextBudget, EntryBody, Message, SessionEntry, StopReason, ToolSpec, Usage,
    UserContent,
};
use agentsim::run::{Driver, Run, Verdict};
use agentsim::runtime::{
    project, temporary_entries, temporary_id, Agent, AgentError, AgentOptions, AgentStep, Cause, Completion, Effect,
    EffectId, HookOutcome, HookPhase, Input, InputError, ProjectionError, Runtime, RuntimeConfig, RuntimeDeps,
    SignalId, Snapshot, StoreOutcome,
};
use agentsim::scenario::{LoadedScenario, Scenario, ToolScript};
use agentsim::sim::reference::runtime_parts;
use agentsim::sim::{Restored, StrategyKind, Subject, SubjectFailure};
use agentsim::suite::load_corpus;
use agentsim::zoo::Mutant;

/// One scenario file of the corpus, by its test name (`lab13/lab13-2-1-…`).
fn scenario(name: &str) -> LoadedScenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.json"));
    let mut loaded = load_corpus(&[path]).expect("the scenario loads");
    loaded.remove(0)
}

/// The configuration and dependencies the scenario gives the reference.
fn parts(scenario: &Scenario) -> (RuntimeConfig, RuntimeDeps) {
    runtime_parts(scenario)
}

/// The scenario's runtime, restored as the reference restores it.
fn restore(scenario: &Scenario) -> Runtime {
    let (config, deps) = parts(scenario);
    Runtime::restore(config, deps, &scenario.session).expect("the scenario restores")
}

/// The reference Runtime as a Subject whose runtime a test can read: after every input the
/// world delivers, `watch` sees the runtime and the effects that input produced.
struct Probe<'a> {
    runtime: Option<Runtime>,
    /// The restored transcript's length, what the persisted count starts at.
    restored: usize,
    watch: &'a mut dyn FnMut(&mut Runtime, &[Effect]),
}

impl Subject for Probe<'_> {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        let mut runtime = restore(scenario);
        let restored = Restored {
            leaf: runtime.leaf().map(str::to_string),
            messages: runtime.control().state().messages.len(),
            setup: Vec::new(),
        };
        self.restored = runtime.persisted_message_count();
        self.runtime = Some(runtime);
        Ok(Ok(restored))
    }

    /// The state probe, as the reference reports it: its leaf and what it persisted since.
    fn state(&self) -> Option<agentsim::trace::StateProbe> {
        let runtime = self.runtime.as_ref()?;
        Some(agentsim::trace::StateProbe {
            leaf: runtime.leaf().map(str::to_string),
            persisted: (runtime.persisted_message_count() - self.restored) as u64,
        })
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let runtime = self.runtime.as_mut().expect("started");
        runtime
            .handle_input(input)
            .expect("the world delivers only valid inputs");
        let first = effects.len();
        while let Some(effect) = runtime.poll_effect() {
            effects.push(effect);
        }
        (self.watch)(runtime, &effects[first..]);
        Ok(())
    }
}

/// Runs `loaded` on the canonical schedule on a probe, demands that it passes like the
/// reference, and returns the probe's runtime at the end and the rendered trace.
fn run_probe(loaded: &LoadedScenario, watch: &mut dyn FnMut(&mut Runtime, &[Effect])) -> (Runtime, String) {
    let mut probe = Probe {
        runtime: None,
        restored: 0,
        watch,
    };
    let report = Run::of(loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::reference())
        .execute_with(loaded, Driver::borrowing(&mut probe));
    assert_eq!(report.verdict, Verdict::Passed, "{:?}", report.violations);
    let trace = report.outcome.expect("a trace").trace.render();
    (probe.runtime.expect("restored"), trace)
}

fn ids(entries: &[SessionEntry]) -> Vec<&str> {
    entries.iter().map(|entry| entry.id.as_str()).collect()
}

// ----- Lab 13.1 -----

/// Why not data: a trace shows what the runtime sends and appends, never the Rust values it
/// holds or hands out. RESTORE-4 and the `restored` line show which messages were restored;
/// whether the runtime keeps the caller's resources, extensions and tools as given, which
/// entries its active path holds (metadata included), and whether its state is its own copy
/// are facts about the value `Runtime::restore` returns.
#[test]
fn lab13_1_restore_keeps_the_callers_deps_and_owns_its_copies() {
    let walkthrough = scenario("wiring/walkthrough").scenario;
    let (config, deps) = parts(&walkthrough);
    let runtime = Runtime::restore(config, deps.clone(), &walkthrough.session).expect("restores");
    assert_eq!(runtime.resources(), &deps.resources);
    assert_eq!(runtime.extensions(), deps.extensions);
    assert_eq!(runtime.tools(), &deps.tools);
    assert_eq!(
        runtime.system_prompt(),
        Some("BASE SYSTEM\n\n# Pi resources\nPROJECT RULE\nreview: Review code carefully")
    );

    // A model_change root, the chosen old-assistant, a sibling and a later child.
    let chosen = scenario("lab13/lab13-1-1d-non-empty-session-with-leaf-path-to").scenario;
    let (config, deps) = parts(&chosen);
    let mut entries = chosen.session.clone();
    let mut runtime = Runtime::restore(config, deps, &entries).expect("restores");
    assert_eq!(ids(runtime.active_path()), ["model-1", "old-user", "old-assistant"]);
    assert_eq!(runtime.leaf(), Some("old-assistant"));
    assert_eq!(runtime.persisted_message_count(), 2);
    let restored = runtime.control().state();
    let path_messages: Vec<Message> = entries[1..3]
        .iter()
        .filter_map(SessionEntry::as_message)
        .cloned()
        .collect();
    assert_eq!(restored.messages, path_messages);
    assert!(!restored.is_running);

    // The caller's entries and a state copy are their owners' own: changing them changes nothing.
    let caller_user = entries
        .iter_mut()
        .find(|entry| entry.id == "old-user")
        .expect("old-user is in the session");
    let EntryBody::Message {
        message: Message::User(user),
    } = &mut caller_user.body
    else {
        panic!("old-user is a user message entry");
    };
    user.content = UserContent::Text("changed by the caller".to_string());
    entries.clear();
    let mut state_copy = runtime.control().state();
    state_copy.messages.clear();
    assert_eq!(runtime.control().state(), restored);
    assert_eq!(ids(runtime.active_path()), ["model-1", "old-user", "old-assistant"]);

    // A compaction on the path stays on the active path and out of the transcript.
    let compacted = scenario("projection/compaction-summary-first").scenario;
    let mut runtime = restore(&compacted);
    assert_eq!(
        ids(runtime.active_path()),
        ["c-u1", "c-a1", "c-u2", "c-a2", "cmp", "c-u3", "c-a3"]
    );
    assert_eq!(runtime.persisted_message_count(), 6);
    let messages: Vec<Message> = compacted
        .session
        .iter()
        .filter_map(SessionEntry::as_message)
        .cloned()
        .collect();
    assert_eq!(runtime.control().state().messages, messages);
}

/// Stands in for a `prompt` method of `Control` only while `Control` has none of its own: an
/// inherent method of that name, whatever its receiver and arguments, is found before this
/// trait's `&mut self` one, and the call below would then not compile or not return this text.
/// (The `compile_fail` example on `Runtime::control` also passes for a `prompt(String)`.)
trait NoPrompt {
    fn prompt(&mut self, _text: &str) -> &'static str {
        "Control has no prompt"
    }
}

impl NoPrompt for agentsim::runtime::Control<'_> {}

/// Why not data: "`Runtime.control` forwards getState/subscribe/steer/followUp/abort and exposes
/// no `prompt()`" is a fact about a type. A trace shows that control calls start no run
/// (AGENT-7, `lab13/lab13-1-2`), not what the handle could be asked to do.
#[test]
fn lab13_1_control_exposes_no_prompt() {
    let mut runtime = restore(&scenario("wiring/walkthrough").scenario);
    let mut control = runtime.control();
    assert_eq!(control.prompt("检查 parser 并记录结论"), "Control has no prompt");
    let subscription = control.subscribe();
    control.steer("steer".to_string());
    control.follow_up("follow up".to_string());
    control.abort();
    assert_eq!(control.state().steering_queued, 1);
    assert_eq!(control.state().follow_ups_queued, 1);
    assert_eq!(control.drain_events(subscription), []);
    assert!(runtime.poll_effect().is_none(), "control calls issue no effect");
}

// ----- Lab 13.2 -----

/// Why not data: `createId` is a call inside the runtime. The trace shows the ids it appended,
/// and PERSIST-4 lets a runtime draw ids for other purposes too, so whether the projection drew
/// one is not visible there; nor is the Agent's transcript, which each request must equal.
#[test]
fn lab13_2_projection_calls_no_create_id_and_requests_are_the_agent_transcript() {
    let loaded = scenario("lab13/lab13-2-1-temporary-user-joins-old-path");
    let mut requests = 0;
    let mut appends = 0;
    let mut watch = |runtime: &mut Runtime, effects: &[Effect]| {
        for effect in effects {
            match effect {
                Effect::ModelRequest { request, .. } => {
                    requests += 1;
                    assert_eq!(
                        runtime.ids_issued(),
                        0,
                        "request {requests}: projection never calls createId"
                    );
                    assert_eq!(
                        request.messages,
                        runtime.control().state().messages,
                        "request {requests}"
                    );
                }
                Effect::Append { .. } => appends += 1,
                _ => {}
            }
        }
        assert_eq!(runtime.ids_issued(), appends, "only the appends call createId");
    };
    let (mut runtime, _) = run_probe(&loaded, &mut watch);
    assert_eq!((requests, appends), (2, 4));
    assert_eq!(runtime.ids_issued(), 4);
    assert_eq!(runtime.control().state().messages.len(), 6);
}

/// Why not data: temporary entries live only inside one projection. A trace shows the request
/// they produce and that nothing temporary is stored (`projection/temporary-id-collides-with-path`,
/// PROJECT-3, PROJECT-6), never their ids. (One collision and the count code are the unit
/// tests' of `runtime::projection`.)
#[test]
fn lab13_2_temporary_entries_chain_from_the_leaf_and_step_around_the_path() {
    let path = scenario("lab13/lab13-2-1-temporary-user-joins-old-path")
        .scenario
        .session;
    let user = Message::user("检查 parser 并记录结论", 5);
    let answer = Message::Assistant(AssistantMessage {
        content: vec![AssistantBlock::Text { text: "答复".into() }],
        api: "agentsim".into(),
        provider: "agentsim".into(),
        model: "scripted".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
        error_message: None,
        timestamp: 6,
    });
    let temporary = temporary_entries(&path, &[user.clone(), answer.clone()]);
    assert_eq!(ids(&temporary), ["__runtime_context_0", "__runtime_context_1"]);
    let parents: Vec<Option<&str>> = temporary.iter().map(|entry| entry.parent_id.as_deref()).collect();
    assert_eq!(parents, [Some("old-assistant"), Some("__runtime_context_0")]);
    assert_eq!(temporary[0].as_message(), Some(&user));
    assert_eq!(temporary[1].as_message(), Some(&answer));

    // Both `__runtime_context_0` and `___runtime_context_0` are on the path: one more `_`.
    let mut colliding = path.clone();
    for (id, parent) in [
        ("__runtime_context_0", "old-assistant"),
        ("___runtime_context_0", "__runtime_context_0"),
    ] {
        colliding.push(SessionEntry::message(
            id,
            Some(parent),
            "2025-12-31T00:03:00.000Z",
            user.clone(),
        ));
    }
    assert_eq!(temporary_id(&colliding, 0), "____runtime_context_0");
    assert_eq!(temporary_id(&colliding, 1), "__runtime_context_1");
    let temporary = temporary_entries(&colliding, std::slice::from_ref(&user));
    assert_eq!(ids(&temporary), ["____runtime_context_0"]);
    assert_eq!(temporary[0].parent_id.as_deref(), Some("___runtime_context_0"));
}

/// Why not data: the runtime only ever projects with its own count, which is in range, so no
/// trace carries one past the transcript (PROJECT-7 judges what reaches a request); the typed
/// refusal is `project`'s own.
#[test]
fn lab13_2_project_refuses_a_persisted_count_past_the_transcript() {
    let loaded = scenario("lab13/lab13-2-1-temporary-user-joins-old-path");
    let path = &loaded.scenario.session;
    let messages: Vec<Message> = path
        .iter()
        .filter_map(SessionEntry::as_message)
        .cloned()
        .chain([Message::user("检查 parser 并记录结论", 5)])
        .collect();
    let budget = ContextBudget {
        total: 100_000,
        reserved_output: 0,
        safety_margin: 0,
    };
    let tools: std::sync::Arc<[ToolSpec]> = loaded.scenario.tools.iter().map(ToolScript::spec).collect();
    let in_range = Snapshot {
        active_path: path,
        persisted_message_count: 2,
    };
    let request = project(in_range, &messages, Some("BASE SYSTEM"), &budget, &tools).expect("in range");
    assert_eq!(request.messages, messages);
    assert_eq!(request.system_prompt.as_deref(), Some("BASE SYSTEM"));
    assert_eq!(request.tools, tools);
    assert_eq!(request.tools[0].name, "review_note");
    let past = Snapshot {
        active_path: path,
        persisted_message_count: 4,
    };
    let error = project(past, &messages, None, &budget, &tools).unwrap_err();
    assert_eq!(error, ProjectionError::CountOutOfRange { count: 4, len: 3 });
    assert_eq!(error.code(), "projection.count_out_of_range");
}

// ----- Lab 13.3 -----

/// Why not data: a scenario file states what a correct runtime does; that a runtime which
/// forgets to store the poison fails it is a statement about the kit's power. The chapter's
/// fault injection must be caught by the rule about the queued prompt, POISON-3.
#[test]
fn lab13_fault_injection_poison_not_stored_is_caught() {
    let loaded = scenario("lab13/lab13-3-2b-queued-prompt-shares-the-poison");
    let reference = Run::of(&loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::reference())
        .execute(&loaded);
    assert_eq!(reference.verdict, Verdict::Passed, "{:?}", reference.violations);
    let mutant = Mutant::from_name("poison-not-stored").expect("the chapter's fault injection is in the zoo");
    let report = Run::of(&loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::mutant(mutant))
        .execute(&loaded);
    assert_eq!(report.verdict, Verdict::Failed);
    assert!(
        report.violations.iter().any(|violation| violation.rule == "POISON-3"),
        "caught for another reason: {:?}",
        report.violations
    );
}

// ----- refused inputs and the Agent -----

/// Why not data: the world answers each effect once and in kind, so no trace holds a driver's
/// mistake; refusing one, and changing nothing by it, is the embedding API's contract.
#[test]
fn a_driver_mistake_is_refused_and_changes_nothing() {
    let loaded = scenario("wiring/walkthrough");
    let mut refused = Vec::new();
    let mut watch = |runtime: &mut Runtime, effects: &[Effect]| {
        let Some(Effect::Hook {
            effect,
            phase: HookPhase::Before,
            ..
        }) = effects.first()
        else {
            return;
        };
        let hook = *effect;
        let state = runtime.control().state();
        let pending = runtime.pending_effects();
        let mistakes = [
            Completion::Append(StoreOutcome::Ok).into_input(EffectId(999)),
            Completion::Append(StoreOutcome::Ok).into_input(hook),
            Completion::Hook(HookOutcome::Observe).into_input(hook),
        ];
        for mistake in mistakes {
            let error = runtime.handle_input(mistake).expect_err("a mistake is refused");
            assert_eq!(runtime.control().state(), state, "{error}");
            assert_eq!(runtime.pending_effects(), pending, "{error}");
            assert_eq!(runtime.poll_effect(), None, "{error}");
            refused.push(error);
        }
    };
    let (runtime, trace) = run_probe(&loaded, &mut watch);
    let codes: Vec<&str> = refused.iter().map(InputError::code).collect();
    assert_eq!(
        codes,
        [
            "input.unknown_effect",
            "input.completion_mismatch",
            "input.bad_hook_answer"
        ]
    );
    assert_eq!(refused[0], InputError::UnknownEffect(EffectId(999)));
    // The run went on as if nothing had been tried: the reference's own trace, the same store.
    let reference = Run::of(&loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::reference())
        .execute(&loaded);
    assert_eq!(trace, reference.outcome.expect("a trace").trace.render());
    assert_eq!(runtime.leaf(), Some("entry-4"));
    assert_eq!(
        ids(runtime.active_path()),
        ["old-user", "old-assistant", "entry-1", "entry-2", "entry-3", "entry-4"]
    );
}

/// Why not data: the Runtime's queue never hands its Agent a second prompt while a run is
/// active (QUEUE-1 judges the queue on every trace), so the Agent's own refusal never reaches
/// one.
#[test]
fn the_agent_refuses_a_second_prompt_while_running() {
    let mut agent = Agent::new(AgentOptions {
        initial_messages: vec![Message::user("继续检查 parser", 1)],
        steps_max: 4,
    });
    let step = agent
        .prompt(Message::user("first", 2), SignalId(1))
        .expect("an idle agent");
    assert!(matches!(
        step,
        AgentStep::Model {
            signal: SignalId(1),
            ..
        }
    ));
    let error = agent.prompt(Message::user("second", 3), SignalId(2)).unwrap_err();
    assert_eq!(error, AgentError::Busy);
    assert_eq!(error.code(), "agent.busy");
    assert_eq!(agent.messages().len(), 2, "the refused prompt left no message");
    assert!(agent.is_running());

    let answer = AssistantMessage {
        content: vec![AssistantBlock::Text { text: "answer".into() }],
        api: "agentsim".into(),
        provider: "agentsim".into(),
        model: "scripted".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
        error_message: None,
        timestamp: 4,
    };
    let step = agent.handle_model_final(answer, 5).expect("the agent awaits the model");
    assert!(matches!(step, AgentStep::Finished(_)));
    assert!(!agent.is_running());
    assert!(agent.prompt(Message::user("third", 6), SignalId(3)).is_ok());
}
