//! WindowPoSt and WinningPoSt proofs through the pipeline: partition k's `FallbackPoStCircuit`,
//! built by storage-proofs-post the way filecoin-proofs builds it
//! (`FallbackPoStCompound::circuit` from partition k's vanilla proof, as
//! `generate_window_post_with_vanilla`, `generate_single_window_post_with_vanilla` and
//! `generate_winning_post_with_vanilla` do), synthesized by our workers, proved by our GPU stage
//! and finalized by us. The proof is laid out as filecoin-proofs returns it (one 192-byte Groth16
//! proof per partition, in order), so `verify_window_post` / `verify_winning_post` (and the chain)
//! accept it.
//!
//! The input is what curio sends the seed engine for a PoSt SNARK (`SubmitProofRequest` with
//! `WINDOW_POST_PARTITION` or `WINNING_POST`): the registered PoSt proof (curio's number, or
//! filecoin-proofs-api's name), the miner id (the prover id is made from it as curio and
//! filecoin-ffi do), the 32-byte randomness, the partition index of a WindowPoSt partition, and one
//! bincode-serialized `FallbackPoStSectorProof` per sector (filecoin-proofs-api's
//! `generate_single_vanilla_proof`), here in a JSON file:
//!
//! ```json
//! {"registered_proof": 13, "miner_id": 1000, "randomness": "<base64>", "partition_index": 0,
//!  "vanilla_proofs": ["<base64 of bincode(FallbackPoStSectorProof)>", ...]}
//! ```
//!
//! A WindowPoSt input with `partition_index` is one partition (what curio sends: one request
//! per partition, merged by `merge_window_post_partition_proofs`), proved as
//! `generate_single_window_post_with_vanilla` proves it; without it, the vanilla proofs of every
//! sector make a whole WindowPoSt of `ceil(sectors / sectors_per_partition)` partitions, proved
//! as `generate_window_post_with_vanilla` proves it.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::{
    FallbackPoStSectorProof, PoStConfig, as_safe_commitment, commitment_from_fr,
    single_partition_vanilla_proofs, with_shape,
};
use filecoin_proofs_api::{
    ChallengeSeed, Hasher, MerkleTreeTrait, ProverId, PublicReplicaInfo, RegisteredPoStProof,
    SectorId,
};
use serde_json::Value;
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

use super::c1::prover_id_of_miner;
use super::matrices::{self, MatricesKey};
use crate::witness::post::PostPartitionWitness;
use proofpipe_kernels::EvalAlloc;
use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::{self, R1csMatrices, SynthesisMode, Synthesized};
use proofpipe_pipeline::pipeline::{PartitionSource, Synthesis};

/// Window or Winning.
pub use filecoin_proofs_api::PoStType as PostKind;

/// A registered PoSt proof as an input names it: filecoin-proofs-api's name
/// (`StackedDrgWindow32GiBV1_2`, `StackedDrgWinning32GiBV1`), filecoin-ffi's and go-state-types'
/// name for the current WindowPoSt (`StackedDrgWindow32GiBV1_1`, which filecoin-ffi maps to
/// filecoin-proofs-api's `V1_2`), or the number curio sends (go-state-types'
/// `abi.RegisteredPoStProof`: 0-4 Winning 2 KiB … 64 GiB, 5-9 Window V1, 10-14 Window V1_1, mapped
/// as the seed engine and filecoin-ffi map them).
pub fn parse_post_proof(s: &str) -> Result<RegisteredPoStProof, ProverError> {
    use RegisteredPoStProof::*;
    const BY_NUMBER: [RegisteredPoStProof; 15] = [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ];
    let by_number = s
        .parse::<usize>()
        .ok()
        .and_then(|n| BY_NUMBER.get(n).copied());
    // filecoin-ffi's StackedDrgWindow*V1_1 is filecoin-proofs-api's V1_2 (the grindability fix).
    let ffi_name = s
        .strip_prefix("StackedDrgWindow")
        .and_then(|rest| rest.strip_suffix("V1_1"))
        .map(|size| format!("StackedDrgWindow{size}V1_2"));
    by_number
        .or_else(|| {
            let name = ffi_name.as_deref().unwrap_or(s);
            serde_json::from_value(Value::String(name.to_string())).ok()
        })
        .ok_or_else(|| ProverError::InvalidArgument {
            what: "registered PoSt proof",
            reason: format!(
                "{s:?} is neither a registered PoSt proof name (StackedDrgWindow32GiBV1_2, \
                 StackedDrgWindow32GiBV1_1 as filecoin-ffi calls it, StackedDrgWinning32GiBV1, …) \
                 nor the number curio sends (0-14, go-state-types' abi.RegisteredPoStProof)"
            ),
        })
}

