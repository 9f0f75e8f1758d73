//! Tidy: conformance.md, the checker catalogue and the scenarios name the same rules.
//!
//! Every rule heading in conformance.md has a checker (and the `Checker:` line names it), every
//! rule is named by at least one scenario, every rule a scenario names exists (the loader
//! rejects unknown IDs), and each `Scenarios:` line lists exactly the scenarios that name the
//! rule. `UPDATE_CONFORMANCE=1 cargo test --test kit tidy` rewrites the `Scenarios:` lines.

use std::collections::BTreeMap;
use std::path::Path;

use agentsim::check::{catalogue, RULE_IDS};
use agentsim::suite::load_corpus;

fn conformance_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance.md")
}

/// Rule ID -> the scenarios naming it, sorted.
fn scenarios_by_rule() -> BTreeMap<String, Vec<String>> {
    let corpus = load_corpus(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")]).expect("the corpus loads");
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for loaded in corpus {
        for rule in &loaded.scenario.rules {
            map.entry(rule.clone()).or_default().push(loaded.name.clone());
        }
    }
    for names in map.values_mut() {
        names.sort();
        names.dedup();
    }
    map
}

/// The `### ID` headings, in order.
fn headings(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("### "))
        .map(|id| id.trim().to_string())
        .collect()
}

/// The lines of the section of one rule (up to the next heading).
fn section<'t>(text: &'t str, id: &str) -> Vec<&'t str> {
    let heading = format!("### {id}");
    text.lines()
        .skip_while(|line| line.trim() != heading)
        .skip(1)
        .take_while(|line| !line.starts_with("## ") && !line.starts_with("### "))
        .collect()
}

fn scenarios_line(names: &[String]) -> String {
    let listed: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
    format!("- Scenarios: {}", listed.join(", "))
}

#[test]
fn tidy_conformance_headings_are_the_catalogue() {
    let text = std::fs::read_to_string(conformance_path()).expect("conformance.md");
    assert_eq!(
        headings(&text),
        RULE_IDS,
        "conformance.md rule headings differ from the catalogue"
    );
    for rule in catalogue() {
        let lines = section(&text, rule.id);
        let checker = format!("- Checker: `{}`", rule.checker_name);
        assert!(
            lines.contains(&checker.as_str()),
            "{}: conformance.md must say `{checker}`",
            rule.id
        );
        assert!(
            lines.iter().any(|line| line.starts_with("- Seed: ")),
            "{}: no `Seed:` line",
            rule.id
        );
        let level = format!("- Level: {} (", rule.level.word());
        assert!(
            lines.iter().any(|line| line.starts_with(&level) && line.ends_with(')')),
            "{}: conformance.md must give its level as `{level}reason)`, as check::catalogue() does",
            rule.id
        );
    }
}

#[test]
fn tidy_every_rule_has_a_scenario_and_the_list_is_current() {
    let path = conformance_path();
    let text = std::fs::read_to_string(&path).expect("conformance.md");
    let by_rule = scenarios_by_rule();
    let mut updated = String::new();
    let mut current: Option<String> = None;
    let mut stale = Vec::new();
    for line in text.lines() {
        if let Some(id) = line.strip_prefix("### ") {
            current = Some(id.trim().to_string());
        } else if line.starts_with("## ") {
            current = None;
        }
        if let (Some(id), true) = (&current, line.starts_with("- Scenarios:")) {
            let expected = scenarios_line(by_rule.get(id).map(Vec::as_slice).unwrap_or_default());
            if line.trim_end() != expected {
                stale.push(id.clone());
            }
            updated.push_str(&expected);
        } else {
            updated.push_str(line);
        }
        updated.push('\n');
    }
    if std::env::var_os("UPDATE_CONFORMANCE").is_some() {
        std::fs::write(&path, &updated).expect("conformance.md is writable");
        stale.clear();
    }
    let uncovered: Vec<&str> = RULE_IDS
        .iter()
        .copied()
        .filter(|id| !by_rule.contains_key(*id))
        .collect();
    assert!(uncovered.is_empty(), "rules without a scenario: {uncovered:?}");
    assert!(
        stale.is_empty(),
        "conformance.md `Scenarios:` lines are stale for {stale:?}; run UPDATE_CONFORMANCE=1 cargo test --test kit tidy"
    );
}
