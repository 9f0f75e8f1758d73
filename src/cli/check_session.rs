//! `agentsim check-session FILE.jsonl`: judge a Pi session file on disk, read-only.
//!
//! The file is opened for reading only and streamed through a bounded line reader: the command
//! never writes, truncates or repairs (a torn tail is reported, not cut off; that is
//! `FileStore::open`'s job). Exit 0 clean, 1 any finding, 2 not a session file at all.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::json;

use crate::scenario::{clip_message, printable};
use crate::store::{
    check_session, parse_session_from, Limits, SessionFileError, SessionFinding, LINE_BYTES_MAX_DEFAULT,
};

use super::{EXIT_BAD_INPUT, EXIT_PASSED, EXIT_VIOLATION};

#[derive(Args)]
pub struct CheckSessionArgs {
    /// The session file (JSONL: a header line, then one entry per line).
    file: PathBuf,
    #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
    format: CheckFormat,
    /// Reject a line longer than this many bytes (bad input, exit 2).
    #[arg(long, value_name = "N", default_value_t = LINE_BYTES_MAX_DEFAULT)]
    max_line_bytes: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// `FILE:LINE: CODE: message` per finding, then a summary line.
    Human,
    /// One JSON object: `file`, `records`, `findings`, `counts` (per code).
    Json,
}

pub fn run_check_session(args: CheckSessionArgs) -> u8 {
    let file = match std::fs::File::open(&args.file) {
        Ok(file) => file,
        Err(error) => {
            eprintln!(
                "agentsim: {}: cannot read: {error}",
                printable(&args.file.display().to_string())
            );
            return EXIT_BAD_INPUT;
        }
    };
    let limits = Limits {
        line_bytes_max: args.max_line_bytes,
    };
    let parsed = match parse_session_from(BufReader::new(file), limits) {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("agentsim: {}", render_error(&args.file, &error));
            return EXIT_BAD_INPUT;
        }
    };
    let findings = check_session(&parsed);
    let records = parsed.records.len() + usize::from(parsed.header.is_some());
    match args.format {
        CheckFormat::Human => print!("{}", render_human(&args.file, records, &findings)),
        CheckFormat::Json => println!("{}", render_json(&args.file, records, &findings)),
    }
    if findings.is_empty() {
        EXIT_PASSED
    } else {
        EXIT_VIOLATION
    }
}

/// `FILE:LINE: CODE: message`, or `FILE: CODE: message` when no line is to blame.
fn render_error(file: &Path, error: &SessionFileError) -> String {
    let message = clip_message(&error.to_string());
    let file = printable(&file.display().to_string());
    let file = Path::new(&file);
    match error.line() {
        Some(line) => {
            // The error's own text starts with `line N: ` for readers without a file name.
            let prefix = format!("line {line}: ");
            let message = message.strip_prefix(&prefix).unwrap_or(&message);
            format!("{}:{line}: {}: {message}", file.display(), error.code())
        }
        None => format!("{}: {}: {message}", file.display(), error.code()),
    }
}

fn render_human(file: &Path, records: usize, findings: &[SessionFinding]) -> String {
    let file = printable(&file.display().to_string());
    let file = Path::new(&file);
    let mut text = String::new();
    for finding in findings {
        text.push_str(&format!(
            "{}:{}: {}: {}\n",
            file.display(),
            finding.line,
            finding.code,
            // Ids come from the file: a newline or an escape sequence in one must neither split
            // the finding's line nor reach the terminal.
            clip_message(&finding.message)
        ));
    }
    let verdict = match findings.len() {
        0 => "clean".to_string(),
        1 => "1 finding".to_string(),
        count => format!("{count} findings"),
    };
    text.push_str(&format!("{}: {records} records: {verdict}\n", file.display()));
    text
}

fn render_json(file: &Path, records: usize, findings: &[SessionFinding]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for finding in findings {
        *counts.entry(finding.code.as_str()).or_default() += 1;
    }
    let report = json!({
        "file": file.display().to_string(),
        "records": records,
        "findings": findings,
        "counts": counts,
    });
    serde_json::to_string_pretty(&report).unwrap_or_else(|error| format!("{{\"error\":\"{error}\"}}"))
}
