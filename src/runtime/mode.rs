//! Output modes (Lab 13.4): `interactive`, `print` and `json` are three encodings of one
//! `Runtime.prompt()` result, plus the library adapter returning `{reason, text}`.
//!
//! A mode validates its name before any prompt, calls prompt exactly once, writes once, and
//! returns a write error unchanged; the session is never rolled back for an output error.

use serde_json::json;

use crate::model::Message;

use super::io::RunResult;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Interactive,
    Print,
    Json,
}

impl Mode {
    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "interactive" => Some(Mode::Interactive),
            "print" => Some(Mode::Print),
            "json" => Some(Mode::Json),
            _ => None,
        }
    }

    /// The text this mode writes for a result.
    pub fn render(self, result: &RunResult) -> String {
        match self {
            Mode::Interactive | Mode::Print => result.final_assistant_text(),
            Mode::Json => {
                let messages: Vec<&Message> = result.messages.iter().collect();
                let value = json!({
                    "reason": result.reason.as_str(),
                    "steps": result.steps,
                    "messages": messages,
                });
                let mut text = serde_json::to_string(&value).expect("messages always serialize");
                text.push('\n');
                text
            }
        }
    }
}
