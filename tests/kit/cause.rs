//! The cause first: a bug that sets off a cascade is reported by the rule that names it.
//!
//! The zoo's `settled-after-next-run-starts` is the natural asyncio queue that releases the next
//! prompt in a `finally` before the finished one settles. Every scenario it fails must break
//! QUEUE-1, and QUEUE-1 must be the root cause unless another violation became evident earlier
//! in the trace; PROJECT-5, QUEUE-2 and PERSIST-7 (which misread what follows) never lead.

use std::path::Path;

use agentsim::implementation::Implementation;
use agentsim::run::{Run, Verdict};
use agentsim::sim::StrategyKind;
use agentsim::suite::load_corpus;
use agentsim::zoo::Mutant;

#[test]
fn a_queue_released_too_early_is_reported_as_queue_1_first() {
    let corpus = load_corpus(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")]).expect("the corpus loads");
    let mutant = Mutant::from_name("settled-after-next-run-starts").expect("a mutant of the zoo");
    let mut failing = 0;
    let mut queue_first = 0;
    for loaded in &corpus {
        for (strategy, seed) in [
            (StrategyKind::Scripted, 0),
            (StrategyKind::Random, 3),
            (StrategyKind::Pct { depth: 3 }, 5),
        ] {
            let case = Run::of(loaded)
                .seeded(strategy, seed)
                .on(&Implementation::mutant(mutant))
                .execute(loaded);
            if case.verdict != Verdict::Failed {
                continue;
            }
            failing += 1;
            let queue = case
                .violations
                .iter()
                .find(|violation| violation.rule == "QUEUE-1")
                .unwrap_or_else(|| panic!("{}: QUEUE-1 is missing: {:?}", case.replay_command(), case.violations));
            let root = &case.violations[0];
            assert!(
                root.rule == "QUEUE-1" || root.evident_at < queue.evident_at,
                "{}: {} leads, though QUEUE-1 was evident no later: {:?}",
                case.replay_command(),
                root.rule,
                case.violations
            );
            assert!(
                !["PROJECT-5", "QUEUE-2", "PERSIST-7", "PROJECT-6"].contains(&root.rule.as_str()),
                "{}: a consequence leads: {root:?}",
                case.replay_command()
            );
            if root.rule == "QUEUE-1" {
                queue_first += 1;
            }
        }
    }
    assert!(failing >= 20, "the mutant fails too few cases to judge: {failing}");
    assert!(
        queue_first * 10 >= failing * 9,
        "QUEUE-1 leads only {queue_first} of {failing}"
    );
}
