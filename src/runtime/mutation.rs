//! Mutation switches: deliberate, named bugs the kit must catch (the chapter's fault injection,
//! and the bug zoo that measures the suite's power).
//!
//! A runtime built with `Mutations::none()` (the default, and what every normal run uses) has
//! every switch off; each check is one branch on a bool, so the reference pays nothing else.

use serde::{Deserialize, Serialize};

/// One deliberate bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Mutation {
    /// The chapter's fault injection: the append failure is rethrown but not stored as poison.
    PoisonNotStored,
}

impl Mutation {
    pub const ALL: &'static [Mutation] = &[Mutation::PoisonNotStored];

    pub fn name(self) -> &'static str {
        match self {
            Mutation::PoisonNotStored => "poison-not-stored",
        }
    }

    pub fn from_name(name: &str) -> Option<Mutation> {
        Mutation::ALL.iter().copied().find(|mutation| mutation.name() == name)
    }
}

/// The set of switches that are on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mutations {
    on: Vec<Mutation>,
}

impl Mutations {
    pub fn none() -> Mutations {
        Mutations::default()
    }

    pub fn with(mutation: Mutation) -> Mutations {
        Mutations { on: vec![mutation] }
    }

    #[inline]
    pub fn is_on(&self, mutation: Mutation) -> bool {
        !self.on.is_empty() && self.on.contains(&mutation)
    }
}
