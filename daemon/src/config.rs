//! The daemon's settings from its pod's environment, as the operator sets it (ADR 0003), and
//! the choice of the memory limit the pipeline is sized from.
//!
//! Pure: the environment comes in as a lookup function, so tests need no process state.

use std::fmt;
use std::time::Duration;

use proofpipe_crds::parse_pipeline_override;

use proofpipe_filecoin::param_set::ParamSet;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::SynthesisMode;
use proofpipe_pipeline::sizing::{LimitSource, MemoryLimit, Overrides, parse_memory_size};

pub const POD_NAME_VAR: &str = "PROOFPIPE_POD_NAME";
pub const NAMESPACE_VAR: &str = "PROOFPIPE_NAMESPACE";
pub const POOL_VAR: &str = "PROOFPIPE_POOL";
pub const PARTITION_WORKERS_VAR: &str = "PROOFPIPE_PARTITION_WORKERS";
pub const CHANNEL_CAPACITY_VAR: &str = "PROOFPIPE_CHANNEL_CAPACITY";
pub const GPU_WORKERS_VAR: &str = "PROOFPIPE_GPU_WORKERS";
pub const MEMORY_LIMIT_VAR: &str = "PROOFPIPE_MEMORY_LIMIT";
pub const PROGRESS_DEADLINE_VAR: &str = "PROOFPIPE_PROGRESS_DEADLINE_SECONDS";
pub const POREP_SYNTHESIS_VAR: &str = "PROOFPIPE_POREP_SYNTHESIS";
pub const POST_SYNTHESIS_VAR: &str = "PROOFPIPE_POST_SYNTHESIS";
pub const SNAP_SYNTHESIS_VAR: &str = "PROOFPIPE_SNAP_SYNTHESIS";
/// Set by the operator when the prover container requests a GPU (`nvidia.com/gpu`).
pub const GPU_EXPECTED_VAR: &str = "PROOFPIPE_GPU_EXPECTED";
/// Set in a pool's template to refuse to prove on the CPU: without a usable GPU the prover
/// exits (and its pod restarts) instead of proving ~20x slower.
pub const REQUIRE_GPU_VAR: &str = "PROOFPIPE_REQUIRE_GPU";
/// Set in a pool's template (e.g. `8GiB`) to keep that much memory out of every main job's
/// plan, so that urgent work (PoSt) fits beside a long job (ADR 0026).
pub const URGENT_RESERVE_VAR: &str = "PROOFPIPE_URGENT_RESERVE";
/// GPU memory (each GPU) main jobs leave unplanned for urgent work, as
/// [`URGENT_RESERVE_VAR`] leaves host memory.
pub const URGENT_GPU_RESERVE_VAR: &str = "PROOFPIPE_URGENT_GPU_RESERVE";
/// Set in a pool's template (e.g. `post:StackedDrgWinning32GiBV1`, comma separated) to load
/// those Filecoin parameter sets at start, before the prover is ready: the first job of that
/// kind (a WinningPoSt, due within seconds) does not wait for a load.
pub const PRELOAD_PARAMS_VAR: &str = "PROOFPIPE_PRELOAD_PARAMS";

/// Who this daemon is: its pod, the namespace it watches and the pool it reports into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub pod: String,
    pub namespace: String,
    pub pool: String,
}

impl Identity {
    /// The server-side-apply field manager of everything this daemon writes.
    pub fn field_manager(&self) -> String {
        format!("proofpipe-prover.{}", self.pod)
    }
}

