use std::ffi::c_void;

use blst::{blst_fr, blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};

unsafe extern "C" {
    pub fn pp_ngpus() -> usize;
    pub fn pp_gpu_mem(
        dev: i32,
        free: *mut usize,
        total: *mut usize,
        major: *mut i32,
        minor: *mut i32,
        sms: *mut i32,
    ) -> sppark::Error;
    pub fn pp_bases_g1_new(
        dev: i32,
        host: *const blst_p1_affine,
        n: usize,
        out: *mut *mut c_void,
    ) -> sppark::Error;
    pub fn pp_bases_g2_new(
        dev: i32,
        host: *const blst_p2_affine,
        n: usize,
        out: *mut *mut c_void,
    ) -> sppark::Error;
    pub fn pp_msm_g1_classified(
        h: *mut c_void,
        out: *mut blst_p1,
        n: usize,
        ones: *const u32,
        tails: *const u32,
        tail_start: *const u32,
        words: usize,
        tail: *const blst_fr,
        ntail: usize,
        nones: usize,
    ) -> sppark::Error;
    pub fn pp_msm_g2_classified(
        h: *mut c_void,
        out: *mut blst_p2,
        n: usize,
        ones: *const u32,
        tails: *const u32,
        tail_start: *const u32,
        words: usize,
        tail: *const blst_fr,
        ntail: usize,
        nones: usize,
    ) -> sppark::Error;
    pub fn pp_msm_g1_run(
        h: *mut c_void,
        out: *mut blst_p1,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        split: bool,
        one: *const blst_fr,
        info: *mut MsmInfo,
    ) -> sppark::Error;
    pub fn pp_msm_g2_run(
        h: *mut c_void,
        out: *mut blst_p2,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        split: bool,
        one: *const blst_fr,
        info: *mut MsmInfo,
    ) -> sppark::Error;
    pub fn pp_bases_g1_free(h: *mut c_void);
    pub fn pp_bases_g2_free(h: *mut c_void);
    pub fn pp_stream_g1_new(dev: i32, npoints: usize, out: *mut *mut c_void) -> sppark::Error;
    pub fn pp_stream_g2_new(dev: i32, npoints: usize, out: *mut *mut c_void) -> sppark::Error;
    pub fn pp_stream_g1_free(h: *mut c_void);
    pub fn pp_stream_g2_free(h: *mut c_void);
    pub fn pp_msm_streamed_g1(
        h: *mut c_void,
        points: *const blst_p1_affine,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        out: *mut blst_p1,
    ) -> sppark::Error;
    pub fn pp_msm_streamed_g2(
        h: *mut c_void,
        points: *const blst_p2_affine,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        out: *mut blst_p2,
    ) -> sppark::Error;
    pub fn pp_host_register(ptr: *mut c_void, bytes: usize) -> sppark::Error;
    pub fn pp_host_unregister(ptr: *mut c_void);
    pub fn pp_pinned_alloc(bytes: usize, out: *mut *mut c_void) -> sppark::Error;
    pub fn pp_pinned_free(p: *mut c_void);
    pub fn pp_quotient_ws_new(
        dev: i32,
        lg: u32,
        buffers: u32,
        out: *mut *mut c_void,
    ) -> sppark::Error;
    pub fn pp_quotient_ws_free(ws: *mut c_void);
    pub fn pp_quotient_upload(
        ws: *mut c_void,
        a: *const blst_fr,
        b: *const blst_fr,
        c: *const blst_fr,
    ) -> sppark::Error;
    pub fn pp_quotient_compute(
        ws: *mut c_void,
        lg: u32,
        zinv: *const blst_fr,
        a: *mut blst_fr,
        b: *const blst_fr,
        c: *const blst_fr,
    ) -> sppark::Error;
    pub fn pp_quotient_download(ws: *mut c_void, out: *mut blst_fr) -> sppark::Error;
    pub fn pp_quotient_h(ws: *mut c_void) -> *const blst_fr;
}

/// What one MSM did (pp_msm_info): split into a batch addition of its ones and a
/// Pippenger over the rest, or not.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MsmInfo {
    pub ones: u64,
    pub tail: u64,
    pub split: u32,
}
