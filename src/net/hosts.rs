//! The software on each host of the networked world, and the JSON-lines RPC between them.
//!
//! Store RPC, one connection per call: `{"op":"append","entry":{..}}` is answered
//! `{"ok":true}` or `{"ok":false,"cause":{..}}` (not applied); `{"op":"read"}` is answered
//! `{"entries":[..]}` or `{"error":{..}}`. Model RPC: `{"request":{..}}` is answered by
//! `{"start":{"timestamp":T}}`, then `{"chunk":".."}` lines, then `{"final":{..}}`.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use turmoil::net::{TcpListener, TcpStream};

use crate::check::Timeline;
use crate::model::{
    iso_timestamp, AssistantBlock, AssistantMessage, ContentBlock, Operation, SessionEntry, SessionHeader, StopReason,
    ToolCall, ToolResultMessage, Usage,
};
use crate::runtime::{Cause, HookOutcome, HookPhase, ModelRequest, Runtime, ToolOutcome};
use crate::scenario::{default_disk_error, AppendFaultKind, NetPlan, Scenario, ToolStep};
use crate::shell::{
    AbortSignal, AppendFailure, Applied, ChunkSink, LocalFuture, ModelService, Observer, OutputService, Services,
    Shell, StoreService, SubjectCore, ToolService,
};
use crate::sim::fakes::{model_reply, Scripts, FAKE_API, FAKE_MODEL, FAKE_PROVIDER};
use crate::sim::reference::runtime_parts;
use crate::sim::BoxedSubject;
use crate::store::{FileStore, SimDisk, StoreError, SyncPolicy};
use crate::trace::Event;

use super::{Shared, IDLE_MS, MODEL_HOST, STORE_HOST};

/// How long a slow observer's handler takes in the networked world (simulated ms).
const SLOW_OBSERVER_MS: u64 = 400;

const STORE_PORT: u16 = 7000;
const MODEL_PORT: u16 = 7001;
pub const SESSION_FILE: &str = "/data/session.jsonl";
/// The longest RPC line either side accepts.
const LINE_MAX: usize = 4 << 20;

type HostResult = turmoil::Result;

fn now_ms() -> u64 {
    turmoil::sim_elapsed()
        .map(|elapsed| elapsed.as_millis() as u64)
        .unwrap_or(0)
}

async fn write_line(stream: &mut (impl AsyncWriteExt + Unpin), value: &impl Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line).await?;
    stream.flush().await
}

/// The next line as JSON; `None` at end of stream.
async fn read_line(reader: &mut (impl AsyncBufReadExt + Unpin)) -> std::io::Result<Option<Value>> {
    read_typed(reader).await
}

/// The next line parsed straight into `T` (no `Value` in between); `None` at end of stream.
async fn read_typed<T: DeserializeOwned>(reader: &mut (impl AsyncBufReadExt + Unpin)) -> std::io::Result<Option<T>> {
    match read_raw(reader).await? {
        Some(line) => serde_json::from_str(&line).map(Some).map_err(std::io::Error::other),
        None => Ok(None),
    }
}

/// The next line, unparsed; `None` at end of stream.
async fn read_raw(reader: &mut (impl AsyncBufReadExt + Unpin)) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    if line.len() > LINE_MAX {
        return Err(std::io::Error::other(format!("an RPC line of {} bytes", line.len())));
    }
    Ok(Some(line))
}

/// A store request as the store host reads it: `{"op":"append","entry":{..}}` or `{"op":"read"}`.
#[derive(Deserialize)]
struct StoreRequest {
    op: String,
    #[serde(default)]
    entry: Option<SessionEntry>,
}

/// An append as the runtime host writes it (the same bytes as `{"op":"append","entry":..}`).
#[derive(Serialize)]
struct AppendRequest<'a> {
    op: &'static str,
    entry: &'a SessionEntry,
}

/// The store's answer to a read, written without an intermediate `Value`.
#[derive(Serialize)]
struct ReadAnswer<'a> {
    entries: &'a [SessionEntry],
}

/// A model request as the runtime host writes it: `{"request":{..}}`.
#[derive(Serialize)]
struct ModelCall<'a> {
    request: &'a ModelRequest,
}

/// One line of the model's stream: `start`, `chunk` or `final`.
#[derive(Deserialize)]
struct ModelLine {
    #[serde(default)]
    start: Option<Value>,
    #[serde(default)]
    chunk: Option<Value>,
    #[serde(default, rename = "final")]
    last: Option<AssistantMessage>,
}

