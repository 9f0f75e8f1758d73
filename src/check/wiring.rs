//! WIRE: resources into the system prompt, extension hooks around the one core executor.

use serde_json::Value;

use crate::model::{validate_arguments, ContentBlock, Message, ToolResultMessage};
use crate::runtime::{HookOutcome, HookPhase, OpId, ToolOutcome};

use super::timeline::{CallStory, HookInfo, Line, Timeline, ToolCallInfo};
use super::Violation;

pub fn configured_prompt_then_resources(timeline: &Timeline<'_>) -> Vec<Violation> {
    let configured = timeline
        .scenario
        .config
        .system_prompt
        .as_deref()
        .filter(|text| !text.trim().is_empty());
    let Some(configured) = configured else {
        return Vec::new();
    };
    let resources = !timeline.scenario.resources.is_empty();
    let mut violations = Vec::new();
    for request in &timeline.requests {
        let prompt = request.system_prompt.unwrap_or("");
        let ok = if resources {
            prompt
                .strip_prefix(configured)
                .is_some_and(|rest| rest.starts_with("\n\n# Pi resources"))
        } else {
            prompt == configured
        };
        if !ok {
            violations.push(Violation::new(
                "WIRE-1.a",
                &[request.line],
                if resources {
                    "the system prompt is not the configured text, a blank line, then the resource context"
                } else {
                    "the system prompt is not the configured text"
                },
            ));
        }
    }
    violations
}

pub fn empty_catalog_adds_no_header(timeline: &Timeline<'_>) -> Vec<Violation> {
    if !timeline.scenario.resources.is_empty() {
        return Vec::new();
    }
    let configured_empty = timeline
        .scenario
        .config
        .system_prompt
        .as_deref()
        .is_none_or(|text| text.trim().is_empty());
    let mut violations = Vec::new();
    for request in &timeline.requests {
        let prompt = request.system_prompt;
        if prompt.is_some_and(|text| text.contains("# Pi resources")) {
            violations.push(Violation::new(
                "WIRE-2.a",
                &[request.line],
                "an empty catalog produced a `# Pi resources` header",
            ));
        } else if configured_empty && prompt.is_some() {
            violations.push(Violation::new(
                "WIRE-2.b",
                &[request.line],
                "no configured prompt and no resources, yet the request has a system prompt",
            ));
        }
    }
    violations
}

pub fn inactive_skill_body_never_sent(timeline: &Timeline<'_>) -> Vec<Violation> {
    let bodies: Vec<(&str, &str)> = timeline
        .scenario
        .resources
        .skills
        .iter()
        .filter(|skill| !skill.body.trim().is_empty())
        .map(|skill| (skill.name.as_str(), skill.body.trim()))
        .collect();
    let mut violations = Vec::new();
    if bodies.is_empty() {
        return violations;
    }
    // Requests mostly carry one system prompt: each distinct text is searched once (the search
    // costs more than comparing the texts).
    let mut searched: Vec<(&str, Vec<bool>)> = Vec::new();
    for request in &timeline.requests {
        let in_prompts = match request.system_prompt {
            None => None,
            Some(prompt) => {
                let index = match searched.iter().position(|(text, _)| *text == prompt) {
                    Some(index) => index,
                    None => {
                        searched.push((prompt, bodies.iter().map(|(_, body)| contains(prompt, body)).collect()));
                        searched.len() - 1
                    }
                };
                Some(&searched[index].1)
            }
        };
        for (index, (name, body)) in bodies.iter().enumerate() {
            let in_prompt = in_prompts.is_some_and(|found| found[index]);
            if in_prompt || request.messages.iter().any(|message| message_contains(message, body)) {
                violations.push(Violation::new(
                    "WIRE-3.a",
                    &[request.line],
                    format!("the body of inactive skill `{name}` reached the model"),
                ));
            }
        }
    }
    violations
}

