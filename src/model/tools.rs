//! The tool registry: names, descriptions and JSON-schema parameters, and argument validation.
//!
//! The registry is the one source for both the schemas the model sees and the calls the core
//! executor accepts. Validation covers the JSON-schema subset tools use here: `type` (object,
//! string, number, integer, boolean, array, null), `properties`, `required`,
//! `additionalProperties: false`, `enum`, and `items`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// The specs are shared (`Arc`): every model request carries them, and copying schemas per
/// request would cost more than the rest of a request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolRegistry {
    tools: std::sync::Arc<[ToolSpec]>,
}

impl ToolRegistry {
    pub fn new(tools: Vec<ToolSpec>) -> ToolRegistry {
        ToolRegistry { tools: tools.into() }
    }

    /// The shared specs, as model requests carry them.
    pub fn shared(&self) -> std::sync::Arc<[ToolSpec]> {
        self.tools.clone()
    }

    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    /// The specs in registration order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.tools
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|tool| tool.name.clone()).collect()
    }
}

/// Checks `arguments` against `schema`. The error names the JSON path of the first problem,
/// e.g. `arguments.note: expected string, got number` or `arguments: missing required "note"`.
///
/// Checks at each node, in this order: `type`, `enum`, then for an object value `required`
/// (in listed order), `additionalProperties: false` (in argument order) and each declared
/// property (in schema order), and for an array value each element against `items`. A schema
/// node without `type` accepts any kind of value but still checks the rest; a node that is not
/// a JSON object (e.g. `true`) accepts anything. `integer` means a number without a fractional
/// part. Messages:
///
/// ```text
/// <path>: expected <type>, got <kind of value>
/// <path>: expected one of <enum as JSON>, got <value as JSON>
/// <path>: missing required "<name>"
/// <path>: unexpected property "<name>"
/// <path>: unsupported schema type <type as JSON>
/// ```
/// where a path is `arguments`, `arguments.note` or `arguments.items[2]`.
pub fn validate_arguments(schema: &Value, arguments: &Value) -> Result<(), String> {
    validate_node(schema, arguments, &JsonPath::Arguments)
}

/// Where a node sits in the arguments, spelled out only when a message names it: the
/// runtime and the checkers validate every call, and nearly every call is valid.
enum JsonPath<'p> {
    Arguments,
    Property(&'p JsonPath<'p>, &'p str),
    Item(&'p JsonPath<'p>, usize),
}

impl std::fmt::Display for JsonPath<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonPath::Arguments => formatter.write_str("arguments"),
            JsonPath::Property(parent, name) => write!(formatter, "{parent}.{name}"),
            JsonPath::Item(parent, index) => write!(formatter, "{parent}[{index}]"),
        }
    }
}

