//! Wiring bugs: an extension host that drops hooks or their answers, and a request builder that
//! sends the tools, the system prompt or the resources the wrong way.

use std::sync::Arc;

use crate::model::ToolSpec;
use crate::model::{Message, ToolCall};
use crate::runtime::{Completion, Effect, EffectId, HookOutcome, HookPhase, Input};

use super::projection::rewrite_request;
use super::seam::{Bug, Detour, Seam};

/// Which after hooks the host never runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AfterHooks {
    /// No extension's: the core result goes straight to the agent.
    Every,
    /// The last extension's: the host's loop stops one short.
    Last,
}

/// The host answers the after hooks it skips itself, as if the extension only observed: the
/// world never sees them.
pub(crate) struct AfterHookSkipped(pub AfterHooks);

impl Bug for AfterHookSkipped {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if let Effect::Hook {
            effect: id,
            extension,
            phase: HookPhase::After,
            ..
        } = &effect
        {
            let skipped = match self.0 {
                AfterHooks::Every => true,
                AfterHooks::Last => seam.facts.extensions.last() == Some(extension),
            };
            if skipped {
                return seam.answer(*id, Completion::Hook(HookOutcome::Observe));
            }
        }
        seam.emit(effect);
    }
}

/// A hook's answer the host throws away.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HookAnswer {
    /// A before hook's deny: the call runs as if allowed.
    Deny,
    /// A before hook's rewritten arguments: the original ones go on.
    RewriteArguments,
    /// An after hook's rewritten result: the core result is recorded.
    RewriteResult,
}

/// The host hears one kind of hook answer as its phase's default (`allow` before the core
/// tool, `observe` after it).
pub(crate) struct HookAnswerIgnored(pub HookAnswer);

impl Bug for HookAnswerIgnored {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        let Input::Complete {
            effect,
            completion: Completion::Hook(answer),
        } = &input
        else {
            return seam.deliver(input);
        };
        let default = match (self.0, answer) {
            (HookAnswer::Deny, HookOutcome::Deny { .. })
            | (HookAnswer::RewriteArguments, HookOutcome::RewriteArguments { .. }) => HookOutcome::Allow,
            (HookAnswer::RewriteResult, HookOutcome::RewriteResult { .. }) => HookOutcome::Observe,
            _ => return seam.deliver(input),
        };
        seam.deliver(Completion::Hook(default).into_input(*effect));
    }
}

/// Tools are sent sorted by name (a map keyed by name), not in registration order.
#[derive(Default)]
pub(crate) struct ToolsSortedByName;

impl Bug for ToolsSortedByName {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        rewrite_request(effect, seam, |request, _| {
            let mut tools = request.tools.to_vec();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            request.tools = Arc::from(tools);
        });
    }
}

/// Tools are sent without descriptions and with an empty parameter schema.
#[derive(Default)]
pub(crate) struct ToolSchemaDropped;

impl Bug for ToolSchemaDropped {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        rewrite_request(effect, seam, |request, _| {
            let tools: Vec<ToolSpec> = request
                .tools
                .iter()
                .map(|tool| ToolSpec {
                    name: tool.name.clone(),
                    description: String::new(),
                    parameters: serde_json::json!({"type": "object"}),
                })
                .collect();
            request.tools = Arc::from(tools);
        });
    }
}

/// The resource context comes before the configured system prompt (only when both are there).
#[derive(Default)]
pub(crate) struct ResourcesBeforeConfiguredPrompt;

impl Bug for ResourcesBeforeConfiguredPrompt {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        rewrite_request(effect, seam, |request, seam| {
            let (Some(configured), Some(merged)) = (&seam.facts.configured_prompt, &seam.facts.merged_prompt) else {
                return;
            };
            if let Some(resources) = merged.strip_prefix(&format!("{configured}\n\n")) {
                request.system_prompt = Some(format!("{resources}\n\n{configured}"));
            }
        });
    }
}

/// The formatter runs on an empty catalog: a bare `# Pi resources` header closes the system
/// prompt (or is all of it).
#[derive(Default)]
pub(crate) struct ResourceHeaderOnEmptyCatalog;

impl Bug for ResourceHeaderOnEmptyCatalog {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if !seam.facts.resources.is_empty() {
            return seam.emit(effect);
        }
        rewrite_request(effect, seam, |request, _| {
            request.system_prompt = Some(match request.system_prompt.take() {
                Some(prompt) => format!("{prompt}\n\n# Pi resources"),
                None => "# Pi resources".to_string(),
            });
        });
    }
}

/// The extension host hands its hooks the call under a namespaced tool name (`functions.NAME`,
/// as a provider's tool registry spells it), not the name the model called.
#[derive(Default)]
pub(crate) struct HookSeesNamespacedToolName;

impl Bug for HookSeesNamespacedToolName {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Hook {
                effect,
                extension,
                phase,
                mut call,
                result,
            } => {
                call.name = format!("functions.{}", call.name);
                seam.emit(Effect::Hook {
                    effect,
                    extension,
                    phase,
                    call,
                    result,
                });
            }
            effect => seam.emit(effect),
        }
    }
}

