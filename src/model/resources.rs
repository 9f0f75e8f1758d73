//! Resources: instructions (AGENTS.md and the like) and skills, and the system-prompt merge.
//!
//! Skill bodies are shown only for skills explicitly activated; the runtime passes none, so an
//! inactive body never reaches a system prompt.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    #[serde(default)]
    pub instructions: Vec<Instruction>,
    #[serde(default)]
    pub skills: Vec<Skill>,
}

impl Resources {
    pub fn is_empty(&self) -> bool {
        self.instructions.is_empty() && self.skills.is_empty()
    }
}

/// One instruction file, e.g. `AGENTS.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instruction {
    pub path: String,
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skill {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub body: String,
}

/// The resource context block:
///
/// ```text
/// # Pi resources
/// <each instruction's content, trailing whitespace trimmed, in order>
/// <name>: <description>        for each skill, in order
/// ## Skill <name>              for each skill named in `activated`, in catalog order,
/// <body>                       followed by its body
/// ```
/// Lines are joined with `\n`; there is no trailing newline.
///
/// A skill body is written as given, except that its trailing whitespace is trimmed like an
/// instruction's, so that the block never ends in a newline.
pub fn format_resource_context(resources: &Resources, activated: &[&str]) -> String {
    let mut lines: Vec<String> = vec!["# Pi resources".to_string()];
    for instruction in &resources.instructions {
        lines.push(instruction.content.trim_end().to_string());
    }
    for skill in &resources.skills {
        lines.push(format!("{}: {}", skill.name, skill.description));
    }
    for skill in &resources.skills {
        if activated.contains(&skill.name.as_str()) {
            lines.push(format!("## Skill {}", skill.name));
            lines.push(skill.body.trim_end().to_string());
        }
    }
    lines.join("\n")
}

/// The Lab 13.3 merge: the configured prompt, a blank line, then the resource context.
/// An empty catalog is not formatted (no empty `# Pi resources` header); an empty or absent
/// configured prompt contributes nothing; both empty gives `None`.
///
/// A configured prompt counts as empty when it is only whitespace; otherwise it is used as given.
/// The runtime activates no skill, so the formatter is called with none.
pub fn merge_system_prompt(configured: Option<&str>, resources: &Resources) -> Option<String> {
    let configured = configured.filter(|text| !text.trim().is_empty());
    let resource_context = (!resources.is_empty()).then(|| format_resource_context(resources, &[]));
    match (configured, resource_context) {
        (Some(configured), Some(resource_context)) => Some(format!("{configured}\n\n{resource_context}")),
        (Some(configured), None) => Some(configured.to_string()),
        (None, Some(resource_context)) => Some(resource_context),
        (None, None) => None,
    }
}