/// A registered PoSt proof's name as filecoin-proofs-api spells it.
pub fn post_proof_name(proof: RegisteredPoStProof) -> String {
    serde_json::to_value(proof)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{proof:?}"))
}

/// "WindowPoSt" or "WinningPoSt".
pub fn kind_name(kind: &PostKind) -> &'static str {
    match kind {
        PostKind::Window => "WindowPoSt",
        PostKind::Winning => "WinningPoSt",
    }
}

/// Sectors in one WindowPoSt partition (filecoin-proofs' `WINDOW_POST_SECTOR_COUNT`: 2349 at
/// 32 GiB, 2300 at 64 GiB, 2 for the small test sizes); 1 for WinningPoSt.
pub fn sectors_per_partition(proof: RegisteredPoStProof) -> usize {
    proof.sector_count()
}

/// The partitions of a whole WindowPoSt over `sectors` sectors, as filecoin-proofs counts them
/// (`get_num_partition_for_fallback_post`); 1 for WinningPoSt.
pub fn partitions_for(proof: RegisteredPoStProof, sectors: usize) -> u32 {
    filecoin_proofs::get_num_partition_for_fallback_post(&proof.as_v1_config(), sectors) as u32
}

/// What a PoSt proof is made from: curio's request to the seed engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostInput {
    pub post_proof: RegisteredPoStProof,
    pub prover_id: ProverId,
    /// The miner's actor id, when the prover id was made from it.
    pub miner_id: Option<u64>,
    /// The challenge randomness (curio clears its top two bits: a field element).
    pub randomness: ChallengeSeed,
    /// WindowPoSt: the partition these sectors are (curio's `WINDOW_POST_PARTITION`); `None`:
    /// every sector of a whole WindowPoSt. Always `None` for WinningPoSt.
    pub partition_index: Option<u32>,
    /// One bincode-serialized `FallbackPoStSectorProof` per sector, in ascending sector order.
    /// Shared, not copied, with the partitions prepared from it.
    pub vanilla_proofs: Arc<[Vec<u8>]>,
}

fn bad(reason: impl Into<String>) -> ProverError {
    ProverError::InvalidArgument {
        what: "PoSt input",
        reason: reason.into(),
    }
}

/// `registered_proof` → `registeredProof` (proto3 JSON's field names).
fn snake_to_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        match (c, upper) {
            ('_', _) => upper = true,
            (c, true) => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            (c, false) => out.push(c),
        }
    }
    out
}

/// 32 bytes as base64 or 64 hex digits.
fn bytes32(v: &Value, name: &str) -> Result<[u8; 32], ProverError> {
    crate::input_file::bytes32(v, name, "PoSt input")
}

