//! The rule statements, taken from conformance.md at build time: the paragraph under each
//! `### RULE-ID` heading, up to its first list item (`- Seed:`, `- Checker:`, ...).

/// conformance.md as it was when the kit was built.
const CONFORMANCE: &str = include_str!("../../conformance.md");

/// The statement of `rule` (a catalogue ID), or a description of the scenario's own checks
/// (`expect`, `model[N].expect`, `nondeterminism`); `None` for an unknown name.
pub fn rule_text(rule: &str) -> Option<String> {
    if rule == "expect" {
        return Some("The scenario's own `expect` block: what the canonical schedule of the reference does.".into());
    }
    if rule.starts_with("model[") {
        return Some("A request check of the scenario's scripted model: what the model must be sent.".into());
    }
    let heading = format!("### {rule}");
    let mut lines = CONFORMANCE
        .lines()
        .skip_while(|line| line.trim_end() != heading)
        .skip(1);
    let mut statement: Vec<&str> = Vec::new();
    for line in lines.by_ref() {
        let line = line.trim();
        if line.starts_with("- ") || line.starts_with('#') || (line.is_empty() && !statement.is_empty()) {
            break;
        }
        if !line.is_empty() {
            statement.push(line);
        }
    }
    (!statement.is_empty()).then(|| statement.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_rule_has_a_statement() {
        for rule in crate::check::catalogue() {
            let text = rule_text(rule.id).unwrap_or_else(|| panic!("{} has no statement", rule.id));
            assert!(!text.starts_with("- "), "{}: {text}", rule.id);
        }
        assert_eq!(
            rule_text("POISON-1").as_deref(),
            Some("The prompt whose append failed rejects with exactly that cause.")
        );
        assert_eq!(rule_text("NO-SUCH-RULE"), None);
    }
}
