//! `agentsim serve`: the reference Runtime as an adapter, speaking the protocol over stdio.
//!
//! It is the protocol's own reference adapter: `agentsim run --impl "agentsim serve"` must give
//! byte-identical traces to the in-process reference (a test checks this for every scenario),
//! and an implementer can read its transcript to see what a conforming adapter writes. With a
//! mutation switched on it serves a deliberately broken reference, to see the kit catch it
//! through the wire.
//!
//! Turn-taking as docs/protocol.md states it (version 2): `hello`; on `start`, `started` or
//! `restore_failed`, then `idle`; after each `operation` or `complete`, every effect the runtime
//! produced, then `idle`; on `reset`, the runtime is dropped, then `idle` (a `start` while a run
//! is live resets first); on `shutdown` or end of input, exit. A line it cannot apply is
//! answered with an `error` message (and the run goes on until the kit stops it).

use std::io::{BufRead, Write};

use crate::model::{ContextBudget, ToolRegistry};
use crate::runtime::{Mutation, Mutations, Runtime, RuntimeConfig, RuntimeDeps};

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
pub fn hello(mutant: Option<Mutation>) -> Hello {
    let mut name = IMPLEMENTATION_NAME.to_string();
    if let Some(mutation) = mutant {
        name.push('+');
        name.push_str(mutation.name());
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
    }
}

/// Serves runs until `shutdown` or end of input: reads kit lines from `input`, writes adapter
/// lines to `output`. `protocol` is what `hello` says: with 1 the kit runs one scenario per
/// process (the adapter itself behaves the same).
pub fn serve(
    input: impl BufRead,
    mut output: impl Write,
    mutant: Option<Mutation>,
    protocol: u32,
) -> Result<(), ServeError> {
    let mut adapter = Adapter {
        runtime: None,
        mutations: mutant.map(Mutations::with).unwrap_or_default(),
        output: &mut output,
    };
    let mut said = hello(mutant);
    said.protocol = protocol;
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
            KitMessage::Reset {} => adapter.runtime = None,
            KitMessage::Start { scenario } => {
                adapter.runtime = None;
                adapter.start(&scenario)?
            }
            other => adapter.handle(other)?,
        }
        adapter.write(&AdapterMessage::Idle {})?;
        adapter.output.flush()?;
    }
    Ok(())
}

struct Adapter<'w, W: Write> {
    runtime: Option<Runtime>,
    mutations: Mutations,
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
        })
    }

    fn start(&mut self, scenario: &StartScenario) -> std::io::Result<()> {
        let config = RuntimeConfig {
            active_leaf_id: scenario.config.active_leaf_id.clone(),
            system_prompt: scenario.config.system_prompt.clone(),
            steps_max: scenario.config.max_steps,
            context: ContextBudget {
                total: scenario.config.context.total,
                reserved_output: scenario.config.context.reserved_output,
                safety_margin: scenario.config.context.safety_margin,
            },
        };
        let deps = RuntimeDeps {
            resources: scenario.resources.clone(),
            extensions: scenario.extensions.clone(),
            tools: ToolRegistry::new(scenario.tools.clone()),
            ids: scenario.id_rule(),
            clock: scenario.clock_rule(),
            mutations: self.mutations.clone(),
            observers: scenario.observer_specs(),
            other_readers: Default::default(),
        };
        match Runtime::restore(config, deps, &scenario.session) {
            Ok(mut runtime) => {
                let leaf = runtime.leaf().map(str::to_string);
                let messages = runtime.control().state().messages.len();
                self.runtime = Some(runtime);
                self.write(&AdapterMessage::Started { leaf, messages })
            }
            Err(error) => self.write(&AdapterMessage::RestoreFailed {
                cause: WireCause {
                    code: error.code().to_string(),
                    message: error.to_string(),
                },
            }),
        }
    }

    fn handle(&mut self, message: KitMessage) -> std::io::Result<()> {
        let Some(input) = input_from_wire(message) else {
            return Ok(());
        };
        let Some(runtime) = self.runtime.as_mut() else {
            return self.error("serve.not_started", "an operation or completion before `start`".into());
        };
        if let Err(error) = runtime.handle_input(input) {
            let code = error.code();
            return self.error(code, error.to_string());
        }
        let mut effects = Vec::new();
        while let Some(effect) = runtime.poll_effect() {
            effects.push(effect);
        }
        for effect in &effects {
            self.write(&effect_to_wire(effect))?;
        }
        Ok(())
    }
}
