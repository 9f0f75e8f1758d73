//! The scenario of an import: the restored session, the operations, the scripted model and
//! tools, and the id and clock rules, from the chosen path of a session file.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::limits;
use crate::model::{parse_iso_timestamp, SessionEntry, ToolCall};
use crate::runtime::{Cause, ClockRule, IdRule};
use crate::scenario::{
    printable, After, AppendFault, AppendFaultKind, Config, Expectations, FaultPlan, ModelStep, OperationSpec,
    Scenario, ToolScript, ToolStep, VERSION,
};

use super::read::{chosen_path, FileEntry, SessionRead};
use super::{ImportError, ImportNote, Imported, Point};

/// The rules an imported scenario names: what it exercises is what is stored.
pub const IMPORTED_RULES: &[&str] = &["PERSIST-1", "PERSIST-2"];

/// Builds the scenario of `session` replayed from `point`; see the module docs of `import`.
pub fn build_scenario(file: &Path, session: &SessionRead, point: &Point) -> Result<Imported, ImportError> {
    let chosen = chosen_path(file, session, point.leaf.as_deref())?;
    let mut notes = chosen.notes;
    if let Some(line) = session.aelix_form_line {
        notes.push(ImportNote {
            line,
            field: "message".into(),
            message: "messages in aelix's own form (snake_case, times in seconds): read as pi-ai's, as the kit's aelix adapter reads them".into(),
        });
    }
    let path: Vec<&FileEntry> = chosen.indices.iter().map(|index| &session.entries[*index]).collect();
    let from = replay_start(file, &path, point.from.as_deref())?;
    let (before, replayed) = path.split_at(from);

    let mut restored = Vec::with_capacity(before.len());
    for entry in before {
        restored.push(restorable(file, entry, &mut notes)?);
    }
    let off_path = session.entries.len() - path.len();
    if off_path > 0 {
        notes.push(ImportNote {
            line: replayed[0].line,
            field: "-".into(),
            message: format!(
                "{off_path} entr{} of the file off the chosen path left out: the restored session is the path before this line",
                if off_path == 1 { "y" } else { "ies" }
            ),
        });
    }

    let mut script = Script::default();
    for (position, entry) in replayed.iter().enumerate() {
        let previous = position.checked_sub(1).map(|previous| replayed[previous]);
        script.add(file, entry, previous, &mut notes)?;
    }
    let tools = script.tools(session, &mut notes);
    let faults = ending_fault(replayed, &mut notes);
    let ids = id_rule(replayed, &restored, &mut notes);
    let clock = clock_rule(replayed, &mut notes);
    let leaf = replayed[0].parent_id().flatten().map(str::to_string);
    let scenario = Scenario {
        version: VERSION,
        description: format!(
            "Imported by agentsim import from {}: lines {} to {} replayed on the restored path before them.",
            printable(&file.display().to_string()),
            replayed[0].line,
            replayed[replayed.len() - 1].line
        ),
        rules: IMPORTED_RULES.iter().map(|rule| rule.to_string()).collect(),
        session: restored,
        config: Config {
            active_leaf_id: leaf,
            system_prompt: None,
            max_steps: script.requests_per_run_max.max(1),
            context: crate::model::ContextBudget {
                total: 100_000,
                reserved_output: 0,
                safety_margin: 0,
            },
            ids,
            clock,
        },
        resources: Default::default(),
        extensions: Vec::new(),
        observers: Vec::new(),
        tools,
        model: script.model,
        faults,
        operations: script.operations,
        expect: Expectations::default(),
        net: None,
        schedule: None,
    };
    let text = scenario_text(&scenario);
    // What is written is what runs: the text read back as any scenario file is.
    let label = Path::new("imported scenario");
    let scenario = crate::scenario::parse(label, &text, crate::check::RULE_IDS).map_err(|error| {
        ImportError::new(
            file,
            None,
            format!("scenario {}", error.field),
            "import.scenario",
            format!("the imported scenario is not one the kit can run: {}", error.message),
        )
    })?;
    notes.sort();
    Ok(Imported {
        file: file.to_path_buf(),
        scenario,
        text,
        damage: session.damage.clone(),
        notes,
        replayed: replayed.iter().map(|entry| (*entry).clone()).collect(),
        restored: before.len(),
    })
}

