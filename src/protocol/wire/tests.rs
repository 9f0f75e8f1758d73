//! The wire's lines: what each documented shape reads as, which lines are refused with which
//! code, and inputs that survive the trip to an adapter and back.

use super::*;
use crate::model::*;
use crate::protocol::convert::*;
use crate::runtime::*;
use serde_json::json;

fn round_trip_adapter(line: &str) -> AdapterMessage {
    let message = parse_adapter_line(line).unwrap_or_else(|error| panic!("{line}: {error}"));
    let again = parse_adapter_line(&to_line(&message)).expect("a printed message reads back");
    assert_eq!(message, again);
    message
}

#[test]
fn the_documented_adapter_lines_parse() {
    round_trip_adapter(
        r#"{"type":"hello","protocol":1,"implementation":{"name":"pi","version":"0.73.1"},
         "features":["steer","followUp","abort","mode","library","chunks","sync-store"],
         "unsupported":{"library":"Pi has no library adapter of its own"}}"#,
    );
    round_trip_adapter(r#"{"type":"started","leaf":"old-assistant","messages":2}"#);
    round_trip_adapter(r#"{"type":"started","leaf":null,"messages":0}"#);
    round_trip_adapter(r#"{"type":"restore_failed","cause":{"code":"restore.leaf_required","message":"..."}}"#);
    round_trip_adapter(
        r#"{"type":"effect","effect":{"kind":"tool_call","id":3,"signal":1,"call":{"id":"call-1","name":"review_note","arguments":{"a":1}}}}"#,
    );
    round_trip_adapter(
        r#"{"type":"effect","effect":{"kind":"model_request","id":1,"signal":1,"request":{"systemPrompt":null,"messages":[{"role":"user","content":"hi","timestamp":1}],"tools":[{"name":"t","description":"d","parameters":{"type":"object"}}]}}}"#,
    );
    round_trip_adapter(
        r#"{"type":"effect","effect":{"kind":"hook","id":2,"extension":"review-policy","phase":"before","call":{"id":"c","name":"n","arguments":{}},"result":null}}"#,
    );
    round_trip_adapter(r#"{"type":"effect","effect":{"kind":"write","id":9,"text":"done\n"}}"#);
    round_trip_adapter(r#"{"type":"abort_signal","signal":1}"#);
    round_trip_adapter(
        r#"{"type":"settled","op":1,"settlement":{"status":"resolved","value":{"kind":"run","reason":"stop","steps":2,"messages":[]}}}"#,
    );
    round_trip_adapter(
        r#"{"type":"settled","op":2,"settlement":{"status":"rejected","cause":{"code":"diskError","message":"disk full"}}}"#,
    );
    round_trip_adapter(r#"{"type":"settled","op":3,"settlement":{"status":"resolved","value":{"kind":"unit"}}}"#);
    round_trip_adapter(
        r#"{"type":"settled","op":4,"settlement":{"status":"resolved","value":{"kind":"library","reason":"max_steps","text":"x"}}}"#,
    );
    round_trip_adapter(r#"{"type":"idle"}"#);
    round_trip_adapter(r#"{"type":"error","code":"input.unknown_effect","message":"fx#9 is not pending"}"#);
}

#[test]
fn each_kind_of_bad_line_has_its_own_error() {
    let code = |line: &str| parse_adapter_line(line).map(|_| ()).unwrap_err().code();
    assert_eq!(code("this is not json"), "wire.garbage");
    assert_eq!(code("[1,2]"), "wire.garbage");
    assert_eq!(code(r#"{"type":"telemetry"}"#), "wire.unknown_type");
    assert_eq!(code(r#"{"kind":"idle"}"#), "wire.unknown_type");
    assert_eq!(
        code(r#"{"type":"effect","effect":{"kind":"teleport","id":1}}"#),
        "wire.unknown_effect_kind"
    );
    assert_eq!(
        code(r#"{"type":"hello","protocol":3,"implementation":{"name":"x","version":"1"}}"#),
        "wire.version"
    );
    assert_eq!(code(r#"{"type":"idle","extra":1}"#), "wire.malformed");
    assert_eq!(code(r#"{"type":"started","leaf":"a"}"#), "wire.malformed");
    assert_eq!(
        code(r#"{"type":"effect","effect":{"kind":"write","id":-1,"text":""}}"#),
        "wire.malformed"
    );
}

#[test]
fn kit_lines_match_the_documented_shapes() {
    let operation = input_to_wire(&Input::Operation {
        op: OpId(1),
        operation: Operation::Prompt {
            text: "检查 parser".into(),
        },
    });
    assert_eq!(
        serde_json::to_value(&operation).unwrap(),
        json!({"type":"operation","op":1,"operation":{"op":"prompt","text":"检查 parser"}})
    );
    let flush = input_to_wire(&Input::Operation {
        op: OpId(2),
        operation: Operation::Flush,
    });
    assert_eq!(
        serde_json::to_value(&flush).unwrap(),
        json!({"type":"operation","op":2,"operation":{"op":"flush"}})
    );
    let complete = input_to_wire(&Input::Complete {
        effect: EffectId(3),
        completion: Completion::Tool(ToolOutcome::Ok {
            content: vec![ContentBlock::text("ok")],
            details: None,
            is_error: false,
        }),
    });
    assert_eq!(
        serde_json::to_value(&complete).unwrap(),
        json!({"type":"complete","effect":3,"completion":{"kind":"tool","outcome":
            {"kind":"ok","content":[{"type":"text","text":"ok"}],"details":null,"isError":false}}})
    );
    let append = input_to_wire(&Input::Complete {
        effect: EffectId(4),
        completion: Completion::Append(StoreOutcome::Failed(Cause::new("diskError", "disk full"))),
    });
    assert_eq!(
        serde_json::to_value(&append).unwrap(),
        json!({"type":"complete","effect":4,"completion":{"kind":"append","outcome":
            {"kind":"failed","cause":{"code":"diskError","message":"disk full"}}}})
    );
    assert_eq!(to_line(&KitMessage::Shutdown {}), r#"{"type":"shutdown"}"#);
}

#[test]
fn inputs_survive_the_wire() {
    let inputs = vec![
        Input::Operation {
            op: OpId(1),
            operation: Operation::Mode {
                mode: "json".into(),
                text: "t".into(),
            },
        },
        Input::Operation {
            op: OpId(2),
            operation: Operation::Library { text: "t".into() },
        },
        Input::Complete {
            effect: EffectId(5),
            completion: Completion::Hook(HookOutcome::RewriteResult {
                content: vec![ContentBlock::text("x")],
                is_error: true,
            }),
        },
        Input::Complete {
            effect: EffectId(6),
            completion: Completion::ModelChunk { text: "par".into() },
        },
    ];
    for input in inputs {
        let line = to_line(&input_to_wire(&input));
        let message = parse_kit_line(&line).expect("kit lines read back");
        assert_eq!(input_from_wire(message), Some(input));
    }
}
