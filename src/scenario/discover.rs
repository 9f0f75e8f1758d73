//! Finding the scenario files under a path and naming them as tests.

use std::path::{Path, PathBuf};

/// Every `*.json` file below `root` (or `root` itself), sorted by path.
pub fn discover(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if root.is_file() {
        files.push(root.to_path_buf());
        return Ok(files);
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
