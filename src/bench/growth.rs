//! `agentsim bench --growth`: how the kit's cost grows with the work, each point a child
//! process of this binary whose wall time and peak resident memory are measured.
//!
//! - **Scenario size**: the walk-through repeated 1 to 6 times (N prompts, each with the base's
//!   model script, tool results and hook answers again, so every run has the same shape), each
//!   explored under the random strategy on one thread. Schedules per second show what a longer
//!   run costs; the peak memory what one longer trace holds.
//! - **Exploration length**: the walk-through explored for 10^3 up to 10^6 schedules on one
//!   thread. An exploration keeps counts, not traces, so its peak memory must stay flat.
//!
//! Measured, never asserted: the numbers are the machine's.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::session::{run_measured, ChildRun};

/// The base scenario repeated `times` times: its operations, model steps, tool results, hook
/// answers and observer answers, one copy after another (a text operation's copies are told
/// apart by a suffix). Its `expect` blocks describe one canonical run and are dropped; the rules
/// alone judge an exploration.
pub fn repeated(base: &Value, times: usize) -> Value {
    let mut scenario = base.clone();
    let Some(object) = scenario.as_object_mut() else {
        return scenario;
    };
    object.remove("expect");
    object.remove("schedule");
    object.insert(
        "description".into(),
        Value::String(format!("the base scenario, {times} times")),
    );
    let repeat = |items: &Value, label: bool| -> Value {
        let items = items.as_array().cloned().unwrap_or_default();
        let copies = (0..times).flat_map(|copy| {
            items.iter().cloned().map(move |mut item| {
                if let Some(text) = item.get_mut("text").filter(|_| label && copy > 0) {
                    if let Some(original) = text.as_str() {
                        *text = Value::String(format!("{original} ({})", copy + 1));
                    }
                }
                if let Some(step) = item.as_object_mut() {
                    step.remove("expect");
                }
                item
            })
        });
        Value::Array(copies.collect())
    };
    if let Some(operations) = object.get("operations") {
        let operations = repeat(operations, true);
        object.insert("operations".into(), operations);
    }
    if let Some(model) = object.get("model") {
        let model = repeat(model, false);
        object.insert("model".into(), model);
    }
    for (list, fields) in [
        ("tools", &["results"][..]),
        ("extensions", &["before", "after"][..]),
        ("observers", &["answers"][..]),
    ] {
        let Some(items) = object.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for item in items.iter_mut() {
            for field in fields {
                if let Some(values) = item.get(*field) {
                    let values = repeat(values, false);
                    item[*field] = values;
                }
            }
        }
    }
    scenario
}

/// Runs `agentsim explore FILE --strategy random --seeds SCHEDULES --threads 1` as a child of
/// `binary` and measures it.
pub fn explore_measured(binary: &Path, file: &Path, schedules: u64) -> io::Result<ChildRun> {
    let mut command = Command::new(binary);
    command
        .arg("explore")
        .arg(file)
        .args(["--strategy", "random", "--threads", "1", "--seeds"])
        .arg(schedules.to_string());
    run_measured(command)
}

/// Scenario files written to the system's temporary folder, removed on drop.
pub struct TempScenarios(Vec<PathBuf>);

impl TempScenarios {
    /// Writes `base` repeated 1 to `most` times; the k-th path holds k copies.
    pub fn write(base: &Value, most: usize) -> io::Result<TempScenarios> {
        let mut written = TempScenarios(Vec::new());
        for times in 1..=most {
            let path = std::env::temp_dir().join(format!("agentsim-growth-{}-{times}.json", std::process::id()));
            let text = serde_json::to_string_pretty(&repeated(base, times)).map_err(io::Error::other)?;
            std::fs::write(&path, text)?;
            written.0.push(path);
        }
        Ok(written)
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.0
    }
}

impl Drop for TempScenarios {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_scenario_holds_every_list_again_and_loads() {
        let base: Value =
            serde_json::from_str(&std::fs::read_to_string("scenarios/wiring/walkthrough.json").unwrap()).unwrap();
        let three = repeated(&base, 3);
        let count = |value: &Value| value.as_array().map_or(0, Vec::len);
        assert_eq!(count(&three["operations"]), 3 * count(&base["operations"]));
        assert_eq!(count(&three["model"]), 3 * count(&base["model"]));
        assert_eq!(
            count(&three["tools"][0]["results"]),
            3 * count(&base["tools"][0]["results"])
        );
        assert_eq!(
            count(&three["extensions"][0]["after"]),
            3 * count(&base["extensions"][0]["after"])
        );
        assert!(three.get("expect").is_none());
        let texts: Vec<&str> = three["operations"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|operation| operation["text"].as_str())
            .collect();
        let distinct: std::collections::BTreeSet<&&str> = texts.iter().collect();
        assert_eq!(distinct.len(), texts.len(), "{texts:?}");
        let text = serde_json::to_string(&three).unwrap();
        let loaded = crate::scenario::parse(Path::new("three.json"), &text, crate::check::RULE_IDS);
        assert!(loaded.is_ok(), "{loaded:?}");
    }
}
