//! [`LineFacts`]: the few facts of one session line the checks need (its shape, `type`, `id`,
//! `parentId`, and of a message its role, `toolCallId` and tool calls), read straight from the
//! line's JSON text without building a tree of it.
//!
//! A line is read with serde_json's own parser through visitors that keep these facts and skip
//! the rest, so a line is accepted or refused exactly as parsing it into a `serde_json::Value`
//! would: every value is read with `deserialize_any`, as a `Value` is, so every number, string
//! and nesting depth is checked the same way and an error has the same text and column. A
//! repeated key counts by its last value, as it does in a `Value`. The same visitors read facts
//! from a `Value` already parsed ([`LineFacts::of_value`]), so both ways agree by construction.
//! A typed entry's facts ([`LineFacts::of_entry`], a store's entries judged with no file to read)
//! are read from its fields: a test holds them to those of the line it serializes to.
//! Never IO; never panics.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::model::{Message, SessionEntry};

/// The entry `type`s Pi 0.73 writes.
pub const PI_ENTRY_TYPES: [&str; 9] = [
    "message",
    "compaction",
    "branch_summary",
    "model_change",
    "thinking_level_change",
    "custom",
    "custom_message",
    "label",
    "session_info",
];

/// What kind of JSON value a whole line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    Object,
    Array,
    /// A string, number, boolean or null.
    #[default]
    Scalar,
}

/// One field of an object, as far as the checks look at it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Field {
    #[default]
    Missing,
    Null,
    String(String),
    /// A number, a boolean, an object or an array.
    Other,
}

impl Field {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Field::String(text) => Some(text),
            _ => None,
        }
    }
}

/// A message's `role`, as far as the checks look at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    Assistant,
    ToolResult,
    /// Any other string, or no string at all.
    #[default]
    Other,
}

/// The facts of a `message` field that is an object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MessageFacts {
    pub role: Role,
    /// `toolCallId` when it is a string.
    pub tool_call_id: Option<String>,
    /// The `id` of every `content` block whose `type` is `toolCall` and whose `id` is a string,
    /// in content order; empty when `content` is not an array.
    pub tool_calls: Vec<String>,
}

/// What the checks need of one line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LineFacts {
    pub shape: Shape,
    /// `type`, `id`, `parentId`: `Missing` unless the line is an object that has them.
    pub kind: Field,
    pub id: Field,
    pub parent_id: Field,
    /// `message`, when the line is an object whose `message` is an object.
    pub message: Option<MessageFacts>,
}

impl LineFacts {
    /// The facts of a value already parsed.
    pub fn of_value(value: &Value) -> LineFacts {
        // The visitors accept every value a `Value` can hold, so this cannot fail; a scalar's
        // facts (no fields) are the answer that claims least if it ever did.
        LineFacts::deserialize(value).unwrap_or_default()
    }

    /// The facts of the line a typed entry serializes to, read from its fields without writing
    /// it. Only a `message` entry's message is read: the checks look at no other kind's.
    pub fn of_entry(entry: &SessionEntry) -> LineFacts {
        let message = entry.as_message().map(|message| match message {
            Message::Assistant(assistant) => MessageFacts {
                role: Role::Assistant,
                tool_call_id: None,
                tool_calls: assistant.tool_calls().iter().map(|call| call.id.clone()).collect(),
            },
            Message::ToolResult(result) => MessageFacts {
                role: Role::ToolResult,
                tool_call_id: Some(result.tool_call_id.clone()),
                tool_calls: Vec::new(),
            },
            Message::User(_) => MessageFacts::default(),
        });
        LineFacts {
            shape: Shape::Object,
            kind: Field::String(entry.kind().to_string()),
            id: Field::String(entry.id.clone()),
            parent_id: entry.parent_id.clone().map_or(Field::Null, Field::String),
            message,
        }
    }

