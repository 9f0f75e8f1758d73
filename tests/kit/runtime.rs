//! Runtime behaviours beyond the chapter's ten facts: hook order and answers, the core
//! executor's own error results, the agent's busy rule, the step bound, steer / followUp /
//! abort, restore errors from `path_to`, and inputs the runtime must refuse without changing.

use agentsim::model::{
    AssistantBlock, ContentBlock, Message, PathError, SessionEntry, StopReason, ToolCall, ToolRegistry,
    ToolResultMessage,
};
use agentsim::runtime::{
    Agent, AgentError, AgentOptions, AgentStep, Completion, Effect, EffectId, HookOutcome, HookPhase, InputError,
    RestoreError, RunReason, Runtime, RuntimeConfig, RuntimeDeps, SignalId, StoreOutcome, ToolOutcome,
};
use serde_json::json;

use super::driver::{
    assistant, assistant_text, assistant_tool_call, config, message_entry, old_session, old_user, restore_old_session,
    review_note_spec, tool_call, tool_text, Driver,
};

fn deps_with(extensions: &[&str]) -> RuntimeDeps {
    RuntimeDeps {
        extensions: extensions.iter().map(|name| name.to_string()).collect(),
        tools: ToolRegistry::new(vec![review_note_spec()]),
        ..RuntimeDeps::default()
    }
}

/// One `review_note` call with these arguments, then a final answer.
fn review_driver(extensions: &[&str], arguments: serde_json::Value) -> Driver {
    Driver::new(restore_old_session(deps_with(extensions)))
        .answer(assistant_tool_call("call-1", "review_note", arguments))
        .answer(assistant_text("done"))
}

fn hook_and_tool_trace(driver: &Driver) -> Vec<String> {
    driver
        .trace()
        .into_iter()
        .filter(|line| line.starts_with("hook") || line.starts_with("tool"))
        .collect()
}

/// The messages the store accepted, in path order (the restored ones first).
fn stored_messages(runtime: &Runtime) -> Vec<Message> {
    runtime
        .active_path()
        .iter()
        .filter_map(SessionEntry::as_message)
        .cloned()
        .collect()
}

/// The run's only tool result, as stored.
fn tool_result(driver: &Driver) -> ToolResultMessage {
    stored_messages(&driver.runtime)
        .into_iter()
        .find_map(|message| match message {
            Message::ToolResult(result) => Some(result),
            _ => None,
        })
        .expect("the run has a tool result")
}

fn text_of(result: &ToolResultMessage) -> String {
    Message::ToolResult(result.clone()).text()
}

// ----- hooks around the core executor -----

#[test]
fn hooks_run_before_in_extension_order_then_core_then_after_in_extension_order() {
    let mut driver = review_driver(&["ext1", "ext2"], json!({"note": "n"}));
    driver.prompt("review");
    driver.run_until_quiet();
    assert_eq!(
        hook_and_tool_trace(&driver),
        [
            "hook ext1 before review_note",
            "hook ext2 before review_note",
            "tool review_note sig#1",
            "hook ext1 after review_note",
            "hook ext2 after review_note",
        ]
    );
    assert_eq!(text_of(&tool_result(&driver)), "ok");
}

#[test]
fn a_denying_before_hook_skips_the_core_and_every_after_hook() {
    let mut driver = review_driver(&["ext1", "ext2"], json!({"note": "n"})).hook(
        "ext1",
        HookPhase::Before,
        HookOutcome::Deny {
            reason: "notes are frozen".to_string(),
        },
    );
    driver.prompt("review");
    driver.run_until_quiet();
    assert_eq!(hook_and_tool_trace(&driver), ["hook ext1 before review_note"]);
    let result = tool_result(&driver);
    assert!(result.is_error);
    assert_eq!(text_of(&result), "notes are frozen");
    assert_eq!(result.tool_call_id, "call-1");
}

