//! How a [`Timeline`] is derived from a trace, in one pass over its events: each operation's
//! delivery and settlement, each effect with the answer that completes it, and the attribution
//! of every effect to the run that issued it.

use crate::model::{path_to_borrowed, Operation, SessionEntry};
use crate::runtime::{EffectId, OpId, SignalId};
use crate::scenario::Scenario;
use crate::trace::{Event, Trace};

use super::{AppendInfo, HookInfo, NotifyInfo, OpInfo, RequestInfo, Shared, Timeline, ToolCallInfo, WriteInfo};

/// An answer finds only an effect of its own kind.
use super::EffectKind as Kind;

/// Each issued effect's index in its kind's list, by effect and kind, sorted, with whether an
/// answer has claimed it: an answer finds only an effect of its own kind. Effect ids grow
/// through a run, so an insertion is nearly always a push, and the sorted list costs a
/// fraction of a map's nodes.
#[derive(Default)]
struct EffectIndex(Vec<((EffectId, Kind), usize, bool)>);

impl EffectIndex {
    /// Records that `effect`, of `kind`, is at `index` of its kind's list, after any earlier
    /// issue of the same id.
    fn insert(&mut self, effect: EffectId, kind: Kind, index: usize) {
        let at = self.0.partition_point(|(key, _, _)| *key <= (effect, kind));
        self.0.insert(at, ((effect, kind), index, false));
    }

    /// The issue an answer to `effect`, of `kind`, completes: the oldest unanswered issue of
    /// that id, as the worlds answer their pending effects (and as [`Trace::applied_store`]
    /// reads them); the latest issue when every one was answered already.
    fn answer(&mut self, effect: EffectId, kind: Kind) -> Option<usize> {
        let first = self.0.partition_point(|(key, _, _)| *key < (effect, kind));
        let issues = &mut self.0[first..];
        let same = issues.iter().take_while(|(key, _, _)| *key == (effect, kind)).count();
        let issues = &mut issues[..same];
        let (_, index, answered) = match issues.iter().position(|(_, _, answered)| !answered) {
            Some(oldest) => &mut issues[oldest],
            None => issues.last_mut()?,
        };
        *answered = true;
        Some(*index)
    }
}

/// How many events of each listed kind a trace holds.
#[derive(Default)]
struct KindCounts {
    ops: usize,
    requests: usize,
    tool_calls: usize,
    hooks: usize,
    appends: usize,
    writes: usize,
    notifications: usize,
    aborts: usize,
}

impl KindCounts {
    fn of(events: &[Event]) -> KindCounts {
        let mut counts = KindCounts::default();
        for event in events {
            let count = match event {
                Event::Deliver { .. } => &mut counts.ops,
                Event::ModelRequest { .. } => &mut counts.requests,
                Event::ToolCall { .. } => &mut counts.tool_calls,
                Event::Hook { .. } => &mut counts.hooks,
                Event::Append { .. } => &mut counts.appends,
                Event::Write { .. } => &mut counts.writes,
                Event::Notify { .. } => &mut counts.notifications,
                Event::AbortSignal { .. } => &mut counts.aborts,
                _ => continue,
            };
            *count += 1;
        }
        counts
    }
}

