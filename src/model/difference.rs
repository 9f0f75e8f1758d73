//! The first difference between two JSON values: where it is and both sides, shortened, for a
//! verdict that names the field that differs rather than the whole value.

use serde_json::Value;

/// The longest value a difference shows; a longer one is cut and ends in `…`.
const VALUE_CHARS_MAX: usize = 120;

/// The path (`content[0].text`, `-` for the values themselves) and both values of the first
/// difference between `left` and `right`, in the order of `left`'s keys, then `right`'s.
pub fn first_json_difference(left: &Value, right: &Value) -> Option<(String, String, String)> {
    difference_at(left, right, String::new())
}

fn difference_at(left: &Value, right: &Value, path: String) -> Option<(String, String, String)> {
    match (left, right) {
        (Value::Object(left_object), Value::Object(right_object)) => {
            let keys = left_object
                .keys()
                .chain(right_object.keys().filter(|key| !left_object.contains_key(*key)));
            for key in keys {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match (left_object.get(key), right_object.get(key)) {
                    (Some(a), Some(b)) => {
                        if a != b {
                            return difference_at(a, b, child_path);
                        }
                    }
                    (a, b) => return Some((child_path, show(a), show(b))),
                }
            }
            None
        }
        (Value::Array(left_items), Value::Array(right_items)) => {
            for index in 0..left_items.len().max(right_items.len()) {
                let child_path = format!("{path}[{index}]");
                match (left_items.get(index), right_items.get(index)) {
                    (Some(a), Some(b)) => {
                        if a != b {
                            return difference_at(a, b, child_path);
                        }
                    }
                    (a, b) => return Some((child_path, show(a), show(b))),
                }
            }
            None
        }
        _ if left == right => None,
        _ => {
            let path = if path.is_empty() { "-".to_string() } else { path };
            Some((path, show(Some(left)), show(Some(right))))
        }
    }
}

fn show(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "(absent)".to_string();
    };
    let text = serde_json::to_string(value).expect("values serialize");
    if text.chars().count() <= VALUE_CHARS_MAX {
        text
    } else {
        let cut: String = text.chars().take(VALUE_CHARS_MAX).collect();
        format!("{cut}…")
    }
}
