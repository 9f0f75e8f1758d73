//! Shrinking a failing schedule to a minimal scenario with its schedule pinned.
//!
//! Exploration finds a failure as `(scenario, strategy, seed)`: replayable, but rarely minimal.
//! Like Hypothesis, the shrinker works on the choice sequence the run took and on the scenario
//! itself, greedily, keeping any change after which the same rule is still the root cause (the
//! violation evident first, `check::cause`):
//!
//! 1. operations removed, latest first, and `after` conditions dropped;
//! 2. store and sink faults removed;
//! 3. model responses the run never asked for removed;
//! 4. the choice sequence cut short (the scheduler takes choice 0 past its end) and each
//!    remaining choice lowered toward 0, the canonical pick.
//!
//! Passes repeat until none makes progress or the run budget is spent. The result is an
//! ordinary scenario file with `schedule` pinned and the scenario's own `expect` blocks
//! removed (they describe the original's canonical schedule), naming the failing rule: `run`
//! and `replay` reproduce the failure from the file alone, and it can be committed under
//! `scenarios/regressions/`. The shrinker is deterministic: the same failure shrinks to the
//! same bytes.

use std::path::Path;

use serde_json::Value;

use crate::check::{self, RULE_IDS};
use crate::implementation::Implementation;
use crate::scenario::{self, LoadedScenario, Scenario};
use crate::sim::{make_strategy, simulate_with, Replay, StrategyKind};

/// Runs (schedules tried) one shrink may spend.
pub const RUNS_MAX: usize = 4_000;

/// How big a failing case is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub operations: usize,
    pub faults: usize,
    /// Steps of the pinned schedule, up to its last non-zero choice.
    pub choices: usize,
    /// Choices that differ from the canonical pick (0).
    pub nonzero_choices: usize,
}

impl Size {
    /// The order the shrinker descends: fewer operations, then fewer faults, then a shorter
    /// schedule, then earlier choices. A structural cut may cost choices (an operation whose
    /// `after` was dropped is delivered by the schedule instead), never the other way round.
    pub fn key(&self, choices: &[usize]) -> (usize, usize, usize, usize) {
        (self.operations, self.faults, self.choices, choices.iter().sum())
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} operations, {} faults, {} choices ({} non-zero)",
            self.operations, self.faults, self.choices, self.nonzero_choices
        )
    }
}

/// A shrunk failure.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The scenario file's JSON, schedule pinned.
    pub scenario: Value,
    pub rule: String,
    pub before: Size,
    pub after: Size,
    /// Schedules run while shrinking.
    pub runs: usize,
}

/// Why a failure could not be shrunk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShrinkError {
    #[error("{0}: cannot read the scenario file again: {1}")]
    Read(String, String),
    #[error("the schedule does not fail {0} when replayed")]
    NotFailing(String),
}

/// The failing case the shrinker works on.
struct Case<'f> {
    rule: &'f str,
    /// The rules that judge (`--rules`, `--level`): the root is the first of their violations.
    selection: &'f check::Selection,
    implementation: &'f Implementation,
    runs: usize,
}

impl Case<'_> {
    /// The choices the run took when `value` with `choices` still fails the rule.
    fn fails(&mut self, value: &Value, choices: &[usize]) -> Option<Vec<usize>> {
        if self.runs >= RUNS_MAX {
            return None;
        }
        self.runs += 1;
        let text = serde_json::to_string(value).ok()?;
        let scenario: Scenario = scenario::parse(Path::new("shrunk.json"), &text, RULE_IDS).ok()?;
        let mut subject = self.implementation.subject();
        let outcome = simulate_with(&scenario, subject.as_mut(), &mut Replay::new(choices.to_vec()), false).ok()?;
        // The rule must stay the root cause (the violation evident first), not merely fail
        // somewhere: the shrunk file is a witness of the same cause.
        let mut violations = crate::oracle::check_with_reference(&scenario, &outcome.trace, &outcome.stored(&scenario));
        violations.retain(|violation| self.selection.judges(&violation.rule));
        if !violations.iter().any(|violation| violation.rule == self.rule) {
            return None;
        }
        let ordered = check::cause::order_by_cause(&scenario, &outcome.trace, &outcome.stored(&scenario), violations);
        (ordered.first().map(|violation| violation.rule.as_str()) == Some(self.rule))
            .then(|| trim(outcome.choices.iter().map(|(index, _)| *index).collect()))
    }
}