#[test]
fn rewritten_arguments_reach_later_hooks_and_the_core() {
    let rewritten = json!({"note": "rewritten by ext1"});
    let mut driver = review_driver(&["ext1", "ext2"], json!({"note": "original"})).hook(
        "ext1",
        HookPhase::Before,
        HookOutcome::RewriteArguments {
            arguments: rewritten.clone(),
        },
    );
    driver.prompt("review");
    driver.run_until_quiet();
    let calls_seen: Vec<(&str, &serde_json::Value)> = driver
        .seen
        .iter()
        .filter_map(|effect| match effect {
            Effect::Hook { extension, call, .. } => Some((extension.as_str(), &call.arguments)),
            Effect::ToolCall { call, .. } => Some(("core", &call.arguments)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls_seen,
        [
            ("ext1", &json!({"note": "original"})),
            ("ext2", &rewritten),
            ("core", &rewritten),
            ("ext1", &rewritten),
            ("ext2", &rewritten),
        ]
    );
}

#[test]
fn an_after_hook_rewrites_the_result_later_after_hooks_and_the_model_see() {
    let rewritten = vec![ContentBlock::text("redacted")];
    let mut driver = review_driver(&["ext1", "ext2"], json!({"note": "n"}))
        .tool("review_note", tool_text("secret"))
        .hook(
            "ext1",
            HookPhase::After,
            HookOutcome::RewriteResult {
                content: rewritten.clone(),
                is_error: false,
            },
        );
    driver.prompt("review");
    driver.run_until_quiet();
    let observed: Vec<(&str, String)> = driver
        .seen
        .iter()
        .filter_map(|effect| match effect {
            Effect::Hook {
                extension,
                phase: HookPhase::After,
                result: Some(result),
                ..
            } => Some((extension.as_str(), text_of(result))),
            _ => None,
        })
        .collect();
    assert_eq!(
        observed,
        [("ext1", "secret".to_string()), ("ext2", "redacted".to_string())]
    );
    assert_eq!(tool_result(&driver).content, rewritten);
    assert_eq!(driver.model_requests()[1].messages[4].text(), "redacted");
}

#[test]
fn a_throwing_hook_fails_closed() {
    let mut driver = review_driver(&["ext1", "ext2"], json!({"note": "n"})).hook(
        "ext2",
        HookPhase::Before,
        HookOutcome::Threw {
            message: "boom".to_string(),
        },
    );
    driver.prompt("review");
    driver.run_until_quiet();
    assert_eq!(
        hook_and_tool_trace(&driver),
        ["hook ext1 before review_note", "hook ext2 before review_note"]
    );
    let result = tool_result(&driver);
    assert!(result.is_error);
    assert_eq!(text_of(&result), "extension ext2 failed before review_note: boom");

    // An after hook that throws turns the core's result into an error naming the extension.
    let mut driver = review_driver(&["ext1"], json!({"note": "n"})).hook(
        "ext1",
        HookPhase::After,
        HookOutcome::Threw {
            message: "observer crashed".to_string(),
        },
    );
    driver.prompt("review");
    driver.run_until_quiet();
    let result = tool_result(&driver);
    assert!(result.is_error);
    assert_eq!(
        text_of(&result),
        "extension ext1 failed after review_note: observer crashed"
    );
}

#[test]
fn unknown_tools_and_invalid_arguments_are_error_results_without_a_tool_call() {
    let mut driver = Driver::new(restore_old_session(deps_with(&[])))
        .answer(assistant_tool_call("call-1", "no_such_tool", json!({})))
        .answer(assistant_tool_call("call-2", "review_note", json!({"note": 42})))
        .answer(assistant_text("done"));
    driver.prompt("review");
    driver.run_until_quiet();
    assert!(hook_and_tool_trace(&driver).is_empty(), "{:?}", driver.trace());
    let results: Vec<(bool, String)> = stored_messages(&driver.runtime)
        .into_iter()
        .filter_map(|message| match &message {
            Message::ToolResult(result) => Some((result.is_error, message.text())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            (true, "Tool no_such_tool not found".to_string()),
            (
                true,
                "Invalid arguments for review_note: arguments.note: expected string, got number".to_string()
            ),
        ]
    );
    assert_eq!(driver.model_requests().len(), 3);
}

// ----- the agent, the queue and the step bound -----

#[test]
fn the_agent_rejects_a_second_prompt_while_busy() {
    let mut agent = Agent::new(AgentOptions {
        initial_messages: vec![old_user()],
        steps_max: 4,
    });
    let step = agent
        .prompt(Message::user("first", 1), SignalId(1))
        .expect("idle agent");
    assert!(matches!(
        step,
        AgentStep::Model {
            signal: SignalId(1),
            ..
        }
    ));
    let error = agent.prompt(Message::user("second", 2), SignalId(2)).unwrap_err();
    assert_eq!(error, AgentError::Busy);
    assert_eq!(error.code(), "agent.busy");
    assert_eq!(agent.messages().len(), 2, "the rejected prompt left no message");
    assert!(agent.is_running());

    let step = agent
        .handle_model_final(assistant_text("answer"), 3)
        .expect("awaits the model");
    assert!(matches!(step, AgentStep::Finished(_)));
    assert!(agent.prompt(Message::user("third", 4), SignalId(3)).is_ok());
}

#[test]
fn a_queued_prompt_starts_only_after_the_previous_one_committed() {
    let mut driver = Driver::new(restore_old_session(RuntimeDeps::default()))
        .answer(assistant_text("answer 1"))
        .answer(assistant_text("answer 2"))
        .answer(assistant_text("answer 3"));
    for text in ["prompt 1", "prompt 2", "prompt 3"] {
        driver.prompt(text);
    }
    driver.run_until_quiet();
    let shape: Vec<String> = driver
        .trace()
        .into_iter()
        .filter(|line| line.starts_with("model") || line.starts_with("append") || line.starts_with("settled"))
        .collect();
    assert_eq!(
        shape,
        [
            "model sig#1",
            "append entry-1 <- old-assistant",
            "append entry-2 <- entry-1",
            "settled op#1 resolved",
            "model sig#2",
            "append entry-3 <- entry-2",
            "append entry-4 <- entry-3",
            "settled op#2 resolved",
            "model sig#3",
            "append entry-5 <- entry-4",
            "append entry-6 <- entry-5",
            "settled op#3 resolved",
        ]
    );
    // The third run saw everything committed before it, and nothing twice.
    assert_eq!(driver.model_requests()[2].messages.len(), 7);
}

#[test]
fn steps_max_bounds_the_model_requests_of_a_run() {
    let config = RuntimeConfig {
        steps_max: 2,
        ..config(Some("old-assistant"))
    };
    let runtime = Runtime::restore(config, deps_with(&[]), &old_session()).expect("restores");
    let mut driver = Driver::new(runtime)
        .answer(assistant_tool_call("call-1", "review_note", json!({"note": "1"})))
        .answer(assistant_tool_call("call-2", "review_note", json!({"note": "2"})))
        .answer(assistant_text("never requested"));
    let op = driver.prompt("loop");
    driver.run_until_quiet();
    let result = driver.run_result(op);
    assert_eq!((result.reason, result.steps), (RunReason::MaxSteps, 2));
    assert_eq!(driver.model_requests().len(), 2);
    assert_eq!(driver.store.len(), 5, "user, call, result, call, result");
}

// ----- steer, followUp, abort -----

#[test]
fn steer_is_delivered_before_the_next_model_request() {
    let mut driver = review_driver(&[], json!({"note": "n"}));
    let op = driver.prompt("review");
    let steer = driver.steer("also check the lexer");
    assert!(driver.settlement(steer).is_some(), "steer settles at once");
    assert_eq!(
        driver.model_requests()[0].messages.len(),
        3,
        "not in the request already sent"
    );
    driver.run_until_quiet();
    let second: Vec<String> = driver.model_requests()[1].messages.iter().map(Message::text).collect();
    assert_eq!(second[2..], ["review", "", "ok", "also check the lexer"]);
    let result = driver.run_result(op);
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
    assert_eq!(driver.store.len(), 5, "user, call, result, steer, answer");
}

#[test]
fn follow_up_is_delivered_only_when_the_run_would_stop() {
    let mut driver = Driver::new(restore_old_session(deps_with(&[])))
        .answer(assistant_tool_call("call-1", "review_note", json!({"note": "n"})))
        .answer(assistant_text("first answer"))
        .answer(assistant_text("second answer"));
    let op = driver.prompt("review");
    driver.follow_up("and summarise");
    driver.run_until_quiet();
    let requests = driver.model_requests();
    assert_eq!(requests.len(), 3);
    let texts = |index: usize| -> Vec<String> { requests[index].messages[2..].iter().map(Message::text).collect() };
    // Not after the tool step: the run was continuing anyway.
    assert_eq!(texts(1), ["review", "", "ok"]);
    assert_eq!(texts(2), ["review", "", "ok", "first answer", "and summarise"]);
    let result = driver.run_result(op);
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 3));
    assert_eq!(result.final_assistant_text(), "second answer");
}

#[test]
fn abort_mid_stream_ends_the_run_aborted_and_persists_its_suffix() {
    let mut driver = Driver::new(restore_old_session(RuntimeDeps::default()));
    let op = driver.prompt("long answer");
    let model = driver.pending_ids()[0];
    driver.complete(
        model,
        Completion::ModelChunk {
            text: "partial".to_string(),
        },
    );
    assert_eq!(
        driver.runtime.control().state().streaming_text.as_deref(),
        Some("partial")
    );
    let abort = driver.abort();
    let abort_line = driver.position("abort sig#1");
    assert!(abort_line < driver.position(&format!("settled {abort} resolved")));
    let aborted = assistant(
        vec![AssistantBlock::Text {
            text: "partial".to_string(),
        }],
        StopReason::Aborted,
    );
    driver.complete(model, Completion::ModelFinal { message: aborted });
    driver.run_until_quiet();
    let result = driver.run_result(op);
    assert_eq!((result.reason, result.steps), (RunReason::Aborted, 1));
    assert_eq!(driver.model_requests().len(), 1);
    let stored: Vec<&str> = driver
        .store
        .iter()
        .filter_map(|e| e.as_message().map(Message::role))
        .collect();
    assert_eq!(stored, ["user", "assistant"]);
    assert_eq!(driver.runtime.leaf(), Some("entry-2"));
}

#[test]
fn abort_mid_tool_ends_the_run_aborted_and_closes_every_call() {
    let two_calls = assistant(
        vec![
            AssistantBlock::ToolCall(tool_call("call-1", "review_note", json!({"note": "1"}))),
            AssistantBlock::ToolCall(tool_call("call-2", "review_note", json!({"note": "2"}))),
        ],
        StopReason::ToolUse,
    );
    let mut driver = Driver::new(restore_old_session(deps_with(&[]))).answer(two_calls);
    let op = driver.prompt("two notes");
    driver.run_until_pending("tool");
    driver.abort();
    assert_eq!(driver.position("abort sig#1"), driver.trace().len() - 2);
    driver.complete_next(Completion::Tool(ToolOutcome::Aborted));
    driver.run_until_quiet();

    let result = driver.run_result(op);
    assert_eq!((result.reason, result.steps), (RunReason::Aborted, 1));
    assert_eq!(driver.model_requests().len(), 1);
    assert_eq!(
        hook_and_tool_trace(&driver),
        ["tool review_note sig#1"],
        "call-2 never runs"
    );
    let results: Vec<(String, bool, String)> = stored_messages(&driver.runtime)
        .into_iter()
        .filter_map(|message| match &message {
            Message::ToolResult(result) => Some((result.tool_call_id.clone(), result.is_error, message.text())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("call-1".to_string(), true, "Tool execution aborted".to_string()),
            ("call-2".to_string(), true, "Tool execution aborted".to_string()),
        ]
    );
    assert_eq!(driver.store.len(), 4, "user, assistant, two results");
}

// ----- restore errors and refused inputs -----

#[test]
fn path_errors_surface_as_restore_errors() {
    let restore = |entries: &[SessionEntry], leaf: &str| {
        Runtime::restore(config(Some(leaf)), RuntimeDeps::default(), entries).map(|_| ())
    };
    let cases: Vec<(Vec<SessionEntry>, &str, PathError)> = vec![
        (
            old_session(),
            "missing",
            PathError::UnknownLeaf {
                leaf: "missing".to_string(),
            },
        ),
        (
            vec![
                message_entry("a", None, old_user()),
                message_entry("a", None, old_user()),
            ],
            "a",
            PathError::DuplicateId {
                id: "a".to_string(),
                count: 2,
            },
        ),
        (
            vec![message_entry("child", Some("ghost"), old_user())],
            "child",
            PathError::MissingParent {
                entry: "child".to_string(),
                parent: "ghost".to_string(),
            },
        ),
        (
            vec![
                message_entry("a", Some("b"), old_user()),
                message_entry("b", Some("a"), old_user()),
            ],
            "a",
            PathError::Cycle {
                leaf: "a".to_string(),
                entry: "a".to_string(),
            },
        ),
    ];
    for (entries, leaf, path_error) in cases {
        let code = path_error.code();
        let error = restore(&entries, leaf).unwrap_err();
        assert_eq!(error, RestoreError::Path(path_error));
        assert_eq!(error.code(), code);
    }
}

#[test]
fn completing_an_unknown_or_mismatched_effect_is_refused_and_changes_nothing() {
    let mut driver = review_driver(&["ext1"], json!({"note": "n"}));
    driver.prompt("review");
    let state = driver.runtime.control().state();
    let pending = driver.pending_ids();
    let seen = driver.seen.len();

    let unknown = driver
        .try_send(agentsim::runtime::Input::Complete {
            effect: EffectId(999),
            completion: Completion::Append(StoreOutcome::Ok),
        })
        .unwrap_err();
    assert_eq!(unknown, InputError::UnknownEffect(EffectId(999)));
    assert_eq!(unknown.code(), "input.unknown_effect");

    let mismatch = driver
        .try_send(agentsim::runtime::Input::Complete {
            effect: pending[0],
            completion: Completion::Tool(tool_text("wrong kind")),
        })
        .unwrap_err();
    assert_eq!(mismatch.code(), "input.completion_mismatch");

    assert_eq!(driver.runtime.control().state(), state);
    assert_eq!(driver.runtime.pending_effects(), pending);
    assert_eq!(driver.seen.len(), seen);

    // A before hook answered like an after hook is refused the same way.
    assert!(driver.step(), "the model request");
    let hook = driver.pending_ids()[0];
    let bad_hook = driver
        .try_send(agentsim::runtime::Input::Complete {
            effect: hook,
            completion: Completion::Hook(HookOutcome::Observe),
        })
        .unwrap_err();
    assert_eq!(bad_hook.code(), "input.bad_hook_answer");
    assert_eq!(driver.runtime.pending_effects(), [hook]);

    // The run still completes normally afterwards.
    driver.run_until_quiet();
    assert_eq!(driver.store.len(), 4);
}

#[test]
fn a_tool_call_keeps_its_original_arguments_in_the_transcript() {
    let mut driver = review_driver(&["ext1"], json!({"note": "original"})).hook(
        "ext1",
        HookPhase::Before,
        HookOutcome::RewriteArguments {
            arguments: json!({"note": "rewritten"}),
        },
    );
    driver.prompt("review");
    driver.run_until_quiet();
    let calls: Vec<ToolCall> = stored_messages(&driver.runtime)
        .iter()
        .filter_map(Message::as_assistant)
        .flat_map(|message| message.tool_calls().into_iter().cloned())
        .collect();
    assert_eq!(calls, [tool_call("call-1", "review_note", json!({"note": "original"}))]);
}
