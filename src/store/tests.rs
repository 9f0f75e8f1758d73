//! The store's own tests: parsing edge cases, `FileStore` on the real disk in a temporary
//! folder, and `FileStore` on turmoil's disk across a crash; a line's facts read from its text
//! agree with those of its parsed value, and a file checked as it streams with the same file
//! parsed whole. The checker's findings are tested through the command line on fixture files
//! (tests/kit/check_session.rs).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Map;
use tokio::sync::Notify;

use crate::model::{iso_timestamp, Message, SessionEntry, SessionHeader};

use super::*;

const EPOCH_MS: u64 = 1_767_225_600_000;

fn header() -> SessionHeader {
    SessionHeader {
        kind: "session".into(),
        version: 3,
        id: "7c9e6679-7425-40de-944b-e07fc1f90ae7".into(),
        timestamp: iso_timestamp(EPOCH_MS),
        cwd: "/tmp".into(),
        extra: Map::new(),
    }
}

/// A chain of `count` user messages: `e0` is the root, `eN` the child of `eN-1`.
fn chain(count: usize) -> Vec<SessionEntry> {
    (0..count)
        .map(|index| {
            let parent = index.checked_sub(1).map(|parent| format!("e{parent}"));
            let at = EPOCH_MS + 1000 * (index as u64 + 1);
            SessionEntry::message(
                format!("e{index}"),
                parent.as_deref(),
                iso_timestamp(at),
                Message::user(format!("message {index}"), at),
            )
        })
        .collect()
}

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("agentsim-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a temporary folder");
        TempDir(path)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn parse_error(bytes: &[u8]) -> SessionFileError {
    match parse_session(bytes, Limits::default()) {
        Ok(parsed) => panic!("expected an error, parsed {parsed:?}"),
        Err(error) => error,
    }
}

const HEADER_LINE: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}"#;

#[test]
fn empty_and_blank_files_are_errors() {
    assert_eq!(parse_error(b"").code(), "session.empty");
    assert_eq!(parse_error(b"\n \n").code(), "session.empty");
    assert_eq!(parse_error(b"  ").code(), "session.empty");
}

#[test]
fn invalid_utf8_names_the_line_and_byte() {
    let bytes = [HEADER_LINE.as_bytes(), b"\n{\"type\":\"label\xff\"}\n"].concat();
    assert_eq!(parse_error(&bytes), SessionFileError::NotUtf8 { line: 2, column: 15 });
}

#[test]
fn json_documents_that_are_not_json_lines_are_not_pi_sessions() {
    let array = parse_error(b"[{\"type\":\"session\"}]\n");
    assert_eq!((array.code(), array.line()), ("session.not_pi", Some(1)));
    assert!(array.to_string().contains("a JSON array"), "{array}");

    let package_json = parse_error(b"{\n  \"name\": \"agentsim\",\n  \"version\": \"1.0.0\"\n}\n");
    assert_eq!((package_json.code(), package_json.line()), ("session.not_pi", Some(1)));
    assert!(package_json.to_string().contains("like package.json"), "{package_json}");

    let untyped = parse_error(b"{\"level\":\"info\"}\n{\"level\":\"warn\"}\n");
    assert_eq!((untyped.code(), untyped.line()), ("session.not_pi", Some(1)));
}

#[test]
fn a_line_over_the_limit_is_measured_without_being_kept() {
    let bytes = format!(
        "{HEADER_LINE}\n{{\"type\":\"label\",\"text\":\"{}\"}}\n",
        "x".repeat(100)
    );
    let limits = Limits { line_bytes_max: 64 };
    assert_eq!(
        parse_session(bytes.as_bytes(), limits),
        Err(SessionFileError::LineTooLong {
            line: 1,
            bytes: HEADER_LINE.len() as u64,
            limit: 64
        })
    );
    let limits = Limits { line_bytes_max: 120 };
    let second_line_len = bytes.len() - HEADER_LINE.len() - 2;
    assert_eq!(
        parse_session(bytes.as_bytes(), limits),
        Err(SessionFileError::LineTooLong {
            line: 2,
            bytes: second_line_len as u64,
            limit: 120
        })
    );
}

