//! `agentsim import`: the round trip over the corpus (every scenario run in the networked world
//! writes a real session file with the file store; importing it gives a scenario whose reference
//! run stores the same entries, ids and times by order), the damaged-session fixtures imported
//! to the scenarios and verdicts tests/fixtures/imported holds, and bad input located.

use std::path::Path;
use std::time::Instant;

use agentsim::implementation::Implementation;
use agentsim::import::{check_imported, import_session, Point};
use agentsim::net::{run_net, NetOptions};
use agentsim::sim::FinalStore;
use agentsim::store::{FileStore, RealDisk, SyncPolicy};
use agentsim::suite;

use crate::binary::{root, scratch};

/// Runs `scenario` in the networked world (seed 0, its own faults only) and writes what the
/// store host's file holds at the end to a real session file with the file store: the header
/// the store host writes, then every entry read back from its disk.
fn session_file_of(scenario: &agentsim::scenario::Scenario, options: &NetOptions, path: &Path) -> usize {
    let mut subject = Implementation::reference().subject();
    let run = run_net(scenario, options, &mut subject).expect("the networked world runs");
    let FinalStore::Read(entries) = run.outcome.store else {
        panic!("the networked world reads its store back from its disk")
    };
    let header = agentsim::net::session_header(scenario);
    let mut store = FileStore::create(RealDisk, path, &header, SyncPolicy::None).expect("a new file");
    for entry in &entries {
        store.append(entry).expect("appends");
    }
    entries.len()
}

/// What importing a file the reference wrote came to.
#[derive(Debug, Default)]
struct RoundTrips {
    /// The reference's run of the import stores what the file holds.
    agreed: usize,
    /// Entries compared in those.
    compared: usize,
    /// Files holding only the scenario's given session (nothing was appended), each with what
    /// its import said: a located error, or the reference refusing the session it restores.
    given_only: Vec<String>,
    failures: Vec<String>,
    scenarios: usize,
}

/// Imports every file of the corpus run in the networked world under `options`.
fn round_trips(options: &NetOptions, folder: &Path) -> RoundTrips {
    let corpus = suite::load_corpus(&[root().join("scenarios")]).expect("the corpus loads");
    let mut trips = RoundTrips {
        scenarios: corpus.len(),
        ..RoundTrips::default()
    };
    for loaded in &corpus {
        let file = folder.join(format!("{}-{}.jsonl", loaded.name.replace('/', "--"), options.seed));
        let stored = session_file_of(&loaded.scenario, options, &file);
        let appended = stored.saturating_sub(loaded.scenario.session.len());
        let imported = import_session(&file, &Point::default());
        let check = imported
            .as_ref()
            .map(|imported| check_imported(imported).expect("the reference runs it"));
        match (appended, &imported, check) {
            (_, Ok(_), Ok(check)) if check.agrees() => {
                trips.agreed += 1;
                trips.compared += check.file_entries;
            }
            // Nothing appended: the file is the scenario's given session, damaged on purpose
            // for some restore scenarios; there is nothing the reference stored to agree with.
            (0, Err(error), _) => trips.given_only.push(format!("{}: {}", loaded.name, error.code())),
            (0, Ok(_), Ok(check)) if check.restore_failed.is_some() => trips
                .given_only
                .push(format!("{}: the reference refuses the restored session", loaded.name)),
            (_, Err(error), _) => trips.failures.push(format!("{}: {error}", loaded.name)),
            (_, Ok(_), Ok(check)) => trips.failures.push(format!("{}: {:?}", loaded.name, check.agreement)),
            (_, Ok(_), Err(error)) => trips.failures.push(format!("{}: {error}", loaded.name)),
        }
    }
    trips
}

#[test]
fn import_round_trip_holds_over_the_corpus() {
    let started = Instant::now();
    let folder = scratch("import", "round-trip");
    let trips = round_trips(&NetOptions::default(), &folder);
    let _ = std::fs::remove_dir_all(&folder);
    eprintln!(
        "round trip: {} files agree ({} entries compared), {} hold only the given session, in {:.1} s",
        trips.agreed,
        trips.compared,
        trips.given_only.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        trips.failures.is_empty(),
        "{} round trips differ:\n{}",
        trips.failures.len(),
        trips.failures.join("\n")
    );
    // Every scenario is accounted for: it appended and agrees, or it appended nothing.
    assert_eq!(trips.agreed + trips.given_only.len(), trips.scenarios);
    assert!(
        trips.agreed > trips.given_only.len(),
        "mostly vacuous: {:?}",
        trips.given_only
    );
}

