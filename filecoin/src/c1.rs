//! The C1 output (`SealCommitPhase1Output`) as a user has it.
//!
//! Two forms are read:
//! - lotus-bench's commit-2 input file: `{"SectorNum": n, "Phase1Out": "<base64>", "SectorSize": s}`,
//!   Phase1Out being the serde JSON that filecoin-ffi's SealCommitPhase1 returns;
//! - that JSON itself, raw (`{"registered_proof": …, "vanilla_proofs": …, …}`), with the sector
//!   number given apart.
//!
//! Neither carries the prover id: like lotus-bench, it comes from the miner's actor id (default
//! 1000, lotus-bench's `t01000`), or is given whole.

use std::path::Path;

use base64::Engine;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{ProverId, SectorId};
use serde::{Deserialize, Serialize};

use super::{RegisteredSealProof, seal_proof_name};
use proofpipe_pipeline::error::ProverError;

/// lotus-bench's default miner, `t01000`.
pub const DEFAULT_MINER_ID: u64 = 1000;

/// lotus-bench's commit-2 input file.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LotusBenchC2Input {
    pub sector_num: u64,
    /// base64 of the C1 output's JSON.
    pub phase1_out: String,
    pub sector_size: u64,
}

/// Who proves which sector: what the C1 output does not say.
#[derive(Clone, Copy, Debug, Default)]
pub struct SectorIdentity {
    /// The prover id whole (32 bytes); else derived from `miner_id`.
    pub prover_id: Option<ProverId>,
    /// The miner's actor id (`f0…`), made into a prover id as filecoin-ffi does.
    pub miner_id: Option<u64>,
    /// Required with a raw C1 output; checked against a lotus-bench file's own.
    pub sector_number: Option<u64>,
}

impl SectorIdentity {
    /// From the forms users give: the prover id as 64 hex digits, the miner's actor id, the
    /// sector number.
    pub fn parse(
        prover_id: Option<&str>,
        miner_id: Option<u64>,
        sector_number: Option<u64>,
    ) -> Result<Self, ProverError> {
        Ok(Self {
            prover_id: prover_id.map(parse_prover_id).transpose()?,
            miner_id,
            sector_number,
        })
    }
}

/// A C1 output ready to prove.
pub struct C1Input {
    pub output: SealCommitPhase1Output,
    pub prover_id: ProverId,
    pub sector_id: SectorId,
}

impl C1Input {
    pub fn seal_proof(&self) -> RegisteredSealProof {
        self.output.registered_proof
    }
}

/// filecoin-ffi's prover id of a miner: the payload of its ID address (the actor id as an
/// unsigned varint), zero-padded to 32 bytes.
pub fn prover_id_of_miner(miner_id: u64) -> ProverId {
    let mut id = [0u8; 32];
    let mut n = miner_id;
    let mut i = 0;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            id[i] = byte;
            break;
        }
        id[i] = byte | 0x80;
        i += 1;
    }
    id
}

/// Parses a prover id given as 64 hex digits.
pub fn parse_prover_id(s: &str) -> Result<ProverId, ProverError> {
    let bytes =
        hex::decode(s.trim_start_matches("0x")).map_err(|e| ProverError::InvalidArgument {
            what: "prover id",
            reason: format!("{s:?} is not hex: {e}"),
        })?;
    bytes
        .try_into()
        .map_err(|b: Vec<u8>| ProverError::InvalidArgument {
            what: "prover id",
            reason: format!(
                "it has {} bytes; a prover id has 32 (64 hex digits)",
                b.len()
            ),
        })
}

/// Reads a C1 output from `path` (either form).
pub fn read(path: &Path, identity: SectorIdentity) -> Result<C1Input, ProverError> {
    let bytes = std::fs::read(path).map_err(ProverError::io("reading the C1 output", path))?;
    parse(&bytes, path, identity)
}