/// Whether any text a model reads in `message` contains `needle`.
fn message_contains(message: &Message, needle: &str) -> bool {
    match message {
        Message::Assistant(assistant) => assistant.content.iter().any(|block| match block {
            crate::model::AssistantBlock::Text { text } => contains(text, needle),
            crate::model::AssistantBlock::Thinking { thinking } => contains(thinking, needle),
            crate::model::AssistantBlock::ToolCall(call) => {
                serde_json::to_string(&call.arguments).is_ok_and(|arguments| contains(&arguments, needle))
            }
        }),
        // A plain user text is its own text: searched in place, without a copy.
        Message::User(crate::model::UserMessage {
            content: crate::model::UserContent::Text(text),
            ..
        }) => contains(text, needle),
        Message::User(crate::model::UserMessage {
            content: crate::model::UserContent::Blocks(blocks),
            ..
        }) => blocks_contain(blocks, needle),
        Message::ToolResult(result) => blocks_contain(&result.content, needle),
    }
}

/// Whether `haystack` contains `needle`, as [`str::contains`] says. A skill's body is mostly
/// longer than the 32 bytes `str::contains` searches with SIMD (a longer needle sets up a
/// two-way searcher for every text): its first up to 32 bytes are searched first, and the
/// whole only where they occur.
fn contains(haystack: &str, needle: &str) -> bool {
    const SIMD_NEEDLE: usize = 32;
    if needle.len() > SIMD_NEEDLE && needle.len() < haystack.len() {
        let cut = (1..=SIMD_NEEDLE)
            .rev()
            .find(|cut| needle.is_char_boundary(*cut))
            .expect("any 4 bytes of a string hold a char boundary");
        if !haystack.contains(&needle[..cut]) {
            return false;
        }
    }
    haystack.contains(needle)
}

/// Whether the text of `blocks` (their text blocks joined, as [`Message::text`] joins them)
/// contains `needle`; one text block is searched in place.
fn blocks_contain(blocks: &[ContentBlock], needle: &str) -> bool {
    let texts = blocks.iter().filter_map(|block| match block {
        ContentBlock::Text { text } => Some(text.as_str()),
        ContentBlock::Image { .. } => None,
    });
    let mut probe = texts.clone();
    match (probe.next(), probe.next()) {
        (None, _) => needle.is_empty(),
        (Some(only), None) => contains(only, needle),
        _ => contains(&texts.collect::<String>(), needle),
    }
}

/// Where a call's arguments were seen: the line, the arguments, and a hook's answer.
type ArgumentsSeen<'t> = (Line, &'t Value, Option<&'t Option<(Line, &'t HookOutcome)>>);

/// A call story's hooks, in trace order.
fn story_hooks<'t, 'a>(timeline: &'t Timeline<'a>, story: &'t CallStory<'a>) -> impl Iterator<Item = &'t HookInfo<'a>> {
    story.hooks.iter().map(|index| &timeline.hooks[*index])
}

/// A call story's runs of the core executor, in trace order.
fn story_core<'t, 'a>(
    timeline: &'t Timeline<'a>,
    story: &'t CallStory<'a>,
) -> impl Iterator<Item = &'t ToolCallInfo<'a>> {
    story.core.iter().map(|index| &timeline.tool_calls[*index])
}

fn blocks(answer: &Option<(Line, &HookOutcome)>) -> bool {
    matches!(answer, Some((_, HookOutcome::Deny { .. } | HookOutcome::Threw { .. })))
}

/// Whether `hooks` ran as the extensions `names`, in order: a prefix of them, or all of them.
fn in_order<'h, 'a: 'h>(
    mut hooks: impl Iterator<Item = &'h HookInfo<'a>>,
    mut names: impl Iterator<Item = &'a str>,
    all: bool,
) -> bool {
    hooks.all(|hook| names.next() == Some(hook.extension)) && (!all || names.next().is_none())
}

fn names_of<'h, 'a: 'h>(hooks: impl Iterator<Item = &'h HookInfo<'a>>) -> String {
    hooks.map(|hook| hook.extension).collect::<Vec<_>>().join(",")
}

