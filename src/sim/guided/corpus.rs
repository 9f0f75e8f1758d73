//! The guided search over a whole corpus: which scenario runs next, as well as how.
//!
//! A per-scenario search spends the same number of schedules on every scenario, so a window
//! that only a few scenarios can open waits for every other scenario's turn. A fuzzer shares
//! its runs by energy instead; so does this search. Each scenario's energy is what its next
//! planned schedule can still find ([`GuidedSearch::energy`]): per operation, the (operation
//! kind, window) pairs it can aim at that no schedule of any scenario reached, which weigh
//! most, else those its own schedules did not reach. A scenario that never ran knows its
//! windows from its script ([`super::predicted_windows`]), so the first schedules go where the
//! most operations meet the most kinds of in-flight work. The next scenario is drawn with
//! probability proportional to its energy, and its planned schedule aims at pairs new to the
//! corpus first. Every scenario keeps an energy of at least one per operation (one without operations, one),
//! so none starves.
//!
//! Everything comes from the one seed through the portable PRNG: the same seed and corpus give
//! the same scenarios in the same order with the same schedules.

use std::collections::BTreeSet;

use crate::scenario::Scenario;

use super::super::rng::Rng;
use super::super::RunOutcome;
use super::{coverage_features, Counts, Coverage, GuidedRun, GuidedSearch};

/// A guided search over several scenarios at once.
pub struct CorpusSearch {
    rng: Rng,
    searches: Vec<GuidedSearch>,
    /// Per feature, the schedules of any scenario that reached it.
    reached: Counts,
    /// Each scenario's energy, refreshed when its search or the corpus's pairs change.
    energies: Vec<u64>,
    /// Scenarios the implementation cannot run (declared unsupported): never drawn again.
    retired: Vec<bool>,
}

