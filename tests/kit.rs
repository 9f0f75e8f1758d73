//! The kit's one ordinary integration-test binary: everything that is not one scenario file.
//!
//! What a trace shows is a scenario file (`tests/scenarios.rs`), the seed chapter's ten facts
//! included (`scenarios/lab13/`). `api` holds the few facts no trace can show (the in-process
//! Runtime's embedding API, the Agent's own refusal, the chapter's fault injection), each with
//! why, and maps the ten facts to their files; `session_file` the round trip of a Pi session
//! file. `tidy` keeps conformance.md, the checkers and the scenarios in step (`bite` proves each
//! rule's clauses on bad traces, the hand-edited ones in `clauses`); `bad_input` runs
//! the CLI on broken scenario files; `protocol` drives `agentsim serve` and hostile adapters
//! through the adapter protocol; `check_session` runs `agentsim check-session` on the session
//! files of tests/fixtures/sessions; `hardening` feeds hostile input (one test per finding of
//! the hardening issue) and fuzzes scenario files, session files and protocol lines with a
//! seeded mutator; `expectations` runs `--expect` by cause, the reports' levels and the
//! expectations generator; `html` loads the HTML pages in headless Chromium; `ci_doc` checks the
//! commands of docs/ci.md and the implementers' guide parse; `sdk` runs the JavaScript and
//! Python adapter SDKs' own suites; `zoo` kills every mutant through `serve` as in process;
//! `fields` shows every wire field judged by a rule or listed with the reason it is not;
//! `reduction` shows the reduced exhaustive enumeration reaches every verdict the plain one does;
//! `readme` runs every `agentsim` command of README.md and checks the exit code it gives;
//! `search` runs every strategy of `explore` over the protocol as in process; `packaging` runs the
//! kit as its users install it (the built-in corpus, the guide's first steps, the GitHub Action);
//! `import` holds `agentsim import`'s round trip over the corpus and its located errors;
//! `track_record` runs every command of docs/track-record.md; `recorded` runs recorded runs.

#[path = "kit/api.rs"]
mod api;
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
#[path = "kit/clauses.rs"]
mod clauses;
#[path = "kit/expectations.rs"]
mod expectations;
#[path = "kit/fairness.rs"]
mod fairness;
#[path = "kit/fields.rs"]
mod fields;
#[path = "kit/fuzz.rs"]
mod fuzz;
#[path = "kit/generated.rs"]
mod generated;
#[path = "kit/hardening.rs"]
mod hardening;
#[path = "kit/hardening_third.rs"]
mod hardening_third;
#[path = "kit/html.rs"]
mod html;
#[path = "kit/import.rs"]
mod import;
#[path = "kit/interleaving.rs"]
mod interleaving;
#[path = "kit/messages.rs"]
mod messages;
#[path = "kit/net.rs"]
mod net;
#[path = "kit/packaging.rs"]
mod packaging;
#[path = "kit/protocol.rs"]
mod protocol;
#[path = "kit/readme.rs"]
mod readme;
#[path = "kit/recorded.rs"]
mod recorded;
#[path = "kit/reduction.rs"]
mod reduction;
#[path = "kit/replay_fidelity.rs"]
mod replay_fidelity;
#[path = "kit/sdk.rs"]
mod sdk;
#[path = "kit/search.rs"]
mod search;
#[path = "kit/session_file.rs"]
mod session_file;
#[path = "kit/tidy.rs"]
mod tidy;
#[path = "kit/track_record.rs"]
mod track_record;
#[path = "kit/zoo.rs"]
mod zoo;
