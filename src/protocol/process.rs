//! One adapter process and its three pipes, with bounded waits and no leftovers.
//!
//! The adapter runs as `sh -c CMD` in a process group of its own. A writer thread feeds its
//! stdin (so a child that never reads cannot block the kit), a reader thread cuts its stdout into
//! lines of at most [`LINE_BYTES_MAX`] bytes, and another keeps the last [`STDERR_TAIL_LINES`]
//! lines of its stderr for verdicts. Every read takes a deadline. Dropping an [`AdapterProcess`]
//! kills the whole process group and reaps the child, so no adapter (nor anything it started in
//! its group) outlives the run that spawned it.
//!
//! Every living adapter is also listed process-wide, so that a kit told to stop (a signal, see
//! `cli::signals`) can kill them all from any thread with [`stop_every_adapter`], after which
//! no adapter starts.
//!
//! This module knows pipes, processes and time; it knows nothing of the protocol's messages.
//! An adapter process's life, from spawn to reap, is here; the list of living adapters, the run
//! token that finds a run's orphans and the kills that end them are `kill.rs`'s.

mod kill;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::wire::LINE_BYTES_MAX;
use kill::{become_subreaper, kill_descendants, kill_group, living_adapters, RUNS_STARTED};

pub use kill::{stop_every_adapter, RUN_TOKEN_VAR};

/// How many stderr lines a verdict shows at most.
pub const STDERR_TAIL_LINES: usize = 40;

/// Longer stderr lines are cut to this many bytes.
const STDERR_LINE_BYTES_MAX: usize = 2_000;

/// How long the kit keeps reading after the child exited while a grandchild holds stdout open.
const AFTER_EXIT_GRACE: Duration = Duration::from_millis(200);

/// How often a wait looks at the child's state.
const POLL: Duration = Duration::from_millis(20);

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitState {
    Code(i32),
    Signal(i32),
}

impl std::fmt::Display for ExitState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitState::Code(code) => write!(f, "exit status {code}"),
            ExitState::Signal(signal) => write!(f, "killed by signal {signal}{}", signal_name(*signal)),
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGBUS => " (SIGBUS)",
        libc::SIGFPE => " (SIGFPE)",
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGPIPE => " (SIGPIPE)",
        _ => "",
    }
}

/// What the stdout reader saw.
enum StdoutEvent {
    /// A line, and whether more bytes were already read after it (written before the kit could
    /// answer it).
    Line(Vec<u8>, bool),
    /// A line grew past the limit; the reader stopped reading.
    Oversize,
    Closed,
}

/// The next thing on the adapter's stdout.
#[derive(Debug)]
pub enum Next {
    Line(Vec<u8>),
    Oversize,
    /// stdout closed or the child exited; the exit state if the child ended before the deadline.
    Closed(Option<ExitState>),
    TimedOut,
}

#[derive(Debug, Default)]
struct StderrTail {
    lines: VecDeque<String>,
    partial: Vec<u8>,
    partial_cut: bool,
    closed: bool,
    /// The pipe's descriptor, while the reader holds it open (until `closed`): the reader reads
    /// it only with the tail locked, so under the lock every byte the adapter wrote is either
    /// in the tail or still in the pipe ([`AdapterProcess::clear_stderr_tail`]).
    fd: Option<i32>,
}

