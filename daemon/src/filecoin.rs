//! A Filecoin ProofJob in the daemon, whatever its kind: the input read from its URL and
//! checked against the job's SHA-256, its partitions proved by the pipeline like any job's
//! (each proof into the status as it comes, so a crash loses none), then the proof assembled
//! from every partition's (this pod's and earlier pods'), checked with Filecoin's own verifier
//! for the kind, written to the output URL and into `status.filecoin`.
//!
//! Every kind is a `FilecoinInput` (proofpipe-filecoin's `kind`): this file names none but to
//! pick the synthesis mode the daemon is configured with for it and to hold a WindowPoSt job to
//! one partition (curio's `WINDOW_POST_PARTITION`). The kinds' inputs, parameters and
//! verifiers are listed in docs/filecoin.md.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use kube::ResourceExt;
use proofpipe_crds::{FilecoinProofKind, FilecoinResult, FilecoinWork, ProofJob};

use crate::progress::Stage;
use crate::shared::Daemon;
use crate::sizing::parameter_budget;
use crate::state::Lane;
use crate::urgent;
use proofpipe_filecoin::artifacts;
use proofpipe_filecoin::c1::SectorIdentity;
use proofpipe_filecoin::input_file;
use proofpipe_filecoin::kind::{self, FilecoinInput};
use proofpipe_filecoin::param_set::ParamSet;
use proofpipe_filecoin::partition_proofs;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::{R1csMatrices, SynthesisMode};
use proofpipe_pipeline::params::ProvingKey;
use proofpipe_pipeline::pipeline::{PartitionProof, PartitionSource};

/// What the daemon keeps of a Filecoin job while its partitions are proved.
pub struct FilecoinRun {
    kind: FilecoinProofKind,
    input: Arc<dyn FilecoinInput>,
    partitions: u32,
    output_url: Option<String>,
    /// Verified partition proofs other pods wrote into the status on earlier attempts.
    earlier: BTreeMap<u32, Vec<u8>>,
}

/// A Filecoin job ready for the pipeline.
pub struct Prepared {
    pub run: FilecoinRun,
    pub source: Arc<dyn PartitionSource>,
    pub partitions: u32,
    pub key: Arc<ProvingKey>,
    /// The key's circuit identifier (its entry among the prover's resident keys).
    pub identifier: String,
    /// Bytes of the other parameter sets resident beside the key: the plan counts them.
    pub others_bytes: u64,
    /// The R1CS matrices the partitions are synthesized from, if they are.
    pub matrices: Option<Arc<R1csMatrices>>,
}

/// A job's input, parsed and checked, with its partitions ready for the pipeline.
struct ParsedInput {
    input: Arc<dyn FilecoinInput>,
    source: Arc<dyn PartitionSource>,
    partitions: u32,
    params: ParamSet,
    /// The R1CS matrices the source synthesizes from, if it does.
    matrices: Option<Arc<R1csMatrices>>,
}

/// How a job's partitions are synthesized, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Syntheses {
    porep: SynthesisMode,
    post: SynthesisMode,
    snap: SynthesisMode,
}

impl Syntheses {
    /// The configured modes for a job in `lane`: an urgent job beside a running one never
    /// records R1CS matrices (memory that job's plan did not leave), so its PoSt is one pass.
    fn in_lane(configured: Self, lane: Lane) -> Self {
        let post = match lane {
            Lane::Main => configured.post,
            Lane::Urgent => SynthesisMode::OnePass,
        };
        Self { post, ..configured }
    }

    fn of(self, kind: FilecoinProofKind) -> SynthesisMode {
        match kind {
            FilecoinProofKind::PoRepC2 => self.porep,
            FilecoinProofKind::SnapDealsUpdate => self.snap,
            FilecoinProofKind::WindowPoStPartition | FilecoinProofKind::WinningPoSt => self.post,
        }
    }
}