// ----- the store host -----

fn header(scenario: &Scenario) -> SessionHeader {
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

/// Waits until `after` holds on the trace so far (or the world goes idle).
pub(crate) async fn wait_for(shared: &Shared, after: crate::scenario::After) -> bool {
    let mut progress = shared.borrow().progress.subscribe();
    loop {
        if shared.borrow().counters.holds(after) {
            return true;
        }
        match tokio::time::timeout(Duration::from_millis(IDLE_MS), progress.changed()).await {
            Ok(Ok(())) => {}
            _ => return false,
        }
    }
}

// ----- the model host -----

/// Answers the `n`-th request with the scenario's `n`-th scripted response, streamed.
pub(crate) async fn model_server(scenario: Rc<Scenario>) -> HostResult {
    let listener = TcpListener::bind(("0.0.0.0", MODEL_PORT)).await?;
    let served = Rc::new(RefCell::new(0usize));
    loop {
        let (stream, _) = listener.accept().await?;
        let (scenario, served) = (scenario.clone(), served.clone());
        tokio::task::spawn_local(async move {
            let _ = serve_model(stream, scenario, served).await;
        });
    }
}

async fn serve_model(stream: TcpStream, scenario: Rc<Scenario>, served: Rc<RefCell<usize>>) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    // The request is checked to be JSON and not otherwise read: the script answers it.
    if read_typed::<IgnoredAny>(&mut reader).await?.is_none() {
        return Ok(());
    }
    let index = {
        let mut served = served.borrow_mut();
        *served += 1;
        *served - 1
    };
    let timestamp = scenario.config.clock.start_ms + 500_000 + index as u64 * 1_000;
    let reply = model_reply(&scenario, index, timestamp);
    write_line(&mut write, &json!({"start": {"timestamp": timestamp}})).await?;
    for chunk in &reply.chunks {
        tokio::time::sleep(Duration::from_millis(1)).await;
        write_line(&mut write, &json!({ "chunk": chunk })).await?;
    }
    write_line(&mut write, &json!({ "final": reply.message })).await?;
    Ok(())
}

// ----- the runtime host -----

/// The shell's model seam: one connection per request, bounded by the model timeout.
struct NetModel {
    timeout: Duration,
    /// The scripted model's timestamps (`start_ms + 500 s + 1 s per request`), so that a
    /// failed request's message is as distinct as a served one.
    start_ms: u64,
    requests: std::cell::Cell<u64>,
}

fn net_message(text: String, stop_reason: StopReason, error: Option<String>, timestamp: u64) -> AssistantMessage {
    AssistantMessage {
        content: if text.is_empty() {
            Vec::new()
        } else {
            vec![AssistantBlock::Text { text }]
        },
        api: FAKE_API.into(),
        provider: FAKE_PROVIDER.into(),
        model: FAKE_MODEL.into(),
        usage: Usage::default(),
        stop_reason,
        error_message: error,
        timestamp,
    }
}

impl ModelService for NetModel {
    fn stream(
        &self,
        request: ModelRequest,
        mut abort: AbortSignal,
        chunks: ChunkSink,
    ) -> LocalFuture<AssistantMessage> {
        let timeout = self.timeout;
        let index = self.requests.get();
        self.requests.set(index + 1);
        let fallback = self.start_ms + 500_000 + index * 1_000;
        Box::pin(async move {
            let streamed = RefCell::new(String::new());
            let timestamp = RefCell::new(fallback);
            let exchange = async {
                let mut stream = TcpStream::connect((MODEL_HOST, MODEL_PORT)).await?;
                write_line(&mut stream, &ModelCall { request: &request }).await?;
                let mut reader = BufReader::new(stream);
                loop {
                    let Some(line) = read_typed::<ModelLine>(&mut reader).await? else {
                        return Err(std::io::Error::other(
                            "the model closed the stream before its final message",
                        ));
                    };
                    if let Some(start) = line.start {
                        *timestamp.borrow_mut() = start.get("timestamp").and_then(Value::as_u64).unwrap_or(fallback);
                    } else if let Some(text) = line.chunk.as_ref().and_then(Value::as_str) {
                        streamed.borrow_mut().push_str(text);
                        chunks.send(text.to_string());
                    } else if let Some(message) = line.last {
                        return Ok(message);
                    }
                }
            };
            let outcome = tokio::select! {
                biased;
                () = abort.aborted() => None,
                result = tokio::time::timeout(timeout, exchange) => Some(result),
            };
            let text = streamed.borrow().clone();
            let timestamp = *timestamp.borrow();
            match outcome {
                None => net_message(text, StopReason::Aborted, Some("Request was aborted".into()), timestamp),
                Some(Ok(Ok(message))) => message,
                Some(Ok(Err(error))) => net_message(
                    text,
                    StopReason::Error,
                    Some(format!("model.unreachable: {error}")),
                    timestamp,
                ),
                Some(Err(_)) => net_message(
                    text,
                    StopReason::Error,
                    Some(format!("model.timeout: no answer within {} ms", timeout.as_millis())),
                    timestamp,
                ),
            }
        })
    }
}

