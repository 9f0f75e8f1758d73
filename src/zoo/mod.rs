//! The bug zoo: every deliberate bug the kit must catch, by name.
//!
//! Every mutant is a decorator at the Subject seam ([`seam`]): it wraps any subject (the
//! in-process reference, an adapter process, another mutant) and rewrites what crosses between
//! it and the world, the way a realistic wiring mistake around a correct core would. Each bug
//! family has a file of its own. `agentsim mutants` hunts them all; only a catalogue rule's
//! violation counts as a kill (a scenario's `expect` block describes one schedule of the
//! reference and judges no other implementation). An interleaving-tier mutant must survive
//! every canonical schedule and fall only to exploration.
//!
mod append;
mod control;
mod executor;
mod lifecycle;
mod modes;
mod observers;
mod persist;
mod poison;
mod projection;
mod queue;
mod reappend;
mod restore;
pub mod seam;
mod settle;
mod window;
mod wiring;

use crate::model::OperationKind;
use crate::sim::BoxedSubject;

/// How a mutant's decorator is built, fresh for every run.
type Build = fn() -> Box<dyn seam::Bug>;

/// Which schedules must kill a mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    /// Some canonical schedule kills it.
    Canonical,
    /// It survives every canonical schedule and falls only to exploration.
    Interleaving,
}

use Tier::{Canonical as canonical, Interleaving as interleaving};

/// The zoo's one list: each mutant's variant, name, tier and decorator.
macro_rules! zoo {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal, $tier:ident, $build:expr; )*) => {
        /// One named bug of the zoo.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Mutant {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Mutant {
            /// Every mutant, in the zoo's order.
            pub const ALL: &'static [Mutant] = &[$(Mutant::$variant),*];

            pub fn name(self) -> &'static str {
                match self {
                    $(Mutant::$variant => $name,)*
                }
            }

            fn tier_of(self) -> Tier {
                match self {
                    $(Mutant::$variant => $tier,)*
                }
            }

            /// Whether the mutant reports the wrapped runtime's state ([`seam::Bug::state`]):
            /// `serve --mutant` declares the state probe only then.
            pub fn probes_state(self) -> bool {
                let probe = crate::trace::StateProbe::restored(None);
                (self.build())().state(Some(probe), &seam::Watch::default()).is_some()
            }

            fn build(self) -> Build {
                match self {
                    $(Mutant::$variant => $build,)*
                }
            }
        }
    };
}

