//! `explore --coverage`: the table of the rules' situations and the matrix of interleaving pairs
//! the traces reached, and what this world could have reached but did not.

use crate::run::WorldKind;

/// The coverage table: per rule, each situation with the traces that reached it.
pub(super) struct CoverageReport {
    pub text: String,
    pub json: serde_json::Value,
    /// Situations this world can reach that no trace reached.
    pub unreached: usize,
}

/// The table of `counts` (situations, then interleaving pairs), as `world` can reach them.
pub(super) fn coverage_report(counts: &[u64], world: WorldKind) -> CoverageReport {
    use crate::check::situations::{situations, World};
    let mut text = String::from("coverage: traces that reached each rule's situations\n");
    let mut rows = Vec::new();
    let mut unreached = Vec::new();
    for (situation, count) in situations().iter().zip(counts) {
        // The in-process explorations owe every situation but the networked world's; a
        // networked exploration owes those (its schedules follow the scenario's order).
        let required = match world {
            WorldKind::Sim => situation.world == World::Any,
            WorldKind::Net => situation.world == World::Net,
        };
        let mark = match (*count, required) {
            (0, true) => "UNREACHED",
            (0, false) => "not required here",
            _ => "",
        };
        text.push_str(&format!(
            "  {:<10} {:>9}  {}{}\n",
            situation.rule,
            count,
            situation.name,
            if mark.is_empty() {
                String::new()
            } else {
                format!("  [{mark}]")
            }
        ));
        if *count == 0 && required {
            unreached.push(format!("{}: {}", situation.rule, situation.name));
        }
        rows.push(serde_json::json!({
            "rule": situation.rule,
            "situation": situation.name,
            "world": match situation.world { World::Any => "any", World::Net => "net" },
            "traces": count,
        }));
    }
    let (situation_counts, pair_counts) = counts.split_at(situations().len());
    text.push_str(&format!(
        "coverage: {} situations, {} reached, {} unreached\n",
        situation_counts.len(),
        situation_counts.iter().filter(|count| **count > 0).count(),
        unreached.len()
    ));
    let situations_unreached = unreached.len();
    let pair_rows = pair_matrix(pair_counts, world == WorldKind::Sim, &mut text, &mut unreached);
    text.push_str(&format!(
        "coverage: {} interleaving pairs, {} reached, {} unreached\n",
        pair_counts.len(),
        pair_counts.iter().filter(|count| **count > 0).count(),
        unreached.len() - situations_unreached
    ));
    CoverageReport {
        text,
        json: serde_json::json!({"situations": rows, "pairs": pair_rows, "unreached": unreached}),
        unreached: unreached.len(),
    }
}

/// The interleaving matrix (`check::pairs`): per operation kind, the traces in which it arrived
/// while each kind of effect was in flight; then the answer orders. Every pair is owed by an
/// in-process exploration (`required`); a networked one follows the scenarios' order.
fn pair_matrix(
    counts: &[u64],
    required: bool,
    text: &mut String,
    unreached: &mut Vec<String>,
) -> Vec<serde_json::Value> {
    use crate::check::pairs::{pairs, InFlight, Pair};
    text.push_str("interleavings: traces in which each operation arrived while each effect was in flight\n");
    text.push_str(&format!("  {:<9}", ""));
    for state in InFlight::ALL {
        text.push_str(&format!(" {:>13}", state.name()));
    }
    text.push('\n');
    let mut rows = Vec::new();
    for (pair, count) in pairs().iter().zip(counts) {
        let missing = *count == 0 && required && pair.excluded().is_none();
        if missing {
            unreached.push(format!("interleaving: {pair}"));
        }
        match pair {
            Pair::Delivery { operation, state } => {
                if *state == InFlight::ALL[0] {
                    text.push_str(&format!("  {operation:<9}"));
                }
                let cell = if missing {
                    "UNREACHED".to_string()
                } else {
                    count.to_string()
                };
                text.push_str(&format!(" {cell:>13}"));
                if *state == InFlight::ALL[InFlight::ALL.len() - 1] {
                    text.push('\n');
                }
                rows.push(serde_json::json!({"operation": operation, "inFlight": state.name(), "traces": count}));
            }
            Pair::Answer(order) => {
                let mark = match order.excluded() {
                    Some(reason) => format!("  [excluded by the contract: {reason}]"),
                    None if missing => "  [UNREACHED]".to_string(),
                    None => String::new(),
                };
                text.push_str(&format!("  {count:>9}  {}{mark}\n", order.name()));
                rows.push(
                    serde_json::json!({"answerOrder": order.name(), "traces": count, "excluded": order.excluded()}),
                );
            }
        }
    }
    rows
}