#[test]
fn a_tail_without_newline_is_torn_and_not_a_record() {
    let bytes = format!("{HEADER_LINE}\n{{\"type\":\"message\",\"id\":\"a");
    let parsed = parse_session(bytes.as_bytes(), Limits::default()).expect("parses");
    assert!(parsed.header.is_some());
    assert!(parsed.records.is_empty());
    let offset = HEADER_LINE.len() as u64 + 1;
    assert_eq!(
        parsed.torn,
        Some(TornTail {
            line: 2,
            offset,
            bytes: bytes.len() as u64 - offset
        })
    );

    // A header cut short is all the file holds: it is judged as a line.
    assert_eq!(parse_error(b"{\"type\":\"sess").code(), "session.not_pi");
    assert_eq!(parse_error(b"{\"type\":\"session\",").code(), "session.not_pi");
    assert_eq!(parse_error(b"hello").code(), "session.not_jsonl");
}

#[test]
fn records_keep_their_lines_and_byte_ranges() {
    let entry = r#"{"type":"label","id":"a","parentId":null,"timestamp":"t","targetId":"a","label":"x"}"#;
    let bytes = format!("{HEADER_LINE}\n\n{entry}\n");
    let parsed = parse_session(bytes.as_bytes(), Limits::default()).expect("parses");
    let start = HEADER_LINE.len() as u64 + 2;
    assert_eq!(parsed.records.len(), 1);
    assert_eq!(parsed.records[0].line, 3);
    assert_eq!(parsed.records[0].bytes, start..start + entry.len() as u64);
    assert_eq!(parsed.torn, None);
}

#[test]
fn file_store_creates_appends_and_reopens_the_same_entries() {
    let folder = TempDir::new("round-trip");
    let path = folder.join("session.jsonl");
    let entries = chain(3);
    let mut store = FileStore::create(RealDisk, &path, &header(), SyncPolicy::EveryAppend).expect("creates");
    for entry in &entries {
        store.append(entry).expect("appends");
    }
    assert_eq!(store.entries(), entries.as_slice());

    let (reopened, opened) = FileStore::open(RealDisk, &path, SyncPolicy::EveryAppend).expect("opens");
    assert_eq!(opened.header, Some(header()));
    assert_eq!(opened.entries, entries);
    assert_eq!(opened.torn, None);
    assert_eq!(reopened.entries(), entries.as_slice());

    // One line per record, each terminated, and the file checks clean.
    let bytes = std::fs::read(&path).expect("reads");
    assert_eq!(bytes.iter().filter(|byte| **byte == b'\n').count(), 4);
    assert_eq!(bytes.last(), Some(&b'\n'));
    let parsed = parse_session(&bytes, Limits::default()).expect("parses");
    assert_eq!(check_session(&parsed), Vec::new());

    let again = FileStore::create(RealDisk, &path, &header(), SyncPolicy::EveryAppend);
    assert_eq!(again.map(|_| ()).map_err(|error| error.code()), Err("store.exists"));
    let missing = FileStore::open(RealDisk, folder.join("missing.jsonl"), SyncPolicy::None);
    assert_eq!(
        missing.map(|_| ()).map_err(|error| error.code()),
        Err("store.not_found")
    );
}

