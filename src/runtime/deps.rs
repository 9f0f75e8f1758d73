//! `createId` and `now`, as rules the driver chooses: the runtime never invents an id or reads
//! a clock. Both are counters, so a run is a pure function of its inputs.

use serde::{Deserialize, Serialize};

/// Entry ids `prefix + n` for n = start, start+1, ... (`entry-1`, `entry-2`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdRule {
    pub prefix: String,
    pub start: u64,
}

impl Default for IdRule {
    fn default() -> IdRule {
        IdRule {
            prefix: "entry-".to_string(),
            start: 1,
        }
    }
}

impl IdRule {
    /// The n-th id this rule hands out (0-based).
    pub fn nth(&self, index: u64) -> String {
        format!("{}{}", self.prefix, self.start + index)
    }
}

/// Times `start_ms + k * step_ms` for the k-th reading (0-based), in ms since the epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClockRule {
    pub start_ms: u64,
    pub step_ms: u64,
}

impl Default for ClockRule {
    fn default() -> ClockRule {
        // 2026-01-01T00:00:00.000Z
        ClockRule {
            start_ms: 1_767_225_600_000,
            step_ms: 1_000,
        }
    }
}

/// The runtime's `createId` and `now`, with how often each was called.
#[derive(Debug, Clone)]
pub struct Deps {
    ids: IdRule,
    clock: ClockRule,
    ids_issued: u64,
    clock_reads: u64,
}

impl Deps {
    pub fn new(ids: IdRule, clock: ClockRule) -> Deps {
        Deps {
            ids,
            clock,
            ids_issued: 0,
            clock_reads: 0,
        }
    }

    pub fn create_id(&mut self) -> String {
        let id = self.ids.nth(self.ids_issued);
        self.ids_issued += 1;
        id
    }

    pub fn now(&mut self) -> u64 {
        let now = self.clock.start_ms + self.clock_reads * self.clock.step_ms;
        self.clock_reads += 1;
        now
    }

    pub fn ids_issued(&self) -> u64 {
        self.ids_issued
    }
}
