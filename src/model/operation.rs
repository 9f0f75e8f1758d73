//! The operations: the calls a caller makes on a Runtime (`prompt`, `flush`, `dispose`, `steer`,
//! `followUp`, `abort`, `runMode`, `runLibrary`), in the one vocabulary every layer speaks.
//!
//! The runtime takes an [`Operation`] as input, the trace records it, a scenario file states it
//! by its [`OperationKind`] and the checkers classify it. Only the adapter protocol spells it
//! again, as its own versioned wire type (`protocol::wire::WireOperation`), converted in one
//! place (`protocol::convert`); a tidy test keeps the two spellings the same.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What kind of call an operation is, without its arguments: the name a scenario file, a trace
/// line, the wire and `hello.unsupported` all use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OperationKind {
    // The order is the one a scenario's error for an unknown kind lists them in.
    Prompt,
    Flush,
    Dispose,
    Steer,
    FollowUp,
    Abort,
    Mode,
    Library,
}

impl OperationKind {
    /// Every kind, in declaration order.
    pub const ALL: [OperationKind; 8] = [
        OperationKind::Prompt,
        OperationKind::Flush,
        OperationKind::Dispose,
        OperationKind::Steer,
        OperationKind::FollowUp,
        OperationKind::Abort,
        OperationKind::Mode,
        OperationKind::Library,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OperationKind::Prompt => "prompt",
            OperationKind::Flush => "flush",
            OperationKind::Dispose => "dispose",
            OperationKind::Steer => "steer",
            OperationKind::FollowUp => "followUp",
            OperationKind::Abort => "abort",
            OperationKind::Mode => "mode",
            OperationKind::Library => "library",
        }
    }

    /// Whether an operation of this kind asks the runtime for an agent run (prompt, mode,
    /// library).
    pub fn is_prompt_like(self) -> bool {
        matches!(
            self,
            OperationKind::Prompt | OperationKind::Mode | OperationKind::Library
        )
    }

    /// Whether an operation of this kind carries a text (every kind but flush, dispose and
    /// abort).
    pub fn takes_text(self) -> bool {
        !matches!(
            self,
            OperationKind::Flush | OperationKind::Dispose | OperationKind::Abort
        )
    }
}

/// The name, padded as the formatter asks (a table's column).
impl fmt::Display for OperationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// One call with its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Operation {
    Prompt {
        text: String,
    },
    Flush,
    Dispose,
    Steer {
        text: String,
    },
    FollowUp {
        text: String,
    },
    Abort,
    /// `runMode(runtime, mode, prompt, io)`; `mode` is checked before any prompt.
    Mode {
        mode: String,
        text: String,
    },
    /// `runLibrary(runtime, prompt)`: the closing exercise's adapter returning `{reason, text}`.
    Library {
        text: String,
    },
}

impl Operation {
    /// The operation of `kind` with its arguments; an argument the kind does not take is
    /// ignored, one it takes and lacks is empty.
    pub fn new(kind: OperationKind, text: Option<&str>, mode: Option<&str>) -> Operation {
        let text = text.unwrap_or_default().to_string();
        match kind {
            OperationKind::Prompt => Operation::Prompt { text },
            OperationKind::Flush => Operation::Flush,
            OperationKind::Dispose => Operation::Dispose,
            OperationKind::Steer => Operation::Steer { text },
            OperationKind::FollowUp => Operation::FollowUp { text },
            OperationKind::Abort => Operation::Abort,
            OperationKind::Mode => Operation::Mode {
                mode: mode.unwrap_or_default().to_string(),
                text,
            },
            OperationKind::Library => Operation::Library { text },
        }
    }

    pub fn kind(&self) -> OperationKind {
        match self {
            Operation::Prompt { .. } => OperationKind::Prompt,
            Operation::Flush => OperationKind::Flush,
            Operation::Dispose => OperationKind::Dispose,
            Operation::Steer { .. } => OperationKind::Steer,
            Operation::FollowUp { .. } => OperationKind::FollowUp,
            Operation::Abort => OperationKind::Abort,
            Operation::Mode { .. } => OperationKind::Mode,
            Operation::Library { .. } => OperationKind::Library,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Whether the operation asks the runtime for an agent run (prompt, mode, library).
    pub fn is_prompt_like(&self) -> bool {
        self.kind().is_prompt_like()
    }

    /// The text of an operation that carries one.
    pub fn text(&self) -> Option<&str> {
        match self {
            Operation::Prompt { text }
            | Operation::Steer { text }
            | Operation::FollowUp { text }
            | Operation::Mode { text, .. }
            | Operation::Library { text } => Some(text),
            Operation::Flush | Operation::Dispose | Operation::Abort => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_built_from_its_kind_is_of_that_kind_and_carries_text_as_the_kind_says() {
        for kind in OperationKind::ALL {
            let operation = Operation::new(kind, Some("hi"), Some("print"));
            assert_eq!(operation.kind(), kind);
            assert_eq!(operation.text().is_some(), kind.takes_text(), "{kind}");
            let serialized = serde_json::to_value(&operation).expect("serializes");
            assert_eq!(serialized["op"], kind.name());
            assert_eq!(serde_json::to_value(kind).expect("serializes"), kind.name());
        }
    }
}