fn validate_node(schema: &Value, value: &Value, path: &JsonPath<'_>) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };

    if let Some(expected_type) = schema.get("type") {
        check_type(expected_type, value, path)?;
    }

    if let Some(Value::Array(allowed_values)) = schema.get("enum") {
        if !allowed_values.contains(value) {
            return Err(format!(
                "{path}: expected one of {}, got {}",
                Value::Array(allowed_values.clone()),
                value
            ));
        }
    }

    match value {
        Value::Object(fields) => {
            if let Some(Value::Array(required_names)) = schema.get("required") {
                for required_name in required_names.iter().filter_map(Value::as_str) {
                    if !fields.contains_key(required_name) {
                        return Err(format!("{path}: missing required \"{required_name}\""));
                    }
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                for field_name in fields.keys() {
                    let declared = properties.is_some_and(|properties| properties.contains_key(field_name));
                    if !declared {
                        return Err(format!("{path}: unexpected property \"{field_name}\""));
                    }
                }
            }
            for (property_name, property_schema) in properties.into_iter().flatten() {
                if let Some(field_value) = fields.get(property_name) {
                    validate_node(property_schema, field_value, &JsonPath::Property(path, property_name))?;
                }
            }
        }
        Value::Array(elements) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, element) in elements.iter().enumerate() {
                    validate_node(item_schema, element, &JsonPath::Item(path, index))?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// `type` is one type name or a list of them (any one matching is enough).
fn check_type(expected_type: &Value, value: &Value, path: &JsonPath<'_>) -> Result<(), String> {
    let listed: &[Value] = match expected_type {
        Value::String(_) => std::slice::from_ref(expected_type),
        Value::Array(type_names) => type_names,
        _ => &[],
    };
    let type_names = || listed.iter().filter_map(Value::as_str);
    let unsupported = || format!("{path}: unsupported schema type {expected_type}");
    if type_names().next().is_none() {
        return Err(unsupported());
    }
    let mut matched = false;
    for type_name in type_names() {
        matched |= value_has_type(value, type_name).ok_or_else(unsupported)?;
    }
    if matched {
        return Ok(());
    }
    Err(format!(
        "{path}: expected {}, got {}",
        type_names().collect::<Vec<_>>().join(" or "),
        json_kind(value)
    ))
}

/// Whether `value` is of the schema type `type_name`; `None` for a type outside the subset.
fn value_has_type(value: &Value, type_name: &str) -> Option<bool> {
    let has_type = match type_name {
        "object" => value.is_object(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => is_integer(value),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => return None,
    };
    Some(has_type)
}

fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(number) => {
            number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|float| float.fract() == 0.0)
        }
        _ => false,
    }
}

/// The JSON kind of a value, as named in error messages.
/// The JSON type of a value, as messages name it (`string`, `array`, ...).
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review_note_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "note": {"type": "string"},
                "severity": {"type": "string", "enum": ["low", "high"]},
                "line": {"type": "integer"},
                "score": {"type": "number"},
                "items": {"type": "array", "items": {"type": "string"}},
                "location": {
                    "type": "object",
                    "properties": {"file": {"type": "string"}},
                    "required": ["file"]
                }
            },
            "required": ["note"],
            "additionalProperties": false
        })
    }

    fn check(arguments: Value) -> Result<(), String> {
        validate_arguments(&review_note_schema(), &arguments)
    }

    #[test]
    fn valid_arguments_pass() {
        let arguments = json!({
            "note": "looks fine",
            "severity": "low",
            "line": 12,
            "score": 0.5,
            "items": ["a", "b"],
            "location": {"file": "src/lib.rs"}
        });
        assert_eq!(check(arguments), Ok(()));
    }

    #[test]
    fn missing_required_names_the_property() {
        assert_eq!(
            check(json!({"severity": "low"})),
            Err("arguments: missing required \"note\"".to_string())
        );
    }

    #[test]
    fn wrong_type_names_the_path_and_both_kinds() {
        assert_eq!(
            check(json!({"note": 42})),
            Err("arguments.note: expected string, got number".to_string())
        );
        assert_eq!(
            check(json!(["note"])),
            Err("arguments: expected object, got array".to_string())
        );
    }

    #[test]
    fn nested_paths_name_properties_and_array_indexes() {
        assert_eq!(
            check(json!({"note": "n", "items": ["a", "b", true]})),
            Err("arguments.items[2]: expected string, got boolean".to_string())
        );
        assert_eq!(
            check(json!({"note": "n", "location": {}})),
            Err("arguments.location: missing required \"file\"".to_string())
        );
        assert_eq!(
            check(json!({"note": "n", "location": {"file": null}})),
            Err("arguments.location.file: expected string, got null".to_string())
        );
    }

    #[test]
    fn additional_properties_false_rejects_undeclared_fields() {
        assert_eq!(
            check(json!({"note": "n", "extra": 1})),
            Err("arguments: unexpected property \"extra\"".to_string())
        );
        // Without `additionalProperties: false` extra fields are accepted.
        let open_schema = json!({"type": "object", "properties": {"note": {"type": "string"}}});
        assert_eq!(validate_arguments(&open_schema, &json!({"extra": 1})), Ok(()));
    }

    #[test]
    fn enum_rejects_values_outside_the_list() {
        assert_eq!(
            check(json!({"note": "n", "severity": "medium"})),
            Err("arguments.severity: expected one of [\"low\",\"high\"], got \"medium\"".to_string())
        );
    }

    #[test]
    fn integer_requires_no_fractional_part_while_number_accepts_any() {
        assert_eq!(check(json!({"note": "n", "line": 3.0})), Ok(()));
        assert_eq!(
            check(json!({"note": "n", "line": 3.5})),
            Err("arguments.line: expected integer, got number".to_string())
        );
        assert_eq!(
            check(json!({"note": "n", "line": "3"})),
            Err("arguments.line: expected integer, got string".to_string())
        );
        assert_eq!(check(json!({"note": "n", "score": 3})), Ok(()));
        assert_eq!(check(json!({"note": "n", "score": 3.5})), Ok(()));
    }

    #[test]
    fn schema_without_type_accepts_any_kind_but_checks_object_keywords() {
        let untyped_schema = json!({"properties": {"note": {"type": "string"}}, "required": ["note"]});
        assert_eq!(validate_arguments(&untyped_schema, &json!("text")), Ok(()));
        assert_eq!(validate_arguments(&untyped_schema, &json!(7)), Ok(()));
        assert_eq!(
            validate_arguments(&untyped_schema, &json!({})),
            Err("arguments: missing required \"note\"".to_string())
        );
        assert_eq!(
            validate_arguments(&untyped_schema, &json!({"note": false})),
            Err("arguments.note: expected string, got boolean".to_string())
        );
    }

    #[test]
    fn default_empty_object_schema_accepts_objects_only() {
        let schema = empty_object_schema();
        assert_eq!(validate_arguments(&schema, &json!({"anything": 1})), Ok(()));
        assert_eq!(
            validate_arguments(&schema, &json!(null)),
            Err("arguments: expected object, got null".to_string())
        );
    }

    #[test]
    fn unsupported_schema_type_is_an_error() {
        assert_eq!(
            validate_arguments(&json!({"type": "date"}), &json!("2026-01-01")),
            Err("arguments: unsupported schema type \"date\"".to_string())
        );
    }
}