/// Everything the daemon reads from its environment.
#[derive(Clone, Debug)]
pub struct EnvSettings {
    pub identity: Identity,
    /// The pool's `spec.pipeline`, `None` where it says `auto`.
    pub overrides: Overrides,
    /// The container's `limits.memory` through the Downward API, if set.
    pub memory_limit: Option<String>,
    /// The pool's `spec.progressDeadlineSeconds`.
    pub progress_deadline: Duration,
    /// How PoRep partitions are synthesized: from the sector size's R1CS matrices on every
    /// core (the default), or in one pass on one core each (`one-pass`: no matrices resident,
    /// ~6.5 GiB less at 32 GiB, ~5x slower per partition).
    pub porep_synthesis: SynthesisMode,
    /// The same for PoSt partitions proved in the main lane (32 GiB WindowPoSt: 10.1 GiB of
    /// matrices resident; in one pass its sectors still synthesize on every core, ~30x slower
    /// per core). Urgent PoSt beside a running job always synthesizes in one pass: recording
    /// matrices there would take memory the running job's plan did not leave.
    pub post_synthesis: SynthesisMode,
    /// The same for SnapDeals partitions (32 GiB: ~4 GiB of matrices resident; in one pass
    /// one core per partition, ~20x slower per partition).
    pub snap_synthesis: SynthesisMode,
    /// The pod requests a GPU: proving on the CPU is a fault to report.
    pub gpu_expected: bool,
    /// Exit rather than prove on the CPU.
    pub require_gpu: bool,
    /// Bytes main jobs leave unplanned for urgent work beside them (0: none reserved; urgent
    /// work then uses what a main plan leaves by chance).
    pub urgent_reserve: u64,
    /// The same for each GPU's memory: a main job's plan streams what no longer fits, so
    /// that an urgent job's workspace (and its streamed bases) fit beside it.
    pub urgent_gpu_reserve: u64,
    /// Filecoin parameter sets loaded at start, before the prover is ready.
    pub preload: Vec<ParamSet>,
}

/// Reads the settings through `var` (`std::env::var(..).ok()` in the binary).
pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<EnvSettings, ProverError> {
    let required = |name: &'static str, hint: &'static str| {
        var(name)
            .filter(|value| !value.is_empty())
            .ok_or(ProverError::MissingEnv { name, hint })
    };
    let identity = Identity {
        pod: required(POD_NAME_VAR, "Downward API fieldRef metadata.name")?,
        namespace: required(NAMESPACE_VAR, "Downward API fieldRef metadata.namespace")?,
        pool: required(POOL_VAR, "the name of the ProverPool")?,
    };
    let count = |name: &'static str| -> Result<Option<usize>, ProverError> {
        let Some(value) = var(name) else {
            return Ok(None);
        };
        parse_pipeline_override(&value)
            .map(|count| count.map(|n| n as usize))
            .map_err(|err| ProverError::InvalidArgument {
                what: name,
                reason: err.to_string(),
            })
    };
    let flag = |name: &'static str| -> Result<bool, ProverError> {
        match var(name).as_deref().map(str::trim) {
            None | Some("" | "false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(other) => Err(ProverError::InvalidArgument {
                what: name,
                reason: format!("{other:?} is neither `true` nor `false`"),
            }),
        }
    };
    let size = |name: &'static str| -> Result<u64, ProverError> {
        match var(name).filter(|v| !v.trim().is_empty()) {
            None => Ok(0),
            Some(value) => {
                parse_memory_size(value.trim()).map_err(|err| ProverError::InvalidArgument {
                    what: name,
                    reason: format!("{err}; give a size such as 8GiB"),
                })
            }
        }
    };
    Ok(EnvSettings {
        gpu_expected: flag(GPU_EXPECTED_VAR)?,
        require_gpu: flag(REQUIRE_GPU_VAR)?,
        urgent_reserve: size(URGENT_RESERVE_VAR)?,
        urgent_gpu_reserve: size(URGENT_GPU_RESERVE_VAR)?,
        preload: var(PRELOAD_PARAMS_VAR)
            .unwrap_or_default()
            .split(',')
            .filter(|name| !name.trim().is_empty())
            .map(|set| ParamSet::parse(set, PRELOAD_PARAMS_VAR))
            .collect::<Result<_, _>>()?,
        identity,
        overrides: Overrides {
            partition_workers: count(PARTITION_WORKERS_VAR)?,
            channel_capacity: count(CHANNEL_CAPACITY_VAR)?,
            gpu_workers: count(GPU_WORKERS_VAR)?,
            stream_bases: false,
        },
        memory_limit: var(MEMORY_LIMIT_VAR).filter(|value| !value.is_empty()),
        progress_deadline: match var(PROGRESS_DEADLINE_VAR).filter(|v| !v.is_empty()) {
            None => Duration::from_secs(
                proofpipe_crds::default_progress_deadline_seconds()
                    .unsigned_abs()
                    .into(),
            ),
            Some(value) => value
                .parse::<u64>()
                .ok()
                .filter(|&seconds| seconds > 0)
                .map(Duration::from_secs)
                .ok_or_else(|| ProverError::InvalidArgument {
                    what: PROGRESS_DEADLINE_VAR,
                    reason: format!("{value:?} is not a positive number of seconds"),
                })?,
        },
        porep_synthesis: synthesis_mode(POREP_SYNTHESIS_VAR, var(POREP_SYNTHESIS_VAR))?,
        post_synthesis: synthesis_mode(POST_SYNTHESIS_VAR, var(POST_SYNTHESIS_VAR))?,
        snap_synthesis: synthesis_mode(SNAP_SYNTHESIS_VAR, var(SNAP_SYNTHESIS_VAR))?,
    })
}

