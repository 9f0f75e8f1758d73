//! Finds the line of a JSON path in a scenario's source text, so that an error found after
//! parsing (an unknown rule, a tool nobody defines) still names its file, line and field.

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// How many characters of a key a rendered path quotes before cutting it with `…`.
const KEY_CHARS_MAX: usize = 64;

/// Renders a path as `operations[2].after`. A key that is not a plain name (empty, or with
/// spaces, dots, brackets, quotes or control characters) is rendered quoted, `session[0]["a b"]`,
/// with control characters escaped and cut after 64 characters, so that a field never prints
/// empty, never forges a second line and never carries a huge key whole.
pub fn render_path(path: &[Segment]) -> String {
    let mut text = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) if is_plain_key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Segment::Key(key) => {
                let clipped: String = key.chars().take(KEY_CHARS_MAX).collect();
                let quoted = serde_json::to_string(&clipped).unwrap_or_else(|_| "\"?\"".into());
                let cut = if key.chars().count() > KEY_CHARS_MAX { "…" } else { "" };
                text.push_str(&format!("[{}{cut}]", super::printable(&quoted)));
            }
            Segment::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key.chars().count() <= KEY_CHARS_MAX
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$')
}

/// The path of the value being read where `prefix` (the start of a JSON text) ends: the field a
/// problem at the next byte belongs to. Never fails; any text gives some path.
pub fn path_at_end(prefix: &str) -> Vec<Segment> {
    let mut walker = Walker::new(prefix.as_bytes(), false);
    walker.run();
    walker.path()
}

/// Where the first byte of `bytes` that is not UTF-8 is, as a reader of the file finds it: its
/// 1-based line, the field it sits in (`-` outside any), and a message naming its column and
/// byte. `error` is `std::str::from_utf8(bytes)`'s.
pub fn invalid_utf8(bytes: &[u8], error: std::str::Utf8Error) -> (usize, String, String) {
    let valid = &bytes[..error.valid_up_to()];
    // The prefix is valid UTF-8 by construction.
    let prefix = std::str::from_utf8(valid).unwrap_or_default();
    let line = 1 + valid.iter().filter(|byte| **byte == b'\n').count();
    let line_start = valid.iter().rposition(|byte| *byte == b'\n').map_or(0, |at| at + 1);
    let column = prefix[line_start..].chars().count() + 1;
    let field = render_path(&path_at_end(prefix));
    (
        line,
        if field.is_empty() { "-".to_string() } else { field },
        format!(
            "not valid UTF-8 at column {column} (byte {} of the file)",
            valid.len() + 1
        ),
    )
}

/// A key that occurs twice in one object anywhere in `text` (a valid JSON text): the path of
/// its second occurrence, the line it is on and the key. Linear in the text.
pub fn find_duplicate_key(text: &str) -> Option<(Vec<Segment>, usize, String)> {
    let mut walker = Walker::new(text.as_bytes(), true);
    walker.run();
    walker.duplicate
}

enum Frame {
    Object {
        key: Option<String>,
        expecting_key: bool,
        /// Every key seen so far (kept only when looking for duplicates).
        keys: std::collections::BTreeSet<String>,
    },
    Array {
        index: usize,
    },
}

/// A forgiving one-pass walk over JSON bytes that tracks where in the document it is.
struct Walker<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
    frames: Vec<Frame>,
    find_duplicates: bool,
    duplicate: Option<(Vec<Segment>, usize, String)>,
}

