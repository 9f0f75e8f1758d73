//! The seed chapter's ten facts (Lab 13.1: 2, Lab 13.2: 3, Lab 13.3: 3, Lab 13.4: 2), one test
//! each, named `lab13_<lab>_<fact>`, plus the chapter's fault injection: the 13.3(b) checks run
//! against a runtime that forgets to store the poison, and must fail there.

use agentsim::model::{
    estimate_message_tokens, estimate_text_tokens, Compaction, ContextBudget, EntryBody, Instruction, Message,
    Metadata, Resources, SessionEntry, Skill, ToolRegistry, ToolSpec, UserContent,
};
use agentsim::runtime::{
    disposed_cause, project, temporary_entries, temporary_id, Effect, HookOutcome, HookPhase, Mutation, Mutations,
    OpValue, ProjectionError, RestoreError, RunReason, Runtime, RuntimeConfig, RuntimeDeps, Settlement, SignalId,
    Snapshot, StoreOutcome,
};
use serde_json::{json, Map, Value};

use super::driver::{
    assistant_text, assistant_tool_call, config, disk_error, message_entry, old_assistant, old_session, old_user,
    restore_old_session, review_note_spec, tool_text, Driver, ENTRY_TIMESTAMP,
};

/// The chapter's prompt.
const PROMPT: &str = "检查 parser 并记录结论";
const FINAL_TEXT: &str = "parser 已检查，结论已记录";

fn ids(entries: &[SessionEntry]) -> Vec<&str> {
    entries.iter().map(|entry| entry.id.as_str()).collect()
}

fn parents<'a>(entries: &[&'a SessionEntry]) -> Vec<Option<&'a str>> {
    entries.iter().map(|entry| entry.parent_id.as_deref()).collect()
}

fn roles(entries: &[&SessionEntry]) -> Vec<&'static str> {
    entries
        .iter()
        .map(|entry| entry.as_message().map_or("not a message", Message::role))
        .collect()
}

fn review_resources() -> Resources {
    Resources {
        instructions: vec![Instruction {
            path: "AGENTS.md".to_string(),
            content: "PROJECT RULE".to_string(),
        }],
        skills: vec![Skill {
            name: "review".to_string(),
            description: "Review code carefully".to_string(),
            body: "SECRET REVIEW BODY".to_string(),
        }],
    }
}

/// The chapter's deps: AGENTS.md + inactive skill `review`, extension `review-policy`, tool `review_note`.
fn review_deps() -> RuntimeDeps {
    RuntimeDeps {
        resources: review_resources(),
        extensions: vec!["review-policy".to_string()],
        tools: ToolRegistry::new(vec![review_note_spec()]),
        ..RuntimeDeps::default()
    }
}

/// The opening walk-through: restored at `old-assistant` with "BASE SYSTEM"; the model calls
/// `review_note`, `review-policy` allows it and observes the result, then the model answers.
fn walkthrough_driver() -> Driver {
    let config = RuntimeConfig {
        system_prompt: Some("BASE SYSTEM".to_string()),
        ..config(Some("old-assistant"))
    };
    let runtime = Runtime::restore(config, review_deps(), &old_session()).expect("the old session restores");
    Driver::new(runtime)
        .answer(assistant_tool_call(
            "call-1",
            "review_note",
            json!({"note": "parser reviewed"}),
        ))
        .answer(assistant_text(FINAL_TEXT))
        .tool("review_note", tool_text("noted"))
        .hook("review-policy", HookPhase::Before, HookOutcome::Allow)
        .hook("review-policy", HookPhase::After, HookOutcome::Observe)
}

// ----- Lab 13.1: restore the one agent from the chosen leaf -----

