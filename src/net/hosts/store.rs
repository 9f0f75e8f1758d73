//! The store host: the session file on the host's simulated disk, created durably from the
//! scenario's session on first start, serving appends and reads over the store RPC.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncWriteExt, BufReader};
use turmoil::net::{TcpListener, TcpStream};

use crate::model::{iso_timestamp, SessionEntry, SessionHeader};
use crate::net::Shared;
use crate::runtime::Cause;
use crate::scenario::{default_disk_error, AppendFaultKind, Scenario};
use crate::store::{FileStore, SimDisk, StoreError, SyncPolicy};
use crate::trace::Event;

use super::{read_typed, wait_for, write_line, HostResult, ReadAnswer, STORE_PORT};

/// The session file on the store host's disk.
const SESSION_FILE: &str = "/data/session.jsonl";

fn now_ms() -> u64 {
    turmoil::sim_elapsed()
        .map(|elapsed| elapsed.as_millis() as u64)
        .unwrap_or(0)
}

/// A store request as the store host reads it: `{"op":"append","entry":{..}}` or `{"op":"read"}`.
#[derive(Deserialize)]
struct StoreRequest {
    op: String,
    #[serde(default)]
    entry: Option<SessionEntry>,
}

pub(crate) fn header(scenario: &Scenario) -> SessionHeader {
    SessionHeader {
        kind: "session".into(),
        version: 3,
        id: "00000000-0000-4000-8000-000000000000".into(),
        timestamp: iso_timestamp(scenario.config.clock.start_ms),
        cwd: "/work".into(),
        extra: Default::default(),
    }
}

/// Opens the session file (creating it, durably, from the scenario's session on first start)
/// and serves appends and reads.
pub(crate) async fn store_server(shared: Shared, scenario: Rc<Scenario>, sync: SyncPolicy) -> HostResult {
    let opened = open_store(&shared, &scenario, sync);
    let store = Rc::new(RefCell::new(opened));
    let listener = TcpListener::bind(("0.0.0.0", STORE_PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let (shared, scenario, store) = (shared.clone(), scenario.clone(), store.clone());
        tokio::task::spawn_local(async move {
            // A broken connection is the client's to notice; the store goes on serving.
            let _ = serve_store(stream, shared, scenario, store, sync).await;
        });
    }
}

type OpenedStore = Result<FileStore<SimDisk>, Cause>;

fn store_cause(error: &StoreError) -> Cause {
    Cause::new(error.code(), error.to_string())
}

fn open_store(shared: &Shared, scenario: &Scenario, sync: SyncPolicy) -> OpenedStore {
    let at_ms = now_ms();
    let path = Path::new(SESSION_FILE);
    match FileStore::open(SimDisk, path, sync) {
        Ok((store, opened)) => {
            shared.borrow_mut().push(Event::StoreOpened {
                at_ms,
                entries: opened.entries.len(),
                torn_bytes: opened.torn.map(|torn| torn.bytes),
            });
            Ok(store)
        }
        Err(StoreError::NotFound { .. }) => {
            // First start (or a file a crash took whole): provision it durably.
            let created = turmoil::fs::shim::std::fs::create_dir_all("/data")
                .map_err(|error| Cause::new("store.io", error.to_string()))
                .and_then(|()| {
                    let mut store = FileStore::create(SimDisk, path, &header(scenario), SyncPolicy::EveryAppend)
                        .map_err(|error| store_cause(&error))?;
                    for entry in &scenario.session {
                        store.append(entry).map_err(|error| store_cause(&error))?;
                    }
                    // Synced line by line, so the file holds what the store holds.
                    store.set_sync_policy(sync);
                    Ok(store)
                });
            shared.borrow_mut().push(Event::StoreOpened {
                at_ms,
                entries: created.as_ref().map(|store| store.entries().len()).unwrap_or(0),
                torn_bytes: None,
            });
            created
        }
        Err(error) => Err(store_cause(&error)),
    }
}

async fn serve_store(
    stream: TcpStream,
    shared: Shared,
    scenario: Rc<Scenario>,
    store: Rc<RefCell<OpenedStore>>,
    sync: SyncPolicy,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    while let Some(request) = read_typed::<StoreRequest>(&mut reader).await? {
        match request.op.as_str() {
            "append" => {
                let entry = request
                    .entry
                    .ok_or_else(|| std::io::Error::other("an append without an entry"))?;
                let fault = {
                    let mut record = shared.borrow_mut();
                    record.appends_seen += 1;
                    let index = record.appends_seen;
                    scenario.faults.appends.iter().find(|fault| fault.at == index).cloned()
                };
                let cause = || {
                    fault
                        .as_ref()
                        .and_then(|fault| fault.error.clone())
                        .unwrap_or_else(default_disk_error)
                };
                match fault.as_ref().map(|fault| fault.fault) {
                    Some(AppendFaultKind::Reject) => {
                        write_line(&mut write, &json!({"ok": false, "cause": cause()})).await?;
                    }
                    Some(AppendFaultKind::AppliedThenFail) => {
                        // Applied, and the acknowledgement is lost: the store says nothing.
                        let _ = apply(&store, &entry);
                        std::future::pending::<()>().await;
                    }
                    Some(AppendFaultKind::Late) => {
                        if let Some(until) = fault.as_ref().and_then(|fault| fault.until) {
                            wait_for(&shared, until).await;
                        }
                        answer_append(&mut write, &store, &entry).await?;
                    }
                    None => answer_append(&mut write, &store, &entry).await?,
                }
            }
            "read" => {
                // Read the file itself, not the server's memory: what a new runtime would find.
                match FileStore::open(SimDisk, SESSION_FILE, sync) {
                    Ok((_, opened)) => {
                        write_line(
                            &mut write,
                            &ReadAnswer {
                                entries: &opened.entries,
                            },
                        )
                        .await?
                    }
                    Err(error) => write_line(&mut write, &json!({"error": store_cause(&error)})).await?,
                }
            }
            _ => return Err(std::io::Error::other("an unknown store request")),
        }
    }
    Ok(())
}

fn apply(store: &Rc<RefCell<OpenedStore>>, entry: &SessionEntry) -> Result<(), Cause> {
    match &mut *store.borrow_mut() {
        Ok(file) => file.append(entry).map_err(|error| store_cause(&error)),
        Err(cause) => Err(cause.clone()),
    }
}

async fn answer_append(
    write: &mut (impl AsyncWriteExt + Unpin),
    store: &Rc<RefCell<OpenedStore>>,
    entry: &SessionEntry,
) -> std::io::Result<()> {
    let answer = match apply(store, entry) {
        Ok(()) => json!({"ok": true}),
        Err(cause) => json!({"ok": false, "cause": cause}),
    };
    write_line(write, &answer).await
}