#[test]
fn import_round_trip_holds_under_seeded_network_faults() {
    let started = Instant::now();
    let folder = scratch("import", "round-trip-seeded");
    let mut failures = Vec::new();
    let (mut agreed, mut given_only) = (0, 0);
    for seed in 1..=3 {
        let options = NetOptions {
            seed,
            seeded_faults: true,
            ..NetOptions::default()
        };
        let trips = round_trips(&options, &folder);
        agreed += trips.agreed;
        given_only += trips.given_only.len();
        failures.extend(
            trips
                .failures
                .into_iter()
                .map(|failure| format!("seed {seed}: {failure}")),
        );
    }
    let _ = std::fs::remove_dir_all(&folder);
    eprintln!(
        "round trip under seeded faults (seeds 1 to 3): {agreed} files agree, {given_only} hold only the given session, {} differ, in {:.1} s",
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} round trips differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(agreed > given_only, "mostly vacuous");
}

/// The walk-through's networked file, its lines changed by `change`, imported and checked.
fn check_changed(name: &str, change: impl FnOnce(&mut Vec<serde_json::Value>)) -> agentsim::import::CheckReport {
    let corpus = suite::load_corpus(&[root().join("scenarios/wiring/walkthrough.json")]).expect("loads");
    let folder = scratch("import", name);
    let file = folder.join("walkthrough.jsonl");
    session_file_of(&corpus[0].scenario, &NetOptions::default(), &file);
    let text = std::fs::read_to_string(&file).expect("written");
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    change(&mut lines);
    let changed: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&file, changed).expect("writes");
    let imported = import_session(&file, &Point::default()).expect("imports");
    let check = check_imported(&imported).expect("runs");
    let _ = std::fs::remove_dir_all(&folder);
    check
}

#[test]
fn import_check_names_the_first_entry_the_reference_would_not_store() {
    use agentsim::import::Agreement;
    // As written, the reference stores what the file holds.
    let unchanged = check_changed("unchanged", |_| {});
    assert!(unchanged.agrees(), "{unchanged:?}");
    // The networked runtime reads the clock and draws ids as the in-process one does.
    assert!(
        unchanged.ids_as_recorded && unchanged.times_as_recorded,
        "{unchanged:?}"
    );
    // A tool result lost (the next entry hung on the call): the reference stores a result for
    // every call before the model's next answer.
    let mut lost_line = 0;
    let check = check_changed("result-lost", |lines| {
        let at = lines
            .iter()
            .rposition(|line| line["message"]["role"] == "toolResult")
            .expect("the walk-through calls a tool");
        let call = lines[at]["parentId"].clone();
        lines.remove(at);
        lines[at]["parentId"] = call;
        lost_line = at + 1;
    });
    let Agreement::Differs(difference) = &check.agreement else {
        panic!("a lost tool result agrees: {check:?}")
    };
    assert_eq!(difference.line, Some(lost_line), "{difference:?}");
    assert_eq!(difference.field, "message.role", "{difference:?}");
    // The run's last answer stored twice (a new id, hung on the first): the reference ends
    // the run at the first and stores nothing more.
    let check = check_changed("stored-twice", |lines| {
        let mut again = lines[lines.len() - 1].clone();
        again["parentId"] = again["id"].clone();
        again["id"] = "again".into();
        lines.push(again);
    });
    let Agreement::Differs(difference) = &check.agreement else {
        panic!("an entry written again agrees: {check:?}")
    };
    assert_eq!(
        (difference.reference.as_str(), difference.field.as_str()),
        ("nothing", "-"),
        "{difference:?}"
    );
}

/// What cannot be imported is bad input (exit 2) at its file, line and field, with its code.
#[test]
fn import_bad_input_is_located() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["clean.jsonl", "--leaf", "nope"],
            "tests/fixtures/sessions/clean.jsonl: import.unknown_leaf: --leaf: no entry of the file has id `nope`",
        ),
        (
            &["clean.jsonl", "--from", "b2c3d4e5"],
            "tests/fixtures/sessions/clean.jsonl:3: import.from_not_user: message.role: ",
        ),
        (
            &["clean.jsonl", "--from", "e5f6a7b8"],
            "tests/fixtures/sessions/clean.jsonl: import.from_not_on_path: --from: ",
        ),
        (
            &["tree-damage.jsonl", "--leaf", "a7b8c9d0"],
            "tests/fixtures/sessions/tree-damage.jsonl:10: import.cycle: parentId: ",
        ),
        (
            &["broken-line.jsonl"],
            "tests/fixtures/sessions/broken-line.jsonl:3: session.not_jsonl: -: not JSON at column",
        ),
        (
            &["not-pi.jsonl"],
            "tests/fixtures/sessions/not-pi.jsonl:1: session.not_pi: -: ",
        ),
    ];
    for (args, expected) in cases {
        let mut command = vec!["import".to_string(), format!("tests/fixtures/sessions/{}", args[0])];
        command.extend(args[1..].iter().map(|arg| arg.to_string()));
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        let outcome = crate::binary::agentsim(&command, &[]);
        assert_eq!(outcome.code, 2, "{command:?}: {}{}", outcome.stdout, outcome.stderr);
        assert!(
            outcome.stdout.is_empty(),
            "{command:?} wrote a scenario: {}",
            outcome.stdout
        );
        assert!(
            outcome.stderr.starts_with(&format!("agentsim: {expected}")),
            "{command:?}: {}",
            outcome.stderr
        );
    }
}

