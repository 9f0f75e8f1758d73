//! The async shell: the sans-IO reference Runtime behind `async` calls, for Rust programs that
//! embed it and for the networked world (`net`).
//!
//! One task (the *driver*) owns the [`Runtime`]. Calls (`prompt`, `flush`, `dispose`, ...) and
//! the answers of effects reach it through one channel, so the core sees one input at a time,
//! in the order the driver received them. Every effect the core produces is served by one of
//! four `dyn` seams, each answer arriving back on the same channel:
//!
//! - [`ModelService`]: a model request, streamed (chunks, then the final message);
//! - [`StoreService`]: one append to the Session Store;
//! - [`ToolService`]: the core executor and the extension hooks around it;
//! - [`OutputService`]: a mode's output sink.
//!
//! The shell holds no policy of its own: queueing, persistence order, poison and disposal are
//! the core's. It adds exactly what IO needs: an abort signal a service can await, and an
//! [`Observer`] that sees every step as a trace [`Event`], in the order the core saw it.
//!
//! The driver drives a [`Core`]: the reference [`Runtime`], or (in the networked world) an
//! implementation in another process behind the adapter protocol, whose steps are synchronous
//! and take no simulated time.
//!
//! Futures are not `Send`: the shell runs on a `tokio::task::LocalSet` (turmoil's hosts are
//! one), which keeps the driver single-threaded and its order deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use tokio::sync::{mpsc, oneshot, watch};

use crate::model::{AssistantMessage, Operation, SessionEntry, ToolCall, ToolResultMessage};
use crate::runtime::{
    Cause, Completion, Effect, EffectId, HookOutcome, HookPhase, Input, ModelRequest, NotifyOutcome, ObservedEvent,
    OpId, OpValue, RunResult, Runtime, Settlement, StoreOutcome, ToolOutcome,
};
use crate::sim::{Subject, SubjectFailure};
use crate::trace::{AppendAnswer, Event};

/// A boxed future a service returns; it runs on the shell's `LocalSet`.
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// The abort signal of one agent run, as a service sees it.
#[derive(Debug, Clone)]
pub struct AbortSignal {
    fired: watch::Receiver<bool>,
}

impl AbortSignal {
    pub fn is_aborted(&self) -> bool {
        *self.fired.borrow()
    }

    /// Completes when the signal fires (never, if the run ends without an abort).
    pub async fn aborted(&mut self) {
        if self.fired.wait_for(|fired| *fired).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Where a streaming model sends its text deltas.
#[derive(Debug, Clone)]
pub struct ChunkSink {
    effect: EffectId,
    channel: mpsc::UnboundedSender<Message>,
}

impl ChunkSink {
    pub fn send(&self, text: String) {
        // A closed channel means the driver is gone; nothing is waiting for the chunk.
        let _ = self.channel.send(Message::Chunk {
            effect: self.effect,
            text,
        });
    }
}

/// The model seam. The returned message is final: a transport failure is the service's to
/// turn into an assistant message with stop reason `error` (or `aborted`, once `abort` fired).
pub trait ModelService {
    fn stream(&self, request: ModelRequest, abort: AbortSignal, chunks: ChunkSink) -> LocalFuture<AssistantMessage>;
}

/// What the driver drives: one input in, every effect it produced out, synchronously.
pub trait Core {
    /// Applies `input` and appends the effects it produced. An error stops the driver: every
    /// call still waiting is answered with [`shell_gone`].
    fn step(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure>;
}

impl Core for Runtime {
    fn step(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        // Every input the driver builds names a pending effect of the right kind: a mismatch
        // is a bug of the shell, not of the world.
        self.handle_input(input)
            .expect("the shell completes only the runtime's pending effects");
        while let Some(effect) = self.poll_effect() {
            effects.push(effect);
        }
        Ok(())
    }
}

/// Any [`Subject`] whose run has started (an external implementation): its failures stop the
/// driver and are kept for the verdict.
pub struct SubjectCore<S: Subject + ?Sized> {
    pub subject: Rc<std::cell::RefCell<S>>,
    pub failure: Rc<std::cell::RefCell<Option<SubjectFailure>>>,
}

impl<S: Subject + ?Sized> Core for SubjectCore<S> {
    fn step(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let result = self.subject.borrow_mut().deliver(input, effects);
        if let Err(failure) = &result {
            self.failure.borrow_mut().get_or_insert_with(|| failure.clone());
        }
        result
    }
}

/// Why an append failed, and whether the entry may be stored anyway.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendFailure {
    pub cause: Cause,
    pub applied: Applied,
}

/// What the store side knows about a failed append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The store said no: the entry is not stored.
    No,
    /// The store stored it and then reported a failure.
    Yes,
    /// No answer arrived (a timeout, a dropped connection): nobody on this side can know.
    Unknown,
}

/// The Session Store seam: one append, answered once.
pub trait StoreService {
    fn append(&self, entry: SessionEntry) -> LocalFuture<Result<(), AppendFailure>>;
}

/// The tool seam: the core executor and the extension host's hooks.
pub trait ToolService {
    fn call(&self, call: ToolCall, abort: AbortSignal) -> LocalFuture<ToolOutcome>;
    fn hook(
        &self,
        extension: String,
        phase: HookPhase,
        call: ToolCall,
        result: Option<ToolResultMessage>,
    ) -> LocalFuture<HookOutcome>;
    /// An observer's handler, called with an agent event (default: it returns at once).
    fn notify(&self, _observer: String, _event: ObservedEvent) -> LocalFuture<NotifyOutcome> {
        Box::pin(async { NotifyOutcome::Ok })
    }
}

/// A mode's output sink.
pub trait OutputService {
    fn write(&self, text: String) -> LocalFuture<Result<(), Cause>>;
}

/// Sees every step of the driver as a trace event, in the core's order.
pub trait Observer {
    fn event(&self, event: Event);
}

/// The four seams and an optional observer.
#[derive(Clone)]
pub struct Services {
    pub model: Rc<dyn ModelService>,
    pub store: Rc<dyn StoreService>,
    pub tools: Rc<dyn ToolService>,
    pub output: Rc<dyn OutputService>,
    pub observer: Option<Rc<dyn Observer>>,
}

/// What the driver receives.
#[derive(Debug)]
pub enum Message {
    Call {
        operation: Operation,
        reply: oneshot::Sender<Settlement>,
    },
    Chunk {
        effect: EffectId,
        text: String,
    },
    Done {
        effect: EffectId,
        completion: Completion,
        answer: Box<Event>,
    },
    /// The last handle was dropped: the driver ends once no call and no effect is pending.
    Closed,
}

/// A handle to a running shell. Clones share the runtime; calls from clones queue in the order
/// they reach the driver.
#[derive(Debug, Clone)]
pub struct Shell {
    inner: Rc<Handle>,
}

#[derive(Debug)]
struct Handle {
    channel: mpsc::UnboundedSender<Message>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.channel.send(Message::Closed);
    }
}

