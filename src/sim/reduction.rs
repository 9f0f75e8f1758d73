//! Exhaustive enumeration, plain or with partial-order reduction by sleep sets, and Knuth's
//! estimate of the size of what a bound left unexplored.
//!
//! The enumeration is depth first and stateless: each run replays the choices of a prefix, then
//! picks at each new step, and the next prefix backtracks from the deepest step with a choice
//! left. Plain enumeration takes every choice at every step. The reduced one (Godefroid's sleep
//! sets) skips a choice whose every continuation is equivalent to a schedule already run: two
//! schedules are equivalent when one becomes the other by swapping adjacent *independent*
//! choices, and a rule's verdict, the final store and the runtime's state at the end are the same
//! for both (up to the numbering of effects, which no verdict reads: `tests/kit/fairness.rs`).
//! A node whose every enabled choice is asleep ends its run unfinished and unjudged
//! ([`Strategy::abandoned`]); such runs are counted apart.
//!
//! # The dependence relation
//!
//! [`dependent`] says which two choices, enabled together, may not be swapped. It reads only
//! what a choice touches, as the world sees it (the kind of answer, which observer), never the
//! subject's insides, so it holds for any subject that keeps the contract; when unsure, two
//! choices are dependent.
//!
//! - Delivering an operation is dependent with every choice. It enters the runtime's one queue,
//!   and how a runtime takes it depends on what is in flight when it lands: the windows of the
//!   zoo's interleaving tier (an after hook, a tool, a later request, a stream past its last
//!   chunk, a run persisting), the settlement table of SETTLE-1, the interleaving matrix.
//! - The active run's answers (a model chunk or response, a tool's result, a hook's answer) are
//!   dependent with each other, with deliveries, appends and writes: they move the run, whose
//!   position every window and the store's order read.
//! - An append's answer is dependent with every choice: it writes the store, moves the leaf,
//!   may settle a prompt or poison the runtime, and the interleaving matrix reads the order of
//!   append answers against older writes and notifications.
//! - A write's answer (a mode's output) settles its operation: dependent with deliveries, the
//!   run's answers (MODE-4's late write error is late relative to model responses), appends and
//!   other writes.
//! - An observer's answer is independent of every choice but deliveries, the answers of the
//!   same observer when another observer comes after it, and the answers of an observer the
//!   scenario does not name. OBSERVE-4 is the contract that makes this sound: "an observer's
//!   answer sets nothing in motion", so what the run, the store, the sink and the other
//!   observers do is the same whenever it comes back, and no rule reads its position but
//!   OBSERVE-4, which reads what the answer itself caused. One observer's answers stay ordered
//!   among themselves when a next observer exists (a runtime may tell the next observer when
//!   one returns, and OBSERVE-1 reads the order each observer is told in). The interleaving
//!   matrix's answer orders between an append and a notification are not verdicts: a reduced
//!   enumeration runs one order of the two and need not reach both.
//!
//! The soundness test (`tests/kit/reduction.rs`) enumerates small scenarios both ways, on the
//! reference and on mutants of the zoo, and demands the same set of verdicts (which rules fail)
//! and the same set of final stores. Never a thread, a clock or a random number but the
//! estimator's own seeded one.

use super::rng::Rng;
use super::{Answer, Choice, Strategy};

/// Whether `a` and `b`, enabled at the same step, may lead to different outcomes in their two
/// orders (see the module's documentation).
pub fn dependent(a: &Choice, b: &Choice) -> bool {
    let (Choice::Complete { answer: a, .. }, Choice::Complete { answer: b, .. }) = (a, b) else {
        // A delivery is dependent with everything.
        return true;
    };
    match (a, b) {
        (
            Answer::Notify {
                observer: first,
                last: first_last,
            },
            Answer::Notify {
                observer: second,
                last: second_last,
            },
        ) => first.is_none() || second.is_none() || (first == second && !(*first_last && *second_last)),
        // An observer's answer sets nothing in motion (OBSERVE-4).
        (Answer::Notify { .. }, _) | (_, Answer::Notify { .. }) => false,
        _ => true,
    }
}