/// The session files the real implementations write for the corpus (every entry the kit's store
/// took from them, after the kit's header), imported from their path's first user message and
/// checked on the reference; the file Pi writes for `poison/disk-error-on-entry-2` is the fixture
/// `pi-0.73.1-failed-append-orphans.jsonl`. An implementation not installed is left out.
#[test]
fn import_session_files_the_real_implementations_write() {
    use agentsim::sim::{simulate, Scripted};
    let implementations = [
        ("Pi", "node adapters/pi/adapter.mjs", "adapters/pi/node_modules"),
        ("oh-my-pi", "adapters/oh-my-pi/run", "adapters/oh-my-pi/node_modules"),
        ("aelix", "python3 adapters/aelix/adapter.py", "adapters/aelix/.venv"),
    ];
    let corpus = suite::load_corpus(&[root().join("scenarios")]).expect("the corpus loads");
    for (name, command, install) in implementations {
        if !root().join(install).exists() {
            eprintln!("{name}: left out: {install} is not installed");
            continue;
        }
        let started = Instant::now();
        let implementation = Implementation::adapter(command, std::time::Duration::from_secs(10));
        let folder = scratch("import", &format!("real-{name}"));
        let (mut same, mut not_run, mut errors) = (0, 0, std::collections::BTreeMap::new());
        let mut differs: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
        let mut example: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
        for loaded in &corpus {
            let mut subject = implementation.subject();
            let Ok(outcome) = simulate(&loaded.scenario, subject.as_mut(), &mut Scripted) else {
                not_run += 1;
                continue;
            };
            let file = folder.join(format!("{}.jsonl", loaded.name.replace('/', "--")));
            let header = agentsim::net::session_header(&loaded.scenario);
            let mut store = FileStore::create(RealDisk, &file, &header, SyncPolicy::None).expect("a new file");
            for entry in outcome.stored(&loaded.scenario) {
                store.append(entry).expect("appends");
            }
            if name == "Pi" && loaded.name == "poison/disk-error-on-entry-2" {
                let fixture = root().join("tests/fixtures/sessions/pi-0.73.1-failed-append-orphans.jsonl");
                assert_eq!(
                    std::fs::read_to_string(&file).expect("written"),
                    std::fs::read_to_string(&fixture).expect("the fixture"),
                    "{} is no longer what Pi writes for {}",
                    fixture.display(),
                    loaded.name
                );
            }
            // The whole path replayed: from its first user message (the restored part's, if any).
            let whole = import_session(&file, &Point::default()).ok().and_then(|imported| {
                let first_user = imported
                    .scenario
                    .session
                    .iter()
                    .find(|entry| entry.as_message().is_some_and(|message| message.role() == "user"))?;
                Some(first_user.id.clone())
            });
            let point = Point {
                leaf: None,
                from: whole,
            };
            match import_session(&file, &point).map(|imported| check_imported(&imported)) {
                Ok(Ok(check)) if check.agrees() => same += 1,
                Ok(Ok(check)) => {
                    if let agentsim::import::Agreement::Differs(difference) = &check.agreement {
                        let kind = format!(
                            "{} (file {}, reference {})",
                            difference.field, difference.file, difference.reference
                        );
                        *differs.entry(kind.clone()).or_insert(0) += 1;
                        example.entry(kind).or_insert_with(|| loaded.name.clone());
                    }
                }
                Ok(Err(error)) | Err(error) => *errors.entry(error.code()).or_insert(0) += 1,
            }
        }
        let _ = std::fs::remove_dir_all(&folder);
        eprintln!(
            "{name}'s files: {same} the reference would store as they are, {} differ, {errors:?} not imported, {not_run} not run, in {:.1} s",
            differs.values().sum::<usize>(),
            started.elapsed().as_secs_f64()
        );
        for (kind, count) in &differs {
            eprintln!("  {count} x first difference {kind}, e.g. {}", example[kind]);
        }
        assert!(same + differs.len() > 0, "{name}: nothing imported");
    }
}

