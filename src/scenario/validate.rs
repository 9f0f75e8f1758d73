//! The checks serde cannot express: limits, references between fields (a tool the model
//! calls, a rule the scenario names, an `after` condition that can hold), the session's keys.

use serde_json::Value;

use crate::limits;
use crate::model::OperationKind;

use super::locate::{parse_path, Segment};
use super::*;

pub(super) type Problem = (Vec<Segment>, String);

fn at(path: &str, message: impl Into<String>) -> Problem {
    (parse_path(path), message.into())
}

/// Semantic checks serde cannot express.
pub(super) fn validate_net(net: &NetPlan) -> Result<(), Problem> {
    if net.latency_min_ms == 0 {
        return Err(at(
            "net.latencyMinMs",
            "must be at least 1: at 0 ms an acknowledgement slips through a partition made in the same step",
        ));
    }
    if net.latency_max_ms < net.latency_min_ms {
        return Err(at("net.latencyMaxMs", "must not be below net.latencyMinMs"));
    }
    if net.store_timeout_ms == 0 || net.model_timeout_ms == 0 {
        let field = if net.store_timeout_ms == 0 {
            "net.storeTimeoutMs"
        } else {
            "net.modelTimeoutMs"
        };
        return Err(at(field, "must be at least 1"));
    }
    for (index, fault) in net.faults.iter().enumerate() {
        if fault.after.is_some() == fault.at_ms.is_some() {
            return Err(at(
                &format!("net.faults[{index}]"),
                "give exactly one of `after` (a trace condition) and `atMs` (simulated time)",
            ));
        }
    }
    Ok(())
}

fn over(path: &str, value: impl std::fmt::Display, limit: impl std::fmt::Display) -> Problem {
    at(
        path,
        format!("{value} is over the limit of {limit} (see the scenario format's limits)"),
    )
}

fn check_count(path: &str, count: usize, limit: usize) -> Result<(), Problem> {
    if count > limit {
        return Err(at(
            path,
            format!("{count} items, over the limit of {limit} (see the scenario format's limits)"),
        ));
    }
    Ok(())
}

fn check_number<T: PartialOrd + std::fmt::Display>(path: &str, value: T, limit: T) -> Result<(), Problem> {
    if value > limit {
        return Err(over(path, value, limit));
    }
    Ok(())
}

