//! The command line: argument parsing and output formats. `main.rs` only calls [`main`].
//!
//! Exit codes: 0 every case passed; 1 a rule was violated; 2 bad input (scenario, flags);
//! 3 the implementation crashed, hung or broke the protocol. `check-session` uses the same
//! numbers: 0 a clean session file, 1 any finding, 2 not a session file (or unreadable).

mod bench;
mod check_session;
mod coverage;
mod crash_test;
mod explore;
mod findings;
mod import;
mod matrix;
mod mutants;
mod pool;
mod recorded;
mod report;
mod run;
mod scenarios;
mod signals;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::implementation::Implementation;

use clap::{Parser, Subcommand, ValueEnum};

use crate::run::{CaseReport, RunError, Verdict};
use crate::scenario;
use crate::sim::StrategyKind;
use crate::suite;
use crate::zoo::Mutant;

pub const EXIT_PASSED: u8 = 0;
pub const EXIT_VIOLATION: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
pub const EXIT_BROKEN: u8 = 3;
/// The kit could not write its own output (standard output closed or full): what it found is
/// lost, so it is neither a pass nor a verdict.
pub const EXIT_OUTPUT: u8 = 4;

#[derive(Parser)]
#[command(
    name = "agentsim",
    version,
    about = "Deterministic simulation and conformance kit for agent Runtimes of the Pi family"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run scenarios against the reference Runtime (or an implementation: `--impl`) and check
    /// every rule on every trace.
    Run {
        /// Scenario files or folders (default: the built-in corpus, `agentsim scenarios list`). A
        /// path that names nothing on disk may name built-in scenarios: `persist`, `wiring/walkthrough`.
        paths: Vec<PathBuf>,
        /// scripted | random | pct[:DEPTH[:K]] | exhaustive[:BOUND] | exhaustive-plain[:BOUND]
        /// (an exhaustive strategy as one run is the enumeration's first schedule)
        #[arg(long, default_value = "scripted", value_parser = parse_strategy)]
        strategy: StrategyKind,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Run a deliberately broken reference (one of the bug zoo's mutants, src/zoo/; `agentsim
        /// mutants` lists them).
        #[arg(long, value_parser = crate::run::parse_mutant)]
        mutant: Option<Mutant>,
        /// Run an implementation behind the adapter protocol (`sh -c CMD`; one process per
        /// scenario for protocol 1, reused across scenarios for protocol 2; docs/protocol.md)
        /// instead of the in-process reference.
        #[arg(long = "impl", value_name = "CMD")]
        implementation: Option<String>,
        /// Bound on every wait for the adapter, in milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 10_000)]
        step_timeout_ms: u64,
        /// Adapter processes to run in parallel with `--impl` (default: the number of cores).
        /// The report is the same whatever N.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
        jobs: Option<u64>,
        /// With `--impl`: run every scenario twice, in a fresh and in a reused adapter process,
        /// and give a case whose traces differ the verdict `subject.nondeterministic`.
        #[arg(long)]
        check_determinism: bool,
        /// Expected deviations (expectations/<impl>.json): exit 0 only when the failures are
        /// exactly the listed ones.
        #[arg(long, value_name = "FILE")]
        expect: Option<PathBuf>,
        /// Write one HTML page per failing case (timeline, session tree, violations, the
        /// divergence from the reference with `--impl`) and an index.html to DIR.
        #[arg(long, value_name = "DIR")]
        html_dir: Option<PathBuf>,
        /// Write one recording per case (its scenario, who ran it and its whole trace) as
        /// DIR/<name>.json, for `replay --recorded` and `agentsim recordings`.
        #[arg(long, value_name = "DIR")]
        record: Option<PathBuf>,
        #[command(flatten)]
        judging: crate::run::Judging,
        /// With `--impl`: show the raw first divergence from the reference, timestamps and
        /// appended ids included (by default those values, which the seed leaves open, are set
        /// aside and the first divergence that matters is shown).
        #[arg(long)]
        raw_divergence: bool,
    },
    /// Run each scenario under many schedules (seeds or exhaustive), checking every rule.
    Explore(explore::ExploreArgs),
    /// Run the corpus against each deliberate bug of the reference, and report what kills it.
    Mutants(mutants::MutantsArgs),
    /// Measure the kit's speed: schedules per second, scheduler overhead, exhaustive time.
    Bench(bench::BenchArgs),
    /// Check a Pi session file (JSONL), read-only: lost header, orphans, cycles, tool calls
    /// without results, entries between a call and its result, a torn last line.
    CheckSession(check_session::CheckSessionArgs),
    /// The built-in corpus: list its scenarios, show one, or export them as files.
    #[command(subcommand)]
    Scenarios(scenarios::ScenariosCommand),
    /// Turn a Pi session file into a scenario; with --check, compare what the reference stores.
    Import(import::ImportArgs),
    /// Serve the reference Runtime as an adapter on stdin/stdout (the protocol of docs/protocol.md).
    Serve {
        /// Serve a deliberately broken reference.
        #[arg(long, value_parser = crate::run::parse_mutant)]
        mutant: Option<Mutant>,
        /// The protocol version `hello` says: 2 (one process for many runs) or 1 (the kit
        /// starts one process per run).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
        protocol: u32,
    },
    /// Crash the store host at many points of a networked run and count the acknowledged
    /// entries lost (exit 1 when any is).
    CrashTest(crash_test::CrashTestArgs),
    /// Several implementations side by side: one HTML page and one markdown table from their
    /// JSON reports (`run --impl CMD --format json --expect FILE`).
    Dashboard {
        /// JSON reports, each optionally with the folder of its case pages (`REPORT.json=DIR`,
        /// from `run --html-dir DIR`), in the order of the columns.
        #[arg(required = true, value_name = "REPORT.json[=PAGES_DIR]")]
        reports: Vec<String>,
        /// Write the HTML page here.
        #[arg(long, value_name = "OUT.html")]
        html: Option<PathBuf>,
        /// Write the markdown table here (default: standard output).
        #[arg(long, value_name = "OUT.md")]
        markdown: Option<PathBuf>,
    },
    /// Print one scenario's trace, with violations marked at their lines.
    /// Replay every recording (`run --record`) on every implementation named by `--on`
    /// (`reference`, or NAME=CMD for an adapter) and print which pairs agree.
    Recordings {
        #[arg(value_name = "FILE|DIR", required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_name = "NAME=CMD|reference", value_parser = recorded::parse_on, required = true)]
        on: Vec<recorded::On>,
    },
    Replay {
        #[command(flatten)]
        run: crate::run::ReplayArgs,
        /// FILE is a recording (`run --record`): re-feed its inputs to the implementation
        /// (`--impl`, `--mutant`, or the reference) and report the first output that differs.
        #[arg(long)]
        recorded: bool,
        /// Print the trace as JSON instead of lines.
        #[arg(long)]
        json: bool,
        /// Also write the case as one self-contained HTML page (timeline, session tree,
        /// violations; with `--impl`, the divergence from the reference).
        #[arg(long, value_name = "OUT.html")]
        html: Option<PathBuf>,
    },
}

