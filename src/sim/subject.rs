//! The seam every implementation is driven through: a [`Subject`] takes the scenario's start
//! and one input at a time, and says what it did. The scheduler, the networked world and the
//! mutants' decorators speak only this.

use crate::runtime::{Cause, Effect, Input};
use crate::scenario::Scenario;
use crate::trace::StateProbe;

use super::{Restored, SubjectFailure};

/// Which of its effects block the runtime's only thread until the world answers them (an
/// adapter's `hello` says so: `sync-store` for a store whose append returns only once written,
/// `sync-sink` for an output mode's synchronous write). While such an effect is pending the
/// runtime can take no input: nothing can be delivered to it, no other answer can reach it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Blocking {
    pub appends: bool,
    pub writes: bool,
}

/// The system under test: only the driving methods. Who it is (the reference, a mutant, an
/// adapter process) is the `Implementation` it was built from (`src/implementation.rs`),
/// chosen once by the caller; the scheduler never asks.
pub trait Subject {
    /// Creates the runtime from the scenario's session, config and dependencies. The inner
    /// `Err` is a restore rejection (a verdict about the runtime, not a failure of the subject).
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure>;
    /// Delivers one input and appends every effect produced until the subject is quiescent.
    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure>;
    /// The run is over (its last input was delivered): an external subject checks that nothing
    /// came after its last `idle` and resets or stops its adapter.
    fn finish(&mut self) -> Result<(), SubjectFailure> {
        Ok(())
    }
    /// Which effects block the runtime (known once it started); none for the reference.
    fn blocking(&self) -> Blocking {
        Blocking::default()
    }
    /// The runtime's own state as it reported it at the end of the last step (or of the
    /// restore): its leaf and how many appends it counts as persisted. `None` for a subject
    /// that does not probe its state (an adapter whose `hello.probes` lacks `state`); the
    /// reference does, and PERSIST-10 judges what it says.
    fn state(&self) -> Option<StateProbe> {
        None
    }
}

/// A subject owned by its runner: the networked world takes it for a run and gives it back.
pub type BoxedSubject = Box<dyn Subject + Send>;

impl Subject for BoxedSubject {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        (**self).start(scenario)
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        (**self).deliver(input, effects)
    }

    fn finish(&mut self) -> Result<(), SubjectFailure> {
        (**self).finish()
    }

    fn blocking(&self) -> Blocking {
        (**self).blocking()
    }

    fn state(&self) -> Option<StateProbe> {
        (**self).state()
    }
}

/// Where a subject was while the networked world had it: driving it is a protocol breach.
#[derive(Debug, Default)]
pub struct Lent;

impl Subject for Lent {
    fn start(&mut self, _: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        Err(lent_failure())
    }

    fn deliver(&mut self, _: Input, _: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        Err(lent_failure())
    }
}

fn lent_failure() -> SubjectFailure {
    SubjectFailure::Protocol {
        message: "the subject was lent to the networked world and not given back".into(),
    }
}