#[test]
fn lab13_1_empty_session_accepts_only_a_null_leaf() {
    let mut empty = Runtime::restore(config(None), RuntimeDeps::default(), &[]).expect("empty + null restores");
    assert_eq!(empty.control().state().messages, []);
    assert_eq!(empty.leaf(), None);
    assert!(empty.active_path().is_empty());

    let empty_with_leaf = Runtime::restore(config(Some("old-assistant")), RuntimeDeps::default(), &[]).unwrap_err();
    assert_eq!(
        empty_with_leaf,
        RestoreError::LeafForEmptySession {
            leaf: "old-assistant".to_string()
        }
    );
    let non_empty_without_leaf = Runtime::restore(config(None), RuntimeDeps::default(), &old_session()).unwrap_err();
    assert_eq!(non_empty_without_leaf, RestoreError::LeafRequired { entries: 2 });
    assert_eq!(empty_with_leaf.code(), "restore.unknown_leaf");
    assert_eq!(non_empty_without_leaf.code(), "restore.leaf_required");

    // The fourth combination: non-empty with an explicit leaf is `path_to(entries, leaf)`.
    let mut restored = restore_old_session(RuntimeDeps::default());
    assert_eq!(restored.control().state().messages, [old_user(), old_assistant()]);
    assert_eq!(restored.leaf(), Some("old-assistant"));
}

#[test]
fn lab13_1_restores_only_the_chosen_branch_as_copies_with_the_given_deps() {
    let model_change = SessionEntry {
        body: EntryBody::ModelChange(Metadata {
            fields: Map::from_iter([
                ("provider".to_string(), json!("faux")),
                ("modelId".to_string(), json!("faux-1")),
            ]),
        }),
        id: "model-1".to_string(),
        parent_id: None,
        timestamp: ENTRY_TIMESTAMP.to_string(),
    };
    let compaction = SessionEntry {
        body: EntryBody::Compaction(Compaction {
            summary: "nothing yet".to_string(),
            first_kept_entry_id: "old-user".to_string(),
            tokens_before: 0,
            extra: Map::new(),
        }),
        id: "compaction-1".to_string(),
        parent_id: Some("model-1".to_string()),
        timestamp: ENTRY_TIMESTAMP.to_string(),
    };
    let mut entries = vec![
        model_change,
        compaction,
        message_entry("old-user", Some("compaction-1"), old_user()),
        message_entry("old-assistant", Some("old-user"), old_assistant()),
        // The physically last line does not choose the branch.
        message_entry(
            "left",
            Some("old-user"),
            Message::Assistant(assistant_text("left branch")),
        ),
    ];
    let deps = review_deps();
    let mut runtime = Runtime::restore(config(Some("old-assistant")), deps.clone(), &entries).expect("restores");

    assert_eq!(
        ids(runtime.active_path()),
        ["model-1", "compaction-1", "old-user", "old-assistant"]
    );
    let restored = runtime.control().state();
    assert_eq!(restored.messages, [old_user(), old_assistant()]);
    assert_eq!(runtime.persisted_message_count(), 2);
    assert!(!restored.is_running);

    // The restored messages are copies: the caller's entries and a state copy are its own.
    if let EntryBody::Message {
        message: Message::User(user),
    } = &mut entries[2].body
    {
        user.content = UserContent::Text("changed by the caller".to_string());
    }
    entries.clear();
    let mut state_copy = runtime.control().state();
    state_copy.messages.clear();
    assert_eq!(runtime.control().state(), restored);

    // The deps the runtime exposes are the ones passed in.
    assert_eq!(runtime.resources(), &deps.resources);
    assert_eq!(runtime.extensions(), deps.extensions);
    assert_eq!(runtime.tools(), &deps.tools);
}

// ----- Lab 13.2: every model request projects the current path and the temporary suffix -----