#[test]
fn file_store_cuts_off_a_torn_tail_before_the_next_append() {
    let folder = TempDir::new("torn");
    let path = folder.join("session.jsonl");
    let entries = chain(3);
    let mut store = FileStore::create(RealDisk, &path, &header(), SyncPolicy::EveryAppend).expect("creates");
    store.append(&entries[0]).expect("appends");
    store.append(&entries[1]).expect("appends");
    drop(store);
    let intact_len = std::fs::metadata(&path).expect("exists").len();
    // A crash in the middle of the third append: half its line, no newline.
    let third = serde_json::to_string(&entries[2]).expect("serializes");
    RealDisk
        .append(&path, &third.as_bytes()[..third.len() / 2], true)
        .expect("appends");

    let (mut store, opened) = FileStore::open(RealDisk, &path, SyncPolicy::EveryAppend).expect("opens");
    assert_eq!(
        opened.torn,
        Some(TornTail {
            line: 4,
            offset: intact_len,
            bytes: (third.len() / 2) as u64
        })
    );
    assert_eq!(opened.entries, entries[..2]);
    assert_eq!(std::fs::metadata(&path).expect("exists").len(), intact_len);

    store.append(&entries[2]).expect("appends");
    let bytes = std::fs::read(&path).expect("reads");
    let parsed = parse_session(&bytes, Limits::default()).expect("parses");
    assert_eq!(parsed.torn, None);
    assert_eq!(parsed.records.len(), 3);
    assert_eq!(check_session(&parsed), Vec::new());
    let (_, reopened) = FileStore::open(RealDisk, &path, SyncPolicy::EveryAppend).expect("opens");
    assert_eq!(reopened.entries, entries);
}

#[test]
fn file_store_cuts_off_damage_before_complete_lines() {
    // Without sync a crash can keep a later block of unsynced lines and lose an earlier one:
    // a zero-filled hole in line 4, then a complete line 5.
    let folder = TempDir::new("damaged");
    let path = folder.join("session.jsonl");
    let entries = chain(4);
    let mut store = FileStore::create(RealDisk, &path, &header(), SyncPolicy::EveryAppend).expect("creates");
    store.append(&entries[0]).expect("appends");
    store.append(&entries[1]).expect("appends");
    drop(store);
    let intact_len = std::fs::metadata(&path).expect("exists").len();
    let mut damaged = serde_json::to_vec(&entries[2]).expect("serializes");
    damaged[10..40].fill(0);
    damaged.push(b'\n');
    let mut last = serde_json::to_vec(&entries[3]).expect("serializes");
    last.push(b'\n');
    RealDisk.append(&path, &damaged, true).expect("appends");
    RealDisk.append(&path, &last, true).expect("appends");

    let (mut store, opened) = FileStore::open(RealDisk, &path, SyncPolicy::EveryAppend).expect("opens");
    assert_eq!(
        opened.torn,
        Some(TornTail {
            line: 4,
            offset: intact_len,
            bytes: (damaged.len() + last.len()) as u64
        })
    );
    assert_eq!(opened.entries, entries[..2]);
    assert_eq!(std::fs::metadata(&path).expect("exists").len(), intact_len);
    store.append(&entries[2]).expect("appends");
    let (_, reopened) = FileStore::open(RealDisk, &path, SyncPolicy::EveryAppend).expect("opens");
    assert_eq!(reopened.entries, entries[..3]);
    assert_eq!(reopened.torn, None);
}

#[test]
fn file_store_names_the_line_of_an_entry_it_cannot_read() {
    let folder = TempDir::new("bad-entry");
    let path = folder.join("session.jsonl");
    let bad = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"robot"}}"#;
    std::fs::write(&path, format!("{HEADER_LINE}\n{bad}\n")).expect("writes");
    let error = FileStore::open(RealDisk, &path, SyncPolicy::None).expect_err("an error");
    assert_eq!(error.code(), "store.bad_entry");
    assert!(
        error.to_string().contains(": line 2: entry: field `message`"),
        "{error}"
    );
}

const SIM_PATH: &str = "/session.jsonl";

