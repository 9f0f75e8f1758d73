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
//!
//! One thing ends the kit at a time ([`ENDING`]): a stop, a closed standard output, or the main
//! thread's own end ([`finish`]), which, when a signal came before it, stops as the signal says
//! rather than exit with the command's code while the stop is under way.
//!
//! A standard output that is closed (`agentsim run ... | head -c 10`) or full (`> /dev/full`)
//! ends the kit the same orderly way, with exit code 4 and one line on stderr
//! ([`install_output_guard`]), instead of a panic. A file over the size limit (`ulimit -f`) is
//! a failed write (`EFBIG`), reported by whoever wrote it, instead of SIGXFSZ's end of the kit
//! with a half-written file left ([`install`] catches the signal).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM, SIGXFSZ};
use signal_hook::iterator::Signals;

/// The signal that told the kit to stop (0 for none), set by the signal handler itself at once,
/// so that the main thread, about to exit, knows of a stop its thread has not begun.
static RECEIVED: AtomicUsize = AtomicUsize::new(0);

/// Taken by whatever ends the kit, and never given back: the first to take it ends the kit, and
/// a second waits for the end.
static ENDING: Mutex<()> = Mutex::new(());

fn ending() -> MutexGuard<'static, ()> {
    ENDING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// SIGXFSZ, caught by a handler that does nothing: a write past the file size limit then fails
/// with `EFBIG`. (Caught rather than ignored: an adapter the kit starts gets the default action
/// back, as exec resets a caught signal but keeps an ignored one.)
static FILE_TOO_LARGE: AtomicUsize = AtomicUsize::new(0);

/// Takes SIGINT, SIGTERM and SIGHUP on a thread that stops the kit; a kit that cannot (no
/// thread, no signal pipe) says so and keeps the default actions.
pub(super) fn install() {
    if let Err(error) = signal_hook::flag::register_usize(SIGXFSZ, &FILE_TOO_LARGE, 1) {
        eprintln!("agentsim: warning: SIGXFSZ stays unhandled ({error}): a file over the size limit ends the kit");
    }
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        // Registered before the iterator's handler, so the flag is set first.
        if let Err(error) = signal_hook::flag::register_usize(signal, &RECEIVED, signal as usize) {
            eprintln!("agentsim: warning: signals stay unhandled ({error}): a stopped kit may leave adapters behind");
            return;
        }
    }
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

/// The main thread's exit code: `code`, unless a signal told the kit to stop before this point,
/// in which case the kit stops as [`stop`] does (whichever thread began it). Holds [`ENDING`]
/// to the exit, so a signal from now on finds the code decided and waits for the exit.
pub(super) fn finish(code: u8) -> u8 {
    let ending = ending();
    let signal = RECEIVED.load(Ordering::SeqCst);
    if signal != 0 {
        drop(ending);
        stop(signal as i32);
    }
    std::mem::forget(ending);
    code
}

/// Kills every adapter, abandons unfinished files and exits with 128 + `signal`.
fn stop(signal: i32) -> ! {
    let _ending = ending();
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

/// The panic `print!` raises when standard output cannot be written (closed, full) ends the kit
/// in order instead: every adapter killed, unfinished files abandoned, one line on stderr and
/// exit code 4 (`EXIT_OUTPUT`). Any other panic keeps the default hook: it is a bug.
pub(super) fn install_output_guard() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        let Some(error) = message.strip_prefix("failed printing to stdout: ") else {
            return default(info);
        };
        let _ending = ending();
        crate::protocol::process::stop_every_adapter();
        crate::whole_file::abandon_unfinished();
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "agentsim: cannot write to standard output ({error}): the report is lost; every adapter process the kit started is killed"
        );
        std::process::exit(i32::from(super::EXIT_OUTPUT))
    }));
}