impl Case<'_> {
    /// Like `fails`, and when the old choices no longer fit a changed scenario (its steps
    /// shifted), a few fixed random and pct schedules are tried as well: the shrinker stays
    /// deterministic and does not give up a smaller scenario for a stale choice sequence.
    fn fails_somehow(&mut self, value: &Value, choices: &[usize]) -> Option<Vec<usize>> {
        if let Some(taken) = self.fails(value, choices) {
            return Some(taken);
        }
        let text = serde_json::to_string(value).ok()?;
        let scenario: Scenario = scenario::parse(Path::new("shrunk.json"), &text, RULE_IDS).ok()?;
        let strategies = (0..RESEARCH_SEEDS)
            .map(|seed| (StrategyKind::Random, seed))
            .chain((0..RESEARCH_SEEDS).map(|seed| (StrategyKind::Pct { depth: 3 }, seed)));
        for (strategy, seed) in strategies {
            if self.runs >= RUNS_MAX {
                return None;
            }
            self.runs += 1;
            let mut subject = self.implementation.subject();
            let Ok(outcome) = simulate_with(
                &scenario,
                subject.as_mut(),
                make_strategy(strategy, seed).as_mut(),
                false,
            ) else {
                continue;
            };
            let taken: Vec<usize> = outcome.choices.iter().map(|(index, _)| *index).collect();
            if let Some(taken) = self.fails(value, &taken) {
                return Some(taken);
            }
        }
        None
    }
}

/// Random and pct seeds tried on a changed scenario whose old schedule no longer fails.
const RESEARCH_SEEDS: u64 = 24;

/// A choice sequence without its trailing zeros (the scheduler picks 0 past the end).
fn trim(mut choices: Vec<usize>) -> Vec<usize> {
    while choices.last() == Some(&0) {
        choices.pop();
    }
    choices
}

fn array_len(value: &Value, pointer: &str) -> usize {
    value.pointer(pointer).and_then(Value::as_array).map_or(0, Vec::len)
}

fn size(value: &Value, choices: &[usize]) -> Size {
    Size {
        operations: array_len(value, "/operations"),
        faults: array_len(value, "/faults/appends") + array_len(value, "/faults/writes"),
        choices: choices.len(),
        nonzero_choices: choices.iter().filter(|choice| **choice != 0).count(),
    }
}

/// Whether `candidate` with `taken` is no larger than `value` with `choices` (see [`Size::key`]).
fn no_larger(value: &Value, choices: &[usize], candidate: &Value, taken: &[usize]) -> bool {
    size(candidate, taken).key(taken) <= size(value, choices).key(choices)
}

/// `value` with the array element at `pointer`/`index` removed.
fn without(value: &Value, pointer: &str, index: usize) -> Value {
    let mut candidate = value.clone();
    if let Some(Value::Array(items)) = candidate.pointer_mut(pointer) {
        items.remove(index);
    }
    candidate
}