#[test]
fn lab13_2_first_request_is_the_old_path_plus_a_temporary_user() {
    let deps = RuntimeDeps {
        tools: ToolRegistry::new(vec![review_note_spec()]),
        ..RuntimeDeps::default()
    };
    let mut driver = Driver::new(restore_old_session(deps))
        .answer(assistant_tool_call("call-1", "review_note", json!({"note": "n"})))
        .answer(assistant_text(FINAL_TEXT));
    let op = driver.prompt(PROMPT);

    // Request 1: persisted path + the current user, which is in no store yet.
    let transcript = driver.runtime.control().state().messages;
    assert_eq!(transcript.len(), 3);
    assert_eq!(transcript[..2], [old_user(), old_assistant()]);
    assert_eq!((transcript[2].role(), transcript[2].text().as_str()), ("user", PROMPT));
    assert_eq!(driver.model_requests()[0].messages, transcript);
    assert_eq!(driver.runtime.ids_issued(), 0, "projection never calls createId");

    // Request 2: persisted path + user + assistant(toolCall) + toolResult, still unpersisted.
    assert!(driver.step(), "request 1 answered");
    driver.run_until_pending("model");
    let transcript = driver.runtime.control().state().messages;
    let roles_seen: Vec<&str> = driver.model_requests()[1].messages.iter().map(Message::role).collect();
    assert_eq!(roles_seen, ["user", "assistant", "user", "assistant", "toolResult"]);
    assert_eq!(driver.model_requests()[1].messages, transcript);
    assert_eq!(driver.runtime.ids_issued(), 0, "projection never calls createId");
    assert!(driver.appended().is_empty());
    driver.run_until_quiet();
    assert_eq!(driver.run_result(op).reason, RunReason::Stop);
    assert_eq!(driver.runtime.ids_issued(), 4, "only the four appends call createId");

    // The adapter itself: temporary ids chained from the leaf, never stored.
    let path = old_session();
    let user = Message::user(PROMPT, 5);
    let call = Message::Assistant(assistant_tool_call("call-1", "review_note", json!({"note": "n"})));
    let temporary = temporary_entries(&path, &[user.clone(), call.clone()]);
    assert_eq!(ids(&temporary), ["__runtime_context_0", "__runtime_context_1"]);
    assert_eq!(
        temporary
            .iter()
            .map(|entry| entry.parent_id.as_deref())
            .collect::<Vec<_>>(),
        [Some("old-assistant"), Some("__runtime_context_0")]
    );
    assert_eq!(temporary[0].as_message(), Some(&user));

    // A colliding id gets leading `_` until it is unique on the path.
    let mut colliding = old_session();
    colliding.push(message_entry("__runtime_context_0", Some("old-assistant"), old_user()));
    colliding.push(message_entry(
        "___runtime_context_0",
        Some("__runtime_context_0"),
        old_user(),
    ));
    assert_eq!(temporary_id(&colliding, 0), "____runtime_context_0");
    assert_eq!(temporary_id(&colliding, 1), "__runtime_context_1");
    let temporary = temporary_entries(&colliding, std::slice::from_ref(&user));
    assert_eq!(ids(&temporary), ["____runtime_context_0"]);
    assert_eq!(temporary[0].parent_id.as_deref(), Some("___runtime_context_0"));

    // `project` reads the snapshot it is given; later changes to its inputs change nothing.
    let mut messages = vec![old_user(), old_assistant(), user.clone()];
    let snapshot = Snapshot {
        active_path: &path,
        persisted_message_count: 2,
    };
    let tools: std::sync::Arc<[agentsim::model::ToolSpec]> = vec![review_note_spec()].into();
    let request = project(
        snapshot,
        &messages,
        Some("BASE SYSTEM"),
        &super::driver::large_budget(),
        &tools,
    )
    .expect("count in range");
    messages[2] = Message::user("changed after the request", 6);
    assert_eq!(request.messages, [old_user(), old_assistant(), user]);
    assert_eq!(request.system_prompt.as_deref(), Some("BASE SYSTEM"));
    assert_eq!(request.tools, tools);

    let out_of_range = Snapshot {
        active_path: &path,
        persisted_message_count: 4,
    };
    let error = project(out_of_range, &messages, None, &super::driver::large_budget(), &tools).unwrap_err();
    assert_eq!(error, ProjectionError::CountOutOfRange { count: 4, len: 3 });
    assert_eq!(error.code(), "projection.count_out_of_range");
}

