//! `agentsim explore`: many schedules per scenario, the summary, and what follows it (shrinking,
//! pages, the expectations' comparison). The coverage table is `coverage.rs`'s; `mutants`,
//! which hunts the zoo on the same corpus loading, is `mutants.rs`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::explore::{explore, ExploreConfig, ExploreSummary};
use crate::implementation::Implementation;
use crate::run::WorldKind;
use crate::scenario::LoadedScenario;
use crate::sim::StrategyKind;
use crate::suite;
use crate::zoo::Mutant;

use super::coverage::coverage_report;
use super::{parse_strategy, EXIT_BAD_INPUT, EXIT_BROKEN, EXIT_PASSED, EXIT_VIOLATION};

#[derive(Args)]
pub struct ExploreArgs {
    /// Scenario files or folders (default: the built-in corpus, `agentsim scenarios list`).
    paths: Vec<PathBuf>,
    /// random | pct[:DEPTH[:K]] | exhaustive[:BOUND] | exhaustive-plain[:BOUND] | guided.
    /// Default: guided, on the in-process reference and on an implementation (`--impl`) alike:
    /// it finds the interleaving tier in the fewest schedules (docs/benchmarks.md, "The
    /// interleaving tier, side by side"); random with --world net, which explores by seed.
    /// `exhaustive` enumerates each scenario's schedules depth first, up to BOUND runs (default
    /// 10000), with partial-order reduction: one schedule per class of schedules that differ
    /// only in the order of independent choices (observers' answers; docs/benchmarks.md,
    /// "Exhaustive enumeration"); `exhaustive-plain` runs every distinct choice sequence. Over
    /// the wire a schedule is the same choice sequence as in process: an adapter that replays
    /// its runs the same (`--check-determinism`) takes every strategy.
    #[arg(long, value_parser = parse_strategy)]
    strategy: Option<StrategyKind>,
    /// Seeds 0..N per scenario (random, pct); for guided, N schedules per scenario on average,
    /// which the search shares among the scenarios by energy: at least 1 (an exploration that
    /// runs nothing is bad input, like an empty corpus).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Run only the seeds of shard K of N (`seed % N == K - 1`), e.g. `--shard 2/4`.
    #[arg(long, value_parser = parse_shard, default_value = "1/1")]
    shard: (u64, u64),
    /// Stop starting new schedules after this many seconds (at least 1: an exploration that
    /// runs nothing is bad input).
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..))]
    time_limit: Option<u64>,
    /// Replay every schedule once more and compare the traces byte for byte.
    #[arg(long)]
    check_determinism: bool,
    /// Explore a deliberately broken reference.
    #[arg(long, value_parser = crate::run::parse_mutant)]
    mutant: Option<Mutant>,
    /// Workers, each with its own adapter process with `--impl` (default: the machine's cores;
    /// at least 1; capped to the scenarios, since a worker takes a scenario at a time; guided
    /// runs on one). `--threads` is its old name.
    #[arg(long = "jobs", alias = "threads", value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,
    /// Explore an implementation behind the adapter protocol (`sh -c CMD`; each worker thread
    /// keeps one adapter process for all its schedules, protocol 2) instead of the in-process
    /// reference.
    #[arg(long = "impl", value_name = "CMD")]
    implementation: Option<String>,
    /// Bound on every wait for the adapter, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    step_timeout_ms: u64,
    /// `net`: run every seed in the networked world (turmoil), with faults drawn from the seed
    /// (partitions, held links, store crashes) on top of the scenario's own.
    #[arg(long, value_enum, default_value_t = WorldKind::Sim)]
    world: WorldKind,
    /// Count, per rule and situation, the traces that reached it, print the table, and fail
    /// (exit 1) when a situation this world can reach was never reached.
    #[arg(long)]
    coverage: bool,
    /// With `--coverage`: also write the counts as JSON to FILE.
    #[arg(long, value_name = "FILE", requires = "coverage")]
    coverage_json: Option<PathBuf>,
    /// Shrink the first failing schedule of each scenario (up to 10) to a minimal scenario
    /// file with its schedule pinned, written to DIR, and print its replay command.
    #[arg(long, value_name = "DIR")]
    shrink_to: Option<PathBuf>,
    /// Write one HTML page for each of the first 50 failing schedules (re-run to get its
    /// trace) and an index.html to DIR.
    #[arg(long, value_name = "DIR")]
    html_dir: Option<PathBuf>,
    /// Expected deviations (expectations/<impl>.json): every failing (scenario, rule) found must
    /// be listed there (under `scenarios` or `explored`); then the run exits 0.
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
    /// Stop starting schedules once N have failed (the schedules already running finish).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_failures: Option<u64>,
    #[command(flatten)]
    judging: crate::run::Judging,
}

