//! A Filecoin ProofJob in the daemon: the C1 output read from its URL and checked against the
//! job's SHA-256, its partitions proved by the pipeline like any job's (each proof into the
//! status as it comes, so a crash loses none), then the sector's proof assembled from every
//! partition's (this pod's and earlier pods'), checked with Filecoin's `verify_seal`, written to
//! the output URL and into `status.filecoin`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use kube::ResourceExt;
use proofpipe_crds::{FilecoinResult, FilecoinWork, ProofJob};

use super::Daemon;
use crate::artifacts;
use crate::error::ProverError;
use crate::filecoin::c1::{self, C1Input, SectorIdentity};
use crate::filecoin::porep::{self, PorepJob};
use crate::filecoin::seal_proof_name;
use crate::params::ProvingKey;
use crate::pipeline::PartitionProof;

/// What the daemon keeps of a Filecoin job while its partitions are proved.
pub struct FilecoinRun {
    input: Arc<C1Input>,
    partitions: u32,
    output_url: Option<String>,
    /// Verified partition proofs other pods wrote into the status on earlier attempts.
    earlier: BTreeMap<u32, Vec<u8>>,
}

/// Reads and checks the job's input, prepares its partitions and loads its parameters.
pub async fn prepare(
    daemon: &Arc<Daemon>,
    job: &ProofJob,
    work: &FilecoinWork,
) -> Result<(FilecoinRun, PorepJob, Arc<ProvingKey>), ProverError> {
    let url = work.input.url.clone();
    let bytes = artifacts::fetch(&url).await?;
    // The API server admits no negative ids.
    let identity = SectorIdentity::parse(
        work.prover_id.as_deref(),
        work.miner_id.and_then(|m| u64::try_from(m).ok()),
        work.sector_number.and_then(|n| u64::try_from(n).ok()),
    )?;
    let expected = work.input.sha256.clone();
    let expected_proof = work.seal_proof.clone();
    let blocking = tokio::task::spawn_blocking(move || {
        artifacts::check_sha256(&url, &bytes, &expected)?;
        let input = c1::parse(&bytes, Path::new(&url), identity)?;
        let actual = seal_proof_name(input.seal_proof());
        if actual != expected_proof {
            return Err(ProverError::BadC1Input {
                path: url.into(),
                reason: format!("it is a C1 output of {actual}, but the job says {expected_proof}"),
                hint: "fix spec.filecoin.sealProof or the input",
            });
        }
        let porep = porep::prepare(&input, crate::groth16::SynthesisMode::OnePass)?;
        Ok((input, porep))
    });
    let (input, porep) = blocking.await.map_err(|e| ProverError::Filecoin {
        action: "reading the C1 output".into(),
        message: e.to_string(),
    })??;
    let cache = daemon.filecoin_params.clone();
    let proof = porep.seal_proof;
    let key = tokio::task::spawn_blocking(move || cache.get(proof))
        .await
        .map_err(|e| ProverError::Filecoin {
            action: "loading the PoRep parameters".into(),
            message: e.to_string(),
        })??;
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
    tracing::info!(job = %job.name_any(), proof = %seal_proof_name(proof), partitions = porep.partitions, "C1 output read and checked");
    Ok((
        FilecoinRun {
            input: Arc::new(input),
            partitions: porep.partitions,
            output_url: work.output.as_ref().map(|o| o.url.clone()),
            earlier,
        },
        porep,
        key,
    ))
}

/// Assembles the sector's proof from every partition's, checks it with `verify_seal` and
/// writes it to the output URL (only a proof that verifies is written out).
pub async fn finish<'a>(
    run: FilecoinRun,
    own: impl Iterator<Item = &'a proofpipe_crds::PartitionProof>,
    pod: &str,
) -> Result<FilecoinResult, ProverError> {
    let mut proofs = run.earlier;
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
    let bytes = porep::assemble(&partition_proofs, run.partitions)?;
    let input = run.input.clone();
    let checked = bytes.clone();
    let verified = tokio::task::spawn_blocking(move || porep::verify(&input, &checked))
        .await
        .map_err(|e| ProverError::Filecoin {
            action: "verify_seal".into(),
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
