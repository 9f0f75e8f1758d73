//! `agentsim serve`: the reference Runtime as an adapter, speaking the protocol over stdio.
//!
//! It is the protocol's own reference adapter: `agentsim run --impl "agentsim serve"` must give
//! byte-identical traces to the in-process reference (a test checks this for every scenario),
//! and an implementer can read its transcript to see what a conforming adapter writes. With a
//! mutant of the zoo it serves a deliberately broken reference (the mutant's decorator around
//! the reference, as in process), to see the kit catch it through the wire. The decorator learns
//! the scenario from `start` only: a bug that needs the kit's own script (how many chunks a
//! scripted response streams) cannot see it here.
//!
//! Turn-taking as docs/protocol.md states it (version 2): `hello`; on `start`, `started` or
//! `restore_failed`, then `idle`; after each `operation` or `complete`, every effect the runtime
//! produced, then `idle`; on `reset`, the runtime is dropped, then `idle` (a `start` while a run
//! is live resets first); on `shutdown` or end of input, exit. A line it cannot apply is
//! answered with an `error` message (and the run goes on until the kit stops it).

use std::io::{BufRead, Write};

use crate::sim::reference::ReferenceSubject;
use crate::sim::{BoxedSubject, SubjectFailure};
use crate::zoo::Mutant;

use super::convert::{effect_to_wire, input_from_wire};
use super::wire::{
    parse_kit_line, to_line, AdapterMessage, Hello, Implementation, KitMessage, StartScenario, WireCause,
    PROTOCOL_VERSION,
};

/// The name `serve` gives in `hello`.
pub const IMPLEMENTATION_NAME: &str = "agentsim-reference";

/// Why `serve` stopped other than by `shutdown` or end of input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error("stdio: {0}")]
    Io(#[from] std::io::Error),
    #[error("line {line}: not a kit message: {problem}")]
    BadLine { line: usize, problem: String },
}

impl ServeError {
    pub fn code(&self) -> &'static str {
        match self {
            ServeError::Io(_) => "serve.io",
            ServeError::BadLine { .. } => "serve.bad_line",
        }
    }
}

/// The `hello` of the reference adapter (protocol 2); a mutant's name is appended to the
/// implementation's.
pub fn hello(mutant: Option<Mutant>) -> Hello {
    let mut name = IMPLEMENTATION_NAME.to_string();
    if let Some(mutant) = mutant {
        name.push('+');
        name.push_str(mutant.name());
    }
    Hello {
        protocol: PROTOCOL_VERSION,
        implementation: Implementation {
            name,
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        features: ["steer", "followUp", "abort", "mode", "library", "chunks", "observers"]
            .iter()
            .map(|feature| feature.to_string())
            .collect(),
        unsupported: Default::default(),
        probes: vec![super::wire::Probe::State],
    }
}

/// Serves runs until `shutdown` or end of input: reads kit lines from `input`, writes adapter
/// lines to `output`. `protocol` is what `hello` says: with 1 the kit runs one scenario per
/// process (the adapter itself behaves the same).
pub fn serve(
    input: impl BufRead,
    mut output: impl Write,
    mutant: Option<Mutant>,
    protocol: u32,
) -> Result<(), ServeError> {
    let mut adapter = Adapter {
        subject: None,
        mutant,
        output: &mut output,
    };
    let mut said = hello(mutant);
    said.protocol = protocol;
    if protocol < 2 || mutant.is_some_and(|mutant| !mutant.probes_state()) {
        // Probes are protocol 2; a mutant that keeps no state story reports none.
        said.probes.clear();
    }
    let probes = !said.probes.is_empty();
    adapter.write(&AdapterMessage::Hello(said))?;
    adapter.output.flush()?;
    for (index, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let message = match parse_kit_line(&line) {
            Ok(message) => message,
            Err(problem) => {
                adapter.write(&AdapterMessage::Error {
                    code: "serve.bad_line".into(),
                    message: problem.clone(),
                    recoverable: false,
                })?;
                adapter.output.flush()?;
                return Err(ServeError::BadLine {
                    line: index + 1,
                    problem,
                });
            }
        };
        match message {
            KitMessage::Shutdown {} => break,
            KitMessage::Reset {} => adapter.subject = None,
            KitMessage::Start { scenario } => {
                adapter.subject = None;
                adapter.start(&scenario)?
            }
            other => adapter.handle(other)?,
        }
        // The state of the runtime this answer leaves, when there is one (not after `reset`,
        // nor after a refused restore).
        let state = adapter
            .subject
            .as_ref()
            .filter(|_| probes)
            .and_then(|subject| subject.state())
            .map(super::wire::WireState::from);
        adapter.write(&AdapterMessage::Idle { state })?;
        adapter.output.flush()?;
    }
    Ok(())
}

struct Adapter<'w, W: Write> {
    /// The reference (with the mutant around it), once started.
    subject: Option<BoxedSubject>,
    mutant: Option<Mutant>,
    output: &'w mut W,
}

impl<W: Write> Adapter<'_, W> {
    fn write(&mut self, message: &AdapterMessage) -> std::io::Result<()> {
        self.output.write_all(to_line(message).as_bytes())?;
        self.output.write_all(b"\n")
    }

    fn error(&mut self, code: &str, message: String) -> std::io::Result<()> {
        self.write(&AdapterMessage::Error {
            code: code.to_string(),
            message,
            recoverable: false,
        })
    }

    fn start(&mut self, scenario: &StartScenario) -> std::io::Result<()> {
        let reference: BoxedSubject = Box::new(ReferenceSubject::new());
        let mut subject = match self.mutant {
            Some(mutant) => mutant.wrap(reference),
            None => reference,
        };
        match subject.start(&scenario.to_scenario()) {
            Ok(Ok(restored)) => {
                self.subject = Some(subject);
                self.write(&AdapterMessage::Started {
                    leaf: restored.leaf,
                    messages: restored.messages,
                })
            }
            Ok(Err(cause)) => self.write(&AdapterMessage::RestoreFailed {
                cause: WireCause {
                    code: cause.code,
                    message: cause.message,
                },
            }),
            Err(failure) => self.error(failure.code(), failure.to_string()),
        }
    }

    fn handle(&mut self, message: KitMessage) -> std::io::Result<()> {
        let Some(input) = input_from_wire(message) else {
            return Ok(());
        };
        let Some(subject) = self.subject.as_mut() else {
            return self.error("serve.not_started", "an operation or completion before `start`".into());
        };
        let mut effects = Vec::new();
        if let Err(failure) = subject.deliver(input, &mut effects) {
            let (code, message) = refusal(&failure);
            return self.error(&code, message);
        }
        for effect in &effects {
            self.write(&effect_to_wire(effect))?;
        }
        Ok(())
    }
}

/// The code and message of a refused input: the runtime's own input error (`input.unknown_effect:
/// ...`), which the in-process subject reports as `code: message`.
fn refusal(failure: &SubjectFailure) -> (String, String) {
    match failure {
        SubjectFailure::Protocol { message } => match message.split_once(": ") {
            Some((code, message)) => (code.to_string(), message.to_string()),
            None => (failure.code().to_string(), message.clone()),
        },
        other => (other.code().to_string(), other.to_string()),
    }
}
