//! The update proofs' names, as curio and filecoin-proofs-api spell them.

use filecoin_proofs_api::RegisteredUpdateProof;
use serde_json::Value;

use proofpipe_pipeline::error::ProverError;

/// The update proofs by sector size, as `--update-proof` accepts them: a registered update
/// proof's own name (`StackedDrg32GiBV1`), a sector size (`32GiB`), or the number curio sends
/// (go-state-types' `abi.RegisteredUpdateProof`: 0 for 2 KiB … 4 for 64 GiB).
pub fn parse_update_proof(s: &str) -> Result<RegisteredUpdateProof, ProverError> {
    use RegisteredUpdateProof::*;
    let proof = match s.to_ascii_lowercase().as_str() {
        "2kib" | "0" => Some(StackedDrg2KiBV1),
        "8mib" | "1" => Some(StackedDrg8MiBV1),
        "512mib" | "2" => Some(StackedDrg512MiBV1),
        "32gib" | "3" => Some(StackedDrg32GiBV1),
        "64gib" | "4" => Some(StackedDrg64GiBV1),
        _ => None,
    };
    proof
        .or_else(|| serde_json::from_value(Value::String(s.to_string())).ok())
        .ok_or_else(|| ProverError::InvalidArgument {
            what: "update proof",
            reason: format!(
                "{s:?} is neither a sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB), a registered \
                 update proof name such as StackedDrg32GiBV1, nor its number 0-4"
            ),
        })
}

/// A registered update proof's name as filecoin-proofs-api spells it.
pub fn update_proof_name(proof: RegisteredUpdateProof) -> String {
    serde_json::to_value(proof)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{proof:?}"))
}
