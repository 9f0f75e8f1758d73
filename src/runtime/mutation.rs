//! Mutation switches: deliberate, named bugs the kit must catch — the chapter's fault
//! injection, and the bug zoo that measures the suite's power (`agentsim mutants`).
//!
//! Each mutant is a realistic mistake an implementer of the contract could make. A runtime
//! built with `Mutations::none()` (the default, and what every normal run uses) has every
//! switch off; each check is one branch on an empty list, so the reference pays nothing else.

use serde::{Deserialize, Serialize};

/// One deliberate bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Mutation {
    /// The chapter's fault injection: the append failure is rethrown but not stored as poison.
    PoisonNotStored,
    /// `beforeCount` read when prompt() is called, not when the operation starts.
    BeforeCountAtCall,
    /// The leaf (and active path) advance when the append is issued, before it is accepted.
    LeafBeforeAccept,
    /// The prompt resolves when its last append is issued, not when it is accepted.
    ResolveBeforeLastAppend,
    /// The whole transcript is persisted: restored history appended again.
    RestoredHistoryReappended,
    /// The suffix is stored under the temporary `__runtime_context_N` ids.
    TemporaryEntriesStored,
    /// The projection snapshot is captured once at creation and never refreshed.
    SnapshotCapturedOnce,
    /// The projection slices the last four messages itself instead of using the budget.
    ProjectionSlicesMessages,
    /// Every model request gets a fresh abort signal.
    SignalPerRequest,
    /// dispose() rejects the prompts still queued instead of running them.
    DisposeDropsQueued,
    /// A second dispose() rejects instead of returning the first one's outcome.
    DisposeNotIdempotent,
    /// flush() starts an agent run of its own.
    FlushCreatesWork,
    /// A failed append is retried once before the runtime gives up.
    RetryAfterFailedAppend,
    /// Queued prompts still run after poison (new calls are rejected).
    QueuedRunAfterPoison,
    /// The next append is issued without waiting for the previous answer.
    TwoAppendsInFlight,
    /// The core tool runs before the extensions' before hooks.
    CoreOutsideHooks,
    /// The inactive skills' bodies are added to the system prompt.
    InactiveSkillBodyShown,
    /// A non-empty session with a null leaf resumes at the last entry.
    NullLeafResumesLast,
}

impl Mutation {
    pub const ALL: &'static [Mutation] = &[
        Mutation::PoisonNotStored,
        Mutation::BeforeCountAtCall,
        Mutation::LeafBeforeAccept,
        Mutation::ResolveBeforeLastAppend,
        Mutation::RestoredHistoryReappended,
        Mutation::TemporaryEntriesStored,
        Mutation::SnapshotCapturedOnce,
        Mutation::ProjectionSlicesMessages,
        Mutation::SignalPerRequest,
        Mutation::DisposeDropsQueued,
        Mutation::DisposeNotIdempotent,
        Mutation::FlushCreatesWork,
        Mutation::RetryAfterFailedAppend,
        Mutation::QueuedRunAfterPoison,
        Mutation::TwoAppendsInFlight,
        Mutation::CoreOutsideHooks,
        Mutation::InactiveSkillBodyShown,
        Mutation::NullLeafResumesLast,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mutation::PoisonNotStored => "poison-not-stored",
            Mutation::BeforeCountAtCall => "before-count-at-call",
            Mutation::LeafBeforeAccept => "leaf-before-accept",
            Mutation::ResolveBeforeLastAppend => "resolve-before-last-append",
            Mutation::RestoredHistoryReappended => "restored-history-reappended",
            Mutation::TemporaryEntriesStored => "temporary-entries-stored",
            Mutation::SnapshotCapturedOnce => "snapshot-captured-once",
            Mutation::ProjectionSlicesMessages => "projection-slices-messages",
            Mutation::SignalPerRequest => "signal-per-request",
            Mutation::DisposeDropsQueued => "dispose-drops-queued",
            Mutation::DisposeNotIdempotent => "dispose-not-idempotent",
            Mutation::FlushCreatesWork => "flush-creates-work",
            Mutation::RetryAfterFailedAppend => "retry-after-failed-append",
            Mutation::QueuedRunAfterPoison => "queued-run-after-poison",
            Mutation::TwoAppendsInFlight => "two-appends-in-flight",
            Mutation::CoreOutsideHooks => "core-outside-hooks",
            Mutation::InactiveSkillBodyShown => "inactive-skill-body-shown",
            Mutation::NullLeafResumesLast => "null-leaf-resumes-last",
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