/// Where on the path the replay starts: `--from`, or the path's last user message.
fn replay_start(file: &Path, path: &[&FileEntry], from: Option<&str>) -> Result<usize, ImportError> {
    let leaf_line = path[path.len() - 1].line;
    let position = match from {
        Some(from) => path.iter().position(|entry| entry.id() == Some(from)).ok_or_else(|| {
            ImportError::new(
                file,
                None,
                "--from",
                "import.from_not_on_path",
                format!(
                    "no entry on the path to line {leaf_line} has id `{}` (the path runs from line {} to line {leaf_line})",
                    printable(from),
                    path[0].line
                ),
            )
        })?,
        None => path.iter().rposition(|entry| entry.role() == Some("user")).ok_or_else(|| {
            ImportError::new(
                file,
                Some(leaf_line),
                "-",
                "import.no_user_message",
                format!(
                    "no user message on the path from line {} to line {leaf_line}: nothing to replay (a replay starts at a user message)",
                    path[0].line
                ),
            )
        })?,
    };
    let start = path[position];
    if start.role() != Some("user") {
        return Err(ImportError::new(
            file,
            Some(start.line),
            if start.kind() == "message" {
                "message.role"
            } else {
                "type"
            },
            "import.from_not_user",
            match start.role() {
                Some(role) => format!(
                    "the replay starts at a user message (it becomes the first prompt); this entry's role is `{}`",
                    printable(role)
                ),
                None => format!(
                    "the replay starts at a user message (it becomes the first prompt); this entry's type is `{}`",
                    printable(start.kind())
                ),
            },
        ));
    }
    Ok(position)
}

/// An entry of the path before the replay, as the scenario's session holds it.
fn restorable(file: &Path, entry: &FileEntry, notes: &mut Vec<ImportNote>) -> Result<SessionEntry, ImportError> {
    if let Some(custom) = as_custom(entry) {
        notes.push(ImportNote {
            line: entry.line,
            field: "type".into(),
            message: format!(
                "a `{}` entry, a type the kit does not model (oh-my-pi and aelix add some): restored as a `custom` entry holding it, metadata the runtime leaves out of the context as it would an unknown type",
                printable(entry.kind())
            ),
        });
        return Ok(custom);
    }
    let restored = entry.entry.clone().map_err(|problem| {
        let field = problem
            .strip_prefix("field `")
            .and_then(|rest| rest.split('`').next())
            .unwrap_or("-")
            .to_string();
        ImportError::new(
            file,
            Some(entry.line),
            field,
            "import.unreadable_entry",
            format!("an entry on the restored path the kit cannot read: {problem}"),
        )
    })?;
    if let Some(key) = dropped_key(&entry.value, &Value::Object(restored.to_object())) {
        notes.push(ImportNote {
            line: entry.line,
            field: key,
            message: "a key the kit does not model in a message entry: the restored session leaves it out".into(),
        });
    }
    Ok(restored)
}

/// An entry of a type the kit does not model (Pi's later types, oh-my-pi's `session_init` or
/// `model_usage`, aelix's `leaf`) with Pi's identity fields, as a `custom` entry that keeps it
/// whole: `customType` its type, `data` the entry.
fn as_custom(entry: &FileEntry) -> Option<SessionEntry> {
    let unknown_type = entry
        .entry
        .as_ref()
        .err()
        .is_some_and(|problem| problem.starts_with("field `type`: unknown entry type"));
    if !unknown_type {
        return None;
    }
    let mut object = serde_json::Map::new();
    object.insert("type".into(), Value::String("custom".into()));
    object.insert("customType".into(), Value::String(entry.kind().to_string()));
    object.insert("data".into(), entry.value.clone());
    for key in ["id", "parentId", "timestamp"] {
        object.insert(key.into(), entry.value.get(key)?.clone());
    }
    SessionEntry::from_object(object).ok()
}

