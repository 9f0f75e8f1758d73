//! The software on each host of the networked world, and the JSON-lines RPC between them.
//!
//! Store RPC, one connection per call: `{"op":"append","entry":{..}}` is answered
//! `{"ok":true}` or `{"ok":false,"cause":{..}}` (not applied); `{"op":"read"}` is answered
//! `{"entries":[..]}` or `{"error":{..}}`. Model RPC: `{"request":{..}}` is answered by
//! `{"start":{"timestamp":T}}`, then `{"chunk":".."}` lines, then `{"final":{..}}`.
//!
//! The RPC's lines, the model host and the verifier are here; the store host is `store.rs`, the
//! runtime host (the shell over the network's seams) `runtime.rs`.

mod runtime;
mod store;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use turmoil::net::{TcpListener, TcpStream};

use crate::check::Timeline;
use crate::model::SessionEntry;
use crate::runtime::{Cause, Runtime};
use crate::scenario::Scenario;
use crate::sim::fakes::model_reply;
use crate::sim::reference::runtime_parts;
use crate::trace::Event;

use super::{Shared, IDLE_MS, STORE_HOST};

pub(crate) use runtime::runtime_client;
pub(crate) use store::{header, store_server};

const STORE_PORT: u16 = 7000;
const MODEL_PORT: u16 = 7001;
/// The longest RPC line either side accepts.
const LINE_MAX: usize = 4 << 20;

type HostResult = turmoil::Result;

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

/// Waits until `after` holds on the trace so far (or the world goes idle).
async fn wait_for(shared: &Shared, after: crate::scenario::After) -> bool {
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
