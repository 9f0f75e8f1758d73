//! agentsim: a deterministic simulation and conformance kit for agent Runtimes of the Pi family.
//!
//! # Bird's-eye view
//!
//! A run is data: `(scenario, strategy, seed) -> trace`. A [`scenario`] file describes a session
//! tree, a runtime configuration, resources, extensions, tools, a model script, a fault plan and
//! operations. The [`sim`] scheduler drives a *Subject* (the in-process reference [`runtime`],
//! or an external implementation over [`protocol`]) step by step, answering its effects with
//! scripted fakes, choosing among enabled steps with one strategy from one seed, and records a
//! typed [`trace`]. The [`check`] catalogue, one checker per rule of `conformance.md`, judges
//! every trace. [`suite`] runs a corpus once; [`explore`] runs it under many schedules;
//! [`bench`](mod@bench) measures the kit; [`cli`] is the command line.
//!
//! # Codemap
//!
//! - [`limits`]: every bound on input; numbers only.
//! - [`model`]: plain data and pure functions: Pi's messages and entries, `path_to`,
//!   `build_context`, resources, tools.
//! - [`runtime`]: the reference Runtime as a sans-IO state machine; it holds no mutant, no
//!   switch and no detour.
//! - [`zoo`]: the bug zoo: every named mutant, each a decorator at the Subject seam that wraps
//!   any subject (the reference, an adapter process, another mutant).
//! - [`sim`]: the scheduler, strategies (scripted, random, pct, exhaustive with partial-order
//!   reduction or plain, coverage-guided),
//!   the portable PRNG, the fakes and the fault plan.
//! - [`shell`]: the async shell around the reference Runtime (tokio), with one `dyn` seam per
//!   model, store, tool host and output sink: the embedding API and the networked world's runtime.
//! - [`scenario`]: the scenario file format and its errors (file, line, field).
//! - [`store`]: Pi's JSONL session file: parsing with line numbers, `check_session`, and the
//!   append-only `FileStore` on a real or turmoil-simulated disk.
//! - [`trace`]: typed events, the one-line rendering (`render.rs`) and JSON.
//! - [`check`]: the rule catalogue and its checkers; each rule's situations (what makes it
//!   non-vacuous, counted by `explore --coverage`); scenario expectations.
//! - [`shrink`]: a failing schedule shrunk to a minimal scenario file with its schedule pinned.
//! - [`run`]: a run as one value (scenario, schedule, implementation, world, judging), its
//!   replay command printed and parsed back, and the one `execute` every runner calls.
//! - [`protocol`]: the adapter protocol, the external-process Subject, `serve`, trace diffs.
//! - [`import`]: a session file from the field as a scenario (`agentsim import`), and whether
//!   the reference would have stored what the file holds.
//! - [`oracle`]: the whole-trace oracle: any trace's inputs re-fed to the reference (or any
//!   subject) by identity, every output compared with the contract's freedoms set aside (REF-1).
//! - [`implementation`]: what is under test (the reference, its variant or an adapter command,
//!   each with or without a mutant), chosen once.
//! - [`net`]: the networked world (turmoil) and the crash test's run.
//! - [`deviations`]: an implementation's expected deviations (`--expect`).
//! - [`findings`]: what failing cases come to: root causes per rule, counted in bounded memory.
//! - [`html`]: one self-contained HTML page per case: swimlanes, the session tree, violations
//!   with their rule's statement, and the divergence from the reference for `--impl` cases.
//! - [`whole_file`]: the files the kit writes for its user, written whole or not at all.
//! - [`suite`], [`explore`], [`bench`](mod@bench), [`cli`]: the corpus, the runners and the
//!   command line.
//!
//! # Architecture invariants
//!
//! - `runtime` never imports tokio, reads a clock, draws a random number or spawns: inputs in,
//!   effects out; ids and times follow rules the driver sets.
//! - All nondeterminism comes from one `u64` seed through one portable PRNG (`sim::rng`);
//!   nothing iterates a hash map where order can reach a trace.
//! - The reference and external implementations are driven through the same `sim::Subject`.
//! - Every rule has an ID in conformance.md, a checker, a scenario and a bite test (the tidy
//!   tests); only a rule's violation counts as a mutant's kill.
//! - Every failure prints one command that replays it.

pub mod bench;
pub mod check;
pub mod cli;
pub mod deviations;
pub mod explore;
pub mod findings;
pub mod html;
pub mod implementation;
pub mod import;
pub mod limits;
pub mod model;
pub mod net;
pub mod oracle;
pub mod protocol;
pub mod run;
pub mod runtime;
pub mod scenario;
pub mod shell;
pub mod shrink;
pub mod sim;
pub mod store;
pub mod suite;
pub mod trace;
pub mod whole_file;
pub mod zoo;
