//! Persistence bugs: what the runtime writes into the entries it stores.

use crate::runtime::Effect;

use super::seam::{Bug, Seam};

// ----- timestamps -----

/// Entries are written with timestamp 0 (the epoch) instead of the clock's time.
#[derive(Default)]
pub(crate) struct TimestampsNotFromClock;

impl Bug for TimestampsNotFromClock {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Append { effect, mut entry } => {
                entry.timestamp = "1970-01-01T00:00:00.000Z".to_string();
                seam.emit(Effect::Append { effect, entry });
            }
            effect => seam.emit(effect),
        }
    }
}
