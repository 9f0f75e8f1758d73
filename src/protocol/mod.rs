//! The adapter protocol: how the kit drives an implementation in another process.
//!
//! - [`wire`]: the versioned JSON-lines messages (docs/protocol.md), apart from the domain types,
//!   with conversions to and from `runtime::io`'s Inputs and Effects.
//! - [`shape`]: the shapes of adapter lines as tables: for a line `wire` refuses, the JSON path
//!   of the first bad field and what was expected there (shared with the SDKs through
//!   `tests/fixtures/protocol/lines.json`).
//! - [`process`]: one adapter process, its pipes and bounded waits; the process group is killed
//!   when it is dropped.
//! - [`external`]: [`ExternalSubject`], the `sim::Subject` that speaks the protocol to an adapter;
//!   every misbehaviour becomes a typed [`AdapterFailure`] (`failure`), wrapped once into
//!   `sim::SubjectFailure`.
//! - [`serve`]: `agentsim serve`, the reference Runtime as an adapter over stdio.
//! - [`diff`]: differential traces: where an implementation's trace first departs from the
//!   reference's.
//!
//! Nothing here judges a trace (that is `check`'s) or chooses a schedule (that is `sim`'s).

pub mod convert;
pub mod diff;
pub mod external;
pub mod failure;
pub mod fields;
pub mod pool;
pub mod process;
pub mod serve;
pub mod shape;
pub mod wire;

pub use external::{ExternalSubject, SharedExternal, STEP_TIMEOUT_DEFAULT};
pub use failure::AdapterFailure;
