//! PROJECT: one projection before every model request.

use std::collections::BTreeMap;

use crate::model::{first_json_difference, project_over, AssistantMessage, Message, Operation, Projection};
use crate::runtime::{OpId, SignalId};
use crate::trace::quote_short;

use super::timeline::{Line, RequestInfo, Timeline};
use super::Violation;

/// The messages `request` must carry, when the trace fixes them: `build_context` over the
/// active path at the request (the restored path and every accepted append) and the run's
/// unpersisted suffix at that moment. The suffix is exact: the run's messages (as it appended
/// them) before its response to this request, or, for a request whose response was never
/// appended, the run's appended messages when nothing else can precede that response
/// (`unappended_response_suffix_end`). `None` when neither fixes the suffix (a run cut short by
/// poison, dispose or the end of the trace before the messages it needs were appended). Derived
/// once per request and shared by the checkers that read it (PROJECT-1, CONTEXT-1); lent from
/// the scenario and the trace but for a compaction's summary.
pub fn expected_request_messages<'t, 'a>(
    timeline: &'t Timeline<'a>,
    request: &RequestInfo<'_>,
) -> Option<&'t Projection<'a>> {
    // Requests are in trace order.
    let index = timeline
        .requests
        .binary_search_by_key(&request.line, |other| other.line)
        .ok()?;
    timeline.request_messages(index, derive_request_messages)
}

fn derive_request_messages<'a>(timeline: &Timeline<'a>, request: &RequestInfo<'a>) -> Option<Projection<'a>> {
    let op = request.op?;
    let run_messages: &[&'a Message] = timeline.appended_messages(op);
    let index = timeline
        .requests_of(op)
        .binary_search_by_key(&request.line, |earlier| earlier.line)
        .ok()?;
    let end = match run_messages
        .iter()
        .enumerate()
        .filter(|(_, message)| message.as_assistant().is_some())
        .nth(index)
    {
        Some((position, _)) => position,
        None => unappended_response_suffix_end(timeline, op, request.line, index, run_messages)?,
    };
    let persisted = persisted_before(timeline, op, request.line);
    let unpersisted = run_messages.get(persisted..end)?;
    project_at(timeline, request.line, unpersisted.iter().copied())
}

/// How many of `op`'s appended messages the store accepted before `line`, in message positions
/// (entries that are not messages, metadata, do not count).
fn persisted_before(timeline: &Timeline<'_>, op: OpId, line: Line) -> usize {
    timeline
        .appends_of(op)
        .iter()
        .filter(|append| append.entry.as_message().is_some() && append.accepted_before(line))
        .count()
}

/// `build_context` over the active path at `line` and a run's `unpersisted` suffix.
fn project_at<'a>(
    timeline: &Timeline<'a>,
    line: Line,
    unpersisted: impl Iterator<Item = &'a Message>,
) -> Option<Projection<'a>> {
    let system_prompt = timeline.expected_system_prompt();
    let budget = timeline.scenario.config.context;
    match (&timeline.initial_path, timeline.accepted_chain_before(line)) {
        (Some(initial), Some(accepted)) => {
            let suffix = accepted.iter().copied().chain(unpersisted);
            Some(project_over(initial.iter().copied(), suffix, system_prompt, &budget))
        }
        _ => {
            // The accepted appends do not form one chain (a broken runtime): the path is
            // walked again over the session and the accepted entries.
            let path = timeline.active_path_at(line)?;
            Some(project_over(path.iter().copied(), unpersisted, system_prompt, &budget))
        }
    }
}

/// Where the suffix of a run's request ends when the run never appended its response to it
/// (its appends failed, or it was cut short). With no steer or followUp delivered before the
/// request, the run's messages before that response are its user message, then each earlier
/// response followed by the results of its tool calls; so when the run's appended messages (a
/// failed append's entry included) are exactly those, beginning with the operation's own
/// prompt, holding `index` responses and ending with every result of the last one's tool calls,
/// they are the whole suffix. `None` otherwise (not judged).
fn unappended_response_suffix_end(
    timeline: &Timeline<'_>,
    op: OpId,
    line: Line,
    index: usize,
    run_messages: &[&Message],
) -> Option<usize> {
    let (_, rest) = unsteered_run(timeline, op, line, run_messages)?;
    if index == 0 {
        return Some(1);
    }
    let responses = rest.iter().filter(|message| message.as_assistant().is_some()).count();
    let last = rest.iter().rposition(|message| message.as_assistant().is_some())?;
    let calls = rest[last].as_assistant()?.tool_calls().len();
    let results = &rest[last + 1..];
    let complete = responses == index
        && calls > 0
        && results.len() == calls
        && rest.iter().all(|message| !matches!(message, Message::User(_)))
        && results.iter().all(|message| matches!(message, Message::ToolResult(_)));
    complete.then_some(run_messages.len())
}

