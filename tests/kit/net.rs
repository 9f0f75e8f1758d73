//! The networked world and the async shell: the crash test can fail (sync off loses
//! acknowledged entries) and does not with sync on; a networked run is deterministic; the shell
//! embeds the reference with plain in-memory services.

use std::cell::RefCell;
use std::rc::Rc;

use agentsim::implementation::Implementation;
use agentsim::model::{AssistantBlock, AssistantMessage, SessionEntry, StopReason, Usage};
use agentsim::net::crash::crash_test;
use agentsim::net::{run_net, NetOptions};
use agentsim::runtime::{Cause, HookOutcome, ModelRequest, Runtime, RuntimeConfig, RuntimeDeps, ToolOutcome};
use agentsim::shell::{
    AbortSignal, AppendFailure, Applied, ChunkSink, FileStoreService, LocalFuture, ModelService, OutputService,
    Services, Shell, StoreService, ToolService,
};
use agentsim::store::SyncPolicy;
use agentsim::store::{check_session, parse_session, FileStore, Limits, RealDisk};
use agentsim::suite;

use super::session_file::large_budget;

fn corpus(folders: &[&str]) -> Vec<agentsim::scenario::LoadedScenario> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let paths: Vec<_> = folders.iter().map(|folder| root.join(folder)).collect();
    suite::load_corpus(&paths).expect("the corpus loads")
}

#[test]
fn crash_test_loses_no_acknowledged_entry_with_sync_on_and_does_without() {
    let corpus = corpus(&["scenarios/wiring", "scenarios/lab13"]);
    let (mut points, mut acknowledged, mut lost_on, mut lost_off) = (0, 0, 0, 0);
    for loaded in &corpus {
        let mut subject = Implementation::reference().subject();
        let on = crash_test(&loaded.scenario, SyncPolicy::EveryAppend, 100, 0, &mut subject).expect("the world runs");
        let off = crash_test(&loaded.scenario, SyncPolicy::None, 100, 0, &mut subject).expect("the world runs");
        points += on.points;
        acknowledged += on.acknowledged;
        lost_on += on.lost;
        lost_off += off.lost;
    }
    assert!(points >= 100, "only {points} crash points");
    assert!(acknowledged > 0);
    assert_eq!(lost_on, 0, "sync every-append lost acknowledged entries");
    assert!(lost_off > 0, "sync none lost nothing: the crash test cannot fail");
}

#[test]
fn a_networked_run_is_deterministic_and_seeds_differ() {
    let corpus = corpus(&["scenarios/wiring/walkthrough.json"]);
    let scenario = &corpus[0].scenario;
    let mut renders = Vec::new();
    for seed in 0..6 {
        let options = NetOptions {
            seed,
            seeded_faults: true,
            ..NetOptions::default()
        };
        let mut subject = Implementation::reference().subject();
        let first = run_net(scenario, &options, &mut subject)
            .expect("runs")
            .outcome
            .trace
            .render();
        let second = run_net(scenario, &options, &mut subject)
            .expect("runs")
            .outcome
            .trace
            .render();
        assert_eq!(first, second, "seed {seed}");
        renders.push(first);
    }
    renders.dedup();
    assert!(renders.len() > 1, "six seeds gave one trace: the seed reaches no fault");
}

// ----- the shell with in-memory services -----

struct EchoModel;

impl ModelService for EchoModel {
    fn stream(&self, _request: ModelRequest, _abort: AbortSignal, chunks: ChunkSink) -> LocalFuture<AssistantMessage> {
        chunks.send("he".into());
        Box::pin(async move {
            AssistantMessage {
                content: vec![AssistantBlock::Text { text: "hello".into() }],
                api: "memory".into(),
                provider: "memory".into(),
                model: "echo".into(),
                usage: Usage::default(),
                stop_reason: StopReason::Stop,
                error_message: None,
                timestamp: 1,
            }
        })
    }
}

/// What happened, in order, as the store, the shell's observer and the caller saw it.
type Log = Rc<RefCell<Vec<String>>>;

/// Stores entries in memory, each a moment after it is asked to (the write takes a turn of the
/// executor, as a real one takes time); fails the append numbered `fail_at` (1-based). Logs
/// `stored ROLE` when an entry is stored.
struct MemoryStore {
    entries: Rc<RefCell<Vec<SessionEntry>>>,
    fail_at: usize,
    seen: RefCell<usize>,
    log: Log,
}