pub fn hooks_wrap_the_core_executor(timeline: &Timeline<'_>) -> Vec<Violation> {
    let extensions = &timeline.scenario.extensions;
    let extension_names = || extensions.iter().map(|script| script.name.as_str());
    let extensions_list = || extension_names().collect::<Vec<_>>().join(",");
    let mut violations = Vec::new();
    for story in timeline.call_stories() {
        // Judged without collecting: a run's hooks are read again only to report.
        let befores = || story_hooks(timeline, story).filter(|hook| hook.phase == HookPhase::Before);
        let afters = || story_hooks(timeline, story).filter(|hook| hook.phase == HookPhase::After);
        if !in_order(befores(), extension_names(), false) {
            violations.push(Violation::new(
                "WIRE-4.a",
                &befores().map(|hook| hook.line).collect::<Vec<_>>(),
                format!(
                    "call {}: before hooks ran as [{}], extensions are [{}]",
                    story.call_id,
                    names_of(befores()),
                    extensions_list()
                ),
            ));
        }
        // Once the call has a recorded result and no before hook blocked it, every
        // extension's after hook ran, in order: none skipped, the last one included.
        let blocked = befores().any(|hook| blocks(&hook.answer));
        let complete = !blocked && recorded_result(timeline, story.op, story.call_id).is_some();
        if !in_order(afters(), extension_names(), complete) {
            violations.push(Violation::new(
                "WIRE-4.b",
                &afters().map(|hook| hook.line).collect::<Vec<_>>(),
                format!(
                    "call {}: after hooks ran as [{}], extensions are [{}]",
                    story.call_id,
                    names_of(afters()),
                    extensions_list()
                ),
            ));
        }
        let last_before = befores().map(|hook| hook.line).max();
        let first_after = afters().map(|hook| hook.line).min();
        if let (Some(last_before), Some(first_after)) = (last_before, first_after) {
            if first_after < last_before {
                violations.push(Violation::new(
                    "WIRE-4.c",
                    &[first_after, last_before],
                    format!("call {}: an after hook ran before a before hook", story.call_id),
                ));
            }
        }
        // Every hook and the core tool see the call the model made: its id (the story's) and
        // its name; an after hook sees the result of that call.
        if let Some(name) = model_call_name(timeline, story.op, story.call_id) {
            let seen = story_hooks(timeline, story)
                .map(|hook| (hook.line, hook.call.name.as_str()))
                .chain(story_core(timeline, story).map(|core| (core.line, core.call.name.as_str())));
            for (line, seen) in seen {
                if seen != name {
                    violations.push(Violation::new(
                        "WIRE-4.d",
                        &[line],
                        format!(
                            "call {}: called as `{seen}`, but the model called `{name}`",
                            story.call_id
                        ),
                    ));
                }
            }
            for hook in afters() {
                if let Some(result) = hook.result {
                    if result.tool_call_id != story.call_id || result.tool_name != name {
                        violations.push(Violation::new(
                            "WIRE-4.e",
                            &[hook.line],
                            format!(
                                "call {}: the after hook of `{}` was shown the result of {} `{}`",
                                story.call_id, hook.extension, result.tool_call_id, result.tool_name
                            ),
                        ));
                    }
                }
            }
        }
        for core in story_core(timeline, story) {
            let all_allowed = befores().count() == extensions.len()
                && befores().all(|hook| hook.answer.is_some() && !blocks(&hook.answer));
            let before_done = befores().all(|hook| hook.answer.as_ref().is_some_and(|(line, _)| *line < core.line));
            if !all_allowed || !before_done {
                violations.push(Violation::new(
                    "WIRE-4.c",
                    &[core.line],
                    format!(
                        "call {}: the core tool ran before every extension's before hook allowed it",
                        story.call_id
                    ),
                ));
            }
            if let Some(early) = afters().find(|hook| hook.line < core.line) {
                violations.push(Violation::new(
                    "WIRE-4.c",
                    &[early.line, core.line],
                    format!("call {}: an after hook ran before the core tool", story.call_id),
                ));
            }
        }
    }
    violations
}

/// The name of the tool call `call_id` in a model response of `op`'s run.
fn model_call_name<'t>(timeline: &'t Timeline<'_>, op: Option<OpId>, call_id: &str) -> Option<&'t str> {
    timeline
        .requests
        .iter()
        .filter(|request| request.op == op)
        .filter_map(|request| request.response)
        .flat_map(|(_, response)| response.tool_calls())
        .find(|call| call.id == call_id)
        .map(|call| call.name.as_str())
}