impl PostInput {
    /// Parses the JSON of this module's documentation. curio's request in proto3's JSON
    /// mapping reads the same: field names in lowerCamelCase (`registeredProof`), 64-bit numbers
    /// as decimal strings, and every field at its zero value left out, as proto3 defines it. A
    /// request (one with `proofKind`) therefore reads a missing `registeredProof`, `minerId` or
    /// `partitionIndex` as 0 (`registeredProof` 0 is StackedDrgWinning2KiBV1; `partitionIndex`
    /// 0 with `WINDOW_POST_PARTITION` is partition 0, not a whole WindowPoSt) and missing
    /// `vanillaProofs` or `randomness` as empty.
    pub fn parse(bytes: &[u8]) -> Result<Self, ProverError> {
        let obj = &crate::input_file::json_object(
            bytes,
            "PoSt input",
            "{\"registered_proof\", \"miner_id\", \"randomness\", \"vanilla_proofs\"[, \
             \"partition_index\"]}",
        )?;
        // A field by its name, or by proto3 JSON's lowerCamelCase name.
        let get = |name: &str| -> Option<&Value> {
            obj.get(name)
                .or_else(|| obj.get(&snake_to_camel(name)))
                .filter(|v| !v.is_null())
        };
        // curio's request (it has a proof kind) follows proto3: a field left out is its zero.
        let request = get("proof_kind").is_some();
        let (zero, empty_list, empty_bytes) =
            (Value::from(0u64), Value::Array(Vec::new()), Value::from(""));
        let field = |name: &str| {
            let default = match name {
                "vanilla_proofs" => &empty_list,
                "randomness" => &empty_bytes,
                _ => &zero,
            };
            get(name)
                .or(request.then_some(default))
                .ok_or_else(|| bad(format!("the field {name:?} is missing")))
        };
        let number = |name: &str, v: &Value| -> Result<u64, ProverError> {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .ok_or_else(|| bad(format!("{name} is {v}, not a number")))
        };
        let post_proof = crate::input_file::registered_proof(
            field("registered_proof")?,
            "PoSt input",
            parse_post_proof,
        )?;
        let kind = post_proof.typ();
        // curio's request carries these too: when passed through, they must agree.
        if let Some(size) = get("sector_size") {
            let expected = u64::from(post_proof.sector_size());
            if number("sector_size", size)? != expected {
                return Err(bad(format!(
                    "sector_size is {size}, but {} is of {expected}-byte sectors",
                    post_proof_name(post_proof)
                )));
            }
        }
        let expected_kind = match kind {
            PostKind::Window => ("WINDOW_POST_PARTITION", 3),
            PostKind::Winning => ("WINNING_POST", 4),
        };
        let proof_kind = get("proof_kind");
        if let Some(k) = proof_kind
            && k.as_str() != Some(expected_kind.0)
            && k.as_u64() != Some(expected_kind.1)
        {
            return Err(bad(format!(
                "proof_kind is {k}, but {} is a {} proof ({} or {})",
                post_proof_name(post_proof),
                kind_name(&kind),
                expected_kind.0,
                expected_kind.1
            )));
        }
        let miner_id = get("miner_id").or((request && get("prover_id").is_none()).then_some(&zero));
        let (prover_id, miner_id) = match (miner_id, get("prover_id")) {
            (Some(_), Some(_)) => {
                return Err(bad("give miner_id or prover_id, not both"));
            }
            (Some(m), None) => {
                let m = number("miner_id", m)?;
                (prover_id_of_miner(m), Some(m))
            }
            (None, Some(p)) => (bytes32(p, "prover_id")?, None),
            (None, None) => {
                return Err(bad(
                    "the field \"miner_id\" is missing (or give prover_id, 32 bytes)",
                ));
            }
        };
        let randomness = bytes32(field("randomness")?, "randomness")?;
        let partition_index = get("partition_index")
            .map(|p| {
                number("partition_index", p)
                    .ok()
                    .and_then(|p| u32::try_from(p).ok())
                    .ok_or_else(|| bad(format!("partition_index is {p}, not a partition number")))
            })
            .transpose()?;
        let partition_index = match (&kind, partition_index) {
            // proto3 sends 0 for "unset": a WinningPoSt request passed through has it.
            (PostKind::Winning, None | Some(0)) => None,
            (PostKind::Winning, Some(p)) => {
                return Err(bad(format!(
                    "partition_index is {p}, but a WinningPoSt has one partition"
                )));
            }
            // A WINDOW_POST_PARTITION request is always one partition; proto3's JSON leaves a
            // partition index of 0 out.
            (PostKind::Window, None) if proof_kind.is_some() => Some(0),
            (PostKind::Window, p) => p,
        };
        let vanilla_proofs = crate::input_file::base64_list(
            field("vanilla_proofs")?,
            "vanilla_proofs",
            "PoSt input",
        )?;
        Ok(Self {
            post_proof,
            prover_id,
            miner_id,
            randomness,
            partition_index,
            vanilla_proofs: vanilla_proofs.into(),
        })
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::json!({
            "registered_proof": post_proof_name(self.post_proof),
            "randomness": crate::input_file::b64().encode(self.randomness),
            "vanilla_proofs": self.vanilla_proofs.iter().map(|p| crate::input_file::b64().encode(p)).collect::<Vec<_>>(),
        });
        match self.miner_id {
            Some(m) if prover_id_of_miner(m) == self.prover_id => v["miner_id"] = m.into(),
            _ => v["prover_id"] = hex::encode(self.prover_id).into(),
        }
        if let Some(p) = self.partition_index {
            v["partition_index"] = p.into();
        }
        serde_json::to_vec_pretty(&v).expect("JSON serializes")
    }

