//! No adapter outlives the kit: every living adapter is listed process-wide with its run token,
//! so that a kit told to stop can kill them all from any thread ([`stop_every_adapter`]), and a
//! process's kills reach its whole group and every descendant, orphans reparented to the kit
//! included.

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// The adapters alive in this process: each process group with its run token.
pub(super) struct LivingAdapters {
    pub(super) groups: std::collections::BTreeMap<i32, String>,
    /// [`stop_every_adapter`] ran: no adapter starts any more.
    pub(super) stopped: bool,
}

static LIVING_ADAPTERS: Mutex<LivingAdapters> = Mutex::new(LivingAdapters {
    groups: std::collections::BTreeMap::new(),
    stopped: false,
});

pub(super) fn living_adapters() -> std::sync::MutexGuard<'static, LivingAdapters> {
    // The list stays valid whatever a panicking holder was doing: each change is one call.
    LIVING_ADAPTERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How long [`stop_every_adapter`] waits for the killed adapters to be reapable.
const STOP_REAP_WAIT: Duration = Duration::from_secs(2);

/// Kills every adapter this process started and everything each started (its process group,
/// its descendants, its orphans), reaps them, and refuses every later
/// [`AdapterProcess::spawn`](super::AdapterProcess::spawn): for a kit that is about to exit
/// (told to stop by a signal), from any thread. The adapter processes themselves are left to
/// their owners, who must not use them any more.
pub fn stop_every_adapter() {
    let mut living = living_adapters();
    living.stopped = true;
    for (group, token) in &living.groups {
        kill_descendants(*group, token);
        kill_group(*group);
    }
    let until = Instant::now() + STOP_REAP_WAIT;
    for group in living.groups.keys() {
        loop {
            // SAFETY: waitpid on a child of ours (its owner waits on it only after taking it
            // off the list, which this lock prevents); a null status pointer is allowed.
            let reaped = unsafe { libc::waitpid(*group, std::ptr::null_mut(), libc::WNOHANG) };
            if reaped != 0 || Instant::now() >= until {
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
    living.groups.clear();
}

/// The environment variable that marks every process of one adapter run (`PID-N`, the kit's
/// pid and a counter): a descendant orphaned and reparented to the kit is recognised by it.
pub const RUN_TOKEN_VAR: &str = "AGENTSIM_ADAPTER_RUN";

pub(super) static RUNS_STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times [`kill_descendants`] looks again for processes started while it killed.
const KILL_ROUNDS_MAX: usize = 50;

/// Makes the kit a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): a descendant whose parent
/// dies, even one that called `setsid` or double-forked, is reparented to the kit rather than to
/// init, so that it can be found, killed and reaped at the end of its run.
pub(super) fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(target_os = "linux")]
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER reads its integer arguments only.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        }
    });
}

/// One row of the process table: pid, parent pid, whether it is a zombie.
struct ProcessRow {
    pid: i32,
    parent: i32,
    zombie: bool,
}

/// Every process the kit can see (Linux `/proc`; empty elsewhere).
fn process_table() -> Vec<ProcessRow> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let Some(parent) = fields.next().and_then(|field| field.parse().ok()) else {
            continue;
        };
        rows.push(ProcessRow {
            pid,
            parent,
            zombie: matches!(state, "Z" | "X"),
        });
    }
    rows
}

fn carries_token(pid: i32, token: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{RUN_TOKEN_VAR}={token}");
    environ
        .split(|byte| *byte == 0)
        .any(|variable| variable == wanted.as_bytes())
}

/// SIGKILLs every descendant of `child` and every orphan of its run that was reparented to the
/// kit (recognised by `token`), again until none is left, and reaps the orphans (never `child`
/// itself: its `Child` reaps it).
pub(super) fn kill_descendants(child: i32, token: &str) {
    if child <= 0 {
        return;
    }
    let kit = std::process::id() as i32;
    // Every process seen as part of this run.
    let mut known: std::collections::BTreeSet<i32> = std::collections::BTreeSet::new();
    for _ in 0..KILL_ROUNDS_MAX {
        let table = process_table();
        let mut children: std::collections::BTreeMap<i32, Vec<i32>> = std::collections::BTreeMap::new();
        for row in &table {
            children.entry(row.parent).or_default().push(row.pid);
        }
        let mut roots = vec![child];
        roots.extend(
            table
                .iter()
                .filter(|row| row.parent == kit && row.pid != child && !row.zombie && carries_token(row.pid, token))
                .map(|row| row.pid),
        );
        let mut members = Vec::new();
        let mut seen: std::collections::BTreeSet<i32> = std::collections::BTreeSet::new();
        while let Some(pid) = roots.pop() {
            if !seen.insert(pid) {
                continue;
            }
            members.push(pid);
            roots.extend(children.get(&pid).into_iter().flatten().copied());
        }
        let zombie: std::collections::BTreeSet<i32> =
            table.iter().filter(|row| row.zombie).map(|row| row.pid).collect();
        // `child` too: once it is dead, its zombie children pass to the kit and are reaped here.
        let alive: Vec<i32> = members.iter().copied().filter(|pid| !zombie.contains(pid)).collect();
        known.extend(members.iter().copied());
        // Processes of this run that died and wait for the kit, their new parent, to reap them.
        let reapable: Vec<i32> = table
            .iter()
            .filter(|row| row.parent == kit && row.zombie && row.pid != child && known.contains(&row.pid))
            .map(|row| row.pid)
            .collect();
        for pid in &reapable {
            // SAFETY: waitpid on a zombie child of ours; a null status pointer is allowed.
            unsafe {
                libc::waitpid(*pid, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
        if alive.is_empty() && reapable.is_empty() {
            return;
        }
        for pid in alive {
            // SAFETY: kill has no memory effects; a process that already ended gives ESRCH.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        thread::sleep(Duration::from_millis(2));
    }
}

pub(super) fn kill_group(group: i32) {
    if group > 0 {
        // SAFETY: killpg has no memory effects; a group that no longer exists gives ESRCH.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
}
