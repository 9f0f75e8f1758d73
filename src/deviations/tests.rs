//! The expectation files' reading (every problem named by file, line and field) and a run's
//! comparison with one.

use super::*;
use crate::run::{CaseReport, Verdict};

const FILE: &str = "expectations/x.json";

fn parse_text(text: &str) -> Result<ExpectationFile, ExpectationError> {
    parse(Path::new(FILE), text)
}

const SOURCE: &str = r#""source":{"file":"dist/a.js","function":"A.b","line":3}"#;

/// A file of one cause with `fields` after its id.
fn one_cause(fields: &str) -> String {
    format!(r#"{{"implementation":"pi","causes":[{{"id":"c",{fields}}}]}}"#)
}

#[test]
fn a_valid_file_reads() {
    let file = parse_text(&format!(
        r#"{{"implementation":"pi-0.73.1","causes":[
            {{"id":"persist-at-message-end","verdict":"choice","reason":"r",{SOURCE},"firstDivergence":"0011 ...",
              "pairs":{{"PERSIST-7":["wiring/walkthrough","a/b"],"model[0].expect":["a/b"]}}}},
            {{"id":"hangs","verdict":"bug","reason":"r",{SOURCE},
              "pairs":{{"broken:subject.timeout":["a"]}},"explored":{{"POISON-2":["a/b"]}}}}]}}"#
    ))
    .expect("valid");
    assert_eq!(file.causes.len(), 2);
    assert_eq!(file.causes[0].verdict, DeviationVerdict::Choice);
    assert_eq!(
        file.causes[0].canonical_pairs(),
        [
            Pair {
                scenario: "a/b".into(),
                rule: "PERSIST-7".into()
            },
            Pair {
                scenario: "wiring/walkthrough".into(),
                rule: "PERSIST-7".into()
            },
            Pair {
                scenario: "a/b".into(),
                rule: "model[0].expect".into()
            }
        ]
    );
    assert_eq!(file.causes[1].explored_pairs().len(), 1);
}

#[test]
fn a_broken_verdict_can_be_expected_by_its_code() {
    let ok = one_cause(&format!(
        r#""verdict":"bug","reason":"hangs",{SOURCE},"pairs":{{"broken:subject.timeout":["a"]}}"#
    ));
    assert!(parse_text(&ok).is_ok());
    let bad = one_cause(&format!(
        r#""verdict":"bug","reason":"hangs",{SOURCE},"pairs":{{"broken:":["a"]}}"#
    ));
    let error = parse_text(&bad).unwrap_err();
    assert_eq!(error.field, "causes[0].pairs[\"broken:\"]");
}

