//! `agentsim bench --check-session LINES`: `check-session` on synthetic Pi session files of
//! LINES lines, each run in a child process whose wall time and peak resident memory are
//! measured (`wait4`'s `ru_maxrss`), in both output formats.
//!
//! Two files are written to the system's temporary folder and removed afterwards:
//!
//! - **clean**: what a long coding session looks like: turns of four entries (a user prompt,
//!   an assistant message with text and a tool call, its tool result holding a page of code,
//!   the assistant's answer), a `model_change` every 100 turns, a `compaction` every 250 and,
//!   every 50 turns, a branch: a `branch_summary` whose parent is an answer 10 turns back. No
//!   finding.
//! - **damaged**: the damaged file of the hardening issue: a call, then every other line a tool
//!   result chained below the previous one, all answering that one call. A finding on every
//!   result after the first.
//!
//! Measured, never asserted: the numbers are the machine's, not a contract.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The shape of a generated session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionShape {
    Clean,
    Damaged,
}

impl SessionShape {
    pub fn name(self) -> &'static str {
        match self {
            SessionShape::Clean => "clean",
            SessionShape::Damaged => "damaged",
        }
    }
}

/// One run of a child process, measured.
#[derive(Debug, Clone, Copy)]
pub struct ChildRun {
    pub exit_code: Option<i32>,
    pub elapsed: Duration,
    /// The child's peak resident set, in bytes.
    pub peak_rss_bytes: u64,
}

/// Writes a session file of exactly `lines` lines (the header included) of `shape` to `path`;
/// returns its size in bytes.
pub fn write_session(path: &Path, shape: SessionShape, lines: usize) -> io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut written: u64 = 0;
    let mut emit = |out: &mut BufWriter<File>, line: &str| -> io::Result<()> {
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        written += line.len() as u64 + 1;
        Ok(())
    };
    emit(
        &mut out,
        r#"{"type":"session","version":3,"id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/project"}"#,
    )?;
    match shape {
        SessionShape::Clean => {
            let mut generator = CleanSession::default();
            for index in 1..lines {
                emit(&mut out, &generator.entry(index, index + 1 == lines))?;
            }
        }
        SessionShape::Damaged => {
            for index in 1..lines {
                emit(&mut out, &damaged_entry(index))?;
            }
        }
    }
    out.flush()?;
    Ok(written)
}

/// The entry ids of the generated files: 8 hex digits, as Pi writes them.
fn entry_id(index: usize) -> String {
    format!("{:08x}", index.wrapping_mul(0x9e37_79b1) & 0xffff_ffff)
}

fn timestamp(index: usize) -> String {
    let seconds = index % 60;
    let minutes = (index / 60) % 60;
    let hours = (index / 3600) % 24;
    format!("2026-01-01T{hours:02}:{minutes:02}:{seconds:02}.000Z")
}

const USAGE: &str = r#""api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1200,"output":400,"cacheRead":0,"cacheWrite":0,"totalTokens":1600,"cost":{"input":0.0036,"output":0.006,"cacheRead":0,"cacheWrite":0,"total":0.0096}}"#;

const CODE_PAGE: &str = "fn parse(input: &str) -> Result<Vec<Token>, Error> {\\n    let mut tokens = Vec::new();\\n    for (offset, character) in input.char_indices() {\\n        match character {\\n            ' ' | '\\\\t' => continue,\\n            '(' => tokens.push(Token::Open(offset)),\\n            ')' => tokens.push(Token::Close(offset)),\\n            other => tokens.push(Token::Atom(offset, other)),\\n        }\\n    }\\n    Ok(tokens)\\n}\\n";

/// One entry of a clean session's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnEntry {
    Compaction,
    ModelChange,
    /// Back to the answer of 10 turns ago, with a summary of the branch left.
    Branch,
    Prompt,
    Call,
    Result,
    Answer,
}

