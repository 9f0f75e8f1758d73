//! Conversions between the wire types of the protocol (`super::wire`) and the runtime's domain
//! types (`runtime::io`), both ways: what the kit writes from an input, what it reads into an
//! effect or a settlement, and the `start` message built from a scenario. No IO, no decisions.

use super::wire::*;
use crate::model::Operation;
use crate::runtime::{
    Cause, ClockRule, Completion, Effect, EffectId, HookOutcome, HookPhase, IdRule, Input, ModelRequest, ObserverSpec,
    OpId, OpValue, RunReason, RunResult, Settlement, SignalId, StoreOutcome, ToolOutcome,
};
use crate::scenario::{default_disk_error, AppendFaultKind, Scenario};

// ---------------------------------------------------------------------------------------------
// Conversions: domain -> wire
// ---------------------------------------------------------------------------------------------

impl From<&Cause> for WireCause {
    fn from(cause: &Cause) -> WireCause {
        WireCause {
            code: cause.code.clone(),
            message: cause.message.clone(),
        }
    }
}

impl From<WireCause> for Cause {
    fn from(cause: WireCause) -> Cause {
        Cause::new(cause.code, cause.message)
    }
}

impl From<RunReason> for WireRunReason {
    fn from(reason: RunReason) -> WireRunReason {
        match reason {
            RunReason::Stop => WireRunReason::Stop,
            RunReason::Length => WireRunReason::Length,
            RunReason::Error => WireRunReason::Error,
            RunReason::Aborted => WireRunReason::Aborted,
            RunReason::MaxSteps => WireRunReason::MaxSteps,
        }
    }
}

impl From<WireRunReason> for RunReason {
    fn from(reason: WireRunReason) -> RunReason {
        match reason {
            WireRunReason::Stop => RunReason::Stop,
            WireRunReason::Length => RunReason::Length,
            WireRunReason::Error => RunReason::Error,
            WireRunReason::Aborted => RunReason::Aborted,
            WireRunReason::MaxSteps => RunReason::MaxSteps,
        }
    }
}

impl From<HookPhase> for WirePhase {
    fn from(phase: HookPhase) -> WirePhase {
        match phase {
            HookPhase::Before => WirePhase::Before,
            HookPhase::After => WirePhase::After,
        }
    }
}

impl From<WirePhase> for HookPhase {
    fn from(phase: WirePhase) -> HookPhase {
        match phase {
            WirePhase::Before => HookPhase::Before,
            WirePhase::After => HookPhase::After,
        }
    }
}

impl StartScenario {
    /// What `start` carries for a scenario.
    pub fn from_scenario(scenario: &Scenario) -> StartScenario {
        let config = &scenario.config;
        let appends = scenario
            .faults
            .appends
            .iter()
            .map(|fault| {
                let (name, error) = match fault.fault {
                    AppendFaultKind::Reject => ("reject", Some(fault.error.clone().unwrap_or_else(default_disk_error))),
                    AppendFaultKind::AppliedThenFail => (
                        "appliedThenFail",
                        Some(fault.error.clone().unwrap_or_else(default_disk_error)),
                    ),
                    AppendFaultKind::Late => ("late", None),
                };
                WireAppendFault {
                    at: fault.at,
                    fault: name.to_string(),
                    error: error.as_ref().map(WireCause::from),
                    until: fault
                        .until
                        .map(|until| serde_json::to_value(until).expect("conditions serialize")),
                }
            })
            .collect();
        let writes = scenario
            .faults
            .writes
            .iter()
            .map(|fault| WireWriteFault {
                at: fault.at,
                error: WireCause::from(&fault.error),
            })
            .collect();
        StartScenario {
            config: WireConfig {
                active_leaf_id: config.active_leaf_id.clone(),
                system_prompt: config.system_prompt.clone(),
                max_steps: config.max_steps,
                context: WireBudget {
                    total: config.context.total,
                    reserved_output: config.context.reserved_output,
                    safety_margin: config.context.safety_margin,
                },
            },
            session: scenario.session.clone(),
            resources: scenario.resources.clone(),
            tools: scenario.tools.iter().map(|tool| tool.spec()).collect(),
            extensions: scenario.extensions.iter().map(|script| script.name.clone()).collect(),
            ids: WireIdRule {
                prefix: config.ids.prefix.clone(),
                start: config.ids.start,
            },
            clock: WireClockRule {
                start_ms: config.clock.start_ms,
                step_ms: config.clock.step_ms,
            },
            faults: WireFaults { appends, writes },
            observers: scenario
                .observers
                .iter()
                .map(|observer| WireObserver {
                    name: observer.name.clone(),
                    events: observer.events.clone(),
                })
                .collect(),
            chunks: {
                let chunks: Vec<u32> = scenario.model.iter().map(|step| step.chunks.unwrap_or(0)).collect();
                if chunks.iter().any(|&count| count > 0) {
                    chunks
                } else {
                    Vec::new()
                }
            },
        }
    }

