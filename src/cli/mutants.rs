//! `agentsim mutants`: the corpus against each mutant of the bug zoo, the rule that kills each,
//! and the table `golden/zoo.txt` holds.

use std::path::PathBuf;

use clap::Args;

use crate::explore::hunt_mutant;
use crate::zoo::Mutant;

use super::explore::load;
use super::{EXIT_PASSED, EXIT_VIOLATION};

#[derive(Args)]
pub struct MutantsArgs {
    /// Scenario files or folders (default: the built-in corpus, `agentsim scenarios list`).
    paths: Vec<PathBuf>,
    /// Seeds per scenario for the random and pct hunts, when the canonical schedules do not kill.
    #[arg(long, default_value_t = 50)]
    seeds: u64,
    /// Only these mutants (default: all).
    #[arg(long = "only", value_parser = crate::run::parse_mutant)]
    only: Vec<Mutant>,
    /// Compare the zoo's table (each mutant's tier, killing rule, whether a canonical schedule
    /// kills it, the case that killed it first, the schedules it took, the rules that no mutant
    /// breaks) with this file; with `UPDATE_GOLDEN=1` in the environment, write it instead.
    #[arg(long)]
    golden: Option<PathBuf>,
}

pub fn run_mutants(args: MutantsArgs) -> u8 {
    let corpus = match load(args.paths) {
        Ok(corpus) => corpus,
        Err(code) => return code,
    };
    let mutants: Vec<Mutant> = if args.only.is_empty() { Mutant::all() } else { args.only };
    // What must stay the same when a mutant's code moves: no time, no implementation detail.
    let mut stable = String::new();
    let mut killed = 0;
    let mut misplaced = Vec::new();
    let mut rules_fired: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    println!(
        "{:<34} {:<12} {:<11} {:<9} {:<54} {:>9} {:>10}",
        "mutant", "tier", "rule", "canonical", "killed by (scenario, strategy, seed)", "schedules", "time"
    );
    for mutant in &mutants {
        let hunt = hunt_mutant(&corpus, *mutant, args.seeds);
        rules_fired.extend(hunt.rules.iter().cloned());
        match &hunt.kill {
            Some(kill) => {
                killed += 1;
                let by = format!("{} ({} seed {})", kill.scenario, kill.strategy.spelling(), kill.seed);
                println!(
                    "{:<34} {:<12} {:<11} {:<9} {:<54} {:>9} {:>8.1}ms",
                    mutant.name(),
                    mutant.tier(),
                    kill.rule,
                    if hunt.canonical { "yes" } else { "no" },
                    by,
                    kill.schedules,
                    kill.elapsed.as_secs_f64() * 1000.0
                );
                println!("{:<34} replay: {}", "", kill.replay);
                stable.push_str(&format!(
                    "{} {} {} canonical={} {} {}\n",
                    mutant.name(),
                    mutant.tier(),
                    kill.rule,
                    if hunt.canonical { "yes" } else { "no" },
                    by,
                    kill.schedules
                ));
            }
            None => {
                println!("{:<34} {:<12} SURVIVED every rule", mutant.name(), mutant.tier());
                stable.push_str(&format!("{} {} SURVIVED\n", mutant.name(), mutant.tier()));
            }
        }
        // The interleaving tier must survive every canonical schedule.
        if mutant.interleaving_only() && hunt.canonical {
            misplaced.push(mutant.name());
        }
        if let Some(expect_only) = &hunt.expect_only {
            println!("{:<34} (not counted: an expect-only failure, {expect_only})", "");
        }
    }
    let silent: Vec<&str> = crate::check::RULE_IDS
        .iter()
        .copied()
        .filter(|rule| !rules_fired.contains(*rule))
        .collect();
    println!(
        "rules no mutant breaks ({}): {}",
        silent.len(),
        if silent.is_empty() {
            "none".to_string()
        } else {
            silent.join(", ")
        }
    );
    let interleaving: Vec<&Mutant> = mutants.iter().filter(|mutant| mutant.interleaving_only()).collect();
    println!(
        "interleaving tier: {} mutants, {} survive every canonical schedule",
        interleaving.len(),
        interleaving.len() - misplaced.len()
    );
    if !misplaced.is_empty() {
        println!(
            "TIER WRONG: a canonical schedule kills these interleaving-only mutants: {}",
            misplaced.join(", ")
        );
    }
    println!("killed {killed} of {} (kills by catalogue rules only)", mutants.len());
    stable.push_str(&format!("rules no mutant breaks: {}\n", silent.join(", ")));
    if let Some(golden) = &args.golden {
        if let Err(problem) = compare_golden(golden, &stable) {
            eprintln!("{problem}");
            return EXIT_VIOLATION;
        }
    }
    if killed == mutants.len() && misplaced.is_empty() {
        EXIT_PASSED
    } else {
        EXIT_VIOLATION
    }
}

/// Compares the zoo's stable table with a golden file (or writes it with `UPDATE_GOLDEN=1`).
fn compare_golden(path: &std::path::Path, table: &str) -> Result<(), String> {
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|value| value == "1") {
        return crate::whole_file::write(path, table).map_err(|error| format!("{}: {error}", path.display()));
    }
    let expected = std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    if expected == table {
        return Ok(());
    }
    let mut differences = String::new();
    let expected_lines: Vec<&str> = expected.lines().collect();
    let got_lines: Vec<&str> = table.lines().collect();
    for index in 0..expected_lines.len().max(got_lines.len()) {
        let (want, got) = (expected_lines.get(index), got_lines.get(index));
        if want != got {
            differences.push_str(&format!(
                "  expected: {}\n  got:      {}\n",
                want.unwrap_or(&"(nothing)"),
                got.unwrap_or(&"(nothing)")
            ));
        }
    }
    Err(format!(
        "the zoo's table differs from {} (UPDATE_GOLDEN=1 rewrites it):\n{differences}",
        path.display()
    ))
}