zoo! {
    /// The chapter's fault injection: the append failure is rethrown but not stored as poison.
    PoisonNotStored = "poison-not-stored", canonical, poison::poison_not_stored;
    /// `beforeCount` read when prompt() is called, not when the operation starts.
    BeforeCountAtCall = "before-count-at-call", canonical, reappend::before_count_at_call;
    /// The leaf (and active path) advance when the append is issued, before it is accepted.
    LeafBeforeAccept = "leaf-before-accept", canonical, append::leaf_before_accept;
    /// The prompt resolves when its last append is issued, not when it is accepted.
    ResolveBeforeLastAppend = "resolve-before-last-append", canonical, || Box::<append::ResolveBeforeLastAppend>::default();
    /// The whole transcript is persisted: restored history appended again.
    RestoredHistoryReappended = "restored-history-reappended", canonical, reappend::restored_history_reappended;
    /// The suffix is stored under the temporary `__runtime_context_N` ids.
    TemporaryEntriesStored = "temporary-entries-stored", canonical, || Box::<projection::TemporaryEntriesStored>::default();
    /// The projection snapshot is captured once at creation and never refreshed.
    SnapshotCapturedOnce = "snapshot-captured-once", canonical, || Box::<projection::SnapshotCapturedOnce>::default();
    /// The projection slices the last four messages itself instead of using the budget.
    ProjectionSlicesMessages = "projection-slices-messages", canonical, || Box::<projection::ProjectionSlicesMessages>::default();
    /// Every model request gets a fresh abort signal.
    SignalPerRequest = "signal-per-request", canonical, || Box::<projection::SignalPerRequest>::default();
    /// dispose() rejects the prompts still queued instead of running them.
    DisposeDropsQueued = "dispose-drops-queued", canonical, queue::dispose_drops_queued;
    /// A second dispose() rejects instead of returning the first one's outcome.
    DisposeNotIdempotent = "dispose-not-idempotent", canonical, || Box::<queue::DisposeNotIdempotent>::default();
    /// flush() starts an agent run of its own.
    FlushCreatesWork = "flush-creates-work", canonical, || Box::<queue::FlushCreatesWork>::default();
    /// A failed append is retried once before the runtime gives up.
    RetryAfterFailedAppend = "retry-after-failed-append", canonical, || Box::<append::RetryAfterFailedAppend>::default();
    /// Queued prompts still run after poison (new calls are rejected).
    QueuedRunAfterPoison = "queued-run-after-poison", canonical, poison::queued_run_after_poison;
    /// The next append is issued without waiting for the previous answer.
    TwoAppendsInFlight = "two-appends-in-flight", canonical, append::two_appends_in_flight;
    /// The core tool runs before the extensions' before hooks.
    CoreOutsideHooks = "core-outside-hooks", canonical, || Box::<executor::CoreOutsideHooks>::default();
    /// The inactive skills' bodies are added to the system prompt.
    InactiveSkillBodyShown = "inactive-skill-body-shown", canonical, || Box::<projection::InactiveSkillBodyShown>::default();
    /// A non-empty session with a null leaf resumes at the last entry.
    NullLeafResumesLast = "null-leaf-resumes-last", canonical, || Box::<restore::NullLeafResumesLast>::default();
    /// The queue starts the newest waiting prompt first.
    QueueLifo = "queue-lifo", canonical, queue::queue_lifo;
    /// Restore takes every message entry of the file, siblings included.
    RestoreWholeFile = "restore-whole-file", canonical, || Box::<restore::RestoreWholeFile>::default();
    /// Restore walks parents leniently: duplicates, missing parents and cycles pass.
    RestoreAcceptsBrokenTree = "restore-accepts-broken-tree", canonical, || Box::<restore::RestoreAcceptsBrokenTree>::default();
    /// The persisted count counts every path entry, metadata and compaction included.
    CountIncludesMetadata = "count-includes-metadata", canonical, || Box::<restore::CountIncludesMetadata>::default();
    /// Temporary ids are not prefixed on a collision: the projection's tree walk breaks.
    TemporaryIdNotPrefixed = "temporary-id-not-prefixed", canonical, || Box::<projection::TemporaryIdNotPrefixed>::default();
    /// The core tool starts even when the signal fired while the before hooks ran.
    ToolStartsAfterAbort = "tool-starts-after-abort", canonical, || Box::<executor::ToolStartsAfterAbort>::default();
    /// A mode resolves when its write is issued, before the sink answers.
    ModeSettlesBeforeWrite = "mode-settles-before-write", canonical, || Box::<append::ModeSettlesBeforeWrite>::default();
    /// dispose() rejects the queued prompts (with a code of its own) instead of running them.
    DisposeRejectsQueued = "dispose-rejects-queued", canonical, queue::dispose_rejects_queued;
    /// The core executor does not validate arguments against the tool's schema.
    ArgumentsNotValidated = "arguments-not-validated", canonical, || Box::<executor::ArgumentsNotValidated>::default();
    /// A prompt arriving while another runs or waits is refused as busy instead of queued.
    BusyPromptRejected = "busy-prompt-rejected", canonical, || Box::<queue::BusyPromptRejected>::default();
    /// flush() after dispose is rejected `runtime.disposed`: the closed runtime refuses every call.
    FlushRejectedAfterDispose = "flush-rejected-after-dispose", canonical, || Box::new(settle::RefusedAfterDispose(settle::Refused::Flush));
    /// steer(), followUp() and abort() after dispose are rejected `runtime.disposed`.
    ControlRejectedAfterDispose = "control-rejected-after-dispose", canonical, || Box::new(settle::RefusedAfterDispose(settle::Refused::Control));
    /// dispose() on a poisoned runtime rejects with the poison's cause instead of resolving.
    DisposeRejectsWithPoison = "dispose-rejects-with-poison", canonical, settle::dispose_rejects_with_poison;
    /// The library adapter wraps a failed run's cause in an error of its own.
    LibraryWrapsItsRejection = "library-wraps-its-rejection", canonical, settle::library_wraps_its_rejection;
    /// An output mode resolves with nothing instead of the run result.
    ModeResolvesWithNothing = "mode-resolves-with-nothing", canonical, settle::mode_resolves_with_nothing;
    /// An unknown mode is refused with `mode.unsupported` instead of `mode.unknown`.
    UnknownModeCodeRenamed = "unknown-mode-code-renamed", canonical, settle::unknown_mode_code_renamed;
    /// `control.abort()` is accepted but never reaches the agent: the signal never fires.
    AbortIgnored = "abort-ignored", canonical, || Box::<control::AbortIgnored>::default();
    /// The extension host runs no after hook: the core result goes straight to the agent.
    AfterHooksSkipped = "after-hooks-skipped", canonical, || Box::new(wiring::AfterHookSkipped(wiring::AfterHooks::Every));
    /// The host's after loop stops one short: the last extension never observes a result.
    LastAfterHookSkipped = "last-after-hook-skipped", canonical, || Box::new(wiring::AfterHookSkipped(wiring::AfterHooks::Last));
    /// The projection sends only persisted messages: the run's temporary suffix is missing.
    TemporarySuffixDropped = "temporary-suffix-dropped", canonical, || Box::<projection::TemporarySuffixDropped>::default();
    /// The suffix is computed once per run: later requests lack the call and its result.
    SuffixFrozenAtUser = "suffix-frozen-at-user", canonical, || Box::<projection::SuffixFrozenAtUser>::default();
    /// A before hook's deny is logged but the call still runs.
    DenyIgnored = "deny-ignored", canonical, || Box::new(wiring::HookAnswerIgnored(wiring::HookAnswer::Deny));
    /// Arguments rewritten by a before hook are dropped; the original ones go on.
    RewrittenArgumentsIgnored = "rewritten-arguments-ignored", canonical, || Box::new(wiring::HookAnswerIgnored(wiring::HookAnswer::RewriteArguments));
    /// An after hook's rewritten result is dropped; the core result is recorded.
    AfterRewriteIgnored = "after-rewrite-ignored", canonical, || Box::new(wiring::HookAnswerIgnored(wiring::HookAnswer::RewriteResult));
    /// The executor's and the host's error results are worded another way (a SHOULD rule only).
    ErrorTextsReworded = "error-texts-reworded", canonical, || Box::<wiring::ErrorTextsReworded>::default();
    /// `steer()` is queued as a follow-up.
    SteerAsFollowUp = "steer-as-follow-up", canonical, || Box::new(control::WrongQueue { meant: control::Queue::Steer });
    /// `followUp()` is delivered like a steer, mid-run.
    FollowUpAsSteer = "follow-up-as-steer", canonical, || Box::new(control::WrongQueue { meant: control::Queue::FollowUp });
    /// Control calls resolve only when the runtime next does something.
    ControlSettlesLate = "control-settles-late", canonical, || settle::SettlesLate::boxed(settle::Late::Control);
    /// prompt() resolves (or rejects) only when the world next speaks (SETTLE-2's prompt row).
    PromptSettlesLate = "prompt-settles-late", canonical, || settle::SettlesLate::boxed(settle::Late::Prompt);
    /// A mode settles only when the world next speaks after its write was answered.
    ModeSettlesLate = "mode-settles-late", canonical, || settle::SettlesLate::boxed(settle::Late::Mode);
    /// An unknown mode's rejection waits for the world's next input.
    UnknownModeSettlesLate = "unknown-mode-settles-late", canonical, || settle::SettlesLate::boxed(settle::Late::UnknownMode);
    /// The library call settles only when the world next speaks.
    LibrarySettlesLate = "library-settles-late", canonical, || settle::SettlesLate::boxed(settle::Late::Library);
    /// flush() settles only when the world next speaks after its awaited work finished.
    FlushSettlesLate = "flush-settles-late", canonical, || settle::SettlesLate::boxed(settle::Late::Flush);
    /// dispose() settles only when the world next speaks after its awaited work finished.
    DisposeSettlesLate = "dispose-settles-late", canonical, || settle::SettlesLate::boxed(settle::Late::Dispose);
    /// A prompt refused at its call (poisoned or disposed) is refused through the queue's tail,
    /// once the world next speaks.
    RefusalSettlesLate = "refusal-settles-late", canonical, || settle::SettlesLate::boxed(settle::Late::Refusal);
    /// An unknown mode name falls back to `print`.
    UnknownModeFallsBackToPrint = "unknown-mode-falls-back-to-print", canonical, || Box::<modes::UnknownModeFallsBackToPrint>::default();
    /// The sink's error is wrapped in a mode error instead of returned unchanged.
    WriteErrorWrapped = "write-error-wrapped", canonical, || Box::new(modes::WriteErrorWrapped::new(modes::WriteErrors::Every));
    /// dispose() closes the entry only after the queue drained: prompts in between run.
    DisposeClosesLate = "dispose-closes-late", canonical, || Box::<lifecycle::DisposeClosesLate>::default();
    /// Prompts after dispose are rejected with a code of the runtime's own.
    DisposedCodeRenamed = "disposed-code-renamed", canonical, || Box::<lifecycle::DisposedCodeRenamed>::default();
    /// Tools are sent sorted by name (a map keyed by name), not in registration order.
    ToolsSortedByName = "tools-sorted-by-name", canonical, || Box::<wiring::ToolsSortedByName>::default();
    /// Tools are sent without descriptions and with an empty parameter schema.
    ToolSchemaDropped = "tool-schema-dropped", canonical, || Box::<wiring::ToolSchemaDropped>::default();
    /// The resource context comes before the configured system prompt.
    ResourcesBeforeConfiguredPrompt = "resources-before-configured-prompt", canonical, || Box::<wiring::ResourcesBeforeConfiguredPrompt>::default();
    /// The formatter runs on an empty catalog: a bare `# Pi resources` header appears.
    ResourceHeaderOnEmptyCatalog = "resource-header-on-empty-catalog", canonical, || Box::<wiring::ResourceHeaderOnEmptyCatalog>::default();
    /// Every tree diagnostic becomes one generic restore error.
    PathErrorsGeneric = "path-errors-generic", canonical, || Box::<restore::PathErrorsGeneric>::default();
    /// An empty session ignores the given leaf and starts a new conversation.
    EmptySessionIgnoresLeaf = "empty-session-ignores-leaf", canonical, || Box::<restore::EmptySessionIgnoresLeaf>::default();
    /// A null leaf is refused even on an empty session.
    NullLeafAlwaysRejected = "null-leaf-always-rejected", canonical, || Box::<restore::NullLeafAlwaysRejected>::default();
    /// Entries are written with timestamp 0 instead of the clock's time.
    TimestampsNotFromClock = "timestamps-not-from-clock", canonical, || Box::<persist::TimestampsNotFromClock>::default();
    /// A `custom` entry recording each tool round is stored between the calls and their first
    /// result (oh-my-pi's `tool_execution_start` entry, an extension's `appendEntry`).
    ToolRunLoggedBeforeResult = "tool-run-logged-before-result", canonical, || Box::<persist::ToolRunLoggedBeforeResult>::default();
    /// The leaf is set to an entry before its append is awaited, and stays there when the
    /// append fails: only the runtime's state probe shows it.
    LeafSetBeforeAwait = "leaf-set-before-await", canonical, || Box::<persist::LeafSetBeforeAwait>::default();
    /// The step bound is read off by one: the agent is built with maxSteps + 1.
    MaxStepsOffByOne = "max-steps-off-by-one", canonical, || Box::<control::MaxStepsOffByOne>::default();
    /// The library adapter always reports reason `stop`.
    LibraryReasonAlwaysStop = "library-reason-always-stop", canonical, || Box::<modes::LibraryReasonAlwaysStop>::default();
    /// json mode lists only the run's new messages, not the transcript.
    JsonMessagesSuffixOnly = "json-messages-suffix-only", canonical, || Box::<modes::JsonMessagesSuffixOnly>::default();
    /// The runtime waits for its observers before it stores: an append is issued only once
    /// every observer notification has been answered (Pi awaits extension handlers first).
    AppendsWaitForObservers = "appends-wait-for-observers", canonical, || Box::<observers::AppendsWaitForObservers>::default();
    /// An observer's error escapes the extension host: the next prompt to settle rejects with it.
    ObserverErrorRejectsPrompt = "observer-error-rejects-prompt", canonical, || Box::<observers::ObserverErrorRejectsPrompt>::default();
    /// `agent_end` handlers are registered to fire once: observers hear only the first run end.
    AgentEndToldOnce = "agent-end-told-once", canonical, || Box::<observers::AgentEndToldOnce>::default();
    /// `agent_end` carries the whole transcript, restored history included (oh-my-pi's).
    AgentEndCarriesTranscript = "agent-end-carries-transcript", canonical, || Box::<observers::AgentEndCarriesTranscript>::default();
    /// `turn_end` carries no tool results (aelix's hook event).
    TurnEndDropsToolResults = "turn-end-drops-tool-results", canonical, || Box::<observers::TurnEndDropsToolResults>::default();
    /// A run result's `steps` is one more than the model requests the run made.
    StepsCountedFromOne = "steps-counted-from-one", canonical, || Box::<control::StepsCountedFromOne>::default();
    /// An aborted run's reason is read from its last response: it resolves with `stop`.
    AbortedRunReportsStop = "aborted-run-reports-stop", canonical, || Box::<control::AbortedRunReportsStop>::default();
    /// The aborted flag is never cleared: after one aborted run, a later run that stops reports `aborted`.
    AbortedFlagNeverCleared = "aborted-flag-never-cleared", canonical, || Box::<control::AbortedFlagNeverCleared>::default();
    /// The loop checks the signal before a tool, never before a request: an aborted run asks the model once more.
    RequestAfterAbort = "request-after-abort", canonical, || Box::new(control::RequestAgain::new(control::Again::AfterAbort));
    /// A response with stopReason `error` is retried once (an auto-retry left on).
    RequestAfterError = "request-after-error", canonical, || Box::new(control::RequestAgain::new(control::Again::AfterError));
    /// The host's after phase loops over every call of the message: a blocked call's error result is shown to an after hook.
    AfterHooksSeeBlockedCall = "after-hooks-see-blocked-call", canonical, || Box::<wiring::AfterHooksSeeBlockedCall>::default();
    /// The hooks are handed the call under a namespaced tool name, not the model's.
    HookSeesNamespacedToolName = "hook-sees-namespaced-tool-name", canonical, || Box::<wiring::HookSeesNamespacedToolName>::default();
    /// The restore reports the session's last entry as its leaf, whatever leaf was chosen.
    StartedLeafIsLastEntry = "started-leaf-is-last-entry", canonical, || Box::<restore::StartedLeafIsLastEntry>::default();
    /// The abort is wired to the agent only between tool rounds: while an after hook runs, it
    /// is dropped.
    AbortLostDuringAfterHook = "abort-lost-during-after-hook", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Abort, window::Window::AfterHook));
    /// The abort reaches only the run's first stream: during a later request it is dropped.
    AbortLostOnLaterRequest = "abort-lost-on-later-request", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Abort, window::Window::LaterRequest));
    /// The stream counts as done once its last chunk arrived: an abort before the final
    /// message is dropped.
    AbortLostAfterLastChunk = "abort-lost-after-last-chunk", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Abort, window::Window::AfterLastChunk));
    /// A steer while an after hook runs is dropped (the host holds the agent's queue).
    SteerLostDuringAfterHook = "steer-lost-during-after-hook", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Steer, window::Window::AfterHook));
    /// A steer while a tool runs is dropped.
    SteerLostDuringTool = "steer-lost-during-tool", canonical, || Box::new(window::ResolvedInWindow::new(OperationKind::Steer, window::Window::Tool));
    /// A follow-up during a later request of the run is dropped.
    FollowUpLostOnLaterRequest = "follow-up-lost-on-later-request", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::FollowUp, window::Window::LaterRequest));
    /// dispose() waits for the agent, not the store: with no prompt queued it resolves while
    /// the last run's appends are in flight.
    DisposeIgnoresPersistingRun = "dispose-ignores-persisting-run", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Dispose, window::Window::PersistingRun));
    /// flush() waits for the agent, not the store: it resolves while appends are in flight.
    FlushIgnoresPersistingRun = "flush-ignores-persisting-run", canonical, || Box::new(window::ResolvedInWindow::new(OperationKind::Flush, window::Window::PersistingRun));
    /// flush() checks "no model stream open": it resolves while a tool runs.
    FlushResolvesDuringTool = "flush-resolves-during-tool", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Flush, window::Window::Tool));
    /// dispose() checks "no model stream open": it resolves while a tool runs.
    DisposeResolvesDuringTool = "dispose-resolves-during-tool", canonical, || Box::new(window::ResolvedInWindow::new(OperationKind::Dispose, window::Window::Tool));
    /// A sink error that comes back after the next run got a model response is reported as a
    /// mode error of the runtime's own.
    WriteErrorWrappedWhenLate = "write-error-wrapped-when-late", interleaving, || Box::new(modes::WriteErrorWrapped::new(modes::WriteErrors::Late));
    /// The queue releases the next prompt before the finished one settles (a promise chain or an
    /// asyncio task that resolves the caller in a `finally` after starting the next run): the
    /// settlement is written after the next run's first model request.
    SettledAfterNextRunStarts = "settled-after-next-run-starts", canonical, || Box::<window::SettledAfterNextRunStarts>::default();
    /// A steer during a later request of the run is dropped.
    SteerLostOnLaterRequest = "steer-lost-on-later-request", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Steer, window::Window::LaterRequest));
    /// flush() resolves while an after hook runs.
    FlushResolvesDuringAfterHook = "flush-resolves-during-after-hook", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Flush, window::Window::AfterHook));
    /// flush() resolves during a later request of the run (it watches the first stream only).
    FlushResolvesOnLaterRequest = "flush-resolves-on-later-request", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Flush, window::Window::LaterRequest));
    /// dispose() resolves during a later request of the run (it watches the first stream only).
    DisposeResolvesOnLaterRequest = "dispose-resolves-on-later-request", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Dispose, window::Window::LaterRequest));
    /// A prompt that lands while a before hook runs is refused as busy (the guard reads the
    /// extension host's flag).
    PromptRefusedDuringBeforeHook = "prompt-refused-during-before-hook", interleaving, || Box::new(window::RefusedInWindow::new(OperationKind::Prompt, window::Window::BeforeHook));
    /// A prompt that lands while an after hook runs is refused as busy.
    PromptRefusedDuringAfterHook = "prompt-refused-during-after-hook", interleaving, || Box::new(window::RefusedInWindow::new(OperationKind::Prompt, window::Window::AfterHook));
    /// A mode call that lands while a tool runs is refused as busy.
    ModeRefusedDuringTool = "mode-refused-during-tool", interleaving, || Box::new(window::RefusedInWindow::new(OperationKind::Mode, window::Window::Tool));
    /// A mode call that lands while an append is in flight is refused as busy (the guard reads
    /// the store client's flag).
    ModeRefusedWhilePersisting = "mode-refused-while-persisting", interleaving, || Box::new(window::RefusedInWindow::new(OperationKind::Mode, window::Window::Append));
    /// A mode call that lands while another mode's write is in flight is refused as busy (one
    /// sink at a time).
    ModeRefusedDuringWrite = "mode-refused-during-write", interleaving, || Box::new(window::RefusedInWindow::new(OperationKind::Mode, window::Window::ModeWrite));
    /// A library call that lands while a run's first append is in flight is refused as busy.
    LibraryRefusedOnFirstAppend = "library-refused-on-first-append", interleaving, || Box::new(window::RefusedInWindow::new(OperationKind::Library, window::Window::FirstAppend));
    /// A library call that lands while a mode's write is in flight is refused as busy.
    LibraryRefusedDuringWrite = "library-refused-during-write", interleaving, || Box::new(window::RefusedInWindow::new(OperationKind::Library, window::Window::ModeWrite));
    /// flush() resolves at once while a before hook runs.
    FlushResolvesDuringBeforeHook = "flush-resolves-during-before-hook", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Flush, window::Window::BeforeHook));
    /// dispose() resolves at once while a mode's write is in flight (it waits for the agent,
    /// not the sink).
    DisposeResolvesDuringWrite = "dispose-resolves-during-write", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Dispose, window::Window::ModeWrite));
    /// A steer that lands while a run's later append is in flight is dropped (the run's steering
    /// queue is cleared when its persisting ends).
    SteerLostWhilePersisting = "steer-lost-while-persisting", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::Steer, window::Window::LaterAppend));
    /// A follow-up that lands while an append is in flight is dropped.
    FollowUpLostWhilePersisting = "follow-up-lost-while-persisting", interleaving, || Box::new(window::ResolvedInWindow::new(OperationKind::FollowUp, window::Window::Append));
}

impl Mutant {
    /// Every mutant, in the zoo's order.
    pub fn all() -> Vec<Mutant> {
        Mutant::ALL.to_vec()
    }

    pub fn from_name(name: &str) -> Option<Mutant> {
        Mutant::ALL.iter().copied().find(|mutant| mutant.name() == name)
    }

    /// Whether the mutant belongs to the interleaving tier: it must survive the canonical
    /// schedule of every scenario and fall only to exploration.
    pub fn interleaving_only(self) -> bool {
        self.tier_of() == Tier::Interleaving
    }

    /// `canonical` or `interleaving`: the tier `agentsim mutants` holds the mutant to.
    pub fn tier(self) -> &'static str {
        match self.tier_of() {
            Tier::Canonical => "canonical",
            Tier::Interleaving => "interleaving",
        }
    }

    /// `inner` with this bug at its seam.
    pub fn wrap(self, inner: BoxedSubject) -> BoxedSubject {
        Box::new(seam::Decorated::new(inner, self.build()))
    }
}

/// Every mutant's name, for error messages.
pub fn names() -> Vec<&'static str> {
    Mutant::ALL.iter().map(|mutant| mutant.name()).collect()
}
