//! The switches of a GPU backend's optimisations, for benchmarks that measure each one.

/// Which of a GPU backend's optimisations are on. All default to on; each can be turned off
/// (`PROOFPIPE_CUDA_SPLIT_MSM=0`, `PROOFPIPE_CUDA_H_ON_DEVICE=0`,
/// `PROOFPIPE_CUDA_PINNED_EVALUATIONS=0`, or `bench --gpu-variants`) so that a benchmark
/// measures what each one does, in the same run, on the same machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// MSMs over assignment scalars (all but H) sum their 0/1 scalars' bases with a bitmap
    /// batch addition and run Pippenger only over the rest, when most scalars are 0 or 1.
    pub split_msm: bool,
    /// The quotient's h stays on the device and feeds the H MSM there (no download of h, no
    /// upload of it as MSM scalars).
    pub h_on_device: bool,
    /// Synthesis writes a/b/c straight into page-locked buffers from a pool of the backend's
    /// ([`ProvingBackend::evaluation_alloc`]), so their upload is a DMA.
    pub pinned_evaluations: bool,
}

impl Default for GpuOptions {
    fn default() -> Self {
        Self::ALL
    }
}

impl GpuOptions {
    pub const SPLIT_MSM_ENV: &'static str = "PROOFPIPE_CUDA_SPLIT_MSM";
    pub const H_ON_DEVICE_ENV: &'static str = "PROOFPIPE_CUDA_H_ON_DEVICE";
    pub const PINNED_EVALUATIONS_ENV: &'static str = "PROOFPIPE_CUDA_PINNED_EVALUATIONS";
    pub const ALL: Self = Self {
        split_msm: true,
        h_on_device: true,
        pinned_evaluations: true,
    };
    pub const NONE: Self = Self {
        split_msm: false,
        h_on_device: false,
        pinned_evaluations: false,
    };

    /// The defaults, with any switched off by its variable set to `0`.
    pub fn from_env() -> Self {
        let on = |var: &str| std::env::var(var).map_or(true, |v| v.trim() != "0");
        Self {
            split_msm: on(Self::SPLIT_MSM_ENV),
            h_on_device: on(Self::H_ON_DEVICE_ENV),
            pinned_evaluations: on(Self::PINNED_EVALUATIONS_ENV),
        }
    }

    /// A variant by name: `all`, `none`, or the ones on joined by `+` (`split`, `h`,
    /// `pinned`), e.g. `split+h`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name.trim() {
            "all" => return Ok(Self::ALL),
            "none" => return Ok(Self::NONE),
            _ => {}
        }
        let mut o = Self::NONE;
        for part in name.split('+').map(str::trim) {
            match part {
                "split" => o.split_msm = true,
                "h" => o.h_on_device = true,
                "pinned" => o.pinned_evaluations = true,
                other => {
                    return Err(format!(
                        "unknown GPU option {other:?} in {name:?}: use all, none, or split, h, pinned joined by +"
                    ));
                }
            }
        }
        Ok(o)
    }

    /// The variant's name as [`GpuOptions::parse`] reads it.
    pub fn name(&self) -> String {
        match *self {
            Self::ALL => "all".into(),
            Self::NONE => "none".into(),
            o => [
                (o.split_msm, "split"),
                (o.h_on_device, "h"),
                (o.pinned_evaluations, "pinned"),
            ]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join("+"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_option_variants_parse_and_name_round_trip() {
        for name in ["all", "none", "split", "h", "pinned", "split+h", "h+pinned"] {
            let o = GpuOptions::parse(name).unwrap();
            assert_eq!(GpuOptions::parse(&o.name()).unwrap(), o, "{name}");
        }
        assert_eq!(
            GpuOptions::parse("split+h+pinned").unwrap(),
            GpuOptions::ALL
        );
        assert_eq!(GpuOptions::parse("split+h").unwrap().name(), "split+h");
        assert!(!GpuOptions::parse("h").unwrap().split_msm);
        let err = GpuOptions::parse("split+fast").unwrap_err();
        assert!(err.contains("\"fast\""), "{err}");
    }
}
