//! Interleaving pairs: which operation arrived while which effect was in flight, and which
//! answer came back while an older effect still waited.
//!
//! Rule situations ([`super::situations`]) are chosen rule by rule; a bug in a window no rule's
//! situation names passes them all. The pairs are the space itself: every operation kind times
//! every in-flight state the contract distinguishes (a model stream before or after its first
//! chunk, a before hook, an after hook, a core tool, the first, a middle or the last append of a
//! run, a mode's write, an observer's notification, a prompt queued behind the run), plus the
//! answer orders the store and the sinks can take (an append answered while an older write or
//! notification waits, and the reverse). `explore --coverage` counts the traces that reach each
//! pair and fails on one no trace reached, except the answer orders the contract rules out
//! ([`AnswerOrder::excluded`], shown with the reason). A detector reads only the [`Timeline`].

use std::fmt;

use crate::model::OperationKind;
use crate::trace::Event;

use super::situations::{open_at, queued_at};
use super::timeline::{Line, Timeline};

/// The operation kinds, in the order the matrix prints them.
pub const OPERATIONS: [OperationKind; 8] = [
    OperationKind::Prompt,
    OperationKind::Mode,
    OperationKind::Library,
    OperationKind::Flush,
    OperationKind::Dispose,
    OperationKind::Steer,
    OperationKind::FollowUp,
    OperationKind::Abort,
];

/// What can be in flight when an operation arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InFlight {
    /// A model request whose stream has not sent its first chunk.
    StreamBeforeChunk,
    /// A model request whose stream has sent a chunk and not completed.
    StreamAfterChunk,
    BeforeHook,
    AfterHook,
    Tool,
    /// The first append of a run (its only one included).
    FirstAppend,
    /// An append of a run that is neither its first nor its last.
    MiddleAppend,
    /// The last append of a run (its only one included).
    LastAppend,
    /// A mode's write to its sink.
    ModeWrite,
    /// An observer's notification.
    Notification,
    /// A prompt-like operation waiting behind the active run.
    Queued,
}

impl InFlight {
    pub const ALL: [InFlight; 11] = [
        InFlight::StreamBeforeChunk,
        InFlight::StreamAfterChunk,
        InFlight::BeforeHook,
        InFlight::AfterHook,
        InFlight::Tool,
        InFlight::FirstAppend,
        InFlight::MiddleAppend,
        InFlight::LastAppend,
        InFlight::ModeWrite,
        InFlight::Notification,
        InFlight::Queued,
    ];

    /// The column name of the matrix.
    pub fn name(self) -> &'static str {
        match self {
            InFlight::StreamBeforeChunk => "stream<chunk",
            InFlight::StreamAfterChunk => "stream>chunk",
            InFlight::BeforeHook => "before-hook",
            InFlight::AfterHook => "after-hook",
            InFlight::Tool => "tool",
            InFlight::FirstAppend => "append-first",
            InFlight::MiddleAppend => "append-middle",
            InFlight::LastAppend => "append-last",
            InFlight::ModeWrite => "write",
            InFlight::Notification => "notify",
            InFlight::Queued => "queued",
        }
    }
}

/// An answer that came back while an older effect of another kind still waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerOrder {
    AppendPastWrite,
    AppendPastNotification,
    WritePastAppend,
    NotificationPastAppend,
}

impl AnswerOrder {
    pub const ALL: [AnswerOrder; 4] = [
        AnswerOrder::AppendPastWrite,
        AnswerOrder::AppendPastNotification,
        AnswerOrder::WritePastAppend,
        AnswerOrder::NotificationPastAppend,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AnswerOrder::AppendPastWrite => "an append answered while an older write waits",
            AnswerOrder::AppendPastNotification => "an append answered while an older notification waits",
            AnswerOrder::WritePastAppend => "a write answered while an older append waits",
            AnswerOrder::NotificationPastAppend => "a notification answered while an older append waits",
        }
    }

    /// Why no conforming runtime reaches this order, for the orders the contract rules out;
    /// they are counted and shown, never owed.
    pub fn excluded(self) -> Option<&'static str> {
        match self {
            AnswerOrder::WritePastAppend => Some(
                "a mode writes the result of its prompt, which resolves only after the store accepted its last entry (PERSIST-6, §13.4), and runs are serial (QUEUE-1)",
            ),
            AnswerOrder::NotificationPastAppend => Some(
                "a run is told to its observers before its suffix is appended (PERSIST-7: the runtime appends after the run), and the next run starts only once every append was accepted (QUEUE-1)",
            ),
            AnswerOrder::AppendPastWrite | AnswerOrder::AppendPastNotification => None,
        }
    }
}

/// One pair of the space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pair {
    /// An operation of this kind delivered while `state` was in flight.
    Delivery {
        operation: OperationKind,
        state: InFlight,
    },
    Answer(AnswerOrder),
}

impl Pair {
    /// Why the contract rules this pair out, when it does: it is shown, never owed.
    pub fn excluded(&self) -> Option<&'static str> {
        match self {
            Pair::Answer(order) => order.excluded(),
            Pair::Delivery { .. } => None,
        }
    }
}

impl fmt::Display for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pair::Delivery { operation, state } => write!(f, "{operation} while {}", state.name()),
            Pair::Answer(order) => f.write_str(order.name()),
        }
    }
}

