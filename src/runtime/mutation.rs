//! Mutation switches: deliberate, named bugs the kit must catch — the chapter's fault
//! injection, and the bugs of the zoo (`crate::zoo`) that live inside one step of the core and so cannot be
//! expressed as a decorator at the Subject seam.
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
    /// The queue starts the newest waiting prompt first.
    QueueLifo,
    /// Restore takes every message entry of the file, siblings included.
    RestoreWholeFile,
    /// Restore walks parents leniently: duplicates, missing parents and cycles pass.
    RestoreAcceptsBrokenTree,
    /// The persisted count counts every path entry, metadata and compaction included.
    CountIncludesMetadata,
    /// Temporary ids are not prefixed on a collision: the projection's tree walk breaks.
    TemporaryIdNotPrefixed,
    /// The core tool starts even when the signal fired while the before hooks ran.
    ToolStartsAfterAbort,
    /// A mode resolves when its write is issued, before the sink answers.
    ModeSettlesBeforeWrite,
    /// dispose() rejects the queued prompts (with a code of its own) instead of running them.
    DisposeRejectsQueued,
    /// The core executor does not validate arguments against the tool's schema.
    ArgumentsNotValidated,
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
        Mutation::QueueLifo,
        Mutation::RestoreWholeFile,
        Mutation::RestoreAcceptsBrokenTree,
        Mutation::CountIncludesMetadata,
        Mutation::TemporaryIdNotPrefixed,
        Mutation::ToolStartsAfterAbort,
        Mutation::ModeSettlesBeforeWrite,
        Mutation::DisposeRejectsQueued,
        Mutation::ArgumentsNotValidated,
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
            Mutation::QueueLifo => "queue-lifo",
            Mutation::RestoreWholeFile => "restore-whole-file",
            Mutation::RestoreAcceptsBrokenTree => "restore-accepts-broken-tree",
            Mutation::CountIncludesMetadata => "count-includes-metadata",
            Mutation::TemporaryIdNotPrefixed => "temporary-id-not-prefixed",
            Mutation::ToolStartsAfterAbort => "tool-starts-after-abort",
            Mutation::ModeSettlesBeforeWrite => "mode-settles-before-write",
            Mutation::DisposeRejectsQueued => "dispose-rejects-queued",
            Mutation::ArgumentsNotValidated => "arguments-not-validated",
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

    /// The switch's name, when exactly one is on (as every mutant of the zoo has).
    pub fn name(&self) -> Option<&'static str> {
        match self.on.as_slice() {
            [mutation] => Some(mutation.name()),
            _ => None,
        }
    }

    #[inline]
    pub fn is_on(&self, mutation: Mutation) -> bool {
        !self.on.is_empty() && self.on.contains(&mutation)
    }
}

/// `RestoreAcceptsBrokenTree`: a parent walk without diagnostics. The first entry with an id
/// wins, a missing parent ends the walk as if it were the root, and a cycle stops where it
/// closes. An unknown leaf is still rejected.
pub(crate) fn lenient_path(
    entries: &[crate::model::SessionEntry],
    leaf: &str,
) -> Result<Vec<crate::model::SessionEntry>, crate::model::PathError> {
    let find = |id: &str| entries.iter().find(|entry| entry.id == id);
    let mut current = find(leaf).ok_or_else(|| crate::model::PathError::UnknownLeaf { leaf: leaf.to_string() })?;
    let mut path = vec![current.clone()];
    while let Some(parent) = current.parent_id.as_deref().and_then(find) {
        if path.iter().any(|seen| seen.id == parent.id) {
            break;
        }
        path.push(parent.clone());
        current = parent;
    }
    path.reverse();
    Ok(path)
}

/// `TemporaryIdNotPrefixed`: whether `__runtime_context_N` for the suffix's N collides with an
/// id on the path, so that walking the path plus the temporary entries finds a duplicate id.
pub(crate) fn unprefixed_temporary_id_collides(active_path: &[crate::model::SessionEntry], suffix: usize) -> bool {
    (0..suffix).any(|index| {
        let id = format!("__runtime_context_{index}");
        active_path.iter().any(|entry| entry.id == id)
    })
}

/// `ArgumentsNotValidated`: the registry the core executor checks calls against; with the
/// switch on, every schema accepts anything.
pub(crate) fn executor_registry<'a>(
    mutations: &Mutations,
    tools: &'a crate::model::ToolRegistry,
) -> std::borrow::Cow<'a, crate::model::ToolRegistry> {
    if !mutations.is_on(Mutation::ArgumentsNotValidated) {
        return std::borrow::Cow::Borrowed(tools);
    }
    let relaxed = tools
        .specs()
        .iter()
        .map(|spec| crate::model::ToolSpec {
            parameters: serde_json::json!({}),
            ..spec.clone()
        })
        .collect();
    std::borrow::Cow::Owned(crate::model::ToolRegistry::new(relaxed))
}