/// Why a given choice sequence does not describe the run it replayed: a choice out of range
/// at its step (the scheduler would have clamped it), or more choices than the run made.
fn choices_problem(given: &[usize], taken: &[(usize, usize)]) -> Option<String> {
    for (step, (choice, (_, offered))) in given.iter().zip(taken).enumerate() {
        if choice >= offered {
            return Some(format!(
                "choice {choice} at step {step} is out of range: that step offered {offered} choices (0 to {})",
                offered.saturating_sub(1)
            ));
        }
    }
    if given.len() > taken.len() {
        return Some(format!(
            "{} choices given, but the run made only {} choices",
            given.len(),
            taken.len()
        ));
    }
    None
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
    Junit,
    /// The conformance matrix: one row per rule, then the failing scenarios.
    Markdown,
}

fn parse_strategy(text: &str) -> Result<StrategyKind, String> {
    StrategyKind::parse(text)
}

/// Parses a command line (`args[0]` is the program name) without running it: `Err` holds
/// clap's message. Keeps documented commands honest (docs/ci.md's test).
pub fn parse_args<I, T>(args: I) -> Result<(), String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args).map(|_| ()).map_err(|error| error.to_string())
}

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() {
                EXIT_BAD_INPUT
            } else {
                EXIT_PASSED
            };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    // `serve` is an adapter: its kit ends it. Every other command stops its adapters first.
    if !matches!(cli.command, Command::Serve { .. }) {
        signals::install();
        signals::install_output_guard();
    }
    let code = match cli.command {
        Command::Explore(args) => explore::run_explore(args),
        Command::Mutants(args) => mutants::run_mutants(args),
        Command::Bench(args) => bench::run_bench(args),
        Command::CheckSession(args) => check_session::run_check_session(args),
        Command::Import(args) => import::run_import(args),
        Command::CrashTest(args) => crash_test::run_crash_test(args),
        Command::Dashboard {
            reports,
            html,
            markdown,
        } => dashboard(&reports, html.as_deref(), markdown.as_deref()),
        Command::Run {
            paths,
            strategy,
            seed,
            format,
            mutant,
            implementation,
            step_timeout_ms,
            expect,
            html_dir,
            record,
            jobs,
            check_determinism,
            judging,
            raw_divergence,
        } => run::run(run::RunArgs {
            paths,
            strategy,
            seed,
            format,
            mutant,
            implementation,
            step_timeout: Duration::from_millis(step_timeout_ms),
            expect,
            html_dir,
            record,
            jobs: jobs.map_or_else(default_jobs, |jobs| jobs as usize),
            check_determinism,
            selection: judging.selection(),
            raw_divergence,
        }),
        Command::Serve { mutant, protocol } => run::serve(mutant, protocol),
        Command::Scenarios(command) => scenarios::run_scenarios(command),
        Command::Recordings { paths, on } => recorded::matrix(&paths, &on),
        Command::Replay {
            run, recorded: true, ..
        } => {
            let implementation = match &run.implementation {
                Some(command) => Implementation::adapter(command.clone(), Duration::from_millis(run.step_timeout_ms)),
                None => Implementation::reference(),
            }
            .with_mutant(run.mutant);
            recorded::replay_recorded(&run.file, &implementation)
        }
        Command::Replay { run, json, html, .. } => replay(run, json, html.as_deref()),
    };
    ExitCode::from(signals::finish(code))
}

