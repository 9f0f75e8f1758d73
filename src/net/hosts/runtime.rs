//! The runtime host: the async shell around the reference, its model and store seams reached
//! over the network, its tools and output local, recording the trace as it goes.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::BufReader;
use turmoil::net::TcpStream;

use crate::model::{
    AssistantBlock, AssistantMessage, ContentBlock, Operation, SessionEntry, StopReason, ToolCall, ToolResultMessage,
    Usage,
};
use crate::net::{Shared, IDLE_MS, MODEL_HOST, STORE_HOST};
use crate::runtime::{Cause, HookOutcome, HookPhase, ModelRequest, ToolOutcome};
use crate::scenario::{NetPlan, Scenario, ToolStep};
use crate::shell::{
    AbortSignal, AppendFailure, Applied, ChunkSink, LocalFuture, ModelService, Observer, OutputService, Services,
    Shell, StoreService, SubjectCore, ToolService,
};
use crate::sim::fakes::{Scripts, FAKE_API, FAKE_MODEL, FAKE_PROVIDER};
use crate::sim::BoxedSubject;
use crate::trace::Event;

use super::{read_line, read_typed, wait_for, write_line, AppendRequest, HostResult, MODEL_PORT, STORE_PORT};

/// How long a slow observer's handler takes in the networked world (simulated ms).
const SLOW_OBSERVER_MS: u64 = 400;

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
            // The networked world records no state probes (conformance.md, Limitations).
            shared.borrow_mut().push(Event::Restored {
                leaf: restored.leaf,
                messages: restored.messages,
                probed: false,
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
