//! Finding the scenario files under a path and naming them as tests.

use std::path::{Path, PathBuf};

/// Every `*.json` file below `root` (or `root` itself), sorted by path. A `root` that is neither
/// a file nor a folder (a FIFO, a device) is an error naming what it is: it is never opened, so
/// a FIFO nobody writes cannot block the kit.
pub fn discover(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let kind = std::fs::metadata(root)?.file_type();
    if kind.is_file() {
        files.push(root.to_path_buf());
        return Ok(files);
    }
    if !kind.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "not a scenario file or a folder but {}: a scenario path is a `*.json` file or a folder of them",
                kind_of(&kind)
            ),
        ));
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// What a file that is not a regular one is, for messages: `a FIFO`, `a folder`, ...
pub fn kind_of(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// The test name of a scenario file: its path below `root`, without `.json`, with `/`.
pub fn name_of(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    let relative = if relative.as_os_str().is_empty() {
        path.file_name().map(Path::new).unwrap_or(path)
    } else {
        relative
    };
    let text = relative.with_extension("").to_string_lossy().replace('\\', "/");
    text.trim_start_matches("scenarios/").to_string()
}
