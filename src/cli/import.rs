//! `agentsim import SESSION.jsonl [--leaf ID] [--from ID] [-o FILE] [--check]`: a session file
//! becomes a scenario (`import`), and with `--check` the reference's run of it is compared with
//! the file.
//!
//! The scenario goes to `-o FILE` (written whole, `whole_file`) or to stdout; the report (the
//! file's damage as `check-session` gives it, the import's notes, the replay, and the check's
//! verdict) goes to stdout with `-o`, to stderr without. Exit 0: written (and, with `--check`,
//! the reference stores what the file holds); 1: with `--check`, the reference stores something
//! else (the first differing entry is named); 2: bad input, at its file, line and field; 4: the
//! scenario could not be written.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::import::{check_imported, import_session, Agreement, CheckReport, Imported, Point};
use crate::scenario::{clip_message, printable};

use super::{EXIT_BAD_INPUT, EXIT_OUTPUT, EXIT_PASSED, EXIT_VIOLATION};

#[derive(Args)]
pub struct ImportArgs {
    /// The session file (Pi's JSONL: a header line, then one entry per line).
    file: PathBuf,
    /// The last entry of the path to replay (default: the file's last entry).
    #[arg(long, value_name = "ID")]
    leaf: Option<String>,
    /// The first entry to replay, a user message on the path (default: the path's last one).
    #[arg(long, value_name = "ID")]
    from: Option<String>,
    /// Write the scenario here (default: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Run the scenario on the reference and compare what it stores with the file.
    #[arg(long)]
    check: bool,
}

pub fn run_import(args: ImportArgs) -> u8 {
    let point = Point {
        leaf: args.leaf.clone(),
        from: args.from.clone(),
    };
    let imported = match import_session(&args.file, &point) {
        Ok(imported) => imported,
        Err(error) => {
            eprintln!("agentsim: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut report = render_import(&imported);
    match &args.output {
        Some(output) => {
            if let Err(error) = crate::whole_file::write(output, &imported.text) {
                eprintln!(
                    "agentsim: {}: cannot write the scenario: {error}",
                    printable(&output.display().to_string())
                );
                return EXIT_OUTPUT;
            }
            report.push_str(&format!("wrote {}\n", printable(&output.display().to_string())));
        }
        None => {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(imported.text.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return EXIT_OUTPUT;
            }
        }
    }
    let mut code = EXIT_PASSED;
    if args.check {
        match check_imported(&imported) {
            Ok(check) => {
                report.push_str(&render_check(&imported, &check));
                if !check.agrees() {
                    code = EXIT_VIOLATION;
                }
            }
            Err(error) => {
                eprint!("{report}");
                eprintln!("agentsim: {error}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    if args.output.is_some() {
        print!("{report}");
    } else {
        eprint!("{report}");
    }
    code
}

/// The damage, the notes and the replay, one line each.
pub fn render_import(imported: &Imported) -> String {
    let file = printable(&imported.file.display().to_string());
    let mut out = String::new();
    for finding in &imported.damage {
        out.push_str(&format!(
            "{file}:{}: {}: {}\n",
            finding.line,
            finding.code,
            clip_message(&finding.message)
        ));
    }
    for note in &imported.notes {
        out.push_str(&format!(
            "{file}:{}: import: {}: {}\n",
            note.line,
            printable(&note.field),
            clip_message(&note.message)
        ));
    }
    let scenario = &imported.scenario;
    let count = |kind: crate::model::OperationKind| scenario.operations.iter().filter(|spec| spec.op == kind).count();
    let answers: usize = scenario.tools.iter().map(|tool| tool.results.len()).sum();
    let (first, last) = (&imported.replayed[0], &imported.replayed[imported.replayed.len() - 1]);
    out.push_str(&format!(
        "{file}: replays lines {} to {} ({} entries) on {} restored: {} prompts, {} steers, {} model answers, {} tool answers\n",
        first.line,
        last.line,
        imported.replayed.len(),
        imported.restored,
        count(crate::model::OperationKind::Prompt),
        count(crate::model::OperationKind::Steer),
        scenario.model.len(),
        answers
    ));
    out
}

/// The check's verdict: the reference stores what the file holds, or the first difference.
pub fn render_check(imported: &Imported, check: &CheckReport) -> String {
    let file = printable(&imported.file.display().to_string());
    let mut out = String::new();
    if let Some(cause) = &check.restore_failed {
        out.push_str(&format!(
            "{file}: the reference refuses the restored session: {}\n",
            clip_message(cause)
        ));
    }
    match &check.agreement {
        Agreement::Same => {
            let ids = if check.ids_as_recorded {
                "as recorded"
            } else {
                "by order"
            };
            let times = if check.times_as_recorded {
                "as recorded"
            } else {
                "by order"
            };
            out.push_str(&format!(
                "{file}: same: the reference stores the {} entries the file holds (ids {ids}, times {times})\n",
                check.file_entries
            ));
        }
        Agreement::Differs(difference) => {
            let place = match difference.line {
                Some(line) => format!("{file}:{line}"),
                None => file.clone(),
            };
            out.push_str(&format!(
                "{place}: differs: entry {} of the replay, field `{}`: the file holds {}, the reference stores {} ({} entries in the file, {} stored)\n",
                difference.entry,
                printable(&difference.field),
                clip_message(&difference.file),
                clip_message(&difference.reference),
                check.file_entries,
                check.reference_entries
            ));
        }
    }
    out
}
