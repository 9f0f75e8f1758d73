//! The crash test: one scenario in the networked world, the store host crashed at many points
//! of the run (every few simulation steps), each time counting the acknowledged entries the
//! session file no longer holds after the restart.

use std::collections::BTreeSet;

use crate::check::Timeline;
use crate::scenario::Scenario;
use crate::sim::BoxedSubject;
use crate::store::SyncPolicy;
use crate::trace::AppendAnswer;

use super::{run_net, NetError, NetOptions};

/// What crashing one scenario at many points found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Crash points run (runs whose crash landed before the run's end).
    pub points: u64,
    /// Steps of the run without a crash.
    pub steps: u64,
    /// Entries acknowledged `ok`, summed over the runs.
    pub acknowledged: u64,
    /// Of those, the ones the file read back after the restart did not hold.
    pub lost: u64,
    /// The crash steps whose run lost an acknowledged entry.
    pub losing_points: Vec<u64>,
}

/// Crashes the store at up to `points` distinct steps spread evenly over the run, with sync
/// `sync` (the scenario's other faults stay as written), on `subject`.
pub fn crash_test(
    scenario: &Scenario,
    sync: SyncPolicy,
    points: u64,
    seed: u64,
    subject: &mut BoxedSubject,
) -> Result<CrashReport, NetError> {
    let mut scenario = scenario.clone();
    scenario.net.get_or_insert_with(Default::default).sync = sync;
    let options = NetOptions {
        seed,
        ..NetOptions::default()
    };
    let steps = run_net(&scenario, &options, subject)?.steps;
    let mut report = CrashReport {
        steps,
        ..CrashReport::default()
    };
    // Distinct steps, spread evenly: every step when there are fewer steps than points.
    let chosen: BTreeSet<u64> = (0..points.min(steps))
        .map(|point| 1 + point * steps / points.min(steps))
        .collect();
    for step in chosen {
        let run = run_net(
            &scenario,
            &NetOptions {
                crash_at_step: Some(step),
                ..options.clone()
            },
            subject,
        )?;
        report.points += 1;
        let (acknowledged, lost) = acknowledged_and_lost(&scenario, &run.outcome);
        report.acknowledged += acknowledged;
        report.lost += lost;
        if lost > 0 {
            report.losing_points.push(step);
        }
    }
    Ok(report)
}

/// Entries acknowledged `ok`, and how many of them the file read back does not hold.
fn acknowledged_and_lost(scenario: &Scenario, outcome: &crate::sim::RunOutcome) -> (u64, u64) {
    let entries = outcome.stored(scenario);
    let stored: BTreeSet<&str> = entries.iter().map(|entry| entry.id.as_str()).collect();
    let timeline = Timeline::new(scenario, &outcome.trace, &entries);
    let acknowledged: Vec<&str> = timeline
        .appends
        .iter()
        .filter(|append| matches!(append.answer, Some((_, AppendAnswer::Ok))))
        .map(|append| append.entry.id.as_str())
        .collect();
    let lost = acknowledged.iter().filter(|id| !stored.contains(*id)).count();
    (acknowledged.len() as u64, lost as u64)
}