/// The path of the first key of `raw` that `written` lacks, at any depth.
fn dropped_key(raw: &Value, written: &Value) -> Option<String> {
    match (raw, written) {
        (Value::Object(raw), Value::Object(written)) => raw.iter().find_map(|(key, value)| match written.get(key) {
            None => Some(key.clone()),
            Some(kept) => dropped_key(value, kept).map(|inner| format!("{key}.{inner}")),
        }),
        (Value::Array(raw), Value::Array(written)) => raw
            .iter()
            .zip(written)
            .enumerate()
            .find_map(|(index, (value, kept))| dropped_key(value, kept).map(|inner| format!("[{index}].{inner}"))),
        _ => None,
    }
}

/// The operations, model answers and tool calls of the replayed part, entry by entry.
#[derive(Default)]
struct Script {
    operations: Vec<OperationSpec>,
    model: Vec<ModelStep>,
    /// Every tool call of the model's answers, in order.
    calls: Vec<ToolCall>,
    /// The 1-based number of the last `prompt` operation.
    last_prompt: u32,
    requests_in_run: u32,
    requests_per_run_max: u32,
}

impl Script {
    fn add(
        &mut self,
        file: &Path,
        entry: &FileEntry,
        previous: Option<&FileEntry>,
        notes: &mut Vec<ImportNote>,
    ) -> Result<(), ImportError> {
        let note = |notes: &mut Vec<ImportNote>, field: &str, message: String| {
            notes.push(ImportNote {
                line: entry.line,
                field: field.into(),
                message,
            })
        };
        let unreadable = |problem: &str| {
            ImportError::new(
                file,
                Some(entry.line),
                "message",
                "import.unreadable_entry",
                format!("a message on the replayed path the kit cannot read: {problem}"),
            )
        };
        match (entry.kind(), entry.role()) {
            ("message", Some("user")) => {
                let message = entry.value.get("message").ok_or_else(|| unreadable("no message"))?;
                let (text, images) = user_text(message).ok_or_else(|| unreadable("field `content`: neither a string nor blocks"))?;
                if images > 0 {
                    note(notes, "message.content", format!("{images} image block(s): an operation carries text only; left out"));
                }
                let after_tool_round = previous.is_some_and(|previous| previous.role() == Some("toolResult"));
                let (op, after) = if previous.is_none() {
                    (crate::model::OperationKind::Prompt, None)
                } else if after_tool_round && !self.calls.is_empty() {
                    // A user message right after a tool result joined a running run: a steer,
                    // delivered while that round's last tool runs.
                    (crate::model::OperationKind::Steer, Some(After::ToolCalls(self.calls.len() as u32)))
                } else {
                    (crate::model::OperationKind::Prompt, Some(After::Settled(self.last_prompt)))
                };
                if op == crate::model::OperationKind::Prompt {
                    self.requests_in_run = 0;
                }
                self.operations.push(OperationSpec {
                    op,
                    text: Some(text),
                    mode: None,
                    after,
                });
                if op == crate::model::OperationKind::Prompt {
                    self.last_prompt = self.operations.len() as u32;
                }
            }
            ("message", Some("assistant")) => {
                let message = entry.value.get("message").ok_or_else(|| unreadable("no message"))?;
                let step = model_step(message).map_err(|problem| unreadable(&problem))?;
                if !in_scriptable_order(message) {
                    note(
                        notes,
                        "message.content",
                        "blocks the scripted model gives as thinking, text, tool calls (each kind's texts joined): compared in that form".into(),
                    );
                }
                self.calls.extend(step.tool_calls.iter().cloned());
                self.model.push(step);
                self.requests_in_run += 1;
                self.requests_per_run_max = self.requests_per_run_max.max(self.requests_in_run);
            }
            ("message", Some("toolResult")) => {}
            ("message", role) => {
                return Err(unreadable(&format!(
                    "field `role`: {}, expected user, assistant or toolResult",
                    role.map_or("missing".to_string(), |role| format!("`{}`", printable(role)))
                )))
            }
            (kind, _) => note(
                notes,
                "type",
                format!(
                    "a `{}` entry on the replayed path: the reference appends messages only, so the check reports it where it stands",
                    printable(kind)
                ),
            ),
        }
        Ok(())
    }

