//! `agentsim crash-test`: crash the store host at many points of each scenario's networked run
//! and count the acknowledged entries the restarted store no longer holds.

use std::path::PathBuf;

use clap::Args;

use crate::net::crash::crash_test;
use crate::store::SyncPolicy;
use crate::suite;

use super::{EXIT_BAD_INPUT, EXIT_BROKEN, EXIT_PASSED, EXIT_VIOLATION};

#[derive(Args)]
pub struct CrashTestArgs {
    /// Scenario files or folders (default: scenarios/wiring/walkthrough.json).
    paths: Vec<PathBuf>,
    /// Crash points per scenario, spread evenly over the run's simulation steps.
    #[arg(long, default_value_t = 100)]
    points: u64,
    /// The store's sync policy: `every-append` must lose nothing; `none` shows what it costs.
    #[arg(long, value_enum, default_value_t = SyncPolicy::EveryAppend)]
    sync: SyncPolicy,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn run_crash_test(args: CrashTestArgs) -> u8 {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from("scenarios/wiring/walkthrough.json")]
    } else {
        args.paths
    };
    let corpus = match suite::load_corpus(&paths) {
        Ok(corpus) => corpus,
        Err(error) => {
            eprintln!("agentsim: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let (mut points, mut acknowledged, mut lost) = (0, 0, 0);
    for loaded in &corpus {
        let report = match crash_test(&loaded.scenario, args.sync, args.points, args.seed) {
            Ok(report) => report,
            Err(error) => {
                eprintln!("agentsim: {}: {error}", loaded.name);
                return EXIT_BROKEN;
            }
        };
        println!(
            "{:<48} {:>4} crash points over {:>5} steps: {:>5} acknowledged, {:>4} lost",
            loaded.name, report.points, report.steps, report.acknowledged, report.lost
        );
        if let Some(step) = report.losing_points.first() {
            println!(
                "       first losing crash point: step {step} ({} points lost entries)",
                report.losing_points.len()
            );
        }
        points += report.points;
        acknowledged += report.acknowledged;
        lost += report.lost;
    }
    let sync_name = match args.sync {
        SyncPolicy::EveryAppend => "every-append",
        SyncPolicy::None => "none",
    };
    println!("sync {sync_name}: {points} crash points, {acknowledged} acknowledged entries, {lost} lost");
    if lost > 0 {
        EXIT_VIOLATION
    } else {
        EXIT_PASSED
    }
}