impl<'a> Timeline<'a> {
    pub fn new(scenario: &'a Scenario, trace: &'a Trace, store: &'a [&'a SessionEntry]) -> Timeline<'a> {
        let (initial_path, leaf_path_error) = match &scenario.config.active_leaf_id {
            Some(leaf) => match path_to_borrowed(&scenario.session, leaf) {
                Ok(path) => (Some(path), None),
                Err(error) => (None, Some(error)),
            },
            None => (scenario.session.is_empty().then(Vec::new), None),
        };
        // Each list sized once: counting the events costs less than growing the lists.
        let counts = KindCounts::of(&trace.events);
        let mut timeline = Timeline {
            scenario,
            events: &trace.events,
            store,
            restored: None,
            probed: false,
            states: Vec::new(),
            restore_failed: None,
            ops: Vec::with_capacity(counts.ops),
            requests: Vec::with_capacity(counts.requests),
            tool_calls: Vec::with_capacity(counts.tool_calls),
            hooks: Vec::with_capacity(counts.hooks),
            appends: Vec::with_capacity(counts.appends),
            writes: Vec::with_capacity(counts.writes),
            notifications: Vec::with_capacity(counts.notifications),
            aborts: Vec::with_capacity(counts.aborts),
            end: None,
            initial_path,
            leaf_path_error,
            op_positions: std::collections::BTreeMap::new(),
            reference: None,
            shared: Shared::default(),
        };
        timeline.derive();
        timeline
    }

    /// The timeline with the first difference from the reference fed the same inputs (REF-1).
    pub fn with_reference(mut self, difference: Option<crate::check::reference::ReferenceDifference>) -> Timeline<'a> {
        self.reference = difference;
        self
    }

    /// The first difference from the reference fed the same inputs, when it was computed.
    pub fn reference(&self) -> Option<&crate::check::reference::ReferenceDifference> {
        self.reference.as_ref()
    }

    /// Mode operations that write more than once before they settle (a mode that streams its
    /// run's events as it goes): their run does not end at their first write, but at their
    /// settlement. A write goes to the earliest mode delivered and not settled that has not
    /// written yet (a mode's write follows its run), else to the earliest one not settled.
    fn streaming_modes(&self) -> Vec<OpId> {
        let mut open: Vec<(OpId, usize)> = Vec::new();
        let mut streaming = Vec::new();
        for event in self.events {
            match event {
                Event::Deliver {
                    op,
                    operation: Operation::Mode { .. },
                } => open.push((*op, 0)),
                Event::Write { .. } => {
                    let first_write = open.iter().position(|(_, writes)| *writes == 0);
                    if let Some((op, writes)) = first_write.or((!open.is_empty()).then_some(0)).map(|at| &mut open[at])
                    {
                        *writes += 1;
                        if *writes == 2 {
                            streaming.push(*op);
                        }
                    }
                }
                Event::Settled { op, .. } => open.retain(|(other, _)| other != op),
                _ => {}
            }
        }
        streaming
    }

    fn derive(&mut self) {
        // A mode that writes once ends its run at that write; one that streams, at its
        // settlement (MODE-2 judges the writes themselves).
        let streaming = self.streaming_modes();
        // Prompt-like operations whose run has not finished, in delivery order.
        let mut unfinished: Vec<OpId> = Vec::with_capacity(self.ops.capacity());
        let mut by_effect = EffectIndex(Vec::with_capacity(
            self.requests.capacity()
                + self.tool_calls.capacity()
                + self.hooks.capacity()
                + self.appends.capacity()
                + self.writes.capacity()
                + self.notifications.capacity(),
        ));
        let events: &'a [Event] = self.events;
        for (line, event) in events.iter().enumerate() {
            match event {
                Event::Restored { leaf, messages, probed } => {
                    self.restored = Some((line, leaf.as_deref(), *messages));
                    self.probed = *probed;
                }
                Event::State { leaf, persisted } => self.states.push((line, leaf.as_deref(), *persisted)),
                Event::RestoreFailed { cause } => self.restore_failed = Some((line, cause)),
                Event::Deliver { op, operation } => {
                    if operation.is_prompt_like() {
                        unfinished.push(*op);
                    }
                    self.op_positions.entry(*op).or_insert(self.ops.len());
                    self.ops.push(OpInfo {
                        op: *op,
                        operation,
                        delivered: line,
                        settled: None,
                        run_finished: None,
                        signal: None,
                    });
                }
                Event::ModelRequest {
                    effect,
                    signal,
                    system_prompt,
                    messages,
                    tools,
                } => {
                    let op = self.claim(*signal, &unfinished);
                    by_effect.insert(*effect, Kind::Request, self.requests.len());
                    self.requests.push(RequestInfo {
                        line,
                        effect: *effect,
                        signal: *signal,
                        system_prompt: system_prompt.as_deref(),
                        messages,
                        tools,
                        op,
                        response: None,
                    });
                }
                Event::ModelResponse { effect, message } => {
                    if let Some(index) = by_effect.answer(*effect, Kind::Request) {
                        self.requests[index].response = Some((line, message));
                    }
                }
                Event::ModelChunk { .. } => {}
                Event::ToolCall { effect, signal, call } => {
                    let op = self.claim(*signal, &unfinished);
                    by_effect.insert(*effect, Kind::Tool, self.tool_calls.len());
                    self.tool_calls.push(ToolCallInfo {
                        line,
                        effect: *effect,
                        signal: *signal,
                        call,
                        op,
                        answer: None,
                    });
                }
                Event::ToolAnswer { effect, answer } => {
                    if let Some(index) = by_effect.answer(*effect, Kind::Tool) {
                        self.tool_calls[index].answer = Some((line, answer));
                    }
                }
                Event::Hook {
                    effect,
                    extension,
                    phase,
                    call,
                    result,
                } => {
                    by_effect.insert(*effect, Kind::Hook, self.hooks.len());
                    self.hooks.push(HookInfo {
                        line,
                        effect: *effect,
                        extension,
                        phase: *phase,
                        call,
                        result: result.as_ref(),
                        op: unfinished.first().copied(),
                        answer: None,
                    });
                }
                Event::HookAnswer { effect, answer } => {
                    if let Some(index) = by_effect.answer(*effect, Kind::Hook) {
                        self.hooks[index].answer = Some((line, answer));
                    }
                }
                Event::Append { effect, entry } => {
                    by_effect.insert(*effect, Kind::Append, self.appends.len());
                    self.appends.push(AppendInfo {
                        line,
                        effect: *effect,
                        entry,
                        op: unfinished.first().copied(),
                        answer: None,
                    });
                }
                Event::AppendAnswer { effect, answer } => {
                    if let Some(index) = by_effect.answer(*effect, Kind::Append) {
                        self.appends[index].answer = Some((line, answer));
                    }
                }
                Event::Write { effect, text } => {
                    let op = unfinished.first().copied();
                    by_effect.insert(*effect, Kind::Write, self.writes.len());
                    self.writes.push(WriteInfo {
                        line,
                        effect: *effect,
                        text,
                        op,
                        answer: None,
                    });
                    if let Some(op) = op.filter(|op| !streaming.contains(op)) {
                        unfinished.retain(|other| *other != op);
                        if let Some(info) = self.op_mut(op) {
                            info.run_finished.get_or_insert(line);
                        }
                    }
                }
                Event::WriteAnswer { effect, error } => {
                    if let Some(index) = by_effect.answer(*effect, Kind::Write) {
                        self.writes[index].answer = Some((line, error.as_ref()));
                    }
                }
                Event::AbortSignal { signal } => self.aborts.push((line, *signal)),
                Event::Settled { op, settlement } => {
                    unfinished.retain(|other| other != op);
                    if let Some(info) = self.op_mut(*op) {
                        if info.settled.is_none() {
                            info.settled = Some((line, settlement));
                        }
                        info.run_finished.get_or_insert(line);
                    }
                }
                Event::End { pending, .. } => self.end = Some((line, pending)),
                // The networked world's own events: the durability checkers read them directly.
                Event::Notify {
                    effect,
                    observer,
                    agent_event,
                } => {
                    by_effect.insert(*effect, Kind::Notify, self.notifications.len());
                    self.notifications.push(NotifyInfo {
                        line,
                        effect: *effect,
                        observer,
                        event: agent_event,
                        op: unfinished.first().copied(),
                        answer: None,
                    });
                }
                Event::NotifyAnswer { effect, answer } => {
                    if let Some(index) = by_effect.answer(*effect, Kind::Notify) {
                        self.notifications[index].answer = Some((line, answer));
                    }
                }
                Event::Net { .. } | Event::StoreOpened { .. } | Event::Reopened { .. } => {}
            }
        }
    }

    /// The operation running now; it records the first signal its run used.
    fn claim(&mut self, signal: SignalId, unfinished: &[OpId]) -> Option<OpId> {
        let op = unfinished.first().copied()?;
        if let Some(info) = self.op_mut(op) {
            info.signal.get_or_insert(signal);
        }
        Some(op)
    }
}

