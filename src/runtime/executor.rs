//! The one tool executor, wrapped by the extension host (Lab 13.3):
//! every extension's before hook in order -> the core executor -> every after hook in order.
//!
//! Before hooks may allow, deny with a reason (an error result; the core tool and the after
//! hooks do not run), or rewrite the arguments (later hooks and the core see the rewrite). A
//! before hook that throws denies the call (fail closed). The core executor turns an unknown
//! tool or invalid arguments into an error result without running anything. After hooks may
//! observe or rewrite the result; an after hook that throws turns the result into an error
//! naming the extension.

use crate::model::{validate_arguments, ContentBlock, ToolCall, ToolRegistry, ToolResultMessage};

use super::agent::ABORTED_TEXT;
use super::io::{HookOutcome, HookPhase, ToolOutcome};

/// What the executor needs next for the call in flight.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutorStep {
    Hook {
        extension: String,
        phase: HookPhase,
        call: ToolCall,
        result: Option<ToolResultMessage>,
    },
    Core {
        call: ToolCall,
    },
    Done(ToolResultMessage),
}

#[derive(Debug, Clone)]
enum Stage {
    Before(usize),
    Core,
    After(usize, ToolResultMessage),
}

/// One tool call going through hooks and the core executor.
#[derive(Debug, Clone)]
pub struct Execution {
    call: ToolCall,
    stage: Stage,
}

impl Execution {
    /// Starts the call; the first step is the first before hook (or the core, without hooks).
    pub fn start(
        call: ToolCall,
        extensions: &[String],
        tools: &ToolRegistry,
        now: &mut dyn FnMut() -> u64,
    ) -> (Execution, ExecutorStep) {
        let mut execution = Execution {
            call,
            stage: Stage::Before(0),
        };
        let step = execution.next_before(0, extensions, tools, now);
        (execution, step)
    }

    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    pub fn is_core(&self) -> bool {
        matches!(self.stage, Stage::Core)
    }

    pub fn handle_hook(
        &mut self,
        outcome: HookOutcome,
        extensions: &[String],
        tools: &ToolRegistry,
        now: &mut dyn FnMut() -> u64,
    ) -> Result<ExecutorStep, &'static str> {
        match self.stage.clone() {
            Stage::Before(index) => {
                let extension = &extensions[index];
                match outcome {
                    HookOutcome::Allow => Ok(self.next_before(index + 1, extensions, tools, now)),
                    HookOutcome::RewriteArguments { arguments } => {
                        self.call.arguments = arguments;
                        Ok(self.next_before(index + 1, extensions, tools, now))
                    }
                    HookOutcome::Deny { reason } => {
                        Ok(ExecutorStep::Done(ToolResultMessage::error(&self.call, reason, now())))
                    }
                    HookOutcome::Threw { message } => {
                        let text = format!("extension {extension} failed before {}: {message}", self.call.name);
                        Ok(ExecutorStep::Done(ToolResultMessage::error(&self.call, text, now())))
                    }
                    HookOutcome::Observe | HookOutcome::RewriteResult { .. } => {
                        Err("a before hook answers allow, deny, rewrite-arguments or throw")
                    }
                }
            }
            Stage::After(index, mut result) => {
                let extension = &extensions[index];
                match outcome {
                    HookOutcome::Observe => {}
                    HookOutcome::RewriteResult { content, is_error } => {
                        result.content = content;
                        result.is_error = is_error;
                    }
                    HookOutcome::Threw { message } => {
                        let text = format!("extension {extension} failed after {}: {message}", self.call.name);
                        result.content = vec![ContentBlock::text(text)];
                        result.is_error = true;
                    }
                    HookOutcome::Allow | HookOutcome::Deny { .. } | HookOutcome::RewriteArguments { .. } => {
                        return Err("an after hook answers observe, rewrite-result or throw");
                    }
                }
                Ok(self.next_after(index + 1, result, extensions))
            }
            Stage::Core => Err("the call is waiting for its core tool, not a hook"),
        }
    }

    pub fn handle_core(
        &mut self,
        outcome: ToolOutcome,
        extensions: &[String],
        now: &mut dyn FnMut() -> u64,
    ) -> Result<ExecutorStep, &'static str> {
        if !self.is_core() {
            return Err("the call is waiting for a hook, not its core tool");
        }
        let timestamp = now();
        let result = match outcome {
            ToolOutcome::Ok {
                content,
                details,
                is_error,
            } => ToolResultMessage {
                tool_call_id: self.call.id.clone(),
                tool_name: self.call.name.clone(),
                content,
                details,
                is_error,
                timestamp,
            },
            ToolOutcome::Threw { message } => ToolResultMessage::error(&self.call, message, timestamp),
            ToolOutcome::Aborted => ToolResultMessage::error(&self.call, ABORTED_TEXT, timestamp),
        };
        Ok(self.next_after(0, result, extensions))
    }

    fn next_before(
        &mut self,
        index: usize,
        extensions: &[String],
        tools: &ToolRegistry,
        now: &mut dyn FnMut() -> u64,
    ) -> ExecutorStep {
        if let Some(extension) = extensions.get(index) {
            self.stage = Stage::Before(index);
            return ExecutorStep::Hook {
                extension: extension.clone(),
                phase: HookPhase::Before,
                call: self.call.clone(),
                result: None,
            };
        }
        // The core executor: `executeToolCall(call, tools)`.
        let rejection = match tools.get(&self.call.name) {
            None => Some(format!("Tool {} not found", self.call.name)),
            Some(spec) => validate_arguments(&spec.parameters, &self.call.arguments)
                .err()
                .map(|problem| format!("Invalid arguments for {}: {problem}", self.call.name)),
        };
        match rejection {
            Some(text) => {
                let result = ToolResultMessage::error(&self.call, text, now());
                self.next_after(0, result, extensions)
            }
            None => {
                self.stage = Stage::Core;
                ExecutorStep::Core {
                    call: self.call.clone(),
                }
            }
        }
    }

    fn next_after(&mut self, index: usize, result: ToolResultMessage, extensions: &[String]) -> ExecutorStep {
        match extensions.get(index) {
            Some(extension) => {
                self.stage = Stage::After(index, result.clone());
                ExecutorStep::Hook {
                    extension: extension.clone(),
                    phase: HookPhase::After,
                    call: self.call.clone(),
                    result: Some(result),
                }
            }
            None => ExecutorStep::Done(result),
        }
    }
}
