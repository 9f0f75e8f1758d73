//! The interleaving tier: bugs that only other schedules than the canonical one reveal.
//!
//! Each interleaving-only mutant of the zoo must survive the canonical schedule of every
//! scenario, fall to a rule under random or pct exploration within 1,000 seeds, and shrink to
//! a scenario file, schedule pinned, that fails the same rule under a plain run and is no
//! larger than the scenario it came from, while the reference passes it.

use std::path::Path;

use agentsim::check::RULE_IDS;
use agentsim::explore::hunt_mutant;
use agentsim::implementation::Implementation;
use agentsim::run::{Run, Verdict};
use agentsim::scenario;
use agentsim::sim::StrategyKind;
use agentsim::suite::load_corpus;
use agentsim::zoo::Mutant;

#[test]
fn interleaving_mutants_survive_canonical_schedules_fall_to_exploration_and_shrink() {
    let corpus = load_corpus(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")]).expect("the corpus loads");
    let tier: Vec<Mutant> = Mutant::all()
        .into_iter()
        .filter(|mutant| mutant.interleaving_only())
        .collect();
    assert!(tier.len() >= 10, "the interleaving tier has {} mutants", tier.len());
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interleaving-shrunk");
    std::fs::create_dir_all(&folder).expect("the folder is created");
    for mutant in tier {
        let hunt = hunt_mutant(&corpus, mutant, 1_000);
        assert!(!hunt.canonical, "{}: a canonical schedule kills it", mutant.name());
        let kill = hunt
            .kill
            .unwrap_or_else(|| panic!("{}: survived 1,000 seeds of exploration", mutant.name()));
        assert!(kill.seed < 1_000 && kill.strategy != StrategyKind::Scripted);
        let loaded = corpus
            .iter()
            .find(|loaded| loaded.name == kill.scenario)
            .expect("the killing scenario");
        let case = Run::of(loaded)
            .seeded(kill.strategy, kill.seed)
            .on(&Implementation::mutant(mutant))
            .execute(loaded);
        let choices: Vec<usize> = case
            .outcome
            .expect("the killing run ran")
            .choices
            .iter()
            .map(|(index, _)| *index)
            .collect();
        let shrunk = agentsim::shrink::shrink(
            loaded,
            &choices,
            &kill.rule,
            &agentsim::check::Selection::all(),
            &Implementation::mutant(mutant),
            "the test",
        )
        .unwrap_or_else(|error| panic!("{}: {error}", mutant.name()));
        assert!(
            shrunk.after.operations <= shrunk.before.operations && shrunk.after.faults <= shrunk.before.faults,
            "{}: shrunk to {} from {}",
            mutant.name(),
            shrunk.after,
            shrunk.before
        );
        let file = folder.join(format!("{}.json", mutant.name()));
        std::fs::write(
            &file,
            serde_json::to_string_pretty(&shrunk.scenario).expect("serializes"),
        )
        .expect("written");
        let pinned = scenario::load(&file, mutant.name(), RULE_IDS).expect("the shrunk file loads");
        assert!(
            pinned.scenario.schedule.is_some(),
            "{}: no pinned schedule",
            mutant.name()
        );
        let replayed = Run::of(&pinned)
            .seeded(StrategyKind::Scripted, 0)
            .on(&Implementation::mutant(mutant))
            .execute(&pinned);
        assert!(
            replayed.violations.iter().any(|violation| violation.rule == kill.rule),
            "{}: the shrunk scenario does not fail {} under a plain run: {:?}",
            mutant.name(),
            kill.rule,
            replayed.violations
        );
        let reference = Run::of(&pinned)
            .seeded(StrategyKind::Scripted, 0)
            .on(&Implementation::reference())
            .execute(&pinned);
        assert_eq!(
            reference.verdict,
            Verdict::Passed,
            "{}: the reference fails the shrunk scenario: {:?}",
            mutant.name(),
            reference.violations
        );
    }
}

/// Observers watch and change nothing: every scenario of the corpus, given a prompt observer
/// and a slow one of every agent event, passes every rule on its canonical schedule and under
/// random and pct schedules, whatever order the notifications are answered in.
#[test]
fn every_rule_holds_whatever_the_observers_latency() {
    use agentsim::runtime::AgentEventKind;
    use agentsim::scenario::ObserverScript;
    let corpus = load_corpus(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")]).expect("the corpus loads");
    let mut runs = 0;
    for loaded in corpus.iter().filter(|loaded| loaded.scenario.net.is_none()) {
        let mut observed = loaded.clone();
        let scenario = &mut observed.scenario;
        let every = vec![
            AgentEventKind::MessageEnd,
            AgentEventKind::TurnEnd,
            AgentEventKind::AgentEnd,
        ];
        scenario.observers = vec![
            ObserverScript {
                name: "watch".into(),
                events: every.clone(),
                slow: false,
                answers: Vec::new(),
            },
            ObserverScript {
                name: "slow".into(),
                events: every,
                slow: true,
                answers: Vec::new(),
            },
        ];
        // The scenario's own expectations describe its trace without observers.
        scenario.expect = Default::default();
        for step in &mut scenario.model {
            step.expect = None;
        }
        let strategies = [(StrategyKind::Scripted, 0)]
            .into_iter()
            .chain((0..8).map(|seed| (StrategyKind::Random, seed)))
            .chain((0..8).map(|seed| (StrategyKind::Pct { depth: 3 }, seed)));
        for (strategy, seed) in strategies {
            let report = Run::of(&observed)
                .seeded(strategy, seed)
                .on(&Implementation::reference())
                .execute(&observed);
            assert!(
                matches!(report.verdict, Verdict::Passed),
                "{} with observers under {} seed {seed}: {:?} {:?}",
                loaded.name,
                strategy.spelling(),
                report.verdict,
                report.violations
            );
            runs += 1;
        }
    }
    assert!(runs > 2_000, "{runs}");
}

/// The regression shrunk from real Pi (`explore --impl ... --rules POISON --shrink-to`) is an
/// ordinary scenario with its schedule pinned that the reference passes; .ci/run replays it on
/// Pi, where POISON-2 is its root cause.
#[test]
fn the_regression_shrunk_from_pi_passes_on_the_reference() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/regressions/pi/failed-append-keeps-running.POISON-2.json");
    let corpus = load_corpus(&[path]).expect("the shrunk file loads");
    let loaded = &corpus[0];
    assert_eq!(loaded.scenario.rules, vec!["POISON-2".to_string()]);
    assert!(loaded.scenario.schedule.is_some(), "its schedule is pinned");
    let case = Run::of(loaded)
        .seeded(agentsim::sim::StrategyKind::Scripted, 0)
        .on(&Implementation::reference())
        .execute(loaded);
    assert_eq!(case.verdict, Verdict::Passed, "{:?}", case.violations);
}