#[cfg(test)]
mod tests {
    use super::Timeline;
    use crate::model::{Message, SessionEntry};
    use crate::runtime::EffectId;
    use crate::trace::{AppendAnswer, Event, Trace};

    /// An answer to a reissued effect id completes its oldest unanswered issue, as the worlds
    /// answer their pending effects and as `Trace::applied_store` reads the trace; an answer of
    /// another kind claims nothing of it.
    #[test]
    fn an_answer_completes_the_oldest_unanswered_issue_of_its_id() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/wiring/walkthrough.json");
        let scenario = crate::scenario::load(&path, "walkthrough", crate::check::RULE_IDS)
            .expect("the walk-through loads")
            .scenario;
        let append = |id: &str| Event::Append {
            effect: EffectId(7),
            entry: SessionEntry::message(id, None, "2026-01-01T00:00:00.000Z", Message::user(id, 0)),
        };
        let answer = || Event::AppendAnswer {
            effect: EffectId(7),
            answer: AppendAnswer::Ok,
        };
        let trace = Trace {
            events: vec![
                append("first"),
                append("second"),
                Event::WriteAnswer {
                    effect: EffectId(7),
                    error: None,
                },
                answer(),
            ],
        };
        // The line each append's answer is at, as the timeline attributes them.
        let answered = |trace: &Trace| -> Vec<Option<usize>> {
            Timeline::new(&scenario, trace, &[])
                .appends
                .iter()
                .map(|append| append.answer.map(|(line, _)| line))
                .collect()
        };
        assert_eq!(answered(&trace), [Some(3), None]);

        let mut trace = trace;
        trace.events.push(answer());
        assert_eq!(answered(&trace), [Some(3), Some(4)]);
    }
}