impl StderrTail {
    fn push_bytes(&mut self, bytes: &[u8]) {
        for piece in bytes.split_inclusive(|byte| *byte == b'\n') {
            let (text, ends_line) = match piece.strip_suffix(b"\n") {
                Some(text) => (text, true),
                None => (piece, false),
            };
            let room = STDERR_LINE_BYTES_MAX.saturating_sub(self.partial.len());
            if text.len() > room {
                self.partial.extend_from_slice(&text[..room]);
                self.partial_cut = true;
            } else {
                self.partial.extend_from_slice(text);
            }
            if ends_line {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        let mut line = String::from_utf8_lossy(&self.partial)
            .trim_end_matches('\r')
            .to_string();
        if self.partial_cut {
            line.push('…');
        }
        self.partial.clear();
        self.partial_cut = false;
        self.lines.push_back(line);
        while self.lines.len() > STDERR_TAIL_LINES {
            self.lines.pop_front();
        }
    }

    fn snapshot(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.lines.iter().cloned().collect();
        if !self.partial.is_empty() {
            lines.push(String::from_utf8_lossy(&self.partial).to_string());
            if lines.len() > STDERR_TAIL_LINES {
                lines.remove(0);
            }
        }
        lines
    }
}

/// A running adapter. See the module documentation.
pub struct AdapterProcess {
    child: Child,
    /// The process group: the child's pid (`process_group(0)`).
    group: i32,
    lines: Receiver<StdoutEvent>,
    writer: Option<Sender<String>>,
    stderr: Arc<Mutex<StderrTail>>,
    exit: Option<ExitState>,
    killed: bool,
    /// An event taken off the channel by [`pending_line`](Self::pending_line) that was not a line.
    stashed: Option<StdoutEvent>,
    /// Whether more output was already read after the last line [`next_line`](Self::next_line)
    /// returned.
    last_followed: bool,
    /// The value of [`RUN_TOKEN_VAR`] in the adapter's environment (and its descendants').
    token: String,
}

impl AdapterProcess {
    /// Starts `sh -c command` in a new process group with all three pipes. Refused once
    /// [`stop_every_adapter`] ran.
    pub fn spawn(command: &str) -> std::io::Result<AdapterProcess> {
        become_subreaper();
        let token = format!(
            "{}-{}",
            std::process::id(),
            RUNS_STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        // Started and listed under the lock: a stop in between would miss it.
        let mut living = living_adapters();
        if living.stopped {
            return Err(std::io::Error::other("the kit is stopping: no adapter starts"));
        }
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .env(RUN_TOKEN_VAR, &token)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let group = child.id() as i32;
        living.groups.insert(group, token.clone());
        drop(living);
        let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => (stdin, stdout, stderr),
            _ => {
                kill_group(group);
                let _ = child.kill();
                let _ = child.wait();
                return Err(std::io::Error::other("the child's pipes were not created"));
            }
        };
        // A bounded channel: a flooding adapter waits for the kit instead of filling memory.
        let (line_sender, lines) = mpsc::sync_channel(256);
        let (writer, to_write) = mpsc::channel::<String>();
        let stderr_tail = Arc::new(Mutex::new(StderrTail {
            fd: Some(std::os::fd::AsRawFd::as_raw_fd(&stderr)),
            ..StderrTail::default()
        }));
        let spawned = thread::Builder::new()
            .name("adapter-stdout".into())
            .spawn(move || read_stdout(stdout, line_sender))
            .and_then(|_| {
                let tail = Arc::clone(&stderr_tail);
                thread::Builder::new()
                    .name("adapter-stderr".into())
                    .spawn(move || read_stderr(stderr, tail))
            })
            .and_then(|_| {
                thread::Builder::new()
                    .name("adapter-stdin".into())
                    .spawn(move || write_stdin(stdin, to_write))
            });
        let process = AdapterProcess {
            child,
            group,
            lines,
            writer: Some(writer),
            stderr: stderr_tail,
            exit: None,
            killed: false,
            stashed: None,
            last_followed: false,
            token,
        };
        // On an error here, dropping `process` kills and reaps the child.
        spawned.map(|_| process)
    }

    /// Queues one line (a newline is added). Never blocks; a child that stopped reading is
    /// noticed by the next read.
    pub fn send(&mut self, line: String) {
        if let Some(writer) = &self.writer {
            // An error means the writer thread ended (the child closed stdin); reads report why.
            let _ = writer.send(line);
        }
    }

    /// Closes the child's stdin once the queued lines are written.
    pub fn close_stdin(&mut self) {
        self.writer = None;
    }

    /// Whether more output had already arrived right after the last line returned: for a line
    /// that ends the adapter's turn, output it sent unasked.
    pub fn last_line_followed(&self) -> bool {
        self.last_followed
    }

    /// A stdout line already read and waiting, without blocking.
    pub fn pending_line(&mut self) -> Option<Vec<u8>> {
        if self.stashed.is_some() {
            return None;
        }
        match self.lines.try_recv() {
            Ok(StdoutEvent::Line(line, _)) => Some(line),
            Ok(other) => {
                self.stashed = Some(other);
                None
            }
            Err(_) => None,
        }
    }

    /// Waits for the next stdout line until `deadline`.
    pub fn next_line(&mut self, deadline: Instant) -> Next {
        self.last_followed = false;
        match self.stashed.take() {
            Some(StdoutEvent::Line(line, followed)) => {
                self.last_followed = followed;
                return Next::Line(line);
            }
            Some(StdoutEvent::Oversize) => return Next::Oversize,
            Some(StdoutEvent::Closed) => return Next::Closed(self.wait_exit(deadline)),
            None => {}
        }
        let mut deadline = deadline;
        let mut exited = false;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return if exited {
                    Next::Closed(self.exit)
                } else {
                    Next::TimedOut
                };
            }
            match self.lines.recv_timeout((deadline - now).min(POLL)) {
                Ok(StdoutEvent::Line(line, followed)) => {
                    self.last_followed = followed;
                    return Next::Line(line);
                }
                Ok(StdoutEvent::Oversize) => return Next::Oversize,
                Ok(StdoutEvent::Closed) | Err(RecvTimeoutError::Disconnected) => {
                    return Next::Closed(self.wait_exit(deadline));
                }
                Err(RecvTimeoutError::Timeout) => {
                    // The child may have exited while something it started keeps stdout open:
                    // read what is already in flight, then report the exit.
                    if !exited && self.peek_exit().is_some() {
                        exited = true;
                        deadline = deadline.min(Instant::now() + AFTER_EXIT_GRACE);
                    }
                }
            }
        }
    }

