//! The Agent: one canonical transcript and a multi-step loop, as a sans-IO state machine.
//!
//! The agent never talks to a model or a tool itself. `prompt` and every `handle_*` call return
//! an [`AgentStep`] saying what the agent needs next: a model response to its transcript, a
//! tool result for one call, or nothing because the run finished. The runtime wraps these
//! steps with context projection and extension hooks.
//!
//! Loop (Pi's agent loop): before each model request, queued steering messages join the
//! transcript; an assistant message with tool calls has every call executed in order, then the
//! loop continues; when the loop would stop, queued follow-up messages join and it continues.
//! `steps_max` bounds the number of model requests. An abort stops the run at the next step
//! boundary: unfinished tool calls get error results, so a call is never left without one.

use std::collections::VecDeque;

use crate::model::{AssistantMessage, Message, StopReason, ToolCall, ToolResultMessage};

use super::io::{RunReason, RunResult, SignalId};

/// `AgentOptions`: the restored history (owned, so never shared with the caller) and the bound.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub initial_messages: Vec<Message>,
    pub steps_max: u32,
}

/// What the agent needs next.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentStep {
    /// A model response to the transcript as it is now (`Agent::messages`).
    Model { signal: SignalId },
    /// The result of this tool call.
    Tool { call: ToolCall, signal: SignalId },
    /// The run is over.
    Finished(RunResult),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    #[error("agent is already running a prompt")]
    Busy,
    #[error("agent is not waiting for {0}")]
    NotWaiting(&'static str),
}

impl AgentError {
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Busy => "agent.busy",
            AgentError::NotWaiting(_) => "agent.not_waiting",
        }
    }
}

/// A copy of the agent's observable state (`getState()`).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentState {
    pub messages: Vec<Message>,
    pub is_running: bool,
    /// Partial text of the model response being streamed, if any.
    pub streaming_text: Option<String>,
    pub pending_tool_call: Option<String>,
    pub steering_queued: usize,
    pub follow_ups_queued: usize,
}

/// The agent's observable state, borrowed (`state()` is its copy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgentView<'a> {
    pub messages: &'a [Message],
    pub is_running: bool,
    pub streaming_text: Option<&'a str>,
    pub pending_tool_call: Option<&'a str>,
    pub steering_queued: usize,
    pub follow_ups_queued: usize,
}

impl AgentView<'_> {
    pub fn to_state(&self) -> AgentState {
        AgentState {
            messages: self.messages.to_vec(),
            is_running: self.is_running,
            streaming_text: self.streaming_text.map(str::to_string),
            pending_tool_call: self.pending_tool_call.map(str::to_string),
            steering_queued: self.steering_queued,
            follow_ups_queued: self.follow_ups_queued,
        }
    }
}