/// Every problem names the file, the line and the field, whether serde or validation found it.
#[test]
fn problems_name_file_line_and_field() {
    let cases: &[(&str, usize, &str, &str)] = &[
        // An unknown rule, on the line of its key.
        (
            "{\"implementation\":\"pi\",\n\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\n\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\n\"pairs\":{\"PERSIST-99\":[\"a\"]}}]}",
            4,
            "causes[0].pairs.PERSIST-99",
            "unknown rule ID `PERSIST-99`",
        ),
        // An unknown field, found by serde.
        (
            "{\"implementation\":\"pi\",\n\"causes\":[],\n\"extra\":1}",
            3,
            "extra",
            "unknown field `extra`",
        ),
        // No verdict.
        (
            "{\"implementation\":\"pi\",\"causes\":[\n{\"id\":\"c\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\"pairs\":{\"expect\":[\"a\"]}}]}",
            2,
            "causes[0]",
            "missing field `verdict`",
        ),
        // A verdict that is neither.
        (
            "{\"implementation\":\"pi\",\"causes\":[\n{\"id\":\"c\",\"verdict\":\"maybe\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\"pairs\":{\"expect\":[\"a\"]}}]}",
            2,
            "causes[0].verdict",
            "unknown variant `maybe`",
        ),
        // A blank reason.
        (
            "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\n\"reason\":\" \",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\"pairs\":{\"expect\":[\"a\"]}}]}",
            2,
            "causes[0].reason",
            "needs its reason",
        ),
        // A source line 0.
        (
            "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\n\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":0},\"pairs\":{\"expect\":[\"a\"]}}]}",
            2,
            "causes[0].source",
            "1-based line",
        ),
        // No pair at all.
        (
            "{\"implementation\":\"pi\",\"causes\":[\n{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1}}]}",
            2,
            "causes[0].pairs",
            "at least one (scenario, rule) pair",
        ),
        // A rule with no scenario.
        (
            "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\n\"pairs\":{\n\"model[1].expect\":[]}}]}",
            3,
            "causes[0].pairs[\"model[1].expect\"]",
            "at least one scenario",
        ),
        // The same scenario twice for one rule of one cause.
        (
            "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\n\"pairs\":{\"expect\":[\"a\"]},\n\"explored\":{\"expect\":[\"a\"]}}]}",
            3,
            "causes[0].explored.expect[0]",
            "`a` is listed twice for expect in cause `c`",
        ),
        // A key given twice.
        (
            "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\"pairs\":{\"expect\":[\"a\"],\n\"expect\":[\"b\"]}}]}",
            2,
            "causes[0].pairs.expect",
            "given twice",
        ),
        // No implementation.
        ("{\"implementation\":\" \",\n\"causes\":[]}", 1, "implementation", "name the implementation"),
        // A syntax error.
        ("{\"implementation\":\"pi\",\n\"causes\":[}", 2, "-", "expected value"),
    ];
    for (text, line, field, message) in cases {
        let error = parse_text(text).unwrap_err();
        assert_eq!(error.file, Path::new(FILE), "{error}");
        assert_eq!((error.line, error.field.as_str()), (*line, *field), "{error}");
        assert!(error.message.contains(message), "{error}");
        assert!(
            error.to_string().starts_with(&format!("{FILE}:{line}: {field}: ")),
            "{error}"
        );
    }
}

#[test]
fn a_cause_id_is_given_once() {
    let text = format!(
        "{{\"implementation\":\"pi\",\"causes\":[\n{{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",{SOURCE},\"pairs\":{{\"expect\":[\"a\"]}}}},\n{{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",{SOURCE},\"pairs\":{{\"expect\":[\"b\"]}}}}]}}"
    );
    let error = parse_text(&text).unwrap_err();
    assert_eq!((error.line, error.field.as_str()), (3, "causes[1].id"), "{error}");
    assert!(error.message.contains("also causes[0]"), "{error}");
    let blank = one_cause(&format!(
        r#""verdict":"bug","reason":"r",{SOURCE},"pairs":{{"expect":["a"]}}"#
    ))
    .replace("\"id\":\"c\"", "\"id\":\"\"");
    assert_eq!(parse_text(&blank).unwrap_err().field, "causes[0].id");
}

/// A (scenario, rule) pair has one cause: listed by two, the error names both.
#[test]
fn a_pair_in_two_causes_is_refused() {
    let text = format!(
        "{{\"implementation\":\"pi\",\"causes\":[\n{{\"id\":\"first\",\"verdict\":\"bug\",\"reason\":\"r\",{SOURCE},\"pairs\":{{\"POISON-1\":[\"a\",\"b\"]}}}},\n{{\"id\":\"second\",\"verdict\":\"bug\",\"reason\":\"r\",{SOURCE},\n\"explored\":{{\"POISON-1\":[\"b\"]}}}}]}}"
    );
    let error = parse_text(&text).unwrap_err();
    assert_eq!(
        (error.line, error.field.as_str()),
        (4, "causes[1].explored.POISON-1[0]"),
        "{error}"
    );
    assert!(
        error.message.contains("listed by cause `first` and by cause `second`"),
        "{error}"
    );
}

