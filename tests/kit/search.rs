//! Search for strangers: every strategy of `explore` runs over the adapter protocol, and a
//! schedule there is the same choice sequence as in process. The zoo's interleaving tier,
//! served by `agentsim serve --mutant`, is found in the same schedules, with the same failing
//! pairs, as in process; a failure found by a choice sequence over the wire replays with
//! `replay --impl ... --choices` to the same root cause.

use std::time::Duration;

use agentsim::explore::{explore, ExploreConfig, ExploreSummary};
use agentsim::implementation::Implementation;
use agentsim::run::{Run, Verdict};
use agentsim::sim::StrategyKind;
use agentsim::suite::load_corpus;
use agentsim::zoo::Mutant;

use crate::binary::{agentsim, root, BIN};

/// A mutant of the tier the agent scenarios find under every strategy but random.
const MUTANT: &str = "abort-lost-on-later-request";

fn config(strategy: StrategyKind, check_determinism: bool) -> ExploreConfig {
    ExploreConfig {
        check_determinism,
        ..ExploreConfig::new(strategy, 30)
    }
}

fn served(mutant: &str) -> Implementation {
    Implementation::adapter(format!("{BIN} serve --mutant {mutant}"), Duration::from_secs(10))
}

/// What a summary says apart from how its replays name the implementation.
fn findings(summary: &ExploreSummary) -> (u64, u64, u64, Vec<(String, String)>, Vec<String>) {
    let origins = summary.failures.iter().map(|failure| failure.origin.clone()).collect();
    (
        summary.passed,
        summary.failed,
        summary.broken,
        summary.pairs.keys().cloned().collect(),
        origins,
    )
}

#[test]
fn every_strategy_finds_over_the_wire_what_it_finds_in_process() {
    let corpus = load_corpus(&[root().join("scenarios/agent")]).expect("the corpus loads");
    let mutant = Mutant::from_name(MUTANT).expect("a mutant of the zoo");
    let strategies = [
        StrategyKind::Guided,
        StrategyKind::Exhaustive {
            bound: 200,
            reduced: true,
        },
        StrategyKind::Exhaustive {
            bound: 50,
            reduced: false,
        },
        StrategyKind::Pct { depth: 3 },
    ];
    for strategy in strategies {
        let in_process = explore(
            &corpus,
            config(strategy, false),
            &Implementation::mutant(mutant),
            2,
            &|_, _| {},
        );
        let over_the_wire = explore(&corpus, config(strategy, true), &served(MUTANT), 2, &|_, _| {});
        let what = strategy.spelling();
        assert!(in_process.failed > 0, "{what}: the mutant is found in process");
        assert_eq!(
            findings(&in_process),
            findings(&over_the_wire),
            "{what}: over the wire, the same schedules, failures and pairs as in process"
        );
    }
}

#[test]
fn a_failure_found_by_choices_over_the_wire_replays_by_its_command() {
    let corpus = load_corpus(&[root().join("scenarios/agent")]).expect("the corpus loads");
    let exhaustive = StrategyKind::Exhaustive {
        bound: 200,
        reduced: true,
    };
    let summary = explore(&corpus, config(exhaustive, false), &served(MUTANT), 1, &|_, _| {});
    let failure = summary.failures.first().expect("exhaustive finds the mutant");
    let command = failure.replay();
    assert!(command.contains(" --choices "), "{command}");
    assert!(command.contains(" --impl "), "{command}");
    // The printed command, read back, is the run that failed, and executes to the same root
    // cause.
    let run = Run::parse(&command).expect("a printed replay command reads back");
    assert_eq!(run, failure.run);
    let loaded = corpus
        .iter()
        .find(|loaded| loaded.name == failure.scenario)
        .expect("the failing scenario");
    let replayed = run.execute(loaded);
    assert_eq!(replayed.verdict, Verdict::Failed, "{command}");
    let root_cause = |rule: &str| failure.violations.first().is_some_and(|first| first.rule == rule);
    assert!(
        root_cause(&replayed.violations[0].rule),
        "{command}: {:?} / {:?}",
        replayed.violations.first(),
        failure.violations.first()
    );
    // And the binary, as a user pastes it, exits 1 with the same root cause marked.
    let words = agentsim::run::shell_words(&command).expect("shell words");
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let outcome = agentsim(&args, &[]);
    assert_eq!(outcome.code, 1, "{command}\n{}{}", outcome.stdout, outcome.stderr);
    let rule = &replayed.violations[0].rule;
    assert!(
        outcome.stdout.contains(&format!("root cause: {rule}")),
        "{command}\n{}",
        outcome.stdout
    );
}