/// Events delivered to subscribers, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    AgentStart,
    MessageEnd { role: &'static str },
    MessageUpdate { delta: String },
    ToolExecutionStart { call_id: String, tool: String },
    ToolExecutionEnd { call_id: String, is_error: bool },
    AgentEnd { reason: RunReason },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SubscriptionId(pub u32);

#[derive(Debug, Clone)]
enum Phase {
    AwaitingModel { partial: String },
    AwaitingTool { calls: Vec<ToolCall>, index: usize },
}

#[derive(Debug, Clone)]
struct Run {
    signal: SignalId,
    steps: u32,
    aborted: bool,
    phase: Phase,
}

#[derive(Debug, Clone)]
pub struct Agent {
    messages: Vec<Message>,
    steering: VecDeque<Message>,
    follow_ups: VecDeque<Message>,
    steps_max: u32,
    run: Option<Run>,
    events: Vec<AgentEvent>,
    subscribers: Vec<(SubscriptionId, usize)>,
    subscription_next: u32,
}

impl Agent {
    pub fn new(options: AgentOptions) -> Agent {
        Agent {
            messages: options.initial_messages,
            steering: VecDeque::new(),
            follow_ups: VecDeque::new(),
            steps_max: options.steps_max.max(1),
            run: None,
            events: Vec::new(),
            subscribers: Vec::new(),
            subscription_next: 0,
        }
    }

    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    /// Whether the active run's abort signal has fired.
    pub fn is_aborted(&self) -> bool {
        self.run.as_ref().is_some_and(|run| run.aborted)
    }

    /// The canonical transcript (borrowed; `state()` copies).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn state(&self) -> AgentState {
        self.view().to_state()
    }

    /// The observable state, borrowed: what `state()` copies.
    pub fn view(&self) -> AgentView<'_> {
        let (streaming_text, pending_tool_call) = match self.run.as_ref().map(|run| &run.phase) {
            Some(Phase::AwaitingModel { partial }) => (Some(partial.as_str()), None),
            Some(Phase::AwaitingTool { calls, index }) => (None, Some(calls[*index].id.as_str())),
            None => (None, None),
        };
        AgentView {
            messages: &self.messages,
            is_running: self.run.is_some(),
            streaming_text,
            pending_tool_call,
            steering_queued: self.steering.len(),
            follow_ups_queued: self.follow_ups.len(),
        }
    }

    pub fn subscribe(&mut self) -> SubscriptionId {
        let id = SubscriptionId(self.subscription_next);
        self.subscription_next += 1;
        self.subscribers.push((id, self.events.len()));
        id
    }

    pub fn unsubscribe(&mut self, id: SubscriptionId) {
        self.subscribers.retain(|(subscriber, _)| *subscriber != id);
    }

    /// Events since this subscriber last drained, in order.
    pub fn drain_events(&mut self, id: SubscriptionId) -> Vec<AgentEvent> {
        self.take_events(id).to_vec()
    }

    /// `drain_events`, borrowed: the events since this subscriber last drained, which now
    /// count as drained.
    pub fn take_events(&mut self, id: SubscriptionId) -> &[AgentEvent] {
        let Some((_, cursor)) = self.subscribers.iter_mut().find(|(subscriber, _)| *subscriber == id) else {
            return &[];
        };
        let from = std::mem::replace(cursor, self.events.len());
        &self.events[from..]
    }

    fn emit(&mut self, event: AgentEvent) {
        if !self.subscribers.is_empty() {
            self.events.push(event);
        }
    }

    /// Starts a run with a new user message. Rejected while a run is active.
    pub fn prompt(&mut self, user: Message, signal: SignalId) -> Result<AgentStep, AgentError> {
        if self.run.is_some() {
            return Err(AgentError::Busy);
        }
        self.emit(AgentEvent::AgentStart);
        self.push_message(user);
        self.run = Some(Run {
            signal,
            steps: 0,
            aborted: false,
            phase: Phase::AwaitingModel { partial: String::new() },
        });
        Ok(self.request_model())
    }

    /// Queues a message delivered before the next model request.
    pub fn steer(&mut self, message: Message) {
        self.steering.push_back(message);
    }

    /// Queues a message delivered when the run would otherwise stop.
    pub fn follow_up(&mut self, message: Message) {
        self.follow_ups.push_back(message);
    }

    /// Aborts the active run; returns its signal, or `None` when idle.
    pub fn abort(&mut self) -> Option<SignalId> {
        let run = self.run.as_mut()?;
        if run.aborted {
            return None;
        }
        run.aborted = true;
        Some(run.signal)
    }

    pub fn handle_model_chunk(&mut self, delta: &str) -> Result<(), AgentError> {
        match self.run.as_mut().map(|run| &mut run.phase) {
            Some(Phase::AwaitingModel { partial }) => {
                partial.push_str(delta);
                self.emit(AgentEvent::MessageUpdate {
                    delta: delta.to_string(),
                });
                Ok(())
            }
            _ => Err(AgentError::NotWaiting("a model chunk")),
        }
    }

    pub fn handle_model_final(&mut self, message: AssistantMessage, now: u64) -> Result<AgentStep, AgentError> {
        let run = self.run.as_mut().ok_or(AgentError::NotWaiting("a model response"))?;
        if !matches!(run.phase, Phase::AwaitingModel { .. }) {
            return Err(AgentError::NotWaiting("a model response"));
        }
        let stop_reason = message.stop_reason;
        let calls: Vec<ToolCall> = message.tool_calls().into_iter().cloned().collect();
        self.push_message(Message::Assistant(message));
        let run = self.run.as_mut().expect("checked above");
        match stop_reason {
            StopReason::Error => return Ok(self.finish(RunReason::Error)),
            StopReason::Aborted => return Ok(self.finish(RunReason::Aborted)),
            _ if run.aborted => {
                // The abort landed after the last chunk: finish the calls as aborted.
                for call in &calls {
                    self.push_tool_result(ToolResultMessage::error(call, ABORTED_TEXT, now));
                }
                return Ok(self.finish(RunReason::Aborted));
            }
            _ => {}
        }
        if !calls.is_empty() {
            let call = calls[0].clone();
            let signal = run.signal;
            run.phase = Phase::AwaitingTool { calls, index: 0 };
            self.emit(AgentEvent::ToolExecutionStart {
                call_id: call.id.clone(),
                tool: call.name.clone(),
            });
            return Ok(AgentStep::Tool { call, signal });
        }
        if stop_reason == StopReason::Length {
            return Ok(self.finish(RunReason::Length));
        }
        Ok(self.continue_or_stop())
    }

    pub fn handle_tool_result(&mut self, result: ToolResultMessage, now: u64) -> Result<AgentStep, AgentError> {
        let run = self.run.as_mut().ok_or(AgentError::NotWaiting("a tool result"))?;
        let Phase::AwaitingTool { calls, index } = &mut run.phase else {
            return Err(AgentError::NotWaiting("a tool result"));
        };
        *index += 1;
        let next = calls.get(*index).cloned();
        let remaining: Vec<ToolCall> = calls[*index..].to_vec();
        let aborted = run.aborted;
        let signal = run.signal;
        self.emit(AgentEvent::ToolExecutionEnd {
            call_id: result.tool_call_id.clone(),
            is_error: result.is_error,
        });
        self.push_tool_result(result);
        if aborted {
            for call in &remaining {
                self.push_tool_result(ToolResultMessage::error(call, ABORTED_TEXT, now));
            }
            return Ok(self.finish(RunReason::Aborted));
        }
        if let Some(call) = next {
            self.emit(AgentEvent::ToolExecutionStart {
                call_id: call.id.clone(),
                tool: call.name.clone(),
            });
            return Ok(AgentStep::Tool { call, signal });
        }
        Ok(self.continue_or_stop())
    }

    /// After a step's tools, or a final answer: continue with steering or follow-ups, or stop.
    fn continue_or_stop(&mut self) -> AgentStep {
        let run = self.run.as_ref().expect("a run is active");
        let last_had_calls = matches!(run.phase, Phase::AwaitingTool { .. });
        if !last_had_calls && self.steering.is_empty() && self.follow_ups.is_empty() {
            return self.finish(RunReason::Stop);
        }
        if run.steps >= self.steps_max {
            return self.finish(RunReason::MaxSteps);
        }
        if !last_had_calls && self.steering.is_empty() {
            while let Some(message) = self.follow_ups.pop_front() {
                self.push_message(message);
            }
        }
        self.run.as_mut().expect("a run is active").phase = Phase::AwaitingModel { partial: String::new() };
        self.request_model()
    }

    fn request_model(&mut self) -> AgentStep {
        while let Some(message) = self.steering.pop_front() {
            self.push_message(message);
        }
        let run = self.run.as_mut().expect("a run is active");
        run.steps += 1;
        AgentStep::Model { signal: run.signal }
    }

    fn finish(&mut self, reason: RunReason) -> AgentStep {
        let run = self.run.take().expect("a run is active");
        self.emit(AgentEvent::AgentEnd { reason });
        AgentStep::Finished(RunResult {
            reason,
            steps: run.steps,
            messages: self.messages.clone(),
        })
    }

    fn push_tool_result(&mut self, result: ToolResultMessage) {
        self.push_message(Message::ToolResult(result));
    }

    fn push_message(&mut self, message: Message) {
        let role = message.role();
        self.messages.push(message);
        self.emit(AgentEvent::MessageEnd { role });
    }
}

/// The text of the error result a tool call gets when its run was aborted.
pub const ABORTED_TEXT: &str = "Tool execution aborted";