/// The tool result the operation recorded for a call: from its appended messages, else from
/// the op's later model requests.
fn recorded_result<'t>(timeline: &'t Timeline<'_>, op: Option<OpId>, call_id: &str) -> Option<&'t ToolResultMessage> {
    let op = op?;
    let result_of = |message: &'t Message| match message {
        Message::ToolResult(result) if result.tool_call_id == call_id => Some(result),
        _ => None,
    };
    timeline
        .appended_messages(op)
        .iter()
        .rev()
        .find_map(|message| result_of(message))
        .or_else(|| {
            timeline
                .requests
                .iter()
                .rev()
                .filter(|request| request.op == Some(op))
                .find_map(|request| request.messages.iter().rev().find_map(result_of))
        })
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

pub fn denied_call_does_not_run(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for story in timeline.call_stories() {
        let Some(blocker) =
            story_hooks(timeline, story).find(|hook| hook.phase == HookPhase::Before && blocks(&hook.answer))
        else {
            continue;
        };
        let blocked_at = blocker.answer.as_ref().map(|(line, _)| *line).unwrap_or(blocker.line);
        for core in story_core(timeline, story).filter(|core| core.line > blocked_at) {
            violations.push(Violation::new(
                "WIRE-5.a",
                &[blocked_at, core.line],
                format!(
                    "call {}: the core tool ran after `{}` blocked it",
                    story.call_id, blocker.extension
                ),
            ));
        }
        for hook in story_hooks(timeline, story).filter(|hook| hook.line > blocked_at) {
            violations.push(Violation::new(
                "WIRE-5.b",
                &[blocked_at, hook.line],
                format!(
                    "call {}: hook `{}` ran after `{}` blocked the call",
                    story.call_id, hook.extension, blocker.extension
                ),
            ));
        }
        if let Some(result) = recorded_result(timeline, story.op, story.call_id) {
            let reason = match &blocker.answer {
                Some((_, HookOutcome::Deny { reason })) => Some(reason.as_str()),
                _ => None,
            };
            let text = text_of(&result.content);
            if !result.is_error || reason.is_some_and(|reason| !text.contains(reason)) {
                violations.push(Violation::new(
                    "WIRE-5.c",
                    &[blocked_at],
                    format!(
                        "call {}: the recorded result is not an error carrying the reason (got {})",
                        story.call_id,
                        super::quoted(&text)
                    ),
                ));
            }
        }
    }
    violations
}

pub fn rewritten_arguments_reach_the_executor(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for story in timeline.call_stories() {
        let mut rewritten: Option<(Line, Value)> = None;
        let mut events: Vec<ArgumentsSeen<'_>> = story_hooks(timeline, story)
            .map(|hook| (hook.line, &hook.call.arguments, Some(&hook.answer)))
            .chain(story_core(timeline, story).map(|core| (core.line, &core.call.arguments, None)))
            .collect();
        events.sort_by_key(|(line, _, _)| *line);
        for (line, arguments, answer) in events {
            if let Some((at, expected)) = &rewritten {
                if arguments != expected {
                    violations.push(Violation::new(
                        "WIRE-6.a",
                        &[*at, line],
                        format!(
                            "call {}: received {arguments} after a hook rewrote the arguments to {expected}",
                            story.call_id
                        ),
                    ));
                }
            }
            if let Some(Some((at, HookOutcome::RewriteArguments { arguments }))) = answer {
                rewritten = Some((*at, arguments.clone()));
            }
        }
    }
    violations
}