impl<'a> Walker<'a> {
    fn new(bytes: &'a [u8], find_duplicates: bool) -> Walker<'a> {
        Walker {
            bytes,
            at: 0,
            line: 1,
            frames: Vec::new(),
            find_duplicates,
            duplicate: None,
        }
    }

    fn path(&self) -> Vec<Segment> {
        self.frames
            .iter()
            .filter_map(|frame| match frame {
                Frame::Object {
                    key: Some(key),
                    expecting_key: false,
                    ..
                } => Some(Segment::Key(key.clone())),
                Frame::Object { .. } => None,
                Frame::Array { index } => Some(Segment::Index(*index)),
            })
            .collect()
    }

    fn run(&mut self) {
        while let Some(&byte) = self.bytes.get(self.at) {
            match byte {
                b'\n' => self.line += 1,
                b'{' => self.frames.push(Frame::Object {
                    key: None,
                    expecting_key: true,
                    keys: std::collections::BTreeSet::new(),
                }),
                b'[' => self.frames.push(Frame::Array { index: 0 }),
                b'}' | b']' => {
                    self.frames.pop();
                }
                b',' => match self.frames.last_mut() {
                    Some(Frame::Array { index }) => *index += 1,
                    Some(Frame::Object { key, expecting_key, .. }) => {
                        *key = None;
                        *expecting_key = true;
                    }
                    None => {}
                },
                b':' => {
                    if let Some(Frame::Object { expecting_key, .. }) = self.frames.last_mut() {
                        *expecting_key = false;
                    }
                }
                b'"' => {
                    let start = self.at + 1;
                    let Some(end) = self.string_end(start) else {
                        // The text ends inside a string: the path is where the string started.
                        return;
                    };
                    let is_key = matches!(
                        self.frames.last(),
                        Some(Frame::Object {
                            expecting_key: true,
                            ..
                        })
                    );
                    if is_key {
                        let raw = &self.bytes[start..end];
                        let key = decode_key(raw);
                        self.note_key(key);
                    }
                    self.line += self.bytes[start..end].iter().filter(|byte| **byte == b'\n').count();
                    self.at = end;
                }
                _ => {}
            }
            self.at += 1;
        }
    }

    /// The index of the closing quote of the string whose contents start at `start`.
    fn string_end(&self, start: usize) -> Option<usize> {
        let mut at = start;
        loop {
            match self.bytes.get(at)? {
                b'"' => return Some(at),
                b'\\' => at += 2,
                _ => at += 1,
            }
        }
    }

    fn note_key(&mut self, key: String) {
        let find_duplicates = self.find_duplicates && self.duplicate.is_none();
        let line = self.line;
        let Some(Frame::Object { key: current, keys, .. }) = self.frames.last_mut() else {
            return;
        };
        if find_duplicates && !keys.insert(key.clone()) {
            *current = Some(key.clone());
            let mut path = Vec::new();
            // The path with this key as its last segment.
            for frame in &self.frames {
                match frame {
                    Frame::Object { key: Some(key), .. } => path.push(Segment::Key(key.clone())),
                    Frame::Object { .. } => {}
                    Frame::Array { index } => path.push(Segment::Index(*index)),
                }
            }
            self.duplicate = Some((path, line, key));
            return;
        }
        *current = Some(key);
    }
}

fn decode_key(raw: &[u8]) -> String {
    let raw = String::from_utf8_lossy(raw);
    serde_json::from_str(&format!("\"{raw}\"")).unwrap_or_else(|_| raw.into_owned())
}

/// Parses `operations[2].after` back into segments.
pub fn parse_path(path: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    for part in path.split('.').filter(|part| !part.is_empty()) {
        let (key, rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            segments.push(Segment::Key(key.to_string()));
        }
        for index in rest.split('[').filter(|piece| !piece.is_empty()) {
            if let Ok(index) = index.trim_end_matches(']').parse() {
                segments.push(Segment::Index(index));
            }
        }
    }
    segments
}

/// The 1-based line where the value at `path` starts; the deepest existing prefix's line when
/// the full path does not exist; 1 for the empty path.
pub fn line_of(text: &str, path: &[Segment]) -> usize {
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        at: 0,
        line: 1,
    };
    scanner.skip_space();
    scanner.find(path).unwrap_or(1)
}

