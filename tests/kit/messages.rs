//! Every checker's message reads true in every context it fires in: on the canonical schedule
//! of every scenario under every mutant of the zoo (the cascades a real bug sets off, where a
//! rule fires on what follows from another's breach) and on the different-but-correct variant.
//!
//! Each distinct message shape (numbers, quoted names and lists blanked) is kept in
//! `golden/messages.snap`, so a reviewer reads every message the rules can print, and a change
//! of wording shows in the diff. No message may print a Rust debug value (`Some("x")`, a struct
//! dump), a count with the wrong number ("1 entries"), a wrong article ("a assistant"), or a
//! count of nothing where something was expected ("all of its 0 entries").

use std::collections::BTreeMap;
use std::path::Path;

use agentsim::findings::shape;
use agentsim::implementation::Implementation;
use agentsim::run::{CaseReport, Run, Verdict};
use agentsim::sim::StrategyKind;
use agentsim::suite::load_corpus;
use agentsim::zoo::Mutant;

/// What no message may say, with why.
fn problems(message: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    if message.contains("Some(") || message.contains("None ") || message.ends_with("None") {
        found.push("a Rust Option printed with {:?}");
    }
    // Quoted text (a tool result, a prompt) may hold anything; look outside it.
    let unquoted = shape(message);
    if [" { ", "RunResult", "UserMessage", "AssistantMessage", "Run("]
        .iter()
        .any(|dump| unquoted.contains(dump))
    {
        found.push("a Rust value dumped with {:?}");
    }
    let words: Vec<&str> = message
        .split_whitespace()
        .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    const PLURALS: &[&str] = &[
        "entries",
        "messages",
        "prompts",
        "runs",
        "times",
        "responses",
        "calls",
        "children",
        "requests",
    ];
    for (index, word) in words.iter().enumerate() {
        // `1 messages`, or `1 assistant messages` with one word between.
        let plural_follows = words.get(index + 1).is_some_and(|next| PLURALS.contains(next))
            || words.get(index + 2).is_some_and(|next| PLURALS.contains(next));
        if *word == "1" && plural_follows {
            found.push("a count of one with a plural noun");
        }
        if *word == "a"
            && words
                .get(index + 1)
                .is_some_and(|next| next.starts_with(['a', 'e', 'i', 'o']))
        {
            found.push("`a` before a vowel");
        }
        let consonant = words
            .get(index + 1)
            .is_some_and(|next| next.starts_with(['u', 't', 'm', 'p', 's', 'c', 'd', 'f']));
        if *word == "an" && consonant {
            found.push("`an` before a consonant sound");
        }
    }
    if message.contains("of its 0 ") || message.contains("all of its 0") {
        found.push("a count of nothing where something was expected");
    }
    found
}

fn cases() -> Vec<CaseReport> {
    let corpus = load_corpus(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")]).expect("the corpus loads");
    let mut cases = Vec::new();
    for mutant in Mutant::all() {
        for loaded in &corpus {
            let case = Run::of(loaded)
                .seeded(StrategyKind::Scripted, 0)
                .on(&Implementation::mutant(mutant))
                .execute(loaded);
            if case.verdict == Verdict::Failed {
                cases.push(case);
            }
        }
    }
    cases
}

#[test]
fn every_message_reads_true_in_every_context() {
    let mut shapes: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut bad = Vec::new();
    for case in cases() {
        for violation in &case.violations {
            if violation.rule == "expect" || violation.rule.starts_with("model[") {
                continue;
            }
            for problem in problems(&violation.message) {
                bad.push(format!(
                    "{} in {} ({}): {problem}: {}",
                    violation.rule,
                    case.name,
                    case.replay_command(),
                    violation.message
                ));
            }
            shapes
                .entry(violation.rule.clone())
                .or_default()
                .entry(shape(&violation.message))
                .or_insert_with(|| case.name.clone());
        }
    }
    assert!(bad.is_empty(), "{} messages read wrong:\n{}", bad.len(), bad.join("\n"));
    let mut text = String::new();
    for (rule, messages) in &shapes {
        for (message, scenario) in messages {
            text.push_str(&format!("{rule:<10} {message}   [{scenario}]\n"));
        }
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("golden"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!("messages", text));
}

#[test]
fn the_checks_catch_what_they_claim_to() {
    assert!(problems(r#"entry `a` has parent Some("b")"#).contains(&"a Rust Option printed with {:?}"));
    assert!(problems("op#1 appended 1 assistant messages").contains(&"a count of one with a plural noun"));
    assert!(problems("told of a assistant").contains(&"`a` before a vowel"));
    assert!(problems("appends an user message").contains(&"`an` before a consonant sound"));
    assert!(problems("succeeded before the store accepted all of its 0 entries").len() == 1);
    assert!(problems("op#1 appended 1 assistant message, but its run received 2 model responses").is_empty());
    assert_eq!(
        shape("op#2 at line 0015: `x` \"y\" [a,b]"),
        "op#N at line N: `…` \"…\" […]"
    );
}

/// A mode rejected because the runtime was poisoned (an append failed before the rejection) or
/// disposed (a dispose delivered before the mode) is never blamed by MODE-2 as rejected "on a
/// healthy runtime": that rejection is the POISON and LIFE rules' to judge. The failing cases
/// of the corpus under the zoo hold such rejections of both kinds; the test counts them, so it
/// cannot pass by meeting none.
#[test]
fn no_mode_is_blamed_for_a_rejection_the_state_explains() {
    use agentsim::model::Operation;
    use agentsim::runtime::Settlement;
    use agentsim::trace::Event;
    let (mut after_poison, mut after_dispose) = (0, 0);
    for case in cases() {
        let Some(outcome) = &case.outcome else { continue };
        let events = &outcome.trace.events;
        let failed_append = events
            .iter()
            .position(|event| matches!(event, Event::AppendAnswer { answer, .. } if answer.cause().is_some()));
        let dispose = events.iter().position(
            |event| matches!(event, Event::Deliver { operation, .. } if matches!(operation, Operation::Dispose)),
        );
        for (index, event) in events.iter().enumerate() {
            let Event::Deliver {
                op,
                operation: Operation::Mode { .. },
            } = event
            else {
                continue;
            };
            let rejected_at = events.iter().position(|event| {
                matches!(event, Event::Settled { op: settled, settlement: Settlement::Rejected(_) } if settled == op)
            });
            let Some(rejected_at) = rejected_at else { continue };
            let poisoned = failed_append.is_some_and(|failed| failed < rejected_at);
            let disposed = dispose.is_some_and(|dispose| dispose < index);
            if !(poisoned || disposed) {
                continue;
            }
            after_poison += usize::from(poisoned);
            after_dispose += usize::from(disposed);
            let called_healthy = format!("mode {op} was rejected");
            for violation in case.violations.iter().filter(|violation| violation.rule == "MODE-2") {
                assert!(
                    !(violation.message.contains(&called_healthy)
                        && violation.message.contains("on a healthy runtime")),
                    "{} ({}): MODE-2 calls a {} runtime healthy: {}",
                    case.name,
                    case.replay_command(),
                    if poisoned { "poisoned" } else { "disposed" },
                    violation.message
                );
            }
        }
    }
    assert!(
        after_poison > 0 && after_dispose > 0,
        "modes rejected after a failed append: {after_poison}, after a dispose: {after_dispose}"
    );
}
