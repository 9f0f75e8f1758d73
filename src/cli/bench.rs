//! `agentsim bench`: prints the kit's measured speed, with the command that produced it.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::bench::{exhaustive_time, side_by_side};
use crate::suite;

use super::{EXIT_BAD_INPUT, EXIT_PASSED};

mod interleaving;

use interleaving::interleaving_side_by_side;

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
    /// The corpus the mutants are hunted on, by the kit and by naive stress testing.
    #[arg(long, default_value = "scenarios")]
    corpus: PathBuf,
    /// Seconds naive stress testing may spend on each mutant.
    #[arg(long, default_value_t = 3.0)]
    stress_budget: f64,
    /// Skip the comparison with naive stress testing.
    #[arg(long)]
    no_stress: bool,
    /// Only the interleaving tier, side by side: naive stress, random, pct, exhaustive and
    /// guided, each with a budget of schedules per scenario (`--budget`) or seconds (stress).
    #[arg(long)]
    interleaving: bool,
    /// With `--interleaving`: schedules per scenario each strategy may run.
    #[arg(long, default_value_t = 1000)]
    budget: u64,
    /// With `--interleaving`: how many times each seeded strategy hunts each mutant, with
    /// fresh seeds each time (a cell is then the mean and the worst over the repetitions).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    repeats: u64,
    /// With `--interleaving`: only these strategies' columns (repeatable; default all of
    /// random, pct, pct:3:8, exhaustive, guided-per-scenario, guided).
    #[arg(long = "only-strategy", value_name = "NAME")]
    only_strategies: Vec<String>,
    /// An adapter's speed: random schedules of `--corpus` (`--seeds` per scenario, `--jobs`
    /// workers) over the adapter protocol, side by side with the same schedules in process, and
    /// the kit's share of the adapter's schedules (the workers' time not spent waiting for the
    /// adapter). With `--interleaving`: hunt the tier's mutants over the protocol instead, each
    /// served by `CMD --mutant NAME` (`CMD` an `agentsim serve` command).
    #[arg(long = "impl", value_name = "CMD")]
    implementation: Option<String>,
    /// With `--impl`: random seeds per scenario.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    seeds: u64,
    /// With `--impl`: workers, each with its own adapter process.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: u64,
    /// With `--impl`: the bound on every wait for the adapter, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    step_timeout_ms: u64,
    /// With `--interleaving`: pct seeds per scenario for the table of PCT's detection
    /// probability per schedule beside its guarantee (0: no table).
    #[arg(long, default_value_t = 200)]
    pct_seeds: u64,
    /// Only `check-session`: on a generated clean session file and a damaged one of LINES lines
    /// each, in both formats, each run a child process measured for time and peak memory.
    #[arg(long, value_name = "LINES", value_parser = clap::value_parser!(u64).range(2..=100_000_000))]
    check_session: Option<u64>,
    /// Only how the cost grows: the scenario (`--scenario`) repeated 1 to 6 times, each
    /// explored for `--budget` schedules, explorations of it of 10^3 up to
    /// `--growth-schedules` schedules, and one run of it repeated up to 10,000 operations (or
    /// the first size refused at load); each a child process measured for time and peak memory.
    #[arg(long)]
    growth: bool,
    /// With `--growth`: the longest exploration (a power of ten from 10^3).
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1_000..=100_000_000))]
    growth_schedules: u64,
    /// Only what each rule's checker costs on `--scenario`'s traces (64 random schedules),
    /// beside `check_all` on the same traces, for `--seconds`.
    #[arg(long)]
    rule_costs: bool,
}