/// A source cites the implementation's installed code: never a file of the adapter.
#[test]
fn an_adapter_source_is_refused() {
    for file in [
        "adapters/pi/adapter.mjs",
        "../pi-family/family.mjs",
        "/usr/lib/node_modules/pi/dist/a.js",
        "releases/0.70.6/adapters/pi/x.js",
        "node_modules/../../family.mjs",
    ] {
        let text = format!(
            "{{\"implementation\":\"pi\",\"causes\":[{{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\n\"source\":{{\n\"file\":{},\"function\":\"f\",\"line\":1}},\"pairs\":{{\"expect\":[\"a\"]}}}}]}}",
            serde_json::to_string(file).expect("a string")
        );
        let error = parse_text(&text).unwrap_err();
        assert_eq!(
            (error.line, error.field.as_str()),
            (3, "causes[0].source.file"),
            "{file}: {error}"
        );
        assert!(error.message.contains("not the adapter's"), "{error}");
    }
    for file in [
        "node_modules/@mariozechner/pi-coding-agent/dist/core/agent-session.js",
        "releases/0.70.6/node_modules/pkg/dist/a.js",
        ".venv/lib/python3.11/site-packages/aelix_agent_core/harness/core.py",
    ] {
        assert!(is_installed_code(file), "{file}");
    }
}

/// A cause labelled `choice` may not explain a broken MUST rule, under `pairs` or `explored`.
#[test]
fn a_must_pair_under_a_choice_cause_is_refused() {
    assert_eq!(level_of("POISON-1"), Some(Level::Must));
    assert_eq!(level_of("PROJECT-2"), Some(Level::Should));
    for list in ["pairs", "explored"] {
        let text = format!(
            "{{\"implementation\":\"pi\",\"causes\":[{{\"id\":\"swallowed\",\n\"verdict\":\"choice\",\"reason\":\"r\",{SOURCE},\n\"{list}\":{{\"PROJECT-2\":[\"a\"],\"POISON-1\":[\"b\"]}}}}]}}"
        );
        let error = parse_text(&text).unwrap_err();
        assert_eq!((error.line, error.field.as_str()), (2, "causes[0].verdict"), "{error}");
        assert!(error.message.starts_with(MUST_IS_A_BUG), "{error}");
        assert!(error.message.contains("lists POISON-1"), "{error}");
        assert!(parse_text(&text.replace("\"choice\"", "\"bug\"")).is_ok());
    }
    // SHOULD rules and the scenario's own checks may be a choice.
    let text = one_cause(&format!(
        r#""verdict":"choice","reason":"r",{SOURCE},"pairs":{{"PROJECT-2":["a"],"expect":["a"],"model[0].expect":["a"],"broken:subject.timeout":["b"]}}"#
    ));
    assert!(parse_text(&text).is_ok());
}

fn pair(scenario: &str, rule: &str) -> Pair {
    Pair {
        scenario: scenario.into(),
        rule: rule.into(),
    }
}

/// A passed case, and a failed one breaking `rules`.
fn case(name: &str, rules: &[&str]) -> CaseReport {
    let mut report = CaseReport::unrun(
        name,
        crate::run::Run::at(PathBuf::from(format!("scenarios/{name}.json"))),
    );
    if rules.is_empty() {
        report.verdict = Verdict::Passed;
    } else {
        report.verdict = Verdict::Failed;
        report.violations = rules
            .iter()
            .map(|rule| crate::check::Violation {
                rule: rule.to_string(),
                clause: None,
                lines: vec![1],
                message: format!("{rule} broke"),
                evident_at: None,
            })
            .collect();
    }
    report
}

