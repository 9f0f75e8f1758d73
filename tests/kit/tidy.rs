//! Tidy: conformance.md, the checker catalogue and the scenarios name the same rules.
//!
//! Every rule heading in conformance.md has a checker (and the `Checker:` line names it), every
//! rule is named by at least one scenario, every rule a scenario names exists (the loader
//! rejects unknown IDs), and each `Scenarios:` line lists exactly the scenarios that name the
//! rule. `UPDATE_CONFORMANCE=1 cargo test --test kit tidy` rewrites the `Scenarios:` lines.
//!
//! Clauses (issue 21): each rule's statement is split into clauses `AREA-N.a`, `.b`, ... (its
//! `Clause:` line or `Clauses:` list), and each clause has a branch in its rule's checker that
//! names it (and no branch there names the bare rule), a bite that breaks it alone
//! (`tests/kit/bite.rs`) on a scenario that names its rule; every clause id the checkers or the
//! bites use is one of conformance.md. `Violation::new` refuses, in debug builds, a violation of
//! a catalogue rule that names no clause.

use std::collections::BTreeMap;
use std::path::Path;

use agentsim::check::{catalogue, RULE_IDS};
use agentsim::suite::load_corpus;

fn conformance_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance.md")
}

/// Rule ID -> the scenarios naming it, sorted.
fn scenarios_by_rule() -> BTreeMap<String, Vec<String>> {
    let corpus = load_corpus(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")]).expect("the corpus loads");
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for loaded in corpus {
        for rule in &loaded.scenario.rules {
            map.entry(rule.clone()).or_default().push(loaded.name.clone());
        }
    }
    for names in map.values_mut() {
        names.sort();
        names.dedup();
    }
    map
}

/// The `### ID` headings, in order.
fn headings(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("### "))
        .map(|id| id.trim().to_string())
        .collect()
}

/// The lines of the section of one rule (up to the next heading).
fn section<'t>(text: &'t str, id: &str) -> Vec<&'t str> {
    let heading = format!("### {id}");
    text.lines()
        .skip_while(|line| line.trim() != heading)
        .skip(1)
        .take_while(|line| !line.starts_with("## ") && !line.starts_with("### "))
        .collect()
}

fn scenarios_line(names: &[String]) -> String {
    let listed: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
    format!("- Scenarios: {}", listed.join(", "))
}

#[test]
fn tidy_conformance_headings_are_the_catalogue() {
    let text = std::fs::read_to_string(conformance_path()).expect("conformance.md");
    assert_eq!(
        headings(&text),
        RULE_IDS,
        "conformance.md rule headings differ from the catalogue"
    );
    for rule in catalogue() {
        let lines = section(&text, rule.id);
        let checker = format!("- Checker: `{}`", rule.checker_name);
        assert!(
            lines.contains(&checker.as_str()),
            "{}: conformance.md must say `{checker}`",
            rule.id
        );
        assert!(
            lines.iter().any(|line| line.starts_with("- Seed: ")),
            "{}: no `Seed:` line",
            rule.id
        );
        let level = format!("- Level: {} (", rule.level.word());
        assert!(
            lines.iter().any(|line| line.starts_with(&level) && line.ends_with(')')),
            "{}: conformance.md must give its level as `{level}reason)`, as check::catalogue() does",
            rule.id
        );
    }
}

