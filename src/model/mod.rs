//! Plain data and pure functions: messages and entries in Pi's JSON shapes, the tree walk
//! (`path_to`), the one context projection (`build_context`), resources, tools, and the
//! operations a caller makes.
//!
//! Nothing here performs IO, keeps state between calls, or knows about scheduling.

pub mod context;
pub mod difference;
pub mod entry;
pub mod message;
pub mod operation;
pub mod path;
pub mod resources;
pub mod tools;

pub use context::{
    build_context, build_context_over, build_context_with_suffix, estimate_message_tokens, estimate_text_tokens,
    project_over, ContextBudget, ProjectedContext, Projection,
};
pub use difference::first_json_difference;
pub use entry::{iso_timestamp, parse_iso_timestamp, Compaction, EntryBody, Metadata, SessionEntry, SessionHeader};
pub use message::{
    AssistantBlock, AssistantMessage, ContentBlock, Cost, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserContent, UserMessage,
};
pub use operation::{Operation, OperationKind};
pub use path::{path_to, path_to_borrowed, PathError};
pub use resources::{
    format_resource_context, is_merged_system_prompt, merge_system_prompt, Instruction, Resources, Skill,
};
pub use tools::{json_kind, validate_arguments, ToolRegistry, ToolSpec};
