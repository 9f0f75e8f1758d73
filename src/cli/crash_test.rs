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
    /// Crash points per scenario, spread evenly over the run's simulation steps (1 to 100,000).
    #[arg(long, default_value_t = 100, value_parser = parse_points)]
    points: u64,
    /// The store's sync policy: `every-append` must lose nothing; `none` shows what it costs.
    #[arg(long, value_enum, default_value_t = SyncPolicy::EveryAppend)]
    sync: SyncPolicy,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// The most crash points per scenario: each is one whole networked run.
const POINTS_MAX: u64 = 100_000;

fn parse_points(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(points) if (1..=POINTS_MAX).contains(&points) => Ok(points),
        _ => Err(format!(
            "`{text}`: expected a number of crash points from 1 to {POINTS_MAX}"
        )),
    }
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
        let report = match crash_test(
            &loaded.scenario,
            args.sync,
            args.points,
            args.seed,
            &mut crate::implementation::Implementation::reference().subject(),
        ) {
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
            let replay = crate::run::Run::of(loaded).in_world(crate::run::World::NetCrash {
                step: *step,
                sync: args.sync,
            });
            println!("       replay: {}", replay.command());
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
