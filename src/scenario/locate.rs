//! Finds the line of a JSON path in a scenario's source text, so that an error found after
//! parsing (an unknown rule, a tool nobody defines) still names its file, line and field.

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// Renders a path as `operations[2].after`.
pub fn render_path(path: &[Segment]) -> String {
    let mut text = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Segment::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
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
    fn finds_nested_lines() {
        let text = "{\n  \"a\": 1,\n  \"ops\": [\n    {\"x\": 1},\n    {\n      \"after\": {\"y\": 2}\n    }\n  ]\n}\n";
        assert_eq!(line_of(text, &parse_path("a")), 2);
        assert_eq!(line_of(text, &parse_path("ops[0]")), 4);
        assert_eq!(line_of(text, &parse_path("ops[1].after")), 6);
        assert_eq!(line_of(text, &parse_path("ops[1].missing")), 5);
        assert_eq!(render_path(&parse_path("ops[1].after")), "ops[1].after");
    }
}
