//! What the kit does when it is told to stop (SIGINT from Ctrl-C, SIGTERM, SIGHUP): it kills
//! every adapter it started and everything they started (their process groups, descendants and
//! orphans: `protocol::process::stop_every_adapter`), leaves no half-written page or report
//! (`whole_file::abandon_unfinished`), and exits 128 + the signal's number (130 for SIGINT).
//!
//! Without this the default action ends the kit at once, and the adapters, each in a process
//! group of its own (where the terminal's Ctrl-C does not reach) and no longer under a living
//! subreaper, run on under pid 1. The signals are taken on a thread of their own
//! (`signal_hook`'s iterator), so the stop runs as ordinary code, not in a signal handler.
//! `agentsim serve` installs nothing: it is an adapter, ended by its kit.

use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Takes SIGINT, SIGTERM and SIGHUP on a thread that stops the kit; a kit that cannot (no
/// thread, no signal pipe) says so and keeps the default actions.
pub(super) fn install() {
    let mut signals = match Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("agentsim: warning: signals stay unhandled ({error}): a stopped kit may leave adapters behind");
            return;
        }
    };
    let spawned = std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            stop(signal);
        }
    });
    if let Err(error) = spawned {
        eprintln!("agentsim: warning: signals stay unhandled ({error}): a stopped kit may leave adapters behind");
    }
}

/// Kills every adapter, abandons unfinished files and exits with 128 + `signal`.
fn stop(signal: i32) -> ! {
    // Held to the end: no report line is printed after this point, nor the verdicts of the
    // adapters killed here; a line being printed is finished first.
    let _stdout = std::io::stdout().lock();
    crate::protocol::process::stop_every_adapter();
    crate::whole_file::abandon_unfinished();
    eprintln!(
        "agentsim: stopped by {}: every adapter process the kit started is killed",
        signal_name(signal)
    );
    std::process::exit(128 + signal)
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}
