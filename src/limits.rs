//! Every bound the kit puts on its input, in one place, so that no number in a scenario file or
//! a flag can make it allocate or wait in proportion to it.
//!
//! The scenario limits are checked when a scenario is loaded (bad input, exit 2, naming the
//! field); `src/scenario/mod.rs`'s documentation lists them as a table. The scheduler's bound on
//! the steps of one run is here too: a pinned `schedule` may not be longer.

pub const FILE_BYTES_MAX: u64 = 4 * 1024 * 1024;
/// `session`: initial entries.
pub const SESSION_ENTRIES_MAX: usize = 10_000;
/// `model`: scripted responses (more could never pass [`CONTEXT_MESSAGES_MAX`] by much).
pub const MODEL_STEPS_MAX: usize = 1_000;
/// `model[i].toolCalls`: calls in one response.
pub const TOOL_CALLS_PER_STEP_MAX: usize = 1_000;
/// `model[i].chunks`: streamed pieces of one response (one string each).
pub const CHUNKS_MAX: u32 = 1_000;
/// `operations` (more could never pass [`CONTEXT_MESSAGES_MAX`]).
pub const OPERATIONS_MAX: usize = 1_000;
/// The messages a scenario's model requests could carry in all, bounded from its counts as
/// `(model + operations) x (session + model + 2 x operations + tool calls + 1)`: at most one
/// request per scripted response and one more per operation (a request past the script is
/// answered with an error, which ends its run), each carrying at most the session, a response
/// per request, a user message per operation, a result per scripted tool call and a compaction
/// summary. Each request carries the whole context (the contract), so what a run's requests
/// carry grows with the square of its length, and every message carried is held in the trace
/// and read by the checkers: about 0.75 KB and 1 µs each. At the bound a run takes about 1.5
/// GB; the walk-through repeated (four messages a prompt) is admitted up to 364 prompts.
pub const CONTEXT_MESSAGES_MAX: u64 = 2_000_000;
/// `extensions`, `observers`, `tools`.
pub const EXTENSIONS_MAX: usize = 1_000;
/// `observers[i].answers`.
pub const OBSERVER_ANSWERS_MAX: usize = 100_000;
pub const TOOLS_MAX: usize = 1_000;
/// `config.maxSteps`: model requests per prompt.
pub const REQUESTS_PER_PROMPT_MAX: u32 = 1_000;
/// `config.ids.start`.
pub const IDS_START_MAX: u64 = 1_000_000_000_000;
/// `config.clock.startMs` (2100-01-01T00:00:00Z) and `config.clock.stepMs` (one day).
pub const CLOCK_START_MS_MAX: u64 = 4_102_444_800_000;
pub const CLOCK_STEP_MS_MAX: u64 = 86_400_000;
/// `config.context.total`, `reservedOutput`, `safetyMargin` (tokens).
pub const CONTEXT_TOKENS_MAX: u64 = 1_000_000_000_000;
/// `faults.appends[i].at`, `faults.writes[i].at`: the 1-based append or write counted.
pub const FAULT_AT_MAX: u32 = 1_000_000;
/// `net.latencyMinMs`, `net.latencyMaxMs`.
pub const NET_LATENCY_MS_MAX: u64 = 60_000;
/// `net.storeTimeoutMs`, `net.modelTimeoutMs`, and `atMs`, `delayMs`, `forMs` of a net
/// fault: one hour of simulated time.
pub const NET_TIME_MS_MAX: u64 = 3_600_000;

/// Steps after which the scheduler cuts a run off (a subject that loops forever); a scenario's
/// pinned `schedule` may be at most this long.
pub const SCHEDULE_STEPS_MAX: usize = 20_000;

/// The most change points `pct:DEPTH` places (a run of the corpus takes a few dozen steps; a
/// depth beyond the scheduler's step bound could never be reached, and each point is a
/// priority to draw).
pub const PCT_DEPTH_MAX: u32 = 1_000;