/// The host runs the after hooks of a call a before hook blocked, on the blocked call's error
/// result (a host whose after phase loops over every call of the message): once the run shows
/// that result (in its next request), the first extension's after hook is called for it, and
/// the run goes on once the hook has answered.
#[derive(Default)]
pub(crate) struct AfterHooksSeeBlockedCall {
    /// Before hooks in flight: the call each one was asked about.
    before: Vec<(EffectId, String, ToolCall)>,
    /// Calls blocked and not yet shown to an after hook.
    blocked: Vec<(String, ToolCall)>,
    /// The subject's effects held while the injected after hook waits for its answer.
    detour: Detour,
}

impl Bug for AfterHooksSeeBlockedCall {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let Input::Complete {
            effect,
            completion: Completion::Hook(outcome),
        } = &input
        {
            if let Some(index) = self.before.iter().position(|(id, _, _)| id == effect) {
                let (_, extension, call) = self.before.remove(index);
                if matches!(outcome, HookOutcome::Deny { .. }) {
                    self.blocked.push((extension, call));
                }
            }
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let Some(effect) = self.detour.hold(effect) else {
            return;
        };
        match &effect {
            Effect::Hook {
                effect: id,
                extension,
                phase: HookPhase::Before,
                call,
                ..
            } => self.before.push((*id, extension.clone(), call.clone())),
            Effect::ModelRequest { request, .. } if !self.blocked.is_empty() => {
                let (extension, call) = self.blocked.remove(0);
                let result = request.messages.iter().rev().find_map(|message| match message {
                    Message::ToolResult(result) if result.tool_call_id == call.id => Some(result.clone()),
                    _ => None,
                });
                if let Some(result) = result {
                    let id = seam.fresh_effect();
                    let hook = Effect::Hook {
                        effect: id,
                        extension,
                        phase: HookPhase::After,
                        call,
                        result: Some(result),
                    };
                    self.detour.start(hook, effect, seam);
                    return;
                }
            }
            _ => {}
        }
        seam.emit(effect);
    }

    fn own_answer(&mut self, _: EffectId, _: Completion, seam: &mut Seam) {
        for effect in self.detour.end() {
            self.effect(effect, seam);
        }
    }
}

/// The executor and the host word their errors their own way (`Unknown tool: X`, `X: invalid
/// arguments (...)`, `hook E threw before T: ...`): every refusal and failure happens as the
/// course has it, only the texts differ. A wording bug, not a wiring one: WIRE-9 (SHOULD) is the
/// only rule it breaks, which the level line then shows.
#[derive(Default)]
pub(crate) struct ErrorTextsReworded;

impl ErrorTextsReworded {
    fn reword(text: &str) -> Option<String> {
        if let Some(name) = text
            .strip_prefix("Tool ")
            .and_then(|rest| rest.strip_suffix(" not found"))
        {
            return Some(format!("Unknown tool: {name}"));
        }
        if let Some((name, problem)) = text
            .strip_prefix("Invalid arguments for ")
            .and_then(|rest| rest.split_once(": "))
        {
            return Some(format!("{name}: invalid arguments ({problem})"));
        }
        let rest = text.strip_prefix("extension ")?;
        let (extension, rest) = rest.split_once(" failed ")?;
        let (phase, rest) = rest.split_once(' ')?;
        Some(format!("hook {extension} threw {phase} {rest}"))
    }

    fn reword_result(result: &mut crate::model::ToolResultMessage) {
        if !result.is_error {
            return;
        }
        for block in &mut result.content {
            if let crate::model::ContentBlock::Text { text } = block {
                if let Some(reworded) = Self::reword(text) {
                    *text = reworded;
                }
            }
        }
    }

    fn reword_messages<'m>(messages: impl IntoIterator<Item = &'m mut Message>) {
        for message in messages {
            if let Message::ToolResult(result) = message {
                Self::reword_result(result);
            }
        }
    }
}

impl Bug for ErrorTextsReworded {
    fn effect(&mut self, mut effect: Effect, seam: &mut Seam) {
        use crate::model::EntryBody;
        use crate::runtime::{ObservedEvent, OpValue, Settlement};
        match &mut effect {
            Effect::ModelRequest { request, .. } => Self::reword_messages(&mut request.messages),
            Effect::Hook {
                result: Some(result), ..
            } => Self::reword_result(result),
            Effect::Append { entry, .. } => {
                if let EntryBody::Message { message } = &mut entry.body {
                    Self::reword_messages([message]);
                }
            }
            Effect::Notify { event, .. } => match event {
                ObservedEvent::MessageEnd { message } => Self::reword_messages([message]),
                ObservedEvent::TurnEnd { tool_results, .. } => Self::reword_messages(tool_results),
                ObservedEvent::AgentEnd { messages } => Self::reword_messages(messages),
            },
            Effect::Settled {
                settlement: Settlement::Resolved(OpValue::Run(result)),
                ..
            } => Self::reword_messages(&mut result.messages),
            _ => {}
        }
        seam.emit(effect);
    }
}
