//! What is under test, chosen once by the caller: the in-process reference, the fairness test's
//! different-but-correct variant, or an implementation behind the adapter protocol, each with
//! or without a mutant of the zoo wrapped around it.
//!
//! Every world builds its subject from an [`Implementation`] (the scheduler, the networked
//! world, the crash test), and every report and replay command describes the run by it; no
//! runner asks a built subject who it is.

use std::time::Duration;

use crate::protocol::pool::PooledAdapter;
use crate::sim::reference::ReferenceSubject;
use crate::sim::variant::ConformingVariant;
use crate::sim::BoxedSubject;
use crate::zoo::Mutant;

/// The runtime a subject drives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    /// The reference Runtime, in process.
    Reference,
    /// The reference as another conforming runtime shows itself (`sim::variant`); with
    /// `serial_observers`, its event bus hands each observer one event at a time.
    ConformingVariant { serial_observers: bool },
    /// An implementation behind the adapter protocol: `sh -c command`, every wait bounded by
    /// the step timeout. A worker thread keeps its adapter process between runs.
    Adapter { command: String, step_timeout: Duration },
}

/// What is under test. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Implementation {
    pub base: Base,
    pub mutant: Option<Mutant>,
}

impl Implementation {
    pub fn reference() -> Implementation {
        Implementation {
            base: Base::Reference,
            mutant: None,
        }
    }

    pub fn conforming_variant() -> Implementation {
        Implementation {
            base: Base::ConformingVariant {
                serial_observers: false,
            },
            mutant: None,
        }
    }

    /// The variant whose event bus is serial per observer (`sim::variant`): its notifications
    /// are ordered differently from the reference's, so it is judged by the rules only.
    pub fn conforming_variant_with_serial_observers() -> Implementation {
        Implementation {
            base: Base::ConformingVariant { serial_observers: true },
            mutant: None,
        }
    }

    pub fn adapter(command: impl Into<String>, step_timeout: Duration) -> Implementation {
        Implementation {
            base: Base::Adapter {
                command: command.into(),
                step_timeout,
            },
            mutant: None,
        }
    }

    /// The reference with one mutant of the zoo.
    pub fn mutant(mutant: Mutant) -> Implementation {
        Implementation::reference().with_mutant(Some(mutant))
    }

    pub fn with_mutant(mut self, mutant: Option<Mutant>) -> Implementation {
        self.mutant = mutant;
        self
    }

    /// A fresh subject for one run.
    pub fn subject(&self) -> BoxedSubject {
        let base: BoxedSubject = match &self.base {
            Base::Reference => Box::new(ReferenceSubject::new()),
            Base::ConformingVariant { serial_observers } => {
                Box::new(ConformingVariant::new().with_serial_observers(*serial_observers))
            }
            Base::Adapter { command, step_timeout } => Box::new(PooledAdapter::take(command, *step_timeout)),
        };
        self.wrap(base)
    }

    /// `base` (a subject of this implementation's base, which the caller keeps a handle to)
    /// with the mutant around it, if any.
    pub fn wrap(&self, base: BoxedSubject) -> BoxedSubject {
        match self.mutant {
            Some(mutant) => mutant.wrap(base),
            None => base,
        }
    }

    /// The mutant's name, for replay commands.
    pub fn mutant_name(&self) -> Option<&'static str> {
        self.mutant.map(Mutant::name)
    }

    /// The adapter command and its step timeout in milliseconds, for replay commands.
    pub fn adapter_command(&self) -> Option<(String, u64)> {
        match &self.base {
            Base::Adapter { command, step_timeout } => Some((command.clone(), step_timeout.as_millis() as u64)),
            Base::Reference | Base::ConformingVariant { .. } => None,
        }
    }

    /// For an adapter: the process this thread's next run goes to, when one runs.
    pub fn pooled_pid(&self) -> Option<u32> {
        match &self.base {
            Base::Adapter { command, step_timeout } => crate::protocol::pool::pooled_pid(command, *step_timeout),
            Base::Reference | Base::ConformingVariant { .. } => None,
        }
    }

    /// For an adapter: shuts down this thread's pooled process, so that the next run starts a
    /// new one.
    pub fn retire_pooled(&self) {
        if let Base::Adapter { command, step_timeout } = &self.base {
            crate::protocol::pool::retire(command, *step_timeout);
        }
    }

    /// Whether a scenario's own checks (its `expect` block and the scripted model's request
    /// checks) judge this implementation. They pin the reference's own choices on the canonical
    /// schedule (its exact texts, its counts), which no rule states: they describe the in-process
    /// reference (and the fairness test's variant, which must meet them too), never a mutant or
    /// another implementation, which the rules alone judge.
    pub fn judged_by_scenario_checks(&self) -> bool {
        self.mutant.is_none() && matches!(self.base, Base::Reference | Base::ConformingVariant { .. })
    }

    /// Whether this is an implementation behind the adapter protocol.
    pub fn is_adapter(&self) -> bool {
        matches!(self.base, Base::Adapter { .. })
    }
}