/// Every count, size and time within [`limits`].
pub(super) fn validate_limits(scenario: &Scenario) -> Result<(), Problem> {
    check_count("session", scenario.session.len(), limits::SESSION_ENTRIES_MAX)?;
    check_count("model", scenario.model.len(), limits::MODEL_STEPS_MAX)?;
    check_count("operations", scenario.operations.len(), limits::OPERATIONS_MAX)?;
    check_context_messages(scenario)?;
    if let Some(schedule) = &scenario.schedule {
        check_count("schedule", schedule.len(), limits::SCHEDULE_STEPS_MAX)?;
    }
    check_count("extensions", scenario.extensions.len(), limits::EXTENSIONS_MAX)?;
    check_count("observers", scenario.observers.len(), limits::EXTENSIONS_MAX)?;
    for (index, observer) in scenario.observers.iter().enumerate() {
        check_count(
            &format!("observers[{index}].answers"),
            observer.answers.len(),
            limits::OBSERVER_ANSWERS_MAX,
        )?;
        if observer.events.is_empty() {
            return Err(at(
                &format!("observers[{index}].events"),
                "an observer subscribes to at least one event (message_end, turn_end, agent_end)",
            ));
        }
        if scenario.observers[..index]
            .iter()
            .any(|other| other.name == observer.name)
        {
            return Err(at(
                &format!("observers[{index}].name"),
                format!("`{}` names two observers", observer.name),
            ));
        }
    }
    check_count("tools", scenario.tools.len(), limits::TOOLS_MAX)?;
    let config = &scenario.config;
    check_number("config.maxSteps", config.max_steps, limits::REQUESTS_PER_PROMPT_MAX)?;
    check_number("config.ids.start", config.ids.start, limits::IDS_START_MAX)?;
    check_number(
        "config.clock.startMs",
        config.clock.start_ms,
        limits::CLOCK_START_MS_MAX,
    )?;
    check_number("config.clock.stepMs", config.clock.step_ms, limits::CLOCK_STEP_MS_MAX)?;
    check_number("config.context.total", config.context.total, limits::CONTEXT_TOKENS_MAX)?;
    check_number(
        "config.context.reservedOutput",
        config.context.reserved_output,
        limits::CONTEXT_TOKENS_MAX,
    )?;
    check_number(
        "config.context.safetyMargin",
        config.context.safety_margin,
        limits::CONTEXT_TOKENS_MAX,
    )?;
    for (index, step) in scenario.model.iter().enumerate() {
        check_count(
            &format!("model[{index}].toolCalls"),
            step.tool_calls.len(),
            limits::TOOL_CALLS_PER_STEP_MAX,
        )?;
        if let Some(chunks) = step.chunks {
            check_number(&format!("model[{index}].chunks"), chunks, limits::CHUNKS_MAX)?;
        }
    }
    for (index, fault) in scenario.faults.appends.iter().enumerate() {
        check_number(&format!("faults.appends[{index}].at"), fault.at, limits::FAULT_AT_MAX)?;
    }
    for (index, fault) in scenario.faults.writes.iter().enumerate() {
        check_number(&format!("faults.writes[{index}].at"), fault.at, limits::FAULT_AT_MAX)?;
    }
    if let Some(net) = &scenario.net {
        check_number("net.latencyMinMs", net.latency_min_ms, limits::NET_LATENCY_MS_MAX)?;
        check_number("net.latencyMaxMs", net.latency_max_ms, limits::NET_LATENCY_MS_MAX)?;
        check_number("net.storeTimeoutMs", net.store_timeout_ms, limits::NET_TIME_MS_MAX)?;
        check_number("net.modelTimeoutMs", net.model_timeout_ms, limits::NET_TIME_MS_MAX)?;
        for (index, fault) in net.faults.iter().enumerate() {
            let path = |field: &str| format!("net.faults[{index}].{field}");
            if let Some(at_ms) = fault.at_ms {
                check_number(&path("atMs"), at_ms, limits::NET_TIME_MS_MAX)?;
            }
            check_number(&path("delayMs"), fault.delay_ms, limits::NET_TIME_MS_MAX)?;
            if let Some(for_ms) = fault.for_ms {
                check_number(&path("forMs"), for_ms, limits::NET_TIME_MS_MAX)?;
            }
        }
    }
    Ok(())
}

/// What the model requests could carry in all, within [`limits::CONTEXT_MESSAGES_MAX`] (its
/// documentation gives the bound); checked before anything runs, so a scenario too long for the
/// square of its length is refused rather than run out of memory.
fn check_context_messages(scenario: &Scenario) -> Result<(), Problem> {
    let model = scenario.model.len() as u64;
    let operations = scenario.operations.len() as u64;
    let tool_calls: u64 = scenario.model.iter().map(|step| step.tool_calls.len() as u64).sum();
    let requests = model + operations;
    let per_request = scenario.session.len() as u64 + model + 2 * operations + tool_calls + 1;
    let carried = requests.saturating_mul(per_request);
    if carried > limits::CONTEXT_MESSAGES_MAX {
        return Err(at(
            "operations",
            format!(
                "the model requests could carry {carried} messages in all, over the limit of {}: up to {requests} requests \
                 (model + operations), each carrying up to {per_request} messages (session + model + 2 x operations + \
                 tool calls + 1); each request carries the whole context, so the cost grows with the square of the \
                 scenario's length (see the scenario format's limits)",
                limits::CONTEXT_MESSAGES_MAX
            ),
        ));
    }
    Ok(())
}