/// `--jobs`' default: the number of cores.
fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The cases of `run`'s human report and its closing counts (`run` prints what the corpus
/// comes to between them), for tests that judge what reaches a terminal.
pub fn human_report(reports: &[CaseReport]) -> String {
    let mut text = report::human_cases(reports);
    text.push_str(&report::summary(reports));
    text
}

/// `reports` as `run --format junit` prints them.
pub fn junit_report(reports: &[CaseReport]) -> String {
    report::junit(reports)
}

/// The exit code for a set of cases: the worst verdict wins (3 over 2 over 1).
pub fn exit_code(reports: &[CaseReport]) -> u8 {
    let mut code = EXIT_PASSED;
    for report in reports {
        let this = match &report.verdict {
            Verdict::Passed | Verdict::NotApplicable { .. } => EXIT_PASSED,
            Verdict::Failed => EXIT_VIOLATION,
            Verdict::BadScenario(_) => EXIT_BAD_INPUT,
            Verdict::Broken(failure) if failure.is_bad_input() => EXIT_BAD_INPUT,
            Verdict::Broken(_) => EXIT_BROKEN,
        };
        code = code.max(this);
    }
    code
}

/// `agentsim replay`: one run, its trace printed with the violations marked (or as JSON).
fn replay(args: crate::run::ReplayArgs, json: bool, html: Option<&std::path::Path>) -> u8 {
    let bad_input = |error: &dyn std::fmt::Display| {
        eprintln!("agentsim: {error}");
        EXIT_BAD_INPUT
    };
    let folder =
        |path: &std::path::Path| suite::is_folder(path).then(|| scenario::printable(&path.display().to_string()));
    if let Some(folder) = folder(&args.file) {
        return bad_input(&RunError::ScenarioFolder(folder));
    }
    let loaded = match suite::load_corpus(std::slice::from_ref(&args.file)) {
        Ok(mut corpus) => corpus.swap_remove(0),
        Err(error) => return bad_input(&error),
    };
    let run = match args.into_run() {
        Ok(run) => run,
        Err(error) => return bad_input(&error),
    };
    if let Some(folder) = run.after.as_ref().and_then(|(path, _)| folder(path)) {
        return bad_input(&RunError::AfterFolder(folder));
    }
    let case = run.execute(&loaded);
    if let (Some(given), Some(outcome)) = (run.choices(), &case.outcome) {
        if let Some(problem) = choices_problem(given, &outcome.choices) {
            eprintln!("agentsim: --choices {}: {problem}", crate::run::render_choices(given));
            return EXIT_BAD_INPUT;
        }
    }
    if let Some(path) = html {
        if let Err(error) = crate::html::write_page(path, &loaded, &case) {
            return bad_input(&format!("{}: {error}", path.display()));
        }
    }
    if json {
        if let Some(outcome) = &case.outcome {
            println!(
                "{}",
                serde_json::to_string_pretty(&outcome.trace.to_json()).expect("traces serialize")
            );
        }
    } else {
        if let Some(net) = case.net {
            println!(
                "networked world: kit seed {}, turmoil seed {:#018x}{}",
                run.seed(),
                net.turmoil_seed,
                if net.seeded_faults {
                    ", faults from the seed"
                } else {
                    ""
                }
            );
        }
        print!("{}", report::annotated_trace(&case));
    }
    exit_code(std::slice::from_ref(&case))
}