#[test]
fn lab13_2_fixed_costs_first_then_only_complete_newest_interactions() {
    let older_user = Message::user("an older question about the lexer, long enough to cost tokens", 1);
    let older_assistant = Message::Assistant(assistant_text("an older answer about the lexer, long enough as well"));
    let call = assistant_tool_call("call-1", "review_note", json!({"note": "parser ok"}));
    let older_tokens = estimate_message_tokens(&older_user) + estimate_message_tokens(&older_assistant);
    let newest_tokens = estimate_text_tokens(PROMPT)
        + estimate_message_tokens(&Message::Assistant(call.clone()))
        + estimate_text_tokens("noted");
    let system_prompt = "BASE SYSTEM";
    let reserved_output = older_tokens + 20;
    let safety_margin = 3;
    let fixed_tokens = reserved_output + safety_margin + estimate_text_tokens(system_prompt);
    let budget = ContextBudget {
        total: fixed_tokens + newest_tokens,
        reserved_output,
        safety_margin,
    };
    assert!(
        budget.total >= older_tokens + newest_tokens,
        "the older interaction would fit if fixed costs were not taken first"
    );

    let older_path = vec![
        message_entry("older-user", None, older_user),
        message_entry("older-assistant", Some("older-user"), older_assistant),
    ];
    let config = RuntimeConfig {
        active_leaf_id: Some("older-assistant".to_string()),
        system_prompt: Some(system_prompt.to_string()),
        steps_max: 8,
        context: budget,
    };
    let deps = RuntimeDeps {
        tools: ToolRegistry::new(vec![review_note_spec()]),
        ..RuntimeDeps::default()
    };
    let runtime = Runtime::restore(config, deps, &older_path).expect("restores");
    let mut driver = Driver::new(runtime)
        .answer(call)
        .answer(assistant_text(FINAL_TEXT))
        .tool("review_note", tool_text("noted"));
    let op = driver.prompt(PROMPT);
    driver.run_until_quiet();

    let transcript = &driver.run_result(op).messages;
    let requests = driver.model_requests();
    assert_eq!(requests.len(), 2);
    // Only the newest interaction is kept, whole: the older one is dropped in both requests.
    assert_eq!(requests[0].messages, transcript[2..3]);
    assert_eq!(requests[1].messages, transcript[2..5]);
    assert_eq!(requests[1].system_prompt.as_deref(), Some(system_prompt));

    // One token less and the newest interaction no longer fits: nothing of it is sent, and the
    // older interaction does not fill the gap.
    let tighter = ContextBudget {
        total: budget.total - 1,
        ..budget
    };
    let snapshot = Snapshot {
        active_path: &older_path,
        persisted_message_count: 2,
    };
    let request = project(
        snapshot,
        &transcript[..5],
        Some(system_prompt),
        &tighter,
        &Vec::new().into(),
    )
    .expect("in range");
    assert_eq!(request.messages, []);
    assert_eq!(request.system_prompt.as_deref(), Some(system_prompt));
}

#[test]
fn lab13_2_tools_equal_the_registry_and_one_signal_per_run() {
    let read_file = ToolSpec {
        name: "read_file".to_string(),
        description: "Read a file".to_string(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    };
    let registry = ToolRegistry::new(vec![review_note_spec(), read_file]);
    let deps = RuntimeDeps {
        tools: registry.clone(),
        ..RuntimeDeps::default()
    };
    let mut driver = Driver::new(restore_old_session(deps))
        .answer(assistant_tool_call(
            "call-1",
            "read_file",
            json!({"path": "src/parser.rs"}),
        ))
        .answer(assistant_tool_call("call-2", "review_note", json!({"note": "ok"})))
        .answer(assistant_text("run 1 done"))
        .answer(assistant_text("run 2 done"));
    let first = driver.prompt(PROMPT);
    let second = driver.prompt("second prompt");
    driver.run_until_quiet();
    assert_eq!(driver.run_result(first).steps, 3);
    assert_eq!(driver.run_result(second).steps, 1);

    let requests = driver.model_requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(&request.tools[..], registry.specs());
    }
    let signals: Vec<(&str, SignalId)> = driver
        .seen
        .iter()
        .filter_map(|effect| match effect {
            Effect::ModelRequest { signal, .. } => Some(("model", *signal)),
            Effect::ToolCall { signal, .. } => Some(("tool", *signal)),
            _ => None,
        })
        .collect();
    assert_eq!(
        signals,
        [
            ("model", SignalId(1)),
            ("tool", SignalId(1)),
            ("model", SignalId(1)),
            ("tool", SignalId(1)),
            ("model", SignalId(1)),
            ("model", SignalId(2)),
        ]
    );
}

// ----- Lab 13.3: resources, extension, agent and store in one call -----

