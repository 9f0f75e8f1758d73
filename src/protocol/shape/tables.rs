//! The tables: `wire::AdapterMessage` and the Pi shapes it carries (`model`), field for field as
//! their serde types declare them, in docs/protocol.md's order.

use super::{closed, open, opt, req, tagged, Field, Record, Shape, Tagged, MALFORMED};

static STRING: Shape = Shape::Str;
static STRING_OR_NULL: Shape = Shape::Nullable(&STRING);

static CAUSE: Record = closed(&[req("code", Shape::Str), req("message", Shape::Str)]);

/// `model::ContentBlock`: text and image blocks of user messages and tool results.
static CONTENT_BLOCK: Tagged = tagged(
    "type",
    &[
        ("text", open(&[req("text", Shape::Str)])),
        ("image", open(&[req("data", Shape::Str), req("mimeType", Shape::Str)])),
    ],
);
pub(in crate::protocol) static CONTENT_BLOCK_SHAPE: Shape = Shape::Tagged(&CONTENT_BLOCK);

/// `model::ToolCall`.
static TOOL_CALL: Record = open(&[
    req("id", Shape::Str),
    req("name", Shape::Str),
    req("arguments", Shape::Any),
]);

/// `model::AssistantBlock`.
static ASSISTANT_BLOCK: Tagged = tagged(
    "type",
    &[
        ("text", open(&[req("text", Shape::Str)])),
        ("thinking", open(&[req("thinking", Shape::Str)])),
        (
            "toolCall",
            open(&[
                req("id", Shape::Str),
                req("name", Shape::Str),
                req("arguments", Shape::Any),
            ]),
        ),
    ],
);
static ASSISTANT_BLOCK_SHAPE: Shape = Shape::Tagged(&ASSISTANT_BLOCK);

/// `model::Cost`.
static COST: Record = open(&[
    req("input", Shape::Number),
    req("output", Shape::Number),
    req("cacheRead", Shape::Number),
    req("cacheWrite", Shape::Number),
    req("total", Shape::Number),
]);

/// `model::Usage`.
static USAGE: Record = open(&[
    req("input", Shape::U64),
    req("output", Shape::U64),
    req("cacheRead", Shape::U64),
    req("cacheWrite", Shape::U64),
    req("totalTokens", Shape::U64),
    req("cost", Shape::Record(&COST)),
]);

static STOP_REASONS: &[&str] = &["stop", "length", "toolUse", "error", "aborted"];

/// `model::ToolResultMessage` (its `role`, where it has one, is not read).
static TOOL_RESULT_FIELDS: &[Field] = &[
    req("toolCallId", Shape::Str),
    req("toolName", Shape::Str),
    req("content", Shape::Array(&CONTENT_BLOCK_SHAPE)),
    opt("details", Shape::Any),
    req("isError", Shape::Bool),
    req("timestamp", Shape::U64),
];
static TOOL_RESULT: Record = open(TOOL_RESULT_FIELDS);
static TOOL_RESULT_SHAPE: Shape = Shape::Record(&TOOL_RESULT);

/// `model::Message`, tagged by `role`.
static MESSAGE: Tagged = tagged(
    "role",
    &[
        (
            "user",
            closed(&[req("content", Shape::UserContent), req("timestamp", Shape::U64)]),
        ),
        (
            "assistant",
            open(&[
                req("content", Shape::Array(&ASSISTANT_BLOCK_SHAPE)),
                req("api", Shape::Str),
                req("provider", Shape::Str),
                req("model", Shape::Str),
                req("usage", Shape::Record(&USAGE)),
                req("stopReason", Shape::Enum(STOP_REASONS)),
                opt("errorMessage", Shape::Nullable(&STRING)),
                req("timestamp", Shape::U64),
            ]),
        ),
        ("toolResult", open(TOOL_RESULT_FIELDS)),
    ],
);
static MESSAGE_SHAPE: Shape = Shape::Tagged(&MESSAGE);
static MESSAGES: Shape = Shape::Array(&MESSAGE_SHAPE);

/// The identity every session entry has (`model::SessionEntry::from_object`).
const ENTRY_IDENTITY: [Field; 3] = [
    req("id", Shape::Str),
    req("parentId", Shape::Nullable(&STRING)),
    req("timestamp", Shape::Str),
];
const METADATA: Record = open(&ENTRY_IDENTITY);

/// `model::SessionEntry`, tagged by `type`; other fields of a `message` entry are ignored.
static ENTRY: Tagged = tagged(
    "type",
    &[
        (
            "message",
            open(&[
                ENTRY_IDENTITY[0],
                ENTRY_IDENTITY[1],
                ENTRY_IDENTITY[2],
                req("message", Shape::Tagged(&MESSAGE)),
            ]),
        ),
        (
            "compaction",
            open(&[
                ENTRY_IDENTITY[0],
                ENTRY_IDENTITY[1],
                ENTRY_IDENTITY[2],
                req("summary", Shape::Str),
                req("firstKeptEntryId", Shape::Str),
                req("tokensBefore", Shape::U64),
            ]),
        ),
        ("branch_summary", METADATA),
        ("model_change", METADATA),
        ("thinking_level_change", METADATA),
        ("custom", METADATA),
        ("custom_message", METADATA),
        ("label", METADATA),
        ("session_info", METADATA),
    ],
);