/// `run_messages`, the messages `op`'s run appended, split after the first when nothing but the
/// run itself can have made its messages before `line`: no steer or followUp was delivered
/// before it, and the first is the operation's own prompt.
fn unsteered_run<'m, 'a>(
    timeline: &Timeline<'_>,
    op: OpId,
    line: Line,
    run_messages: &'m [&'a Message],
) -> Option<(&'a Message, &'m [&'a Message])> {
    let text = timeline.op(op)?.operation.text()?;
    let steered = timeline.ops.iter().any(|info| {
        info.delivered < line && matches!(info.operation, Operation::Steer { .. } | Operation::FollowUp { .. })
    });
    let (prompt, rest) = run_messages.split_first()?;
    (!steered && super::is_user_text(prompt, text)).then_some((*prompt, rest))
}

/// What a run holds after the messages it appended, before a request, when its appends stopped
/// short (a failed append poisons the runtime; the run goes on unstored): one step of the run
/// for each message, as the trace shows it.
enum Step<'a> {
    /// The response to one of the run's earlier requests, as the model gave it.
    Response(&'a AssistantMessage),
    /// The result of the tool call with this id.
    Result(&'a str),
}

impl Step<'_> {
    /// Whether `message` is this step: a response with the same tool calls, or the result of
    /// the same call. Nothing else is compared: a response's other fields and a result's
    /// content and timestamp are the runtime's (its clock, its hooks).
    fn is(&self, message: &Message) -> bool {
        match (self, message) {
            (Step::Response(response), Message::Assistant(held)) => response
                .tool_calls()
                .iter()
                .map(|call| &call.id)
                .eq(held.tool_calls().iter().map(|call| &call.id)),
            (Step::Result(id), Message::ToolResult(result)) => result.tool_call_id == *id,
            _ => false,
        }
    }

    fn role(&self) -> &'static str {
        match self {
            Step::Response(_) => "assistant",
            Step::Result(_) => "toolResult",
        }
    }
}

/// A request whose run appended only part of what precedes it (its appends failed or stopped
/// while its model loop went on), judged with the part it never appended taken from the
/// request itself: the violation, if it is not the projection of the active path, the
/// appended messages and those unstored ones; `None` too when the trace does not fix the
/// suffix. The run is fixed when nothing but itself made its messages (`unsteered_run`) and the
/// appended ones after its prompt are the first steps of the run (each earlier request's
/// response, then the results of its tool calls): the unstored steps are the rest, and must be
/// the request's last messages (they are the newest interaction's end), each found by its tool
/// call ids. When the request holds the run's prompt but not those steps, the run's suffix was
/// cut.
fn unstored_steps_violation<'a>(timeline: &Timeline<'a>, request: &RequestInfo<'a>) -> Option<Violation> {
    let op = request.op?;
    let run_messages = timeline.appended_messages(op);
    let (prompt, appended) = unsteered_run(timeline, op, request.line, run_messages)?;
    let mut steps = Vec::new();
    for earlier in timeline
        .requests
        .iter()
        .filter(|earlier| earlier.op == Some(op) && earlier.line < request.line)
    {
        let (_, response) = earlier.response?;
        steps.push(Step::Response(response));
        steps.extend(response.tool_calls().into_iter().map(|call| Step::Result(&call.id)));
    }
    // As many appended as there are steps is a suffix the trace fixes (judged from the
    // appended messages alone); more is not a run of this shape.
    if appended.len() >= steps.len() || !appended.iter().zip(&steps).all(|(message, step)| step.is(message)) {
        return None;
    }
    let unstored = &steps[appended.len()..];
    let held = request
        .messages
        .len()
        .checked_sub(unstored.len())
        .map(|start| &request.messages[start..])
        .filter(|tail| tail.iter().zip(unstored).all(|(message, step)| step.is(message)));
    let Some(held) = held else {
        // The budget drops the newest interaction only whole, the prompt with it.
        if !request.messages.iter().any(|message| message == prompt) {
            return None;
        }
        let roles: Vec<&str> = unstored.iter().map(Step::role).collect();
        return Some(Violation::new(
            "PROJECT-1.a",
            &[request.line],
            format!(
                "the request carries the run's prompt but does not end with the {} {} the run holds unstored \
                 ([{}]) after its {} appended {}; it carries [{}]",
                unstored.len(),
                plural(unstored.len()),
                roles.join(","),
                run_messages.len(),
                plural(run_messages.len()),
                request.messages.iter().map(Message::role).collect::<Vec<_>>().join(",")
            ),
        ));
    };
    let persisted = persisted_before(timeline, op, request.line);
    let known = run_messages.get(persisted..)?;
    let expected = project_at(timeline, request.line, known.iter().copied().chain(held))?;
    (!expected.messages().eq(request.messages))
        .then(|| projection_violation(request, &expected, ", its unstored messages as the request holds them"))
}