#[test]
fn lab13_3_resources_and_extension_wired_and_prompts_commit_serially() {
    let mut driver = walkthrough_driver();
    let expected_system = "BASE SYSTEM\n\n# Pi resources\nPROJECT RULE\nreview: Review code carefully";
    assert_eq!(driver.runtime.system_prompt(), Some(expected_system));

    let op = driver.prompt(PROMPT);
    // The prompt settles only once the store accepted the fourth entry.
    while driver.store.len() < 4 {
        assert_eq!(
            driver.settlement(op),
            None,
            "settled with {} entries stored",
            driver.store.len()
        );
        assert!(driver.step(), "went quiet with {} entries stored", driver.store.len());
    }
    assert!(driver.position("append entry-4 <- entry-3") < driver.position("settled op#1 resolved"));
    driver.run_until_quiet();

    let requests = driver.model_requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.system_prompt.as_deref(), Some(expected_system));
        assert!(!request
            .system_prompt
            .as_deref()
            .unwrap_or("")
            .contains("SECRET REVIEW BODY"));
    }
    let tool_trace: Vec<String> = driver
        .trace()
        .into_iter()
        .filter(|line| line.starts_with("hook") || line.starts_with("tool"))
        .collect();
    assert_eq!(
        tool_trace,
        [
            "hook review-policy before review_note",
            "tool review_note sig#1",
            "hook review-policy after review_note"
        ]
    );
    let second_roles: Vec<&str> = requests[1].messages.iter().map(Message::role).collect();
    assert_eq!(second_roles, ["user", "assistant", "user", "assistant", "toolResult"]);
    assert_eq!(requests[1].messages[4].text(), "noted");

    let appended = driver.appended();
    assert_eq!(
        appended.iter().map(|entry| entry.id.as_str()).collect::<Vec<_>>(),
        ["entry-1", "entry-2", "entry-3", "entry-4"]
    );
    assert_eq!(
        parents(&appended),
        [Some("old-assistant"), Some("entry-1"), Some("entry-2"), Some("entry-3")]
    );
    assert_eq!(roles(&appended), ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(driver.store.len(), 4);
    assert_eq!(driver.runtime.leaf(), Some("entry-4"));
    assert_eq!(
        ids(driver.runtime.active_path()),
        ["old-user", "old-assistant", "entry-1", "entry-2", "entry-3", "entry-4"]
    );
    let result = driver.run_result(op);
    assert_eq!(
        (result.reason, result.steps, result.messages.len()),
        (RunReason::Stop, 2, 6)
    );
    assert_eq!(result.final_assistant_text(), FINAL_TEXT);

    // Two prompts sent back to back resolve in order, each persisting only its own messages.
    let mut driver = Driver::new(restore_old_session(RuntimeDeps::default()))
        .answer(assistant_text("answer 1"))
        .answer(assistant_text("answer 2"));
    let first = driver.prompt("prompt 1");
    let second = driver.prompt("prompt 2");
    assert_eq!(driver.model_requests().len(), 1, "the second prompt waits in the queue");
    driver.run_until_quiet();
    assert!(driver.position("settled op#1 resolved") < driver.position("settled op#2 resolved"));
    assert!(driver.position("append entry-2 <- entry-1") < driver.position("model sig#2"));
    let appended = driver.appended();
    assert_eq!(
        parents(&appended),
        [Some("old-assistant"), Some("entry-1"), Some("entry-2"), Some("entry-3")]
    );
    let texts: Vec<String> = appended
        .iter()
        .map(|entry| entry.as_message().map(Message::text).unwrap_or_default())
        .collect();
    assert_eq!(texts, ["prompt 1", "answer 1", "prompt 2", "answer 2"]);
    assert_eq!(driver.run_result(first).messages.len(), 4);
    assert_eq!(driver.run_result(second).messages.len(), 6);
    assert_eq!(driver.runtime.leaf(), Some("entry-4"));
}

