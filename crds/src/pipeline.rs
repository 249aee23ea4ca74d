//! The `"auto"`-or-count knobs of a ProverPool's proving pipeline.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// One pipeline knob: `"auto"` (the operator sizes it from the memory model) or a fixed
/// positive count, kept as the string the user wrote.
///
/// The API server only admits `"auto"` or a decimal integer from 1 to 999999999 (see the CEL
/// rule in the schema), so [`PipelineOverride::count`] fails only on objects that bypassed
/// validation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PipelineOverride(String);

impl PipelineOverride {
    /// The spelling of "let the operator decide".
    pub const AUTO: &str = "auto";

    /// Wraps a user-supplied value without checking it; [`PipelineOverride::count`] checks.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// A fixed count.
    pub fn fixed(count: std::num::NonZeroU32) -> Self {
        Self(count.to_string())
    }

    /// The value as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `None` for `"auto"`, `Some(n)` for a fixed count `n >= 1`.
    pub fn count(&self) -> Result<Option<u32>, InvalidPipelineOverride> {
        parse_pipeline_override(&self.0)
    }
}

impl Default for PipelineOverride {
    fn default() -> Self {
        Self(Self::AUTO.to_owned())
    }
}

impl JsonSchema for PipelineOverride {
    fn schema_name() -> Cow<'static, str> {
        "PipelineOverride".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "maxLength": 9,
            "x-kubernetes-validations": [{
                "rule": "self == 'auto' || self.matches('^[1-9][0-9]{0,8}$')",
                "message": "must be \"auto\" or a positive integer below 1000000000",
            }],
        })
    }
}

/// A pipeline knob that is neither `"auto"` nor a positive integer that fits in a `u32`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("pipeline setting {value:?} must be \"auto\" or a positive integer")]
pub struct InvalidPipelineOverride {
    /// The rejected value.
    pub value: String,
}

/// Parses a pipeline knob: `"auto"` is `None`, a positive decimal integer is `Some(n)`.
///
/// Zero, signs, whitespace and anything else are rejected.
pub fn parse_pipeline_override(value: &str) -> Result<Option<u32>, InvalidPipelineOverride> {
    if value == PipelineOverride::AUTO {
        return Ok(None);
    }
    let invalid = || InvalidPipelineOverride {
        value: value.to_owned(),
    };
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    match value.parse::<u32>() {
        Ok(0) | Err(_) => Err(invalid()),
        Ok(count) => Ok(Some(count)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_none() {
        assert_eq!(parse_pipeline_override("auto"), Ok(None));
        assert_eq!(PipelineOverride::default().count(), Ok(None));
    }

    #[test]
    fn positive_integers_are_fixed_counts() {
        assert_eq!(parse_pipeline_override("1"), Ok(Some(1)));
        assert_eq!(parse_pipeline_override("64"), Ok(Some(64)));
        assert_eq!(parse_pipeline_override("4294967295"), Ok(Some(u32::MAX)));
        let eight = std::num::NonZeroU32::new(8).unwrap();
        assert_eq!(PipelineOverride::fixed(eight).count(), Ok(Some(8)));
    }

    #[test]
    fn everything_else_is_rejected() {
        for bad in [
            "",
            "0",
            "-1",
            "+3",
            " 4",
            "4 ",
            "abc",
            "Auto",
            "4294967296",
            "1.5",
        ] {
            let err = parse_pipeline_override(bad).unwrap_err();
            assert_eq!(err.value, bad);
            assert!(
                err.to_string().contains("\"auto\" or a positive integer"),
                "{err}"
            );
        }
    }
}