/// Parses `bytes` as the input of `work` and checks it is of the job's registered proof; then
/// prepares its partitions. Pure CPU work: call it on a blocking thread.
fn parse_input(
    work: &FilecoinWork,
    url: &str,
    bytes: &[u8],
    synthesis: Syntheses,
) -> Result<ParsedInput, ProverError> {
    artifacts::check_sha256(url, bytes, &work.input.sha256)?;
    let expected = work.registered_proof().unwrap_or_default();
    let with_url = |e| input_file::naming(e, url);
    // The API server admits no negative ids.
    let identity = SectorIdentity::parse(
        work.prover_id.as_deref(),
        work.miner_id.and_then(|m| u64::try_from(m).ok()),
        work.sector_number.and_then(|n| u64::try_from(n).ok()),
    )?;
    let input = kind::parse_input(work.kind, bytes, Path::new(url), identity).map_err(with_url)?;
    same_proof(work.kind, url, &input.proof_name(), expected)?;
    // With matrices, the sector size's (PoRep, SnapDeals) or the partition structure's (PoSt)
    // are read or recorded here on their first use in this process (29 s on 16 cores for a
    // 32 GiB PoRep, 76 s on one core for a 32 GiB SnapDeals update) and kept for the next jobs;
    // a PoSt or SnapDeals input's vanilla proofs are decoded and verified.
    let job = input.prepare(synthesis.of(work.kind)).map_err(with_url)?;
    if work.kind == FilecoinProofKind::WindowPoStPartition && job.partitions != 1 {
        return Err(ProverError::InvalidArgument {
            what: "PoSt input",
            reason: format!(
                "{url}: it is a whole WindowPoSt of {} partitions; a WindowPoSt job \
                 proves one partition: give partition_index and that partition's \
                 sectors, as curio's WINDOW_POST_PARTITION request does",
                job.partitions
            ),
        });
    }
    Ok(ParsedInput {
        params: input.param_set(),
        source: job.source,
        partitions: job.partitions,
        matrices: job.matrices,
        input: Arc::from(input),
    })
}

/// Refuses an input at `url` of registered proof `actual` for a job of `kind` naming
/// `expected`.
fn same_proof(
    kind: FilecoinProofKind,
    url: &str,
    actual: &str,
    expected: &str,
) -> Result<(), ProverError> {
    if actual == expected {
        return Ok(());
    }
    Err(ProverError::InvalidArgument {
        what: kind.input_name(),
        reason: format!(
            "{url}: it is of {actual}, but the job says {expected}; fix spec.filecoin.{} or \
             the input",
            kind.proof_field()
        ),
    })
}

/// Reads and checks the job's input, prepares its partitions and loads its parameters (in the
/// urgent lane, beside the main job's).
pub async fn prepare(
    daemon: &Arc<Daemon>,
    job: &ProofJob,
    work: &FilecoinWork,
    lane: Lane,
) -> Result<Prepared, ProverError> {
    let url = work.input.url.clone();
    let bytes = artifacts::fetch(&url).await?;
    let parsing = work.clone();
    let kind = work.kind;
    let configured = Syntheses {
        porep: daemon.porep_synthesis,
        post: daemon.post_synthesis,
        snap: daemon.snap_synthesis,
    };
    let synthesis = Syntheses::in_lane(configured, lane);
    let ParsedInput {
        input,
        source,
        partitions,
        params,
        matrices,
    } = tokio::task::spawn_blocking(move || parse_input(&parsing, &url, &bytes, synthesis))
        .await
        .map_err(|e| ProverError::Filecoin {
            action: format!("reading the {}", kind.input_name()),
            message: e.to_string(),
        })??;
    daemon.state.enter(lane, Stage::LoadingParameters);
    let loaded = match lane {
        Lane::Main => {
            let resident = daemon.filecoin_params.clone();
            // What a parameter set may take beside the ones already resident: the limit less
            // the plan's headroom (and what is reserved for urgent work).
            let budget = parameter_budget(daemon.main_limit());
            let fault = daemon.fault;
            tokio::task::spawn_blocking(move || {
                fault.at_parameter_load();
                resident.get(params, budget)
            })
            .await
            .map_err(|e| ProverError::Filecoin {
                action: format!("loading the parameters of {}", params.name()),
                message: e.to_string(),
            })??
        }
        Lane::Urgent => urgent::load_key(daemon, params).await?,
    };
    if loaded.loaded {
        daemon.metrics.parameter_set_loaded(&loaded.identifier);
    }
    let pod = &daemon.identity.pod;
    let status = job.status.clone().unwrap_or_default();
    // Other pods' proofs, only those of pods the job was assigned to (ADR 0014).
    let earlier = status
        .proofs
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|p| p.verified && &p.proved_by != pod && status.counts_work_of(&p.proved_by))
        .filter_map(|p| {
            let partition = u32::try_from(p.partition).ok()?;
            Some((partition, BASE64.decode(&p.proof).ok()?))
        })
        .collect();
    // What the partitions are synthesized from, as the source was made (a pool's
    // PROOFPIPE_*_SYNTHESIS, or one pass in the urgent lane): a provider reads here whether the
    // template's setting took.
    let synthesis = if matrices.is_some() {
        "matrices"
    } else {
        "one-pass"
    };
    tracing::info!(job = %job.name_any(), kind = kind.as_str(), proof = %params.name(), partitions, synthesis = %synthesis, "{} read and checked", kind.input_name());
    Ok(Prepared {
        run: FilecoinRun {
            kind,
            input,
            partitions,
            output_url: work.output.as_ref().map(|o| o.url.clone()),
            earlier,
        },
        source,
        partitions,
        key: loaded.key,
        identifier: loaded.identifier,
        others_bytes: loaded.others_bytes,
        matrices,
    })
}

