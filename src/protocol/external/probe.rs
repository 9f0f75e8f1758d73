//! The state probe (`hello.probes`: `state`): what an `idle` says of the runtime's leaf and
//! persisted count, taken only where the protocol says the runtime is quiescent.

use super::ExternalSubject;
use crate::protocol::wire::Hello;
use crate::runtime::Effect;
use crate::sim::{Subject, SubjectFailure};

impl ExternalSubject {
    /// Whether the adapter declared the state probe (`hello.probes`).
    pub(super) fn probes_state(&self) -> bool {
        self.hello.as_ref().is_some_and(Hello::probes_state)
    }

    /// Whether an answer leaves the runtime blocked in a synchronous append (`sync-store`): its
    /// last effect is an append, which nothing can follow until the kit answers it.
    pub(super) fn blocked_in(&self, effects: &[Effect]) -> bool {
        self.blocking().appends && matches!(effects.last(), Some(Effect::Append { .. }))
    }

    /// Reads an `idle`'s `state`: required on every `idle` of a live run (`live`: the answer to
    /// a `start` that restored, an operation or a completion) when the adapter declared the
    /// probe, ignored on one with no runtime behind it (after `restore_failed` or `reset`), and
    /// refused from an adapter that did not declare it. `after` says what the `idle` answered.
    pub(super) fn take_state(
        &mut self,
        state: Option<crate::protocol::wire::WireState>,
        live: bool,
        after: &str,
    ) -> Result<(), SubjectFailure> {
        match (self.probes_state(), state) {
            (true, Some(state)) => {
                if live {
                    self.state = Some(state.into());
                }
                Ok(())
            }
            (true, None) if live => Err(self.malformed(format!(
                "`idle` without `state` (after {after}), but `hello.probes` declares `state`: every `idle` of a run carries it"
            ))),
            (true, None) => Ok(()),
            (false, Some(_)) => Err(self.malformed(format!(
                "`idle` carries `state` (after {after}), but `hello.probes` does not declare `state`"
            ))),
            (false, None) => Ok(()),
        }
    }
}