    /// The record's `type` when it is a string.
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_str()
    }

    /// `Some(tool call id)` of a tool result message entry whose `toolCallId` is a string.
    pub fn tool_result_call_id(&self) -> Option<&str> {
        let message = self.message_entry()?;
        if message.role != Role::ToolResult {
            return None;
        }
        message.tool_call_id.as_deref()
    }

    /// Whether this is a message entry whose role is `toolResult`.
    pub fn is_tool_result(&self) -> bool {
        self.message_entry()
            .is_some_and(|message| message.role == Role::ToolResult)
    }

    /// The tool call ids of an assistant message entry, in content order.
    pub fn tool_call_ids(&self) -> &[String] {
        match self.message_entry() {
            Some(message) if message.role == Role::Assistant => &message.tool_calls,
            _ => &[],
        }
    }

    fn message_entry(&self) -> Option<&MessageFacts> {
        if self.kind() != Some("message") {
            return None;
        }
        self.message.as_ref()
    }

    /// Whether the line looks like one Pi writes: the header, an entry of a known type, or an
    /// entry of a type Pi may add later (a string `type` with a string `id` and a `parentId`).
    pub fn is_pi_record(&self) -> bool {
        if self.shape != Shape::Object {
            return false;
        }
        match self.kind() {
            Some("session") => true,
            Some(kind) if PI_ENTRY_TYPES.contains(&kind) => true,
            Some(_) => matches!(self.id, Field::String(_)) && self.parent_id != Field::Missing,
            None => false,
        }
    }

    /// Why a line that is not a Pi record is not one, as the `not a Pi session` error says it.
    pub fn not_pi_reason(&self) -> String {
        match (self.shape, &self.kind) {
            (Shape::Object, Field::String(kind)) => {
                format!("an object of unknown type `{kind}` without `id` and `parentId`")
            }
            (Shape::Object, Field::Missing) => "an object without a `type` field".to_string(),
            (Shape::Object, _) => "an object whose `type` is not a string".to_string(),
            (Shape::Array, _) => "a JSON array, not an object".to_string(),
            (Shape::Scalar, _) => "a JSON scalar, not an object".to_string(),
        }
    }
}

/// Reads any value and keeps nothing, checking it exactly as reading it into a `Value` would
/// (unlike `serde::de::IgnoredAny`, which does not check that a number fits in an `f64`).
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Skip, D::Error> {
        deserializer.deserialize_any(SkipVisitor)?;
        Ok(Skip)
    }
}

struct SkipVisitor;

/// The visit methods that skip a value: every kind a `Value` holds. `$kept` is what a visitor
/// returns for a value it does not look into.
macro_rules! skip_values {
    ($kept:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($kept)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($kept)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($kept)
        }
        fn visit_i128<E: de::Error>(self, _: i128) -> Result<Self::Value, E> {
            Ok($kept)
        }
        fn visit_u128<E: de::Error>(self, _: u128) -> Result<Self::Value, E> {
            Ok($kept)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($kept)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($kept)
        }
        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            Skip::deserialize(deserializer)?;
            Ok($kept)
        }
    };
}