#[test]
fn tidy_every_rule_has_a_scenario_and_the_list_is_current() {
    let path = conformance_path();
    let text = std::fs::read_to_string(&path).expect("conformance.md");
    let by_rule = scenarios_by_rule();
    let mut updated = String::new();
    let mut current: Option<String> = None;
    let mut stale = Vec::new();
    for line in text.lines() {
        if let Some(id) = line.strip_prefix("### ") {
            current = Some(id.trim().to_string());
        } else if line.starts_with("## ") {
            current = None;
        }
        if let (Some(id), true) = (&current, line.starts_with("- Scenarios:")) {
            let expected = scenarios_line(by_rule.get(id).map(Vec::as_slice).unwrap_or_default());
            if line.trim_end() != expected {
                stale.push(id.clone());
            }
            updated.push_str(&expected);
        } else {
            updated.push_str(line);
        }
        updated.push('\n');
    }
    if std::env::var_os("UPDATE_CONFORMANCE").is_some() {
        std::fs::write(&path, &updated).expect("conformance.md is writable");
        stale.clear();
    }
    let uncovered: Vec<&str> = RULE_IDS
        .iter()
        .copied()
        .filter(|id| !by_rule.contains_key(*id))
        .collect();
    assert!(uncovered.is_empty(), "rules without a scenario: {uncovered:?}");
    assert!(
        stale.is_empty(),
        "conformance.md `Scenarios:` lines are stale for {stale:?}; run UPDATE_CONFORMANCE=1 cargo test --test kit tidy"
    );
}

/// ARCHITECTURE.md's codemap names every module of `src/`, and every `src/...` path it names
/// exists.
#[test]
fn tidy_architecture_codemap_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let named: std::collections::BTreeSet<String> = text
        .split('`')
        .filter(|part| part.starts_with("src/"))
        .map(str::to_string)
        .collect();
    for path in &named {
        assert!(
            root.join(path).exists(),
            "ARCHITECTURE.md names `{path}`, which does not exist"
        );
    }
    for entry in std::fs::read_dir(root.join("src")).expect("src/") {
        let name = entry.expect("an entry").file_name().to_string_lossy().into_owned();
        // The folder of a file module (`src/x.rs` with `src/x/tests.rs`) holds parts of it,
        // named where the file is.
        if !name.ends_with(".rs") && root.join("src").join(format!("{name}.rs")).is_file() {
            continue;
        }
        let module = if name.ends_with(".rs") {
            format!("src/{name}")
        } else {
            format!("src/{name}/")
        };
        assert!(
            named.contains(&module),
            "ARCHITECTURE.md's codemap does not name `{module}`"
        );
        // Every file of a folder module is named too, or its folder's line says what it holds.
        if !name.ends_with(".rs") {
            let folder_line = text
                .lines()
                .find(|line| line.contains(&format!("`{module}`")))
                .expect("named above");
            let folder = root.join("src").join(&name);
            for file in std::fs::read_dir(&folder).expect("a module folder") {
                let file = file.expect("an entry").file_name().to_string_lossy().into_owned();
                let parts_of_a_file = !file.ends_with(".rs") && folder.join(format!("{file}.rs")).is_file();
                if file == "mod.rs" || file == "tests.rs" || parts_of_a_file {
                    continue;
                }
                let stem = file.trim_end_matches(".rs");
                let mentioned = named.contains(&format!("{module}{file}"))
                    || text.contains(&format!("`{file}`"))
                    || folder_line.contains(stem);
                assert!(mentioned, "ARCHITECTURE.md does not say what `{module}{file}` holds");
            }
        }
    }
}

