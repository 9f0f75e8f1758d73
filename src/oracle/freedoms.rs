//! The freedoms: everything the contract leaves open, set aside before two outputs are
//! compared, and nothing else. conformance.md's "Freedoms" section lists them with their
//! reasons; change both together.
//!
//! Always set aside (they are not the runtime's outputs):
//!
//! - **Effect and signal ids.** Outputs are matched by identity ([`super::identity`]); a
//!   signal reads as the first output that carried it, so "the same signal" still compares.
//! - **The model client's fields** of an assistant message (`usage`, `api`, `provider`,
//!   `model`), which describe the client, not the contract.
//!
//! Set aside unless `--raw-divergence` asks for the raw comparison (the seed leaves them open):
//!
//! - **Clock readings.** The timestamps a runtime stamps on user and tool-result messages and on
//!   entries (and in a json mode's output) read as `<clock>`; PERSIST-8 judges them.
//! - **Id choice.** The ids of appended entries, wherever they are named (parents, a reopened
//!   path), read as `<appended N>` by their order of first append; PERSIST-4 judges them.
//! - **Diagnostic texts.** The message of a cause (`{code, message}`) reads as `<diagnostic>`:
//!   the code is the contract, the sentence is the runtime's.
//!
//! And in how outputs are matched ([`super`]):
//!
//! - **The order of independent outputs within one step**: outputs are compared by identity
//!   within the step that issued them.
//! - **When an observer hears of an event**: notifications are compared per observer, in
//!   order, wherever in the run they were issued (nothing waits for an observer, OBSERVE-4).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::protocol::diff::{mask_clock, redact};
use crate::trace::Event;

use super::identity::Namer;

/// What a cause's message reads as when diagnostic texts are set aside.
pub const DIAGNOSTIC: &str = "<diagnostic>";

/// Which freedoms the comparison sets aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freedoms {
    /// Clock readings, id choice and diagnostic texts (off for `--raw-divergence`).
    pub open_choices: bool,
}

impl Freedoms {
    pub const ALL: Freedoms = Freedoms { open_choices: true };
    pub const RAW: Freedoms = Freedoms { open_choices: false };
}

/// Normalizes one side's outputs, in trace order (the appended ids are named as they come).
#[derive(Debug, Default)]
pub struct Normalizer {
    appended: BTreeMap<String, String>,
}

impl Normalizer {
    /// Names an appended entry's id by its order of first append (an output, in trace order).
    pub fn register(&mut self, event: &Event, freedoms: Freedoms) {
        if let (Event::Append { entry, .. }, true) = (event, freedoms.open_choices) {
            let name = format!("<appended {}>", self.appended.len() + 1);
            self.appended.entry(entry.id.clone()).or_insert(name);
        }
    }

    /// The output as the comparison sees it: JSON without its effect id, its signal named by
    /// identity, and the freedoms set aside (the appended ids named so far).
    pub fn output(&self, event: &Event, namer: &Namer, freedoms: Freedoms) -> Value {
        let mut value = serde_json::to_value(event).expect("trace events always serialize");
        if let Value::Object(object) = &mut value {
            object.remove("effect");
            // Whether a subject probes its state is what its adapter declares, not an output of
            // the contract: PERSIST-10 judges what a probe says.
            object.remove("probed");
            let signal = match event {
                Event::ModelRequest { signal, .. } | Event::ToolCall { signal, .. } => namer.signal(*signal),
                _ => None,
            };
            match signal {
                Some(carrier) => {
                    object.insert("signal".into(), Value::String(carrier.to_string()));
                }
                // An abort signal is named by its identity already.
                None => {
                    object.remove("signal");
                }
            }
        }
        redact(&mut value);
        if freedoms.open_choices {
            mask_clock(&mut value);
            if let (Event::Write { text, .. }, Value::Object(object)) = (event, &mut value) {
                if let Ok(mut written) = serde_json::from_str::<Value>(text) {
                    mask_clock(&mut written);
                    object.insert("text".into(), written);
                }
            }
            self.rename_appended(&mut value);
            mask_diagnostics(&mut value);
        }
        value
    }

    fn rename_appended(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Some(name) = self.appended.get(text.as_str()) {
                    *text = name.clone();
                }
            }
            Value::Object(object) => object.values_mut().for_each(|child| self.rename_appended(child)),
            Value::Array(items) => items.iter_mut().for_each(|child| self.rename_appended(child)),
            _ => {}
        }
    }
}

/// Replaces the message of every cause (an object of exactly `code` and `message`).
fn mask_diagnostics(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let cause = object.len() == 2 && object.contains_key("code") && object.contains_key("message");
            if cause {
                object.insert("message".into(), Value::String(DIAGNOSTIC.into()));
            }
            object.values_mut().for_each(mask_diagnostics);
        }
        Value::Array(items) => items.iter_mut().for_each(mask_diagnostics),
        _ => {}
    }
}