fn parse_threads(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(threads) if threads >= 1 => Ok(threads),
        _ => Err(format!("`{text}`: expected a number of jobs of at least 1")),
    }
}

fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let parsed = text
        .split_once('/')
        .and_then(|(index, count)| Some((index.parse::<u64>().ok()?, count.parse::<u64>().ok()?)));
    match parsed {
        Some((index, count)) if count > 0 && (1..=count).contains(&index) => Ok((index, count)),
        _ => Err(format!("`{text}`: expected K/N with 1 <= K <= N")),
    }
}

pub(super) fn load(paths: Vec<PathBuf>) -> Result<Vec<LoadedScenario>, u8> {
    suite::load_or_built_in(&paths).map_err(|error| {
        eprintln!("agentsim: {error}");
        EXIT_BAD_INPUT
    })
}

fn threads(requested: Option<usize>) -> usize {
    requested.unwrap_or_else(|| std::thread::available_parallelism().map(usize::from).unwrap_or(1))
}

/// A progress bar with rate and ETA on a terminal; a plain line every 10% otherwise.
fn progress_reporter() -> impl Fn(u64, u64) + Sync {
    let terminal = std::io::stderr().is_terminal();
    let bar = ProgressBar::hidden();
    if terminal {
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} schedules  {per_sec}  eta {eta}")
                .expect("the template is valid"),
        );
    }
    let last_decile = std::sync::atomic::AtomicU64::new(0);
    move |done: u64, planned: u64| {
        if terminal {
            bar.set_length(planned);
            bar.set_position(done);
            if done >= planned {
                bar.finish_and_clear();
            }
        } else if let Some(decile) = (done * 10).checked_div(planned) {
            if last_decile.fetch_max(decile, std::sync::atomic::Ordering::Relaxed) < decile {
                eprintln!("explore: {done}/{planned} schedules");
            }
        }
    }
}