/// The shell's store seam: one connection per append, bounded by the store timeout. No answer
/// in time is an append failure whose application nobody here can know.
struct NetStore {
    timeout: Duration,
}

impl StoreService for NetStore {
    fn append(&self, entry: SessionEntry) -> LocalFuture<Result<(), AppendFailure>> {
        let timeout = self.timeout;
        Box::pin(async move {
            let sent = RefCell::new(false);
            let exchange = async {
                let mut stream = TcpStream::connect((STORE_HOST, STORE_PORT)).await?;
                write_line(
                    &mut stream,
                    &AppendRequest {
                        op: "append",
                        entry: &entry,
                    },
                )
                .await?;
                *sent.borrow_mut() = true;
                let mut reader = BufReader::new(stream);
                read_line(&mut reader).await
            };
            let failure = |code: &str, message: String, applied| AppendFailure {
                cause: Cause::new(code, message),
                applied,
            };
            let applied_if_sent = || if *sent.borrow() { Applied::Unknown } else { Applied::No };
            match tokio::time::timeout(timeout, exchange).await {
                Ok(Ok(Some(answer))) if answer.get("ok") == Some(&Value::Bool(true)) => Ok(()),
                Ok(Ok(Some(answer))) => {
                    let cause = answer
                        .get("cause")
                        .cloned()
                        .and_then(|cause| serde_json::from_value::<Cause>(cause).ok())
                        .unwrap_or_else(|| Cause::new("store.bad_answer", answer.to_string()));
                    Err(AppendFailure {
                        cause,
                        applied: Applied::No,
                    })
                }
                Ok(Ok(None)) => Err(failure(
                    "store.connection_lost",
                    "the store closed the connection before answering".into(),
                    applied_if_sent(),
                )),
                Ok(Err(error)) => Err(failure("store.unreachable", error.to_string(), applied_if_sent())),
                Err(_) => Err(failure(
                    "store.timeout",
                    format!("no answer within {} ms", timeout.as_millis()),
                    applied_if_sent(),
                )),
            }
        })
    }
}

/// Tools, hooks and the output sink: scripted, on the runtime host.
struct LocalTools {
    shared: Shared,
    scenario: Rc<Scenario>,
    scripts: RefCell<Scripts>,
}

impl ToolService for LocalTools {
    fn call(&self, call: ToolCall, mut abort: AbortSignal) -> LocalFuture<ToolOutcome> {
        let step = self.scripts.borrow_mut().next_tool(&self.scenario, &call.name);
        Box::pin(async move {
            if step == ToolStep::Hang {
                abort.aborted().await;
                return ToolOutcome::Aborted;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            if abort.is_aborted() {
                return ToolOutcome::Aborted;
            }
            match step {
                ToolStep::Result(text) => ToolOutcome::Ok {
                    content: vec![ContentBlock::text(text)],
                    details: None,
                    is_error: false,
                },
                ToolStep::Error(text) => ToolOutcome::Ok {
                    content: vec![ContentBlock::text(text)],
                    details: None,
                    is_error: true,
                },
                ToolStep::Throw(message) => ToolOutcome::Threw { message },
                ToolStep::Hang => ToolOutcome::Aborted,
            }
        })
    }

    fn hook(
        &self,
        extension: String,
        phase: HookPhase,
        _call: ToolCall,
        _result: Option<ToolResultMessage>,
    ) -> LocalFuture<HookOutcome> {
        let answer = self.scripts.borrow_mut().next_hook(&self.scenario, &extension, phase);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            answer
        })
    }

    fn notify(
        &self,
        observer: String,
        _event: crate::runtime::ObservedEvent,
    ) -> LocalFuture<crate::runtime::NotifyOutcome> {
        let (answer, slow) = self.scripts.borrow_mut().next_notify(&self.scenario, &observer);
        // A slow observer's handler takes longer than a store round trip.
        let latency = if slow { SLOW_OBSERVER_MS } else { 1 };
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(latency)).await;
            answer
        })
    }
}