    pub fn kind(&self) -> PostKind {
        self.post_proof.typ()
    }

    /// The same input with only the vanilla proofs of WindowPoSt partition `k` of this whole
    /// WindowPoSt, as curio sends them (its sectors, in order, and `partition_index: k`).
    pub fn window_partition(&self, k: u32) -> Result<Self, ProverError> {
        if self.kind() != PostKind::Window || self.partition_index.is_some() {
            return Err(bad(
                "only a whole WindowPoSt input has partitions to take apart",
            ));
        }
        let per = sectors_per_partition(self.post_proof);
        let chunk = self
            .vanilla_proofs
            .chunks(per)
            .nth(k as usize)
            .ok_or_else(|| {
                bad(format!(
                    "it has {} partitions, no partition {k}",
                    partitions_for(self.post_proof, self.vanilla_proofs.len())
                ))
            })?;
        Ok(Self {
            partition_index: Some(k),
            vanilla_proofs: chunk.to_vec().into(),
            ..self.clone()
        })
    }
}

/// A sector a PoSt proves: what its verifier is given for it (from the chain, on chain).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostSector {
    pub sector_number: u64,
    pub comm_r: [u8; 32],
}

/// A PoSt input made ready for the pipeline.
pub struct PostJob {
    pub post_proof: RegisteredPoStProof,
    /// Partitions proved: 1 for WinningPoSt and for one WindowPoSt partition; a whole
    /// WindowPoSt has one per `sectors_per_partition` sectors.
    pub partitions: u32,
    /// The sectors proved, in order (their vanilla proofs' sector numbers and comm_r).
    pub sectors: Vec<PostSector>,
    pub source: Arc<dyn PartitionSource>,
    /// The R1CS matrices the source synthesizes from with [`SynthesisMode::Matrices`] (the
    /// process's resident ones of this partition structure).
    pub matrices: Option<Arc<R1csMatrices>>,
}

/// Checks a PoSt input (the vanilla proofs decode as sector proofs of its sector size, of the
/// right shape and count, in ascending sector order, and verify against the randomness) and
/// prepares its partitions, synthesized in one pass or, with [`SynthesisMode::Matrices`], from
/// the partition structure's R1CS matrices and the native witness (the matrices recorded from
/// partition 0 on the structure's first use in this process, unless their file holds them).
/// CPU work (decoding and verifying every vanilla proof, on rayon): call it off any async
/// runtime.
pub fn prepare(input: &PostInput, synthesis: SynthesisMode) -> Result<PostJob, ProverError> {
    let size = u64::from(input.post_proof.sector_size());
    with_shape!(size, prepare_shape, input, synthesis)
}

/// What fixes a PoSt partition circuit's structure (the sector size, the circuit's sectors and
/// their challenges), as the key of its R1CS matrices.
pub(crate) fn matrices_key(public_params: &fallback::PublicParams) -> MatricesKey {
    let size = public_params.sector_size;
    let sectors = public_params.sector_count;
    let challenges = public_params.challenge_count;
    MatricesKey {
        circuit: format!(
            "FallbackPoSt partition: {size}-byte sectors, {sectors} sectors of {challenges} \
             challenges"
        ),
        file_stem: format!("post-{size}-bytes-{sectors}-sectors-{challenges}-challenges"),
    }
}

/// The R1CS matrices of `public_params`' partition circuit, resident in the process: read from
/// their file or recorded from `circuit` (any partition's: the structure does not depend on
/// the witness), its sectors recorded as independent parts on every core (ADR 0023).
pub(crate) fn resident_matrices<Tree: 'static + MerkleTreeTrait>(
    public_params: &fallback::PublicParams,
    circuit: impl FnOnce() -> Result<FallbackPoStCircuit<Tree>, String>,
) -> Result<Arc<R1csMatrices>, ProverError> {
    let fail = |message: String| ProverError::Synthesis {
        partition: 0,
        message: format!("recording the PoSt R1CS matrices: {message}"),
    };
    let (matrices, loaded) = matrices::resident(&matrices_key(public_params), || {
        record_matrices(&circuit().map_err(fail)?)
    })?;
    if !loaded {
        tracing::info!(
            circuit = %matrices_key(public_params).circuit,
            "PoSt R1CS matrices reused"
        );
    }
    Ok(matrices)
}