    /// The child's exit state if it has ended, without reaping it (so its process group id
    /// cannot be reused before [`AdapterProcess::kill`]).
    pub fn peek_exit(&mut self) -> Option<ExitState> {
        if self.exit.is_none() {
            self.exit = peek_exit(self.group);
        }
        self.exit
    }

    /// Waits until the child exits or `deadline` passes.
    pub fn wait_exit(&mut self, deadline: Instant) -> Option<ExitState> {
        loop {
            if let Some(exit) = self.peek_exit() {
                return Some(exit);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            thread::sleep((deadline - now).min(Duration::from_millis(5)));
        }
    }

    /// Kills every process of the group and every descendant, also those that left the group
    /// or were orphaned (and reparented to the kit, a child subreaper), and reaps the latter.
    /// Idempotent.
    pub fn kill(&mut self) {
        if !self.killed {
            self.killed = true;
            kill_descendants(self.group, &self.token);
            kill_group(self.group);
            // The child itself, in case it left the group.
            let _ = self.child.kill();
        }
    }

    /// The last stderr lines. Waits up to `settle` for stderr to close (after an exit or a kill
    /// the tail is then complete); a live child's tail is returned as it is.
    pub fn stderr_tail(&self, settle: Duration) -> Vec<String> {
        let until = Instant::now() + settle;
        loop {
            let closed = self.stderr.lock().map(|tail| tail.closed).unwrap_or(true);
            if closed || Instant::now() >= until {
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
        self.stderr.lock().map(|tail| tail.snapshot()).unwrap_or_default()
    }

    /// Forgets the stderr lines written so far: a reused adapter's verdict shows only its
    /// current run's. "So far" is exact, not up to the reader thread's pace: bytes still in the
    /// pipe are read first (for at most [`STDERR_DRAIN`]), so a line the adapter wrote before the
    /// kit read its answer on stdout never shows in the next run's verdict, whichever runs
    /// shared the process (a report must not depend on `--jobs`).
    pub fn clear_stderr_tail(&self) {
        self.drained(|tail| {
            tail.lines.clear();
            tail.partial.clear();
            tail.partial_cut = false;
        });
    }

    /// The stderr lines written so far, exactly, by an adapter that goes on running (the
    /// verdict of a run it reported broken and recovered from): bytes still in the pipe are read
    /// first, as [`clear_stderr_tail`](Self::clear_stderr_tail) reads them.
    pub fn drained_stderr_tail(&self) -> Vec<String> {
        self.drained(|tail| tail.snapshot()).unwrap_or_default()
    }

    /// Applies `f` to the tail once the pipe holds no unread byte (or after [`STDERR_DRAIN`]).
    fn drained<T>(&self, f: impl FnOnce(&mut StderrTail) -> T) -> Option<T> {
        let until = Instant::now() + STDERR_DRAIN;
        loop {
            let Ok(mut tail) = self.stderr.lock() else { return None };
            let pending = match (tail.closed, tail.fd) {
                (false, Some(fd)) => bytes_in_pipe(fd),
                _ => 0,
            };
            if pending == 0 || Instant::now() >= until {
                return Some(f(&mut tail));
            }
            drop(tail);
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// The child's pid (also its process group id).
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for AdapterProcess {
    fn drop(&mut self) {
        self.writer = None;
        self.kill();
        // Off the list before it is reaped: once reaped, its pid (the group's id) may be reused.
        living_adapters().groups.remove(&self.group);
        // SIGKILL cannot be ignored, so this returns promptly.
        let _ = self.child.wait();
    }
}

/// `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)`: the exit state, leaving the child waitable.
fn peek_exit(pid: i32) -> Option<ExitState> {
    // SAFETY: siginfo_t is plain data, valid when zeroed; waitid writes into it and nothing else.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: `info` outlives the call.
    let result = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    if result != 0 {
        return None;
    }
    // SAFETY: after a successful waitid with WEXITED, si_pid and si_status are the fields set
    // (si_pid is 0 when no child has changed state yet).
    let (child_pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if child_pid == 0 {
        return None;
    }
    match info.si_code {
        libc::CLD_EXITED => Some(ExitState::Code(status)),
        libc::CLD_KILLED | libc::CLD_DUMPED => Some(ExitState::Signal(status)),
        _ => None,
    }
}

fn read_stdout(stdout: ChildStdout, lines: SyncSender<StdoutEvent>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if buffer.is_empty() {
            if !line.is_empty() {
                let _ = lines.send(StdoutEvent::Line(std::mem::take(&mut line), false));
            }
            break;
        }
        let (taken, complete) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => {
                line.extend_from_slice(&buffer[..end]);
                (end + 1, true)
            }
            None => {
                line.extend_from_slice(buffer);
                (buffer.len(), false)
            }
        };
        reader.consume(taken);
        if line.len() > LINE_BYTES_MAX {
            let _ = lines.send(StdoutEvent::Oversize);
            return;
        }
        if complete {
            let followed = !reader.buffer().is_empty();
            if lines
                .send(StdoutEvent::Line(std::mem::take(&mut line), followed))
                .is_err()
            {
                return;
            }
        }
    }
    let _ = lines.send(StdoutEvent::Closed);
}

/// How long [`AdapterProcess::clear_stderr_tail`] waits for the reader to take what is still in
/// the pipe.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// Bytes written to the pipe `fd` and not read yet.
fn bytes_in_pipe(fd: i32) -> usize {
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which points at `count`; `fd` is
    // open: the reader closes it only after marking the tail closed, under the same lock.
    let status = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut count) };
    if status < 0 {
        0
    } else {
        usize::try_from(count).unwrap_or(0)
    }
}

/// Reads the adapter's stderr into `tail`. It waits for bytes without the lock and reads them
/// with it, so a byte is never between the pipe and the tail while another thread holds the
/// lock.
fn read_stderr(mut stderr: ChildStderr, tail: Arc<Mutex<StderrTail>>) {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stderr);
    let mut buffer = [0u8; 8192];
    loop {
        let mut ready = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the descriptor this thread owns.
        if unsafe { libc::poll(&mut ready, 1, -1) } < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        let Ok(mut locked) = tail.lock() else { break };
        match stderr.read(&mut buffer) {
            Ok(0) => break,
            Ok(count) => locked.push_bytes(&buffer[..count]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    if let Ok(mut tail) = tail.lock() {
        tail.closed = true;
        tail.fd = None;
    }
}

fn write_stdin(mut stdin: std::process::ChildStdin, lines: Receiver<String>) {
    for mut line in lines {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).and_then(|()| stdin.flush()).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_keeps_the_last_lines_and_cuts_long_ones() {
        let mut tail = StderrTail::default();
        for index in 0..100 {
            tail.push_bytes(format!("line {index}\n").as_bytes());
        }
        tail.push_bytes(&vec![b'x'; STDERR_LINE_BYTES_MAX + 10]);
        tail.push_bytes(b"\npartial");
        let lines = tail.snapshot();
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(lines.last().map(String::as_str), Some("partial"));
        assert!(lines[lines.len() - 2].ends_with('…'));
        assert_eq!(lines[lines.len() - 2].len(), STDERR_LINE_BYTES_MAX + '…'.len_utf8());
    }

    #[test]
    fn a_line_split_across_reads_is_one_line() {
        let mut tail = StderrTail::default();
        tail.push_bytes(b"hel");
        tail.push_bytes(b"lo\r\nworld\n");
        assert_eq!(tail.snapshot(), vec!["hello".to_string(), "world".to_string()]);
    }

    #[test]
    fn exit_states_read_well() {
        assert_eq!(ExitState::Code(3).to_string(), "exit status 3");
        assert_eq!(
            ExitState::Signal(libc::SIGSEGV).to_string(),
            "killed by signal 11 (SIGSEGV)"
        );
    }

    #[test]
    fn a_child_is_read_and_reaped() {
        let mut process = AdapterProcess::spawn("echo one; echo two >&2; exit 4").expect("sh runs");
        let deadline = Instant::now() + Duration::from_secs(10);
        match process.next_line(deadline) {
            Next::Line(line) => assert_eq!(line, b"one"),
            other => panic!("{other:?}"),
        }
        match process.next_line(deadline) {
            Next::Closed(Some(ExitState::Code(4))) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(process.stderr_tail(Duration::from_secs(5)), vec!["two".to_string()]);
    }

    /// Lines written to stderr before a stdout line are gone once the kit, having read that
    /// stdout line, clears the tail, however far behind the stderr reader is. The test holds
    /// the tail's lock while the adapter writes, so the reader is as far behind as it can be:
    /// all 56 KB are still in the pipe (which holds 64 KB) when the answer is read.
    #[test]
    fn clearing_forgets_every_line_written_before_the_answer() {
        let script = "for i in 1 2 3 4 5; do yes before | head -n 8000 >&2; echo answer-$i; read reply; done";
        let mut process = AdapterProcess::spawn(script).expect("sh runs");
        let deadline = Instant::now() + Duration::from_secs(30);
        for round in 1..=5 {
            let tail = Arc::clone(&process.stderr);
            let held = tail.lock().expect("the tail");
            match process.next_line(deadline) {
                Next::Line(line) => assert_eq!(line, format!("answer-{round}").into_bytes()),
                other => panic!("{other:?}"),
            }
            drop(held);
            process.clear_stderr_tail();
            thread::sleep(Duration::from_millis(50));
            let left = process.stderr.lock().expect("the tail").snapshot();
            assert!(
                left.is_empty(),
                "round {round}: {} lines outlived the clear",
                left.len()
            );
            process.send("next".into());
        }
    }
}