/// Lab 13.3(b): only the new suffix is appended; the first failed append poisons the runtime
/// with its cause for the failing prompt, a prompt queued before the failure, any later prompt
/// and flush; the model and the store are never reached again.
fn check_suffix_and_poison(mutations: Mutations) -> Result<(), String> {
    let deps = RuntimeDeps {
        mutations,
        ..RuntimeDeps::default()
    };
    let mut driver = Driver::new(restore_old_session(deps))
        .answer(assistant_text("answer 1"))
        .answer(assistant_text("answer 2"))
        .answer(assistant_text("answer 3"))
        .fail_append(2, disk_error());
    let first = driver.prompt("first");
    let queued = driver.prompt("queued before the failure");
    driver.run_until_quiet();
    let later = driver.prompt("after the failure");
    let flush = driver.flush();
    driver.run_until_quiet();

    let appended = driver.appended();
    let first_entry = appended.first().ok_or("nothing was appended")?;
    if first_entry.parent_id.as_deref() != Some("old-assistant")
        || first_entry.as_message().map(Message::text) != Some("first".to_string())
    {
        return Err(format!(
            "the first append is not the new user on old-assistant: {first_entry:?}"
        ));
    }
    let restored = [old_user(), old_assistant()];
    if appended
        .iter()
        .any(|entry| entry.as_message().is_some_and(|message| restored.contains(message)))
    {
        return Err("restored history was appended again".to_string());
    }
    for (name, op) in [
        ("failing prompt", first),
        ("queued prompt", queued),
        ("later prompt", later),
        ("flush", flush),
    ] {
        match driver.settlement(op) {
            Some(Settlement::Rejected(cause)) if *cause == disk_error() => {}
            other => {
                return Err(format!(
                    "{name} {op}: expected rejection with {}, got {other:?}",
                    disk_error()
                ))
            }
        }
    }
    if driver.model_requests().len() != 1 {
        return Err(format!(
            "model requests: expected 1, got {}",
            driver.model_requests().len()
        ));
    }
    if appended.len() != 2 {
        return Err(format!("appends: expected 2, got {}", appended.len()));
    }
    if driver.store.len() != 1 || driver.runtime.leaf() != Some("entry-1") {
        return Err(format!(
            "the store holds {} entries and the leaf is {:?}; expected 1 and entry-1",
            driver.store.len(),
            driver.runtime.leaf()
        ));
    }
    if driver.runtime.poison() != Some(&disk_error()) {
        return Err(format!(
            "poison: expected {}, got {:?}",
            disk_error(),
            driver.runtime.poison()
        ));
    }
    Ok(())
}

#[test]
fn lab13_3_only_the_new_suffix_is_appended_and_a_failed_append_poisons() {
    assert_eq!(check_suffix_and_poison(Mutations::none()), Ok(()));
}

#[test]
fn lab13_fault_injection_poison_not_stored_is_caught() {
    let verdict = check_suffix_and_poison(Mutations::with(Mutation::PoisonNotStored));
    let violation = verdict.expect_err("the 13.3 checks must catch a runtime that forgets the poison");
    assert!(
        violation.contains("queued prompt"),
        "caught for another reason: {violation}"
    );
}

#[test]
fn lab13_3_flush_waits_for_the_queue_and_dispose_closes_but_drains_accepted_work() {
    // flush on an idle runtime resolves at once and creates no work.
    let mut driver = Driver::new(restore_old_session(RuntimeDeps::default())).answer(assistant_text("answer 1"));
    let idle_flush = driver.flush();
    assert_eq!(
        driver.settlement(idle_flush),
        Some(&Settlement::Resolved(OpValue::Unit))
    );
    assert_eq!(driver.seen.len(), 1);

    // flush waits for the prompt already queued, and adds no effect of its own.
    let prompt = driver.prompt("prompt 1");
    let effects_before = driver.seen.len();
    let pending_before = driver.pending_ids();
    let flush = driver.flush();
    assert_eq!(driver.settlement(flush), None);
    assert_eq!(
        (driver.seen.len(), driver.pending_ids()),
        (effects_before, pending_before)
    );
    driver.run_until_quiet();
    assert!(driver.position("settled op#2 resolved") < driver.position("settled op#3 resolved"));
    assert_eq!(driver.settlement(flush), Some(&Settlement::Resolved(OpValue::Unit)));
    assert_eq!(driver.run_result(prompt).reason, RunReason::Stop);
    assert_eq!(driver.model_requests().len(), 1);

    // dispose: prompt 1 committing, prompt 2 queued, dispose, prompt 3 rejected at once.
    let mut driver = Driver::new(restore_old_session(RuntimeDeps::default()))
        .answer(assistant_text("answer 1"))
        .answer(assistant_text("answer 2"))
        .answer(assistant_text("never requested"));
    let first = driver.prompt("prompt 1");
    driver.run_until_pending("append");
    let second = driver.prompt("prompt 2");
    let dispose = driver.dispose();
    assert!(driver.runtime.is_closed());
    let third = driver.prompt("prompt 3");
    assert_eq!(driver.rejection(third), &disposed_cause());
    assert_eq!(driver.rejection(third).code, "runtime.disposed");
    assert_eq!(driver.settlement(dispose), None);
    assert_eq!(driver.settlement(first), None);

    let dispose_again_early = driver.dispose();
    driver.run_until_quiet();
    let order = [
        driver.position("settled op#1 resolved"),
        driver.position("settled op#2 resolved"),
        driver.position("settled op#3 resolved"),
    ];
    assert!(
        order[0] < order[1] && order[1] < order[2],
        "expected prompt 1, prompt 2, dispose: {order:?}"
    );
    assert_eq!(driver.run_result(second).messages.len(), 6);
    assert_eq!(driver.settlement(dispose), Some(&Settlement::Resolved(OpValue::Unit)));
    assert_eq!(driver.settlement(dispose_again_early), driver.settlement(dispose));
    let dispose_again_late = driver.dispose();
    assert_eq!(driver.settlement(dispose_again_late), driver.settlement(dispose));
    assert_eq!(driver.model_requests().len(), 2);
    assert_eq!(driver.store.len(), 4);
    let after = driver.prompt("prompt after dispose");
    assert_eq!(driver.rejection(after).code, "runtime.disposed");
}