/// One step of the path the enumeration is on.
#[derive(Debug, Clone)]
struct Frame {
    /// The enabled choices, in the world's order.
    choices: Vec<Choice>,
    /// The index taken.
    taken: usize,
    /// The choices asleep here when `taken` was taken: inherited from the step before, and the
    /// siblings already explored.
    sleep: Vec<Choice>,
    /// With reduction: the choices this step must explore (DPOR's backtrack set), the first
    /// one taken and those races found later added.
    backtrack: Vec<Choice>,
}

/// A depth-first enumeration of one scenario's schedules, one run at a time: [`next_run`] gives
/// the strategy for the next run, [`finish_run`] takes it back after the run.
///
/// [`next_run`]: Enumerator::next_run
/// [`finish_run`]: Enumerator::finish_run
#[derive(Debug, Clone)]
pub struct Enumerator {
    reduced: bool,
    /// The path of the next run's prefix; `None` once every schedule was run.
    path: Option<Vec<Frame>>,
    /// Choices skipped because they were asleep (0: the reduction changed nothing).
    pub skipped: u64,
}

impl Enumerator {
    pub fn new(reduced: bool) -> Enumerator {
        Enumerator {
            reduced,
            path: Some(Vec::new()),
            skipped: 0,
        }
    }

    /// The strategy for the next run, or `None` when the space is covered.
    pub fn next_run(&mut self) -> Option<EnumeratedRun> {
        let prefix = self.path.take()?;
        Some(EnumeratedRun {
            reduced: self.reduced,
            replayed: prefix.len(),
            frames: prefix,
            step: 0,
            abandoned: false,
        })
    }

    /// Takes back the run `next_run` gave, after it ran, and moves to the next prefix: the
    /// deepest step with a choice neither taken nor asleep, that choice taken.
    pub fn finish_run(&mut self, run: EnumeratedRun) {
        let mut frames = run.frames;
        if self.reduced {
            add_backtracks(&mut frames);
        }
        while let Some(mut frame) = frames.pop() {
            let taken = frame.choices[frame.taken];
            let next = if self.reduced {
                frame.sleep.push(taken);
                frame
                    .choices
                    .iter()
                    .position(|choice| frame.backtrack.contains(choice) && !frame.sleep.contains(choice))
            } else {
                (frame.taken + 1 < frame.choices.len()).then_some(frame.taken + 1)
            };
            if let Some(next) = next {
                frame.taken = next;
                frames.push(frame);
                self.path = Some(frames);
                return;
            }
            if self.reduced {
                // Every choice here neither explored nor asked for by a race was pruned.
                let explored = frame.sleep.len();
                self.skipped += frame.choices.len().saturating_sub(explored) as u64;
            }
        }
        self.path = None;
    }

    /// Whether every schedule was run.
    pub fn covered(&self) -> bool {
        self.path.is_none()
    }
}