/// The clean session: where the next entry hangs and what is left of the current turn.
#[derive(Default)]
struct CleanSession {
    /// The index of the entry the next one hangs below (`None` before the first).
    leaf: Option<usize>,
    turn: usize,
    /// The entries of the current turn still to write, last first.
    pending: Vec<TurnEntry>,
    /// The answers of the last turns, oldest first, for branches.
    answers: VecDeque<usize>,
}

impl CleanSession {
    /// Entry `index`; on the `last` line, a call that would go unanswered is an answer instead.
    fn entry(&mut self, index: usize, last: bool) -> String {
        if self.pending.is_empty() {
            self.pending = vec![TurnEntry::Answer, TurnEntry::Result, TurnEntry::Call, TurnEntry::Prompt];
            let turn = self.turn;
            if turn > 0 && turn.is_multiple_of(50) {
                self.pending.push(TurnEntry::Branch);
            }
            if turn > 0 && turn.is_multiple_of(100) {
                self.pending.push(TurnEntry::ModelChange);
            }
            if turn > 0 && turn.is_multiple_of(250) {
                self.pending.push(TurnEntry::Compaction);
            }
        }
        let kind = match self.pending.pop() {
            Some(TurnEntry::Call) if last => TurnEntry::Answer,
            Some(kind) => kind,
            None => TurnEntry::Prompt,
        };
        let id = entry_id(index);
        let parent = match self.leaf {
            Some(leaf) => format!("\"{}\"", entry_id(leaf)),
            None => "null".to_string(),
        };
        let time = timestamp(index);
        let turn = self.turn;
        let line = match kind {
            TurnEntry::Compaction => format!(
                r#"{{"type":"compaction","id":"{id}","parentId":{parent},"timestamp":"{time}","summary":"The user is writing a parser; the lexer was checked and is fine.","firstKeptEntryId":"{id}","tokensBefore":48213}}"#
            ),
            TurnEntry::ModelChange => format!(
                r#"{{"type":"model_change","id":"{id}","parentId":{parent},"timestamp":"{time}","provider":"anthropic","modelId":"claude-sonnet-4-5"}}"#
            ),
            TurnEntry::Branch => {
                let from = self.answers.front().copied().unwrap_or(index - 1);
                format!(
                    r#"{{"type":"branch_summary","id":"{id}","parentId":"{}","timestamp":"{time}","fromId":{parent},"summary":"Tried another approach to the tokenizer; abandoned."}}"#,
                    entry_id(from)
                )
            }
            TurnEntry::Prompt => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"user","content":[{{"type":"text","text":"Now look at the next function of src/parser.rs (turn {turn}) and tell me what is wrong."}}],"timestamp":{turn}}}}}"#
            ),
            TurnEntry::Call => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"assistant","content":[{{"type":"text","text":"Reading the file."}},{{"type":"toolCall","id":"toolu_{turn:08}","name":"read","arguments":{{"path":"src/parser.rs","offset":{turn}}}}}],{USAGE},"stopReason":"toolUse","timestamp":{turn}}}}}"#
            ),
            TurnEntry::Result => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"toolResult","toolCallId":"toolu_{turn:08}","toolName":"read","content":[{{"type":"text","text":"{CODE_PAGE}"}}],"isError":false,"timestamp":{turn}}}}}"#
            ),
            TurnEntry::Answer => {
                self.turn += 1;
                self.answers.push_back(index);
                if self.answers.len() > 10 {
                    self.answers.pop_front();
                }
                format!(
                    r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"assistant","content":[{{"type":"text","text":"The function skips tabs but not newlines; a newline inside an atom splits it in two."}}],{USAGE},"stopReason":"stop","timestamp":{turn}}}}}"#
                )
            }
        };
        self.leaf = Some(index);
        line
    }
}

