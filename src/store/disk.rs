//! The four disk operations a session file needs, on the real disk or on turmoil's simulated one.
//!
//! A session file is only ever created whole (its header), appended to (one line per entry),
//! truncated (a torn tail cut off before the next append) and read whole. [`Disk`] is exactly
//! that and nothing more, so that [`RealDisk`] and [`SimDisk`] cannot drift apart.
//!
//! Durability follows POSIX: a write is durable only after `fsync` of the file, and a new file
//! is reachable after a crash only once its directory is synced too. [`SimDisk`] runs on
//! turmoil's filesystem, which models exactly this: writes stay pending until `sync_all`, and
//! `Sim::crash` discards whatever is pending. It works only inside a turmoil host.

use std::io::{self, Write};
use std::path::Path;

/// The disk operations of a session file. Every `sync` flag means "durable before returning".
pub trait Disk {
    /// The whole file, or `None` when it does not exist.
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;
    /// Appends `bytes` at the end of an existing file in one write.
    fn append(&self, path: &Path, bytes: &[u8], sync: bool) -> io::Result<()>;
    /// Cuts an existing file to `len` bytes.
    fn truncate(&self, path: &Path, len: u64, sync: bool) -> io::Result<()>;
    /// Creates a file that must not exist yet, holding `bytes`. With `sync`, the parent
    /// directory is synced as well, so that the file itself survives a crash.
    fn create_new(&self, path: &Path, bytes: &[u8], sync: bool) -> io::Result<()>;
}

/// The directory holding `path`; `.` for a bare file name.
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// The machine's filesystem through `std::fs`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealDisk;

impl Disk for RealDisk {
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn append(&self, path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
        let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
        }
        Ok(())
    }

    fn truncate(&self, path: &Path, len: u64, sync: bool) -> io::Result<()> {
        let file = std::fs::OpenOptions::new().write(true).open(path)?;
        file.set_len(len)?;
        if sync {
            file.sync_all()?;
        }
        Ok(())
    }

    fn create_new(&self, path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
            // Linux opens a directory read-only and fsyncs it like a file.
            std::fs::File::open(parent_dir(path))?.sync_all()?;
        }
        Ok(())
    }
}

/// turmoil's simulated filesystem (`turmoil::fs::shim::std::fs`): the current host's disk.
///
/// Every call must run inside a turmoil host or client; outside one, turmoil panics.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimDisk;

impl Disk for SimDisk {
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match turmoil::fs::shim::std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn append(&self, path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
        let mut file = turmoil::fs::shim::std::fs::OpenOptions::new().append(true).open(path)?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
        }
        Ok(())
    }

    fn truncate(&self, path: &Path, len: u64, sync: bool) -> io::Result<()> {
        let file = turmoil::fs::shim::std::fs::OpenOptions::new().write(true).open(path)?;
        file.set_len(len)?;
        if sync {
            file.sync_all()?;
        }
        Ok(())
    }

    fn create_new(&self, path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
        let mut file = turmoil::fs::shim::std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
            turmoil::fs::shim::std::fs::sync_dir(parent_dir(path))?;
        }
        Ok(())
    }
}