/// `circuit`'s R1CS matrices, each sector a part recorded on its own core (ADR 0023).
pub(crate) fn record_matrices<Tree: 'static + MerkleTreeTrait>(
    circuit: &FallbackPoStCircuit<Tree>,
) -> Result<R1csMatrices, ProverError> {
    R1csMatrices::record_split(circuit.sectors.len(), |sectors| {
        Ok(FallbackPoStCircuit::<Tree> {
            prover_id: circuit.prover_id,
            sectors: circuit.sectors[sectors].to_vec(),
        })
    })
    .map_err(|e| ProverError::Synthesis {
        partition: 0,
        message: format!("recording the PoSt R1CS matrices: {e}"),
    })
}

/// The `FallbackPoStCircuit` filecoin-proofs builds from `vanilla` (a partition's vanilla proof
/// in the circuit's shape) with partition index `k`.
pub(crate) fn fallback_circuit<Tree: 'static + MerkleTreeTrait>(
    public_inputs: &fallback::PublicInputs<Domain<Tree>>,
    public_params: &fallback::PublicParams,
    vanilla: &fallback::Proof<Tree::Proof>,
    k: usize,
) -> anyhow::Result<FallbackPoStCircuit<Tree>> {
    <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::circuit(
        public_inputs,
        Default::default(),
        vanilla,
        public_params,
        Some(k),
    )
}

/// A partition synthesized from its native witness (`circuit`'s values and `vanilla`'s paths)
/// and `matrices`, each sector on its own core.
pub(crate) fn synthesize_native<Tree: 'static + MerkleTreeTrait>(
    circuit: &FallbackPoStCircuit<Tree>,
    vanilla: &fallback::Proof<Tree::Proof>,
    matrices: &R1csMatrices,
    evaluations: &EvalAlloc,
) -> Result<Synthesized, String> {
    let witness = PostPartitionWitness::of(circuit, vanilla)?;
    groth16::synthesize_native_from_matrices_into(&witness, matrices, evaluations)
        .map_err(|e| e.to_string())
}

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// Sector proof bytes as filecoin-proofs-api writes them.
fn decode<Tree: 'static + MerkleTreeTrait>(
    bytes: &[u8],
) -> Result<FallbackPoStSectorProof<Tree>, bincode::Error> {
    crate::input_file::bincode_proof(bytes)
}

/// The vanilla proof public parameters filecoin-proofs sets a PoSt up with.
fn public_params<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
) -> Result<fallback::PublicParams, ProverError> {
    match config.typ {
        PostKind::Window => window_post_public_params::<Tree>(config),
        PostKind::Winning => winning_post_public_params::<Tree>(config),
    }
    .map_err(ProverError::filecoin(
        "setting up the PoSt public parameters",
    ))
}