/// Source-set DPOR's race analysis (Abdulla et al., "Optimal dynamic partial order
/// reduction", POPL 2014, Algorithm 1) over the path a run took: for each race, two dependent
/// steps `i < j` whose order could be reversed (neither is the same choice, `i` did not make
/// `j` possible, and nothing between them is ordered after `i` and before `j`), the step `i`
/// must also explore one of the choices that can start the reversed order, unless one of them
/// is already in its backtrack set.
///
/// Happens-before orders two steps when they are dependent, or when the earlier one made the
/// later one's choice enabled (issued its effect, met its operation's `after` condition, gave
/// the abort a hanging tool waits for), and is transitive. No step disables another's choice
/// (an effect stays pending until answered, `after` conditions only become true), which the
/// algorithm needs.
fn add_backtracks(frames: &mut [Frame]) {
    let steps = frames.len();
    let taken: Vec<Choice> = frames.iter().map(|frame| frame.choices[frame.taken]).collect();
    // The step that made each step's choice enabled: the one before the first step of the
    // unbroken run of steps at which it was enabled.
    let enabler: Vec<Option<usize>> = (0..steps)
        .map(|j| {
            let mut first = j;
            while first > 0 && frames[first - 1].choices.contains(&taken[j]) {
                first -= 1;
            }
            first.checked_sub(1)
        })
        .collect();
    // after[i][j]: step i happens before step j.
    let mut after = vec![vec![false; steps]; steps];
    for j in 0..steps {
        for i in (0..j).rev() {
            let direct = dependent(&taken[i], &taken[j]) || enabler[j] == Some(i);
            if direct || (i + 1..j).any(|k| after[i][k] && after[k][j]) {
                after[i][j] = true;
            }
        }
    }
    for j in 0..steps {
        for i in 0..j {
            let race = taken[i] != taken[j]
                && dependent(&taken[i], &taken[j])
                && enabler[j] != Some(i)
                && !(i + 1..j).any(|k| after[i][k] && after[k][j]);
            if !race {
                continue;
            }
            // The steps after `i` not ordered after it, then `j`: the reversed order's start.
            let reversed: Vec<usize> = (i + 1..j).filter(|&k| !after[i][k]).chain([j]).collect();
            let initials: Vec<Choice> = reversed
                .iter()
                .filter(|&&k| !reversed.iter().any(|&earlier| earlier < k && after[earlier][k]))
                .map(|&k| taken[k])
                .filter(|choice| frames[i].choices.contains(choice))
                .collect();
            let frame = &mut frames[i];
            if initials.is_empty() {
                // Never expected (an initial is enabled at `i`); be safe: explore everything.
                for choice in frame.choices.clone() {
                    if !frame.backtrack.contains(&choice) {
                        frame.backtrack.push(choice);
                    }
                }
            } else if !initials.iter().any(|choice| frame.backtrack.contains(choice)) {
                frame.backtrack.push(initials[0]);
            }
        }
    }
}

/// The sleep set of the step after `frame`: what was asleep there and is independent of the
/// choice taken.
fn inherited(frame: &Frame) -> Vec<Choice> {
    let taken = frame.choices[frame.taken];
    frame
        .sleep
        .iter()
        .filter(|asleep| !dependent(asleep, &taken))
        .copied()
        .collect()
}

/// One run of an [`Enumerator`]: replays the prefix, then takes the first choice not asleep.
#[derive(Debug, Clone)]
pub struct EnumeratedRun {
    reduced: bool,
    frames: Vec<Frame>,
    /// Steps of `frames` that are the prefix to replay.
    replayed: usize,
    /// Steps picked so far.
    step: usize,
    abandoned: bool,
}

impl EnumeratedRun {
    /// The choices this run replays before it picks on its own.
    pub fn prefix(&self) -> Vec<usize> {
        self.frames[..self.replayed].iter().map(|frame| frame.taken).collect()
    }

    /// Every choice enabled at some step was asleep: the run stopped there, unjudged.
    pub fn is_abandoned(&self) -> bool {
        self.abandoned
    }
}

impl Strategy for EnumeratedRun {
    fn pick(&mut self, choices: &[Choice]) -> usize {
        let step = self.step;
        self.step += 1;
        if step < self.replayed {
            return self.frames[step].taken.min(choices.len() - 1);
        }
        let sleep = match (self.reduced, self.frames.last()) {
            (true, Some(parent)) => inherited(parent),
            _ => Vec::new(),
        };
        let Some(index) = choices.iter().position(|choice| !sleep.contains(choice)) else {
            self.abandoned = true;
            return 0;
        };
        self.frames.push(Frame {
            choices: choices.to_vec(),
            taken: index,
            sleep,
            backtrack: vec![choices[index]],
        });
        index
    }

    fn abandoned(&self) -> bool {
        self.abandoned
    }
}

/// One random probe of Knuth's estimator of a tree's size (Knuth 1975, "Estimating the
/// efficiency of backtrack programs"): a walk from the root that picks uniformly among a step's
/// children, whose estimate of the number of leaves is the product of the children counted
/// along it. The children are the enumeration's own: every choice, or with reduction the
/// choices not asleep, sleep sets built as the depth-first order builds them (a child inherits
/// the siblings before it). Its mean over probes is an unbiased estimate of the schedules the
/// enumeration runs (abandoned runs included).
pub struct Probe {
    reduced: bool,
    rng: Rng,
    sleep: Vec<Choice>,
    abandoned: bool,
    /// The product of the children counts so far.
    pub estimate: f64,
}