pub fn run_bench(args: BenchArgs) -> u8 {
    if args.interleaving {
        return interleaving_side_by_side(&args);
    }
    if let Some(lines) = args.check_session {
        return check_session_on_generated_files(lines as usize);
    }
    if args.growth {
        return growth(&args);
    }
    if args.rule_costs {
        return rule_costs(&args);
    }
    if let Some(command) = &args.implementation {
        return adapter_speed(&args, command);
    }
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
    let rates = side_by_side(&scenario.scenario, window);
    let per_run_us = |rate: crate::bench::Rate| 1e6 / rate.per_second().max(1e-9);
    for (what, rate, ratio) in [
        (
            "random schedules, every rule checked:",
            rates.checked,
            rates.checked_over_bare(),
        ),
        (
            "random schedules, trace only:        ",
            rates.trace_only,
            rates.trace_over_bare(),
        ),
        (
            "trace only, no self-check:           ",
            rates.unchecked_reference,
            rates.unchecked_reference_over_bare(),
        ),
        ("bare core, immediate driver:         ", rates.bare, 1.0),
    ] {
        println!(
            "{what} {:>10.0} per second, {:>6.1} us per run, {ratio:>5.2}x bare ({} runs)",
            rate.per_second(),
            per_run_us(rate),
            rate.runs
        );
    }
    println!(
        "checked / bare: {:.2}x; trace only / bare: {:.2}x; without the self-check: {:.2}x (measured interleaved, {:.1} s each)",
        rates.checked_over_bare(),
        rates.trace_over_bare(),
        rates.unchecked_reference_over_bare(),
        window.as_secs_f64()
    );
    let parts = rates.parts();
    println!(
        "a checked schedule, part by part: core {:.1} us, scheduler and trace {:.1} us, self-check {:.1} us, checkers {:.1} us \
         (the same checkers on the same trace again, caches warm: {:.1} us); 1.5x bare leaves {:.1} us beyond the core",
        parts.core,
        parts.scheduler,
        parts.self_check,
        parts.checkers,
        parts.checkers_warm,
        parts.core * 0.5
    );
    let checked = rates.checked;
    let networked = crate::bench::networked_per_second(&scenario.scenario, window);
    println!(
        "networked world (turmoil), every rule checked: {:>8.0} per second ({} runs)",
        networked.per_second(),
        networked.runs
    );
    println!(
        "side by side: in-process scheduler / networked world = {:.1}x",
        checked.per_second() / networked.per_second().max(1e-9)
    );
    for reduced in [false, true] {
        let measured = exhaustive_time(&exhaustive, 1_000_000, reduced);
        println!(
            "exhaustive{} `{}`: {} schedules{}{} in {:.1} ms",
            if reduced { "" } else { "-plain" },
            exhaustive.name,
            measured.schedules,
            if reduced {
                format!(" (+{} abandoned by sleep sets)", measured.abandoned)
            } else {
                String::new()
            },
            if measured.covered {
                " (space covered)"
            } else {
                " (bound reached)"
            },
            measured.elapsed.as_secs_f64() * 1000.0
        );
    }
    if !args.no_stress {
        let corpus = match suite::load_corpus(std::slice::from_ref(&args.corpus)) {
            Ok(corpus) => corpus,
            Err(error) => {
                eprintln!("agentsim: {error}");
                return EXIT_BAD_INPUT;
            }
        };
        compare_with_stress(&corpus, Duration::from_secs_f64(args.stress_budget.max(0.1)));
    }
    EXIT_PASSED
}

/// The bug zoo hunted twice, side by side: by the kit (canonical schedules, then random and
/// pct seeds) and by naive stress testing (real threads, random sleeps, the same fakes).
fn compare_with_stress(corpus: &[crate::scenario::LoadedScenario], budget: Duration) {
    use crate::bench::stress::stress_hunt;
    use crate::explore::hunt_mutant;
    use crate::sim::Subject;
    use crate::zoo::Mutant;

    // Stress tasks may outlive a run by a few milliseconds, so they borrow a corpus that lives
    // as long as the process.
    let scenarios: &'static [crate::scenario::Scenario] = Box::leak(
        corpus
            .iter()
            .map(|loaded| loaded.scenario.clone())
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    println!();
    println!(
        "bug zoo, kit vs naive stress ({} scenarios; stress: 2 tokio worker threads, random sleeps up to 300 us, {:.1} s per mutant)",
        corpus.len(),
        budget.as_secs_f64()
    );
    println!(
        "{:<28} {:>14} {:>12} {:>14} {:>12}",
        "mutant", "kit schedules", "kit time", "stress runs", "stress time"
    );
    let (mut kit_found, mut stress_found) = (0, 0);
    let (mut kit_total, mut stress_total) = (Duration::ZERO, Duration::ZERO);
    let mut both = 0;
    let mut ratio_sum = 0.0;
    let mutants = Mutant::all();
    for mutant in &mutants {
        let mutant = *mutant;
        let kit = hunt_mutant(corpus, mutant, 20).kill;
        let implementation = crate::implementation::Implementation::mutant(mutant);
        let factory = move || -> Box<dyn Subject + Send> { implementation.subject() };
        let (runs, stress) = stress_hunt(scenarios, &factory, budget);
        let show = |time: Option<Duration>| match time {
            Some(time) => format!("{:.2} ms", time.as_secs_f64() * 1000.0),
            None => "missed".to_string(),
        };
        println!(
            "{:<28} {:>14} {:>12} {:>14} {:>12}",
            mutant.name(),
            kit.as_ref()
                .map(|kill| kill.schedules.to_string())
                .unwrap_or_else(|| "-".into()),
            show(kit.as_ref().map(|kill| kill.elapsed)),
            runs,
            show(stress)
        );
        if let Some(kill) = &kit {
            kit_found += 1;
            kit_total += kill.elapsed;
        }
        if let Some(time) = stress {
            stress_found += 1;
            stress_total += time;
            if let Some(kill) = &kit {
                both += 1;
                ratio_sum += time.as_secs_f64() / kill.elapsed.as_secs_f64().max(1e-9);
            }
        }
    }
    let count = mutants.len();
    println!(
        "detection: kit {kit_found}/{count}, naive stress {stress_found}/{count} within {:.1} s each",
        budget.as_secs_f64()
    );
    let mean = |total: Duration, found: usize| total.as_secs_f64() * 1000.0 / found.max(1) as f64;
    println!(
        "mean time to detect (detected only): kit {:.2} ms, naive stress {:.2} ms",
        mean(kit_total, kit_found),
        mean(stress_total, stress_found)
    );
    if both > 0 {
        println!(
            "stress time / kit time, mean over the {both} mutants both detected: {:.0}x",
            ratio_sum / both as f64
        );
    }
}