    /// The observers as the runtime takes them.
    pub fn observer_specs(&self) -> Vec<ObserverSpec> {
        self.observers
            .iter()
            .map(|observer| ObserverSpec {
                name: observer.name.clone(),
                events: observer.events.clone(),
            })
            .collect()
    }

    /// The scenario an adapter learns from `start`: the runtime's parts, with no script of the
    /// world's (model, tool results, hook answers, faults, operations), which stay with the kit;
    /// of the model's script, only how many chunks each response streams.
    pub fn to_scenario(&self) -> crate::scenario::Scenario {
        use crate::scenario::{Config, ExtensionScript, ObserverScript, Scenario, ToolScript};
        Scenario {
            version: 1,
            description: String::new(),
            rules: Vec::new(),
            session: self.session.clone(),
            config: Config {
                active_leaf_id: self.config.active_leaf_id.clone(),
                system_prompt: self.config.system_prompt.clone(),
                max_steps: self.config.max_steps,
                context: crate::model::ContextBudget {
                    total: self.config.context.total,
                    reserved_output: self.config.context.reserved_output,
                    safety_margin: self.config.context.safety_margin,
                },
                ids: self.id_rule(),
                clock: self.clock_rule(),
            },
            resources: self.resources.clone(),
            extensions: self
                .extensions
                .iter()
                .map(|name| ExtensionScript {
                    name: name.clone(),
                    before: Vec::new(),
                    after: Vec::new(),
                })
                .collect(),
            observers: self
                .observers
                .iter()
                .map(|observer| ObserverScript {
                    name: observer.name.clone(),
                    events: observer.events.clone(),
                    slow: false,
                    answers: Vec::new(),
                })
                .collect(),
            tools: self
                .tools
                .iter()
                .map(|tool| ToolScript {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                    results: Vec::new(),
                })
                .collect(),
            model: self
                .chunks
                .iter()
                .map(|&count| crate::scenario::ModelStep {
                    chunks: Some(count),
                    ..Default::default()
                })
                .collect(),
            faults: Default::default(),
            operations: Vec::new(),
            expect: Default::default(),
            net: None,
            schedule: None,
        }
    }

    pub fn id_rule(&self) -> IdRule {
        IdRule {
            prefix: self.ids.prefix.clone(),
            start: self.ids.start,
        }
    }

    pub fn clock_rule(&self) -> ClockRule {
        ClockRule {
            start_ms: self.clock.start_ms,
            step_ms: self.clock.step_ms,
        }
    }
}

/// The operation as the wire spells it; [`Operation`]'s and [`WireOperation`]'s names are the
/// same (a tidy test checks it), so the conversion is field for field, both ways.
impl From<&Operation> for WireOperation {
    fn from(operation: &Operation) -> WireOperation {
        match operation.clone() {
            Operation::Prompt { text } => WireOperation::Prompt { text },
            Operation::Flush => WireOperation::Flush,
            Operation::Dispose => WireOperation::Dispose,
            Operation::Steer { text } => WireOperation::Steer { text },
            Operation::FollowUp { text } => WireOperation::FollowUp { text },
            Operation::Abort => WireOperation::Abort,
            Operation::Mode { mode, text } => WireOperation::Mode { mode, text },
            Operation::Library { text } => WireOperation::Library { text },
        }
    }
}

impl From<WireOperation> for Operation {
    fn from(operation: WireOperation) -> Operation {
        match operation {
            WireOperation::Prompt { text } => Operation::Prompt { text },
            WireOperation::Flush => Operation::Flush,
            WireOperation::Dispose => Operation::Dispose,
            WireOperation::Steer { text } => Operation::Steer { text },
            WireOperation::FollowUp { text } => Operation::FollowUp { text },
            WireOperation::Abort => Operation::Abort,
            WireOperation::Mode { mode, text } => Operation::Mode { mode, text },
            WireOperation::Library { text } => Operation::Library { text },
        }
    }
}

