//! `agentsim bench --interleaving`: the interleaving tier, side by side, in process or served
//! over the protocol (`--impl`): each strategy's schedules to find each mutant, then, in
//! process, what the exhaustive column walked and PCT's measured probability beside its bound.

use std::time::Duration;

use super::BenchArgs;
use crate::cli::{EXIT_BAD_INPUT, EXIT_PASSED};
use crate::suite;

/// The interleaving tier, side by side (`bench --interleaving`): a markdown table, then PCT's
/// measured detection probability beside its guarantee.
pub(super) fn interleaving_side_by_side(args: &BenchArgs) -> u8 {
    use crate::bench::compare::{detect, STRATEGIES};
    use crate::bench::stress::stress_hunt;
    use crate::sim::Subject;
    use crate::zoo::Mutant;
    if let Some(unknown) = args
        .only_strategies
        .iter()
        .find(|name| !STRATEGIES.contains(&name.as_str()))
    {
        eprintln!(
            "agentsim: --only-strategy {unknown}: not one of {}",
            STRATEGIES.join(", ")
        );
        return EXIT_BAD_INPUT;
    }
    let chosen = |name: &str| args.only_strategies.is_empty() || args.only_strategies.iter().any(|only| only == name);
    let corpus = match suite::load_corpus(std::slice::from_ref(&args.corpus)) {
        Ok(corpus) => corpus,
        Err(error) => {
            eprintln!("agentsim: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    // Stress tasks may outlive a run by a few milliseconds: they borrow a corpus that lives as
    // long as the process.
    let scenarios: &'static [crate::scenario::Scenario] = Box::leak(
        corpus
            .iter()
            .filter(|loaded| loaded.scenario.net.is_none())
            .map(|loaded| loaded.scenario.clone())
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    let stress_budget = Duration::from_secs_f64(args.stress_budget.max(0.1));
    let repeats = args.repeats;
    // Over the wire: naive stress drives the reference's own tasks, and the tables after the
    // side-by-side one are the in-process reference's; only the strategies' columns run.
    let no_stress = args.no_stress || args.implementation.is_some();
    let where_ = match &args.implementation {
        Some(command) => format!("over the protocol, each mutant served by `{command} --mutant NAME`"),
        None => "in process".to_string(),
    };
    println!(
        "interleaving tier, side by side ({where_}): {} scenarios; {} schedules per scenario per strategy; {} repetition(s); naive stress {}",
        corpus.len(),
        args.budget,
        repeats,
        if no_stress {
            "not run".to_string()
        } else {
            format!("{:.1} s per mutant", stress_budget.as_secs_f64())
        }
    );
    println!();
    println!("| mutant | naive stress | random | pct | pct:3:8 | exhaustive | guided per scenario | guided |");
    println!("|---|---|---|---|---|---|---|---|");
    let show = |schedules: u64, time: Option<Duration>| match time {
        Some(time) => format!("{schedules} / {:.1} ms", time.as_secs_f64() * 1000.0),
        None => format!("missed ({schedules})"),
    };
    // Per strategy: schedules and microseconds summed over detections, detections, the worst
    // detection, and per mutant the mean schedules (a miss counted at the schedules it ran).
    let mut totals = [(0u64, 0u64, 0u64, 0u64); STRATEGIES.len()];
    let mut means: Vec<Vec<f64>> = STRATEGIES.iter().map(|_| Vec::new()).collect();
    let tier: Vec<Mutant> = Mutant::all()
        .into_iter()
        .filter(|mutant| mutant.interleaving_only())
        .collect();
    for mutant in &tier {
        let mutant = *mutant;
        let hunted = match &args.implementation {
            Some(command) => crate::implementation::Implementation::adapter(
                format!("{command} --mutant {}", mutant.name()),
                Duration::from_millis(args.step_timeout_ms),
            ),
            None => crate::implementation::Implementation::mutant(mutant),
        };
        let stress = if no_stress {
            "-".to_string()
        } else {
            let implementation = crate::implementation::Implementation::mutant(mutant);
            let factory = move || -> Box<dyn Subject + Send> { implementation.subject() };
            let (runs, time) = stress_hunt(scenarios, &factory, stress_budget);
            show(runs, time)
        };
        let mut cells = Vec::new();
        for (index, name) in STRATEGIES.iter().enumerate() {
            if !chosen(name) {
                cells.push("-".to_string());
                continue;
            }
            // Exhaustive enumeration takes no seed: one repetition says all.
            let runs = if *name == "exhaustive" { 1 } else { repeats };
            let (mut sum, mut worst, mut missed, mut last) = (0, 0, 0, None);
            for repeat in 0..runs {
                let detection = detect(&corpus, &hunted, name, args.budget, repeat);
                sum += detection.schedules;
                worst = worst.max(detection.schedules);
                match detection.time {
                    Some(time) => {
                        totals[index].0 += detection.schedules;
                        totals[index].1 += time.as_micros() as u64;
                        totals[index].2 += 1;
                        totals[index].3 = totals[index].3.max(detection.schedules);
                    }
                    None => missed += 1,
                }
                last = Some(detection);
            }
            means[index].push(sum as f64 / runs as f64);
            let detection = last.expect("one repetition at least");
            cells.push(match runs {
                1 => show(detection.schedules, detection.time),
                _ if missed > 0 => format!(
                    "mean {:.0}, worst {worst}, missed {missed}/{runs}",
                    sum as f64 / runs as f64
                ),
                _ => format!("mean {:.0}, worst {worst}", sum as f64 / runs as f64),
            });
        }
        // The mutant's adapter process is done with.
        hunted.retire_pooled();
        println!("| {} | {stress} | {} |", mutant.name(), cells.join(" | "));
    }
    println!();
    for (index, name) in STRATEGIES.iter().enumerate().filter(|(_, name)| chosen(name)) {
        let (schedules, micros, found, worst) = totals[index];
        let runs = if *name == "exhaustive" { 1 } else { repeats };
        println!(
            "{name}: detected {found} of {}; schedules to detect, mean over those: {:.0}; worst: {worst}; time, mean: {:.1} ms",
            tier.len() as u64 * runs,
            schedules as f64 / found.max(1) as f64,
            micros as f64 / 1000.0 / found.max(1) as f64
        );
    }
    // Each guided search against random, mutant by mutant (means over the repetitions).
    for searched in ["guided-per-scenario", "guided"] {
        if !chosen("random") || !chosen(searched) {
            continue;
        }
        let index = STRATEGIES
            .iter()
            .position(|name| *name == searched)
            .expect("a strategy");
        let (random, guided) = (&means[0], &means[index]);
        let (worst_ratio, worst_mutant) =
            guided
                .iter()
                .zip(random)
                .zip(&tier)
                .fold((0.0, ""), |best, ((guided, random), mutant)| match guided / random {
                    ratio if ratio > best.0 => (ratio, mutant.name()),
                    _ => best,
                });
        println!(
            "{searched} / random, mean schedules to detect: {:.2} over the tier; worst mutant {worst_ratio:.2} ({worst_mutant})",
            guided.iter().sum::<f64>() / random.iter().sum::<f64>().max(1e-9)
        );
    }
    if chosen("exhaustive") && args.implementation.is_none() {
        exhaustive_space(&corpus, args.budget);
    }
    if args.pct_seeds > 0 && args.implementation.is_none() {
        pct_against_its_bound(&corpus, &tier, args.pct_seeds);
    }
    EXIT_PASSED
}

/// What the exhaustive column walked: the reduced enumeration of every in-process scenario on
/// the reference, up to `budget` runs each, against plain enumeration (counted where it fits,
/// else Knuth's estimate, as `explore` reports it per scenario).
fn exhaustive_space(corpus: &[crate::scenario::LoadedScenario], budget: u64) {
    use crate::explore::{explore, ExploreConfig, SpaceSize};
    use crate::sim::StrategyKind;
    let in_process: Vec<_> = corpus
        .iter()
        .filter(|loaded| loaded.scenario.net.is_none())
        .cloned()
        .collect();
    let config = ExploreConfig::new(
        StrategyKind::Exhaustive {
            bound: u32::try_from(budget).unwrap_or(u32::MAX),
            reduced: true,
        },
        1,
    );
    let threads = std::thread::available_parallelism().map(usize::from).unwrap_or(1);
    let summary = explore(
        &in_process,
        config,
        &crate::implementation::Implementation::reference(),
        threads,
        &|_, _| {},
    );
    let enumerations = &summary.enumerations;
    let covered = enumerations.iter().filter(|e| e.covered).count();
    let runs: u64 = enumerations.iter().map(|e| e.schedules + e.abandoned).sum();
    let abandoned: u64 = enumerations.iter().map(|e| e.abandoned).sum();
    let counted = enumerations
        .iter()
        .filter(|e| matches!(e.plain, Some(SpaceSize::Counted(_))))
        .count();
    let plain: f64 = enumerations.iter().filter_map(|e| e.plain).map(SpaceSize::value).sum();
    let pruned = enumerations
        .iter()
        .filter(|e| e.reduction_factor().is_some_and(|factor| factor > 1.0))
        .count();
    println!(
        "exhaustive, the reduced enumeration on the reference, up to {budget} runs per scenario: {} scenarios, {covered} covered, {runs} runs ({abandoned} abandoned by sleep sets), {} failed; plain enumeration {plain:.3e} schedules ({counted} scenarios counted, {} estimated); the reduction prunes on {pruned} scenarios",
        enumerations.len(),
        summary.failed,
        enumerations.len() - counted
    );
}

/// Per tier mutant: PCT's detection probability per schedule on the scenario where
/// `pct:3:8`'s is highest, for `pct` (k = 48) and `pct:3:8`, beside PCT's guarantee
/// `1/(n k^(d-1))` for that scenario (its measured mean steps as `k`).
fn pct_against_its_bound(corpus: &[crate::scenario::LoadedScenario], tier: &[crate::zoo::Mutant], seeds: u64) {
    use crate::bench::compare::{pct_detection, pct_on};
    use crate::sim::StrategyKind;
    let depth = 3;
    let default = StrategyKind::Pct { depth };
    let measured_steps = StrategyKind::PctSteps {
        depth,
        steps: crate::sim::strategy::PCT_STEPS_MEASURED,
    };
    println!();
    println!(
        "pct, depth d = {depth}: detection probability per schedule ({seeds} seeds) on the scenario where pct:3:8's is highest, beside PCT's guarantee 1/(n k^(d-1)) with n = {} lanes and k = that scenario's mean steps; pct places its change points in the first {} steps, pct:3:8 in the first 8",
        crate::sim::Choice::LANES,
        crate::sim::strategy::PCT_STEPS_ESTIMATE
    );
    println!();
    println!("| mutant | scenario | k | pct | pct:3:8 | bound |");
    println!("|---|---|---:|---:|---:|---:|");
    for mutant in tier {
        let Some(best) = pct_detection(corpus, *mutant, measured_steps, seeds) else {
            println!("| {} | none | - | - | 0 | - |", mutant.name());
            continue;
        };
        let loaded = corpus
            .iter()
            .find(|loaded| loaded.name == best.scenario)
            .expect("the scenario is in the corpus");
        let with_default = pct_on(loaded, *mutant, default, seeds);
        println!(
            "| {} | {} | {:.1} | {:.3} | {:.3} | {:.4} |",
            mutant.name(),
            best.scenario,
            best.steps_mean,
            with_default.probability(),
            best.probability(),
            best.bound(depth)
        );
    }
}