/// Line `index` (1-based after the header) of the damaged file: a user prompt, the call, then
/// results chained one below the other, all answering the call.
fn damaged_entry(index: usize) -> String {
    let id = entry_id(index);
    let time = timestamp(index);
    match index {
        1 => format!(
            r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"{time}","message":{{"role":"user","content":[{{"type":"text","text":"go"}}],"timestamp":1}}}}"#
        ),
        2 => format!(
            r#"{{"type":"message","id":"{id}","parentId":"{}","timestamp":"{time}","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"call-1","name":"read","arguments":{{}}}}],{USAGE},"stopReason":"toolUse","timestamp":2}}}}"#,
            entry_id(1)
        ),
        _ => format!(
            r#"{{"type":"message","id":"{id}","parentId":"{}","timestamp":"{time}","message":{{"role":"toolResult","toolCallId":"call-1","toolName":"read","content":[{{"type":"text","text":"ok"}}],"isError":false,"timestamp":3}}}}"#,
            entry_id(index - 1)
        ),
    }
}

/// Runs `agentsim check-session FILE [--format json]` (this same binary) with its output
/// thrown away, and measures it.
pub fn run_check_session(binary: &Path, file: &Path, json: bool) -> io::Result<ChildRun> {
    let mut command = Command::new(binary);
    command.arg("check-session").arg(file);
    if json {
        command.args(["--format", "json"]);
    }
    run_measured(command)
}

/// Runs `command` with no input and its output thrown away, and measures its wall time and
/// peak resident memory.
pub fn run_measured(mut command: Command) -> io::Result<ChildRun> {
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let started = Instant::now();
    let child = command.spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // The child is reaped here, not by `Child::wait`, so that its resource use comes with it.
    let reaped = loop {
        // SAFETY: `pid` is our own child, not yet reaped; both pointers are to live locals.
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        break reaped;
    };
    let elapsed = started.elapsed();
    if reaped != pid {
        return Err(io::Error::last_os_error());
    }
    let exit_code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ok(ChildRun {
        exit_code,
        elapsed,
        // Linux reports `ru_maxrss` in kibibytes.
        peak_rss_bytes: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
    })
}

/// A generated file under the system's temporary folder, removed on drop.
pub struct TempSession(pub PathBuf);

impl TempSession {
    pub fn new(shape: SessionShape, lines: usize) -> TempSession {
        TempSession(std::env::temp_dir().join(format!(
            "agentsim-bench-{}-{lines}-{}.jsonl",
            shape.name(),
            std::process::id()
        )))
    }
}

impl Drop for TempSession {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{check_session, parse_session, FindingCode, Limits};

    fn generated(shape: SessionShape, lines: usize) -> Vec<u8> {
        let file = TempSession::new(shape, lines);
        let bytes = write_session(&file.0, shape, lines).expect("the file writes");
        let text = std::fs::read(&file.0).expect("the file reads");
        assert_eq!(text.len() as u64, bytes);
        assert_eq!(text.iter().filter(|byte| **byte == b'\n').count(), lines);
        text
    }

    #[test]
    fn the_clean_session_has_no_finding_and_branches() {
        // Whatever entry of a turn the last line falls on, no call goes unanswered.
        for lines in 3_000..3_008 {
            let text = generated(SessionShape::Clean, lines);
            let parsed = parse_session(&text, Limits::default()).expect("a session file");
            assert_eq!(check_session(&parsed), Vec::new(), "{lines} lines");
        }
        let text = generated(SessionShape::Clean, 3_000);
        let text = String::from_utf8(text).expect("UTF-8");
        for kind in ["compaction", "model_change", "branch_summary"] {
            assert!(text.contains(&format!("{{\"type\":\"{kind}\"")), "no {kind}");
        }
    }

    #[test]
    fn the_damaged_session_has_a_finding_on_every_result_after_the_first() {
        let text = generated(SessionShape::Damaged, 1_000);
        let parsed = parse_session(&text, Limits::default()).expect("a session file");
        let findings = check_session(&parsed);
        assert_eq!(findings.len(), 1_000 - 4);
        assert!(findings
            .iter()
            .all(|finding| finding.code == FindingCode::ToolDuplicateResult));
    }
}