impl FilecoinRun {
    pub fn kind(&self) -> FilecoinProofKind {
        self.kind
    }

    /// The name of the verifier whose verdict finishes the job.
    pub fn verifier(&self) -> &'static str {
        self.kind.verifier()
    }
}

/// The proof in the layout Filecoin's prover returns, from every verified partition proof:
/// `earlier` (other pods') and `own` (this pod's, which win over an earlier pod's).
fn assemble<'a>(
    earlier: BTreeMap<u32, Vec<u8>>,
    own: impl Iterator<Item = &'a proofpipe_crds::PartitionProof>,
    partitions: u32,
) -> Result<Vec<u8>, ProverError> {
    let mut proofs = earlier;
    for p in own.filter(|p| p.verified) {
        if let (Ok(partition), Ok(bytes)) = (u32::try_from(p.partition), BASE64.decode(&p.proof)) {
            proofs.insert(partition, bytes);
        }
    }
    let partition_proofs: Vec<PartitionProof> = proofs
        .into_iter()
        .map(|(partition, proof)| PartitionProof {
            partition,
            proof,
            public_inputs: Vec::new(),
            verified: true,
            timings: Default::default(),
        })
        .collect();
    partition_proofs::assemble(&partition_proofs, partitions)
}

/// Assembles the proof from every partition's, checks it with the kind's verifier and writes
/// it to the output URL (only a proof that verifies is written out).
pub async fn finish<'a>(
    run: FilecoinRun,
    own: impl Iterator<Item = &'a proofpipe_crds::PartitionProof>,
    pod: &str,
) -> Result<FilecoinResult, ProverError> {
    let bytes = assemble(run.earlier, own, run.partitions)?;
    let input = run.input.clone();
    let checked = bytes.clone();
    let verified = tokio::task::spawn_blocking(move || input.verify(&checked))
        .await
        .map_err(|e| ProverError::Filecoin {
            action: run.kind.verifier().into(),
            message: e.to_string(),
        })??;
    let mut output_url = None;
    if verified && let Some(url) = &run.output_url {
        artifacts::put(url, bytes.clone()).await?;
        output_url = Some(url.clone());
    }
    Ok(FilecoinResult {
        proof: BASE64.encode(&bytes),
        proof_bytes: bytes.len() as i64,
        verified,
        output_url,
        proved_by: pod.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use proofpipe_crds::{UPDATE_PROOFS, update_proof_partitions};

    use super::*;
    use proofpipe_filecoin::partition_proofs::PARTITION_PROOF_BYTES;
    use proofpipe_filecoin::snap::{self, SnapInput, update_proof_name};
    use proofpipe_filecoin::{RegisteredUpdateProof, post};

    #[test]
    fn the_api_table_of_update_proofs_matches_storage_proofs_update() {
        for &(name, partitions) in UPDATE_PROOFS {
            let proof = snap::parse_update_proof(name).unwrap();
            assert_eq!(update_proof_name(proof), name);
            assert_eq!(snap::partitions(proof) as i32, partitions, "{name}");
        }
        use RegisteredUpdateProof::*;
        let every = [
            StackedDrg2KiBV1,
            StackedDrg8MiBV1,
            StackedDrg512MiBV1,
            StackedDrg32GiBV1,
            StackedDrg64GiBV1,
        ];
        for proof in every {
            assert!(
                update_proof_partitions(&update_proof_name(proof)).is_some(),
                "{proof:?} is not in the API's table"
            );
        }
    }

    #[test]
    fn the_api_table_of_post_proofs_matches_filecoin_proofs_api() {
        for &(name, partitions) in proofpipe_crds::POST_PROOFS {
            let proof = post::parse_post_proof(name).unwrap();
            assert_eq!(post::post_proof_name(proof), name);
            assert_eq!(partitions, 1, "a PoSt job is one partition");
            let kind = if name.starts_with("StackedDrgWindow") {
                post::PostKind::Window
            } else {
                post::PostKind::Winning
            };
            assert_eq!(proof.typ(), kind, "{name}");
        }
    }

    #[test]
    fn a_post_input_of_another_proof_than_the_jobs_is_refused_naming_both() {
        let input = serde_json::to_vec(&serde_json::json!({
            "registered_proof": "StackedDrgWinning2KiBV1", "miner_id": 1000,
            "randomness": BASE64.encode([1u8; 32]), "vanilla_proofs": [BASE64.encode([1u8; 8])],
        }))
        .unwrap();
        let job = work(serde_json::json!({
            "kind": "WinningPoSt", "postProof": "StackedDrgWinning32GiBV1",
            "input": {"url": "s3://b/post.json", "sha256": artifacts::sha256_hex(&input)},
        }));
        let message = match parse_input(&job, "s3://b/post.json", &input, DEFAULT) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        };
        assert!(
            message.contains("s3://b/post.json")
                && message.contains(
                    "it is of StackedDrgWinning2KiBV1, but the job says StackedDrgWinning32GiBV1"
                ),
            "{message}"
        );
    }

    /// The daemon's default modes, in the main lane.
    const DEFAULT: Syntheses = Syntheses {
        porep: SynthesisMode::Matrices,
        post: SynthesisMode::Matrices,
        snap: SynthesisMode::Matrices,
    };

    #[test]
    fn urgent_post_is_synthesized_in_one_pass_and_main_lane_post_as_configured() {
        use SynthesisMode::{Matrices, OnePass};
        for post in [Matrices, OnePass] {
            let configured = Syntheses {
                porep: Matrices,
                post,
                snap: OnePass,
            };
            assert_eq!(Syntheses::in_lane(configured, Lane::Main), configured);
            assert_eq!(
                Syntheses::in_lane(configured, Lane::Urgent),
                Syntheses {
                    post: OnePass,
                    ..configured
                }
            );
        }
        assert_eq!(DEFAULT.of(FilecoinProofKind::SnapDealsUpdate), Matrices);
        assert_eq!(
            Syntheses {
                snap: OnePass,
                ..DEFAULT
            }
            .of(FilecoinProofKind::SnapDealsUpdate),
            OnePass
        );
    }

    fn work(value: serde_json::Value) -> FilecoinWork {
        serde_json::from_value(value).unwrap()
    }

    fn snap_work(update_proof: &str, sha256: &str) -> FilecoinWork {
        work(serde_json::json!({
            "kind": "SnapDealsUpdate", "updateProof": update_proof,
            "input": {"url": "s3://b/snap.json", "sha256": sha256},
        }))
    }

    fn bad_input(work: &FilecoinWork, bytes: &[u8]) -> String {
        match parse_input(work, "s3://b/snap.json", bytes, DEFAULT) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn bad_snap_inputs_are_refused_naming_the_url_and_the_problem() {
        let not_json = b"{\"registered_proof\"";
        let digest = artifacts::sha256_hex(not_json);
        let message = bad_input(&snap_work("StackedDrg2KiBV1", &digest), not_json);
        assert!(
            message.contains("s3://b/snap.json") && message.contains("not JSON"),
            "{message}"
        );
        // The digest is checked first.
        let message = bad_input(&snap_work("StackedDrg2KiBV1", &"0".repeat(64)), not_json);
        assert!(message.contains("its SHA-256 is"), "{message}");

        let input = SnapInput {
            update_proof: RegisteredUpdateProof::StackedDrg2KiBV1,
            comm_r_old: [1; 32],
            comm_r_new: [2; 32],
            comm_d_new: [3; 32],
            vanilla_proofs: vec![vec![1, 2, 3]],
        }
        .to_json();
        let digest = artifacts::sha256_hex(&input);
        let message = bad_input(&snap_work("StackedDrg32GiBV1", &digest), &input);
        assert!(
            message.contains("it is of StackedDrg2KiBV1, but the job says StackedDrg32GiBV1"),
            "{message}"
        );
        let message = bad_input(&snap_work("StackedDrg2KiBV1", &digest), &input);
        assert!(
            message.contains("s3://b/snap.json")
                && message.contains("vanilla_proofs[0] is not a bincode PartitionProof"),
            "{message}"
        );
    }

    fn status_proof(partition: i32, byte: u8, verified: bool) -> proofpipe_crds::PartitionProof {
        proofpipe_crds::PartitionProof {
            partition,
            proof: BASE64.encode([byte; PARTITION_PROOF_BYTES]),
            verified,
            public_inputs: Vec::new(),
            proved_by: "p1".into(),
        }
    }

    #[test]
    fn a_snap_proof_is_assembled_from_earlier_and_own_partitions_in_order() {
        let earlier = BTreeMap::from([
            (0, vec![0xa0; PARTITION_PROOF_BYTES]),
            (2, vec![0xa2; PARTITION_PROOF_BYTES]),
        ]);
        let own = [
            status_proof(1, 0xb1, true),
            status_proof(3, 0xb3, true),
            // An unverified proof of this pod does not count.
            status_proof(2, 0xff, false),
        ];
        let bytes = assemble(earlier, own.iter(), 4).unwrap();
        let firsts: Vec<u8> = bytes.chunks(PARTITION_PROOF_BYTES).map(|c| c[0]).collect();
        assert_eq!(firsts, [0xa0, 0xb1, 0xa2, 0xb3]);
        let missing = assemble(BTreeMap::new(), own.iter(), 4);
        assert!(missing.is_err());
    }
}