pub fn run_explore(args: ExploreArgs) -> u8 {
    let corpus = match load(args.paths) {
        Ok(corpus) => corpus,
        Err(code) => return code,
    };
    let expectations = match &args.expect {
        Some(path) => match crate::deviations::load(path) {
            Ok(file) => Some((path.clone(), file)),
            Err(error) => {
                eprintln!("agentsim: {error}");
                return EXIT_BAD_INPUT;
            }
        },
        None => None,
    };
    let strategy = args.strategy.unwrap_or(if args.world == WorldKind::Net {
        StrategyKind::Random
    } else {
        StrategyKind::Guided
    });
    if strategy == StrategyKind::Scripted {
        eprintln!("agentsim: explore needs --strategy guided, random, pct, exhaustive or exhaustive-plain (scripted is one schedule: use `run`)");
        return EXIT_BAD_INPUT;
    }
    // A shard holding none of the seeds runs nothing, like `--seeds 0` (exhaustive has no seeds).
    if !matches!(strategy, StrategyKind::Exhaustive { .. })
        && crate::explore::shard_seed_count(args.seeds, args.shard) == 0
    {
        eprintln!(
            "agentsim: --shard {}/{} holds none of the seeds 0..{} (seed % {} == {}): an exploration that runs nothing is bad input",
            args.shard.0,
            args.shard.1,
            args.seeds,
            args.shard.1,
            args.shard.0 - 1
        );
        return EXIT_BAD_INPUT;
    }
    let config = ExploreConfig {
        strategy,
        seeds: args.seeds,
        shard: args.shard,
        time_limit: args.time_limit.map(Duration::from_secs),
        check_determinism: args.check_determinism,
        world: args.world,
        coverage: args.coverage,
        selection: args.judging.selection(),
        max_failures: args.max_failures,
    };
    let mutant = args.mutant;
    if args.world == WorldKind::Net && matches!(strategy, StrategyKind::Exhaustive { .. } | StrategyKind::Guided) {
        eprintln!("agentsim: --world net explores by seed (random or pct), not exhaustive or guided");
        return EXIT_BAD_INPUT;
    }
    if args.shrink_to.is_some() && args.world == WorldKind::Net {
        eprintln!("agentsim: --shrink-to shrinks choice sequences; the networked world's schedules are turmoil's (no --world net)");
        return EXIT_BAD_INPUT;
    }
    let implementation = match &args.implementation {
        Some(command) => Implementation::adapter(command.clone(), Duration::from_millis(args.step_timeout_ms)),
        None => Implementation::reference(),
    }
    .with_mutant(mutant);
    let report = progress_reporter();
    let started = Instant::now();
    let summary = explore(&corpus, config.clone(), &implementation, threads(args.threads), &report);
    if args.world == WorldKind::Net {
        println!(
            "networked world: turmoil seed = turmoil_seed(kit seed), e.g. seed 0 -> {:#018x}",
            crate::net::turmoil_seed(0)
        );
    }
    let unreached = match &summary.coverage {
        Some(counts) => {
            let report = coverage_report(counts, args.world);
            print!("{}", report.text);
            if let Some(path) = &args.coverage_json {
                let json = serde_json::to_string_pretty(&report.json).expect("coverage serializes");
                if let Err(error) = crate::whole_file::write(path, json + "\n") {
                    eprintln!("agentsim: {}: {error}", path.display());
                    return EXIT_BAD_INPUT;
                }
            }
            report.unreached
        }
        None => 0,
    };
    print!("{}", render_summary(&summary, strategy, started.elapsed()));
    if let Some(dir) = &args.shrink_to {
        if let Err(code) = shrink_failures(&corpus, &summary, dir, &implementation) {
            return code;
        }
    }
    if let Some(dir) = &args.html_dir {
        let written = crate::html::write_explore_pages(dir, &corpus, &summary);
        if let Err(code) = super::report_pages(dir, written) {
            return code;
        }
    }
    if let Some((path, file)) = &expectations {
        let failures: Vec<(crate::deviations::Pair, String)> = summary
            .pairs
            .iter()
            .map(|((scenario, rule), message)| {
                (
                    crate::deviations::Pair {
                        scenario: scenario.clone(),
                        rule: rule.clone(),
                    },
                    message.clone(),
                )
            })
            .collect();
        let comparison = crate::deviations::compare_explored(file, &failures);
        println!(
            "expectations {} ({}): {} failing (scenario, rule) pairs, all listed but {} unexpected",
            path.display(),
            file.implementation,
            comparison.listed.len() + comparison.unexpected.len(),
            comparison.unexpected.len()
        );
        for (pair, message) in &comparison.unexpected {
            println!(
                "UNEXPECTED {} {}: fails under exploration but is not listed: {message}",
                pair.scenario, pair.rule
            );
        }
        return if !comparison.unexpected.is_empty() || unreached > 0 {
            EXIT_VIOLATION
        } else {
            EXIT_PASSED
        };
    }
    if summary.broken > 0 {
        EXIT_BROKEN
    } else if summary.failed > 0 || unreached > 0 {
        EXIT_VIOLATION
    } else {
        EXIT_PASSED
    }
}

/// How many failing schedules explore prints one by one; the summary counts them all.
const FAILURES_SHOWN: usize = 50;

/// How many of the schedules that could not be driven the summary names, with their replay.
const BROKEN_NAMED: usize = 20;