impl StoreService for MemoryStore {
    fn append(&self, entry: SessionEntry) -> LocalFuture<Result<(), AppendFailure>> {
        *self.seen.borrow_mut() += 1;
        let fails = *self.seen.borrow() == self.fail_at;
        let (entries, log) = (self.entries.clone(), self.log.clone());
        Box::pin(async move {
            tokio::task::yield_now().await;
            if fails {
                return Err(AppendFailure {
                    cause: Cause::new("disk", "full"),
                    applied: Applied::No,
                });
            }
            let role = entry.as_message().map_or("entry", |message| message.role());
            log.borrow_mut().push(format!("stored {role}"));
            entries.borrow_mut().push(entry);
            Ok(())
        })
    }
}

/// Logs the shell's deliveries and settlements (`deliver op#1`, `settled op#1`).
struct LogObserver(Log);

impl agentsim::shell::Observer for LogObserver {
    fn event(&self, event: agentsim::trace::Event) {
        match event {
            agentsim::trace::Event::Deliver { op, .. } => self.0.borrow_mut().push(format!("deliver {op}")),
            agentsim::trace::Event::Settled { op, .. } => self.0.borrow_mut().push(format!("settled {op}")),
            _ => {}
        }
    }
}

/// Two prompts, a flush and a dispose through the shell on an empty session.
struct Embedded {
    /// Each call's outcome: the run's message count (0 for flush and dispose) or the code.
    outcomes: Vec<Result<usize, String>>,
    /// The ids the store holds at the end.
    ids: Vec<String>,
    log: Vec<String>,
}

struct NoTools;

impl ToolService for NoTools {
    fn call(&self, _call: agentsim::model::ToolCall, _abort: AbortSignal) -> LocalFuture<ToolOutcome> {
        Box::pin(async { ToolOutcome::Aborted })
    }
    fn hook(
        &self,
        _extension: String,
        _phase: agentsim::runtime::HookPhase,
        _call: agentsim::model::ToolCall,
        _result: Option<agentsim::model::ToolResultMessage>,
    ) -> LocalFuture<HookOutcome> {
        Box::pin(async { HookOutcome::Allow })
    }
}

impl OutputService for NoTools {
    fn write(&self, _text: String) -> LocalFuture<Result<(), Cause>> {
        Box::pin(async { Ok(()) })
    }
}

fn embedded(fail_at: usize) -> Embedded {
    let log: Log = Rc::default();
    let store = Rc::new(MemoryStore {
        entries: Rc::default(),
        fail_at,
        seen: RefCell::new(0),
        log: log.clone(),
    });
    let services = Services {
        model: Rc::new(EchoModel),
        store: store.clone(),
        tools: Rc::new(NoTools),
        output: Rc::new(NoTools),
        observer: Some(Rc::new(LogObserver(log.clone()))),
    };
    let config = RuntimeConfig {
        active_leaf_id: None,
        system_prompt: None,
        steps_max: 4,
        context: large_budget(),
    };
    let runtime = Runtime::restore(config, RuntimeDeps::default(), &[]).expect("an empty session restores");
    let local = tokio::task::LocalSet::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let outcomes = local.block_on(&rt, async {
        let (shell, driver) = Shell::spawn(runtime, services);
        // When a caller sees its prompt settle, it logs how many entries the store holds.
        let settle = |text: &'static str| {
            let (shell, store, log) = (&shell, &store, &log);
            async move {
                let result = shell.prompt(text).await;
                let stored = store.entries.borrow().len();
                log.borrow_mut()
                    .push(format!("caller saw {text} settle with {stored} stored"));
                result
            }
        };
        let (first, second) = tokio::join!(settle("one"), settle("two"));
        let flushed = shell.flush().await;
        let disposed = shell.dispose().await;
        drop(shell);
        driver.await.expect("the driver ends once the handle is gone");
        vec![
            first.map(|run| run.messages.len()).map_err(|cause| cause.code),
            second.map(|run| run.messages.len()).map_err(|cause| cause.code),
            flushed.map(|()| 0).map_err(|cause| cause.code),
            disposed.map(|()| 0).map_err(|cause| cause.code),
        ]
    });
    let ids = store.entries.borrow().iter().map(|entry| entry.id.clone()).collect();
    let log = log.borrow().clone();
    Embedded { outcomes, ids, log }
}

