//! An input read from a file, its refusals naming the file.

use std::path::Path;

use base64::Engine;
use proofpipe_pipeline::error::ProverError;
use serde_json::{Map, Value};

/// Reads the input at `path` (`action` names it in an I/O error: "reading the C1 output") and
/// parses it with `parse`; a refusal of its contents names the file.
pub fn read<T>(
    path: &Path,
    action: &'static str,
    parse: impl FnOnce(&[u8]) -> Result<T, ProverError>,
) -> Result<T, ProverError> {
    let bytes = std::fs::read(path).map_err(ProverError::io(action, path))?;
    parse(&bytes).map_err(|e| naming(e, &path.display().to_string()))
}

/// `error`, an invalid input's, saying where the input came from (a path or a URL).
pub fn naming(error: ProverError, origin: &str) -> ProverError {
    match error {
        ProverError::InvalidArgument { what, reason } => ProverError::InvalidArgument {
            what,
            reason: format!("{origin}: {reason}"),
        },
        other => other,
    }
}

/// `bytes` as a JSON object, refused as a `what` otherwise, saying what it `expected` (its
/// fields, as the error shows them).
pub fn json_object(
    bytes: &[u8],
    what: &'static str,
    expected: &str,
) -> Result<Map<String, Value>, ProverError> {
    let refused = |reason: String| ProverError::InvalidArgument { what, reason };
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(refused(format!("not a JSON object; expected {expected}"))),
        Err(e) => Err(refused(format!("not JSON ({e}); expected {expected}"))),
    }
}

/// base64 as curio and filecoin-proofs-api's JSON write bytes.
pub fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// The field `name` of a `what`: 32 bytes as base64 or 64 hex digits.
pub fn bytes32(v: &Value, name: &str, what: &'static str) -> Result<[u8; 32], ProverError> {
    let refused = |reason: String| ProverError::InvalidArgument { what, reason };
    let s = v
        .as_str()
        .ok_or_else(|| refused(format!("{name} is not a string")))?;
    let bytes = if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(s).ok()
    } else {
        b64().decode(s).ok()
    }
    .ok_or_else(|| refused(format!("{name} is neither base64 nor 64 hex digits")))?;
    <[u8; 32]>::try_from(bytes.as_slice())
        .map_err(|_| refused(format!("{name} has {} bytes, not 32", bytes.len())))
}

/// The field `name` of a `what`: a list of base64 strings, decoded.
pub fn base64_list(v: &Value, name: &str, what: &'static str) -> Result<Vec<Vec<u8>>, ProverError> {
    let refused = |reason: String| ProverError::InvalidArgument { what, reason };
    v.as_array()
        .ok_or_else(|| refused(format!("{name} is not a list")))?
        .iter()
        .enumerate()
        .map(|(k, p)| {
            p.as_str()
                .and_then(|s| b64().decode(s).ok())
                .ok_or_else(|| refused(format!("{name}[{k}] is not a base64 string")))
        })
        .collect()
}

/// A `what`'s `registered_proof`: a name or a number (curio's), parsed by `parse`.
pub fn registered_proof<T>(
    v: &Value,
    what: &'static str,
    parse: impl Fn(&str) -> Result<T, ProverError>,
) -> Result<T, ProverError> {
    let refused = |reason: String| ProverError::InvalidArgument { what, reason };
    match v {
        Value::String(s) => parse(s),
        Value::Number(n) => parse(&n.to_string()),
        other => Err(refused(format!(
            "registered_proof is {other}, not a name or number"
        ))),
    }
    .map_err(|e| refused(format!("registered_proof: {e}")))
}

/// A vanilla proof in bincode as filecoin-proofs-api writes it (fixed-width integers), refusing
/// bytes left over.
pub fn bincode_proof<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, bincode::Error> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .deserialize(bytes)
}
