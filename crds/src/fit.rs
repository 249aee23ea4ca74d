//! Whether a job can fit its pool's provers: the model's rule
//! ([`proofpipe_model::sizing::fit`]) fed from the objects, the job's registered proof and
//! the memory limit and fixed pipeline counts of the pool's template. A job that cannot fit
//! is held out of the queue (no prover takes it, the autoscaler does not count it) with a
//! condition and an Event that say what would fit (ADR 0030). Here, beside the objects, so
//! that the operator and the gateway (whose queue positions leave held jobs out) decide alike.

use proofpipe_model::sizing::{Fit, Overrides, fit};

use crate::pipeline::PipelineOverride;
use crate::pod_template::PROVER_CONTAINER;
use crate::proof_job::ProofJobSpec;
use crate::prover_pool::ProverPool;
use crate::quantity::quantity_bytes;

/// What a pool's template gives each of its provers, as far as fitting a job goes: read once
/// per pool, then held against each of its jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProverLimits {
    /// The prover container's memory limit in bytes, if the template sets one.
    pub memory_limit: Option<u64>,
    /// The counts the pool fixes; `auto` (or a value the schema would refuse) leaves the
    /// choice to the prover.
    pub overrides: Overrides,
}

impl ProverLimits {
    pub fn of(pool: &ProverPool) -> Self {
        let fixed = |value: &PipelineOverride| {
            value
                .count()
                .ok()
                .flatten()
                .and_then(|n| usize::try_from(n).ok())
        };
        let pipeline = &pool.spec.pipeline;
        Self {
            memory_limit: prover_memory_limit(pool),
            overrides: Overrides {
                partition_workers: fixed(&pipeline.partition_workers),
                channel_capacity: fixed(&pipeline.channel_capacity),
                gpu_workers: fixed(&pipeline.gpu_workers),
                stream_bases: false,
            },
        }
    }

    /// The job against provers with these limits.
    pub fn fit(&self, spec: &ProofJobSpec) -> Fit {
        // proofpipe's own circuits have no counted shapes; their provers size them.
        let Some(proof) = spec
            .filecoin
            .as_ref()
            .and_then(|work| work.registered_proof())
        else {
            return Fit::Unknown;
        };
        fit(proof, self.memory_limit, self.overrides)
    }
}

/// The memory limit of the pool's prover container, in bytes, if its template sets one.
fn prover_memory_limit(pool: &ProverPool) -> Option<u64> {
    let container = pool
        .spec
        .template
        .spec
        .containers
        .iter()
        .find(|c| c.name == PROVER_CONTAINER)?;
    let limit = container
        .resources
        .as_ref()?
        .limits
        .as_ref()?
        .get("memory")?;
    quantity_bytes(&limit.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(memory: Option<&str>, partition_workers: &str) -> ProverPool {
        let resources = memory.map_or(
            serde_json::json!({}),
            |memory| serde_json::json!({"limits": {"memory": memory}}),
        );
        serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
            "metadata": {"name": "gpu", "namespace": "ns"},
            "spec": {
                "replicas": 1,
                "pipeline": {"partitionWorkers": partition_workers},
                "template": {"spec": {"containers": [
                    {"name": "sidecar", "image": "s", "resources": {"limits": {"memory": "1Ti"}}},
                    {"name": "prover", "image": "p", "resources": resources},
                ]}},
            },
        }))
        .unwrap()
    }

    fn job(filecoin: serde_json::Value) -> ProofJobSpec {
        serde_json::from_value(serde_json::json!({"pool": "gpu", "filecoin": filecoin})).unwrap()
    }

    fn fit_of(spec: &ProofJobSpec, pool: &ProverPool) -> Fit {
        ProverLimits::of(pool).fit(spec)
    }

    fn porep_32gib() -> ProofJobSpec {
        job(serde_json::json!({
            "kind": "PoRepC2", "input": {"url": "s3://b/c1.json", "sha256": "00"}, "sealProof": "StackedDrg32GiBV1_1",
        }))
    }

    fn limit_of(pool: &ProverPool) -> Option<u64> {
        ProverLimits::of(pool).memory_limit
    }

    #[test]
    fn the_prover_containers_limit_counts_in_any_spelling() {
        assert_eq!(limit_of(&pool(Some("64Gi"), "auto")), Some(64 << 30));
        assert_eq!(limit_of(&pool(Some("68719476736"), "auto")), Some(64 << 30));
        assert_eq!(limit_of(&pool(Some("64G"), "auto")), Some(64_000_000_000));
        assert_eq!(limit_of(&pool(Some("1.5Gi"), "auto")), Some(3 << 29));
        assert_eq!(limit_of(&pool(None, "auto")), None);
    }

    #[test]
    fn a_32gib_porep_is_too_large_for_32gib_provers_and_fits_256gib_ones() {
        let Fit::TooLarge(too_large) = fit_of(&porep_32gib(), &pool(Some("32Gi"), "auto")) else {
            panic!("a 44 GiB proving key fits 32 GiB");
        };
        assert_eq!(too_large.limit_bytes, 32 << 30);
        assert_eq!(
            fit_of(&porep_32gib(), &pool(Some("256Gi"), "auto")),
            Fit::Fits
        );
        // Without a limit there is nothing to judge by.
        assert_eq!(fit_of(&porep_32gib(), &pool(None, "auto")), Fit::Unknown);
    }

    #[test]
    fn the_pools_fixed_workers_count() {
        let Fit::TooLarge(fixed) = fit_of(&porep_32gib(), &pool(Some("64Gi"), "4")) else {
            panic!("four 32 GiB partitions fit 64 GiB");
        };
        assert_eq!(fixed.fixed_partition_workers, Some(4));
    }

    #[test]
    fn every_kind_names_its_proof_and_own_circuits_are_not_judged() {
        let small = pool(Some("1Gi"), "auto");
        for (kind, field, proof) in [
            ("SnapDealsUpdate", "updateProof", "StackedDrg32GiBV1"),
            (
                "WindowPoStPartition",
                "postProof",
                "StackedDrgWindow32GiBV1_2",
            ),
        ] {
            let spec = job(
                serde_json::json!({"kind": kind, "input": {"url": "s3://b/i", "sha256": "00"}, field: proof}),
            );
            assert!(matches!(fit_of(&spec, &small), Fit::TooLarge(_)), "{proof}");
        }
        let own: ProofJobSpec = serde_json::from_value(serde_json::json!({
            "pool": "gpu", "circuit": "mul-chain", "constraints": 4096, "partitions": 4,
        }))
        .unwrap();
        assert_eq!(fit_of(&own, &small), Fit::Unknown);
    }
}