/// Unknown keys in the initial session's entries. A metadata entry (`custom`, `label`, ...)
/// and a compaction keep every key they were read with, so Pi's future fields pass through
/// unchanged and are allowed. A message entry keeps only the fields the kit models: a key it
/// would drop on writing the entry back is refused, so that nothing in a scenario is lost
/// silently.
pub(super) fn validate_session_keys(text: &str) -> Result<(), Problem> {
    let Ok(Value::Object(document)) = serde_json::from_str::<Value>(text) else {
        return Ok(());
    };
    let Some(Value::Array(entries)) = document.get("session") else {
        return Ok(());
    };
    for (index, raw) in entries.iter().enumerate() {
        let Value::Object(object) = raw else {
            continue;
        };
        let Ok(entry) = SessionEntry::from_object(object.clone()) else {
            continue;
        };
        let written = Value::Object(entry.to_object());
        let mut path = vec![Segment::Key("session".into()), Segment::Index(index)];
        if let Some(key) = first_dropped_key(raw, &written, &mut path) {
            return Err((
                path,
                format!(
                    "unknown key `{key}` in a `{}` entry: the kit would drop it (only metadata entries and compactions keep unknown keys)",
                    entry.kind()
                ),
            ));
        }
    }
    Ok(())
}

/// The first key of `raw` that `written` lacks, at any depth; `path` is extended to it.
fn first_dropped_key(raw: &Value, written: &Value, path: &mut Vec<Segment>) -> Option<String> {
    match (raw, written) {
        (Value::Object(raw), Value::Object(written)) => {
            for (key, value) in raw {
                path.push(Segment::Key(key.clone()));
                let Some(kept) = written.get(key) else {
                    return Some(key.clone());
                };
                if let Some(found) = first_dropped_key(value, kept, path) {
                    return Some(found);
                }
                path.pop();
            }
            None
        }
        (Value::Array(raw), Value::Array(written)) => {
            for (index, (value, kept)) in raw.iter().zip(written).enumerate() {
                path.push(Segment::Index(index));
                if let Some(found) = first_dropped_key(value, kept, path) {
                    return Some(found);
                }
                path.pop();
            }
            None
        }
        _ => None,
    }
}

pub(super) fn validate(scenario: &Scenario, known_rules: &[&str]) -> Result<(), Problem> {
    if scenario.version != VERSION {
        return Err(at(
            "version",
            format!(
                "unsupported version {}; this kit reads version {VERSION}",
                scenario.version
            ),
        ));
    }
    if scenario.rules.is_empty() {
        return Err(at("rules", "name at least one rule ID this scenario exercises"));
    }
    for (index, rule) in scenario.rules.iter().enumerate() {
        if !known_rules.contains(&rule.as_str()) {
            return Err(at(
                &format!("rules[{index}]"),
                format!("unknown rule ID `{rule}` (see conformance.md)"),
            ));
        }
    }
    if let Some(net) = &scenario.net {
        validate_net(net)?;
    }
    let tool_names: Vec<&str> = scenario.tools.iter().map(|tool| tool.name.as_str()).collect();
    for (step_index, step) in scenario.model.iter().enumerate() {
        for (call_index, call) in step.tool_calls.iter().enumerate() {
            // A call to an unknown tool is a legitimate fault only when the scenario says so by
            // naming the rule for it.
            let exercises_unknown_tool = scenario.rules.iter().any(|rule| rule == UNKNOWN_TOOL_RULE);
            if !tool_names.contains(&call.name.as_str()) && !exercises_unknown_tool {
                return Err(at(
                    &format!("model[{step_index}].toolCalls[{call_index}].name"),
                    format!(
                        "the model calls tool `{}`, which no tool defines (name {UNKNOWN_TOOL_RULE} in `rules` to script an unknown-tool call)",
                        call.name
                    ),
                ));
            }
        }
        if step.chunks == Some(0) {
            return Err(at(&format!("model[{step_index}].chunks"), "chunks must be at least 1"));
        }
    }
    let operations = &scenario.operations;
    if operations.is_empty() {
        return Err(at("operations", "a scenario needs at least one operation"));
    }
    for (index, spec) in operations.iter().enumerate() {
        let needs_text = spec.op.takes_text();
        if needs_text && spec.text.is_none() {
            return Err(at(&format!("operations[{index}].text"), "this operation needs `text`"));
        }
        if !needs_text && spec.text.is_some() {
            return Err(at(
                &format!("operations[{index}].text"),
                "this operation takes no `text`",
            ));
        }
        if (spec.op == OperationKind::Mode) != spec.mode.is_some() {
            return Err(at(
                &format!("operations[{index}].mode"),
                "`mode` is required for a mode operation and allowed nowhere else",
            ));
        }
        if let Some(after) = spec.after {
            check_after(after, index, scenario)
                .map_err(|message| at(&format!("operations[{index}].after"), message))?;
        }
    }
    for (index, fault) in scenario.faults.appends.iter().enumerate() {
        if fault.at == 0 {
            return Err(at(&format!("faults.appends[{index}].at"), "appends are counted from 1"));
        }
        match (fault.fault, fault.until) {
            (AppendFaultKind::Late, None) => {
                return Err(at(
                    &format!("faults.appends[{index}].until"),
                    "a late append needs `until`",
                ));
            }
            (AppendFaultKind::Late, Some(after)) => check_after(after, operations.len(), scenario)
                .map_err(|message| at(&format!("faults.appends[{index}].until"), message))?,
            (_, Some(_)) => {
                return Err(at(
                    &format!("faults.appends[{index}].until"),
                    "`until` belongs to a late append",
                ));
            }
            (_, None) => {}
        }
    }
    if let Some(settlements) = &scenario.expect.settlements {
        if settlements.len() != operations.len() {
            return Err(at(
                "expect.settlements",
                format!("{} settlements for {} operations", settlements.len(), operations.len()),
            ));
        }
        for (index, settlement) in settlements.iter().enumerate() {
            let valid = settlement == "resolved"
                || settlement == "pending"
                || settlement
                    .strip_prefix("resolved:")
                    .is_some_and(|reason| !reason.is_empty())
                || settlement
                    .strip_prefix("rejected:")
                    .is_some_and(|code| !code.is_empty());
            if !valid {
                return Err(at(
                    &format!("expect.settlements[{index}]"),
                    format!("`{settlement}`: expected resolved, resolved:<reason>, rejected:<code> or pending"),
                ));
            }
        }
    }
    Ok(())
}