/// The driver ended before it settled the call (it was dropped with its `LocalSet`).
pub fn shell_gone() -> Cause {
    Cause::new("shell.gone", "the runtime's driver stopped before the call settled")
}

impl Shell {
    /// Starts the driver for `runtime` on the current `LocalSet` and returns its handle. The
    /// driver ends when every handle is dropped and no call or effect is pending; it returns
    /// the runtime, so a caller can inspect its final state.
    pub fn spawn<C: Core + 'static>(core: C, services: Services) -> (Shell, tokio::task::JoinHandle<C>) {
        Shell::spawn_with_setup(core, services, Vec::new())
    }

    /// [`Shell::spawn`] for a runtime that did something while it was created (`setup`, an
    /// adapter's set-up effects, `sim::Restored::setup`): the driver serves those effects
    /// first and holds every call back until they are answered.
    pub fn spawn_with_setup<C: Core + 'static>(
        core: C,
        services: Services,
        setup: Vec<Effect>,
    ) -> (Shell, tokio::task::JoinHandle<C>) {
        let (channel, inbox) = mpsc::unbounded_channel();
        let driver = Driver {
            core,
            pending: BTreeSet::new(),
            services,
            inbox,
            channel: channel.clone(),
            replies: BTreeMap::new(),
            signals: BTreeMap::new(),
            next_op: 1,
            closed: false,
            held: Vec::new(),
        };
        let handle = tokio::task::spawn_local(driver.run(setup));
        (
            Shell {
                inner: Rc::new(Handle { channel }),
            },
            handle,
        )
    }

    /// Any operation; the settlement is the core's, unchanged.
    pub async fn call(&self, operation: Operation) -> Settlement {
        let (reply, answer) = oneshot::channel();
        if self.inner.channel.send(Message::Call { operation, reply }).is_err() {
            return Settlement::Rejected(shell_gone());
        }
        answer.await.unwrap_or_else(|_| Settlement::Rejected(shell_gone()))
    }

    /// `prompt(text)`: resolves with a copy of the run's result once the store accepted all of it.
    pub async fn prompt(&self, text: impl Into<String>) -> Result<RunResult, Cause> {
        match self.call(Operation::Prompt { text: text.into() }).await {
            Settlement::Resolved(OpValue::Run(result)) => Ok(result),
            Settlement::Resolved(other) => Err(unexpected_value(&other)),
            Settlement::Rejected(cause) => Err(cause),
        }
    }

    /// `flush()`: waits for the queue's tail and reports poison.
    pub async fn flush(&self) -> Result<(), Cause> {
        unit(self.call(Operation::Flush).await)
    }

    /// `dispose()`: closes the runtime to new work and waits for the work accepted before.
    pub async fn dispose(&self) -> Result<(), Cause> {
        unit(self.call(Operation::Dispose).await)
    }

    pub async fn steer(&self, text: impl Into<String>) -> Result<(), Cause> {
        unit(self.call(Operation::Steer { text: text.into() }).await)
    }

    pub async fn follow_up(&self, text: impl Into<String>) -> Result<(), Cause> {
        unit(self.call(Operation::FollowUp { text: text.into() }).await)
    }

    pub async fn abort(&self) -> Result<(), Cause> {
        unit(self.call(Operation::Abort).await)
    }
}

