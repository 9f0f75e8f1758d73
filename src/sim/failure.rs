//! Why a subject could not be driven: the typed verdicts of a broken run (exit code 3) and of a
//! scenario the subject cannot run (not applicable), each with a stable code.

use crate::runtime::OpId;

/// The subject could not be driven: a protocol breach, a crash, a hang (verdict "broken", exit
/// code 3), or it cannot run this scenario at all (`Unsupported`: "not applicable").
///
/// The variants after `Protocol` come from an external adapter (`protocol::external`);
/// `waiting_for` says what the kit was waiting for, `stderr_tail` holds the last lines the
/// adapter wrote to stderr. Each variant has a stable [`SubjectFailure::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubjectFailure {
    #[error("protocol: {message}")]
    Protocol { message: String },
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
    /// it, see [`SubjectFailure::at_trace_line`]).
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
    #[error("the implementation is not deterministic: two runs of the same scenario, schedule and seed differ at trace line {line:04}: {detail}")]
    Nondeterministic {
        line: usize,
        /// Both runs' lines, each named by its run, and the first differing field.
        detail: String,
    },
    #[error("the implementation does not support `{operation}`: {reason}")]
    Unsupported { operation: String, reason: String },
    /// A breach of the protocol, not a rule's violation: an operation settles exactly once.
    #[error(
        "{op} was settled a second time at trace line {line:04} (first at line {first:04}): an operation settles once"
    )]
    SettledTwice { op: OpId, line: usize, first: usize },
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

impl SubjectFailure {
    /// Names the trace line where a protocol breach found while reading the adapter's answer
    /// would have gone: 1-based, counting the events recorded so far and those of the answer
    /// read before the bad line. Only the scheduler knows the trace; other failures pass.
    pub fn at_trace_line(mut self, line: usize) -> SubjectFailure {
        if let SubjectFailure::Malformed {
            trace_line: trace_line @ None,
            ..
        } = &mut self
        {
            *trace_line = Some(line);
        }
        self
    }

    pub fn code(&self) -> &'static str {
        match self {
            SubjectFailure::Protocol { .. } => "subject.protocol",
            SubjectFailure::Spawn { .. } => "subject.spawn",
            SubjectFailure::BadCommand { .. } => "subject.bad_command",
            SubjectFailure::Crashed { .. } => "subject.crashed",
            SubjectFailure::EarlyExit { .. } => "subject.early_exit",
            SubjectFailure::Timeout { .. } => "subject.timeout",
            SubjectFailure::Garbage { .. } => "subject.garbage",
            SubjectFailure::UnknownMessage { .. } => "subject.unknown_message",
            SubjectFailure::UnknownEffect { .. } => "subject.unknown_effect",
            SubjectFailure::Oversize { .. } => "subject.oversize",
            SubjectFailure::Version { .. } => "subject.version",
            SubjectFailure::Malformed { .. } | SubjectFailure::LineAfterReset { .. } => "subject.malformed",
            SubjectFailure::Nondeterministic { .. } => "subject.nondeterministic",
            SubjectFailure::Unsupported { .. } => "subject.unsupported",
            SubjectFailure::SettledTwice { .. } => "subject.settled_twice",
        }
    }

    /// The last lines the adapter wrote to stderr (empty for the in-process reference).
    pub fn stderr_tail(&self) -> &[String] {
        match self {
            SubjectFailure::BadCommand { stderr_tail, .. }
            | SubjectFailure::Crashed { stderr_tail, .. }
            | SubjectFailure::EarlyExit { stderr_tail, .. }
            | SubjectFailure::Timeout { stderr_tail, .. }
            | SubjectFailure::Garbage { stderr_tail, .. }
            | SubjectFailure::UnknownMessage { stderr_tail, .. }
            | SubjectFailure::UnknownEffect { stderr_tail, .. }
            | SubjectFailure::Oversize { stderr_tail, .. }
            | SubjectFailure::Version { stderr_tail, .. }
            | SubjectFailure::Malformed { stderr_tail, .. }
            | SubjectFailure::LineAfterReset { stderr_tail, .. } => stderr_tail,
            SubjectFailure::Protocol { .. }
            | SubjectFailure::Spawn { .. }
            | SubjectFailure::Nondeterministic { .. }
            | SubjectFailure::Unsupported { .. }
            | SubjectFailure::SettledTwice { .. } => &[],
        }
    }

    /// A failure that is the user's input, not the implementation's (exit code 2): the
    /// adapter command could not be started or found.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, SubjectFailure::Spawn { .. } | SubjectFailure::BadCommand { .. })
    }
}