/// The rule a scenario names when its model deliberately calls a tool nobody defines.
pub const UNKNOWN_TOOL_RULE: &str = "WIRE-7";

/// Rejects `after` conditions that can never hold for the operation at `index`.
fn check_after(after: After, index: usize, scenario: &Scenario) -> Result<(), String> {
    // Counted in u64: the limits keep every product well inside it.
    let model_steps = scenario.model.len() as u64;
    let tool_calls: u64 = scenario.model.iter().map(|step| step.tool_calls.len() as u64).sum();
    let chunks: u64 = scenario
        .model
        .iter()
        .map(|step| u64::from(step.chunks.unwrap_or(1).saturating_sub(1)))
        .sum();
    let hooks = tool_calls * 2 * scenario.extensions.len() as u64;
    let mode_ops = scenario
        .operations
        .iter()
        .filter(|spec| spec.op == OperationKind::Mode)
        .count() as u64;
    let (count, limit, what) = match after {
        After::Settled(op) => {
            if op == 0 || op as usize > scenario.operations.len() {
                return Err(format!(
                    "operation {op} does not exist (operations are numbered from 1)"
                ));
            }
            if op as usize > index {
                return Err(format!(
                    "operation {} waits for operation {op} to settle, which is delivered only after it: this can never hold",
                    index + 1
                ));
            }
            return Ok(());
        }
        After::ModelRequests(count) => (count, model_steps, "model responses are scripted"),
        After::Chunks(count) => (count, chunks, "chunks are scripted"),
        After::ToolCalls(count) => (count, tool_calls, "tool calls are scripted"),
        After::Hooks(count) => (count, hooks, "hook calls are possible"),
        After::AppendsIssued(count) | After::AppendsAccepted(count) => {
            let prompts = scenario
                .operations
                .iter()
                .filter(|spec| spec.operation().is_prompt_like())
                .count() as u64;
            let messages = prompts + model_steps + tool_calls + scenario.operations.len() as u64;
            (count, messages, "messages can be appended")
        }
        After::Writes(count) => (count, mode_ops, "mode operations can write"),
    };
    if count == 0 {
        return Err("a count of 0 always holds; leave `after` out instead".into());
    }
    if u64::from(count) > limit {
        return Err(format!(
            "waits for {count}, but at most {limit} {what}: this can never hold"
        ));
    }
    Ok(())
}
