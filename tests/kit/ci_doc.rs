//! docs/ci.md stays honest: every `agentsim ...` command in its code blocks parses with the
//! current command line (`agentsim::cli::parse_args`), after the recipes' variables get sample
//! values. The recipes must keep sharding, JUnit, HTML pages and `--expect` in them.

use std::path::Path;

/// Sample values of the variables the recipes use; an unknown variable fails the test.
const VARIABLES: &[(&str, &str)] = &[
    ("SHARD", "2"),
    ("CI_NODE_INDEX", "2"),
    ("CI_NODE_TOTAL", "4"),
    ("ADAPTER", "node adapters/pi/adapter.mjs"),
    ("SCENARIOS", "scenarios/"),
    ("SEEDS", "2000"),
];

/// The `agentsim` commands in the fenced code blocks, continuation lines joined, each cut at
/// the first shell operator (`>`, `|`, `&&`, `;`).
fn commands(markdown: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_block = false;
    let mut pending: Option<String> = None;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        let text = line.trim();
        let text = match pending.take() {
            Some(start) => format!("{start} {text}"),
            None => {
                let text = text.trim_start_matches("- ").trim_start_matches("run: ").trim();
                if !text.starts_with("agentsim ") {
                    continue;
                }
                text.to_string()
            }
        };
        match text.strip_suffix('\\') {
            Some(start) => pending = Some(start.trim_end().to_string()),
            None => commands.push(text),
        }
    }
    commands
}

/// Shell words of `command` up to its first operator: quotes removed, `$VAR` and `${VAR}`
/// expanded from [`VARIABLES`].
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(character) = chars.next() {
        match (quote, character) {
            (Some(open), c) if c == open => quote = None,
            (Some('\''), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(character);
                started = true;
            }
            (_, '$') => {
                let braced = chars.peek() == Some(&'{');
                if braced {
                    chars.next();
                }
                let mut name = String::new();
                while let Some(&next) = chars.peek() {
                    if next.is_ascii_alphanumeric() || next == '_' {
                        name.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if braced {
                    assert_eq!(chars.next(), Some('}'), "`{command}`: an unclosed ${{");
                }
                let value = VARIABLES
                    .iter()
                    .find(|(known, _)| *known == name)
                    .unwrap_or_else(|| panic!("`{command}`: no sample value for ${name}"))
                    .1;
                word.push_str(value);
                started = true;
            }
            (None, '>' | '|' | ';' | '&') => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (_, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    assert_eq!(quote, None, "`{command}`: an unclosed quote");
    if started {
        words.push(word);
    }
    words
}

/// The document at `relative` and its `agentsim` commands, each checked to parse.
fn parsed_commands(relative: &str) -> (String, Vec<String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let markdown = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{relative} exists"));
    let commands = commands(&markdown);
    assert!(
        commands.len() >= 8,
        "{relative}: too few agentsim commands found: {commands:?}"
    );
    for command in &commands {
        let words = words(command);
        agentsim::cli::parse_args(&words)
            .unwrap_or_else(|error| panic!("{relative}: `{command}` does not parse:\n{error}"));
    }
    (markdown, commands)
}

#[test]
fn ci_doc_commands_parse_with_the_current_cli() {
    let (markdown, commands) = parsed_commands("docs/ci.md");
    // The recipes cover what the issue asks of them.
    let all = commands.join("\n");
    for needle in [
        "--shard",
        "--format junit",
        "--html-dir",
        "--expect",
        "--impl",
        "--html ",
    ] {
        assert!(all.contains(needle), "no command of docs/ci.md uses {needle}");
    }
    assert!(markdown.contains("## GitHub Actions") && markdown.contains("## GitLab CI"));
}

#[test]
fn ci_doc_parser_rejects_an_unknown_flag() {
    // The check can fail: a flag the CLI does not have is refused.
    let unknown = words("agentsim explore scenarios/ --shards 2/4");
    assert!(agentsim::cli::parse_args(&unknown).is_err());
    assert_eq!(
        words("agentsim run --impl \"$ADAPTER\" x > out.xml"),
        ["agentsim", "run", "--impl", "node adapters/pi/adapter.mjs", "x"]
    );
}

#[test]
fn implementers_guide_commands_parse_with_the_current_cli() {
    let (_, commands) = parsed_commands("docs/implementers-guide.md");
    // The guide walks through what an implementer needs, from one scenario to the matrix.
    let all = commands.join("\n");
    for needle in [
        "--impl",
        "--check-determinism",
        "--jobs",
        "--expect",
        "--format markdown",
        "replay ",
    ] {
        assert!(
            all.contains(needle),
            "no command of the implementers' guide uses {needle}"
        );
    }
}