/// Failures first (each with every violation, root cause first, and its replay command),
/// enumeration coverage, root causes and findings, the level, then the closing line.
fn render_summary(summary: &ExploreSummary, strategy: StrategyKind, elapsed: Duration) -> String {
    let mut text = String::new();
    for failure in summary.failures.iter().take(FAILURES_SHOWN) {
        text.push_str(&format!("FAIL   {}\n", failure.origin_or_scenario()));
        if let Some(broken) = &failure.broken {
            text.push_str(&format!("       broken: {broken} ({})\n", broken.code()));
        }
        for (index, violation) in failure.violations.iter().enumerate() {
            let line = format!("{} {:?} {}", violation.id(), violation.lines, violation.message);
            if index == 0 {
                text.push_str(&format!("       root cause: {line}\n"));
                let later = failure.violations.len() - 1;
                if later > 0 {
                    text.push_str(&format!(
                        "       then {later} later violation{}, which may follow from it:\n",
                        if later == 1 { "" } else { "s" }
                    ));
                }
            } else {
                text.push_str(&format!("         {line}\n"));
            }
        }
        text.push_str(&format!("       replay: {}\n", failure.replay()));
    }
    let shown = summary.failures.len().min(FAILURES_SHOWN) as u64;
    if summary.failed > shown {
        text.push_str(&format!(
            "... and {} more failing schedules (counted in the summary below)\n",
            summary.failed - shown
        ));
    }
    text.push_str(&summary.tally.differences_line("schedule"));
    text.push_str(&summary.tally.text("schedule"));
    if summary.broken > 0 {
        text.push_str(&format!(
            "broken: {} schedules could not be driven (exit 3):\n",
            summary.broken
        ));
        // Each named, with the command that replays it (the failures kept for the report).
        let broken: Vec<_> = summary
            .failures
            .iter()
            .filter(|failure| failure.broken.is_some())
            .collect();
        for failure in broken.iter().take(BROKEN_NAMED) {
            let code = failure.broken.as_ref().map(|broken| broken.code()).unwrap_or_default();
            text.push_str(&format!(
                "  {} ({code}): {}\n",
                failure.origin_or_scenario(),
                failure.replay()
            ));
        }
        let named = broken.len().min(BROKEN_NAMED) as u64;
        if summary.broken > named {
            text.push_str(&format!("  ... and {} more\n", summary.broken - named));
        }
    }
    if summary.passed + summary.failed > 0 {
        text.push_str(&super::findings::level_line(
            &summary.tally.level_counts(&summary.selection),
            "schedule",
        ));
    }
    if !summary.selection.is_all() {
        text.push_str(&format!("judged by {}\n", summary.selection.describe()));
    }
    if summary.not_applicable > 0 {
        let scenarios = summary.not_applicable_scenarios.len();
        text.push_str(&format!(
            "{} not applicable, of {scenarios} {}:\n",
            if summary.not_applicable == 1 {
                "1 schedule".to_string()
            } else {
                format!("{} schedules", summary.not_applicable)
            },
            if scenarios == 1 { "scenario" } else { "scenarios" }
        ));
        for (scenario, reason) in &summary.not_applicable_scenarios {
            text.push_str(&format!("n/a    {scenario}: {reason}\n"));
        }
    }
    if summary.stopped_by_failures {
        text.push_str("stopped at --max-failures\n");
    }
    if let StrategyKind::Exhaustive { bound, reduced } = strategy {
        let enumerated = &summary.enumerations;
        let covered = enumerated.iter().filter(|e| e.covered).count();
        for enumeration in enumerated {
            text.push_str(&enumeration_line(enumeration, bound));
        }
        text.push_str(&format!(
            "{}: {} scenarios enumerated, {covered} fully covered\n",
            strategy_name(reduced),
            enumerated.len(),
        ));
    }
    if summary.stopped_by_time {
        text.push_str("stopped at the time limit\n");
    }
    let runs = summary.passed + summary.failed;
    let rate = runs as f64 / elapsed.as_secs_f64().max(1e-9);
    eprintln!(
        "explore: {runs} schedules in {:.2} s ({rate:.0} per second)",
        elapsed.as_secs_f64()
    );
    text.push_str(&format!("{} passed, {} failed\n", summary.passed, summary.failed));
    text
}

fn strategy_name(reduced: bool) -> &'static str {
    if reduced {
        "exhaustive"
    } else {
        "exhaustive-plain"
    }
}

/// An estimate, to two significant digits (`12,000`, `3.4e7`).
fn estimated(value: f64) -> String {
    if value >= 1e6 {
        format!("{value:.1e}")
    } else {
        let magnitude = 10f64.powi((value.max(1.0).log10().floor() as i32 - 1).max(0));
        format!("{}", ((value / magnitude).round() * magnitude) as u64)
    }
}