/// `model::ToolSpec`.
static TOOL_SPEC: Record = closed(&[
    req("name", Shape::Str),
    opt("description", Shape::Str),
    opt("parameters", Shape::Any),
]);
static TOOL_SPEC_SHAPE: Shape = Shape::Record(&TOOL_SPEC);

/// `runtime::ObservedEvent`.
static EVENT: Tagged = tagged(
    "type",
    &[
        ("message_end", closed(&[req("message", Shape::Tagged(&MESSAGE))])),
        (
            "turn_end",
            closed(&[req("message", Shape::Tagged(&MESSAGE)), req("toolResults", MESSAGES)]),
        ),
        ("agent_end", closed(&[req("messages", MESSAGES)])),
    ],
);

/// `wire::WireEffect`, tagged by `kind`.
static EFFECT: Tagged = Tagged {
    tag: "kind",
    variants: &[
        (
            "model_request",
            closed(&[
                req("id", Shape::U32),
                req("signal", Shape::U32),
                req(
                    "request",
                    Shape::Record(&closed(&[
                        opt("systemPrompt", STRING_OR_NULL),
                        req("messages", MESSAGES),
                        req("tools", Shape::Array(&TOOL_SPEC_SHAPE)),
                    ])),
                ),
            ]),
        ),
        (
            "tool_call",
            closed(&[
                req("id", Shape::U32),
                req("signal", Shape::U32),
                req("call", Shape::Record(&TOOL_CALL)),
            ]),
        ),
        (
            "hook",
            closed(&[
                req("id", Shape::U32),
                req("extension", Shape::Str),
                req("phase", Shape::Enum(&["before", "after"])),
                req("call", Shape::Record(&TOOL_CALL)),
                opt("result", Shape::Nullable(&TOOL_RESULT_SHAPE)),
            ]),
        ),
        (
            "append",
            closed(&[req("id", Shape::U32), req("entry", Shape::Tagged(&ENTRY))]),
        ),
        ("write", closed(&[req("id", Shape::U32), req("text", Shape::Str)])),
        (
            "notify",
            closed(&[
                req("id", Shape::U32),
                req("observer", Shape::Str),
                req("event", Shape::Tagged(&EVENT)),
            ]),
        ),
    ],
    unknown_code: "wire.unknown_effect_kind",
    missing_code: MALFORMED,
};

/// `wire::WireState`: the state probe's `idle.state` (`null` reads as absent).
static STATE: Record = closed(&[opt("leaf", STRING_OR_NULL), req("persisted", Shape::U64)]);
static STATE_SHAPE: Shape = Shape::Record(&STATE);

/// `wire::Probe`: the probes an adapter may declare in `hello.probes`.
static PROBE: Shape = Shape::Enum(&["state"]);

static RUN_REASONS: &[&str] = &["stop", "length", "error", "aborted", "max_steps"];

/// `wire::WireSettlement`, tagged by `status`.
static SETTLEMENT: Tagged = tagged(
    "status",
    &[
        (
            "resolved",
            closed(&[req(
                "value",
                Shape::Tagged(&tagged(
                    "kind",
                    &[
                        ("unit", closed(&[])),
                        (
                            "run",
                            closed(&[
                                req("reason", Shape::Enum(RUN_REASONS)),
                                req("steps", Shape::U32),
                                req("messages", MESSAGES),
                            ]),
                        ),
                        (
                            "library",
                            closed(&[req("reason", Shape::Enum(RUN_REASONS)), req("text", Shape::Str)]),
                        ),
                    ],
                )),
            )]),
        ),
        ("rejected", closed(&[req("cause", Shape::Record(&CAUSE))])),
    ],
);

/// `wire::AdapterMessage`, tagged by `type`, in docs/protocol.md's order.
pub(in crate::protocol) static ADAPTER_MESSAGE: Tagged = Tagged {
    tag: "type",
    variants: &[
        (
            "hello",
            closed(&[
                req("protocol", Shape::Version),
                req(
                    "implementation",
                    Shape::Record(&closed(&[req("name", Shape::Str), req("version", Shape::Str)])),
                ),
                opt("features", Shape::Array(&STRING)),
                opt("unsupported", Shape::StrMap),
                opt("probes", Shape::Array(&PROBE)),
            ]),
        ),
        (
            "started",
            closed(&[opt("leaf", STRING_OR_NULL), req("messages", Shape::U64)]),
        ),
        ("restore_failed", closed(&[req("cause", Shape::Record(&CAUSE))])),
        ("effect", closed(&[req("effect", Shape::Tagged(&EFFECT))])),
        ("abort_signal", closed(&[req("signal", Shape::U32)])),
        (
            "settled",
            closed(&[req("op", Shape::U32), req("settlement", Shape::Tagged(&SETTLEMENT))]),
        ),
        ("idle", closed(&[opt("state", Shape::Nullable(&STATE_SHAPE))])),
        (
            "error",
            closed(&[
                req("code", Shape::Str),
                req("message", Shape::Str),
                opt("recoverable", Shape::Bool),
            ]),
        ),
    ],
    unknown_code: "wire.unknown_type",
    missing_code: "wire.unknown_type",
};