fn unit(settlement: Settlement) -> Result<(), Cause> {
    match settlement {
        Settlement::Resolved(OpValue::Unit) => Ok(()),
        Settlement::Resolved(other) => Err(unexpected_value(&other)),
        Settlement::Rejected(cause) => Err(cause),
    }
}

fn unexpected_value(value: &OpValue) -> Cause {
    Cause::new(
        "shell.unexpected_value",
        format!("the runtime resolved with {value:?} where the call expects another shape"),
    )
}

struct Driver<C: Core> {
    core: C,
    /// Effects issued and not answered yet.
    pending: BTreeSet<EffectId>,
    services: Services,
    inbox: mpsc::UnboundedReceiver<Message>,
    /// For the effect tasks.
    channel: mpsc::UnboundedSender<Message>,
    replies: BTreeMap<OpId, oneshot::Sender<Settlement>>,
    signals: BTreeMap<crate::runtime::SignalId, watch::Sender<bool>>,
    next_op: u32,
    /// Every handle is gone.
    closed: bool,
    /// Calls that arrived while the runtime's set-up effects were unanswered, in order.
    held: Vec<Message>,
}

impl<C: Core> Driver<C> {
    /// Whether the runtime's set-up is still unanswered: nothing delivered yet, something pending.
    fn setting_up(&self) -> bool {
        self.next_op == 1 && !self.pending.is_empty()
    }

    async fn run(mut self, setup: Vec<Effect>) -> C {
        for effect in setup {
            self.serve(effect);
        }
        loop {
            // Once the set-up is answered, the calls held back go first, in order.
            let message = if !self.setting_up() && !self.held.is_empty() {
                self.held.remove(0)
            } else {
                match self.inbox.recv().await {
                    Some(message) => message,
                    None => break,
                }
            };
            let input = match message {
                call @ Message::Call { .. } if self.setting_up() => {
                    self.held.push(call);
                    continue;
                }
                Message::Call { operation, reply } => {
                    let op = OpId(self.next_op);
                    self.next_op += 1;
                    self.replies.insert(op, reply);
                    self.observe(Event::Deliver {
                        op,
                        operation: operation.clone(),
                    });
                    Input::Operation { op, operation }
                }
                Message::Chunk { effect, text } => {
                    self.observe(Event::ModelChunk {
                        effect,
                        text: text.clone(),
                    });
                    Completion::ModelChunk { text }.into_input(effect)
                }
                Message::Done {
                    effect,
                    completion,
                    answer,
                } => {
                    self.pending.remove(&effect);
                    self.observe(*answer);
                    completion.into_input(effect)
                }
                Message::Closed => {
                    self.closed = true;
                    if self.is_idle() {
                        break;
                    }
                    continue;
                }
            };
            let mut effects = Vec::new();
            if self.core.step(input, &mut effects).is_err() {
                // The core cannot go on: dropping the replies answers every waiting call.
                self.replies.clear();
                break;
            }
            for effect in effects {
                self.serve(effect);
            }
            if self.closed && self.is_idle() {
                break;
            }
        }
        self.core
    }

    /// No call waits for its settlement and no effect for its answer.
    fn is_idle(&self) -> bool {
        self.replies.is_empty() && self.pending.is_empty() && self.held.is_empty()
    }

    fn observe(&self, event: Event) {
        if let Some(observer) = &self.services.observer {
            observer.event(event);
        }
    }

    fn signal(&mut self, signal: crate::runtime::SignalId) -> AbortSignal {
        let sender = self.signals.entry(signal).or_insert_with(|| watch::channel(false).0);
        AbortSignal {
            fired: sender.subscribe(),
        }
    }

