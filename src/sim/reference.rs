//! The reference Runtime as a Subject, in process.

use crate::runtime::{Cause, Effect, Input, Mutations, Runtime, RuntimeConfig, RuntimeDeps};
use crate::scenario::Scenario;

use super::{Restored, Subject, SubjectFailure};

/// Drives `runtime::Runtime` directly; optionally with mutation switches on.
#[derive(Debug, Default)]
pub struct ReferenceSubject {
    runtime: Option<Runtime>,
    mutations: Mutations,
}

impl ReferenceSubject {
    pub fn new() -> ReferenceSubject {
        ReferenceSubject::default()
    }

    pub fn with_mutations(mutations: Mutations) -> ReferenceSubject {
        ReferenceSubject {
            runtime: None,
            mutations,
        }
    }
}

/// The runtime configuration and dependencies a scenario describes.
pub fn runtime_parts(scenario: &Scenario, mutations: Mutations) -> (RuntimeConfig, RuntimeDeps) {
    let config = RuntimeConfig {
        active_leaf_id: scenario.config.active_leaf_id.clone(),
        system_prompt: scenario.config.system_prompt.clone(),
        steps_max: scenario.config.max_steps,
        context: scenario.config.context,
    };
    let deps = RuntimeDeps {
        resources: scenario.resources.clone(),
        extensions: scenario.extensions.iter().map(|script| script.name.clone()).collect(),
        tools: crate::model::ToolRegistry::new(scenario.tools.iter().map(|tool| tool.spec()).collect()),
        ids: scenario.config.ids.clone(),
        clock: scenario.config.clock.clone(),
        mutations,
    };
    (config, deps)
}

impl Subject for ReferenceSubject {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        let (config, deps) = runtime_parts(scenario, self.mutations.clone());
        match Runtime::restore(config, deps, &scenario.session) {
            Ok(mut runtime) => {
                let restored = Restored {
                    leaf: runtime.leaf().map(str::to_string),
                    messages: runtime.control().state().messages.len(),
                };
                self.runtime = Some(runtime);
                Ok(Ok(restored))
            }
            Err(error) => Ok(Err(Cause::new(error.code(), error.to_string()))),
        }
    }

    fn reference_mutations(&self) -> Option<Mutations> {
        Some(self.mutations.clone())
    }

    fn mutant_name(&self) -> Option<&'static str> {
        self.mutations.name()
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let runtime = self.runtime.as_mut().ok_or_else(|| SubjectFailure::Protocol {
            message: "an input was delivered before a successful start".into(),
        })?;
        runtime.handle_input(input).map_err(|error| SubjectFailure::Protocol {
            message: format!("{}: {error}", error.code()),
        })?;
        while let Some(effect) = runtime.poll_effect() {
            effects.push(effect);
        }
        Ok(())
    }
}