/// Runs `before` on a turmoil host, crashes the host (its unsynced writes are lost), restarts
/// it and runs `after` on it. Both run inside the host, where `SimDisk` works.
fn run_across_a_crash(
    builder: &turmoil::Builder,
    before: impl Fn() -> turmoil::Result + 'static,
    after: impl Fn() -> turmoil::Result + 'static,
) {
    let mut sim = builder.build();
    let restarted = Arc::new(AtomicBool::new(false));
    let done = Arc::new(Notify::new());
    let (host_restarted, host_done) = (restarted.clone(), done.clone());
    let (before, after) = (Arc::new(before), Arc::new(after));
    sim.host("store", move || {
        let (restarted, done) = (host_restarted.clone(), host_done.clone());
        let (before, after) = (before.clone(), after.clone());
        async move {
            if restarted.load(Ordering::SeqCst) {
                after()?;
            } else {
                before()?;
            }
            done.notify_one();
            std::future::pending::<()>().await;
            Ok(())
        }
    });
    for (name, phase) in [("before-crash", 0), ("after-crash", 1)] {
        if phase == 1 {
            sim.crash("store");
            restarted.store(true, Ordering::SeqCst);
            sim.bounce("store");
        }
        let waiter = done.clone();
        sim.client(name, async move {
            waiter.notified().await;
            Ok(())
        });
        sim.run().unwrap_or_else(|error| panic!("{name}: {error}"));
    }
}

/// Appends `count` entries under `sync` to a file whose header is durable, crashes, and returns
/// how many entries the reopened file holds.
fn entries_surviving_a_crash(sync: SyncPolicy, count: usize) -> usize {
    let survivors = Arc::new(AtomicUsize::new(usize::MAX));
    let after_survivors = survivors.clone();
    run_across_a_crash(
        &turmoil::Builder::new(),
        move || {
            drop(FileStore::create(
                SimDisk,
                SIM_PATH,
                &header(),
                SyncPolicy::EveryAppend,
            )?);
            let (mut store, _) = FileStore::open(SimDisk, SIM_PATH, sync)?;
            for entry in chain(count) {
                store.append(&entry)?;
            }
            // Before the crash every append is visible, durable or not.
            assert_eq!(FileStore::open(SimDisk, SIM_PATH, sync)?.1.entries.len(), count);
            Ok(())
        },
        move || {
            let (_, opened) = FileStore::open(SimDisk, SIM_PATH, sync)?;
            after_survivors.store(opened.entries.len(), Ordering::SeqCst);
            Ok(())
        },
    );
    survivors.load(Ordering::SeqCst)
}

#[test]
fn synced_appends_survive_a_crash_on_the_simulated_disk() {
    assert_eq!(entries_surviving_a_crash(SyncPolicy::EveryAppend, 5), 5);
}

#[test]
fn unsynced_appends_are_lost_in_a_crash_on_the_simulated_disk() {
    let survived = entries_surviving_a_crash(SyncPolicy::None, 5);
    assert!(survived < 5, "{survived} of 5 unsynced entries survived the crash");
}

#[test]
fn a_torn_append_is_cut_off_on_reopen_and_the_next_append_parses() {
    let torn_seeds = Arc::new(AtomicUsize::new(0));
    for seed in 0..8 {
        let mut builder = turmoil::Builder::new();
        // An unsynced write survives a crash as a random number of whole 64-byte blocks.
        builder.rng_seed(seed).fs().block_size(64);
        let long = SessionEntry::message(
            "long",
            None,
            iso_timestamp(EPOCH_MS),
            Message::user("x".repeat(1000), EPOCH_MS),
        );
        let torn_seeds = torn_seeds.clone();
        run_across_a_crash(
            &builder,
            move || {
                drop(FileStore::create(
                    SimDisk,
                    SIM_PATH,
                    &header(),
                    SyncPolicy::EveryAppend,
                )?);
                let (mut store, _) = FileStore::open(SimDisk, SIM_PATH, SyncPolicy::None)?;
                store.append(&long)?;
                Ok(())
            },
            move || {
                let (mut store, opened) = FileStore::open(SimDisk, SIM_PATH, SyncPolicy::EveryAppend)?;
                if opened.torn.is_some() {
                    torn_seeds.fetch_add(1, Ordering::SeqCst);
                    assert!(opened.entries.is_empty(), "seed {seed}: a torn entry is not read");
                }
                let parent = opened.entries.last().map(|entry| entry.id.clone());
                let next = SessionEntry::message(
                    "next",
                    parent.as_deref(),
                    iso_timestamp(EPOCH_MS + 1000),
                    Message::user("after the crash", EPOCH_MS + 1000),
                );
                store.append(&next)?;
                let bytes = SimDisk.read(Path::new(SIM_PATH))?.unwrap_or_default();
                let parsed = parse_session(&bytes, Limits::default())?;
                assert_eq!(parsed.torn, None, "seed {seed}");
                assert_eq!(check_session(&parsed), Vec::new(), "seed {seed}");
                assert_eq!(parsed.records.len(), opened.entries.len() + 1, "seed {seed}");
                Ok(())
            },
        );
    }
    // The seeds are fixed, so this counts the same on every run; most seeds tear the line.
    assert!(torn_seeds.load(Ordering::SeqCst) > 0, "no seed tore the append");
}

