//! The bug zoo: every deliberate bug the kit must catch, by name.
//!
//! A mutant is either a decorator at the Subject seam ([`SeamBug`], `seam.rs`), which rewrites
//! what crosses between the reference and the world, or a switch inside one step of the core
//! ([`Mutation`], `runtime/mutation.rs`) for a bug that lives inside a step and cannot be
//! expressed at the seam. `agentsim mutants` hunts them all; only a catalogue rule's violation
//! counts as a kill (a scenario's `expect` block describes one schedule of the reference and
//! judges no other implementation).

mod legacy;

use crate::runtime::{Mutation, Mutations};
use crate::sim::reference::ReferenceSubject;
use crate::sim::BoxedSubject;

pub use legacy::{SeamBug, SeamSubject};

/// One named bug of the zoo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mutant {
    /// A switch inside the core.
    Switch(Mutation),
    /// A decorator at the Subject seam.
    Seam(SeamBug),
}

impl Mutant {
    /// Every mutant: the core switches first, then the seam decorators.
    pub fn all() -> Vec<Mutant> {
        Mutation::ALL
            .iter()
            .map(|mutation| Mutant::Switch(*mutation))
            .chain(SeamBug::ALL.iter().map(|bug| Mutant::Seam(*bug)))
            .collect()
    }

    pub fn name(self) -> &'static str {
        match self {
            Mutant::Switch(mutation) => mutation.name(),
            Mutant::Seam(bug) => bug.name(),
        }
    }

    pub fn from_name(name: &str) -> Option<Mutant> {
        Mutant::all().into_iter().find(|mutant| mutant.name() == name)
    }

    /// `switch` or `seam`.
    pub fn kind(self) -> &'static str {
        match self {
            Mutant::Switch(_) => "switch",
            Mutant::Seam(_) => "seam",
        }
    }

    /// Whether the mutant belongs to the interleaving tier: it must survive the canonical
    /// schedule of every scenario and fall only to exploration.
    pub fn interleaving_only(self) -> bool {
        matches!(self, Mutant::Seam(bug) if bug.interleaving_only())
    }

    /// `canonical` or `interleaving`: the tier `agentsim mutants` holds the mutant to.
    pub fn tier(self) -> &'static str {
        if self.interleaving_only() {
            "interleaving"
        } else {
            "canonical"
        }
    }

    /// `inner` with this bug. FIXME(issue 22): a core switch and the legacy seam decorator
    /// still build the reference themselves instead of wrapping `inner`.
    pub fn wrap(self, inner: BoxedSubject) -> BoxedSubject {
        drop(inner);
        match self {
            Mutant::Switch(mutation) => Box::new(ReferenceSubject::with_mutations(Mutations::with(mutation))),
            Mutant::Seam(bug) => Box::new(SeamSubject::new(bug)),
        }
    }

    /// The core switch, for the places that build the runtime themselves (`serve`, the
    /// networked world); `None` for a seam bug.
    pub fn switch(self) -> Option<Mutation> {
        match self {
            Mutant::Switch(mutation) => Some(mutation),
            Mutant::Seam(_) => None,
        }
    }
}

/// Every mutant's name, for error messages.
pub fn names() -> Vec<&'static str> {
    Mutant::all().into_iter().map(Mutant::name).collect()
}