/// `agentsim dashboard`.
fn dashboard(reports: &[String], html: Option<&std::path::Path>, markdown: Option<&std::path::Path>) -> u8 {
    use crate::html::dashboard;
    let mut columns = Vec::new();
    for text in reports {
        match dashboard::load(&dashboard::ReportInput::parse(text)) {
            Ok(column) => columns.push(column),
            Err(error) => {
                eprintln!("agentsim dashboard: {error}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    let write = |path: &std::path::Path, text: String| {
        crate::whole_file::write(path, text).map_err(|error| {
            eprintln!("agentsim dashboard: {}: {error}", path.display());
            EXIT_BAD_INPUT
        })
    };
    if let Some(path) = html {
        // Case pages are linked relative to the page's folder, wherever the command runs.
        let folder = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => std::path::Path::new("."),
        };
        if let Err(error) = dashboard::link_pages(&mut columns, folder) {
            eprintln!("agentsim dashboard: {error}");
            return EXIT_BAD_INPUT;
        }
        if let Err(code) = write(path, dashboard::html(&columns)) {
            return code;
        }
    }
    match markdown {
        Some(path) => {
            if let Err(code) = write(path, dashboard::markdown(&columns)) {
                return code;
            }
        }
        None => print!("{}", dashboard::markdown(&columns)),
    }
    EXIT_PASSED
}

/// Reports the HTML pages written to `dir` (`--html-dir`); `Err` with the exit code when they
/// could not be written.
fn report_pages(dir: &std::path::Path, written: std::io::Result<Vec<PathBuf>>) -> Result<(), u8> {
    match written {
        Ok(pages) => {
            eprintln!(
                "agentsim: wrote {} HTML pages and index.html to {}",
                pages.len(),
                dir.display()
            );
            Ok(())
        }
        Err(error) => {
            eprintln!("agentsim: {}: {error}", dir.display());
            Err(EXIT_BAD_INPUT)
        }
    }
}