#[test]
fn file_store_reads_the_fixture_files_in_the_kits_model() {
    let folder = TempDir::new("fixtures");
    let clean = folder.join("clean.jsonl");
    std::fs::write(&clean, include_bytes!("../../tests/fixtures/sessions/clean.jsonl")).expect("writes");
    let (_, opened) = FileStore::open(RealDisk, &clean, SyncPolicy::None).expect("opens");
    assert_eq!(opened.header.map(|header| header.version), Some(3));
    let kinds: Vec<&str> = opened.entries.iter().map(SessionEntry::kind).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "message",
            "message",
            "message",
            "message",
            "branch_summary",
            "message",
            "message"
        ]
    );

    let torn = folder.join("torn-tail.jsonl");
    let bytes = include_bytes!("../../tests/fixtures/sessions/torn-tail.jsonl");
    std::fs::write(&torn, bytes).expect("writes");
    let (_, opened) = FileStore::open(RealDisk, &torn, SyncPolicy::None).expect("opens");
    let tail = opened.torn.expect("a torn tail");
    assert_eq!((tail.line, tail.offset + tail.bytes), (4, bytes.len() as u64));
    assert_eq!(opened.entries.len(), 2);
    assert_eq!(std::fs::read(&torn).expect("reads"), bytes[..tail.offset as usize]);
}

/// A store's typed entries are judged as the file a store holding them writes: the facts read
/// from each entry are those of its line, and the findings are those of the parsed file. The
/// entries are those of the fixture files that read as entries (their damage included: ids
/// twice, second roots, orphans, a cycle, results without a call, an entry between a call and
/// its result, metadata).
#[test]
fn a_stores_entries_are_judged_as_the_file_it_writes() {
    let fixtures: [&[u8]; 3] = [
        include_bytes!("../../tests/fixtures/sessions/clean.jsonl"),
        include_bytes!("../../tests/fixtures/sessions/compaction-between-call-and-result.jsonl"),
        include_bytes!("../../tests/fixtures/sessions/tree-damage.jsonl"),
    ];
    let mut codes = std::collections::BTreeSet::new();
    for bytes in fixtures {
        let parsed = parse_session(bytes, Limits::default()).expect("a session file");
        let entries: Vec<SessionEntry> = parsed
            .records
            .iter()
            .filter_map(|record| match &record.value {
                serde_json::Value::Object(object) => SessionEntry::from_object(object.clone()).ok(),
                _ => None,
            })
            .collect();
        let mut text = format!("{HEADER_LINE}\n");
        for entry in &entries {
            text.push_str(&serde_json::to_string(entry).expect("an entry serializes"));
            text.push('\n');
        }
        let written = parse_session(text.as_bytes(), Limits::default()).expect("the store's file");
        for (record, entry) in written.records.iter().zip(&entries) {
            assert_eq!(
                LineFacts::of_entry(entry),
                LineFacts::of_value(&record.value),
                "{}",
                entry.id
            );
        }
        let stored: Vec<SessionFinding> = check_stored_entries(&entries).findings().collect();
        assert_eq!(stored, check_session(&written));
        codes.extend(stored.iter().map(|finding| finding.code.as_str()));
    }
    for code in [
        "entry.duplicate_id",
        "entry.extra_root",
        "entry.cycle",
        "tool.unmatched_result",
        "tool.interleaved_entry",
    ] {
        assert!(codes.contains(code), "no fixture's entries give {code}: {codes:?}");
    }
}