    /// Starts serving one effect; its answer comes back as a `Message::Done`.
    fn serve(&mut self, effect: Effect) {
        if let Some(observer) = &self.services.observer {
            observer.event(Event::from_effect(effect.clone()));
        }
        if let Some(id) = effect.pending_id() {
            self.pending.insert(id);
        }
        match effect {
            Effect::ModelRequest {
                effect,
                signal,
                request,
            } => {
                let abort = self.signal(signal);
                let chunks = ChunkSink {
                    effect,
                    channel: self.channel.clone(),
                };
                let future = self.services.model.stream(request, abort, chunks);
                self.answer(effect, async move {
                    let message = future.await;
                    let answer = Event::ModelResponse {
                        effect,
                        message: message.clone(),
                    };
                    (Completion::ModelFinal { message }, answer)
                });
            }
            Effect::ToolCall { effect, signal, call } => {
                let abort = self.signal(signal);
                let future = self.services.tools.call(call, abort);
                self.answer(effect, async move {
                    let outcome = future.await;
                    let answer = Event::ToolAnswer {
                        effect,
                        answer: outcome.clone(),
                    };
                    (Completion::Tool(outcome), answer)
                });
            }
            Effect::Hook {
                effect,
                extension,
                phase,
                call,
                result,
            } => {
                let future = self.services.tools.hook(extension, phase, call, result);
                self.answer(effect, async move {
                    let outcome = future.await;
                    let answer = Event::HookAnswer {
                        effect,
                        answer: outcome.clone(),
                    };
                    (Completion::Hook(outcome), answer)
                });
            }
            Effect::Append { effect, entry } => {
                let future = self.services.store.append(entry);
                self.answer(effect, async move {
                    let (outcome, answer) = match future.await {
                        Ok(()) => (StoreOutcome::Ok, AppendAnswer::Ok),
                        Err(AppendFailure { cause, applied }) => {
                            let answer = match applied {
                                Applied::No => AppendAnswer::Rejected { cause: cause.clone() },
                                Applied::Yes => AppendAnswer::AppliedThenFailed { cause: cause.clone() },
                                Applied::Unknown => AppendAnswer::Lost { cause: cause.clone() },
                            };
                            (StoreOutcome::Failed(cause), answer)
                        }
                    };
                    (Completion::Append(outcome), Event::AppendAnswer { effect, answer })
                });
            }
            Effect::Write { effect, text } => {
                let future = self.services.output.write(text);
                self.answer(effect, async move {
                    let result = future.await;
                    let answer = Event::WriteAnswer {
                        effect,
                        error: result.clone().err(),
                    };
                    let outcome = match result {
                        Ok(()) => StoreOutcome::Ok,
                        Err(cause) => StoreOutcome::Failed(cause),
                    };
                    (Completion::Write(outcome), answer)
                });
            }
            Effect::Notify {
                effect,
                observer,
                event,
            } => {
                let future = self.services.tools.notify(observer, event);
                self.answer(effect, async move {
                    let outcome = future.await;
                    let answer = Event::NotifyAnswer {
                        effect,
                        answer: outcome.clone(),
                    };
                    (Completion::Notify(outcome), answer)
                });
            }
            Effect::AbortSignal { signal } => {
                let sender = self.signals.entry(signal).or_insert_with(|| watch::channel(false).0);
                sender.send_replace(true);
            }
            Effect::Settled { op, settlement } => {
                if let Some(reply) = self.replies.remove(&op) {
                    // The caller may have stopped waiting; the settlement is in the trace.
                    let _ = reply.send(settlement);
                }
            }
        }
    }

    /// Runs `work` on the `LocalSet` and sends its answer to the driver.
    fn answer(&self, effect: EffectId, work: impl Future<Output = (Completion, Event)> + 'static) {
        let channel = self.channel.clone();
        tokio::task::spawn_local(async move {
            let (completion, answer) = work.await;
            let _ = channel.send(Message::Done {
                effect,
                completion,
                answer: Box::new(answer),
            });
        });
    }
}

/// The JSONL session file as the shell's store seam: each append is written (and synced, per
/// the store's policy) before it is answered. A write error may have left part of the line on
/// disk, so its application is `Unknown`; the runtime poisons either way.
pub struct FileStoreService<D: crate::store::Disk> {
    store: std::cell::RefCell<crate::store::FileStore<D>>,
}

impl<D: crate::store::Disk> FileStoreService<D> {
    pub fn new(store: crate::store::FileStore<D>) -> FileStoreService<D> {
        FileStoreService {
            store: std::cell::RefCell::new(store),
        }
    }

    /// Every entry of the file: those it held when opened, then those appended.
    pub fn entries(&self) -> Vec<SessionEntry> {
        self.store.borrow().entries().to_vec()
    }
}

impl<D: crate::store::Disk> StoreService for FileStoreService<D> {
    fn append(&self, entry: SessionEntry) -> LocalFuture<Result<(), AppendFailure>> {
        let result = self.store.borrow_mut().append(&entry).map_err(|error| AppendFailure {
            cause: Cause::new(error.code(), error.to_string()),
            applied: Applied::Unknown,
        });
        Box::pin(async move { result })
    }
}