/// The value at `path` as written in `text` (a JSON text), when the path exists: a number quoted
/// as written rather than as the float it reads as (`18446744073709551617`, not
/// `1.8446744073709552e19`). The first occurrence of a duplicate key.
pub fn raw_value_at<'t>(text: &'t str, path: &[Segment]) -> Option<&'t str> {
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        at: 0,
        line: 1,
    };
    scanner.skip_space();
    scanner.seek(path)?;
    let start = scanner.at;
    scanner.skip_value()?;
    text.get(start..scanner.at)
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn bump(&mut self) {
        if self.peek() == Some(b'\n') {
            self.line += 1;
        }
        self.at += 1;
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.bump();
        }
    }

    /// At the start of a value: the line of the value at `path` below it.
    fn find(&mut self, path: &[Segment]) -> Option<usize> {
        let line = self.line;
        let Some((segment, rest)) = path.split_first() else {
            return Some(line);
        };
        match (self.peek()?, segment) {
            (b'{', Segment::Key(wanted)) => {
                self.bump();
                loop {
                    self.skip_space();
                    if self.peek()? == b'}' {
                        return Some(line);
                    }
                    let key = self.string()?;
                    self.skip_space();
                    self.bump(); // ':'
                    self.skip_space();
                    if &key == wanted {
                        return Some(self.find(rest).unwrap_or(line));
                    }
                    self.skip_value()?;
                    self.skip_space();
                    if self.peek()? == b',' {
                        self.bump();
                    }
                }
            }
            (b'[', Segment::Index(wanted)) => {
                self.bump();
                let mut index = 0;
                loop {
                    self.skip_space();
                    if self.peek()? == b']' {
                        return Some(line);
                    }
                    if index == *wanted {
                        return Some(self.find(rest).unwrap_or(line));
                    }
                    self.skip_value()?;
                    index += 1;
                    self.skip_space();
                    if self.peek()? == b',' {
                        self.bump();
                    }
                }
            }
            _ => Some(line),
        }
    }

    /// At the start of a value: to the start of the value at `path` below it, when it exists.
    fn seek(&mut self, path: &[Segment]) -> Option<()> {
        let Some((segment, rest)) = path.split_first() else {
            return Some(());
        };
        let (b'{', Segment::Key(wanted)) = (self.peek()?, segment) else {
            let (b'[', Segment::Index(wanted)) = (self.peek()?, segment) else {
                return None;
            };
            self.bump();
            for _ in 0..*wanted {
                self.skip_space();
                self.skip_value()?;
                self.skip_space();
                if self.peek()? != b',' {
                    return None;
                }
                self.bump();
            }
            self.skip_space();
            return if self.peek()? == b']' { None } else { self.seek(rest) };
        };
        self.bump();
        loop {
            self.skip_space();
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            self.skip_space();
            self.bump(); // ':'
            self.skip_space();
            if &key == wanted {
                return self.seek(rest);
            }
            self.skip_value()?;
            self.skip_space();
            if self.peek()? == b',' {
                self.bump();
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let start = self.at + 1;
        self.bump();
        while self.peek()? != b'"' {
            if self.peek()? == b'\\' {
                self.bump();
            }
            self.bump();
        }
        let raw = std::str::from_utf8(&self.bytes[start..self.at]).ok()?.to_string();
        self.bump();
        Some(serde_json::from_str(&format!("\"{raw}\"")).unwrap_or(raw))
    }

    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.bump();
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.bump();
                }
            }
            _ => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
                ) {
                    self.bump();
                }
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_quoted_as_written() {
        let text = r#"{"type": "hello", "a": [1, {"b": "x,}"}, 18446744073709551617], "protocol": 1e400 }"#;
        assert_eq!(raw_value_at(text, &parse_path("protocol")), Some("1e400"));
        assert_eq!(raw_value_at(text, &parse_path("a[2]")), Some("18446744073709551617"));
        assert_eq!(raw_value_at(text, &parse_path("a[1].b")), Some(r#""x,}""#));
        assert_eq!(raw_value_at(text, &parse_path("a[3]")), None);
        assert_eq!(raw_value_at(text, &parse_path("missing")), None);
    }

    #[test]
    fn finds_nested_lines() {
        let text = "{\n  \"a\": 1,\n  \"ops\": [\n    {\"x\": 1},\n    {\n      \"after\": {\"y\": 2}\n    }\n  ]\n}\n";
        assert_eq!(line_of(text, &parse_path("a")), 2);
        assert_eq!(line_of(text, &parse_path("ops[0]")), 4);
        assert_eq!(line_of(text, &parse_path("ops[1].after")), 6);
        assert_eq!(line_of(text, &parse_path("ops[1].missing")), 5);
        assert_eq!(render_path(&parse_path("ops[1].after")), "ops[1].after");
    }

    #[test]
    fn odd_keys_render_quoted_escaped_and_cut() {
        assert_eq!(render_path(&[Segment::Key(String::new())]), "[\"\"]");
        assert_eq!(
            render_path(&[Segment::Key("a".into()), Segment::Key("x\ny".into())]),
            "a[\"x\\ny\"]"
        );
        let long = render_path(&[Segment::Key("k".repeat(1_000_000))]);
        assert!(long.len() < 100, "{long}");
    }

    #[test]
    fn the_path_where_a_prefix_ends() {
        let text = "{\n  \"a\": 1,\n  \"ops\": [\n    {\"x\": 1},\n    {\"text\": \"ab";
        assert_eq!(render_path(&path_at_end(text)), "ops[1].text");
        assert_eq!(render_path(&path_at_end("{\"a\": 1, ")), "");
        assert_eq!(render_path(&path_at_end("")), "");
    }

    #[test]
    fn duplicate_keys_anywhere_are_found_with_their_line() {
        let text = "{\"a\": {\"b\": 1},\n \"c\": [{\"d\": 1,\n \"d\": 2}]}";
        let (path, line, key) = find_duplicate_key(text).expect("a duplicate");
        assert_eq!((render_path(&path), line, key.as_str()), ("c[0].d".to_string(), 3, "d"));
        assert_eq!(
            find_duplicate_key("{\"a\": {\"a\": 1}, \"b\": [{\"a\": 1}, {\"a\": 2}]}"),
            None
        );
    }
}