pub fn unknown_tool_or_bad_arguments_never_run(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for request in &timeline.requests {
        let Some((response_line, response)) = &request.response else {
            continue;
        };
        for call in response.tool_calls() {
            let rewritten = timeline
                .hooks
                .iter()
                .filter(|hook| hook.op == request.op && hook.call.id == call.id && hook.line > *response_line)
                .filter_map(|hook| match &hook.answer {
                    Some((_, HookOutcome::RewriteArguments { arguments })) => Some(arguments),
                    _ => None,
                })
                .next_back();
            let arguments = rewritten.unwrap_or(&call.arguments);
            let problem = match timeline.scenario.tools.iter().find(|tool| tool.name == call.name) {
                None => Some(format!("tool `{}` does not exist", call.name)),
                Some(tool) => validate_arguments(&tool.parameters, arguments).err(),
            };
            let Some(problem) = problem else { continue };
            let core = timeline
                .tool_calls
                .iter()
                .find(|core| core.op == request.op && core.call.id == call.id && core.line > *response_line);
            if let Some(core) = core {
                violations.push(Violation::new(
                    "WIRE-7.a",
                    &[*response_line, core.line],
                    format!("call {} reached the core tool although {problem}", call.id),
                ));
            }
            // The core executor's answer is what the first after hook observes; after hooks may
            // still rewrite it (WIRE-8), so the recorded result is judged only without them.
            let afters: Vec<&HookInfo> = timeline
                .hooks
                .iter()
                .filter(|hook| hook.op == request.op && hook.call.id == call.id && hook.phase == HookPhase::After)
                .filter(|hook| hook.line > *response_line)
                .collect();
            let core_result = match afters.first() {
                Some(first) => first.result.map(|result| (first.line, result.is_error)),
                None => recorded_result(timeline, request.op, &call.id).map(|result| (*response_line, result.is_error)),
            };
            if let Some((line, false)) = core_result {
                violations.push(Violation::new(
                    "WIRE-7.b",
                    &[line],
                    format!(
                        "call {} ({problem}) got a successful result from the core executor",
                        call.id
                    ),
                ));
            }
        }
    }
    violations
}

pub fn after_hook_decides_the_result(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for story in timeline.call_stories() {
        let afters: Vec<&HookInfo> = story_hooks(timeline, story)
            .filter(|hook| hook.phase == HookPhase::After)
            .collect();
        if afters.is_empty() || afters.iter().any(|hook| hook.answer.is_none()) {
            continue;
        }
        let Some(recorded) = recorded_result(timeline, story.op, story.call_id) else {
            continue;
        };
        let last = afters.last().expect("not empty");
        let (expected_text, expected_error) = match afters.iter().rev().find_map(|hook| match &hook.answer {
            Some((_, HookOutcome::RewriteResult { content, is_error })) => Some((text_of(content), *is_error)),
            Some((_, HookOutcome::Threw { .. })) => Some((String::new(), true)),
            _ => None,
        }) {
            Some(rewrite) => rewrite,
            None => match (
                story
                    .core
                    .last()
                    .and_then(|core| timeline.tool_calls[*core].answer.as_ref()),
                &afters[0].result,
            ) {
                (Some((_, ToolOutcome::Ok { content, is_error, .. })), _) => (text_of(content), *is_error),
                (_, Some(observed)) => (text_of(&observed.content), observed.is_error),
                _ => continue,
            },
        };
        let threw = matches!(
            afters
                .iter()
                .rev()
                .find(|hook| !matches!(hook.answer, Some((_, HookOutcome::Observe))))
                .and_then(|hook| hook.answer.as_ref()),
            Some((_, HookOutcome::Threw { .. }))
        );
        let text = text_of(&recorded.content);
        let text_ok = threw || text == expected_text;
        if !text_ok || recorded.is_error != expected_error {
            violations.push(Violation::new(
                "WIRE-8.a",
                &[last.line],
                format!(
                    "call {}: recorded result {} (error={}), but the hooks left {} (error={expected_error})",
                    story.call_id,
                    super::quoted(&text),
                    recorded.is_error,
                    super::quoted(&expected_text)
                ),
            ));
        }
    }
    violations
}