impl OutputService for LocalTools {
    fn write(&self, _text: String) -> LocalFuture<Result<(), Cause>> {
        let error = {
            let mut record = self.shared.borrow_mut();
            record.writes_seen += 1;
            let index = record.writes_seen;
            self.scenario
                .faults
                .writes
                .iter()
                .find(|fault| fault.at == index)
                .map(|fault| fault.error.clone())
        };
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            error.map_or(Ok(()), Err)
        })
    }
}

struct Recorder {
    shared: Shared,
}

impl Observer for Recorder {
    fn event(&self, event: Event) {
        self.shared.borrow_mut().push(event);
    }
}

/// Restores the runtime, delivers the operations (each once its `after` holds, concurrently
/// with the work before it), waits for them to settle or for the world to go idle. The
/// subject (the reference, a mutant, an adapter process) is lent for the run; a failure to
/// drive it is kept in `failure` for the verdict.
pub(crate) async fn runtime_client(
    shared: Shared,
    scenario: Rc<Scenario>,
    plan: Rc<NetPlan>,
    subject: Rc<RefCell<BoxedSubject>>,
    failure: Rc<RefCell<Option<crate::sim::SubjectFailure>>>,
) -> HostResult {
    // The subject's steps are synchronous: no simulated time passes while it works.
    let restored = subject.borrow_mut().start(&scenario);
    let setup = match restored {
        Ok(Ok(restored)) => {
            shared.borrow_mut().push(Event::Restored {
                leaf: restored.leaf,
                messages: restored.messages,
            });
            restored.setup
        }
        Ok(Err(cause)) => {
            shared.borrow_mut().push(Event::RestoreFailed { cause });
            return Ok(());
        }
        Err(error) => {
            *failure.borrow_mut() = Some(error);
            return Ok(());
        }
    };
    let core = SubjectCore { subject, failure };
    let local = Rc::new(LocalTools {
        shared: shared.clone(),
        scenario: scenario.clone(),
        scripts: RefCell::new(Scripts::default()),
    });
    let services = Services {
        model: Rc::new(NetModel {
            timeout: Duration::from_millis(plan.model_timeout_ms),
            start_ms: scenario.config.clock.start_ms,
            requests: std::cell::Cell::new(0),
        }),
        store: Rc::new(NetStore {
            timeout: Duration::from_millis(plan.store_timeout_ms),
        }),
        tools: local.clone(),
        output: local,
        observer: Some(Rc::new(Recorder { shared: shared.clone() })),
    };
    let shell = Shell::spawn_with_setup(core, services, setup).0;
    let mut calls = Vec::new();
    let mut delivered = 0;
    for spec in &scenario.operations {
        if let Some(after) = spec.after {
            if !wait_for(&shared, after).await {
                break;
            }
        }
        let operation: Operation = spec.operation();
        let (shell, shared) = (shell.clone(), shared.clone());
        calls.push(tokio::task::spawn_local(async move {
            let settlement = shell.call(operation).await;
            // Wake the wait below: this call is finished.
            shared.borrow().progress.send_modify(|count| *count += 1);
            settlement
        }));
        delivered += 1;
        // Let the call reach the driver before the next condition is tested.
        tokio::task::yield_now().await;
    }
    let mut progress = shared.borrow().progress.subscribe();
    while !calls.iter().all(|call| call.is_finished()) {
        match tokio::time::timeout(Duration::from_millis(IDLE_MS), progress.changed()).await {
            Ok(Ok(())) => {}
            _ => break,
        }
    }
    let mut record = shared.borrow_mut();
    let pending = record.pending.iter().copied().collect();
    let undelivered = (delivered..scenario.operations.len())
        .map(|index| crate::runtime::OpId(index as u32 + 1))
        .collect();
    record.push(Event::End { pending, undelivered });
    Ok(())
}

// ----- the verifier -----

