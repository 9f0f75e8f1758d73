//! What a set of failing cases comes to: the rules that are root causes and how often, the
//! rules broken later in their traces, and the **findings**: failing cases with one root rule
//! and one signature (their first divergence from the reference, or the root message's shape)
//! are one finding. A [`Tally`] takes the cases one at a time and keeps counts, not cases, so
//! an exploration of any number of schedules holds it in bounded memory (bounded by the
//! distinct rules, signatures and scenario names, never by the number of cases).

use std::collections::{BTreeMap, BTreeSet};

use crate::check::{Level, Selection, Violation};
use crate::protocol::diff::Divergence;

/// A message with its particulars (numbers, quoted names, bracketed lists) blanked, so that
/// one cause reads the same in every scenario.
pub fn shape(text: &str) -> String {
    let mut shaped = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    let mut last_digit = false;
    for character in text.chars() {
        if quote.is_none() && (character == '[' || (depth > 0 && character == ']')) {
            if character == '[' {
                if depth == 0 {
                    shaped.push_str("[…]");
                }
                depth += 1;
            } else {
                depth -= 1;
            }
            continue;
        }
        if depth > 0 {
            continue;
        }
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

/// What the cases of one finding share: their first divergence's kinds and field path, or,
/// with no divergence, the root message's shape.
fn signature(root: &Violation, divergence: Option<&Divergence>) -> String {
    match divergence {
        Some(divergence) => {
            let absent = if divergence.oracle.is_some() {
                "(nothing)"
            } else {
                "(end of trace)"
            };
            let side = |line: &Option<String>| line.as_deref().map_or(absent, kind_of).to_string();
            let field = divergence
                .field
                .as_ref()
                .filter(|field| field.path != "event")
                .map(|field| format!(" at {}", shape(&field.path.replace(|c: char| c.is_ascii_digit(), "0"))))
                .unwrap_or_default();
            let what = match &divergence.oracle {
                Some((kind, _, _)) => format!("first difference ({})", kind.word()),
                None => "first divergence".to_string(),
            };
            format!(
                "{what}: reference {} / implementation {}{field}",
                side(&divergence.reference),
                side(&divergence.implementation)
            )
        }
        None => format!("message: {}", shape(&root.message)),
    }
}

/// The failing cases that fail one rule first with one signature.
#[derive(Debug, Clone)]
pub struct Finding {
    pub rule: String,
    pub signature: String,
    /// Cases (or schedules) in the finding.
    pub count: u64,
    /// The first case's name, root message and divergence summary, to show.
    pub example: String,
    pub example_message: String,
    pub example_divergence: Option<String>,
    /// The distinct scenarios, in first-seen order.
    pub scenarios: Vec<String>,
}

/// Root causes, later rules and findings of the failing cases added so far.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Failing cases added (those with at least one violation).
    pub cases: u64,
    pub roots: BTreeMap<String, u64>,
    /// Per rule: the cases that break it after their root, not as their root.
    pub later: BTreeMap<String, u64>,
    /// Every rule broken in some case.
    pub broken_rules: BTreeSet<String>,
    /// Failing cases whose trace differs from the reference fed the same inputs (REF-1's
    /// oracle): explained by another rule, and judged by REF-1 alone.
    pub differences_explained: u64,
    pub differences_unexplained: u64,
    /// Some trace was judged, and some judged trace's subject probed its state: without a
    /// probe, the rules that read one ([`crate::check::PROBED_RULES`]) are not judged, and a
    /// level counts them neither held nor broken.
    pub traces_seen: bool,
    pub traces_probed: bool,
    findings: BTreeMap<(String, String), Finding>,
}

impl Tally {
    /// Adds one failing case: its violations root cause first (`check::cause`).
    pub fn add(&mut self, name: &str, violations: &[Violation], divergence: Option<&Divergence>) {
        let Some(root) = violations.first() else { return };
        self.cases += 1;
        if divergence.is_some_and(|divergence| divergence.oracle.is_some()) {
            if violations
                .iter()
                .any(|violation| violation.rule == crate::check::REFERENCE_RULE)
            {
                self.differences_unexplained += 1;
            } else {
                self.differences_explained += 1;
            }
        }
        *self.roots.entry(root.rule.clone()).or_default() += 1;
        let mut seen = BTreeSet::new();
        for violation in violations {
            self.broken_rules.insert(violation.rule.clone());
            if violation.rule != root.rule && seen.insert(violation.rule.as_str()) {
                *self.later.entry(violation.rule.clone()).or_default() += 1;
            }
        }
        let signature = signature(root, divergence);
        let finding = self
            .findings
            .entry((root.rule.clone(), signature.clone()))
            .or_insert_with(|| Finding {
                rule: root.rule.clone(),
                signature,
                count: 0,
                example: name.to_string(),
                example_message: root.message.clone(),
                example_divergence: divergence.map(Divergence::summary),
                scenarios: Vec::new(),
            });
        finding.count += 1;
        if !finding.scenarios.iter().any(|scenario| scenario == name) {
            finding.scenarios.push(name.to_string());
        }
    }

    /// Counts `rules` as broken by a case that produced no trace (broken, or a bad scenario): it
    /// confirms none of the rules it was written for.
    pub fn add_untraced(&mut self, rules: &[String]) {
        self.broken_rules.extend(rules.iter().cloned());
    }

    /// Counts a judged trace: whether its subject probed its state (`Event::Restored`).
    pub fn saw_trace(&mut self, trace: &crate::trace::Trace) {
        self.traces_seen = true;
        self.traces_probed |= trace
            .events
            .iter()
            .any(|event| matches!(event, crate::trace::Event::Restored { probed: true, .. }));
    }

    /// Whether `rule` was judged: every rule but those that read a state probe when no judged
    /// trace carried one.
    pub fn judged(&self, rule: &str) -> bool {
        !(self.traces_seen && !self.traces_probed && crate::check::PROBED_RULES.contains(&rule))
    }

    /// Adds everything `other` counted (after it, in order).
    pub fn merge(&mut self, other: Tally) {
        self.cases += other.cases;
        self.traces_seen |= other.traces_seen;
        self.traces_probed |= other.traces_probed;
        self.differences_explained += other.differences_explained;
        self.differences_unexplained += other.differences_unexplained;
        for (rule, count) in other.roots {
            *self.roots.entry(rule).or_default() += count;
        }
        for (rule, count) in other.later {
            *self.later.entry(rule).or_default() += count;
        }
        self.broken_rules.extend(other.broken_rules);
        for (key, finding) in other.findings {
            match self.findings.get_mut(&key) {
                Some(mine) => {
                    mine.count += finding.count;
                    for scenario in finding.scenarios {
                        if !mine.scenarios.contains(&scenario) {
                            mine.scenarios.push(scenario);
                        }
                    }
                }
                None => {
                    self.findings.insert(key, finding);
                }
            }
        }
    }

    /// The findings, most cases first.
    pub fn findings(&self) -> Vec<&Finding> {
        let mut findings: Vec<&Finding> = self.findings.values().collect();
        findings.sort_by(|a, b| b.count.cmp(&a.count).then(a.rule.cmp(&b.rule)));
        findings
    }

    /// `(rules held, rules judged)` per level: a rule holds when no case broke it.
    pub fn level_counts(&self, selection: &Selection) -> BTreeMap<Level, (usize, usize)> {
        let mut counts: BTreeMap<Level, (usize, usize)> = BTreeMap::new();
        for rule in selection.rules().filter(|rule| self.judged(rule.id)) {
            let slot = counts.entry(rule.level).or_default();
            slot.1 += 1;
            if !self.broken_rules.contains(rule.id) {
                slot.0 += 1;
            }
        }
        counts
    }

    /// Root causes per rule, then every finding. `unit` names a case (`case`, `schedule`).
    /// The line that counts the differences from the reference fed the same inputs.
    pub fn differences_line(&self, unit: &str) -> String {
        format!(
            "differences from the reference fed the same inputs: {} explained by a rule, {} judged by REF-1 alone\n",
            crate::check::counted(
                self.differences_explained as usize,
                &format!("failing {unit}"),
                &format!("failing {unit}s")
            ),
            self.differences_unexplained
        )
    }

    pub fn text(&self, unit: &str) -> String {
        if self.cases == 0 {
            return String::new();
        }
        let plural = |count: u64, word: &str| {
            if count == 1 {
                format!("1 {word}")
            } else {
                format!("{count} {word}s")
            }
        };
        let mut text = format!("root causes (the first violation of each failing {unit}):\n");
        let mut ranked: Vec<(&String, &u64)> = self.roots.iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (rule, count) in ranked {
            let level = crate::check::level_of(rule).map_or("-", Level::word);
            text.push_str(&format!("  {rule:<11} {level:<6} {}\n", plural(*count, unit)));
        }
        if !self.later.is_empty() {
            let mut ranked: Vec<(&String, &u64)> = self.later.iter().collect();
            ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let listed: Vec<String> = ranked.iter().map(|(rule, count)| format!("{rule} {count}")).collect();
            text.push_str(&format!(
                "  broken later in the trace, after the root (not root causes): {}\n",
                listed.join(", ")
            ));
        }
        let findings = self.findings();
        text.push_str(&format!(
            "findings ({} grouped by root rule and first divergence): {}\n",
            plural(self.cases, &format!("failing {unit}")),
            findings.len()
        ));
        for finding in findings {
            if finding.count == 1 {
                text.push_str(&format!(
                    "  1 {unit} fails {} first: {}\n",
                    finding.rule, finding.signature
                ));
            } else {
                text.push_str(&format!(
                    "  {} fail {} first, all with the same {}\n",
                    plural(finding.count, unit),
                    finding.rule,
                    finding.signature
                ));
            }
            text.push_str(&format!(
                "      e.g. {}: {}\n",
                finding.example, finding.example_message
            ));
            if let Some(divergence) = &finding.example_divergence {
                text.push_str(&format!("      {divergence}\n"));
            }
            let names: Vec<&str> = finding.scenarios.iter().take(3).map(String::as_str).collect();
            let more = finding.scenarios.len().saturating_sub(names.len());
            let scenarios = if finding.scenarios.len() == 1 {
                "scenario"
            } else {
                "scenarios"
            };
            text.push_str(&format!(
                "      in {} {scenarios}: {}{}\n",
                finding.scenarios.len(),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_blank_numbers_and_quoted_names() {
        assert_eq!(
            shape("op#2's run started while op#1 settled only at line 0015: `entry-3` \"读 a`b\" [x,[y]]"),
            "op#N's run started while op#N settled only at line N: `…` \"…\" […]"
        );
    }

    #[test]
    fn one_cause_in_many_scenarios_is_one_finding() {
        let violation = |rule: &str, message: &str| Violation {
            rule: rule.into(),
            clause: None,
            lines: vec![3],
            message: message.into(),
            evident_at: Some(3),
        };
        let mut tally = Tally::default();
        tally.add(
            "a",
            &[
                violation("QUEUE-1", "op#2's run started at line 12"),
                violation("PROJECT-5", "x"),
            ],
            None,
        );
        tally.add("b", &[violation("QUEUE-1", "op#3's run started at line 40")], None);
        let mut other = Tally::default();
        other.add("c", &[violation("PERSIST-6", "op#1 resolved early")], None);
        other.add("b", &[violation("QUEUE-1", "op#3's run started at line 41")], None);
        tally.merge(other);
        let found = tally.findings();
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].rule.as_str(), found[0].count, found[0].scenarios.clone()),
            ("QUEUE-1", 3, vec!["a".to_string(), "b".to_string()])
        );
        let text = tally.text("case");
        assert!(text.contains("QUEUE-1     MUST   3 cases"), "{text}");
        assert!(text.contains("3 cases fail QUEUE-1 first, all with the same"), "{text}");
        assert!(text.contains("1 case fails PERSIST-6 first: "), "{text}");
        assert!(text.contains("not root causes): PROJECT-5 1"), "{text}");
        assert!(text.contains("in 2 scenarios: a, b"), "{text}");
    }
}