/// Every element of an array or entry of an object, skipped.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Skip>()?.is_some() {}
    Ok(())
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_key::<Skip>()?.is_some() {
        map.next_value::<Skip>()?;
    }
    Ok(())
}

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    skip_values!(());

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        skip_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        skip_map(map)
    }
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Field, D::Error> {
        deserializer.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    skip_values!(Field::Other);

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Field, E> {
        Ok(Field::String(text.to_string()))
    }
    fn visit_string<E: de::Error>(self, text: String) -> Result<Field, E> {
        Ok(Field::String(text))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Field, E> {
        Ok(Field::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Field, A::Error> {
        skip_seq(seq)?;
        Ok(Field::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Field, A::Error> {
        skip_map(map)?;
        Ok(Field::Other)
    }
}

/// An object key, known by the few names the checks read; any other key is `Other`.
struct Key<'k> {
    names: &'k [&'static str],
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    /// The index of the name in `names`, or `None`.
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Option<usize>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.names.iter().position(|name| *name == key))
    }
}

const LINE_KEYS: &[&str] = &["type", "id", "parentId", "message"];
const MESSAGE_KEYS: &[&str] = &["role", "toolCallId", "content"];
const BLOCK_KEYS: &[&str] = &["type", "id"];

impl<'de> Deserialize<'de> for LineFacts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<LineFacts, D::Error> {
        deserializer.deserialize_any(LineVisitor)
    }
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = LineFacts;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    skip_values!(LineFacts::default());

    fn visit_str<E: de::Error>(self, _: &str) -> Result<LineFacts, E> {
        Ok(LineFacts::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<LineFacts, E> {
        Ok(LineFacts::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<LineFacts, A::Error> {
        skip_seq(seq)?;
        Ok(LineFacts {
            shape: Shape::Array,
            ..LineFacts::default()
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LineFacts, A::Error> {
        let mut facts = LineFacts {
            shape: Shape::Object,
            ..LineFacts::default()
        };
        while let Some(key) = map.next_key_seed(Key { names: LINE_KEYS })? {
            match key {
                Some(0) => facts.kind = map.next_value()?,
                Some(1) => facts.id = map.next_value()?,
                Some(2) => facts.parent_id = map.next_value()?,
                Some(_) => facts.message = map.next_value::<MessageField>()?.0,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(facts)
    }
}

/// A `message` field: its facts when it is an object.
struct MessageField(Option<MessageFacts>);

impl<'de> Deserialize<'de> for MessageField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<MessageField, D::Error> {
        deserializer.deserialize_any(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = MessageField;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    skip_values!(MessageField(None));

    fn visit_str<E: de::Error>(self, _: &str) -> Result<MessageField, E> {
        Ok(MessageField(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<MessageField, E> {
        Ok(MessageField(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MessageField, A::Error> {
        skip_seq(seq)?;
        Ok(MessageField(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MessageField, A::Error> {
        let mut message = MessageFacts::default();
        while let Some(key) = map.next_key_seed(Key { names: MESSAGE_KEYS })? {
            match key {
                Some(0) => {
                    message.role = match map.next_value::<Field>()? {
                        Field::String(role) if role == "assistant" => Role::Assistant,
                        Field::String(role) if role == "toolResult" => Role::ToolResult,
                        _ => Role::Other,
                    }
                }
                Some(1) => {
                    message.tool_call_id = match map.next_value::<Field>()? {
                        Field::String(id) => Some(id),
                        _ => None,
                    }
                }
                Some(_) => message.tool_calls = map.next_value::<Content>()?.0,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(MessageField(Some(message)))
    }
}

/// A message's `content`: the ids of its tool call blocks when it is an array.
struct Content(Vec<String>);

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Content, D::Error> {
        deserializer.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    skip_values!(Content(Vec::new()));

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Content, E> {
        Ok(Content(Vec::new()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
        Ok(Content(Vec::new()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
        let mut calls = Vec::new();
        while let Some(block) = seq.next_element::<Block>()? {
            if let Block {
                is_tool_call: true,
                id: Some(id),
            } = block
            {
                calls.push(id);
            }
        }
        Ok(Content(calls))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Content, A::Error> {
        skip_map(map)?;
        Ok(Content(Vec::new()))
    }
}

/// One content block: whether its `type` is `toolCall`, and its `id` when a string.
#[derive(Default)]
struct Block {
    is_tool_call: bool,
    id: Option<String>,
}

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Block, D::Error> {
        deserializer.deserialize_any(BlockVisitor)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = Block;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    skip_values!(Block::default());

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Block, E> {
        Ok(Block::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Block, E> {
        Ok(Block::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Block, A::Error> {
        skip_seq(seq)?;
        Ok(Block::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Block, A::Error> {
        let mut block = Block::default();
        while let Some(key) = map.next_key_seed(Key { names: BLOCK_KEYS })? {
            match key {
                Some(0) => block.is_tool_call = map.next_value::<Field>()?.as_str() == Some("toolCall"),
                Some(_) => {
                    block.id = match map.next_value::<Field>()? {
                        Field::String(id) => Some(id),
                        _ => None,
                    }
                }
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(block)
    }
}
