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

    /// Which id of the rule `id` is (0-based), or `None` when the rule never hands it out.
    pub fn index_of(&self, id: &str) -> Option<u64> {
        let digits = id.strip_prefix(self.prefix.as_str())?;
        if digits.is_empty()
            || !digits.bytes().all(|byte| byte.is_ascii_digit())
            || (digits.len() > 1 && digits.starts_with('0'))
        {
            return None;
        }
        digits.parse::<u64>().ok()?.checked_sub(self.start)
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

/// Other readers of the clock and the id generator the runtime was given.
///
/// The chapter hands the runtime `now` and `createId` as functions; nothing says the runtime is
/// their only caller, or that it calls them at the reference's points and no others. A runtime
/// that also stamps a log line or draws a request id sees the same rules with gaps: the values
/// it gets are still readings of the clock rule (later ones) and ids of the id rule (skipping
/// some). With `clock_every: n`, another reader takes one reading before every n-th reading of
/// the runtime's; `ids_every` likewise for ids. The reference runs with none (`0`); the kit's
/// fairness test runs it with both, and every rule must judge it the same.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OtherReaders {
    pub clock_every: u64,
    pub ids_every: u64,
}

/// The runtime's `createId` and `now`, with how often each was called.
#[derive(Debug, Clone)]
pub struct IdsAndClock {
    ids: IdRule,
    clock: ClockRule,
    others: OtherReaders,
    ids_issued: u64,
    ids_drawn: u64,
    clock_calls: u64,
    clock_reads: u64,
}

impl IdsAndClock {
    pub fn new(ids: IdRule, clock: ClockRule) -> IdsAndClock {
        IdsAndClock::shared(ids, clock, OtherReaders::default())
    }

    /// Rules that other readers draw from too (see [`OtherReaders`]).
    pub fn shared(ids: IdRule, clock: ClockRule, others: OtherReaders) -> IdsAndClock {
        IdsAndClock {
            ids,
            clock,
            others,
            ids_issued: 0,
            ids_drawn: 0,
            clock_calls: 0,
            clock_reads: 0,
        }
    }

    pub fn create_id(&mut self) -> String {
        if self.others.ids_every > 0 && self.ids_issued.is_multiple_of(self.others.ids_every) {
            self.ids_drawn += 1;
        }
        let id = self.ids.nth(self.ids_drawn);
        self.ids_drawn += 1;
        self.ids_issued += 1;
        id
    }

    pub fn now(&mut self) -> u64 {
        if self.others.clock_every > 0 && self.clock_calls.is_multiple_of(self.others.clock_every) {
            self.clock_reads += 1;
        }
        let now = self.clock.start_ms + self.clock_reads * self.clock.step_ms;
        self.clock_reads += 1;
        self.clock_calls += 1;
        now
    }

    /// How many ids the runtime itself drew (other readers' draws not counted).
    pub fn ids_issued(&self) -> u64 {
        self.ids_issued
    }
}
