//! `Runtime.control`: the Agent's controls, forwarded; there is no prompt here, so new work
//! enters only through the queue and nothing skips persistence.

use crate::model::Message;
use crate::runtime::{AgentEvent, AgentState, AgentView, Effect, Runtime, SubscriptionId};

/// `Runtime.control`: forwards to the one Agent; exposes no prompt.
pub struct Control<'a> {
    pub(super) runtime: &'a mut Runtime,
}

impl<'a> Control<'a> {
    pub fn state(&self) -> AgentState {
        self.runtime.agent.state()
    }

    /// `state()`, borrowed for as long as the runtime is.
    pub fn view(self) -> AgentView<'a> {
        let runtime: &'a Runtime = self.runtime;
        runtime.agent.view()
    }

    pub fn subscribe(&mut self) -> SubscriptionId {
        self.runtime.agent.subscribe()
    }

    pub fn unsubscribe(&mut self, id: SubscriptionId) {
        self.runtime.agent.unsubscribe(id);
    }

    pub fn drain_events(&mut self, id: SubscriptionId) -> Vec<AgentEvent> {
        self.runtime.agent.drain_events(id)
    }

    /// `drain_events`, borrowed for as long as the runtime is.
    pub fn take_events(self, id: SubscriptionId) -> &'a [AgentEvent] {
        self.runtime.agent.take_events(id)
    }

    pub fn steer(&mut self, text: String) {
        let message = Message::user(text, self.runtime.ids_and_clock.now());
        self.runtime.agent.steer(message);
    }

    pub fn follow_up(&mut self, text: String) {
        let message = Message::user(text, self.runtime.ids_and_clock.now());
        self.runtime.agent.follow_up(message);
    }

    /// Fires the active run's abort signal; nothing happens when no run is active.
    pub fn abort(&mut self) {
        if let Some(signal) = self.runtime.agent.abort() {
            self.runtime.effects.push_back(Effect::AbortSignal { signal });
        }
    }
}
