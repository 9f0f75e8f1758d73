//! The partial-order reduction of exhaustive enumeration (`sim::reduction`) is sound: on small
//! scenarios whose whole space both enumerations cover, the reduced one reaches every verdict
//! (the set of rules a schedule breaks) and every final store the plain one reaches, on the
//! reference, on the zoo's interleaving tier and on the observer mutants (the family whose
//! answers the dependence relation lets move), and it runs fewer schedules where observers
//! answer. Runs abandoned by the sleep sets are never judged.
//!
//! The scenarios are the three of `tests/fixtures/reduction/` (observers beside a steer, an
//! abort in a tool round, a failing sink and a rejected append) and three of the corpus without
//! observers (where the reduction must change nothing).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agentsim::implementation::Implementation;
use agentsim::scenario::LoadedScenario;
use agentsim::sim::reduction::Enumerator;
use agentsim::sim::simulate_with;
use agentsim::suite::load_corpus;
use agentsim::zoo::Mutant;

/// What an enumeration reached: schedules judged, runs abandoned, the verdicts, the final
/// stores, and whether it covered the space within the bound.
struct Reached {
    schedules: u64,
    abandoned: u64,
    verdicts: BTreeSet<Vec<String>>,
    stores: BTreeSet<String>,
    covered: bool,
}

fn enumerate(loaded: &LoadedScenario, implementation: &Implementation, reduced: bool, bound: u64) -> Reached {
    let mut reached = Reached {
        schedules: 0,
        abandoned: 0,
        verdicts: BTreeSet::new(),
        stores: BTreeSet::new(),
        covered: false,
    };
    let mut enumerator = Enumerator::new(reduced);
    while reached.schedules + reached.abandoned < bound {
        let Some(mut run) = enumerator.next_run() else { break };
        let mut subject = implementation.subject();
        let outcome = simulate_with(&loaded.scenario, subject.as_mut(), &mut run, false)
            .unwrap_or_else(|failure| panic!("{}: the subject broke: {failure}", loaded.name));
        if run.is_abandoned() {
            reached.abandoned += 1;
        } else {
            reached.schedules += 1;
            let rules: BTreeSet<String> = outcome
                .violations(&loaded.scenario)
                .into_iter()
                .map(|violation| violation.rule)
                .collect();
            reached.verdicts.insert(rules.into_iter().collect());
            reached.stores.insert(format!("{:?}", outcome.stored(&loaded.scenario)));
        }
        enumerator.finish_run(run);
    }
    reached.covered = enumerator.covered();
    reached
}

fn scenarios() -> Vec<LoadedScenario> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let paths: Vec<PathBuf> = [
        "tests/fixtures/reduction",
        "scenarios/modes/sink-error-while-next-prompt-runs.json",
        "scenarios/agent/steer-and-flush-while-hooks-run.json",
        "scenarios/lifecycle/every-operation-settles.json",
    ]
    .iter()
    .map(|path| root.join(path))
    .collect();
    let corpus = load_corpus(&paths).expect("the scenarios load");
    assert_eq!(corpus.len(), 6);
    corpus
}

#[test]
fn reduced_enumeration_reaches_every_verdict_and_store_plain_enumeration_reaches() {
    let mut implementations = vec![Implementation::reference()];
    let observed = |mutant: &Mutant| mutant.name().contains("observer") || mutant.name().contains("-end-");
    implementations.extend(
        Mutant::all()
            .into_iter()
            .filter(|mutant| mutant.interleaving_only() || observed(mutant))
            .map(Implementation::mutant),
    );
    assert!(implementations.len() >= 13 + 4, "the tier and the observer mutants");
    let mut failing_verdicts = 0;
    let mut reduced_somewhere = 0;
    for loaded in scenarios() {
        let has_observers = !loaded.scenario.observers.is_empty();
        for implementation in &implementations {
            let who = format!(
                "{} on {}",
                implementation.mutant_name().unwrap_or("the reference"),
                loaded.name
            );
            let plain = enumerate(&loaded, implementation, false, 5_000);
            let reduced = enumerate(&loaded, implementation, true, 5_000);
            assert!(
                plain.covered && reduced.covered,
                "{who}: both enumerations cover the space"
            );
            assert_eq!(plain.abandoned, 0, "{who}: plain enumeration abandons nothing");
            assert_eq!(
                reduced.verdicts, plain.verdicts,
                "{who}: the verdicts reached with and without reduction"
            );
            assert_eq!(
                reduced.stores, plain.stores,
                "{who}: the final stores reached with and without reduction"
            );
            failing_verdicts += plain.verdicts.iter().filter(|rules| !rules.is_empty()).count();
            if has_observers {
                assert!(
                    reduced.schedules + reduced.abandoned < plain.schedules,
                    "{who}: observers answer, so the reduction prunes ({} + {} abandoned against {})",
                    reduced.schedules,
                    reduced.abandoned,
                    plain.schedules
                );
                reduced_somewhere += 1;
            } else {
                assert_eq!(
                    (reduced.schedules, reduced.abandoned),
                    (plain.schedules, 0),
                    "{who}: without observers every pair of choices is dependent"
                );
            }
        }
    }
    assert!(reduced_somewhere > 0);
    // Not vacuous: the mutants break rules on some of these schedules.
    assert!(failing_verdicts >= 10, "{failing_verdicts} failing verdicts");
}

#[test]
fn reduced_enumeration_is_deterministic() {
    let loaded = scenarios().remove(0);
    let traces = |_: u32| {
        let mut enumerator = Enumerator::new(true);
        let mut traces = Vec::new();
        while let Some(mut run) = enumerator.next_run() {
            let mut subject = Implementation::reference().subject();
            let outcome = simulate_with(&loaded.scenario, subject.as_mut(), &mut run, false).expect("runs");
            traces.push(outcome.trace.render());
            enumerator.finish_run(run);
        }
        traces
    };
    let first = traces(0);
    assert!(first.len() > 1);
    assert_eq!(first, traces(1));
}