/// Hostile session files end in a scenario and a verdict or a located error, never a panic:
/// every line of every fixture dropped, doubled, re-parented, made a root, and retyped.
#[test]
fn import_of_damaged_files_ends_in_a_verdict_or_a_located_error() {
    let folder = scratch("import", "damaged");
    let fixtures = std::fs::read_dir(root().join("tests/fixtures/sessions")).expect("the fixtures");
    let (mut verdicts, mut errors) = (0, 0);
    for fixture in fixtures {
        let path = fixture.expect("an entry").path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        for at in 0..lines.len() {
            let parsed: Option<serde_json::Value> = serde_json::from_str(lines[at]).ok();
            let mut variants: Vec<Vec<String>> = Vec::new();
            let with = |replacement: Vec<String>| {
                let mut changed: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
                changed.splice(at..=at, replacement);
                changed
            };
            variants.push(with(Vec::new()));
            variants.push(with(vec![lines[at].to_string(), lines[at].to_string()]));
            if let Some(value) = parsed.filter(serde_json::Value::is_object) {
                for (key, replacement) in [
                    ("parentId", serde_json::json!("nowhere")),
                    ("parentId", serde_json::Value::Null),
                    ("parentId", serde_json::json!(7)),
                    ("type", serde_json::json!("message")),
                    ("message", serde_json::json!({"role": "user"})),
                    (
                        "message",
                        serde_json::json!({"role": "assistant", "content": [{"type": "x"}]}),
                    ),
                ] {
                    let mut changed = value.clone();
                    changed[key] = replacement;
                    variants.push(with(vec![changed.to_string()]));
                }
            }
            for (index, variant) in variants.iter().enumerate() {
                let file = folder.join(format!("{at}-{index}.jsonl"));
                std::fs::write(&file, variant.join("\n") + "\n").expect("writes");
                match import_session(&file, &Point::default()) {
                    Ok(imported) => {
                        check_imported(&imported).expect("the reference runs an imported scenario");
                        verdicts += 1;
                    }
                    Err(error) => {
                        assert!(error.render().starts_with(&file.display().to_string()), "{error}");
                        errors += 1;
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&folder);
    assert!(verdicts > 0 && errors > 0, "{verdicts} verdicts, {errors} errors");
}

/// aelix's file (written by its own storage): its messages read as Pi's, and its leaf, when the
/// file ends with a `leaf` entry, the entry that entry names, as aelix reads the file.
#[test]
fn import_reads_aelix_files_and_their_leaf_entries() {
    let fixture = root().join("tests/fixtures/sessions/aelix-0.1.0b2-branch.jsonl");
    let imported = import_session(&fixture, &Point::default()).expect("imports");
    assert!(check_imported(&imported).expect("runs").agrees());
    let text = std::fs::read_to_string(&fixture).expect("the fixture");
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|line| line.contains("\"type\": \"leaf\""))
        .expect("a leaf entry");
    let target = serde_json::from_str::<serde_json::Value>(lines[at]).expect("JSON")["targetId"].clone();
    let folder = scratch("import", "aelix-leaf");
    let file = folder.join("ends-with-leaf.jsonl");
    std::fs::write(&file, lines[..=at].join("\n") + "\n").expect("writes");
    let imported = import_session(&file, &Point::default()).expect("imports");
    let _ = std::fs::remove_dir_all(&folder);
    assert_eq!(imported.replayed.last().and_then(|entry| entry.id()), target.as_str());
    assert!(check_imported(&imported).expect("runs").agrees());
}

/// An entry of a type the kit does not model on the restored path (oh-my-pi writes
/// `session_init`, `model_usage`, `mode_change`, ...) is restored as a `custom` entry that holds
/// it, so the path stays whole and the replay runs.
#[test]
fn import_restores_entries_of_types_the_kit_does_not_model() {
    let clean = std::fs::read_to_string(root().join("tests/fixtures/sessions/clean.jsonl")).expect("the fixture");
    let mut lines: Vec<serde_json::Value> = clean
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    // Between the first user message and the answer: `session_init`, as oh-my-pi would write it.
    let init = serde_json::json!({
        "type": "session_init", "id": "0a1b2c3d", "parentId": lines[1]["id"],
        "timestamp": "2026-01-01T00:00:01.500Z", "systemPrompt": "you are a coding agent",
    });
    lines[2]["parentId"] = init["id"].clone();
    lines.insert(2, init);
    let folder = scratch("import", "unmodelled-type");
    let file = folder.join("session.jsonl");
    std::fs::write(&file, lines.iter().map(|line| format!("{line}\n")).collect::<String>()).expect("writes");
    let imported = import_session(&file, &Point::default()).expect("imports");
    let _ = std::fs::remove_dir_all(&folder);
    let restored = imported
        .scenario
        .session
        .iter()
        .find(|entry| entry.id == "0a1b2c3d")
        .expect("restored");
    assert_eq!(restored.kind(), "custom");
    assert!(
        imported.notes.iter().any(|note| note.line == 3 && note.field == "type"),
        "{:?}",
        imported.notes
    );
    assert!(check_imported(&imported).expect("runs").agrees());
}
