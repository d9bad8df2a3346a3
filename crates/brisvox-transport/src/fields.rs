//! Typed access to the fields of a JSON object, with errors that name the field.
//!
//! Both decoders parse a message into a [`serde_json::Value`] first and then read
//! the fields they need through these helpers, so that a wrong message says which
//! field was missing or of the wrong kind instead of a generic serde error.

use serde_json::{Map, Value};

/// What was wrong with one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldError {
    /// The field is absent (or `null`).
    Missing { field: &'static str },
    /// The field is present but not what the protocol allows.
    Invalid {
        field: &'static str,
        expected: &'static str,
    },
}

/// A JSON object's fields.
pub(crate) type Object = Map<String, Value>;

/// The field as a value, or `Missing` when absent or null.
pub(crate) fn value<'a>(obj: &'a Object, field: &'static str) -> Result<&'a Value, FieldError> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(FieldError::Missing { field }),
        Some(v) => Ok(v),
    }
}

/// A string field.
pub(crate) fn string<'a>(obj: &'a Object, field: &'static str) -> Result<&'a str, FieldError> {
    value(obj, field)?.as_str().ok_or(FieldError::Invalid {
        field,
        expected: "a string",
    })
}

/// An optional string field (absent or null gives `None`).
pub(crate) fn opt_string<'a>(
    obj: &'a Object,
    field: &'static str,
) -> Result<Option<&'a str>, FieldError> {
    match string(obj, field) {
        Ok(s) => Ok(Some(s)),
        Err(FieldError::Missing { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// An optional boolean field (absent or null gives `None`).
pub(crate) fn opt_bool(obj: &Object, field: &'static str) -> Result<Option<bool>, FieldError> {
    match value(obj, field) {
        Ok(v) => v.as_bool().map(Some).ok_or(FieldError::Invalid {
            field,
            expected: "true or false",
        }),
        Err(FieldError::Missing { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// An object field.
pub(crate) fn object<'a>(obj: &'a Object, field: &'static str) -> Result<&'a Object, FieldError> {
    value(obj, field)?.as_object().ok_or(FieldError::Invalid {
        field,
        expected: "an object",
    })
}

/// An unsigned integer field, given either as a JSON number or as a decimal
/// string (Twilio sends counters as strings).
pub(crate) fn uint_lenient(obj: &Object, field: &'static str) -> Result<u64, FieldError> {
    let invalid = FieldError::Invalid {
        field,
        expected: "an unsigned integer (number or decimal string)",
    };
    match value(obj, field)? {
        Value::Number(n) => n.as_u64().ok_or(invalid),
        Value::String(s) => s.parse::<u64>().map_err(|_| invalid),
        _ => Err(invalid),
    }
}

/// An unsigned integer field that must be a JSON number.
pub(crate) fn uint(obj: &Object, field: &'static str) -> Result<u64, FieldError> {
    value(obj, field)?.as_u64().ok_or(FieldError::Invalid {
        field,
        expected: "an unsigned integer",
    })
}

/// Parses `text` as a JSON object; `Err` holds serde's message, or says that
/// the value was valid JSON but not an object.
pub(crate) fn parse_object(text: &str) -> Result<Object, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("expected a JSON object, got {}", kind_of(&other))),
        Err(e) => Err(e.to_string()),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