/// Every pair, operations by rows of in-flight states, then the answer orders.
pub fn pairs() -> Vec<Pair> {
    let mut pairs: Vec<Pair> = OPERATIONS
        .iter()
        .flat_map(|&operation| {
            InFlight::ALL
                .iter()
                .map(move |&state| Pair::Delivery { operation, state })
        })
        .collect();
    pairs.extend(AnswerOrder::ALL.iter().map(|&order| Pair::Answer(order)));
    pairs
}

/// The number of pairs ([`pairs`]`().len()`).
pub const PAIRS: usize = OPERATIONS.len() * InFlight::ALL.len() + AnswerOrder::ALL.len();

/// The in-flight states that hold at `at`.
pub fn in_flight_at(timeline: &Timeline<'_>, at: Line) -> Vec<InFlight> {
    let mut states = Vec::new();
    let streams = timeline
        .requests
        .iter()
        .filter(|request| open_at(request.line, request.response.map(|(line, _)| line), at));
    for request in streams {
        let chunked = timeline.events[request.line..at]
            .iter()
            .any(|event| matches!(event, Event::ModelChunk { effect, .. } if *effect == request.effect));
        states.push(if chunked {
            InFlight::StreamAfterChunk
        } else {
            InFlight::StreamBeforeChunk
        });
    }
    for hook in &timeline.hooks {
        if open_at(hook.line, hook.answer.map(|(line, _)| line), at) {
            states.push(match hook.phase {
                crate::runtime::HookPhase::Before => InFlight::BeforeHook,
                crate::runtime::HookPhase::After => InFlight::AfterHook,
            });
        }
    }
    if timeline
        .tool_calls
        .iter()
        .any(|call| open_at(call.line, call.answer.map(|(line, _)| line), at))
    {
        states.push(InFlight::Tool);
    }
    for append in &timeline.appends {
        if !open_at(append.line, append.answer.map(|(line, _)| line), at) {
            continue;
        }
        let Some(op) = append.op else { continue };
        let of_run = timeline.appends_of(op);
        let index = of_run.iter().position(|other| other.line == append.line);
        if index == Some(0) {
            states.push(InFlight::FirstAppend);
        }
        if index == Some(of_run.len() - 1) {
            states.push(InFlight::LastAppend);
        }
        if index.is_some_and(|index| index > 0 && index + 1 < of_run.len()) {
            states.push(InFlight::MiddleAppend);
        }
    }
    if timeline
        .writes
        .iter()
        .any(|write| open_at(write.line, write.answer.map(|(line, _)| line), at))
    {
        states.push(InFlight::ModeWrite);
    }
    if timeline
        .notifications
        .iter()
        .any(|notification| open_at(notification.line, notification.answer.map(|(line, _)| line), at))
    {
        states.push(InFlight::Notification);
    }
    if queued_at(timeline, at) > 0 {
        states.push(InFlight::Queued);
    }
    states
}

/// Whether an effect of `answered` came back while an older one of `waiting` was still open.
fn answered_past(answered: &[(Line, Option<Line>)], waiting: &[(Line, Option<Line>)]) -> bool {
    answered.iter().any(|&(issued, answer)| {
        answer.is_some_and(|answer| {
            waiting
                .iter()
                .any(|&(older, older_answer)| older < issued && open_at(older, older_answer, answer))
        })
    })
}

fn answer_order_reached(timeline: &Timeline<'_>, order: AnswerOrder) -> bool {
    let appends: Vec<_> = timeline
        .appends
        .iter()
        .map(|append| (append.line, append.answer.map(|(line, _)| line)))
        .collect();
    let writes: Vec<_> = timeline
        .writes
        .iter()
        .map(|write| (write.line, write.answer.map(|(line, _)| line)))
        .collect();
    let notifications: Vec<_> = timeline
        .notifications
        .iter()
        .map(|notification| (notification.line, notification.answer.map(|(line, _)| line)))
        .collect();
    match order {
        AnswerOrder::AppendPastWrite => answered_past(&appends, &writes),
        AnswerOrder::AppendPastNotification => answered_past(&appends, &notifications),
        AnswerOrder::WritePastAppend => answered_past(&writes, &appends),
        AnswerOrder::NotificationPastAppend => answered_past(&notifications, &appends),
    }
}

/// The pairs `timeline` reaches, as indexes into [`pairs`].
pub fn reached(timeline: &Timeline<'_>) -> Vec<usize> {
    let mut hit = [false; PAIRS];
    let states = InFlight::ALL.len();
    for info in &timeline.ops {
        let Some(row) = OPERATIONS.iter().position(|kind| *kind == info.operation.kind()) else {
            continue;
        };
        for state in in_flight_at(timeline, info.delivered) {
            let column = InFlight::ALL
                .iter()
                .position(|other| *other == state)
                .expect("a listed state");
            hit[row * states + column] = true;
        }
    }
    for (index, order) in AnswerOrder::ALL.iter().enumerate() {
        if answer_order_reached(timeline, *order) {
            hit[OPERATIONS.len() * states + index] = true;
        }
    }
    hit.iter()
        .enumerate()
        .filter(|(_, hit)| **hit)
        .map(|(index, _)| index)
        .collect()
}