#[test]
fn sync_policy_names_are_the_same_for_serde_and_clap() {
    use clap::ValueEnum;
    for (policy, name) in [(SyncPolicy::EveryAppend, "every-append"), (SyncPolicy::None, "none")] {
        assert_eq!(
            serde_json::to_string(&policy).expect("serializes"),
            format!("\"{name}\"")
        );
        assert_eq!(SyncPolicy::from_str(name, false), Ok(policy));
    }
}

/// One line of a generated session: a kind, and small id pools so that ids collide, parents go
/// missing, chains loop and tool calls pair up or not.
fn generated_line(kind: u8, id: u8, parent: u8, call: u8) -> String {
    let parent = if parent >= 5 {
        "null".to_string()
    } else {
        format!("\"e{parent}\"")
    };
    let identity = format!("\"id\":\"e{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\"");
    match kind % 8 {
        0 => HEADER_LINE.to_string(),
        1 => format!("{{\"type\":\"message\",{identity},\"message\":{{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":0}}}}"),
        2 => format!(
            "{{\"type\":\"message\",{identity},\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"toolCall\",\"id\":\"c{call}\",\"name\":\"read\",\"arguments\":{{}}}}]}}}}"
        ),
        3 => format!(
            "{{\"type\":\"message\",{identity},\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"c{call}\",\"content\":[]}}}}"
        ),
        4 => format!("{{\"type\":\"compaction\",{identity},\"summary\":\"s\",\"firstKeptEntryId\":\"e0\",\"tokensBefore\":1}}"),
        5 => format!("{{\"type\":\"message\",\"parentId\":{parent}}}"),
        6 => "[1,{\"type\":2}]".to_string(),
        _ => format!("{{\"type\":\"bookmark\",{identity}}}"),
    }
}

/// `text` read as a whole `Value` and as [`LineFacts`]: both accepted with the same facts, or
/// both refused with the same error.
fn assert_facts_agree_with_the_value(text: &str) {
    let value = serde_json::from_str::<serde_json::Value>(text);
    let facts = serde_json::from_str::<LineFacts>(text);
    match (value, facts) {
        (Ok(value), Ok(facts)) => assert_eq!(LineFacts::of_value(&value), facts, "{text}"),
        (Err(value), Err(facts)) => assert_eq!(value.to_string(), facts.to_string(), "{text}"),
        (value, facts) => panic!("{text}: the value gives {value:?}, the facts {facts:?}"),
    }
}

#[test]
fn a_lines_facts_are_those_of_its_value_even_where_a_value_is_strict() {
    let deep = format!(
        "{{\"type\":\"custom\",\"data\":{}1{}}}",
        "[".repeat(200),
        "]".repeat(200)
    );
    for text in [
        // A number too large for an f64 in a field the checks skip: refused, as by a Value.
        r#"{"type":"custom","id":"a","parentId":null,"data":1e999}"#,
        // Nested past serde_json's limit in a skipped field.
        deep.as_str(),
        // A repeated key counts by its last value.
        r#"{"type":"message","id":"a","parentId":null,"id":"b","message":{"role":"toolResult","toolCallId":"c","role":"assistant","content":[{"type":"toolCall","id":"d","type":"text"},{"type":"toolCall","id":"e"}]}}"#,
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[{"type":"toolCall","id":"c"}]},"message":"gone"}"#,
        // Escapes, a lone surrogate (refused here; `parse_line` repairs it), a control character.
        r#"{"type":"message","id":"\u0061","parentId":"\ud83d\ude00","message":{"role":"user"}}"#,
        r#"{"type":"label","id":"a","parentId":null,"label":"\ud800"}"#,
        "{\"type\":\"label\",\"id\":\"a\",\"label\":\"\u{1}\"}",
        // Shapes the checks refuse or do not look into.
        r#"[1,{"type":2}]"#,
        r#""session""#,
        "null",
        r#"{"type":null,"id":3,"parentId":[]}"#,
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":"text"}}"#,
        r#"{"type":"message","id":"a","parentId":null,"message":[1]}"#,
        // Not JSON at all, cut short, trailing text.
        r#"{"type":"message","id":"a""#,
        r#"{"type":"message"} x"#,
        "",
    ] {
        assert_facts_agree_with_the_value(text);
    }
}