/// No module imports one of a higher layer of ARCHITECTURE.md's table (a `crate::` path in any
/// of its files), so there is no upward arrow and no import circle across layers.
#[test]
fn tidy_no_module_imports_a_higher_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut layer_of: BTreeMap<String, usize> = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() == 4 {
            if let Ok(layer) = cells[1].parse::<usize>() {
                for module in cells[2].split(',') {
                    layer_of.insert(module.trim().trim_matches('`').to_string(), layer);
                }
            }
        }
    }
    assert!(layer_of.len() > 10, "the layer table was not found: {layer_of:?}");
    let mut upward = Vec::new();
    for (module, layer) in &layer_of {
        // A folder module, a file module, or a file module with the folder of its parts.
        let folder = root.join("src").join(module);
        let file = root.join("src").join(format!("{module}.rs"));
        let mut files: Vec<std::path::PathBuf> = if folder.is_dir() {
            rust_files(&folder)
        } else {
            Vec::new()
        };
        if file.is_file() {
            files.push(file);
        }
        assert!(!files.is_empty(), "the layer table names `{module}`, which src/ lacks");
        for file in files {
            let source = std::fs::read_to_string(&file).expect("readable");
            for (other, other_layer) in &layer_of {
                let imports = [
                    format!("crate::{other}::"),
                    format!("crate::{other};"),
                    format!("crate::{other}}}"),
                ]
                .iter()
                .any(|path| source.contains(path.as_str()));
                if other_layer > layer && imports {
                    upward.push(format!(
                        "{} imports `{other}` (layer {other_layer} above {layer})",
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(upward.is_empty(), "imports of a higher layer:\n{}", upward.join("\n"));
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// Every committed expectations file reads: each cause names its place in the implementation's
/// installed source (file, function, line; never the adapter's) and says whether it is a bug or
/// a choice of the implementation, and a cause labelled choice explains no broken MUST rule
/// (`deviations::parse` checks each).
#[test]
fn tidy_every_deviation_has_its_source_and_verdict() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = 0;
    for entry in std::fs::read_dir(root.join("expectations")).expect("expectations/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        files += 1;
        let file = agentsim::deviations::load(&path).unwrap_or_else(|error| panic!("{error}"));
        assert!(!file.causes.is_empty(), "{}: no cause", path.display());
    }
    assert!(
        files >= 5,
        "the expectations of Pi's three releases, oh-my-pi and aelix: {files}"
    );
}

/// Rule ID -> its clause IDs, in order, as conformance.md lists them: one line
/// `- Clause: **ID.a** ...` for a rule that promises one thing, or a `- Clauses:` list whose
/// items are `**ID.a** ...` (a clause) or `*Explanation:* ...` (why, not a promise).
pub(crate) fn clauses_by_rule() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(conformance_path()).expect("conformance.md");
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_list = false;
    for line in text.lines() {
        if let Some(id) = line.strip_prefix("### ") {
            current = Some(id.trim().to_string());
            in_list = false;
            continue;
        }
        if line.starts_with("## ") {
            current = None;
            continue;
        }
        let Some(rule) = &current else { continue };
        let item = if let Some(rest) = line.strip_prefix("- Clause: ") {
            in_list = false;
            Some(rest)
        } else if line == "- Clauses:" {
            in_list = true;
            None
        } else if line.starts_with("- ") {
            in_list = false;
            None
        } else if in_list {
            line.strip_prefix("  - ")
        } else {
            None
        };
        let Some(item) = item else { continue };
        if item.starts_with("*Explanation:* ") {
            continue;
        }
        let id = item
            .strip_prefix("**")
            .and_then(|rest| rest.split_once("**"))
            .map(|(id, _)| id.to_string())
            .unwrap_or_else(|| {
                panic!("{rule}: a clause item must start with `**{rule}.x**` or `*Explanation:*`: {item}")
            });
        map.entry(rule.clone()).or_default().push(id);
    }
    map
}

/// The clause IDs (`"AREA-N.x"` string literals) a source file names.
fn clause_literals(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (start, _) in source.match_indices('"') {
        let rest = &source[start + 1..];
        let Some(end) = rest.find('"') else { break };
        let literal = &rest[..end];
        if is_clause_id(literal) {
            found.push(literal.to_string());
        }
    }
    found
}

/// `AREA-N.x`: upper-case letters, a dash, digits, a dot and one lower-case letter.
fn is_clause_id(text: &str) -> bool {
    let Some((rule, letter)) = text.split_once('.') else {
        return false;
    };
    let Some((area, number)) = rule.split_once('-') else {
        return false;
    };
    !area.is_empty()
        && area.bytes().all(|byte| byte.is_ascii_uppercase())
        && !number.is_empty()
        && number.bytes().all(|byte| byte.is_ascii_digit())
        && letter.len() == 1
        && letter.bytes().all(|byte| byte.is_ascii_lowercase())
}

/// The source file of a catalogue checker (`check::observe::...` -> `src/check/observe.rs`).
fn checker_file(checker_name: &str) -> std::path::PathBuf {
    let module = checker_name.split("::").nth(1).expect("check::module::function");
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("src/check/{module}.rs"))
}

#[test]
fn tidy_every_clause_has_a_checker_branch_a_bite_and_a_scenario() {
    use crate::bite::BITES;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let clauses = clauses_by_rule();
    let by_rule = scenarios_by_rule();
    let mut problems = Vec::new();
    for rule in catalogue() {
        let Some(ids) = clauses.get(rule.id) else {
            problems.push(format!(
                "{}: no `Clause:` line or `Clauses:` list in conformance.md",
                rule.id
            ));
            continue;
        };
        let expected: Vec<String> = (b'a'..)
            .take(ids.len())
            .map(|letter| format!("{}.{}", rule.id, letter as char))
            .collect();
        if *ids != expected {
            problems.push(format!("{}: clauses {ids:?}, expected {expected:?}", rule.id));
        }
        // Checker branch: the clause is named in the checker's file, and no branch there names
        // the bare rule.
        let source = std::fs::read_to_string(checker_file(rule.checker_name)).expect("the checker's file");
        for id in ids {
            if !source.contains(&format!("\"{id}\"")) {
                problems.push(format!("{id}: no branch of `{}` names it", rule.checker_name));
            }
        }
        if source.contains(&format!("\"{}\"", rule.id)) {
            problems.push(format!(
                "{}: a branch of `{}` names the bare rule, not one of its clauses",
                rule.id, rule.checker_name
            ));
        }
        // Bite: one that breaks the clause alone, on a scenario that names the rule.
        let scenarios = by_rule.get(rule.id).map(Vec::as_slice).unwrap_or_default();
        for id in ids {
            let bites: Vec<_> = BITES
                .iter()
                .filter(|bite| bite.breaks == id && bite.also.is_empty())
                .collect();
            if bites.is_empty() {
                problems.push(format!("{id}: no bite that breaks it alone"));
            } else if !bites
                .iter()
                .any(|bite| scenarios.iter().any(|name| name == bite.scenario))
            {
                problems.push(format!("{id}: no bite on a scenario that names {}", rule.id));
            }
        }
        if BITES.iter().any(|bite| bite.breaks == rule.id) {
            problems.push(format!("{}: a bite names the rule, not one of its clauses", rule.id));
        }
    }
    // The other direction: every clause the checkers or the bites name is one of conformance.md.
    let known: std::collections::BTreeSet<&str> = clauses.values().flatten().map(String::as_str).collect();
    let mut files = rust_files(&root.join("src/check"));
    files.push(root.join("tests/kit/bite.rs"));
    for file in files {
        let source = std::fs::read_to_string(&file).expect("readable");
        for id in clause_literals(&source) {
            if !known.contains(id.as_str()) {
                problems.push(format!(
                    "{} names clause {id}, which conformance.md lacks",
                    file.display()
                ));
            }
        }
    }
    for bite in BITES {
        for id in bite.also.iter().chain([&bite.breaks]) {
            if id.contains('.') && !known.contains(id) {
                problems.push(format!("a bite breaks {id}, which conformance.md lacks"));
            }
        }
    }
    assert!(problems.is_empty(), "clauses out of step:\n{}", problems.join("\n"));
}

/// The wire names every operation as the trace does: the same set of names, spelled the same.
/// Each kind's operation is written as the kit's `operation` line (`operation.op`, the wire's
/// own type) and as a trace's deliver event (its JSON `operation.op` and its rendered line's
/// verb); the line reads back to the same operation, and a scenario file's `op` spells the
/// kind the same way.
#[test]
fn tidy_the_wires_operation_names_are_the_traces() {
    use agentsim::model::{Operation, OperationKind};
    use agentsim::protocol::convert::{input_from_wire, input_to_wire};
    use agentsim::protocol::wire::{parse_kit_line, to_line};
    use agentsim::runtime::{Input, OpId};
    use agentsim::scenario::OperationSpec;
    use agentsim::trace::{render_line, Event};

    let mut wire_names = std::collections::BTreeSet::new();
    let mut trace_names = std::collections::BTreeSet::new();
    let mut problems = Vec::new();
    for kind in OperationKind::ALL {
        let operation = Operation::new(kind, Some("text"), Some("print"));
        let input = Input::Operation {
            op: OpId(1),
            operation: operation.clone(),
        };
        let line = to_line(&input_to_wire(&input));
        let wire: serde_json::Value = serde_json::from_str(&line).expect("a kit line is JSON");
        let wire_name = wire["operation"]["op"].as_str().expect("`operation.op`").to_string();
        let read_back = input_from_wire(parse_kit_line(&line).expect("the kit reads its own line"));
        if read_back.as_ref() != Some(&input) {
            problems.push(format!("{line} reads back as {read_back:?}"));
        }

        let event = Event::Deliver { op: OpId(1), operation };
        let json = serde_json::to_value(&event).expect("an event serializes");
        let trace_name = json["operation"]["op"].as_str().expect("`operation.op`").to_string();
        let rendered = render_line(1, &event);
        if rendered.split_whitespace().nth(2) != Some(trace_name.as_str()) {
            problems.push(format!("the trace's JSON says `{trace_name}`, its line `{rendered}`"));
        }

        let spec: OperationSpec =
            serde_json::from_value(serde_json::json!({ "op": kind.name() })).expect("a scenario names the kind");
        if spec.op != kind || trace_name != kind.name() {
            problems.push(format!(
                "the kind `{}` is spelled `{trace_name}` in a trace",
                kind.name()
            ));
        }
        wire_names.insert(wire_name);
        trace_names.insert(trace_name);
    }
    assert!(
        problems.is_empty(),
        "operation names out of step:\n{}",
        problems.join("\n")
    );
    assert_eq!(
        wire_names, trace_names,
        "the wire's operation names differ from the trace's"
    );
    assert_eq!(wire_names.len(), OperationKind::ALL.len(), "two kinds share a name");
}

/// No file of `src/` is longer than 700 lines unless its `//!` header says why, on a line that
/// starts `//! Longer than 700 lines:`. A long file is split along a real seam, or the reason it
/// is one unit is stated where a reader meets it; a file no longer long drops the line.
#[test]
fn tidy_no_source_file_is_over_700_lines_without_a_reason() {
    const LINES_MAX: usize = 700;
    const REASON: &str = "//! Longer than 700 lines:";
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    let mut stale = Vec::new();
    for file in rust_files(&root.join("src")) {
        let source = std::fs::read_to_string(&file).expect("readable");
        let lines = source.lines().count();
        let reason_stated = source
            .lines()
            .take_while(|line| line.starts_with("//!"))
            .any(|line| line.starts_with(REASON));
        let path = file.strip_prefix(root).unwrap_or(&file);
        if lines > LINES_MAX && !reason_stated {
            long.push(format!("{} ({lines} lines)", path.display()));
        }
        if lines <= LINES_MAX && reason_stated {
            stale.push(format!("{} ({lines} lines)", path.display()));
        }
    }
    assert!(
        long.is_empty(),
        "files over {LINES_MAX} lines: split each along a seam, or state why it is one unit on a \
         header line starting `{REASON}`:\n{}",
        long.join("\n")
    );
    assert!(
        stale.is_empty(),
        "files of at most {LINES_MAX} lines that still say why they are longer: drop the line:\n{}",
        stale.join("\n")
    );
}