/// `name`'s synthesis mode: `matrices` (also when unset) or `one-pass`.
fn synthesis_mode(name: &'static str, value: Option<String>) -> Result<SynthesisMode, ProverError> {
    match value.as_deref().map(str::trim) {
        None | Some("" | "matrices") => Ok(SynthesisMode::Matrices),
        Some("one-pass") => Ok(SynthesisMode::OnePass),
        Some(other) => Err(ProverError::InvalidArgument {
            what: name,
            reason: format!("{other:?} is neither `matrices` nor `one-pass`"),
        }),
    }
}

/// Where the limit the pipeline is sized from came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitOrigin {
    /// The cgroup (or MemTotal when there is no cgroup limit and no env value).
    Detected(LimitSource),
    /// `PROOFPIPE_MEMORY_LIMIT`, used because the cgroup had no limit.
    Env,
}

impl fmt::Display for LimitOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitOrigin::Detected(source) => source.fmt(f),
            LimitOrigin::Env => write!(f, "{MEMORY_LIMIT_VAR} (the cgroup has no limit)"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChosenLimit {
    pub bytes: u64,
    pub origin: LimitOrigin,
}

/// The cgroup's limit wins: it is what the kernel enforces. The pod's declared limit from
/// the env only replaces MemTotal, which is the whole node's memory and would size the
/// pipeline into an OOM kill.
pub fn choose_memory_limit(
    detected: MemoryLimit,
    env_value: Option<&str>,
) -> Result<ChosenLimit, ProverError> {
    match (detected.source, env_value) {
        (LimitSource::MemTotal, Some(value)) => {
            let bytes = parse_memory_size(value).map_err(|err| ProverError::InvalidArgument {
                what: MEMORY_LIMIT_VAR,
                reason: err.to_string(),
            })?;
            Ok(ChosenLimit {
                bytes,
                origin: LimitOrigin::Env,
            })
        }
        (source, _) => Ok(ChosenLimit {
            bytes: detected.bytes,
            origin: LimitOrigin::Detected(source),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    const IDENTITY: [(&str, &str); 3] = [
        (POD_NAME_VAR, "gpu-prover-0"),
        (NAMESPACE_VAR, "proving"),
        (POOL_VAR, "gpu"),
    ];

    #[test]
    fn identity_and_auto_overrides() {
        let settings = from_env(env(&IDENTITY)).unwrap();
        assert_eq!(
            settings.identity,
            Identity {
                pod: "gpu-prover-0".into(),
                namespace: "proving".into(),
                pool: "gpu".into()
            }
        );
        assert_eq!(
            settings.identity.field_manager(),
            "proofpipe-prover.gpu-prover-0"
        );
        assert_eq!(settings.overrides.partition_workers, None);
        assert_eq!(settings.memory_limit, None);
        assert_eq!(settings.progress_deadline, Duration::from_secs(900));
        assert_eq!(settings.porep_synthesis, SynthesisMode::Matrices);
        assert_eq!(settings.post_synthesis, SynthesisMode::Matrices);
        assert_eq!(settings.snap_synthesis, SynthesisMode::Matrices);
    }

    #[test]
    fn synthesis_is_matrices_unless_one_pass_is_asked_for() {
        let porep = |s: &EnvSettings| s.porep_synthesis;
        let post = |s: &EnvSettings| s.post_synthesis;
        let snap = |s: &EnvSettings| s.snap_synthesis;
        for (name, of) in [
            (
                POREP_SYNTHESIS_VAR,
                &porep as &dyn Fn(&EnvSettings) -> SynthesisMode,
            ),
            (POST_SYNTHESIS_VAR, &post),
            (SNAP_SYNTHESIS_VAR, &snap),
        ] {
            for (value, want) in [
                ("matrices", SynthesisMode::Matrices),
                ("", SynthesisMode::Matrices),
                ("one-pass", SynthesisMode::OnePass),
            ] {
                let mut pairs = IDENTITY.to_vec();
                pairs.push((name, value));
                assert_eq!(
                    of(&from_env(env(&pairs)).unwrap()),
                    want,
                    "{name}={value:?}"
                );
            }
            let mut pairs = IDENTITY.to_vec();
            pairs.push((name, "fast"));
            let err = from_env(env(&pairs)).unwrap_err().to_string();
            assert!(err.contains(name) && err.contains("\"fast\""), "{err}");
        }
    }

    #[test]
    fn the_progress_deadline_is_a_positive_number_of_seconds() {
        let mut pairs = IDENTITY.to_vec();
        pairs.push((PROGRESS_DEADLINE_VAR, "5"));
        assert_eq!(
            from_env(env(&pairs)).unwrap().progress_deadline,
            Duration::from_secs(5)
        );
        for bad in ["0", "-3", "soon"] {
            let mut pairs = IDENTITY.to_vec();
            pairs.push((PROGRESS_DEADLINE_VAR, bad));
            let err = from_env(env(&pairs)).unwrap_err();
            assert!(err.to_string().contains(PROGRESS_DEADLINE_VAR), "{err}");
        }
    }

    #[test]
    fn preloaded_parameter_sets_name_their_kind_and_proof() {
        assert!(from_env(env(&IDENTITY)).unwrap().preload.is_empty());
        let mut pairs = IDENTITY.to_vec();
        pairs.push((
            PRELOAD_PARAMS_VAR,
            "post:StackedDrgWinning32GiBV1, porep:32GiB,snap:StackedDrg32GiBV1,",
        ));
        let names: Vec<String> = from_env(env(&pairs))
            .unwrap()
            .preload
            .into_iter()
            .map(ParamSet::name)
            .collect();
        assert_eq!(
            names,
            [
                "StackedDrgWinning32GiBV1",
                "StackedDrg32GiBV1_1",
                "StackedDrg32GiBV1"
            ]
        );
        for (bad, needle) in [
            ("StackedDrgWinning32GiBV1", "names no proof kind"),
            ("seal:32GiB", "is not a proof kind"),
            ("post:StackedDrg32GiBV1_1", "StackedDrg32GiBV1_1"),
        ] {
            let mut pairs = IDENTITY.to_vec();
            pairs.push((PRELOAD_PARAMS_VAR, bad));
            let message = from_env(env(&pairs)).unwrap_err().to_string();
            assert!(message.contains(needle), "{bad}: {message}");
        }
    }

    #[test]
    fn the_urgent_reserves_are_sizes_and_none_by_default() {
        let settings = from_env(env(&IDENTITY)).unwrap();
        assert_eq!(
            (settings.urgent_reserve, settings.urgent_gpu_reserve),
            (0, 0)
        );
        let mut pairs = IDENTITY.to_vec();
        pairs.push((URGENT_RESERVE_VAR, "8GiB"));
        pairs.push((URGENT_GPU_RESERVE_VAR, "16GiB"));
        let settings = from_env(env(&pairs)).unwrap();
        assert_eq!(
            (settings.urgent_reserve, settings.urgent_gpu_reserve),
            (8 << 30, 16 << 30)
        );
        for var in [URGENT_RESERVE_VAR, URGENT_GPU_RESERVE_VAR] {
            let mut pairs = IDENTITY.to_vec();
            pairs.push((var, "lots"));
            let message = from_env(env(&pairs)).unwrap_err().to_string();
            assert!(
                message.contains(var) && message.contains("8GiB"),
                "{message}"
            );
        }
    }

    #[test]
    fn a_missing_or_empty_identity_variable_is_named() {
        for missing in [POD_NAME_VAR, NAMESPACE_VAR, POOL_VAR] {
            let mut pairs: Vec<_> = IDENTITY
                .iter()
                .filter(|(k, _)| *k != missing)
                .copied()
                .collect();
            let err = from_env(env(&pairs)).unwrap_err();
            assert!(err.to_string().contains(missing), "{err}");
            assert_eq!(err.exit_code(), 2);
            pairs.push((missing, ""));
            assert!(
                from_env(env(&pairs))
                    .unwrap_err()
                    .to_string()
                    .contains(missing)
            );
        }
    }

    #[test]
    fn overrides_are_auto_or_counts() {
        let mut pairs = IDENTITY.to_vec();
        pairs.extend([
            (PARTITION_WORKERS_VAR, "4"),
            (CHANNEL_CAPACITY_VAR, "auto"),
            (GPU_WORKERS_VAR, "2"),
        ]);
        let overrides = from_env(env(&pairs)).unwrap().overrides;
        assert_eq!(
            (
                overrides.partition_workers,
                overrides.channel_capacity,
                overrides.gpu_workers
            ),
            (Some(4), None, Some(2))
        );
    }

    #[test]
    fn a_bad_override_names_its_variable() {
        let mut pairs = IDENTITY.to_vec();
        pairs.push((CHANNEL_CAPACITY_VAR, "0"));
        let err = from_env(env(&pairs)).unwrap_err();
        assert!(err.to_string().contains(CHANNEL_CAPACITY_VAR), "{err}");
    }

    fn detected(source: LimitSource) -> MemoryLimit {
        MemoryLimit {
            bytes: 64 << 30,
            source,
        }
    }

    #[test]
    fn the_cgroup_limit_beats_the_env() {
        let cgroup = LimitSource::CgroupV2(PathBuf::from("/sys/fs/cgroup/memory.max"));
        let chosen = choose_memory_limit(detected(cgroup.clone()), Some("1073741824")).unwrap();
        assert_eq!(
            chosen,
            ChosenLimit {
                bytes: 64 << 30,
                origin: LimitOrigin::Detected(cgroup)
            }
        );
    }

    #[test]
    fn the_env_replaces_mem_total() {
        let chosen =
            choose_memory_limit(detected(LimitSource::MemTotal), Some("1073741824")).unwrap();
        assert_eq!(
            chosen,
            ChosenLimit {
                bytes: 1 << 30,
                origin: LimitOrigin::Env
            }
        );
        assert!(chosen.origin.to_string().contains(MEMORY_LIMIT_VAR));
        let fallback = choose_memory_limit(detected(LimitSource::MemTotal), None).unwrap();
        assert_eq!(
            fallback.origin,
            LimitOrigin::Detected(LimitSource::MemTotal)
        );
    }

    #[test]
    fn a_bad_env_limit_is_refused() {
        let err = choose_memory_limit(detected(LimitSource::MemTotal), Some("lots")).unwrap_err();
        assert!(err.to_string().contains(MEMORY_LIMIT_VAR), "{err}");
    }
}