    /// One tool per name called, in first-call order, answering each call with the result the
    /// file records for its id (on the path first, else anywhere in the file).
    fn tools(&self, session: &SessionRead, notes: &mut Vec<ImportNote>) -> Vec<ToolScript> {
        let mut results: BTreeMap<&str, &FileEntry> = BTreeMap::new();
        for entry in session.entries.iter().rev() {
            if entry.role() == Some("toolResult") {
                if let Some(call_id) = entry.value["message"].get("toolCallId").and_then(Value::as_str) {
                    results.insert(call_id, entry);
                }
            }
        }
        let mut tools: Vec<ToolScript> = Vec::new();
        for call in &self.calls {
            let step = match results.get(call.id.as_str()) {
                Some(entry) => {
                    let message = &entry.value["message"];
                    let (text, others) = result_text(message);
                    if others > 0 {
                        notes.push(ImportNote {
                            line: entry.line,
                            field: "message.content".into(),
                            message: format!(
                                "{others} block(s) other than text: a scripted tool answers text only; left out"
                            ),
                        });
                    }
                    if message.get("isError").and_then(Value::as_bool).unwrap_or(false) {
                        ToolStep::Error(text)
                    } else {
                        ToolStep::Result(text)
                    }
                }
                None => ToolStep::Error(format!(
                    "agentsim import: the session file records no result for tool call `{}`",
                    call.id
                )),
            };
            match tools.iter_mut().find(|tool| tool.name == call.name) {
                Some(tool) => tool.results.push(step),
                None => tools.push(ToolScript {
                    name: call.name.clone(),
                    description: String::new(),
                    parameters: serde_json::json!({"type": "object"}),
                    results: vec![step],
                }),
            }
        }
        tools
    }
}

/// A user message's text (its text blocks joined) and how many image blocks it has.
fn user_text(message: &Value) -> Option<(String, usize)> {
    match message.get("content")? {
        Value::String(text) => Some((text.clone(), 0)),
        Value::Array(blocks) => {
            let mut text = String::new();
            let mut others = 0;
            for block in blocks {
                match block.get("text").and_then(Value::as_str) {
                    Some(part) if block.get("type").and_then(Value::as_str) == Some("text") => text.push_str(part),
                    _ => others += 1,
                }
            }
            Some((text, others))
        }
        _ => None,
    }
}

/// A tool result's text (its text blocks joined) and how many other blocks it has.
fn result_text(message: &Value) -> (String, usize) {
    match message.get("content") {
        Some(Value::String(text)) => (text.clone(), 0),
        Some(Value::Array(blocks)) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect();
            (texts.concat(), blocks.len() - texts.len())
        }
        _ => (String::new(), 0),
    }
}