// ----- Lab 13.4: a mode changes only the output encoding -----

fn user_appends(driver: &Driver) -> usize {
    roles(&driver.appended())
        .into_iter()
        .filter(|role| *role == "user")
        .count()
}

#[test]
fn lab13_4_modes_write_the_final_text_or_one_json_line() {
    for mode in ["interactive", "print"] {
        let mut driver = walkthrough_driver();
        let op = driver.mode(mode, PROMPT);
        driver.run_until_quiet();
        assert_eq!(driver.writes(), [FINAL_TEXT], "{mode}");
        assert_eq!(user_appends(&driver), 1, "{mode}: prompt is called exactly once");
        assert_eq!(driver.model_requests().len(), 2, "{mode}");
        assert!(
            driver.position("append entry-4 <- entry-3") < driver.position("write"),
            "{mode}"
        );
        assert!(
            driver.position("write") < driver.position("settled op#1 resolved"),
            "{mode}"
        );
        assert_eq!(driver.run_result(op).reason, RunReason::Stop, "{mode}");
    }

    let mut driver = walkthrough_driver();
    let op = driver.mode("json", PROMPT);
    driver.run_until_quiet();
    assert_eq!(user_appends(&driver), 1);
    let writes = driver.writes();
    assert_eq!(writes.len(), 1);
    let line = writes[0];
    assert!(
        line.ends_with('\n') && !line.trim_end_matches('\n').contains('\n'),
        "{line:?}"
    );
    assert_eq!(line.matches('\n').count(), 1);
    let value: Value = serde_json::from_str(line).expect("one JSON object");
    let keys: Vec<&str> = value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["reason", "steps", "messages"]);
    let result = driver.run_result(op);
    assert_eq!(value["reason"], "stop");
    assert_eq!(value["steps"], 2);
    assert_eq!(
        value["messages"],
        serde_json::to_value(&result.messages).expect("serializes")
    );
    assert_eq!(value["messages"].as_array().map(Vec::len), Some(6));
}

#[test]
fn lab13_4_unknown_mode_never_prompts_and_a_write_error_is_returned_unchanged() {
    let mut driver = walkthrough_driver();
    let op = driver.mode("yaml", PROMPT);
    assert_eq!(driver.rejection(op).code, "mode.unknown");
    driver.run_until_quiet();
    assert_eq!(driver.model_requests().len(), 0);
    assert!(driver.appended().is_empty());
    assert!(driver.writes().is_empty());

    let sink_error = agentsim::runtime::Cause::new("EPIPE", "stdout closed");
    let mut driver = walkthrough_driver().write_outcome(StoreOutcome::Failed(sink_error.clone()));
    let op = driver.mode("print", PROMPT);
    driver.run_until_quiet();
    assert_eq!(driver.settlement(op), Some(&Settlement::Rejected(sink_error)));
    // The session is not rolled back, and an output error is no store failure.
    assert_eq!(driver.store.len(), 4);
    assert_eq!(driver.runtime.leaf(), Some("entry-4"));
    assert_eq!(driver.runtime.poison(), None);
}
