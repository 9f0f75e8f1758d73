//! `agentsim bench --growth`: how the kit's cost grows with the work, each point a child
//! process of this binary whose wall time and peak resident memory are measured.
//!
//! - **Scenario size**: the walk-through repeated 1 to 6 times (N prompts, each with the base's
//!   model script, tool results and hook answers again, so every run has the same shape), each
//!   explored under the random strategy on one thread. Schedules per second show what a longer
//!   run costs; the peak memory what one longer trace holds.
//! - **Exploration length**: the walk-through explored for 10^3 up to 10^6 schedules on one
//!   thread. An exploration keeps counts, not traces, so its peak memory must stay flat.
//! - **One run's length**: the walk-through repeated up to 10,000 operations, each size run once
//!   on its canonical schedule (`agentsim run FILE`). Each model request carries the whole
//!   context, so what a run's requests carry grows with the square of its prompts; the cost per
//!   message carried must stay flat, and a size whose requests could carry more than
//!   [`crate::limits::CONTEXT_MESSAGES_MAX`] is refused at load (exit 2).
//!
//! Measured, never asserted: the numbers are the machine's.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::session::{run_measured, ChildRun};

/// The base scenario repeated `times` times: its operations, model steps, tool results, hook
/// answers and observer answers, one copy after another (a text operation's copies are told
/// apart by a suffix). Its `expect` blocks describe one canonical run and are dropped; the rules
/// alone judge an exploration.
pub fn repeated(base: &Value, times: usize) -> Value {
    let mut scenario = skeleton(base, times);
    for list in repeated_lists(base) {
        if let (Some(items), Some(slot)) = (base.pointer(&list.pointer), scenario.pointer_mut(&list.pointer)) {
            *slot = Value::Array(list.copies(items, times).collect());
        }
    }
    scenario
}

/// Writes [`repeated`]`(base, times)` to `path` as compact JSON, one item at a time, never
/// holding the grown scenario: the process that measures children stays as small as it was (a
/// child's peak memory counts its parent's at the spawn).
pub fn write_repeated(base: &Value, times: usize, path: &Path) -> io::Result<()> {
    let lists = repeated_lists(base);
    let mut scenario = skeleton(base, times);
    let marker = |index: usize| format!("\u{1}agentsim-repeated-list-{index}\u{1}");
    for (index, list) in lists.iter().enumerate() {
        if let Some(slot) = scenario.pointer_mut(&list.pointer) {
            *slot = Value::String(marker(index));
        }
    }
    let text = serde_json::to_string(&scenario).map_err(io::Error::other)?;
    // Each list's place in the text, in the text's order.
    let mut places: Vec<(usize, usize, usize)> = Vec::new();
    for (index, _) in lists.iter().enumerate() {
        let quoted = serde_json::to_string(&marker(index)).map_err(io::Error::other)?;
        if let Some(at) = text.find(&quoted) {
            places.push((at, at + quoted.len(), index));
        }
    }
    places.sort_unstable();
    let mut out = io::BufWriter::new(std::fs::File::create(path)?);
    let mut written = 0;
    for (start, end, index) in places {
        out.write_all(&text.as_bytes()[written..start])?;
        out.write_all(b"[")?;
        let list = &lists[index];
        let items = base.pointer(&list.pointer).cloned().unwrap_or(Value::Null);
        for (position, item) in list.copies(&items, times).enumerate() {
            if position > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut out, &item).map_err(io::Error::other)?;
        }
        out.write_all(b"]")?;
        written = end;
    }
    out.write_all(&text.as_bytes()[written..])?;
    out.flush()
}

/// The base without its `expect` and `schedule`, described as repeated `times` times; its
/// lists are the base's.
fn skeleton(base: &Value, times: usize) -> Value {
    let mut scenario = base.clone();
    if let Some(object) = scenario.as_object_mut() {
        object.remove("expect");
        object.remove("schedule");
        object.insert(
            "description".into(),
            Value::String(format!("the base scenario, {times} times")),
        );
    }
    scenario
}

/// A list a copy of the base repeats: where it is (a JSON pointer), and whether its copies'
/// texts are told apart.
struct RepeatedList {
    pointer: String,
    label: bool,
}

impl RepeatedList {
    /// The items of `items` (the list in the base), `times` times over.
    fn copies<'i>(&self, items: &'i Value, times: usize) -> impl Iterator<Item = Value> + 'i {
        let label = self.label;
        let items = items.as_array().map_or(&[][..], Vec::as_slice);
        (0..times).flat_map(move |copy| {
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
        })
    }
}

