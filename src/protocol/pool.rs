//! Adapter processes kept between runs: each worker thread keeps the [`ExternalSubject`]s it
//! used, so that a protocol-2 adapter serves run after run instead of being started per run.

use std::time::Duration;

use crate::runtime::{Cause, Effect, Input};
use crate::scenario::Scenario;
use crate::sim::{Restored, Subject, SubjectFailure};

use super::ExternalSubject;

thread_local! {
    /// The adapter subjects of this worker thread, between runs. Dropped (their processes shut
    /// down) with the thread.
    static ADAPTERS: std::cell::RefCell<Vec<ExternalSubject>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An [`ExternalSubject`] borrowed from the thread's pool for one run and put back when
/// dropped.
pub struct PooledAdapter(Option<ExternalSubject>);

impl PooledAdapter {
    /// The thread's subject for `command`, or a new one.
    pub fn take(command: &str, step_timeout: Duration) -> PooledAdapter {
        PooledAdapter(Some(
            taken(command, step_timeout).unwrap_or_else(|| ExternalSubject::new(command.to_string(), step_timeout)),
        ))
    }

    fn subject(&mut self) -> &mut ExternalSubject {
        self.0.as_mut().expect("present until dropped")
    }
}

/// The process id of this thread's pooled adapter for `command`, when it runs one: which
/// process the next run of the command on this thread goes to.
pub fn pooled_pid(command: &str, step_timeout: Duration) -> Option<u32> {
    ADAPTERS.with(|pool| {
        pool.borrow()
            .iter()
            .find(|subject| subject.command() == command && subject.step_timeout() == step_timeout)
            .and_then(ExternalSubject::pid)
    })
}

/// Shuts down this thread's pooled adapter for `command`, if it keeps one.
pub fn retire(command: &str, step_timeout: Duration) {
    drop(taken(command, step_timeout));
}

/// This thread's pooled adapter for `command`, taken out of the pool.
fn taken(command: &str, step_timeout: Duration) -> Option<ExternalSubject> {
    ADAPTERS.with(|pool| {
        let mut pool = pool.borrow_mut();
        let index = pool
            .iter()
            .position(|subject| subject.command() == command && subject.step_timeout() == step_timeout);
        index.map(|index| pool.swap_remove(index))
    })
}

impl Drop for PooledAdapter {
    fn drop(&mut self) {
        if let Some(subject) = self.0.take() {
            // During thread teardown the pool may be gone: then the subject just shuts down.
            let _ = ADAPTERS.try_with(|pool| pool.borrow_mut().push(subject));
        }
    }
}

impl Subject for PooledAdapter {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        self.subject().start(scenario)
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        self.subject().deliver(input, effects)
    }

    fn finish(&mut self) -> Result<(), SubjectFailure> {
        self.subject().finish()
    }

    fn blocking(&self) -> crate::sim::Blocking {
        self.0.as_ref().map(|subject| subject.blocking()).unwrap_or_default()
    }

    fn state(&self) -> Option<crate::trace::StateProbe> {
        self.0.as_ref().and_then(|subject| subject.state())
    }
}