/// The store's answer to a read: its entries, or the cause it could not read them.
fn read_answer(line: &str) -> Result<Vec<SessionEntry>, Cause> {
    /// The usual answer, parsed straight into entries; anything else goes through `Value`.
    #[derive(Deserialize)]
    struct Entries {
        entries: Vec<SessionEntry>,
    }
    if let Ok(read) = serde_json::from_str::<Entries>(line) {
        return Ok(read.entries);
    }
    let answer: Value =
        serde_json::from_str(line).map_err(|error| Cause::new("store.unreachable", error.to_string()))?;
    match answer.get("entries") {
        Some(entries) => {
            Vec::<SessionEntry>::deserialize(entries).map_err(|error| Cause::new("store.bad_entry", error.to_string()))
        }
        None => Err(answer
            .get("error")
            .cloned()
            .and_then(|cause| serde_json::from_value::<Cause>(cause).ok())
            .unwrap_or_else(|| Cause::new("store.bad_answer", answer.to_string()))),
    }
}

/// Reads the session file back through the store and restores a new runtime from it at the
/// last acknowledged leaf.
pub(crate) async fn verifier_client(shared: Shared, scenario: Rc<Scenario>) -> HostResult {
    // The leaf a caller would resume from: the last entry the store acknowledged, else the
    // leaf the runtime was restored at.
    let leaf = {
        let record = shared.borrow();
        Timeline::new(&scenario, &record.trace, &[])
            .leaf_at(record.trace.events.len())
            .map(str::to_string)
    };
    let read = async {
        let mut stream = TcpStream::connect((STORE_HOST, STORE_PORT)).await?;
        write_line(&mut stream, &json!({"op": "read"})).await?;
        let mut reader = BufReader::new(stream);
        read_raw(&mut reader).await
    };
    let entries = match tokio::time::timeout(Duration::from_millis(IDLE_MS), read).await {
        Ok(Ok(Some(line))) => read_answer(&line),
        Ok(Ok(None)) => Err(Cause::new("store.connection_lost", "no answer to the read")),
        Ok(Err(error)) => Err(Cause::new("store.unreachable", error.to_string())),
        Err(_) => Err(Cause::new("store.timeout", "no answer to the read")),
    };
    let mut record = shared.borrow_mut();
    let (stored, outcome) = match entries {
        Ok(entries) => {
            let (mut config, deps) = runtime_parts(&scenario);
            config.active_leaf_id = leaf.clone();
            let outcome = match Runtime::restore(config, deps, &entries) {
                Ok(runtime) => Ok(runtime.active_path().iter().map(|entry| entry.id.clone()).collect()),
                Err(error) => Err(Cause::new(error.code(), error.to_string())),
            };
            let stored = entries.iter().map(|entry| entry.id.clone()).collect();
            record.final_store = entries;
            (stored, outcome)
        }
        Err(cause) => (Vec::new(), Err(cause)),
    };
    record.push(Event::Reopened { leaf, stored, outcome });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_answer_gives_the_entries_or_names_what_is_wrong_with_it() {
        let entries = read_answer(r#"{"entries":[]}"#).expect("an empty session reads");
        assert!(entries.is_empty());
        let cause = read_answer(r#"{"error":{"code":"store.io","message":"disk gone"}}"#).unwrap_err();
        assert_eq!((cause.code.as_str(), cause.message.as_str()), ("store.io", "disk gone"));
        assert_eq!(
            read_answer(r#"{"entries":[{"type":"message"}]}"#).unwrap_err().code,
            "store.bad_entry"
        );
        assert_eq!(read_answer(r#"{"what":1}"#).unwrap_err().code, "store.bad_answer");
        assert_eq!(read_answer("not json").unwrap_err().code, "store.unreachable");
    }

    #[test]
    fn typed_rpc_lines_are_the_bytes_the_json_values_were() {
        let entry: SessionEntry = serde_json::from_str(
            r#"{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",
                "message":{"role":"user","content":"hi","timestamp":1767225600000}}"#,
        )
        .expect("a user message entry");
        let append = AppendRequest {
            op: "append",
            entry: &entry,
        };
        assert_eq!(
            serde_json::to_string(&append).unwrap(),
            json!({"op": "append", "entry": entry}).to_string()
        );
        let entries = [entry.clone(), entry];
        let read = ReadAnswer { entries: &entries };
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            json!({ "entries": entries }).to_string()
        );
    }
}
