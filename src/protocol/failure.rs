//! An adapter process that could not be driven: its crash, hang, silence or breach of the
//! protocol, each a typed verdict with a stable code and the last lines it wrote to stderr.
//!
//! `sim` knows a subject's failure only as [`SubjectFailure`]; these are the adapter
//! process's own, built by [`super::external`] and wrapped once, by `From`, into
//! `SubjectFailure::Driver`. A caller that needs the variant back (the runner blames a
//! reset's breach on the run it ended) asks [`AdapterFailure::of`].

use std::sync::Arc;

use crate::sim::{DriverFailure, SubjectFailure};

/// The adapter could not be driven (verdict "broken", exit code 3), or, for `Spawn` and
/// `BadCommand`, could not be started at all (bad input, exit code 2). `waiting_for` says what
/// the kit was waiting for, `stderr_tail` holds the last lines the adapter wrote to stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterFailure {
    #[error("the adapter command could not be started: {message}")]
    Spawn { message: String },
    #[error("the adapter command was not found or is not executable ({status})")]
    BadCommand { status: String, stderr_tail: Vec<String> },
    #[error("the adapter crashed ({status}) while the kit waited for {waiting_for}")]
    Crashed {
        status: String,
        waiting_for: String,
        stderr_tail: Vec<String>,
    },
    #[error("the adapter exited (status 0) while the kit waited for {waiting_for}")]
    EarlyExit {
        waiting_for: String,
        stderr_tail: Vec<String>,
    },
    #[error("the adapter did not answer within {waited_ms} ms while the kit waited for {waiting_for}")]
    Timeout {
        waited_ms: u64,
        waiting_for: String,
        stderr_tail: Vec<String>,
    },
    #[error("the adapter wrote a line that is not a JSON object ({problem}): {line}")]
    Garbage {
        line: String,
        problem: String,
        stderr_tail: Vec<String>,
    },
    #[error("the adapter wrote a message of unknown type {type_name}")]
    UnknownMessage {
        type_name: String,
        stderr_tail: Vec<String>,
    },
    #[error("the adapter issued a bad effect: {message}")]
    UnknownEffect { message: String, stderr_tail: Vec<String> },
    #[error("the adapter wrote a line longer than {limit} bytes")]
    Oversize { limit: usize, stderr_tail: Vec<String> },
    #[error("the adapter speaks protocol {got}; this kit speaks protocols 1 and 2")]
    Version { got: String, stderr_tail: Vec<String> },
    /// `trace_line`: where the offending line would have gone in the trace (the scheduler sets
    /// it, see [`AdapterFailure::at_trace_line`]).
    #[error("the adapter broke the protocol{}: {message}", trace_line_text(.trace_line))]
    Malformed {
        message: String,
        trace_line: Option<usize>,
        stderr_tail: Vec<String>,
    },
    /// Protocol 2: a line after the `idle` that answered a `reset`, found when the kit read the
    /// answer to the next `start` or ended the process. It is the breach of that `reset`, so of
    /// the run the reset ended: `after` names its scenario when the runner named the run.
    #[error(
        "the adapter broke the protocol: after the `idle` that answered the `reset` sent after {}, it wrote {line}; `reset` is answered by exactly one `idle`, and the next line must answer the next `start`",
        reset_text(.after)
    )]
    LineAfterReset {
        after: Option<String>,
        line: String,
        stderr_tail: Vec<String>,
    },
}

fn reset_text(after: &Option<String>) -> String {
    match after {
        Some(name) => format!("scenario `{name}`"),
        None => "the previous run".to_string(),
    }
}

fn trace_line_text(line: &Option<usize>) -> String {
    line.map(|line| format!(" at trace line {line:04}")).unwrap_or_default()
}

impl AdapterFailure {
    /// The adapter failure inside `failure`, if it is one.
    pub fn of(failure: &SubjectFailure) -> Option<&AdapterFailure> {
        match failure {
            SubjectFailure::Driver(driver) => driver.as_any().downcast_ref(),
            _ => None,
        }
    }

    /// For a breach of a reset: the run the reset ended, as the runner named it (`None`
    /// inside when it did not).
    pub fn reset_breached(failure: &SubjectFailure) -> Option<Option<&str>> {
        match AdapterFailure::of(failure)? {
            AdapterFailure::LineAfterReset { after, .. } => Some(after.as_deref()),
            _ => None,
        }
    }
}

impl DriverFailure for AdapterFailure {
    fn code(&self) -> &'static str {
        match self {
            AdapterFailure::Spawn { .. } => "subject.spawn",
            AdapterFailure::BadCommand { .. } => "subject.bad_command",
            AdapterFailure::Crashed { .. } => "subject.crashed",
            AdapterFailure::EarlyExit { .. } => "subject.early_exit",
            AdapterFailure::Timeout { .. } => "subject.timeout",
            AdapterFailure::Garbage { .. } => "subject.garbage",
            AdapterFailure::UnknownMessage { .. } => "subject.unknown_message",
            AdapterFailure::UnknownEffect { .. } => "subject.unknown_effect",
            AdapterFailure::Oversize { .. } => "subject.oversize",
            AdapterFailure::Version { .. } => "subject.version",
            AdapterFailure::Malformed { .. } | AdapterFailure::LineAfterReset { .. } => "subject.malformed",
        }
    }

    fn stderr_tail(&self) -> &[String] {
        match self {
            AdapterFailure::Spawn { .. } => &[],
            AdapterFailure::BadCommand { stderr_tail, .. }
            | AdapterFailure::Crashed { stderr_tail, .. }
            | AdapterFailure::EarlyExit { stderr_tail, .. }
            | AdapterFailure::Timeout { stderr_tail, .. }
            | AdapterFailure::Garbage { stderr_tail, .. }
            | AdapterFailure::UnknownMessage { stderr_tail, .. }
            | AdapterFailure::UnknownEffect { stderr_tail, .. }
            | AdapterFailure::Oversize { stderr_tail, .. }
            | AdapterFailure::Version { stderr_tail, .. }
            | AdapterFailure::Malformed { stderr_tail, .. }
            | AdapterFailure::LineAfterReset { stderr_tail, .. } => stderr_tail,
        }
    }

    fn is_bad_input(&self) -> bool {
        matches!(self, AdapterFailure::Spawn { .. } | AdapterFailure::BadCommand { .. })
    }

    /// Names the trace line where a breach found while reading the adapter's answer would
    /// have gone (the scheduler knows it, see [`SubjectFailure::at_trace_line`]).
    fn at_trace_line(&self, line: usize) -> Option<Arc<dyn DriverFailure>> {
        match self {
            AdapterFailure::Malformed {
                message,
                trace_line: None,
                stderr_tail,
            } => Some(Arc::new(AdapterFailure::Malformed {
                message: message.clone(),
                trace_line: Some(line),
                stderr_tail: stderr_tail.clone(),
            })),
            _ => None,
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl From<AdapterFailure> for SubjectFailure {
    fn from(failure: AdapterFailure) -> SubjectFailure {
        SubjectFailure::Driver(Arc::new(failure))
    }
}