/// Shrinks the failure of `rule` found on `loaded` with the choice sequence `choices`.
pub fn shrink(
    loaded: &LoadedScenario,
    choices: &[usize],
    rule: &str,
    selection: &check::Selection,
    implementation: &Implementation,
    origin: &str,
) -> Result<Shrunk, ShrinkError> {
    // A built-in scenario's path is its name: its text is the embedded file's.
    let text = crate::suite::source_text(&loaded.path)
        .map_err(|error| ShrinkError::Read(loaded.path.display().to_string(), error.to_string()))?;
    let mut value: Value = serde_json::from_str(&text)
        .map_err(|error| ShrinkError::Read(loaded.path.display().to_string(), error.to_string()))?;
    // The original's expectations describe its canonical schedule, not this one. A `net` block
    // goes too: explore schedules such a scenario in process, where the block plays no part,
    // and without it `run` replays the regression in process as well (with it, in the
    // networked world, where the failure need not show).
    let networked = loaded.scenario.net.is_some();
    if let Some(object) = value.as_object_mut() {
        object.remove("expect");
        object.remove("schedule");
        object.remove("net");
    }
    if let Some(Value::Array(steps)) = value.pointer_mut("/model") {
        for step in steps {
            if let Some(object) = step.as_object_mut() {
                object.remove("expect");
            }
        }
    }
    let mut case = Case {
        rule,
        selection,
        implementation,
        runs: 0,
    };
    let mut choices = case
        .fails(&value, choices)
        .ok_or_else(|| ShrinkError::NotFailing(rule.to_string()))?;
    let before = size(&value, &choices);
    let before_key = before.key(&choices);
    loop {
        let start = (size(&value, &choices), case.runs);
        shrink_arrays(&mut case, &mut value, &mut choices, "/operations");
        drop_after_conditions(&mut case, &mut value, &mut choices);
        shrink_arrays(&mut case, &mut value, &mut choices, "/faults/appends");
        shrink_arrays(&mut case, &mut value, &mut choices, "/faults/writes");
        shrink_model(&mut case, &mut value, &mut choices);
        shrink_choices(&mut case, &value, &mut choices);
        if size(&value, &choices) == start.0 || case.runs >= RUNS_MAX {
            break;
        }
    }
    let after = size(&value, &choices);
    debug_assert!(after.key(&choices) <= before_key, "the shrinker only descends");
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "description".into(),
            Value::String(format!(
                "Shrunk from {origin}: fails {rule} on the pinned schedule ({before} before, {after} after){}.",
                if networked {
                    "; explored in process, so its net block is left out"
                } else {
                    ""
                }
            )),
        );
        object.insert("rules".into(), Value::Array(vec![Value::String(rule.to_string())]));
        object.insert(
            "schedule".into(),
            Value::Array(choices.iter().map(|choice| Value::from(*choice as u64)).collect()),
        );
    }
    Ok(Shrunk {
        scenario: value,
        rule: rule.to_string(),
        before,
        after,
        runs: case.runs,
    })
}

/// Removes elements of the array at `pointer`, latest first, while the rule still fails.
fn shrink_arrays(case: &mut Case<'_>, value: &mut Value, choices: &mut Vec<usize>, pointer: &str) {
    let mut index = array_len(value, pointer);
    while index > 0 {
        index -= 1;
        // At least one operation must stay: a scenario without one cannot fail.
        if pointer == "/operations" && array_len(value, pointer) == 1 {
            return;
        }
        let candidate = without(value, pointer, index);
        if let Some(taken) = case.fails_somehow(&candidate, choices) {
            if no_larger(value, choices, &candidate, &taken) {
                *value = candidate;
                *choices = taken;
            }
        }
    }
}

/// Drops each operation's `after` condition while the rule still fails.
fn drop_after_conditions(case: &mut Case<'_>, value: &mut Value, choices: &mut Vec<usize>) {
    for index in 0..array_len(value, "/operations") {
        let pointer = format!("/operations/{index}");
        if value.pointer(&format!("{pointer}/after")).is_none() {
            continue;
        }
        let mut candidate = value.clone();
        if let Some(Value::Object(operation)) = candidate.pointer_mut(&pointer) {
            operation.remove("after");
        }
        if let Some(taken) = case.fails_somehow(&candidate, choices) {
            if no_larger(value, choices, &candidate, &taken) {
                *value = candidate;
                *choices = taken;
            }
        }
    }
}

/// Removes model responses from the end while the rule still fails.
fn shrink_model(case: &mut Case<'_>, value: &mut Value, choices: &mut Vec<usize>) {
    while array_len(value, "/model") > 0 {
        let candidate = without(value, "/model", array_len(value, "/model") - 1);
        match case.fails(&candidate, choices) {
            Some(taken) if no_larger(value, choices, &candidate, &taken) => {
                *value = candidate;
                *choices = taken;
            }
            _ => return,
        }
    }
}

/// Cuts the choice sequence short, then lowers each choice toward 0.
fn shrink_choices(case: &mut Case<'_>, value: &Value, choices: &mut Vec<usize>) {
    // The shortest prefix that still fails (choices past it are 0, the canonical pick).
    let mut keep = 0;
    while keep < choices.len() {
        if let Some(taken) = case.fails(value, &choices[..keep]) {
            if no_larger(value, choices, value, &taken) {
                *choices = taken;
                break;
            }
        }
        keep += 1;
    }
    for position in 0..choices.len() {
        while position < choices.len() && choices[position] > 0 {
            let mut candidate = choices.clone();
            candidate[position] -= 1;
            match case.fails(value, &candidate) {
                Some(taken) if no_larger(value, choices, value, &taken) => *choices = taken,
                _ => break,
            }
        }
    }
}