pub fn request_is_the_projection_of_path_and_suffix(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    // A request made after an append failed is POISON-2's (nothing runs after it): what the
    // runtime then carries follows no projection of a store it no longer keeps in step with.
    let poisoned_at = timeline.first_failure().map(|(line, _, _)| line);
    for request in &timeline.requests {
        if poisoned_at.is_some_and(|line| line < request.line) {
            continue;
        }
        let Some(expected) = expected_request_messages(timeline, request) else {
            violations.extend(unstored_steps_violation(timeline, request));
            continue;
        };
        if expected.messages().eq(request.messages) {
            continue;
        }
        violations.push(projection_violation(request, expected, ""));
    }
    violations
}

fn plural(count: usize) -> &'static str {
    if count == 1 {
        "message"
    } else {
        "messages"
    }
}

fn projection_violation(request: &RequestInfo<'_>, expected: &Projection<'_>, note: &str) -> Violation {
    let roles =
        |messages: &mut dyn Iterator<Item = &Message>| messages.map(Message::role).collect::<Vec<_>>().join(",");
    Violation::new(
        "PROJECT-1.a",
        &[request.line],
        format!(
            "the request carries [{}]; build_context(active path + the run's unpersisted suffix{note}) is [{}]{}",
            roles(&mut request.messages.iter()),
            roles(&mut expected.messages()),
            first_message_difference(request.messages, expected)
        ),
    )
}

/// Where two lists of messages of the same roles first differ, as `: message N (role), field F:
/// the request has X, build_context has Y`; nothing when the roles differ (the lists say it).
fn first_message_difference(carried: &[Message], expected: &Projection<'_>) -> String {
    let same_roles = carried.len() == expected.len()
        && carried
            .iter()
            .zip(expected.messages())
            .all(|(left, right)| left.role() == right.role());
    if !same_roles {
        return String::new();
    }
    let json = |message: &Message| serde_json::to_value(message).expect("messages serialize");
    carried
        .iter()
        .zip(expected.messages())
        .enumerate()
        .find(|(_, (left, right))| left != right)
        .and_then(|(index, (left, right))| {
            let (field, carried, built) = first_json_difference(&json(left), &json(right))?;
            Some(format!(
                ": message {index} ({}), field {field}: the request has {carried}, build_context has {built}",
                left.role()
            ))
        })
        .unwrap_or_default()
}

pub fn request_carries_the_merged_system_prompt(timeline: &Timeline<'_>) -> Vec<Violation> {
    let expected = timeline.expected_system_prompt();
    timeline
        .requests
        .iter()
        .filter(|request| request.system_prompt != expected)
        .map(|request| {
            Violation::new(
                "PROJECT-2.a",
                &[request.line],
                format!(
                    "system prompt {}, expected {}",
                    request.system_prompt.map(quote_short).unwrap_or_else(|| "none".into()),
                    expected.map(quote_short).unwrap_or_else(|| "none".into())
                ),
            )
        })
        .collect()
}

pub fn temporary_entries_are_never_stored(timeline: &Timeline<'_>) -> Vec<Violation> {
    timeline
        .appends
        .iter()
        .filter(|append| append.entry.id.contains("runtime_context_"))
        .map(|append| {
            Violation::new(
                "PROJECT-3.a",
                &[append.line],
                format!("temporary entry `{}` was appended to the store", append.entry.id),
            )
        })
        .collect()
}