/// The scripted answer that gives this assistant message: its thinking, text and tool calls,
/// its stop reason and error as recorded.
fn model_step(message: &Value) -> Result<ModelStep, String> {
    let blocks = message
        .get("content")
        .and_then(Value::as_array)
        .ok_or("field `content`: must be a list of blocks")?;
    let (mut thinking, mut text, mut tool_calls) = (None::<String>, None::<String>, Vec::new());
    for (index, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("thinking") => {
                let part = block.get("thinking").and_then(Value::as_str).unwrap_or_default();
                thinking.get_or_insert_with(String::new).push_str(part);
            }
            Some("text") => {
                let part = block.get("text").and_then(Value::as_str).unwrap_or_default();
                text.get_or_insert_with(String::new).push_str(part);
            }
            Some("toolCall") => {
                let call: ToolCall = serde_json::from_value(block.clone())
                    .map_err(|error| format!("field `content[{index}]`: a tool call: {error}"))?;
                tool_calls.push(ToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                });
            }
            _ => {
                return Err(format!(
                    "field `content[{index}].type`: expected thinking, text or toolCall"
                ))
            }
        }
    }
    let stop_reason = message
        .get("stopReason")
        .map(|reason| serde_json::from_value(reason.clone()))
        .transpose()
        .map_err(|error| format!("field `stopReason`: {error}"))?;
    let error = message.get("errorMessage").and_then(Value::as_str).map(str::to_string);
    Ok(ModelStep {
        thinking,
        text,
        tool_calls,
        stop_reason,
        error,
        ..ModelStep::default()
    })
}

/// Whether the content is at most one thinking block, then at most one text block, then tool
/// calls: what a scripted answer gives as it is.
fn in_scriptable_order(message: &Value) -> bool {
    let rank = |block: &Value| match block.get("type").and_then(Value::as_str) {
        Some("thinking") => 0,
        Some("text") => 1,
        _ => 2,
    };
    let ranks: Vec<u8> = message
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(rank).collect())
        .unwrap_or_default();
    ranks
        .windows(2)
        .all(|pair| pair[0] < pair[1] || (pair[0] == 2 && pair[1] == 2))
}

/// The id rule the replayed ids follow, when they do: one prefix and increasing numbers;
/// otherwise `entry-N` past every such id of the restored session.
fn id_rule(replayed: &[&FileEntry], restored: &[SessionEntry], notes: &mut Vec<ImportNote>) -> IdRule {
    let split = |id: &str| -> Option<(String, u64)> {
        let digits = id.len() - id.bytes().rev().take_while(u8::is_ascii_digit).count();
        let (prefix, number) = id.split_at(digits);
        let canonical = !number.is_empty() && (number == "0" || !number.starts_with('0'));
        canonical
            .then(|| number.parse().ok().map(|number| (prefix.to_string(), number)))
            .flatten()
    };
    let numbered: Vec<Option<(String, u64)>> = replayed.iter().map(|entry| entry.id().and_then(split)).collect();
    let fits = numbered.iter().all(Option::is_some)
        && numbered.windows(2).all(|pair| match (&pair[0], &pair[1]) {
            (Some((prefix, number)), Some((next_prefix, next))) => prefix == next_prefix && next > number,
            _ => false,
        });
    if let (true, Some(Some((prefix, start)))) = (fits, numbered.first()) {
        if *start <= limits::IDS_START_MAX {
            return IdRule {
                prefix: prefix.clone(),
                start: *start,
            };
        }
    }
    let default = IdRule::default();
    let past = restored
        .iter()
        .filter_map(|entry| default.index_of(&entry.id))
        .max()
        .map_or(0, |index| index + 1);
    notes.push(ImportNote {
        line: replayed[0].line,
        field: "id".into(),
        message: format!(
            "the replayed ids follow no id rule (one prefix, increasing numbers): the scenario's rule hands out {}, ... and the check compares ids by order",
            default.nth(past)
        ),
    });
    IdRule {
        prefix: default.prefix,
        start: default.start + past,
    }
}