proptest::proptest! {
    /// Any generated line, whole or cut short at any byte, gives the same facts or the same
    /// error read either way.
    #[test]
    fn facts_read_from_any_line_agree_with_its_value(
        kind in 0u8..8, id in 0u8..5, parent in 0u8..6, call in 0u8..3, cut in 0usize..400,
    ) {
        let line = generated_line(kind, id, parent, call);
        assert_facts_agree_with_the_value(&line);
        let cut = cut.min(line.len());
        assert_facts_agree_with_the_value(&line[..cut]);
    }

    /// A file checked as it streams gives exactly what the same file parsed whole gives: the
    /// same findings and records, or the same error.
    #[test]
    fn checking_a_stream_agrees_with_checking_the_parsed_file(
        lines in proptest::collection::vec((0u8..8, 0u8..5, 0u8..6, 0u8..3), 0..12),
        blank in proptest::collection::vec(proptest::prelude::any::<bool>(), 12),
        tail in 0usize..40,
    ) {
        let mut text = String::new();
        for (index, (kind, id, parent, call)) in lines.iter().enumerate() {
            if blank[index] && index % 3 == 0 {
                text.push_str("  \n");
            }
            text.push_str(&generated_line(*kind, *id, *parent, *call));
            text.push('\n');
        }
        text.push_str(&generated_line(2, 0, 5, 0)[..tail]);
        let streamed = check_session_from(text.as_bytes(), Limits::default());
        match parse_session(text.as_bytes(), Limits::default()) {
            Ok(parsed) => {
                let streamed = streamed.expect("the stream is a session file too");
                let records = parsed.records.len() + usize::from(parsed.header.is_some());
                proptest::prop_assert_eq!(streamed.records(), records);
                proptest::prop_assert_eq!(streamed.findings().collect::<Vec<_>>(), check_session(&parsed));
            }
            Err(error) => proptest::prop_assert_eq!(streamed.err(), Some(error)),
        }
    }
}

proptest::proptest! {
    /// Whatever the lines, parsing and checking do not panic, the findings are sorted, name
    /// lines of the file, and come out the same twice.
    #[test]
    fn checking_any_generated_session_is_total_sorted_and_deterministic(
        lines in proptest::collection::vec((0u8..8, 0u8..5, 0u8..6, 0u8..3), 0..12),
        tail in 0usize..40,
    ) {
        let mut text: String = lines
            .iter()
            .map(|(kind, id, parent, call)| generated_line(*kind, *id, *parent, *call) + "\n")
            .collect();
        text.push_str(&generated_line(1, 0, 5, 0)[..tail]);
        let line_count = text.split('\n').count();
        if let Ok(parsed) = parse_session(text.as_bytes(), Limits::default()) {
            let findings = check_session(&parsed);
            proptest::prop_assert!(findings.windows(2).all(|pair| pair[0] <= pair[1]));
            proptest::prop_assert!(findings.iter().all(|finding| (1..=line_count).contains(&finding.line)));
            proptest::prop_assert_eq!(&findings, &check_session(&parsed));
        }
    }

    /// Arbitrary bytes never make parsing panic.
    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
        if let Ok(parsed) = parse_session(&bytes, Limits { line_bytes_max: 64 }) {
            check_session(&parsed);
        }
    }
}
