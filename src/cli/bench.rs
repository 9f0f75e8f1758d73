//! `agentsim bench`: prints the kit's measured speed, with the command that produced it.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::bench::{bare_core_per_second, exhaustive_time, schedules_per_second};
use crate::suite;

use super::{EXIT_BAD_INPUT, EXIT_PASSED};

#[derive(Args)]
pub struct BenchArgs {
    /// The scenario whose random schedules are timed.
    #[arg(long, default_value = "scenarios/wiring/walkthrough.json")]
    scenario: PathBuf,
    /// The scenario enumerated exhaustively.
    #[arg(long, default_value = "scenarios/poison/two-prompts-dispose-failing-append.json")]
    exhaustive: PathBuf,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
}

pub fn run_bench(args: BenchArgs) -> u8 {
    let load = |path: &PathBuf| match suite::load_corpus(std::slice::from_ref(path)) {
        Ok(mut corpus) if !corpus.is_empty() => Ok(corpus.remove(0)),
        Ok(_) => Err(format!("{}: no scenario", path.display())),
        Err(error) => Err(error.to_string()),
    };
    let (scenario, exhaustive) = match (load(&args.scenario), load(&args.exhaustive)) {
        (Ok(scenario), Ok(exhaustive)) => (scenario, exhaustive),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("agentsim: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let window = Duration::from_secs_f64(args.seconds.max(0.1));
    println!(
        "bench: one thread, {:.1} s per measurement, `{}`",
        window.as_secs_f64(),
        scenario.name
    );
    let checked = schedules_per_second(&scenario.scenario, window, true);
    println!(
        "random schedules, every rule checked: {:>10.0} per second ({} runs)",
        checked.per_second(),
        checked.runs
    );
    let unchecked = schedules_per_second(&scenario.scenario, window, false);
    println!(
        "random schedules, trace only:         {:>10.0} per second ({} runs)",
        unchecked.per_second(),
        unchecked.runs
    );
    let bare = bare_core_per_second(&scenario.scenario, window);
    println!(
        "bare core, immediate driver:          {:>10.0} per second ({} runs)",
        bare.per_second(),
        bare.runs
    );
    println!(
        "scheduler overhead (bare / scheduled, trace only): {:.2}x",
        bare.per_second() / unchecked.per_second()
    );
    let (schedules, covered, elapsed) = exhaustive_time(&exhaustive, 1_000_000);
    println!(
        "exhaustive `{}`: {schedules} schedules{} in {:.1} ms",
        exhaustive.name,
        if covered {
            " (space covered)"
        } else {
            " (bound reached)"
        },
        elapsed.as_secs_f64() * 1000.0
    );
    EXIT_PASSED
}