/// The clock rule the replayed times lie on: from the earliest, by the largest step every time
/// is a multiple of; the default rule when they give none (one time, or over the limits).
fn clock_rule(replayed: &[&FileEntry], notes: &mut Vec<ImportNote>) -> ClockRule {
    let times: Vec<u64> = replayed
        .iter()
        .flat_map(|entry| {
            let at = entry
                .value
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(parse_iso_timestamp);
            let message = entry.value.get("message").and_then(|message| message.get("timestamp"));
            [at, message.and_then(Value::as_u64)]
        })
        .flatten()
        .collect();
    let start = times.iter().copied().min();
    let step = start.map(|start| times.iter().fold(0, |step, time| gcd(step, time - start)));
    match (start, step) {
        (Some(start), Some(step))
            if start <= limits::CLOCK_START_MS_MAX && (1..=limits::CLOCK_STEP_MS_MAX).contains(&step) =>
        {
            ClockRule {
                start_ms: start,
                step_ms: step,
            }
        }
        _ => {
            notes.push(ImportNote {
                line: replayed[0].line,
                field: "timestamp".into(),
                message: "the replayed times give no clock rule (fewer than two times, or over the limits): the default rule; the check compares times by order".into(),
            });
            ClockRule::default()
        }
    }
}

fn gcd(left: u64, right: u64) -> u64 {
    if right == 0 {
        left
    } else {
        gcd(right, left % right)
    }
}

/// A file whose path ends in the middle of a run (at a user message, a tool result, or an
/// assistant message that called tools) stopped being written there: a crash, or a store that
/// failed. The scenario plans the store's failure at the next append (`reject`), so that the
/// reference stores no more than the file either; a path that ends with a run's last answer
/// plans nothing, and an entry the reference stores beyond it is a difference.
fn ending_fault(replayed: &[&FileEntry], notes: &mut Vec<ImportNote>) -> FaultPlan {
    let last = replayed[replayed.len() - 1];
    let stop_reason = last.value["message"].get("stopReason").and_then(Value::as_str);
    let mid_run = match last.role() {
        Some("user") | Some("toolResult") => true,
        Some("assistant") => stop_reason == Some("toolUse"),
        _ => false,
    };
    if !mid_run {
        return FaultPlan::default();
    }
    let at = replayed.len() as u32 + 1;
    notes.push(ImportNote {
        line: last.line,
        field: "-".into(),
        message: format!(
            "the path ends here, in the middle of a run: the scenario's store rejects append {at}, the first beyond the file"
        ),
    });
    FaultPlan {
        appends: vec![AppendFault {
            at,
            fault: AppendFaultKind::Reject,
            error: Some(Cause::new(
                "import.file_ends",
                "the session file ends here, in the middle of a run",
            )),
            until: None,
        }],
        writes: Vec::new(),
    }
}

/// The scenario as a file: pretty JSON without the sections an import leaves empty.
fn scenario_text(scenario: &Scenario) -> String {
    let mut value = serde_json::to_value(scenario).expect("a scenario serializes");
    if let Value::Object(object) = &mut value {
        // An import never fills these; `faults` only for a file that ends mid-run.
        for key in ["resources", "extensions", "expect", "net"] {
            object.shift_remove(key);
        }
        if scenario.faults == FaultPlan::default() {
            object.shift_remove("faults");
        }
        // A scripted answer's unset fields, as a hand-written scenario leaves them out.
        if let Some(Value::Array(steps)) = object.get_mut("model") {
            for step in steps.iter_mut().filter_map(Value::as_object_mut) {
                step.retain(|key, value| !(value.is_null() || (key == "ignoresAbort" && value == &Value::Bool(false))));
            }
        }
        if let Some(Value::Array(operations)) = object.get_mut("operations") {
            for operation in operations.iter_mut().filter_map(Value::as_object_mut) {
                operation.retain(|_, value| !value.is_null());
            }
        }
        if let Some(Value::Object(config)) = object.get_mut("config") {
            config.retain(|key, value| !(key == "systemPrompt" && value.is_null()));
        }
    }
    let mut text = serde_json::to_string_pretty(&value).expect("a value serializes");
    text.push('\n');
    text
}