/// Whether `text` is `merge_system_prompt(configured, resources)`, compared piece by piece
/// without building the merged text: what a checker asks of every run, where the merge itself
/// would be a copy of the scenario's resources per run.
pub fn is_merged_system_prompt(text: Option<&str>, configured: Option<&str>, resources: &Resources) -> bool {
    let configured = configured.filter(|text| !text.trim().is_empty());
    let Some(mut rest) = text else {
        return configured.is_none() && resources.is_empty();
    };
    // Consumes `piece` from the front of `rest`, if it is there.
    let mut eat = |piece: &str| match rest.strip_prefix(piece) {
        Some(after) => {
            rest = after;
            true
        }
        None => false,
    };
    let mut any = false;
    if let Some(configured) = configured {
        if !eat(configured) {
            return false;
        }
        any = true;
    }
    if !resources.is_empty() {
        if any && !eat("\n\n") {
            return false;
        }
        if !eat("# Pi resources") {
            return false;
        }
        for instruction in &resources.instructions {
            if !(eat("\n") && eat(instruction.content.trim_end())) {
                return false;
            }
        }
        for skill in &resources.skills {
            if !(eat("\n") && eat(&skill.name) && eat(": ") && eat(&skill.description)) {
                return false;
            }
        }
        any = true;
    }
    any && rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instruction(content: &str) -> Instruction {
        Instruction {
            path: "AGENTS.md".to_string(),
            content: content.to_string(),
        }
    }

    fn skill(name: &str, description: &str, body: &str) -> Skill {
        Skill {
            name: name.to_string(),
            description: description.to_string(),
            body: body.to_string(),
        }
    }

    fn review_resources() -> Resources {
        Resources {
            instructions: vec![instruction("PROJECT RULE")],
            skills: vec![skill("review", "Review code carefully", "REVIEW BODY")],
        }
    }

    #[test]
    fn merge_puts_configured_prompt_first_then_a_blank_line_then_resources() {
        let merged = merge_system_prompt(Some("BASE SYSTEM"), &review_resources());
        assert_eq!(
            merged.as_deref(),
            Some("BASE SYSTEM\n\n# Pi resources\nPROJECT RULE\nreview: Review code carefully")
        );
    }

    #[test]
    fn merge_never_shows_an_inactive_skill_body() {
        let merged = merge_system_prompt(Some("BASE SYSTEM"), &review_resources()).unwrap();
        assert!(!merged.contains("REVIEW BODY"));
        assert!(!merged.contains("## Skill"));
    }

    #[test]
    fn merge_with_empty_catalog_has_no_resource_header() {
        let merged = merge_system_prompt(Some("BASE SYSTEM"), &Resources::default());
        assert_eq!(merged.as_deref(), Some("BASE SYSTEM"));
    }

    #[test]
    fn merge_with_only_resources_has_no_leading_blank_line() {
        let expected = "# Pi resources\nPROJECT RULE\nreview: Review code carefully";
        assert_eq!(
            merge_system_prompt(None, &review_resources()).as_deref(),
            Some(expected)
        );
        assert_eq!(
            merge_system_prompt(Some("  \n"), &review_resources()).as_deref(),
            Some(expected)
        );
    }

    #[test]
    fn merge_with_both_empty_is_none() {
        assert_eq!(merge_system_prompt(None, &Resources::default()), None);
        assert_eq!(merge_system_prompt(Some(""), &Resources::default()), None);
        assert_eq!(merge_system_prompt(Some(" \t"), &Resources::default()), None);
    }

    #[test]
    fn format_keeps_instructions_then_skills_in_order_and_trims_instruction_ends() {
        let resources = Resources {
            instructions: vec![instruction("FIRST RULE\n\n"), instruction("  SECOND RULE  ")],
            skills: vec![
                skill("zeta", "Last alphabetically", ""),
                skill("alpha", "First alphabetically", ""),
            ],
        };
        assert_eq!(
            format_resource_context(&resources, &[]),
            "# Pi resources\nFIRST RULE\n  SECOND RULE\nzeta: Last alphabetically\n\
             alpha: First alphabetically"
        );
    }

    #[test]
    fn format_shows_activated_bodies_in_catalog_order_after_the_catalog() {
        let resources = Resources {
            instructions: vec![instruction("RULE")],
            skills: vec![
                skill("review", "Review code", "REVIEW BODY\n"),
                skill("plan", "Plan work", "PLAN BODY"),
                skill("test", "Write tests", "TEST BODY"),
            ],
        };
        let formatted = format_resource_context(&resources, &["test", "review", "unknown"]);
        assert_eq!(
            formatted,
            "# Pi resources\nRULE\nreview: Review code\nplan: Plan work\ntest: Write tests\n\
             ## Skill review\nREVIEW BODY\n## Skill test\nTEST BODY"
        );
        assert!(!formatted.contains("PLAN BODY"));
    }

    #[test]
    fn is_merged_agrees_with_the_merge() {
        let catalogs = [
            Resources::default(),
            review_resources(),
            Resources {
                instructions: vec![instruction("A  \n"), instruction("B")],
                skills: vec![skill("s", "", "BODY"), skill("t", "T", "")],
            },
        ];
        let configured = [None, Some(""), Some("  "), Some("BASE"), Some(" BASE \n")];
        for resources in &catalogs {
            for prompt in configured {
                let merged = merge_system_prompt(prompt, resources);
                assert!(is_merged_system_prompt(merged.as_deref(), prompt, resources));
                for other in catalogs
                    .iter()
                    .flat_map(|other| configured.map(|text| merge_system_prompt(text, other)))
                {
                    let same = other == merged;
                    assert_eq!(is_merged_system_prompt(other.as_deref(), prompt, resources), same);
                }
                let longer = format!("{}x", merged.as_deref().unwrap_or_default());
                assert!(!is_merged_system_prompt(Some(&longer), prompt, resources));
            }
        }
    }
}
