//! Files the kit writes for its user (HTML pages and their index, the dashboard), written whole
//! or not at all.
//!
//! [`write`] writes to a temporary file beside the target (same folder, so the same file
//! system) and renames it over the target: a reader, or a kit stopped half-way, sees the old
//! file or the new one, never part of one. [`abandon_unfinished`] is for a kit that is about to
//! exit on a signal: it removes the temporary files being written and refuses every later
//! write, so nothing half-written is left under any name.
//!
//! Never a choice of what to write or where; no import of the rest of the crate.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The temporary files being written, and whether writing has stopped.
struct Unfinished {
    temporaries: BTreeSet<PathBuf>,
    stopped: bool,
}

static UNFINISHED: Mutex<Unfinished> = Mutex::new(Unfinished {
    temporaries: BTreeSet::new(),
    stopped: false,
});

static WRITES_STARTED: AtomicU64 = AtomicU64::new(0);

fn unfinished() -> MutexGuard<'static, Unfinished> {
    // Each change to the set is one call: a panicking holder leaves it valid.
    UNFINISHED.lock().unwrap_or_else(PoisonError::into_inner)
}

fn stopped_error() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Interrupted,
        "the kit is stopping: nothing more is written",
    )
}

/// How many names [`write`] tries for its temporary file before it gives up: a name already
/// taken (by anything, a link included) is never opened, the next one is tried.
const TEMPORARY_NAMES_TRIED: u32 = 64;

/// Writes `contents` to `path` whole: to a temporary file in the same folder, then renamed
/// over `path`. On an error nothing is left but what `path` held before.
///
/// The temporary file is created exclusively (`O_CREAT | O_EXCL`): a name that exists, a
/// symbolic link planted there included, is never opened or followed, so nothing is ever
/// written outside the folder through it. Its name is short and the target's own name is not
/// in it, so a long target name cannot make it too long.
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    if path.file_name().is_none() {
        return Err(std::io::Error::other(format!("{}: not a file name", path.display())));
    }
    let mut created = None;
    for _ in 0..TEMPORARY_NAMES_TRIED {
        let temporary = path.with_file_name(format!(
            ".agentsim-{}-{}.partial",
            std::process::id(),
            WRITES_STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        {
            let mut unfinished = unfinished();
            if unfinished.stopped {
                return Err(stopped_error());
            }
            unfinished.temporaries.insert(temporary.clone());
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
        {
            Ok(file) => {
                created = Some((temporary, file));
                break;
            }
            Err(error) => {
                // Not ours: it is neither removed nor written.
                unfinished().temporaries.remove(&temporary);
                if error.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(error);
                }
            }
        }
    }
    let Some((temporary, mut file)) = created else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{}: {TEMPORARY_NAMES_TRIED} names for a temporary file beside it are all taken",
                path.display()
            ),
        ));
    };
    let written = file.write_all(contents.as_ref());
    drop(file);
    let mut unfinished = unfinished();
    unfinished.temporaries.remove(&temporary);
    // Renamed under the lock, so that a stop either comes first (and nothing is renamed) or
    // finds the file whole under its name.
    let result = match written {
        Ok(()) if unfinished.stopped => Err(stopped_error()),
        Ok(()) => std::fs::rename(&temporary, path),
        Err(error) => Err(error),
    };
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Removes every temporary file being written and refuses every later [`write`]: a kit
/// stopped by a signal leaves no half-written file.
pub fn abandon_unfinished() {
    let mut unfinished = unfinished();
    unfinished.stopped = true;
    for temporary in std::mem::take(&mut unfinished.temporaries) {
        let _ = std::fs::remove_file(temporary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_planted_at_a_temporary_name_is_never_followed() {
        let folder = std::env::temp_dir().join(format!("agentsim-whole-file-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).expect("a scratch folder");
        let outside = folder.join("outside.txt");
        std::fs::write(&outside, "untouched").expect("written");
        let pages = folder.join("pages");
        std::fs::create_dir_all(&pages).expect("a folder");
        // Links at the next names this process would use, and at those an earlier writer used
        // (`.index.html.<pid>-<n>.partial`, which it opened and followed).
        let next = WRITES_STARTED.load(Ordering::Relaxed);
        for n in next..next + 8 {
            for name in [
                format!(".agentsim-{}-{n}.partial", std::process::id()),
                format!(".index.html.{}-{n}.partial", std::process::id()),
            ] {
                std::os::unix::fs::symlink(&outside, pages.join(name)).expect("a link");
            }
        }
        let index = pages.join("index.html");
        write(&index, "the page").expect("written beside the links");
        assert_eq!(std::fs::read_to_string(&outside).expect("reads"), "untouched");
        assert_eq!(std::fs::read_to_string(&index).expect("reads"), "the page");
        assert!(!std::fs::symlink_metadata(&index)
            .expect("exists")
            .file_type()
            .is_symlink());
        let _ = std::fs::remove_dir_all(&folder);
    }

    #[test]
    fn a_long_target_name_does_not_make_the_temporary_name_too_long() {
        let folder = std::env::temp_dir().join(format!("agentsim-whole-file-long-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).expect("a scratch folder");
        let path = folder.join(format!("{}.html", "x".repeat(240)));
        write(&path, "long").expect("written");
        assert_eq!(std::fs::read_to_string(&path).expect("reads"), "long");
        let _ = std::fs::remove_dir_all(&folder);
    }

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_is_left() {
        let folder = std::env::temp_dir().join(format!("agentsim-whole-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).expect("a scratch folder");
        let path = folder.join("page.html");
        write(&path, "first").expect("written");
        write(&path, "second, longer").expect("rewritten");
        assert_eq!(std::fs::read_to_string(&path).expect("reads"), "second, longer");
        let names: Vec<String> = std::fs::read_dir(&folder)
            .expect("lists")
            .map(|entry| entry.expect("an entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["page.html".to_string()]);
        // A folder that does not exist: an error, and nothing written.
        let missing = folder.join("missing").join("page.html");
        assert!(write(&missing, "x").is_err());
        assert!(!missing.exists());
        let _ = std::fs::remove_dir_all(&folder);
    }
}