/// Parses a C1 output (either form); `path` names it in errors.
pub fn parse(bytes: &[u8], path: &Path, identity: SectorIdentity) -> Result<C1Input, ProverError> {
    let bad = |reason: String, hint: &'static str| ProverError::BadC1Input {
        path: path.to_path_buf(),
        reason,
        hint,
    };
    const WHAT_IS_EXPECTED: &str = "give lotus-bench's commit-2 input file ({\"SectorNum\", \
         \"Phase1Out\", \"SectorSize\"}) or the JSON that SealCommitPhase1 returned, whole";
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| bad(format!("not JSON: {e}"), WHAT_IS_EXPECTED))?;
    let (output, sector_number) = if value.get("Phase1Out").is_some() {
        let file: LotusBenchC2Input = serde_json::from_value(value).map_err(|e| {
            bad(
                format!("not a lotus-bench commit-2 file: {e}"),
                WHAT_IS_EXPECTED,
            )
        })?;
        let json = base64::engine::general_purpose::STANDARD
            .decode(file.phase1_out.trim())
            .map_err(|e| {
                bad(
                    format!("Phase1Out is not base64: {e}"),
                    "the file may be truncated; write it again",
                )
            })?;
        let output = parse_output(&json).map_err(|e| {
            bad(
                format!("Phase1Out does not hold a C1 output: {e}"),
                "the file may be truncated or from another filecoin-proofs version",
            )
        })?;
        let size = u64::from(output.registered_proof.sector_size());
        if size != file.sector_size {
            return Err(bad(
                format!(
                    "SectorSize says {} bytes but the C1 output is for {} ({size} bytes)",
                    file.sector_size,
                    seal_proof_name(output.registered_proof)
                ),
                "the file was edited or assembled from two sectors",
            ));
        }
        if let Some(n) = identity.sector_number
            && n != file.sector_num
        {
            return Err(bad(
                format!(
                    "SectorNum is {} but --sector-number says {n}",
                    file.sector_num
                ),
                "drop --sector-number or give the file's own",
            ));
        }
        (output, file.sector_num)
    } else if value.get("registered_proof").is_some() {
        let output = serde_json::from_value(value).map_err(|e| {
            bad(
                format!("not a SealCommitPhase1Output: {e}"),
                "the file may be truncated or from another filecoin-proofs version",
            )
        })?;
        let Some(n) = identity.sector_number else {
            return Err(bad(
                "a raw C1 output does not carry its sector number".into(),
                "give --sector-number",
            ));
        };
        (output, n)
    } else {
        return Err(bad(
            "a JSON object with neither \"Phase1Out\" nor \"registered_proof\"".into(),
            WHAT_IS_EXPECTED,
        ));
    };
    if output.registered_proof.major_version() != 1 {
        return Err(bad(
            format!(
                "{} is not a version 1 seal proof",
                seal_proof_name(output.registered_proof)
            ),
            "filecoin-proofs-api 19 proves version 1 seal proofs only",
        ));
    }
    let prover_id = identity
        .prover_id
        .unwrap_or_else(|| prover_id_of_miner(identity.miner_id.unwrap_or(DEFAULT_MINER_ID)));
    Ok(C1Input {
        output,
        prover_id,
        sector_id: SectorId::from(sector_number),
    })
}

fn parse_output(json: &[u8]) -> Result<SealCommitPhase1Output, serde_json::Error> {
    serde_json::from_slice(json)
}

/// Writes `output` as lotus-bench's commit-2 input file.
pub fn to_lotus_bench_json(
    output: &SealCommitPhase1Output,
    sector_number: u64,
) -> Result<Vec<u8>, ProverError> {
    let json = serde_json::to_vec(output).map_err(|e| ProverError::Filecoin {
        action: "encoding the C1 output".into(),
        message: e.to_string(),
    })?;
    let file = LotusBenchC2Input {
        sector_num: sector_number,
        phase1_out: base64::engine::general_purpose::STANDARD.encode(json),
        sector_size: u64::from(output.registered_proof.sector_size()),
    };
    Ok(serde_json::to_vec(&file).expect("a struct of strings and numbers encodes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miner_ids_become_ffi_prover_ids() {
        // t01000's ID-address payload is the varint of 1000: 0xe8 0x07.
        let id = prover_id_of_miner(1000);
        assert_eq!(&id[..3], &[0xe8, 0x07, 0x00]);
        assert_eq!(prover_id_of_miner(5)[..2], [5, 0]);
        assert_eq!(prover_id_of_miner(128)[..3], [0x80, 0x01, 0]);
    }

    #[test]
    fn prover_ids_parse_from_hex() {
        let hex = "e807".to_string() + &"00".repeat(30);
        assert_eq!(parse_prover_id(&hex).unwrap(), prover_id_of_miner(1000));
        assert!(
            parse_prover_id("e807")
                .unwrap_err()
                .to_string()
                .contains("32")
        );
        assert!(
            parse_prover_id("zz")
                .unwrap_err()
                .to_string()
                .contains("hex")
        );
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let p = Path::new("c1.json");
        let id = SectorIdentity::default();
        let err = |bytes: &[u8]| parse(bytes, p, id).err().unwrap();
        let e = err(b"{\"SectorNum\": 1, \"Phase1Out\": \"eyJyZWdpc");
        assert!(e.to_string().contains("not JSON"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let e = err(b"{\"SectorNum\": 1, \"Phase1Out\": \"!!\", \"SectorSize\": 2048}");
        assert!(e.to_string().contains("not base64"), "{e}");
        let e = err(b"{\"SectorNum\": 1, \"Phase1Out\": \"e30=\", \"SectorSize\": 2048}");
        assert!(e.to_string().contains("does not hold a C1 output"), "{e}");
        let e = err(b"{\"hello\": 1}");
        assert!(e.to_string().contains("neither"), "{e}");
        let e = err(b"[1, 2]");
        assert!(e.to_string().contains("neither"), "{e}");
    }
}
