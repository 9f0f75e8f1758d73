//! What a corpus of failing cases comes to: each case's root cause, the rules that are root
//! causes and how often, the findings (cases with one root rule and one first divergence are
//! one finding), and the level an implementation reaches. `run` and `explore` end with it.

use std::collections::BTreeMap;

use serde_json::json;

use crate::check::{Level, Selection, Violation};
use crate::protocol::diff::Divergence;

/// One failing case (or explored schedule), as the summaries read it.
pub(crate) struct Failing<'a> {
    pub name: &'a str,
    /// Root cause first (`check::cause`).
    pub violations: &'a [Violation],
    pub divergence: Option<&'a Divergence>,
}

/// A finding: the cases that fail one rule first with one signature.
pub(crate) struct Finding<'a> {
    pub rule: &'a str,
    /// What the cases share: their first divergence, or the root message's shape.
    pub signature: String,
    /// The first case's root violation and divergence, to show.
    pub example: &'a Failing<'a>,
    pub cases: Vec<&'a str>,
}

/// A message with its particulars (numbers, quoted names) blanked, so that one cause reads
/// the same in every scenario.
fn shape(text: &str) -> String {
    let mut shaped = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    let mut last_digit = false;
    for character in text.chars() {
        if character == '`' || character == '"' {
            match quote {
                None => {
                    shaped.push(character);
                    shaped.push('…');
                    shaped.push(character);
                    quote = Some(character);
                }
                Some(open) if open == character => quote = None,
                Some(_) => {}
            }
            continue;
        }
        if quote.is_some() {
            continue;
        }
        if character.is_ascii_digit() {
            if !last_digit {
                shaped.push('N');
            }
            last_digit = true;
            continue;
        }
        last_digit = false;
        shaped.push(character);
    }
    shaped
}

/// The kind word of a rendered trace line (`0012 fx#3   model_request ...` -> `model_request`).
fn kind_of(line: &str) -> &str {
    line.split_whitespace().nth(2).unwrap_or("-")
}

fn signature(failing: &Failing<'_>) -> String {
    match failing.divergence {
        Some(divergence) => {
            let side = |line: &Option<String>| line.as_deref().map_or("(end of trace)", kind_of).to_string();
            let field = divergence
                .field
                .as_ref()
                .filter(|field| field.path != "event")
                .map(|field| format!(" at {}", shape(&field.path.replace(|c: char| c.is_ascii_digit(), "0"))))
                .unwrap_or_default();
            format!(
                "first divergence: reference {} / implementation {}{field}",
                side(&divergence.reference),
                side(&divergence.implementation)
            )
        }
        None => format!(
            "message: {}",
            shape(
                failing
                    .violations
                    .first()
                    .map(|violation| violation.message.as_str())
                    .unwrap_or("")
            )
        ),
    }
}