fn prepare_shape<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    synthesis: SynthesisMode,
) -> Result<PostJob, ProverError> {
    let proof = input.post_proof;
    let name = post_proof_name(proof);
    let kind = proof.typ();
    let config = proof.as_v1_config();
    let pp = public_params::<Tree>(&config)?;
    let randomness: Domain<Tree> =
        as_safe_commitment(&input.randomness, "randomness").map_err(|_| {
            bad(
                "randomness is not a field element: curio clears its top two bits \
                 (randomness[31] &= 0x3f) before sending it",
            )
        })?;
    let prover_id: Domain<Tree> = as_safe_commitment(&input.prover_id, "prover_id")
        .map_err(|_| bad("prover_id is not a field element"))?;
    let per_partition = config.sector_count;
    let n = input.vanilla_proofs.len();
    if n == 0 {
        return Err(bad("vanilla_proofs is empty: there is no sector to prove"));
    }
    match (&kind, input.partition_index) {
        (PostKind::Winning, _) if n != per_partition => {
            return Err(bad(format!(
                "it has {n} vanilla proofs where a WinningPoSt has {per_partition} (the \
                 challenged sector's)"
            )));
        }
        (PostKind::Window, Some(k)) if n > per_partition => {
            return Err(bad(format!(
                "it has {n} vanilla proofs for WindowPoSt partition {k}, but a {name} partition \
                 has at most {per_partition} sectors"
            )));
        }
        _ => {}
    }
    // Each vanilla proof, decoded and checked for shape: one sector proof with one inclusion
    // proof per challenge, each path of this sector size's tree height.
    let nodes = u64::from(proof.sector_size()) as usize / NODE_SIZE;
    // A WinningPoSt sector's 66 challenges are unrolled into one circuit sector each later.
    let challenges = config.challenge_count;
    let mut sectors = Vec::with_capacity(n);
    for (i, bytes) in input.vanilla_proofs.iter().enumerate() {
        let vanilla = decode::<Tree>(bytes).map_err(|e| {
            bad(format!(
                "vanilla_proofs[{i}] is not a bincode FallbackPoStSectorProof of a {name} sector: {e}"
            ))
        })?;
        let sector_proofs = &vanilla.vanilla_proof.sectors;
        let shape_ok = sector_proofs.len() == 1
            && sector_proofs[0].inclusion_proofs.len() == challenges
            && sector_proofs[0]
                .inclusion_proofs
                .iter()
                .all(|p| p.path().len() == p.expected_len(nodes));
        if !shape_ok {
            return Err(bad(format!(
                "vanilla_proofs[{i}] (sector {}) is not of a {name} sector: {} sector proofs with \
                 {} inclusion proofs (a {name} vanilla proof has 1 with {challenges}), or Merkle \
                 paths of another tree height",
                u64::from(vanilla.sector_id),
                sector_proofs.len(),
                sector_proofs
                    .first()
                    .map_or(0, |s| s.inclusion_proofs.len()),
            )));
        }
        sectors.push(PublicSector::<Domain<Tree>> {
            id: vanilla.sector_id,
            comm_r: vanilla.comm_r,
        });
    }
    // verify_window_post takes its sectors ordered by number, and partition j is the j-th run
    // of `per_partition` of them: vanilla proofs in another order, or twice for one sector,
    // cannot make a proof it accepts.
    if let Some(w) = sectors.windows(2).find(|w| w[0].id >= w[1].id) {
        return Err(bad(format!(
            "the vanilla proofs are not in ascending sector order (sector {} before sector {}): \
             verify_window_post reads its sectors sorted by number, each once",
            u64::from(w[0].id),
            u64::from(w[1].id)
        )));
    }

    let public_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: sectors.clone(),
        k: input.partition_index.map(|k| k as usize),
    };
    // The partitions as filecoin-proofs proves them: (index of the partition within the
    // sector set, the vanilla proofs of its sectors, the index its circuit is built with).
    let plan: Vec<PartitionPlan> = match (&kind, input.partition_index) {
        // generate_window_post_with_vanilla: partition j is sectors chunk j; circuit k = j.
        (PostKind::Window, None) => (0..n.div_ceil(per_partition))
            .map(|j| PartitionPlan {
                index: j,
                sectors: j * per_partition..((j + 1) * per_partition).min(n),
                circuit_k: j,
            })
            .collect(),
        // generate_single_window_post_with_vanilla: the given sectors are partition k; the one
        // circuit is built with k = 0 (the first of the vanilla proofs it was given).
        (PostKind::Window, Some(k)) => vec![PartitionPlan {
            index: k as usize,
            sectors: 0..n,
            circuit_k: 0,
        }],
        // generate_winning_post_with_vanilla: one partition.
        (PostKind::Winning, _) => vec![PartitionPlan {
            index: 0,
            sectors: 0..n,
            circuit_k: 0,
        }],
    };
    let mut source = FallbackPartitions::<Tree> {
        config,
        public_params: pp,
        public_inputs,
        vanilla: Arc::clone(&input.vanilla_proofs),
        plan,
        matrices: None,
    };
    // storage-proofs-post's vanilla verifier on every partition before proving (as
    // filecoin-proofs does, milliseconds): vanilla proofs of other challenges (another
    // randomness, or another sector than they claim) make circuits no verifier accepts.
    for p in 0..source.plan.len() {
        let plan = &source.plan[p];
        let numbers = || {
            source.public_inputs.sectors[plan.sectors.clone()]
                .iter()
                .map(|s| u64::from(s.id).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let refused = |why: String| {
            bad(format!(
                "the vanilla proofs of {} partition {} (sectors {}) {why}",
                kind_name(&kind),
                plan.index,
                numbers()
            ))
        };
        if !source.vanilla_verifies(p)? {
            return Err(refused(
                "do not verify against the randomness (storage-proofs-post's vanilla verifier): \
                 they were made for other challenges (another randomness or PoSt proof version), \
                 or are of other sectors than they name"
                    .into(),
            ));
        }
    }
    if synthesis == SynthesisMode::Matrices {
        source.matrices = Some(resident_matrices(&source.public_params, || {
            let vanilla = source
                .partition_vanilla_proof(0)
                .map_err(|e| format!("arranging the vanilla proofs: {e:#}"))?;
            source.circuit(0, &vanilla)
        })?);
    }
    let matrices = source.matrices.clone();
    Ok(PostJob {
        post_proof: proof,
        partitions: source.plan.len() as u32,
        sectors: sectors
            .iter()
            .map(|s| PostSector {
                sector_number: u64::from(s.id),
                comm_r: commitment_from_fr(s.comm_r.into()),
            })
            .collect(),
        source: Arc::new(source),
        matrices,
    })
}

/// One partition to prove.
struct PartitionPlan {
    /// The partition's index in the WindowPoSt (0 for WinningPoSt).
    index: usize,
    /// Its sectors' positions in the input's vanilla proofs.
    sectors: std::ops::Range<usize>,
    /// The partition index its circuit is built with (filecoin-proofs' `Some(k)`).
    circuit_k: usize,
}

/// The partitions of one PoSt, each decoded and built on the synthesis worker that proves it
/// (the vanilla proofs stay bincode bytes until then).
struct FallbackPartitions<Tree: 'static + MerkleTreeTrait> {
    config: PoStConfig,
    public_params: fallback::PublicParams,
    /// As the filecoin-proofs function proving this input has them: every sector, and the
    /// partition index for one WindowPoSt partition.
    public_inputs: fallback::PublicInputs<Domain<Tree>>,
    vanilla: Arc<[Vec<u8>]>,
    plan: Vec<PartitionPlan>,
    /// Two-pass synthesis from these, when set.
    matrices: Option<Arc<R1csMatrices>>,
}

