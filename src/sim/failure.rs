//! Why a subject could not be driven: the typed verdicts of a broken run (exit code 3) and of a
//! scenario the subject cannot run (not applicable), each with a stable code.
//!
//! A subject in another process fails in ways of its own (a crash, a hang, a line that breaks
//! the protocol); the layer that drives it (`protocol`) defines them and hands them over as
//! one [`DriverFailure`], so `sim` never imports the layers above it.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::runtime::OpId;

/// The failure of whatever drives a subject in another process (`protocol::AdapterFailure`):
/// what `sim` and the reports need of it.
pub trait DriverFailure: fmt::Debug + fmt::Display + Send + Sync + Any {
    /// The stable code (`subject.crashed`, ...).
    fn code(&self) -> &'static str;
    /// The last lines the process wrote to stderr.
    fn stderr_tail(&self) -> &[String];
    /// The user's input, not the implementation's (exit code 2): the command could not start.
    fn is_bad_input(&self) -> bool;
    /// This failure placed at a trace line, when it is one that names where it happened and
    /// does not yet (see [`SubjectFailure::at_trace_line`]).
    fn at_trace_line(&self, line: usize) -> Option<Arc<dyn DriverFailure>>;
    /// For the driver's own code to get its variant back.
    fn as_any(&self) -> &dyn Any;
}

/// The subject could not be driven: a protocol breach, a crash, a hang (verdict "broken", exit
/// code 3), or it cannot run this scenario at all (`Unsupported`: "not applicable").
/// Each variant has a stable [`SubjectFailure::code`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SubjectFailure {
    #[error("protocol: {message}")]
    Protocol { message: String },
    /// The process behind the subject failed (an adapter's crash, hang or breach).
    #[error("{0}")]
    Driver(Arc<dyn DriverFailure>),
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

impl PartialEq for SubjectFailure {
    fn eq(&self, other: &SubjectFailure) -> bool {
        match (self, other) {
            (SubjectFailure::Protocol { message: a }, SubjectFailure::Protocol { message: b }) => a == b,
            (SubjectFailure::Driver(a), SubjectFailure::Driver(b)) => {
                a.code() == b.code() && a.to_string() == b.to_string() && a.stderr_tail() == b.stderr_tail()
            }
            (
                SubjectFailure::Nondeterministic { line: a, detail: x },
                SubjectFailure::Nondeterministic { line: b, detail: y },
            ) => a == b && x == y,
            (
                SubjectFailure::Unsupported {
                    operation: a,
                    reason: x,
                },
                SubjectFailure::Unsupported {
                    operation: b,
                    reason: y,
                },
            ) => a == b && x == y,
            (
                SubjectFailure::SettledTwice {
                    op: a,
                    line: x,
                    first: m,
                },
                SubjectFailure::SettledTwice {
                    op: b,
                    line: y,
                    first: n,
                },
            ) => a == b && x == y && m == n,
            _ => false,
        }
    }
}

impl Eq for SubjectFailure {}

impl SubjectFailure {
    /// Names the trace line where a protocol breach found while reading the adapter's answer
    /// would have gone: 1-based, counting the events recorded so far and those of the answer
    /// read before the bad line. Only the scheduler knows the trace; other failures pass.
    pub fn at_trace_line(self, line: usize) -> SubjectFailure {
        match &self {
            SubjectFailure::Driver(driver) => driver.at_trace_line(line).map(SubjectFailure::Driver).unwrap_or(self),
            _ => self,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            SubjectFailure::Protocol { .. } => "subject.protocol",
            SubjectFailure::Driver(driver) => driver.code(),
            SubjectFailure::Nondeterministic { .. } => "subject.nondeterministic",
            SubjectFailure::Unsupported { .. } => "subject.unsupported",
            SubjectFailure::SettledTwice { .. } => "subject.settled_twice",
        }
    }

    /// The last lines the adapter wrote to stderr (empty for the in-process reference).
    pub fn stderr_tail(&self) -> &[String] {
        match self {
            SubjectFailure::Driver(driver) => driver.stderr_tail(),
            _ => &[],
        }
    }

    /// A failure that is the user's input, not the implementation's (exit code 2): the
    /// adapter command could not be started or found.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, SubjectFailure::Driver(driver) if driver.is_bad_input())
    }
}