/// The lists of `base` a copy repeats: operations, model steps, tools' results, extensions'
/// hook answers, observers' answers.
fn repeated_lists(base: &Value) -> Vec<RepeatedList> {
    let mut lists = Vec::new();
    for (list, label) in [("operations", true), ("model", false)] {
        if base.get(list).is_some() {
            lists.push(RepeatedList {
                pointer: format!("/{list}"),
                label,
            });
        }
    }
    for (list, fields) in [
        ("tools", &["results"][..]),
        ("extensions", &["before", "after"][..]),
        ("observers", &["answers"][..]),
    ] {
        let Some(items) = base.get(list).and_then(Value::as_array) else {
            continue;
        };
        for (index, item) in items.iter().enumerate() {
            for field in fields {
                if item.get(*field).is_some() {
                    lists.push(RepeatedList {
                        pointer: format!("/{list}/{index}/{field}"),
                        label: false,
                    });
                }
            }
        }
    }
    lists
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

/// Runs `agentsim run FILE` (the canonical schedule, once) as a child of `binary` and measures it.
pub fn run_once_measured(binary: &Path, file: &Path) -> io::Result<ChildRun> {
    let mut command = Command::new(binary);
    command.arg("run").arg(file);
    run_measured(command)
}

/// Whether `scenario` loads: within every limit, the bound on what its requests carry
/// included.
pub fn admitted(scenario: &Value) -> bool {
    let Ok(text) = serde_json::to_string(scenario) else {
        return false;
    };
    text.len() as u64 <= crate::limits::FILE_BYTES_MAX
        && crate::scenario::parse(Path::new("grown.json"), &text, crate::check::RULE_IDS).is_ok()
}

/// The copies of `base` whose runs `bench --growth` measures: those of 1, 10, 100, 1,000 and
/// 10,000 operations, the most that load and the one copy more (the first refused); sorted.
/// The most is found by doubling, then bisection, so that no size much over it is ever built:
/// the measuring process stays small (a child's peak memory counts its parent's at the spawn).
pub fn run_sizes(base: &Value) -> Vec<usize> {
    let operations = base["operations"].as_array().map_or(0, Vec::len).max(1);
    let most = 10_000 / operations;
    let mut sizes: Vec<usize> = [1, 10, 100, 1_000, 10_000]
        .iter()
        .map(|target| (target / operations).max(1))
        .collect();
    if admitted(&repeated(base, 1)) {
        // [loads, refused): doubled until refused (or past `most`), then halved.
        let (mut loads, mut refused) = (1, 2);
        while refused <= most && admitted(&repeated(base, refused)) {
            loads = refused;
            refused *= 2;
        }
        while refused - loads > 1 {
            let middle = loads + (refused - loads) / 2;
            if admitted(&repeated(base, middle)) {
                loads = middle;
            } else {
                refused = middle;
            }
        }
        sizes.push(loads);
        if refused <= most {
            sizes.push(refused);
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// How many messages the model requests of `scenario`'s canonical run on the reference carry
/// in all; `None` when it does not load.
pub fn messages_carried(scenario: &Value) -> Option<u64> {
    let text = serde_json::to_string(scenario).ok()?;
    let path = Path::new("grown.json");
    let loaded = crate::scenario::LoadedScenario {
        path: path.to_path_buf(),
        name: "grown".into(),
        scenario: crate::scenario::parse(path, &text, crate::check::RULE_IDS).ok()?,
    };
    let report = crate::run::Run::of(&loaded)
        .seeded(crate::sim::StrategyKind::Scripted, 0)
        .on(&crate::implementation::Implementation::reference())
        .execute(&loaded);
    let outcome = report.outcome?;
    let carried = outcome.trace.events.iter().map(|event| match event {
        crate::trace::Event::ModelRequest { messages, .. } => messages.len() as u64,
        _ => 0,
    });
    Some(carried.sum())
}

/// Scenario files written to the system's temporary folder, removed on drop.
pub struct TempScenarios(Vec<PathBuf>);

impl TempScenarios {
    /// Writes `base` repeated 1 to `most` times; the k-th path holds k copies.
    pub fn write(base: &Value, most: usize) -> io::Result<TempScenarios> {
        TempScenarios::write_sizes(base, &(1..=most).collect::<Vec<_>>())
    }

    /// Writes `base` repeated each of `copies` times, in that order.
    pub fn write_sizes(base: &Value, copies: &[usize]) -> io::Result<TempScenarios> {
        let mut written = TempScenarios(Vec::new());
        for times in copies {
            let path = std::env::temp_dir().join(format!("agentsim-growth-{}-{times}.json", std::process::id()));
            write_repeated(base, *times, &path)?;
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

    /// The sizes a run's growth is measured at reach the bound on what requests carry: the
    /// walk-through (one operation a copy) at the powers of ten, the most copies that load and
    /// the first refused.
    #[test]
    fn run_sizes_end_at_the_first_size_refused() {
        let base: Value =
            serde_json::from_str(&std::fs::read_to_string("scenarios/wiring/walkthrough.json").unwrap()).unwrap();
        let sizes = run_sizes(&base);
        assert_eq!(sizes, [1, 10, 100, 364, 365, 1_000, 10_000]);
        assert!(admitted(&repeated(&base, 364)));
        assert!(!admitted(&repeated(&base, 365)));
        // Four messages a prompt: each request carries the session's two, then what came before.
        assert_eq!(messages_carried(&repeated(&base, 2)), Some(3 + 5 + 7 + 9));
    }

    /// The file written one item at a time holds the scenario `repeated` builds.
    #[test]
    fn a_repeated_scenario_written_item_by_item_is_the_one_built() {
        let base: Value =
            serde_json::from_str(&std::fs::read_to_string("scenarios/wiring/walkthrough.json").unwrap()).unwrap();
        let path = std::env::temp_dir().join(format!("agentsim-growth-written-{}.json", std::process::id()));
        write_repeated(&base, 3, &path).unwrap();
        let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(written, repeated(&base, 3));
    }
}