impl CorpusSearch {
    pub fn new<'a>(seed: u64, scenarios: impl IntoIterator<Item = &'a Scenario>) -> CorpusSearch {
        let mut rng = Rng::new(seed);
        let searches: Vec<GuidedSearch> = scenarios
            .into_iter()
            .map(|scenario| GuidedSearch::for_scenario(rng.next_u64(), scenario))
            .collect();
        let reached = Counts::new();
        let energies = searches.iter().map(|search| search.energy(&reached)).collect();
        let retired = vec![false; searches.len()];
        CorpusSearch {
            rng,
            searches,
            reached,
            energies,
            retired,
        }
    }

    /// The scenario to run next (its index in the corpus given to [`CorpusSearch::new`]) and
    /// its schedule; `None` for an empty corpus, or one whose every scenario is retired.
    pub fn next_run(&mut self) -> Option<(usize, GuidedRun)> {
        let total: u64 = self.energies.iter().sum();
        if total == 0 {
            return None;
        }
        let mut draw = self.rng.below(total);
        let index = self
            .energies
            .iter()
            .position(|energy| {
                let inside = draw < *energy;
                draw = draw.saturating_sub(*energy);
                inside
            })
            .expect("the draw is below the total");
        let run = self.searches[index].next_run_in(Some(&self.reached));
        Some((index, run))
    }

    /// Feeds back the schedule of scenario `index`; returns whether it reached something no
    /// schedule of that scenario reached before.
    pub fn feedback(&mut self, index: usize, scenario: &Scenario, outcome: &RunOutcome) -> bool {
        self.feedback_coverage(index, scenario, outcome, &coverage_features(scenario, outcome))
    }

    /// [`CorpusSearch::feedback`] with what the schedule covered already derived.
    pub fn feedback_coverage(
        &mut self,
        index: usize,
        scenario: &Scenario,
        outcome: &RunOutcome,
        coverage: &Coverage,
    ) -> bool {
        let corpus_novel = self.count(&coverage.features);
        let novel = self.searches[index].feedback_features(scenario, outcome, coverage);
        match corpus_novel {
            // A pair new to the corpus is no longer worth the most anywhere.
            true => {
                let scenarios = self.energies.iter_mut().zip(&self.searches).zip(&self.retired);
                for ((energy, search), retired) in scenarios {
                    *energy = if *retired { 0 } else { search.energy(&self.reached) };
                }
            }
            false if self.retired[index] => {}
            false => self.energies[index] = self.searches[index].energy(&self.reached),
        }
        novel
    }

    /// Never draws scenario `index` again: the implementation cannot run it (its `hello`
    /// declares an operation it uses unsupported), so a schedule of it finds nothing.
    pub fn retire(&mut self, index: usize) {
        self.retired[index] = true;
        self.energies[index] = 0;
    }

    /// Counts `features` reached once more; whether one is new to the corpus.
    fn count(&mut self, features: &BTreeSet<u64>) -> bool {
        let mut novel = false;
        for feature in features {
            let count = self.reached.entry(*feature).or_insert(0);
            novel |= *count == 0;
            *count += 1;
        }
        novel
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::reference::ReferenceSubject;
    use crate::sim::simulate_with;

    fn load(name: &str) -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}.json"));
        crate::scenario::load(&path, name, crate::check::RULE_IDS)
            .expect("the scenario loads")
            .scenario
    }

    /// One prompt and nothing concurrent; four operations around hooks and a tool.
    fn corpus() -> Vec<Scenario> {
        vec![
            load("wiring/no-system-prompt-at-all"),
            load("agent/steer-and-flush-while-hooks-run"),
        ]
    }

    /// The scenario and the choices of each of the first `runs` schedules of a search.
    fn search(corpus: &[Scenario], seed: u64, runs: usize) -> Vec<(usize, Vec<usize>)> {
        let mut search = CorpusSearch::new(seed, corpus);
        (0..runs)
            .map(|_| {
                let (index, mut run) = search.next_run().expect("a corpus");
                let mut subject = ReferenceSubject::new();
                let outcome = simulate_with(&corpus[index], &mut subject, &mut run, false).expect("the reference runs");
                search.feedback(index, &corpus[index], &outcome);
                (index, outcome.choices.iter().map(|(choice, _)| *choice).collect())
            })
            .collect()
    }

    #[test]
    fn a_corpus_search_is_determined_by_its_seed() {
        let corpus = corpus();
        let first = search(&corpus, 3, 40);
        assert_eq!(first, search(&corpus, 3, 40));
        assert_ne!(first, search(&corpus, 4, 40));
    }

    /// The scenario with four operations and hooks around a tool has far more left to find
    /// than the one-prompt scenario, and gets most schedules; the other still gets some.
    #[test]
    fn schedules_go_where_there_is_more_to_find_and_none_starves() {
        let corpus = corpus();
        let runs = search(&corpus, 0, 60);
        let rich = runs.iter().filter(|(index, _)| *index == 1).count();
        assert!(rich >= 40, "the rich scenario got {rich} of 60 schedules");
        assert!(rich < 60, "the one-prompt scenario got no schedule of 60");
    }

    #[test]
    fn an_empty_corpus_has_no_schedule() {
        let mut search = CorpusSearch::new(0, &[]);
        assert!(search.next_run().is_none());
    }

    /// A scenario the implementation cannot run is never drawn again once retired, whatever
    /// the other scenarios' schedules reach; with every scenario retired there is none.
    #[test]
    fn a_retired_scenario_is_never_drawn_again() {
        let corpus = corpus();
        let mut search = CorpusSearch::new(0, &corpus);
        search.retire(1);
        for _ in 0..60 {
            let (index, mut run) = search.next_run().expect("one scenario left");
            assert_eq!(index, 0, "the retired scenario was drawn");
            let outcome = simulate_with(&corpus[index], &mut ReferenceSubject::new(), &mut run, false)
                .expect("the reference runs");
            search.feedback(index, &corpus[index], &outcome);
        }
        search.retire(0);
        assert!(search.next_run().is_none());
    }
}