/// The kit's line for one input: an `operation` or a `complete`.
pub fn input_to_wire(input: &Input) -> KitMessage {
    match input {
        Input::Operation { op, operation } => KitMessage::Operation {
            op: op.0,
            operation: operation.into(),
        },
        Input::Complete { effect, completion } => KitMessage::Complete {
            effect: effect.0,
            completion: completion_to_wire(completion),
        },
    }
}

fn completion_to_wire(completion: &Completion) -> WireCompletion {
    let store = |outcome: &StoreOutcome| match outcome {
        StoreOutcome::Ok => WireStoreOutcome::Ok,
        StoreOutcome::Failed(cause) => WireStoreOutcome::Failed { cause: cause.into() },
    };
    match completion {
        Completion::ModelChunk { text } => WireCompletion::ModelChunk { text: text.clone() },
        Completion::ModelFinal { message } => WireCompletion::ModelFinal {
            message: message.clone(),
        },
        Completion::Tool(outcome) => WireCompletion::Tool {
            outcome: match outcome {
                ToolOutcome::Ok {
                    content,
                    details,
                    is_error,
                } => WireToolOutcome::Ok {
                    content: content.clone(),
                    details: details.clone(),
                    is_error: *is_error,
                },
                ToolOutcome::Threw { message } => WireToolOutcome::Threw {
                    message: message.clone(),
                },
                ToolOutcome::Aborted => WireToolOutcome::Aborted,
            },
        },
        Completion::Hook(answer) => WireCompletion::Hook {
            answer: match answer {
                HookOutcome::Allow => WireHookAnswer::Allow,
                HookOutcome::Deny { reason } => WireHookAnswer::Deny { reason: reason.clone() },
                HookOutcome::RewriteArguments { arguments } => WireHookAnswer::RewriteArguments {
                    arguments: arguments.clone(),
                },
                HookOutcome::Observe => WireHookAnswer::Observe,
                HookOutcome::RewriteResult { content, is_error } => WireHookAnswer::RewriteResult {
                    content: content.clone(),
                    is_error: *is_error,
                },
                HookOutcome::Threw { message } => WireHookAnswer::Threw {
                    message: message.clone(),
                },
            },
        },
        Completion::Append(outcome) => WireCompletion::Append {
            outcome: store(outcome),
        },
        Completion::Write(outcome) => WireCompletion::Write {
            outcome: store(outcome),
        },
        Completion::Notify(outcome) => WireCompletion::Notify {
            outcome: outcome.clone(),
        },
    }
}