/// `bench --check-session LINES`: each generated file checked in both formats by a child
/// process of this binary, with its wall time and peak resident memory.
fn check_session_on_generated_files(lines: usize) -> u8 {
    use crate::bench::session::{run_check_session, write_session, SessionShape, TempSession};
    let binary = match std::env::current_exe() {
        Ok(binary) => binary,
        Err(error) => {
            eprintln!("agentsim: cannot find this binary to run it: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    println!(
        "check-session on generated session files of {lines} lines, each run a child process (output to /dev/null)"
    );
    println!();
    println!("| file | format | exit | time | peak memory |");
    println!("|---|---|---:|---:|---:|");
    for shape in [SessionShape::Clean, SessionShape::Damaged] {
        let file = TempSession::new(shape, lines);
        let bytes = match write_session(&file.0, shape, lines) {
            Ok(bytes) => bytes,
            Err(error) => {
                eprintln!("agentsim: {}: cannot write: {error}", file.0.display());
                return EXIT_BAD_INPUT;
            }
        };
        for json in [false, true] {
            let run = match run_check_session(&binary, &file.0, json) {
                Ok(run) => run,
                Err(error) => {
                    eprintln!("agentsim: cannot run check-session: {error}");
                    return EXIT_BAD_INPUT;
                }
            };
            println!(
                "| {} ({:.0} MB) | {} | {} | {:.2} s | {:.0} MB |",
                shape.name(),
                bytes as f64 / 1e6,
                if json { "json" } else { "human" },
                run.exit_code.map_or("signal".to_string(), |code| code.to_string()),
                run.elapsed.as_secs_f64(),
                run.peak_rss_bytes as f64 / 1e6
            );
        }
    }
    EXIT_PASSED
}

/// `bench --growth`: schedules per second and peak memory as the scenario grows (1 to 6 copies
/// of `--scenario`) and as the exploration grows (10^3 schedules up to `--growth-schedules`);
/// then one run's time and memory as the scenario grows to 10,000 operations.
fn growth(args: &BenchArgs) -> u8 {
    use crate::bench::growth::{explore_measured, TempScenarios};
    use crate::bench::session::ChildRun;
    let binary = match std::env::current_exe() {
        Ok(binary) => binary,
        Err(error) => {
            eprintln!("agentsim: cannot find this binary to run it: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let base = match std::fs::read_to_string(&args.scenario)
        .map_err(|error| error.to_string())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).map_err(|error| error.to_string()))
    {
        Ok(base) => base,
        Err(error) => {
            eprintln!("agentsim: {}: {error}", args.scenario.display());
            return EXIT_BAD_INPUT;
        }
    };
    let operations = base["operations"].as_array().map_or(0, Vec::len) as u64;
    let files = match TempScenarios::write(&base, 6) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("agentsim: cannot write the grown scenarios: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let row = |label: String, schedules: u64, run: ChildRun| {
        println!(
            "| {label} | {schedules} | {} | {:.2} s | {:.0} | {:.1} MB |",
            run.exit_code.map_or("signal".to_string(), |code| code.to_string()),
            run.elapsed.as_secs_f64(),
            schedules as f64 / run.elapsed.as_secs_f64().max(1e-9),
            run.peak_rss_bytes as f64 / 1e6
        );
    };
    println!(
        "growth: `{}` explored under random on one thread, each point a child process (output to /dev/null)",
        args.scenario.display()
    );
    println!();
    println!("| operations | schedules | exit | time | schedules/s | peak memory |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for (copies, file) in files.paths().iter().enumerate() {
        let size = operations * (copies as u64 + 1);
        match explore_measured(&binary, file, args.budget) {
            Ok(run) => row(size.to_string(), args.budget, run),
            Err(error) => {
                eprintln!("agentsim: cannot run explore: {error}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    println!();
    println!("| exploration | schedules | exit | time | schedules/s | peak memory |");
    println!("|---:|---:|---:|---:|---:|---:|");
    let mut schedules = 1_000;
    while schedules <= args.growth_schedules {
        match explore_measured(&binary, &args.scenario, schedules) {
            Ok(run) => row(format!("10^{}", schedules.ilog10()), schedules, run),
            Err(error) => {
                eprintln!("agentsim: cannot run explore: {error}");
                return EXIT_BAD_INPUT;
            }
        }
        schedules *= 10;
    }
    println!();
    growth_of_one_run(&binary, &base)
}

/// `bench --growth`'s last table: one run of `base` repeated up to 10,000 operations, with what
/// its requests carry, and the cost per message carried (flat when the cost is linear in it).
fn growth_of_one_run(binary: &std::path::Path, base: &serde_json::Value) -> u8 {
    use crate::bench::growth::{messages_carried, repeated, run_once_measured, run_sizes, TempScenarios};
    let operations = base["operations"].as_array().map_or(0, Vec::len);
    let sizes = run_sizes(base);
    let files = match TempScenarios::write_sizes(base, &sizes) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("agentsim: cannot write the grown scenarios: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    println!(
        "one run: each size run once on its canonical schedule (`agentsim run FILE`), a child process (output to /dev/null); \
         at most {} messages carried in all (limits::CONTEXT_MESSAGES_MAX), a larger size is refused at load (exit 2)",
        crate::limits::CONTEXT_MESSAGES_MAX
    );
    println!();
    println!("| operations | messages carried | exit | time | peak memory | per 1,000 messages carried |");
    println!("|---:|---:|---:|---:|---:|---:|");
    // Every child first: a child's peak memory counts this process's at the spawn, and counting
    // what the requests carry runs each size here.
    let mut runs = Vec::with_capacity(sizes.len());
    for file in files.paths() {
        match run_once_measured(binary, file) {
            Ok(run) => runs.push(run),
            Err(error) => {
                eprintln!("agentsim: cannot run the grown scenario: {error}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    for (copies, run) in sizes.iter().zip(runs) {
        let carried = messages_carried(&repeated(base, *copies));
        let (shown, per_thousand) = match carried {
            // Below 10,000 messages the process's own start and the load are most of the cost.
            Some(carried) if carried < 10_000 => (carried.to_string(), "-".to_string()),
            Some(carried) => (
                carried.to_string(),
                format!(
                    "{:.1} ms, {:.2} MB",
                    run.elapsed.as_secs_f64() * 1e6 / carried as f64,
                    run.peak_rss_bytes as f64 * 1e3 / 1e6 / carried as f64
                ),
            ),
            None => ("refused".to_string(), "-".to_string()),
        };
        println!(
            "| {} | {shown} | {} | {:.2} s | {:.1} MB | {per_thousand} |",
            operations * copies,
            run.exit_code.map_or("signal".to_string(), |code| code.to_string()),
            run.elapsed.as_secs_f64(),
            run.peak_rss_bytes as f64 / 1e6
        );
    }
    EXIT_PASSED
}

fn rule_costs(args: &BenchArgs) -> u8 {
    let scenario = match suite::load_corpus(std::slice::from_ref(&args.scenario)) {
        Ok(mut corpus) if !corpus.is_empty() => corpus.remove(0),
        Ok(_) => {
            eprintln!("agentsim: {}: no scenario", args.scenario.display());
            return EXIT_BAD_INPUT;
        }
        Err(error) => {
            eprintln!("agentsim: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let window = Duration::from_secs_f64(args.seconds.max(0.1));
    let costs = crate::bench::rules::rule_costs(&scenario.scenario, window);
    println!(
        "rule costs: one thread, `{}`, {} random schedules (seeds 0 to {}, {:.1} events each), {} rounds in {:.1} s",
        scenario.name,
        costs.traces,
        costs.traces - 1,
        costs.events_per_trace,
        costs.rounds,
        window.as_secs_f64()
    );
    let share = |nanos: f64| 100.0 * nanos / costs.check_all.max(1e-9);
    println!("{:<16} {:>9.0} ns per trace", "check_all", costs.check_all);
    println!(
        "{:<16} {:>9.0} ns per trace  {:>5.1}% of check_all",
        "the parts, summed",
        costs.parts(),
        share(costs.parts())
    );
    println!(
        "{:<16} {:>9.0} ns per trace  {:>5.1}%",
        "Timeline::new",
        costs.timeline,
        share(costs.timeline)
    );
    println!(
        "{:<16} {:>9.0} ns per trace  {:>5.1}% of check_all; the run itself {:.0} ns",
        "oracle (REF-1)",
        costs.oracle,
        share(costs.oracle),
        costs.run
    );
    for rule in &costs.rules {
        println!(
            "{:<16} {:>9.0} ns per trace  {:>5.1}%",
            rule.id,
            rule.nanos_per_trace,
            share(rule.nanos_per_trace)
        );
    }
    println!("(a rule first to use what the timeline derives lazily pays for it, as in check_all)");
    EXIT_PASSED
}

/// `bench --impl CMD`: the adapter's random schedules per second beside the in-process
/// reference's on the same schedules, and what of the adapter's time is the kit's.
fn adapter_speed(args: &BenchArgs, command: &str) -> u8 {
    use crate::explore::{explore, ExploreConfig};
    use crate::implementation::Implementation;
    let corpus = match suite::load_corpus(std::slice::from_ref(&args.corpus)) {
        Ok(corpus) => corpus,
        Err(error) => {
            eprintln!("agentsim: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let config = ExploreConfig::new(crate::sim::StrategyKind::Random, args.seeds);
    let jobs = args.jobs as usize;
    println!(
        "adapter speed: `{command}`, random schedules of {} ({} scenarios, {} seeds each), {jobs} jobs",
        args.corpus.display(),
        corpus.len(),
        args.seeds
    );
    let adapter = Implementation::adapter(command, Duration::from_millis(args.step_timeout_ms));
    let mut rates = Vec::new();
    for (what, implementation) in [("adapter", &adapter), ("in process", &Implementation::reference())] {
        let waited = crate::protocol::external::time_waited_for_adapters();
        let started = std::time::Instant::now();
        let summary = explore(&corpus, config.clone(), implementation, jobs, &|_, _| {});
        let elapsed = started.elapsed();
        let waited = crate::protocol::external::time_waited_for_adapters() - waited;
        let schedules = summary.passed + summary.failed + summary.not_applicable;
        let rate = schedules as f64 / elapsed.as_secs_f64().max(1e-9);
        println!(
            "  {what:<10} {schedules:>7} schedules in {:>7.2} s: {rate:>8.1} per second ({} failed, {} not applicable, {} broken)",
            elapsed.as_secs_f64(),
            summary.failed,
            summary.not_applicable,
            summary.broken
        );
        rates.push((rate, elapsed, waited, schedules));
    }
    let (rate, elapsed, waited, schedules) = rates[0];
    // Each worker's time, less what it spent waiting for its adapter, is the kit's (the
    // scheduler, the judging, the pipe's reading and writing); the tail, where workers idle,
    // counts as the kit's too, so the share is an upper bound.
    let worker_time = elapsed.as_secs_f64() * jobs.min(corpus.len()).max(1) as f64;
    let kit = (worker_time - waited.as_secs_f64()).max(0.0);
    println!(
        "  the kit's share of the adapter's schedules: {:.1}% ({:.0} us of {:.0} us per schedule per worker; at most, as idle workers at the end count as the kit's)",
        100.0 * kit / worker_time.max(1e-9),
        1e6 * kit / schedules.max(1) as f64,
        1e6 * worker_time / schedules.max(1) as f64
    );
    println!("  in process / adapter: {:.1}x", rates[1].0 / rate.max(1e-9));
    EXIT_PASSED
}
