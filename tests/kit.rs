//! The kit's one ordinary integration-test binary: the runtime driven directly through its API.
//!
//! `lab13` holds the seed chapter's ten facts (2 + 3 + 3 + 2) and the fault-injection check;
//! `runtime` the other runtime behaviours; `session_file` the round trip of a Pi session file.
//! Everything goes through the small deterministic `driver`. `tidy` keeps conformance.md, the
//! checkers and the scenarios in step; `bad_input` runs the CLI on broken scenario files;
//! `protocol` drives `agentsim serve` and hostile adapters through the adapter protocol;
//! `check_session` runs `agentsim check-session` on the session files of tests/fixtures/sessions;
//! `hardening` feeds hostile input (one test per finding of the hardening issue) and fuzzes
//! scenario files, session files and protocol lines with a seeded mutator; `html` loads the
//! HTML pages in headless Chromium; `ci_doc` checks the commands of docs/ci.md and the
//! implementers' guide parse; `sdk` runs the JavaScript and Python adapter SDKs' own suites.

#[path = "kit/bad_input.rs"]
mod bad_input;
#[path = "kit/binary.rs"]
mod binary;
#[path = "kit/bite.rs"]
mod bite;
#[path = "kit/cause.rs"]
mod cause;
#[path = "kit/check_session.rs"]
mod check_session;
#[path = "kit/ci_doc.rs"]
mod ci_doc;
#[path = "kit/driver.rs"]
mod driver;
#[path = "kit/fairness.rs"]
mod fairness;
#[path = "kit/generated.rs"]
mod generated;
#[path = "kit/hardening.rs"]
mod hardening;
#[path = "kit/html.rs"]
mod html;
#[path = "kit/interleaving.rs"]
mod interleaving;
#[path = "kit/lab13.rs"]
mod lab13;
#[path = "kit/messages.rs"]
mod messages;
#[path = "kit/net.rs"]
mod net;
#[path = "kit/protocol.rs"]
mod protocol;
#[path = "kit/replay_fidelity.rs"]
mod replay_fidelity;
#[path = "kit/runtime.rs"]
mod runtime;
#[path = "kit/sdk.rs"]
mod sdk;
#[path = "kit/session_file.rs"]
mod session_file;
#[path = "kit/tidy.rs"]
mod tidy;
