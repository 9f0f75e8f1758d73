//! The fault model: which faults the world can inject, and what a correct runtime must do.
//!
//! | fault (scenario `faults`)        | what happens                         | a correct runtime     |
//! |----------------------------------|--------------------------------------|-----------------------|
//! | append `reject`                  | the entry is not stored; error       | poisons with the cause; rejects the prompt, the queued and every later prompt/flush with it; no further model or store effect; no retry |
//! | append `appliedThenFail`         | the entry IS stored; error reported (ack lost) | the same as reject: it cannot know, so it must not retry; the stored tree stays valid |
//! | append `late`                    | stored; the answer is held until `until` holds | keeps the leaf where it was until the answer; resolves nothing early |
//! | write error (output sink)        | a mode's output fails after the store committed | returns the sink's error unchanged; no rollback |
//! | model `error` step               | the response has stopReason `error`  | ends the run with reason `error`; persists the suffix |
//! | model tool call, unknown or bad arguments | - | an error tool result; the core tool does not run |
//! | tool `throw`                     | the tool throws                      | an error tool result; the run goes on |
//! | tool `hang`                      | finishes only when its signal fires  | abort reaches it through the run's one signal |
//! | hook `deny` / `throw` (before)   | the call is blocked                  | an error tool result; the core tool does not run |
//! | broken session tree              | duplicate id, missing parent, cycle  | restore rejects with a diagnostic |
//!
//! These are the plan's types, as a scenario file gives them; `sim::fault` plays them.

use serde::{Deserialize, Serialize};

use crate::runtime::Cause;

use super::After;

/// The written fault plan (the module documentation says what each fault means).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultPlan {
    #[serde(default)]
    pub appends: Vec<AppendFault>,
    #[serde(default)]
    pub writes: Vec<WriteFault>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendFault {
    /// The 1-based index of the append, counted over the whole run.
    pub at: u32,
    pub fault: AppendFaultKind,
    #[serde(default, deserialize_with = "strict_cause::optional")]
    pub error: Option<Cause>,
    /// For `late`: the completion is enabled only once this holds.
    #[serde(default)]
    pub until: Option<After>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AppendFaultKind {
    /// Rejected and not applied.
    Reject,
    /// Applied, then reported failed: the acknowledgement was lost.
    AppliedThenFail,
    /// Accepted, but the answer is held back until `until` holds.
    Late,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFault {
    pub at: u32,
    #[serde(deserialize_with = "strict_cause::required")]
    pub error: Cause,
}

/// A fault's `error` read strictly: `code` and `message`, nothing else (`Cause` itself is the
/// runtime's and reads leniently).
mod strict_cause {
    use serde::{Deserialize, Deserializer};

    use crate::runtime::Cause;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct StrictCause {
        code: String,
        message: String,
    }

    pub fn required<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Cause, D::Error> {
        StrictCause::deserialize(deserializer).map(|cause| Cause::new(cause.code, cause.message))
    }

    pub fn optional<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Cause>, D::Error> {
        Option::<StrictCause>::deserialize(deserializer)
            .map(|cause| cause.map(|cause| Cause::new(cause.code, cause.message)))
    }
}

/// The default cause of an append fault without `error`.
pub fn default_disk_error() -> Cause {
    Cause::new("diskError", "the store failed to write the entry")
}