/// The findings of `failing`, most cases first.
pub(crate) fn findings<'a>(failing: &'a [Failing<'a>]) -> Vec<Finding<'a>> {
    let mut grouped: BTreeMap<(&str, String), Finding<'a>> = BTreeMap::new();
    for case in failing {
        let Some(root) = case.violations.first() else { continue };
        let signature = signature(case);
        grouped
            .entry((root.rule.as_str(), signature.clone()))
            .or_insert_with(|| Finding {
                rule: &root.rule,
                signature,
                example: case,
                cases: Vec::new(),
            })
            .cases
            .push(case.name);
    }
    let mut findings: Vec<Finding<'a>> = grouped.into_values().collect();
    findings.sort_by(|a, b| b.cases.len().cmp(&a.cases.len()).then(a.rule.cmp(b.rule)));
    findings
}

fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        format!("1 {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// Root causes per rule, then every finding. `unit` names a case (`case`, `schedule`).
pub(crate) fn root_cause_text(failing: &[Failing<'_>], unit: &str) -> String {
    if failing.iter().all(|case| case.violations.is_empty()) {
        return String::new();
    }
    let mut roots: BTreeMap<&str, usize> = BTreeMap::new();
    let mut later: BTreeMap<&str, usize> = BTreeMap::new();
    for case in failing {
        if let Some(root) = case.violations.first() {
            *roots.entry(&root.rule).or_default() += 1;
        }
        let mut seen = std::collections::BTreeSet::new();
        for violation in case.violations.iter().skip(1) {
            if case.violations.first().is_some_and(|root| root.rule == violation.rule) || !seen.insert(&violation.rule)
            {
                continue;
            }
            *later.entry(&violation.rule).or_default() += 1;
        }
    }
    let mut text = String::from("root causes (the first violation of each failing ");
    text.push_str(unit);
    text.push_str("):\n");
    let mut ranked: Vec<(&str, usize)> = roots.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for (rule, count) in &ranked {
        let level = crate::check::level_of(rule).map_or("-", Level::word);
        text.push_str(&format!("  {rule:<11} {level:<6} {}\n", plural(*count, unit)));
    }
    if !later.is_empty() {
        let mut ranked: Vec<(&str, usize)> = later.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let listed: Vec<String> = ranked.iter().map(|(rule, count)| format!("{rule} {count}")).collect();
        text.push_str(&format!(
            "  broken later in the trace, after the root (not root causes): {}\n",
            listed.join(", ")
        ));
    }
    let findings = findings(failing);
    text.push_str(&format!(
        "findings ({} grouped by root rule and first divergence): {}\n",
        plural(failing.len(), &format!("failing {unit}")),
        findings.len()
    ));
    for finding in &findings {
        let mut distinct: Vec<&str> = Vec::new();
        for name in &finding.cases {
            if !distinct.contains(name) {
                distinct.push(name);
            }
        }
        let names: Vec<&str> = distinct.iter().take(3).copied().collect();
        let more = distinct.len().saturating_sub(names.len());
        if finding.cases.len() == 1 {
            text.push_str(&format!(
                "  1 {unit} fails {} first: {}\n",
                finding.rule, finding.signature
            ));
        } else {
            text.push_str(&format!(
                "  {} fail {} first, all with the same {}\n",
                plural(finding.cases.len(), unit),
                finding.rule,
                finding.signature
            ));
        }
        if let Some(root) = finding.example.violations.first() {
            text.push_str(&format!("      e.g. {}: {}\n", finding.example.name, root.message));
        }
        if let Some(divergence) = finding.example.divergence {
            text.push_str(&format!("      {}\n", divergence.summary()));
        }
        let scenarios = if distinct.len() == 1 { "scenario" } else { "scenarios" };
        text.push_str(&format!(
            "      in {} {scenarios}: {}{}\n",
            distinct.len(),
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    text
}

/// `(rules held, rules judged)` per level: a rule holds when no judged case breaks it.
pub(crate) fn level_counts<'a>(
    judged: impl Iterator<Item = &'a [Violation]>,
    selection: &Selection,
) -> BTreeMap<Level, (usize, usize)> {
    let broken: std::collections::BTreeSet<&str> = judged
        .flat_map(|violations| violations.iter().map(|violation| violation.rule.as_str()))
        .collect();
    let mut counts: BTreeMap<Level, (usize, usize)> = BTreeMap::new();
    for rule in selection.rules() {
        let slot = counts.entry(rule.level).or_default();
        slot.1 += 1;
        if !broken.contains(rule.id) {
            slot.0 += 1;
        }
    }
    counts
}

/// `levels: MUST 52 of 58 rules hold in every case; SHOULD 11 of 13`.
pub(crate) fn level_line(counts: &BTreeMap<Level, (usize, usize)>, unit: &str) -> String {
    let parts: Vec<String> = counts
        .iter()
        .map(|(level, (held, judged))| format!("{} {held} of {judged} rules hold in every {unit}", level.word()))
        .collect();
    format!("levels: {}\n", parts.join("; "))
}

pub(crate) fn level_json(counts: &BTreeMap<Level, (usize, usize)>) -> serde_json::Value {
    let mut value = serde_json::Map::new();
    for (level, (held, judged)) in counts {
        value.insert(
            level.word().to_ascii_lowercase(),
            json!({"rules": judged, "held": held}),
        );
    }
    serde_json::Value::Object(value)
}

/// The features an implementation declared in `hello` (or did not declare unsupported) and
/// fails: one line per feature with failing scenarios that use it.
pub(crate) fn declared_and_failing(
    reports: &[crate::suite::CaseReport],
    hello: &crate::protocol::wire::Hello,
    corpus: &[crate::scenario::LoadedScenario],
) -> Vec<String> {
    let mut by_feature: BTreeMap<&str, (usize, Vec<&str>)> = BTreeMap::new();
    for report in reports {
        let Some(loaded) = corpus.iter().find(|loaded| loaded.name == report.name) else {
            continue;
        };
        let failed = matches!(
            report.verdict,
            crate::suite::Verdict::Failed | crate::suite::Verdict::Broken(_)
        );
        for feature in crate::scenario::features_used(&loaded.scenario) {
            if !hello.features.iter().any(|declared| declared == feature) {
                continue;
            }
            let slot = by_feature.entry(feature).or_default();
            slot.0 += 1;
            if failed {
                slot.1.push(&report.name);
            }
        }
    }
    by_feature
        .into_iter()
        .filter(|(_, (_, failed))| !failed.is_empty())
        .map(|(feature, (using, failed))| {
            let names: Vec<&str> = failed.iter().take(3).copied().collect();
            let more = failed.len().saturating_sub(names.len());
            format!(
                "declared supported and failing: `{feature}`: {} of {using} scenarios using it fail ({}{})",
                failed.len(),
                names.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_blank_numbers_and_quoted_names() {
        assert_eq!(
            shape("op#2's run started while op#1 settled only at line 0015: `entry-3` \"读 a`b\""),
            "op#N's run started while op#N settled only at line N: `…` \"…\""
        );
    }

    #[test]
    fn one_cause_in_many_scenarios_is_one_finding() {
        let violation = |rule: &str, message: &str| Violation {
            rule: rule.into(),
            lines: vec![3],
            message: message.into(),
            evident_at: Some(3),
        };
        let first = [
            violation("QUEUE-1", "op#2's run started at line 12"),
            violation("PROJECT-5", "x"),
        ];
        let second = [violation("QUEUE-1", "op#3's run started at line 40")];
        let third = [violation("PERSIST-6", "op#1 resolved early")];
        let failing = [
            Failing {
                name: "a",
                violations: &first,
                divergence: None,
            },
            Failing {
                name: "b",
                violations: &second,
                divergence: None,
            },
            Failing {
                name: "c",
                violations: &third,
                divergence: None,
            },
        ];
        let found = findings(&failing);
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].rule, found[0].cases.clone()), ("QUEUE-1", vec!["a", "b"]));
        let text = root_cause_text(&failing, "case");
        assert!(text.contains("QUEUE-1     MUST   2 cases"), "{text}");
        assert!(text.contains("2 cases fail QUEUE-1 first, all with the same"), "{text}");
        assert!(text.contains("1 case fails PERSIST-6 first: "), "{text}");
        assert!(text.contains("not root causes): PROJECT-5 1"), "{text}");
    }
}