impl<Tree: 'static + MerkleTreeTrait> FallbackPartitions<Tree> {
    /// The public inputs of plan entry `p` alone, as filecoin-proofs' `partition_vanilla_proofs`
    /// and `single_partition_vanilla_proofs` see them.
    fn partition_inputs(&self, p: usize) -> fallback::PublicInputs<Domain<Tree>> {
        let plan = &self.plan[p];
        fallback::PublicInputs {
            sectors: self.public_inputs.sectors[plan.sectors.clone()].to_vec(),
            k: Some(plan.index),
            ..self.public_inputs.clone()
        }
    }

    /// Partition `p`'s sector proofs, decoded.
    fn decoded(&self, p: usize) -> Result<Vec<FallbackPoStSectorProof<Tree>>, bincode::Error> {
        self.vanilla[self.plan[p].sectors.clone()]
            .iter()
            .map(|bytes| decode::<Tree>(bytes))
            .collect()
    }

    /// Partition `p`'s vanilla proof in the circuit's shape (padded to the partition's sector
    /// count by repeating the last sector; a WinningPoSt sector's challenges unrolled into one
    /// circuit sector each), by filecoin-proofs' own `single_partition_vanilla_proofs` (which
    /// runs the vanilla verifier on it again).
    fn partition_vanilla_proof(
        &self,
        p: usize,
    ) -> anyhow::Result<filecoin_proofs::VanillaProof<Tree>> {
        single_partition_vanilla_proofs(
            &self.config,
            &self.public_params,
            &self.partition_inputs(p),
            &self.decoded(p)?,
        )
    }

    /// Plan entry `p`'s circuit over its vanilla proof, as filecoin-proofs builds it.
    fn circuit(
        &self,
        p: usize,
        vanilla: &filecoin_proofs::VanillaProof<Tree>,
    ) -> Result<FallbackPoStCircuit<Tree>, String> {
        fallback_circuit(
            &self.public_inputs,
            &self.public_params,
            vanilla,
            self.plan[p].circuit_k,
        )
        .map_err(|e| format!("building the FallbackPoStCircuit: {e:#}"))
    }

    /// Whether partition `p`'s vanilla proofs verify for every challenge its verifier checks
    /// (storage-proofs-post's `FallbackPoSt::verify`). They are arranged as
    /// `single_partition_vanilla_proofs` arranges them, which says only that they failed;
    /// and where filecoin-proofs' own check of a WinningPoSt sees only the first of its
    /// challenges (its public inputs name the sector once), this names the sector once per
    /// challenge, as `verify_winning_post` does.
    fn vanilla_verifies(&self, p: usize) -> Result<bool, ProverError> {
        let cannot = |e: String| {
            bad(format!(
                "the vanilla proofs of partition {} cannot be checked: {e}",
                self.plan[p].index
            ))
        };
        let decoded = self.decoded(p).map_err(|e| cannot(e.to_string()))?;
        let per_partition = self.public_params.sector_count;
        let mut sectors: Vec<_> = match self.config.typ {
            PostKind::Window => decoded
                .iter()
                .flat_map(|v| v.vanilla_proof.sectors.iter().cloned())
                .collect(),
            PostKind::Winning => {
                let sector = &decoded[0].vanilla_proof.sectors[0];
                sector
                    .inclusion_proofs
                    .iter()
                    .map(|proof| fallback::SectorProof {
                        inclusion_proofs: vec![proof.clone()],
                        comm_c: sector.comm_c,
                        comm_r_last: sector.comm_r_last,
                    })
                    .collect()
            }
        };
        while sectors.len() < per_partition {
            sectors.push(sectors[sectors.len() - 1].clone());
        }
        let mut inputs = self.partition_inputs(p);
        if self.config.typ == PostKind::Winning {
            inputs.sectors = vec![inputs.sectors[0].clone(); per_partition];
        }
        FallbackPoSt::<Tree>::verify(&self.public_params, &inputs, &fallback::Proof { sectors })
            .map_err(|e| cannot(format!("{e:#}")))
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionSource for FallbackPartitions<Tree> {
    /// FallbackPoStCircuit synthesizes its sectors in groups on every core (our assignment
    /// is extensible, as bellperson's is); from the matrices, every sector's native witness
    /// is a part of its own.
    fn synthesis_threads(&self) -> usize {
        self.public_params.sector_count
    }

    /// In one pass it collects every group's sub-system before extending the partition with
    /// them; the native witness is written straight into the assignment.
    fn synthesizes_in_subsystems(&self) -> bool {
        self.matrices.is_none()
    }

    fn synthesize(&self, partition: u32, shape: CircuitShape, evals: &EvalAlloc) -> Synthesis {
        let p = partition as usize;
        let fail = |message: String| ProverError::Synthesis { partition, message };
        if p >= self.plan.len() {
            return Err(fail(format!("there are {} partitions", self.plan.len())));
        }
        let vanilla = self
            .partition_vanilla_proof(p)
            .map_err(|e| fail(format!("arranging the vanilla proofs: {e:#}")))?;
        let circuit = self.circuit(p, &vanilla).map_err(fail)?;
        match &self.matrices {
            Some(matrices) => synthesize_native(&circuit, &vanilla, matrices, evals),
            None => {
                drop(vanilla);
                groth16::synthesize_into(circuit, shape, evals).map_err(|e| e.to_string())
            }
        }
        .map_err(fail)
    }
}

/// The sectors `input`'s vanilla proofs are of (sector number and comm_r), in order.
pub fn sectors(input: &PostInput) -> Result<Vec<PostSector>, ProverError> {
    let size = u64::from(input.post_proof.sector_size());
    with_shape!(size, sectors_shape, input)
}

fn sectors_shape<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
) -> Result<Vec<PostSector>, ProverError> {
    input
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let v = decode::<Tree>(bytes).map_err(|e| {
                bad(format!(
                    "vanilla_proofs[{i}] is not a bincode FallbackPoStSectorProof of a {} sector: {e}",
                    post_proof_name(input.post_proof)
                ))
            })?;
            Ok(PostSector {
                sector_number: u64::from(v.sector_id),
                comm_r: commitment_from_fr(v.comm_r.into()),
            })
        })
        .collect()
}

pub mod shape;
mod verify;
pub use verify::{verify, verify_sectors, verify_v1_partition};

#[cfg(test)]
mod tests;
