//! Checkers: one function per rule ID of conformance.md, over a run's trace and final store.

mod ids;

pub use ids::RULE_IDS;