#[test]
fn explored_deviations_are_allowed_never_required() {
    let file = parse_text(&one_cause(&format!(
        r#""verdict":"bug","reason":"r",{SOURCE},"pairs":{{"PERSIST-7":["a"]}},"explored":{{"PERSIST-7":["b","c"]}}"#
    )))
    .expect("valid");
    // Under exploration: listed under either key is fine, anything else is unexpected.
    let found = [
        (pair("a", "PERSIST-7"), "m".to_string()),
        (pair("c", "PERSIST-7"), "m".to_string()),
        (pair("c", "PERSIST-6"), "m".to_string()),
    ];
    let explored = compare_explored(&file, &found);
    assert_eq!(explored.listed, [pair("a", "PERSIST-7"), pair("c", "PERSIST-7")]);
    assert_eq!(explored.unexpected, [(pair("c", "PERSIST-6"), "m".to_string())]);
    // On the canonical schedule an explored pair that passes is not stale; a canonical one is.
    let comparison = compare(&file, &[]);
    assert!(comparison.stale.is_empty());
    assert_eq!(comparison.unjudged, [pair("a", "PERSIST-7")]);
    let comparison = compare(&file, &[case("a", &[]), case("b", &[]), case("c", &["PERSIST-7"])]);
    assert_eq!(comparison.stale, [(pair("a", "PERSIST-7"), "c".to_string())]);
    assert_eq!(comparison.confirmed, [pair("c", "PERSIST-7")]);
}

/// Stale pairs are told per cause: one line per cause, its pairs by rule; unexpected ones
/// stay one per pair, and a cause whose pairs all still fail says nothing.
#[test]
fn stale_pairs_are_grouped_by_cause() {
    let file = parse_text(&format!(
        r#"{{"implementation":"pi","causes":[
            {{"id":"failed-append-swallowed","verdict":"bug","reason":"r",{SOURCE},
              "pairs":{{"POISON-1":["c","d"],"PERSIST-6":["a","b","d"]}}}},
            {{"id":"system-prompt","verdict":"choice","reason":"r",{SOURCE},"pairs":{{"PROJECT-2":["a","b"]}}}},
            {{"id":"not-run","verdict":"choice","reason":"r",{SOURCE},"pairs":{{"PROJECT-2":["z"]}}}}]}}"#
    ))
    .expect("valid");
    let reports = [
        case("a", &["PROJECT-2"]),
        case("b", &["PROJECT-2", "WIRE-1"]),
        case("c", &[]),
        case("d", &["POISON-1", "PERSIST-6"]),
    ];
    let comparison = compare(&file, &reports);
    assert!(!comparison.holds());
    assert_eq!(
        comparison.unexpected,
        [(pair("b", "WIRE-1"), "WIRE-1 broke".to_string())]
    );
    assert_eq!(comparison.unjudged, [pair("z", "PROJECT-2")]);
    let stale: Vec<String> = comparison
        .causes
        .iter()
        .filter(|cause| !cause.stale.is_empty())
        .map(stale_line)
        .collect();
    assert_eq!(
        stale,
        ["STALE cause failed-append-swallowed (bug): 3 of 5 pairs no longer fail: PERSIST-6 on a, b; POISON-1 on c"]
    );
    let swallowed = &comparison.causes[0];
    assert_eq!(swallowed.confirmed, [pair("d", "PERSIST-6"), pair("d", "POISON-1")]);
    assert_eq!(comparison.causes[1].confirmed.len(), 2);
    assert!(comparison.causes[1].stale.is_empty());
    assert_eq!(comparison.causes[2].unjudged, [pair("z", "PROJECT-2")]);
    assert_eq!(comparison.stale.len(), 3);
    assert!(comparison
        .stale
        .iter()
        .all(|(_, cause)| cause == "failed-append-swallowed"));
}

#[test]
fn rules_are_ordered_as_the_catalogue_then_the_scenario_checks() {
    let mut rules = vec![
        "broken:subject.timeout",
        "model[10].expect",
        "expect",
        "POISON-1",
        "model[2].expect",
        "RESTORE-1",
    ];
    rules.sort_by_key(|rule| rule_order(rule));
    assert_eq!(
        rules,
        [
            "RESTORE-1",
            "POISON-1",
            "expect",
            "model[2].expect",
            "model[10].expect",
            "broken:subject.timeout"
        ]
    );
}
