//! The scripted model, tools and hooks that answer a Subject's effects.
//!
//! Each fake consumes its script in the order effects are issued, so an answer is fixed when
//! the effect appears; the strategy only chooses when it is delivered.

use std::collections::BTreeMap;

use crate::model::{AssistantBlock, AssistantMessage, ContentBlock, Message, StopReason, Usage};
use crate::runtime::{HookOutcome, HookPhase, ModelRequest};
use crate::scenario::{AfterAnswer, BeforeAnswer, ModelStep, RequestCheck, Scenario, ToolStep};

/// The provider fields of every scripted response. Implementations differ here legitimately.
pub const FAKE_API: &str = "agentsim";
pub const FAKE_PROVIDER: &str = "agentsim";
pub const FAKE_MODEL: &str = "scripted";

/// A model response being delivered: chunks first, then the final message.
#[derive(Debug, Clone)]
pub struct ModelReply {
    pub step_index: usize,
    pub chunks: Vec<String>,
    pub chunks_sent: usize,
    pub message: AssistantMessage,
    /// Delivered as scripted even after the abort signal fired (`ignoresAbort`).
    pub ignores_abort: bool,
}

impl ModelReply {
    /// The final message when the abort signal fired: what was streamed, stopped as aborted.
    pub fn aborted(&self) -> AssistantMessage {
        let streamed: String = self.chunks[..self.chunks_sent].concat();
        let content = if streamed.is_empty() {
            Vec::new()
        } else {
            vec![AssistantBlock::Text { text: streamed }]
        };
        AssistantMessage {
            content,
            stop_reason: StopReason::Aborted,
            error_message: Some("Request was aborted".into()),
            ..self.message.clone()
        }
    }
}

/// Builds the reply to the `index`-th model request (0-based).
pub fn model_reply(scenario: &Scenario, index: usize, timestamp: u64) -> ModelReply {
    let exhausted;
    let step = match scenario.model.get(index) {
        Some(step) => step,
        None => {
            exhausted = ModelStep {
                error: Some(format!("the model script has no response {}", index + 1)),
                ..ModelStep::default()
            };
            &exhausted
        }
    };
    let mut content = Vec::new();
    if let Some(thinking) = &step.thinking {
        content.push(AssistantBlock::Thinking {
            thinking: thinking.clone(),
        });
    }
    if let Some(text) = &step.text {
        content.push(AssistantBlock::Text { text: text.clone() });
    }
    for call in &step.tool_calls {
        content.push(AssistantBlock::ToolCall(call.clone()));
    }
    let stop_reason = step.stop_reason.unwrap_or(if step.error.is_some() {
        StopReason::Error
    } else if step.tool_calls.is_empty() {
        StopReason::Stop
    } else {
        StopReason::ToolUse
    });
    let message = AssistantMessage {
        content,
        api: FAKE_API.into(),
        provider: FAKE_PROVIDER.into(),
        model: FAKE_MODEL.into(),
        usage: Usage::default(),
        stop_reason,
        error_message: step.error.clone(),
        timestamp,
    };
    let text = step.text.clone().unwrap_or_default();
    let pieces = step.chunks.unwrap_or(1).max(1) as usize;
    let chunks = if pieces > 1 {
        split_chunks(&text, pieces)
    } else {
        Vec::new()
    };
    ModelReply {
        step_index: index,
        chunks,
        chunks_sent: 0,
        message,
        ignores_abort: step.ignores_abort,
    }
}

/// Splits `text` into `pieces` parts of nearly equal character counts (the last may be empty).
fn split_chunks(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(pieces).max(1);
    (0..pieces)
        .map(|piece| chars.iter().skip(piece * size).take(size).collect())
        .collect()
}

