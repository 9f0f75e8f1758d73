//! Extension event observers: which agent events each observer is told of, and when.
//!
//! Real runtimes let extensions subscribe to agent events (Pi: `pi.on("message_end", handler)`;
//! the handler may be async). The reference tells its observers of three events, in Pi's
//! shapes: `message_end` for every message that joins a run's transcript (the prompt, a steer
//! or follow-up, a response, a tool result), `turn_end` when a response and the results of its
//! tool calls are complete, and `agent_end` when the run ends, with the run's messages. Each
//! notification is one effect per subscribed observer, in observer order; the world completes
//! it when its handler returns (or throws).
//!
//! An observer only watches. The reference never waits for a notification: what it stores,
//! when it stores it and when a prompt settles are the same whatever the observers' latency,
//! and a handler that throws changes nothing (conformance.md, OBSERVE).

use crate::model::Message;

use super::io::{ObservedEvent, ObserverSpec};

/// What has been announced of the transcript so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Observers {
    specs: Vec<ObserverSpec>,
    /// Messages of the transcript already announced (restored messages count as announced).
    announced: usize,
    /// Where the active run's messages start.
    run_start: usize,
    /// The open turn: its response and the tool results so far.
    turn: Option<(Message, Vec<Message>)>,
}

impl Observers {
    pub fn new(specs: Vec<ObserverSpec>, restored: usize) -> Observers {
        Observers {
            specs,
            announced: restored,
            run_start: restored,
            turn: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// A run starts on a transcript of `len` messages.
    pub fn run_started(&mut self, len: usize) {
        self.announced = len;
        self.run_start = len;
        self.turn = None;
    }

    /// The notifications for the messages added since the last call (then, when the agent is
    /// `requesting` the model again, the `turn_end` of the turn before; when the run `ended`,
    /// its last `turn_end` and its `agent_end`): `(observer, event)` in order.
    pub fn announce(&mut self, messages: &[Message], requesting: bool, ended: bool) -> Vec<(String, ObservedEvent)> {
        if self.specs.is_empty() {
            return Vec::new();
        }
        let mut events: Vec<ObservedEvent> = Vec::new();
        for message in messages.iter().skip(self.announced) {
            match message {
                Message::Assistant(_) => {
                    self.close_turn(&mut events);
                    events.push(ObservedEvent::MessageEnd {
                        message: message.clone(),
                    });
                    self.turn = Some((message.clone(), Vec::new()));
                }
                Message::ToolResult(_) => {
                    events.push(ObservedEvent::MessageEnd {
                        message: message.clone(),
                    });
                    if let Some((_, results)) = self.turn.as_mut() {
                        results.push(message.clone());
                    }
                }
                Message::User(_) => {
                    self.close_turn(&mut events);
                    events.push(ObservedEvent::MessageEnd {
                        message: message.clone(),
                    });
                }
            }
        }
        self.announced = self.announced.max(messages.len());
        if requesting {
            self.close_turn(&mut events);
        }
        if ended {
            self.close_turn(&mut events);
            let run = messages.get(self.run_start..).unwrap_or_default().to_vec();
            events.push(ObservedEvent::AgentEnd { messages: run });
        }
        events
            .into_iter()
            .flat_map(|event| {
                let kind = event.kind();
                self.specs
                    .iter()
                    .filter(move |spec| spec.events.contains(&kind))
                    .map(move |spec| (spec.name.clone(), event.clone()))
            })
            .collect()
    }

    fn close_turn(&mut self, events: &mut Vec<ObservedEvent>) {
        if let Some((message, tool_results)) = self.turn.take() {
            events.push(ObservedEvent::TurnEnd { message, tool_results });
        }
    }
}