/// The second prompt waits in the queue until the first settled, and each settles only after
/// the store accepted every message of its run: in the shell's own order (its observer) and as
/// its caller sees it.
#[test]
fn the_shell_queues_prompts_and_persists_before_resolving() {
    let Embedded { outcomes, ids, log } = embedded(usize::MAX);
    assert_eq!(outcomes, vec![Ok(2), Ok(4), Ok(0), Ok(0)]);
    assert_eq!(ids.len(), 4);
    let at = |line: &str| {
        log.iter()
            .position(|logged| logged == line)
            .unwrap_or_else(|| panic!("`{line}` is not in {log:#?}"))
    };
    let stored: Vec<usize> = (0..log.len())
        .filter(|index| log[*index].starts_with("stored "))
        .collect();
    let roles: Vec<&str> = stored.iter().map(|index| log[*index].as_str()).collect();
    assert_eq!(
        roles,
        ["stored user", "stored assistant", "stored user", "stored assistant"],
        "{log:#?}"
    );
    // Run one's two messages are stored, then op#1 settles, then run two starts storing.
    assert!(
        stored[1] < at("settled op#1") && at("settled op#1") < stored[2],
        "{log:#?}"
    );
    assert!(stored[3] < at("settled op#2"), "{log:#?}");
    // Each caller sees its prompt settle with its run's messages in the store.
    let seen = |text: &str| {
        log.iter()
            .find_map(|logged| {
                logged
                    .strip_prefix(&format!("caller saw {text} settle with "))
                    .and_then(|rest| rest.strip_suffix(" stored"))
            })
            .and_then(|count| count.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("no settlement of {text} seen: {log:#?}"))
    };
    assert!(seen("one") >= 2, "{log:#?}");
    assert_eq!(seen("two"), 4, "{log:#?}");
}

#[test]
fn the_shell_poisons_after_a_failed_append() {
    let Embedded { outcomes, ids, .. } = embedded(2);
    let poisoned = Err("disk".to_string());
    assert_eq!(outcomes[..3], [poisoned.clone(), poisoned.clone(), poisoned]);
    assert_eq!(ids.len(), 1, "nothing is appended after the failure");
}

#[test]
fn the_shell_on_a_real_session_file_resumes_at_an_explicit_leaf() {
    let folder = std::env::temp_dir().join(format!("agentsim-shell-file-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("a temp folder");
    let path = folder.join("session.jsonl");
    let header = agentsim::model::SessionHeader {
        kind: "session".into(),
        version: 3,
        id: "00000000-0000-4000-8000-000000000001".into(),
        timestamp: agentsim::model::iso_timestamp(0),
        cwd: "/work".into(),
        extra: Default::default(),
    };
    let config = |leaf: Option<String>| RuntimeConfig {
        active_leaf_id: leaf,
        system_prompt: None,
        steps_max: 4,
        context: large_budget(),
    };
    // Two sessions of the program: the second reopens the file at the leaf the first ended on.
    let mut leaf = None;
    for round in 1..=2 {
        let sync = SyncPolicy::EveryAppend;
        let (store, entries) = if round == 1 {
            (
                FileStore::create(RealDisk, &path, &header, sync).expect("creates"),
                Vec::new(),
            )
        } else {
            let (store, opened) = FileStore::open(RealDisk, &path, sync).expect("reopens");
            assert_eq!(opened.torn, None);
            (store, opened.entries)
        };
        // createId is the embedder's: a prefix per round keeps ids unique across the rounds.
        let deps = RuntimeDeps {
            ids: agentsim::runtime::IdRule {
                prefix: format!("r{round}-"),
                start: 1,
            },
            ..RuntimeDeps::default()
        };
        let runtime = Runtime::restore(config(leaf.clone()), deps, &entries).expect("restores");
        let store = Rc::new(FileStoreService::new(store));
        let services = Services {
            model: Rc::new(EchoModel),
            store: store.clone(),
            tools: Rc::new(NoTools),
            output: Rc::new(NoTools),
            observer: None,
        };
        let local = tokio::task::LocalSet::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let run = local.block_on(&rt, async {
            let (shell, _driver) = Shell::spawn(runtime, services);
            shell.prompt(format!("round {round}")).await
        });
        let run = run.expect("the prompt resolves");
        assert_eq!(
            run.messages.len(),
            2 * round,
            "round {round} sees the earlier round's messages"
        );
        leaf = store.entries().last().map(|entry| entry.id.clone());
    }
    let bytes = std::fs::read(&path).expect("reads");
    let parsed = parse_session(&bytes, Limits::default()).expect("a Pi session file");
    assert_eq!(parsed.records.len(), 4);
    assert_eq!(check_session(&parsed), Vec::new(), "the file is a clean Pi session");
    let _ = std::fs::remove_dir_all(&folder);
}