/// One scenario's enumeration: schedules (and runs the sleep sets abandoned), distinct traces,
/// plain enumeration's size and the reduction factor, covered or what the bound left.
fn enumeration_line(enumeration: &crate::explore::Enumeration, bound: u32) -> String {
    use crate::explore::SpaceSize;
    let mut line = format!(
        "{} {}: {} schedules",
        strategy_name(enumeration.reduced),
        enumeration.scenario,
        enumeration.schedules
    );
    if enumeration.abandoned > 0 {
        line.push_str(&format!(" (+{} runs abandoned by sleep sets)", enumeration.abandoned));
    }
    line.push_str(&format!(", {} distinct traces", enumeration.distinct_traces));
    if enumeration.reduced {
        match (enumeration.plain, enumeration.reduction_factor()) {
            (Some(SpaceSize::Counted(plain)), Some(factor)) if enumeration.remaining.is_none() => {
                line.push_str(&format!(", plain {plain}, reduction {factor:.1}x"))
            }
            (Some(plain), Some(factor)) => line.push_str(&format!(
                ", plain ~{} (estimated), reduction ~{}x (estimated)",
                estimated(plain.value()),
                if factor >= 100.0 {
                    estimated(factor)
                } else {
                    format!("{factor:.1}")
                }
            )),
            _ => {}
        }
    }
    match enumeration.remaining {
        None if enumeration.covered => line.push_str(", space covered"),
        None => line.push_str(", stopped"),
        Some(remaining) if remaining >= 1.0 => line.push_str(&format!(
            ", bound {bound} reached, ~{} more runs (estimated)",
            estimated(remaining)
        )),
        Some(_) => line.push_str(&format!(
            ", bound {bound} reached, more runs left than the estimate of the whole says (too few probes for this tree)"
        )),
    }
    line.push('\n');
    line
}

/// Failing schedules shrunk per run of `explore --shrink-to`.
const SHRINKS_MAX: usize = 10;

/// Shrinks the first failing schedule of each scenario and writes it to `dir`.
fn shrink_failures(
    corpus: &[LoadedScenario],
    summary: &ExploreSummary,
    dir: &std::path::Path,
    implementation: &Implementation,
) -> Result<(), u8> {
    if let Err(error) = std::fs::create_dir_all(dir) {
        eprintln!("agentsim: {}: {error}", dir.display());
        return Err(EXIT_BAD_INPUT);
    }
    let mut shrunk_scenarios: Vec<&str> = Vec::new();
    for failure in &summary.failures {
        if shrunk_scenarios.len() >= SHRINKS_MAX || shrunk_scenarios.contains(&failure.scenario.as_str()) {
            continue;
        }
        // The root cause, when it is a catalogue rule's (violations come root first).
        let (Some(choices), Some(violation)) = (
            &failure.choices,
            failure
                .violations
                .first()
                .filter(|violation| crate::check::RULE_IDS.contains(&violation.rule.as_str())),
        ) else {
            continue;
        };
        let Some(loaded) = corpus.iter().find(|loaded| loaded.name == failure.scenario) else {
            continue;
        };
        shrunk_scenarios.push(&failure.scenario);
        let shrunk = match crate::shrink::shrink(
            loaded,
            choices,
            &violation.rule,
            &summary.selection,
            implementation,
            &failure.origin,
        ) {
            Ok(shrunk) => shrunk,
            Err(error) => {
                println!("shrink {}: {error}", failure.scenario);
                continue;
            }
        };
        let file = dir.join(format!("{}.{}.json", failure.scenario.replace('/', "-"), shrunk.rule));
        let text = serde_json::to_string_pretty(&shrunk.scenario).expect("scenarios serialize") + "\n";
        if let Err(error) = crate::whole_file::write(&file, text) {
            eprintln!("agentsim: {}: {error}", file.display());
            return Err(EXIT_BAD_INPUT);
        }
        let replay = crate::run::Run::at(file.clone())
            .on(implementation)
            .judged_by(&summary.selection);
        println!(
            "shrunk {} ({}): {} -> {} [{} runs]",
            failure.scenario, shrunk.rule, shrunk.before, shrunk.after, shrunk.runs
        );
        println!("       wrote {}", file.display());
        println!("       replay: {}", replay.command());
    }
    Ok(())
}
