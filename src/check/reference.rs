//! REF-1: the whole trace, judged against the reference fed the same inputs.
//!
//! The runner replays the world's side of the trace on the reference ([`crate::oracle`]) and
//! hands the first difference to the timeline ([`Timeline::with_reference`]); this checker turns
//! it into a violation of the clause its kind names. A difference is a verdict only where no
//! other rule explains it: [`super::check_timeline`] drops REF-1's violation when another rule
//! fires, and the difference is then that rule's evidence (the report's divergence).

use super::{Timeline, Violation};

/// How an output of the implementation differs from the reference's (`crate::oracle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DifferenceKind {
    /// The reference issued it in this step; the implementation did not.
    Missing,
    /// The implementation issued it in this step (or gave the world an input the reference
    /// cannot take); the reference did not.
    Extra,
    /// Both issued it; a field differs.
    Different,
}

impl DifferenceKind {
    pub fn word(self) -> &'static str {
        match self {
            DifferenceKind::Missing => "missing",
            DifferenceKind::Extra => "extra",
            DifferenceKind::Different => "different",
        }
    }
}

/// The oracle's first difference, as the checker reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceDifference {
    pub kind: DifferenceKind,
    /// The 1-based trace line of the implementation's output (for a missing one, the last
    /// line of the step it should have been in).
    pub line: usize,
    pub message: String,
}

pub fn same_outputs_as_the_reference_on_the_same_inputs(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some(difference) = timeline.reference() else {
        return Vec::new();
    };
    let clause = match difference.kind {
        DifferenceKind::Missing => "REF-1.a",
        DifferenceKind::Extra => "REF-1.b",
        DifferenceKind::Different => "REF-1.c",
    };
    let line = difference.line.clamp(1, timeline.events.len().max(1));
    vec![Violation::new(clause, &[line - 1], difference.message.clone())]
}