/// The adapter's line for one effect or notification of the runtime.
pub fn effect_to_wire(effect: &Effect) -> AdapterMessage {
    let wire = |effect: WireEffect| AdapterMessage::Effect { effect };
    match effect {
        Effect::ModelRequest {
            effect,
            signal,
            request,
        } => wire(WireEffect::ModelRequest {
            id: effect.0,
            signal: signal.0,
            request: WireModelRequest {
                system_prompt: request.system_prompt.clone(),
                messages: request.messages.clone(),
                tools: request.tools.to_vec(),
            },
        }),
        Effect::ToolCall { effect, signal, call } => wire(WireEffect::ToolCall {
            id: effect.0,
            signal: signal.0,
            call: call.clone(),
        }),
        Effect::Hook {
            effect,
            extension,
            phase,
            call,
            result,
        } => wire(WireEffect::Hook {
            id: effect.0,
            extension: extension.clone(),
            phase: (*phase).into(),
            call: call.clone(),
            result: result.clone(),
        }),
        Effect::Append { effect, entry } => wire(WireEffect::Append {
            id: effect.0,
            entry: entry.clone(),
        }),
        Effect::Write { effect, text } => wire(WireEffect::Write {
            id: effect.0,
            text: text.clone(),
        }),
        Effect::Notify {
            effect,
            observer,
            event,
        } => wire(WireEffect::Notify {
            id: effect.0,
            observer: observer.clone(),
            event: event.clone(),
        }),
        Effect::AbortSignal { signal } => AdapterMessage::AbortSignal { signal: signal.0 },
        Effect::Settled { op, settlement } => AdapterMessage::Settled {
            op: op.0,
            settlement: match settlement {
                Settlement::Resolved(value) => WireSettlement::Resolved {
                    value: match value {
                        OpValue::Unit => WireValue::Unit {},
                        OpValue::Run(result) => WireValue::Run {
                            reason: result.reason.into(),
                            steps: result.steps,
                            messages: result.messages.clone(),
                        },
                        OpValue::Library { reason, text } => WireValue::Library {
                            reason: (*reason).into(),
                            text: text.clone(),
                        },
                    },
                },
                Settlement::Rejected(cause) => WireSettlement::Rejected { cause: cause.into() },
            },
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Conversions: wire -> domain
// ---------------------------------------------------------------------------------------------

/// The runtime input for a kit line; `None` for `start` and `shutdown`, which are not inputs.
pub fn input_from_wire(message: KitMessage) -> Option<Input> {
    match message {
        KitMessage::Start { .. } | KitMessage::Reset {} | KitMessage::Shutdown {} => None,
        KitMessage::Operation { op, operation } => Some(Input::Operation {
            op: OpId(op),
            operation: operation.into(),
        }),
        KitMessage::Complete { effect, completion } => Some(Input::Complete {
            effect: EffectId(effect),
            completion: completion_from_wire(completion),
        }),
    }
}

fn completion_from_wire(completion: WireCompletion) -> Completion {
    let store = |outcome: WireStoreOutcome| match outcome {
        WireStoreOutcome::Ok => StoreOutcome::Ok,
        WireStoreOutcome::Failed { cause } => StoreOutcome::Failed(cause.into()),
    };
    match completion {
        WireCompletion::ModelChunk { text } => Completion::ModelChunk { text },
        WireCompletion::ModelFinal { message } => Completion::ModelFinal { message },
        WireCompletion::Tool { outcome } => Completion::Tool(match outcome {
            WireToolOutcome::Ok {
                content,
                details,
                is_error,
            } => ToolOutcome::Ok {
                content,
                details,
                is_error,
            },
            WireToolOutcome::Threw { message } => ToolOutcome::Threw { message },
            WireToolOutcome::Aborted => ToolOutcome::Aborted,
        }),
        WireCompletion::Hook { answer } => Completion::Hook(match answer {
            WireHookAnswer::Allow => HookOutcome::Allow,
            WireHookAnswer::Deny { reason } => HookOutcome::Deny { reason },
            WireHookAnswer::RewriteArguments { arguments } => HookOutcome::RewriteArguments { arguments },
            WireHookAnswer::Observe => HookOutcome::Observe,
            WireHookAnswer::RewriteResult { content, is_error } => HookOutcome::RewriteResult { content, is_error },
            WireHookAnswer::Threw { message } => HookOutcome::Threw { message },
        }),
        WireCompletion::Append { outcome } => Completion::Append(store(outcome)),
        WireCompletion::Write { outcome } => Completion::Write(store(outcome)),
        WireCompletion::Notify { outcome } => Completion::Notify(outcome),
    }
}

/// The domain effect of an adapter's `effect` line.
pub fn effect_from_wire(effect: WireEffect) -> Effect {
    match effect {
        WireEffect::ModelRequest { id, signal, request } => Effect::ModelRequest {
            effect: EffectId(id),
            signal: SignalId(signal),
            request: ModelRequest {
                system_prompt: request.system_prompt,
                messages: request.messages,
                tools: request.tools.into(),
            },
        },
        WireEffect::ToolCall { id, signal, call } => Effect::ToolCall {
            effect: EffectId(id),
            signal: SignalId(signal),
            call,
        },
        WireEffect::Hook {
            id,
            extension,
            phase,
            call,
            result,
        } => Effect::Hook {
            effect: EffectId(id),
            extension,
            phase: phase.into(),
            call,
            result,
        },
        WireEffect::Append { id, entry } => Effect::Append {
            effect: EffectId(id),
            entry,
        },
        WireEffect::Write { id, text } => Effect::Write {
            effect: EffectId(id),
            text,
        },
        WireEffect::Notify { id, observer, event } => Effect::Notify {
            effect: EffectId(id),
            observer,
            event,
        },
    }
}

/// The domain settlement of an adapter's `settled` line.
pub fn settlement_from_wire(settlement: WireSettlement) -> Settlement {
    match settlement {
        WireSettlement::Resolved { value } => Settlement::Resolved(match value {
            WireValue::Unit {} => OpValue::Unit,
            WireValue::Run {
                reason,
                steps,
                messages,
            } => OpValue::Run(RunResult {
                reason: reason.into(),
                steps,
                messages,
            }),
            WireValue::Library { reason, text } => OpValue::Library {
                reason: reason.into(),
                text,
            },
        }),
        WireSettlement::Rejected { cause } => Settlement::Rejected(cause.into()),
    }
}
