//! With the `cuda` feature: compiles cuda/proofpipe.cu (sppark's headers, explicit G1 and G2
//! instantiations) with nvcc for sm_80, sm_89, sm_90 and compute_90 PTX. Without it: nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "cuda")]
    cuda::build();
}

#[cfg(feature = "cuda")]
mod cuda {
    use std::env;

    pub fn build() {
        println!("cargo:rerun-if-changed=cuda/proofpipe.cu");
        println!("cargo:rerun-if-env-changed=NVCC");
        println!("cargo:rerun-if-env-changed=PROOFPIPE_CUDA_ARCHS");
        let sppark = env::var("DEP_SPPARK_ROOT")
            .expect("sppark's build script did not report its headers (DEP_SPPARK_ROOT)");
        let blst = env::var("DEP_BLST_C_SRC")
            .expect("blst's build script did not report its sources (DEP_BLST_C_SRC)");
        let mut nvcc = cc::Build::new();
        // nvcc comes from PATH (scripts/cuda-build.sh puts the pinned one there). No device
        // debug info (-G would make the kernels ~10x slower), optimised host code.
        nvcc.cuda(true).debug(false).opt_level(3).warnings(false);
        // sm_80 (A100), sm_89 (L4/L40/4090), sm_90 (H100/H200) machine code, compute_90 PTX
        // for newer chips to JIT. Override with PROOFPIPE_CUDA_ARCHS="90" for a faster build.
        let archs = env::var("PROOFPIPE_CUDA_ARCHS").unwrap_or_else(|_| "80,89,90".into());
        let mut last = String::new();
        for a in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            nvcc.flag("-gencode")
                .flag(format!("arch=compute_{a},code=sm_{a}"));
            last = a.to_string();
        }
        nvcc.flag("-gencode")
            .flag(format!("arch=compute_{last},code=compute_{last}"));
        nvcc.flag("-t0"); // nvcc's own parallelism across the architectures
        nvcc.define("FEATURE_BLS12_381", None);
        nvcc.define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None);
        // sppark's host-side field code calls blst's assembly, whose names depend on __ADX__:
        // define it exactly when blst's build enables ADX (target feature, or the build host).
        let target_adx =
            env::var("CARGO_CFG_TARGET_FEATURE").is_ok_and(|f| f.split(',').any(|x| x == "adx"));
        #[cfg(target_arch = "x86_64")]
        let host_adx = std::is_x86_feature_detected!("adx");
        #[cfg(not(target_arch = "x86_64"))]
        let host_adx = false;
        if env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") && (target_adx || host_adx)
        {
            nvcc.define("__ADX__", None);
        }
        nvcc.include(&sppark).include(&blst);
        nvcc.file("cuda/proofpipe.cu");
        nvcc.compile("proofpipe_cuda");
    }
}
