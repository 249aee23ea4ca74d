//! The server-side-apply bodies the daemon sends: its proofs (and stage timings) into a
//! ProofJob's status, its own entry into its ProverPool's status.
//!
//! An apply body is the whole of what its field manager wants to own: list entries it stops
//! sending are removed. So the job body always carries every proof this daemon made for the
//! job (see [`ProofLedger`]), and nothing else the contract gives to the operator.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use proofpipe_crds::{
    FilecoinResult, GpuLoss, GpuReport, MAX_STATUS_PUBLIC_INPUTS, PartitionProof, PipelineSizing,
    ProofJob, ProverPhase, ProverPool, ProverStatus, StageBuffers, StageSeconds,
};
use serde_json::{Value, json};

use proofpipe_pipeline::pipeline::{self, BufferSnapshot, StageTimings};

/// A public input as stored in `status.proofs[].publicInputs`: the field element's 32
/// little-endian bytes written most significant byte first, i.e. the number in big-endian
/// hex (64 lowercase digits, no prefix).
pub fn public_input_hex(little_endian: &[u8; 32]) -> String {
    little_endian
        .iter()
        .rev()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A pipeline proof as it goes into the job's status.
pub fn status_proof(proof: &pipeline::PartitionProof, pod: &str) -> PartitionProof {
    PartitionProof {
        partition: proof.partition as i32,
        proof: BASE64.encode(&proof.proof),
        verified: proof.verified,
        public_inputs: proof.public_inputs.iter().map(public_input_hex).collect(),
        proved_by: pod.to_owned(),
    }
}

/// Running means of the per-partition stage timings.
#[derive(Clone, Debug, Default)]
pub struct StageMeans {
    count: u32,
    totals: StageSeconds,
}

impl StageMeans {
    pub fn add(&mut self, timings: &StageTimings) {
        self.count += 1;
        self.totals.synthesis += timings.synthesis.as_secs_f64();
        self.totals.queue_wait += timings.queue_wait.as_secs_f64();
        self.totals.gpu += timings.gpu.as_secs_f64();
        self.totals.finalize += timings.finalize.as_secs_f64();
    }

    /// The means, once there is at least one partition.
    pub fn mean(&self) -> Option<StageSeconds> {
        let n = f64::from(self.count);
        (self.count > 0).then(|| StageSeconds {
            synthesis: self.totals.synthesis / n,
            queue_wait: self.totals.queue_wait / n,
            gpu: self.totals.gpu / n,
            finalize: self.totals.finalize / n,
        })
    }
}

/// The proofs this daemon owns in one job's status, and which of them are written.
#[derive(Debug)]
pub struct ProofLedger {
    job: String,
    pod: String,
    proofs: BTreeMap<i32, PartitionProof>,
    stages: StageMeans,
    /// Whether proofs go into the status with their public inputs (not for Filecoin proofs,
    /// whose verifier derives them and whose inputs would weigh kilobytes per partition).
    /// A partition with more than `MAX_STATUS_PUBLIC_INPUTS` goes without them in any case:
    /// the status must fit etcd at the most partitions a job may have.
    public_inputs: bool,
    filecoin: Option<FilecoinResult>,
    /// Bumped on every new proof; the body of a generation is written once `written`
    /// reaches it.
    generation: u64,
    written: u64,
}

impl ProofLedger {
    /// A ledger for `job`, holding `earlier` proofs of this pod already in the status so the
    /// next apply keeps them.
    pub fn new(
        job: impl Into<String>,
        pod: impl Into<String>,
        earlier: Vec<PartitionProof>,
    ) -> Self {
        Self {
            job: job.into(),
            pod: pod.into(),
            proofs: earlier
                .into_iter()
                .map(|proof| (proof.partition, proof))
                .collect(),
            stages: StageMeans::default(),
            public_inputs: true,
            filecoin: None,
            generation: 0,
            written: 0,
        }
    }

    /// Proofs recorded from now on go into the status without their public inputs.
    pub fn without_public_inputs(mut self) -> Self {
        self.public_inputs = false;
        self
    }

    pub fn record(&mut self, proof: &pipeline::PartitionProof) {
        self.stages.add(&proof.timings);
        let mut entry = status_proof(proof, &self.pod);
        if !self.public_inputs || entry.public_inputs.len() > MAX_STATUS_PUBLIC_INPUTS {
            entry.public_inputs.clear();
        }
        self.proofs.insert(proof.partition as i32, entry);
        self.generation += 1;
    }

    /// The finished Filecoin proof, applied with the partition proofs.
    pub fn set_filecoin(&mut self, result: FilecoinResult) {
        self.filecoin = Some(result);
        self.generation += 1;
    }

    /// Every partition proof this daemon owns in the job's status, by partition.
    pub fn proofs(&self) -> impl Iterator<Item = &PartitionProof> {
        self.proofs.values()
    }

    /// Whether every recorded proof has been applied.
    pub fn is_written(&self) -> bool {
        self.written >= self.generation
    }

    /// The body to apply and its generation, if something is not written yet.
    pub fn unwritten(&self) -> Option<(u64, Value)> {
        (self.written < self.generation).then(|| (self.generation, self.body()))
    }

    /// Records that the body of `generation` was applied.
    pub fn written(&mut self, generation: u64) {
        self.written = self.written.max(generation);
    }

    fn body(&self) -> Value {
        let mut status = json!({ "proofs": self.proofs.values().collect::<Vec<_>>() });
        if let Some(means) = self.stages.mean() {
            status["stageSeconds"] = json!(means);
        }
        if let Some(result) = &self.filecoin {
            status["filecoin"] = json!(result);
        }
        json!({
            "apiVersion": ProofJob::api_version(&()),
            "kind": ProofJob::kind(&()),
            "metadata": { "name": self.job },
            "status": status,
        })
    }
}

/// What the daemon reports about itself, without the report time: two equal reports mean
/// nothing changed.
#[derive(Clone, Debug, PartialEq)]
pub struct ProverReport {
    pub current_job: Option<String>,
    /// The current job's stage.
    pub stage: Option<String>,
    /// When the current job last made progress, rounded down to 30 s.
    pub last_progress: Option<Timestamp>,
    pub buffers: BufferSnapshot,
    pub sizing: Option<PipelineSizing>,
    pub proofs_completed: i64,
    /// The GPU stage's backend, as found at start.
    pub gpu: Option<GpuReport>,
    /// The GPU lost mid-job, once one was: the prover takes no more work.
    pub gpu_lost: Option<GpuLoss>,
    /// The Filecoin parameter sets kept loaded.
    pub resident_parameters: Vec<String>,
}

impl ProverReport {
    pub fn phase(&self) -> ProverPhase {
        if self.current_job.is_some() {
            ProverPhase::Busy
        } else {
            ProverPhase::Idle
        }
    }

    pub fn status(&self, pod: &str, now: Time) -> ProverStatus {
        let count = |n: u64| i32::try_from(n).unwrap_or(i32::MAX);
        let b = &self.buffers;
        ProverStatus {
            pod: pod.to_owned(),
            phase: self.phase(),
            current_job: self.current_job.clone(),
            buffers: StageBuffers {
                synthesizing: count(b.synthesizing),
                queued: count(b.queued),
                gpu: count(b.gpu),
                finalizing: count(b.finalizing),
            },
            estimated_bytes: i64::try_from(b.estimated_bytes()).unwrap_or(i64::MAX),
            sizing: self.sizing.clone(),
            stage: self.stage.clone(),
            last_progress_time: self.last_progress.map(Time),
            proofs_completed: self.proofs_completed,
            gpu: self.gpu.clone(),
            gpu_lost: self.gpu_lost.clone(),
            resident_parameters: (!self.resident_parameters.is_empty())
                .then(|| self.resident_parameters.clone()),
            last_report: now,
        }
    }
}

/// The pool status body holding only this prover's entry of `status.provers`.
pub fn pool_status_body(pool: &str, entry: &ProverStatus) -> Value {
    json!({
        "apiVersion": ProverPool::api_version(&()),
        "kind": ProverPool::kind(&()),
        "metadata": { "name": pool },
        "status": { "provers": [entry] },
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn pipeline_proof(partition: u32, synthesis_secs: u64) -> pipeline::PartitionProof {
        let mut input = [0u8; 32];
        input[0] = 0x2a;
        input[31] = 0x01;
        pipeline::PartitionProof {
            partition,
            proof: vec![0xff; 192],
            public_inputs: vec![input],
            verified: true,
            timings: StageTimings {
                synthesis: Duration::from_secs(synthesis_secs),
                queue_wait: Duration::from_secs(1),
                gpu: Duration::from_secs(2),
                finalize: Duration::ZERO,
            },
        }
    }

    #[test]
    fn public_inputs_are_big_endian_hex() {
        let mut input = [0u8; 32];
        input[0] = 0x2a;
        assert_eq!(public_input_hex(&input), format!("{}2a", "0".repeat(62)));
    }

    #[test]
    fn a_status_proof_has_base64_bytes_hex_inputs_and_its_prover() {
        let proof = status_proof(&pipeline_proof(3, 1), "gpu-prover-1");
        assert_eq!(proof.partition, 3);
        assert_eq!(BASE64.decode(&proof.proof).unwrap(), vec![0xff; 192]);
        assert_eq!(proof.public_inputs, [format!("01{}2a", "0".repeat(60))]);
        assert!(proof.verified);
        assert_eq!(proof.proved_by, "gpu-prover-1");
    }

    #[test]
    fn a_partition_with_more_public_inputs_than_a_status_entry_holds_lists_none() {
        let mut ledger = ProofLedger::new("job-a", "p0", vec![]);
        let mut few = pipeline_proof(0, 1);
        few.public_inputs = vec![[7u8; 32]; MAX_STATUS_PUBLIC_INPUTS];
        let mut many = pipeline_proof(1, 1);
        many.public_inputs = vec![[7u8; 32]; MAX_STATUS_PUBLIC_INPUTS + 1];
        ledger.record(&few);
        ledger.record(&many);
        let counts: Vec<usize> = ledger.proofs().map(|p| p.public_inputs.len()).collect();
        assert_eq!(counts, [MAX_STATUS_PUBLIC_INPUTS, 0]);
        assert!(ledger.proofs().all(|p| p.proof.len() == 256));
    }

    #[test]
    fn stage_means_average_over_partitions() {
        let mut means = StageMeans::default();
        assert_eq!(means.mean(), None);
        means.add(&pipeline_proof(0, 1).timings);
        means.add(&pipeline_proof(1, 3).timings);
        assert_eq!(
            means.mean(),
            Some(StageSeconds {
                synthesis: 2.0,
                queue_wait: 1.0,
                gpu: 2.0,
                finalize: 0.0
            })
        );
    }

    #[test]
    fn the_job_body_holds_every_proof_of_this_pod_and_nothing_of_the_operator() {
        let earlier = status_proof(&pipeline_proof(0, 1), "p0");
        let mut ledger = ProofLedger::new("job-a", "p0", vec![earlier]);
        assert_eq!(
            ledger.unwritten(),
            None,
            "earlier proofs alone are already in the status"
        );
        ledger.record(&pipeline_proof(2, 1));
        let (generation, body) = ledger.unwritten().unwrap();
        assert_eq!(body["apiVersion"], "proofpipe.dev/v1alpha1");
        assert_eq!(body["kind"], "ProofJob");
        assert_eq!(body["metadata"], json!({ "name": "job-a" }));
        let status = body["status"].as_object().unwrap();
        assert_eq!(
            status.keys().collect::<Vec<_>>(),
            ["proofs", "stageSeconds"]
        );
        let partitions: Vec<_> = status["proofs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["partition"].clone())
            .collect();
        assert_eq!(partitions, [json!(0), json!(2)]);
        assert_eq!(status["proofs"][1]["provedBy"], "p0");
        assert_eq!(status["stageSeconds"]["queueWait"], 1.0);

        ledger.record(&pipeline_proof(1, 1));
        ledger.written(generation);
        assert!(
            ledger.unwritten().is_some(),
            "a proof after the written body is still unwritten"
        );
        let (latest, _) = ledger.unwritten().unwrap();
        ledger.written(latest);
        assert_eq!(ledger.unwritten(), None);
        assert!(ledger.is_written());
    }

    #[test]
    fn the_pool_body_holds_only_this_provers_entry() {
        let report = ProverReport {
            current_job: Some("job-a".into()),
            buffers: BufferSnapshot {
                synthesizing: 2,
                queued: 1,
                synthesizing_bytes: 10,
                queued_bytes: 5,
                ..Default::default()
            },
            sizing: None,
            stage: Some("proving".into()),
            last_progress: Some(Timestamp::from_second(1_699_999_980).unwrap()),
            proofs_completed: 4,
            gpu: Some(GpuReport {
                backend: GpuReport::CPU.into(),
                message: "this build has no GPU backend".into(),
                devices: Vec::new(),
            }),
            gpu_lost: None,
            resident_parameters: vec!["StackedDrg2KiBV1_1".into()],
        };
        let now = Time(Timestamp::from_second(1_700_000_000).unwrap());
        let entry = report.status("p0", now.clone());
        assert_eq!(entry.phase, ProverPhase::Busy);
        assert_eq!(
            (
                entry.buffers.synthesizing,
                entry.buffers.queued,
                entry.estimated_bytes
            ),
            (2, 1, 15)
        );
        let body = pool_status_body("gpu", &entry);
        assert_eq!(body["kind"], "ProverPool");
        assert_eq!(body["metadata"], json!({ "name": "gpu" }));
        assert_eq!(body["status"].as_object().unwrap().len(), 1);
        assert_eq!(body["status"]["provers"][0]["pod"], "p0");
        assert_eq!(body["status"]["provers"][0]["currentJob"], "job-a");
        assert_eq!(
            body["status"]["provers"][0]["lastReport"],
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(body["status"]["provers"][0]["stage"], "proving");
        assert_eq!(body["status"]["provers"][0]["gpu"]["backend"], "cpu");
        assert_eq!(
            body["status"]["provers"][0]["residentParameters"],
            json!(["StackedDrg2KiBV1_1"])
        );
        assert_eq!(
            body["status"]["provers"][0]["lastProgressTime"],
            "2023-11-14T22:13:00Z"
        );
        assert!(body["status"]["provers"][0].get("gpuLost").is_none());
        let lost = ProverReport {
            current_job: None,
            gpu_lost: Some(GpuLoss {
                device: 0,
                message: "GPU 0 is lost".into(),
                time: now.clone(),
            }),
            ..report.clone()
        };
        let body = pool_status_body("gpu", &lost.status("p0", now));
        assert_eq!(
            body["status"]["provers"][0]["gpuLost"],
            json!({ "device": 0, "message": "GPU 0 is lost", "time": "2023-11-14T22:13:20Z" })
        );
        let idle = ProverReport {
            current_job: None,
            ..report
        };
        assert_eq!(idle.phase(), ProverPhase::Idle);
    }
}