pub fn request_carries_the_registry_tools(timeline: &Timeline<'_>) -> Vec<Violation> {
    // Compared with the scenario's tools in place; the registry's specs are built only to
    // describe a difference.
    let scripts = &timeline.scenario.tools;
    let registered = |tools: &[crate::model::ToolSpec]| {
        tools.len() == scripts.len()
            && tools.iter().zip(scripts).all(|(sent, script)| {
                sent.name == script.name
                    && sent.description == script.description
                    && sent.parameters == script.parameters
            })
    };
    let names = |tools: &[crate::model::ToolSpec]| -> String {
        tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut violations = Vec::new();
    // The requests of one runtime lend one registry's specs (`ToolRegistry::shared`): the same
    // slice, found registered once, is not compared again.
    let mut registered_already: Option<&[crate::model::ToolSpec]> = None;
    for request in &timeline.requests {
        if registered_already.is_some_and(|tools| std::ptr::eq(tools, request.tools)) {
            continue;
        }
        if registered(request.tools) {
            registered_already = Some(request.tools);
            continue;
        }
        let expected = timeline.registry_tools();
        let (clause, message) = if names(request.tools) != names(expected) {
            (
                "PROJECT-4.a",
                format!(
                    "tools [{}], expected the registry's [{}] in registration order",
                    names(request.tools),
                    names(expected)
                ),
            )
        } else {
            let changed: Vec<&str> = request
                .tools
                .iter()
                .zip(expected)
                .filter(|(sent, registered)| sent != registered)
                .map(|(sent, _)| sent.name.as_str())
                .collect();
            (
                "PROJECT-4.b",
                format!(
                    "the specs of [{}] differ from the registry's (description or parameter schema)",
                    changed.join(",")
                ),
            )
        };
        violations.push(Violation::new(clause, &[request.line], message));
    }
    violations
}

pub fn one_signal_per_run(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut signal_of_op: BTreeMap<OpId, SignalId> = BTreeMap::new();
    let mut op_of_signal: BTreeMap<SignalId, OpId> = BTreeMap::new();
    let mut uses: Vec<(usize, Option<OpId>, SignalId)> = timeline
        .requests
        .iter()
        .map(|request| (request.line, request.op, request.signal))
        .chain(timeline.tool_calls.iter().map(|call| (call.line, call.op, call.signal)))
        .collect();
    uses.sort_by_key(|(line, _, _)| *line);
    // Runs are serial, so the effects between two operations' starts belong to one operation:
    // attribute by the unfinished operation at each line rather than by signal.
    for (line, _, signal) in uses {
        let Some(op) = operation_running_at(timeline, line) else {
            continue;
        };
        match signal_of_op.get(&op) {
            Some(first) if *first != signal => violations.push(Violation::new(
                "PROJECT-5.a",
                &[line],
                format!("{op}'s run used {first} and now {signal}: one run, one signal"),
            )),
            Some(_) => {}
            None => {
                if let Some(other) = op_of_signal.get(&signal) {
                    violations.push(Violation::new(
                        "PROJECT-5.b",
                        &[line],
                        format!("{signal} was already the signal of {other}'s run"),
                    ));
                }
                signal_of_op.insert(op, signal);
                op_of_signal.insert(signal, op);
            }
        }
    }
    violations
}

/// The earliest delivered prompt-like operation whose run had not finished at `line`.
pub fn operation_running_at(timeline: &Timeline<'_>, line: usize) -> Option<OpId> {
    timeline
        .ops
        .iter()
        .filter(|info| info.is_prompt_like() && info.delivered < line)
        .find(|info| info.run_finished.is_none_or(|finished| finished > line))
        .map(|info| info.op)
}

pub fn projection_never_fails_a_run(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for info in timeline.ops.iter().filter(|info| info.is_prompt_like()) {
        let responses = timeline
            .requests_of(info.op)
            .iter()
            .filter_map(|request| request.response.map(|(_, message)| message));
        for append in timeline.appends_of(info.op) {
            let Some(recorded) = append.entry.as_message().and_then(Message::as_assistant) else {
                continue;
            };
            if !responses.clone().any(|response| response == recorded) {
                violations.push(Violation::new(
                    "PROJECT-6.a",
                    &[append.line],
                    format!(
                        "{} recorded an assistant message the model never sent ({}): the run ended without its request",
                        info.op,
                        recorded.error_message.as_deref().unwrap_or("no error message")
                    ),
                ));
            }
        }
    }
    violations
}

pub fn persisted_count_in_range(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for request in &timeline.requests {
        if let Some(index) = first_repeated(request.messages) {
            violations.push(Violation::new(
                "PROJECT-7.a",
                &[request.line],
                format!(
                    "message {} ({}) appears twice: a persisted message was sent again as temporary",
                    index + 1,
                    request.messages[index].role()
                ),
            ));
        }
    }
    violations
}

/// The index of the first message equal to an earlier one. Each message is compared only with
/// the earlier ones of the same fingerprint, so a request costs its length, not its square.
fn first_repeated(messages: &[Message]) -> Option<usize> {
    let mut seen: std::collections::HashMap<u64, Vec<usize>> = std::collections::HashMap::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let same = seen.entry(super::message_fingerprint(message)).or_default();
        if same.iter().any(|earlier| messages[*earlier] == *message) {
            return Some(index);
        }
        same.push(index);
    }
    None
}
