//! `agentsim check-session FILE.jsonl`: judge a Pi session file on disk, read-only.
//!
//! The file is opened for reading only and streamed through a bounded line reader, keeping only
//! the tree's index (`store::check`); the report is written finding by finding as it is
//! rendered. The command never writes, truncates or repairs (a torn tail is reported, not cut
//! off; that is `FileStore::open`'s job). Exit 0 clean, 1 any finding, 2 not a session file at
//! all.

use std::collections::BTreeMap;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::{Serialize, Serializer};

use crate::scenario::{clip_message, printable};
use crate::store::{check_session_from, Limits, SessionCheck, SessionFileError, LINE_BYTES_MAX_DEFAULT};

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
    // Only a regular file is opened and read: `/dev/zero` would never end, a FIFO nobody
    // writes would block.
    match std::fs::metadata(&args.file) {
        Ok(metadata) if !metadata.is_file() => {
            eprintln!(
                "agentsim: {}: not a regular file but {}: check-session reads a session file",
                printable(&args.file.display().to_string()),
                crate::scenario::kind_of(&metadata.file_type())
            );
            return EXIT_BAD_INPUT;
        }
        _ => {}
    }
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
    let check = match check_session_from(BufReader::with_capacity(1 << 20, file), limits) {
        Ok(check) => check,
        Err(error) => {
            eprintln!("agentsim: {}", render_error(&args.file, &error));
            return EXIT_BAD_INPUT;
        }
    };
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let written = match args.format {
        CheckFormat::Human => write_human(&mut out, &args.file, &check),
        CheckFormat::Json => write_json(&mut out, &args.file, &check),
    };
    // A reader that went away (`| head`) does not change the verdict.
    if let Err(error) = written.and_then(|()| out.flush()) {
        if error.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("agentsim: cannot write the report: {error}");
        }
    }
    if check.is_empty() {
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

/// `FILE:LINE: CODE: message` per finding, then `FILE: N records: VERDICT`.
fn write_human(out: &mut impl Write, file: &Path, check: &SessionCheck) -> io::Result<()> {
    let file = printable(&file.display().to_string());
    for finding in check.findings() {
        writeln!(
            out,
            "{file}:{}: {}: {}",
            finding.line,
            finding.code,
            // Ids come from the file: a newline or an escape sequence in one must neither split
            // the finding's line nor reach the terminal.
            clip_message(&finding.message)
        )?;
    }
    let verdict = match check.len() {
        0 => "clean".to_string(),
        1 => "1 finding".to_string(),
        count => format!("{count} findings"),
    };
    writeln!(out, "{file}: {} records: {verdict}", check.records())
}

/// One pretty-printed JSON object: `file`, `records`, `findings`, `counts` (per code), written
/// finding by finding.
fn write_json(out: &mut impl Write, file: &Path, check: &SessionCheck) -> io::Result<()> {
    #[derive(Serialize)]
    struct Report<'a> {
        file: String,
        records: usize,
        findings: Findings<'a>,
        counts: BTreeMap<&'static str, usize>,
    }
    struct Findings<'a>(&'a SessionCheck);
    impl Serialize for Findings<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_seq(self.0.findings())
        }
    }
    let report = Report {
        file: file.display().to_string(),
        records: check.records(),
        findings: Findings(check),
        counts: check.counts(),
    };
    serde_json::to_writer_pretty(&mut *out, &report).map_err(io::Error::from)?;
    writeln!(out)
}