/// The error text a failed tool call's result must read, and why: the course's encodings of
/// the core executor's refusals and of a throwing hook (`runtime::executor`).
fn course_error_texts<'t>(timeline: &'t Timeline<'_>) -> Vec<(&'static str, Line, Option<OpId>, &'t str, String)> {
    let mut expected = Vec::new();
    // The executor: an unknown tool, or arguments (as the before hooks left them) that do not
    // fit the tool's schema.
    for request in &timeline.requests {
        let Some((response_line, response)) = &request.response else {
            continue;
        };
        for call in response.tool_calls() {
            let hooks = || {
                timeline
                    .hooks
                    .iter()
                    .filter(|hook| hook.op == request.op && hook.call.id == call.id && hook.line > *response_line)
            };
            // A before hook that blocked or threw decides the text instead (WIRE-5, below).
            if hooks().any(|hook| hook.phase == HookPhase::Before && blocks(&hook.answer)) {
                continue;
            }
            let arguments = hooks()
                .filter_map(|hook| match &hook.answer {
                    Some((_, HookOutcome::RewriteArguments { arguments })) => Some(arguments),
                    _ => None,
                })
                .next_back()
                .unwrap_or(&call.arguments);
            let (clause, text) = match timeline.scenario.tools.iter().find(|tool| tool.name == call.name) {
                None => ("WIRE-9.a", format!("Tool {} not found", call.name)),
                Some(tool) => match validate_arguments(&tool.parameters, arguments) {
                    Err(problem) => ("WIRE-9.b", format!("Invalid arguments for {}: {problem}", call.name)),
                    Ok(()) => continue,
                },
            };
            expected.push((clause, *response_line, request.op, call.id.as_str(), text));
        }
    }
    // A throwing hook: before it, the call fails closed with the hook's name and phase; after
    // it, the result becomes that error.
    for hook in &timeline.hooks {
        let Some((line, HookOutcome::Threw { message })) = &hook.answer else {
            continue;
        };
        let (clause, phase) = match hook.phase {
            HookPhase::Before => ("WIRE-9.c", "before"),
            HookPhase::After => ("WIRE-9.d", "after"),
        };
        let text = format!(
            "extension {} failed {phase} {}: {message}",
            hook.extension, hook.call.name
        );
        expected.push((clause, *line, hook.op, hook.call.id.as_str(), text));
    }
    expected
}

/// WIRE-9: the error results the core executor and the extension host make read as the course
/// writes them. The text a later after hook observes (or, with none, the one recorded) is judged:
/// an after hook may still rewrite it (WIRE-8).
pub fn error_results_carry_the_course_texts(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (clause, line, op, call_id, text) in course_error_texts(timeline) {
        // What the next after hook was handed, else what the run recorded.
        let observed = timeline
            .hooks
            .iter()
            .filter(|hook| hook.op == op && hook.call.id == call_id && hook.phase == HookPhase::After)
            .find(|hook| hook.line > line)
            .and_then(|hook| hook.result)
            .or_else(|| recorded_result(timeline, op, call_id));
        // Only an error result's wording is judged here: a call that should have failed and
        // did not is WIRE-7's (the executor) or WIRE-8's (an after hook's failure ignored).
        let Some(observed) = observed.filter(|observed| observed.is_error) else {
            continue;
        };
        let got = text_of(&observed.content);
        if got != text {
            violations.push(Violation::new(
                clause,
                &[line],
                format!(
                    "call {call_id}: the error result reads {}, the course writes {}",
                    super::quoted(&got),
                    super::quoted(&text)
                ),
            ));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::contains;
    use proptest::prelude::*;

    /// The prefiltered search answers as `str::contains` does: needles around the 32 bytes the
    /// prefilter cuts at, with multi-byte characters across the cut, found and not found.
    #[test]
    fn the_prefiltered_search_answers_as_str_contains() {
        let body = "REVIEW SKILL BODY: never shown while inactive";
        let wide = "技能正文：在未激活时永远不会发送给模型的内容";
        let cases = [
            ("", body),
            (body, body),
            ("prefix REVIEW SKILL BODY: never shown while inactive suffix", body),
            ("prefix REVIEW SKILL BODY: never shown while ACTIVE suffix", body),
            ("REVIEW SKILL BODY: never shown while inactiv", body),
            ("系统提示 技能正文：在未激活时永远不会发送给模型的内容。", wide),
            ("系统提示 技能正文：在未激活时永远不会发送给模型的内", wide),
            ("技能正文：在未激活时永远不会发送给模型的其他内容", wide),
        ];
        for (haystack, needle) in cases {
            assert_eq!(
                contains(haystack, needle),
                haystack.contains(needle),
                "{haystack:?} / {needle:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn the_prefiltered_search_agrees_with_str_contains(
            haystack in "[ab技 ]{0,80}",
            needle in "[ab技 ]{0,50}",
            at in 0usize..80,
        ) {
            prop_assert_eq!(contains(&haystack, &needle), haystack.contains(needle.as_str()));
            // The needle planted in the haystack is found.
            let at = (0..=at.min(haystack.len())).rev().find(|at| haystack.is_char_boundary(*at)).unwrap_or(0);
            let planted = format!("{}{needle}{}", &haystack[..at], &haystack[at..]);
            prop_assert!(contains(&planted, &needle));
        }
    }
}