impl Probe {
    pub fn new(reduced: bool, seed: u64) -> Probe {
        Probe {
            reduced,
            rng: Rng::new(seed),
            sleep: Vec::new(),
            abandoned: false,
            estimate: 1.0,
        }
    }
}

impl Strategy for Probe {
    fn pick(&mut self, choices: &[Choice]) -> usize {
        let awake: Vec<usize> = (0..choices.len())
            .filter(|&index| !self.sleep.contains(&choices[index]))
            .collect();
        if awake.is_empty() {
            self.abandoned = true;
            return 0;
        }
        self.estimate *= awake.len() as f64;
        let index = awake[self.rng.below(awake.len() as u64) as usize];
        if self.reduced {
            let taken = choices[index];
            let mut asleep = std::mem::take(&mut self.sleep);
            asleep.extend(
                awake
                    .iter()
                    .take_while(|&&earlier| earlier != index)
                    .map(|&earlier| choices[earlier]),
            );
            self.sleep = asleep.into_iter().filter(|choice| !dependent(choice, &taken)).collect();
        }
        index
    }

    fn abandoned(&self) -> bool {
        self.abandoned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::EffectId;

    fn complete(effect: u32, answer: Answer) -> Choice {
        Choice::Complete {
            effect: EffectId(effect),
            answer,
        }
    }

    fn notify(effect: u32, observer: Option<u32>, last: bool) -> Choice {
        complete(effect, Answer::Notify { observer, last })
    }

    #[test]
    fn deliveries_and_the_runs_store_and_sink_answers_are_dependent_observers_answers_are_not() {
        let deliver = Choice::Deliver { index: 0 };
        let others = [
            deliver,
            complete(1, Answer::Model),
            complete(2, Answer::Tool),
            complete(3, Answer::Hook),
            complete(4, Answer::Append),
            complete(5, Answer::Write),
            notify(6, Some(0), false),
        ];
        for other in &others {
            assert!(dependent(&deliver, other) && dependent(other, &deliver), "{other:?}");
        }
        for (index, first) in others[1..6].iter().enumerate() {
            for second in &others[1 + index..6] {
                assert!(dependent(first, second), "{first:?} {second:?}");
            }
            assert!(!dependent(first, &notify(7, Some(1), true)), "{first:?}");
        }
        // Two observers: independent; one observer's answers only when no observer follows it.
        assert!(!dependent(&notify(1, Some(0), false), &notify(2, Some(1), true)));
        assert!(dependent(&notify(1, Some(0), false), &notify(2, Some(0), false)));
        assert!(!dependent(&notify(1, Some(1), true), &notify(2, Some(1), true)));
        // An observer the scenario does not name: dependent with every observer's answer.
        assert!(dependent(&notify(1, None, false), &notify(2, Some(1), true)));
    }

    #[test]
    fn a_race_adds_the_reversed_order_to_the_backtrack_set() {
        // Two steps: an append's answer, then a model response, both enabled at the first step;
        // they are dependent, so the first step must also try the model response first.
        let append = complete(1, Answer::Append);
        let model = complete(2, Answer::Model);
        let mut frames = vec![
            Frame {
                choices: vec![append, model],
                taken: 0,
                sleep: Vec::new(),
                backtrack: vec![append],
            },
            Frame {
                choices: vec![model],
                taken: 0,
                sleep: Vec::new(),
                backtrack: vec![model],
            },
        ];
        add_backtracks(&mut frames);
        assert_eq!(frames[0].backtrack, vec![append, model]);
        // With an observer's answer instead of the model's, no race: nothing to add.
        let answer = notify(3, Some(0), true);
        frames[0].choices = vec![append, answer];
        frames[0].backtrack = vec![append];
        frames[1].choices = vec![answer];
        add_backtracks(&mut frames);
        assert_eq!(frames[0].backtrack, vec![append]);
    }
}
