//! The report lines of what a corpus comes to: the level an implementation reaches and the
//! features it declared and fails. The root causes and findings are `crate::findings`.

use std::collections::BTreeMap;

use serde_json::json;

use crate::check::Level;

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
    reports: &[crate::run::CaseReport],
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
            crate::run::Verdict::Failed | crate::run::Verdict::Broken(_)
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