/// The problems the scripted model found in a request it received.
pub fn check_request(check: &RequestCheck, request: &ModelRequest) -> Vec<String> {
    let mut problems = Vec::new();
    let roles: Vec<&str> = request.messages.iter().map(Message::role).collect();
    if let Some(expected) = &check.roles {
        if roles != expected.iter().map(String::as_str).collect::<Vec<_>>() {
            problems.push(format!(
                "roles were [{}], expected [{}]",
                roles.join(","),
                expected.join(",")
            ));
        }
    }
    if let Some(expected) = &check.system_prompt {
        if request.system_prompt.as_ref() != expected.as_ref() {
            problems.push(format!(
                "system prompt was {}, expected {}",
                crate::check::quoted_option(request.system_prompt.as_deref()),
                crate::check::quoted_option(expected.as_deref())
            ));
        }
    }
    if let Some(expected) = &check.tools {
        let names: Vec<&str> = request.tools.iter().map(|tool| tool.name.as_str()).collect();
        if names != expected.iter().map(String::as_str).collect::<Vec<_>>() {
            problems.push(format!(
                "tools were [{}], expected [{}]",
                names.join(","),
                expected.join(",")
            ));
        }
    }
    if let Some(expected) = check.message_count {
        if request.messages.len() != expected {
            problems.push(format!("{} messages, expected {expected}", request.messages.len()));
        }
    }
    if check.contains.is_empty() && check.excludes.is_empty() {
        return problems;
    }
    let haystack = request_text(request);
    for needle in &check.contains {
        if !haystack.contains(needle.as_str()) {
            problems.push(format!("the request does not contain {}", crate::check::quoted(needle)));
        }
    }
    for needle in &check.excludes {
        if haystack.contains(needle.as_str()) {
            problems.push(format!("the request contains {}", crate::check::quoted(needle)));
        }
    }
    problems
}

/// Everything a model could read in a request, as one string.
pub fn request_text(request: &ModelRequest) -> String {
    let mut text = request.system_prompt.clone().unwrap_or_default();
    for message in &request.messages {
        text.push('\n');
        text.push_str(&serde_json::to_string(message).expect("messages serialize"));
    }
    text
}

/// Tool and hook scripts with their cursors.
#[derive(Debug, Clone, Default)]
pub struct Scripts {
    tool_cursors: BTreeMap<String, usize>,
    hook_cursors: BTreeMap<(String, HookPhase), usize>,
    notify_cursors: BTreeMap<String, usize>,
}

impl Scripts {
    /// The next scripted step of a tool (default: a result `ok`).
    pub fn next_tool(&mut self, scenario: &Scenario, name: &str) -> ToolStep {
        let cursor = self.tool_cursors.entry(name.to_string()).or_insert(0);
        let step = scenario
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .and_then(|tool| tool.results.get(*cursor).cloned())
            .unwrap_or_else(|| ToolStep::Result("ok".into()));
        *cursor += 1;
        step
    }

    /// The next scripted answer of an extension's hook (default: allow / observe).
    /// How an observer's handler answers its next notification (default: it returns), and
    /// whether it is slow.
    pub fn next_notify(&mut self, scenario: &Scenario, observer: &str) -> (crate::runtime::NotifyOutcome, bool) {
        use crate::runtime::NotifyOutcome;
        use crate::scenario::ObserverAnswer;
        let cursor = self.notify_cursors.entry(observer.to_string()).or_insert(0);
        let script = scenario.observers.iter().find(|script| script.name == observer);
        let outcome = match script.and_then(|script| script.answers.get(*cursor)) {
            None | Some(ObserverAnswer::Return) => NotifyOutcome::Ok,
            Some(ObserverAnswer::Throw(message)) => NotifyOutcome::Threw {
                message: message.clone(),
            },
        };
        *cursor += 1;
        (outcome, script.is_some_and(|script| script.slow))
    }

    pub fn next_hook(&mut self, scenario: &Scenario, extension: &str, phase: HookPhase) -> HookOutcome {
        let cursor = self.hook_cursors.entry((extension.to_string(), phase)).or_insert(0);
        let script = scenario.extensions.iter().find(|script| script.name == extension);
        let outcome = match phase {
            HookPhase::Before => match script.and_then(|script| script.before.get(*cursor)) {
                None | Some(BeforeAnswer::Allow) => HookOutcome::Allow,
                Some(BeforeAnswer::Deny(reason)) => HookOutcome::Deny { reason: reason.clone() },
                Some(BeforeAnswer::Rewrite(arguments)) => HookOutcome::RewriteArguments {
                    arguments: arguments.clone(),
                },
                Some(BeforeAnswer::Throw(message)) => HookOutcome::Threw {
                    message: message.clone(),
                },
            },
            HookPhase::After => match script.and_then(|script| script.after.get(*cursor)) {
                None | Some(AfterAnswer::Observe) => HookOutcome::Observe,
                Some(AfterAnswer::Rewrite(result)) => HookOutcome::RewriteResult {
                    content: vec![ContentBlock::text(result.text.clone())],
                    is_error: result.is_error,
                },
                Some(AfterAnswer::Throw(message)) => HookOutcome::Threw {
                    message: message.clone(),
                },
            },
        };
        *cursor += 1;
        outcome
    }
}
