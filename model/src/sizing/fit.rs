//! Whether a job can fit a pool's provers at all, before any prover tries: the smallest plan
//! any prover would make for one partition of the job's registered proof, against the
//! memory limit the pool's template gives its provers. The operator holds a job that cannot
//! fit instead of letting it fail on a prover attempt after attempt (ADR 0030).
//!
//! The smallest plan is a lower bound on what a prover needs, so a job is never held that a
//! prover could prove: one partition worker (or the pool's fixed count), one core, the
//! proving key with its counted densities, no R1CS matrices, no GPU runtime. A prover may
//! still find it needs more (two-pass synthesis keeps the matrices, a GPU backend its
//! runtime and staging buffers); it then fails the job as `DoesNotFit` with its own numbers.

use std::fmt;

use super::{Overrides, SizingError, SizingInput, partition_shape, plan};

/// What the operator can say about a job against a pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fit {
    /// One partition fits within the pool's memory limit.
    Fits,
    /// No limit is set, or the proof has no counted shape: nothing to judge by.
    Unknown,
    /// Even the smallest plan needs more than the pool's provers have.
    TooLarge(TooLarge),
}

/// Why a job cannot fit, and what would.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooLarge {
    pub proof: String,
    /// The smallest memory limit a prover of the job needs.
    pub needed_bytes: u64,
    /// The pool's provers' memory limit.
    pub limit_bytes: u64,
    /// The proving key's bytes, the largest part of `needed_bytes`.
    pub params_bytes: u64,
    /// Partition workers the pool fixes (`spec.pipeline.partitionWorkers`), if it does.
    pub fixed_partition_workers: Option<usize>,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let workers = match self.fixed_partition_workers {
            Some(pw) => format!("{pw} partitions in flight (the pool's partitionWorkers)"),
            None => "one partition in flight".to_owned(),
        };
        write!(
            f,
            "a {} prover needs a memory limit of at least {} (its {} proving key, {workers}, \
             headroom); the pool's provers have {}: raise the prover container's memory limit \
             in the pool's template to {} or more, or send the job to a pool whose provers have it",
            self.proof,
            gib(self.needed_bytes),
            gib(self.params_bytes),
            gib(self.limit_bytes),
            gib(self.needed_bytes),
        )
    }
}

/// `68.2 GiB`: one decimal, as a kubectl column would show it.
fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// Whether a job of the registered proof `proof` fits provers with `memory_limit` bytes
/// (`None`: the template sets no limit) and the pool's fixed pipeline counts.
pub fn fit(proof: &str, memory_limit: Option<u64>, overrides: Overrides) -> Fit {
    let (Some(limit), Some(row)) = (memory_limit, partition_shape(proof)) else {
        return Fit::Unknown;
    };
    let smallest = SizingInput::new(proof, row.shape, limit)
        .with_params(row.params_bytes, None)
        .with_partitions(1)
        .with_overrides(overrides);
    match plan(&smallest) {
        Ok(_) => Fit::Fits,
        Err(SizingError::MemoryLimitTooSmall { minimum, .. }) => Fit::TooLarge(TooLarge {
            proof: proof.to_owned(),
            needed_bytes: minimum.as_u64(),
            limit_bytes: limit,
            params_bytes: row.params_bytes,
            fixed_partition_workers: overrides.partition_workers,
        }),
        // Overrides the pool's schema refuses (zero counts): the provers will say so. No GPU
        // is planned here, so no GPU error either.
        Err(SizingError::InvalidArgument { .. } | SizingError::GpuMemoryTooSmall { .. }) => {
            Fit::Unknown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn a_32gib_porep_does_not_fit_32gib_provers_and_says_what_would() {
        let Fit::TooLarge(too_large) =
            fit("StackedDrg32GiBV1_1", Some(32 * GIB), Overrides::default())
        else {
            panic!("a 44 GiB proving key cannot fit 32 GiB");
        };
        // The proving key (44.1 GiB) and one ~12 GiB partition, over 0.9 of the limit.
        assert!(too_large.needed_bytes > 60 * GIB, "{too_large:?}");
        assert!(too_large.needed_bytes < 80 * GIB, "{too_large:?}");
        let message = too_large.to_string();
        assert!(message.contains("StackedDrg32GiBV1_1"), "{message}");
        assert!(message.contains("32.0 GiB"), "{message}");
        // What would fit is a limit the same function accepts.
        assert_eq!(
            fit(
                "StackedDrg32GiBV1_1",
                Some(too_large.needed_bytes),
                Overrides::default()
            ),
            Fit::Fits
        );
        assert!(matches!(
            fit(
                "StackedDrg32GiBV1_1",
                Some(too_large.needed_bytes - GIB),
                Overrides::default()
            ),
            Fit::TooLarge(_)
        ));
    }

    #[test]
    fn the_seed_engines_machines_fit_every_kind() {
        // 256 GiB provers hold every counted proof (the seed engine proves 32 GiB PoRep on
        // such machines).
        for row in super::super::PARTITION_SHAPES {
            assert_eq!(
                fit(row.proof, Some(256 * GIB), Overrides::default()),
                Fit::Fits,
                "{}",
                row.proof
            );
        }
    }

    #[test]
    fn fixed_partition_workers_raise_the_need() {
        let one = fit("StackedDrg2KiBV1_1", Some(GIB), Overrides::default());
        let Fit::TooLarge(one) = one else {
            panic!("{one:?}")
        };
        let four = Overrides {
            partition_workers: Some(4),
            ..Overrides::default()
        };
        let Fit::TooLarge(with_four) = fit("StackedDrg2KiBV1_1", Some(GIB), four) else {
            panic!("four partitions need more than one")
        };
        assert!(with_four.needed_bytes > one.needed_bytes);
        assert!(with_four.to_string().contains("4 partitions in flight"));
    }

    #[test]
    fn nothing_to_judge_by_is_unknown() {
        assert_eq!(
            fit("StackedDrg32GiBV1_1", None, Overrides::default()),
            Fit::Unknown
        );
        // 8 MiB SnapDeals has no counted shape.
        assert_eq!(
            fit("StackedDrg8MiBV1", Some(GIB), Overrides::default()),
            Fit::Unknown
        );
        assert_eq!(
            fit("NoSuchProof", Some(GIB), Overrides::default()),
            Fit::Unknown
        );
    }
}
