// proofpipe's CUDA kernels over BLS12-381, built on sppark's headers.
//
// One translation unit instantiates sppark's Pippenger MSM for G1 *and* G2 (sppark itself
// instantiates only the G1 kernels; a G2 launch without the lines below fails with
// "invalid device function") and its NTT over Fr, and exports a small C ABI to Rust:
//   pp_ngpus / pp_gpu_mem         device discovery (safe without a GPU or a driver)
//   pp_msm_g{1,2}_new / _free     resident base points (uploaded once, reused by every MSM)
//   pp_msm_g{1,2}_run             MSM over those points with host scalars in Montgomery form
//                                 (blst_fr, as blstrs stores them: sppark's fr_t layout),
//                                 converted on the device (invoke's mont = true)
//   pp_pinned_alloc / _free       page-locked host staging for MSM scalars (full-speed DMA)
//   pp_quotient_ws_new / _free    a GPU-stage worker's quotient workspace (stream, buffers)
//   pp_quotient_upload            a, b, c to the device (outside the device lock)
//   pp_quotient_compute           h = icoset_ntt((coset_ntt(intt(a))*coset_ntt(intt(b))
//                                      - coset_ntt(intt(c))) * zinv), in Montgomery form
//   pp_quotient_download          h back to the host (outside the device lock)
// No entry point converts scalars on the host: Rust passes and gets blst_fr as it is.
// Every entry point catches sppark's cuda_error and returns it as a RustError.

#include <cuda.h>
#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;

typedef jacobian_t<fp2_t> point_fp2_t;
typedef xyzz_t<fp2_t> bucket_fp2_t;
typedef bucket_fp2_t::affine_t affine_fp2_t;

typedef fr_t scalar_t;

// Instantiates the G1 kernels (bucket_t/affine_t/scalar_t above).
#include <msm/pippenger.cuh>

// The G2 kernels: explicit instantiations, as SupraSeal does.
template __global__
void accumulate<bucket_fp2_t, affine_fp2_t::mem_t>(bucket_fp2_t::mem_t buckets_[],
                                                   uint32_t nwins, uint32_t wbits,
                                                   /*const*/ affine_fp2_t::mem_t points_[],
                                                   const vec2d_t<uint32_t> digits,
                                                   const vec2d_t<uint32_t> histogram,
                                                   uint32_t sid);
template __global__
void batch_addition<bucket_fp2_t>(bucket_fp2_t::mem_t buckets[],
                                  const affine_fp2_t::mem_t points[], size_t npoints,
                                  const uint32_t digits[], const uint32_t& ndigits);
template __global__
void integrate<bucket_fp2_t>(bucket_fp2_t::mem_t buckets_[], uint32_t nwins,
                             uint32_t wbits, uint32_t nbits);

#include <ntt/ntt.cuh>

#ifndef __CUDA_ARCH__
# include <string>
#endif

__global__ void pp_pointwise(fr_t* a, const fr_t* b, const fr_t* c, fr_t zinv, size_t n)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += stride) {
        fr_t x = a[i] * b[i];
        x = x - c[i];
        a[i] = x * zinv;
    }
}

#ifndef __CUDA_ARCH__

static RustError::by_value pp_err(const cuda_error& e, const char* what)
{
    std::string msg = std::string(what) + ": " + e.what();
    return RustError{e.code(), msg};
}

extern "C" size_t pp_ngpus()
{
    return ngpus();
}

extern "C" RustError::by_value pp_gpu_mem(int dev, size_t* free_b, size_t* total_b,
                                          int* major, int* minor, int* sms)
{
    try {
        const gpu_t& gpu = select_gpu(dev);
        CUDA_OK(cudaMemGetInfo(free_b, total_b));
        *major = gpu.props().major;
        *minor = gpu.props().minor;
        *sms = gpu.sm_count();
    } catch (const cuda_error& e) {
        return pp_err(e, "querying the GPU");
    }
    return RustError{cudaSuccess};
}

// Resident MSMs. sppark's msm_t, made with host points, keeps them in device memory (with
// its buckets) for its whole life; every invoke() with a null points pointer reads them in
// place. (Its overload for caller-owned device points recurses forever when affine_t::mem_t
// differs from affine_t, as it does for these curves: hence one msm_t per base range.)
template<class bucket_t, class point_t, class affine_t>
static RustError::by_value pp_msm_new(int dev, const affine_t* host, size_t n, void** out,
                                      const char* what)
{
    try {
        const gpu_t& gpu = select_gpu(dev);
        auto* msm = new msm_t<bucket_t, point_t, affine_t, scalar_t>{host, n, sizeof(affine_t), dev};
        gpu.sync();
        *out = msm;
    } catch (const cuda_error& e) {
        return pp_err(e, what);
    }
    return RustError{cudaSuccess};
}

// `scalars`: n host scalars in Montgomery form (blst_fr); mont = true has sppark's breakdown
// kernel take them out of Montgomery form on the device.
template<class bucket_t, class point_t, class affine_t>
static RustError::by_value pp_msm_run(void* handle, point_t* out, size_t n,
                                      const scalar_t* scalars, const char* what)
{
    out->inf();
    if (n == 0)
        return RustError{cudaSuccess};
    try {
        auto* msm = static_cast<msm_t<bucket_t, point_t, affine_t, scalar_t>*>(handle);
        RustError r = msm->invoke(*out, (const affine_t*)nullptr, n, scalars, true);
        if (r.code != cudaSuccess) {
            std::string m = std::string(what) + ": " +
                (r.message ? r.message : cudaGetErrorString((cudaError_t)r.code));
            return RustError{r.code, m};
        }
    } catch (const cuda_error& e) {
        return pp_err(e, what);
    }
    return RustError{cudaSuccess};
}

extern "C" RustError::by_value pp_msm_g1_new(int dev, const affine_t* host, size_t n, void** out)
{   return pp_msm_new<bucket_t, point_t, affine_t>(dev, host, n, out, "uploading G1 bases");   }

extern "C" RustError::by_value pp_msm_g2_new(int dev, const affine_fp2_t* host, size_t n, void** out)
{   return pp_msm_new<bucket_fp2_t, point_fp2_t, affine_fp2_t>(dev, host, n, out, "uploading G2 bases");   }

extern "C" RustError::by_value pp_msm_g1_run(void* h, point_t* out, size_t n, const scalar_t* s)
{   return pp_msm_run<bucket_t, point_t, affine_t>(h, out, n, s, "G1 MSM");   }

extern "C" RustError::by_value pp_msm_g2_run(void* h, point_fp2_t* out, size_t n, const scalar_t* s)
{   return pp_msm_run<bucket_fp2_t, point_fp2_t, affine_fp2_t>(h, out, n, s, "G2 MSM");   }

extern "C" void pp_msm_g1_free(void* h)
{   delete static_cast<msm_t<bucket_t, point_t, affine_t, scalar_t>*>(h);   }

extern "C" void pp_msm_g2_free(void* h)
{   delete static_cast<msm_t<bucket_fp2_t, point_fp2_t, affine_fp2_t, scalar_t>*>(h);   }

// Page-locked host memory: sppark's scalar uploads from it run as DMA at full link speed
// (pageable memory goes through the driver's staging copies at a fraction of it).
extern "C" RustError::by_value pp_pinned_alloc(size_t bytes, void** out)
{
    try {
        CUDA_OK(cudaHostAlloc(out, bytes, cudaHostAllocPortable));
    } catch (const cuda_error& e) {
        return pp_err(e, "allocating page-locked host memory");
    }
    return RustError{cudaSuccess};
}

extern "C" void pp_pinned_free(void* p)
{   (void)cudaFreeHost(p);   }

// The quotient runs in three steps so that only the middle one needs the device to itself:
// a GPU-stage worker uploads a, b, c (pageable copies, CPU-bound: ~0.25 s per 2^24
// partition) and downloads h on its own stream *outside* the device lock, overlapping the
// other worker's kernels; only the NTTs run under the lock. Each worker keeps a workspace
// (its stream and three device buffers of 2^lg elements) across partitions.
//
// Values are n = 2^lg field elements in Montgomery form (blst_fr layout, blstrs' Scalar as
// it is), in and out; h comes back in a's buffer (the caller drops its top coefficient).
struct pp_quotient_ws {
    int dev;
    size_t n;
    stream_t stream;
    fr_t* d[3] = {nullptr, nullptr, nullptr};
    pp_quotient_ws(int dev, size_t n) : dev(dev), n(n), stream(dev) {}
    ~pp_quotient_ws()
    {
        (void)cudaSetDevice(dev);
        for (fr_t* p : d)
            if (p) (void)cudaFree(p);
    }
};

extern "C" RustError::by_value pp_quotient_ws_new(int dev, uint32_t lg, void** out)
{
    pp_quotient_ws* ws = nullptr;
    try {
        (void)select_gpu(dev);
        CUDA_OK(cudaSetDevice(dev));
        ws = new pp_quotient_ws{dev, (size_t)1 << lg};
        for (auto& p : ws->d)
            CUDA_OK(cudaMalloc(&p, ws->n * sizeof(fr_t)));
        *out = ws;
    } catch (const cuda_error& e) {
        delete ws;
        return pp_err(e, "allocating the quotient's device buffers");
    }
    return RustError{cudaSuccess};
}

extern "C" void pp_quotient_ws_free(void* ws)
{   delete static_cast<pp_quotient_ws*>(ws);   }

extern "C" RustError::by_value pp_quotient_upload(void* h, const fr_t* a, const fr_t* b,
                                                  const fr_t* c)
{
    auto* ws = static_cast<pp_quotient_ws*>(h);
    try {
        CUDA_OK(cudaSetDevice(ws->dev));
        const fr_t* src[3] = {a, b, c};
        for (int i = 0; i < 3; i++)
            CUDA_OK(cudaMemcpyAsync(ws->d[i], src[i], ws->n * sizeof(fr_t),
                                    cudaMemcpyHostToDevice, ws->stream));
        ws->stream.sync();
    } catch (const cuda_error& e) {
        return pp_err(e, "uploading a, b, c");
    }
    return RustError{cudaSuccess};
}

// h = icoset_ntt((coset_ntt(intt(a)) * coset_ntt(intt(b)) - coset_ntt(intt(c))) * zinv),
// left in the first buffer.
extern "C" RustError::by_value pp_quotient_compute(void* h, uint32_t lg, const fr_t* zinv)
{
    auto* ws = static_cast<pp_quotient_ws*>(h);
    try {
        CUDA_OK(cudaSetDevice(ws->dev));
        typedef NTT::InputOutputOrder O;
        typedef NTT::Direction D;
        typedef NTT::Type T;
        stream_t& s = ws->stream;
        for (fr_t* d : ws->d) {
            NTT::Base_dev_ptr(s, d, lg, O::NR, D::inverse, T::standard);
            NTT::Base_dev_ptr(s, d, lg, O::RN, D::forward, T::coset);
        }
        pp_pointwise<<<s.sm_count() * 2, 512, 0, s>>>(ws->d[0], ws->d[1], ws->d[2], *zinv,
                                                       ws->n);
        CUDA_OK(cudaGetLastError());
        NTT::Base_dev_ptr(s, ws->d[0], lg, O::NN, D::inverse, T::coset);
        s.sync();
    } catch (const cuda_error& e) {
        return pp_err(e, "quotient NTTs");
    }
    return RustError{cudaSuccess};
}

extern "C" RustError::by_value pp_quotient_download(void* h, fr_t* out)
{
    auto* ws = static_cast<pp_quotient_ws*>(h);
    try {
        CUDA_OK(cudaSetDevice(ws->dev));
        CUDA_OK(cudaMemcpyAsync(out, ws->d[0], ws->n * sizeof(fr_t), cudaMemcpyDeviceToHost,
                                ws->stream));
        ws->stream.sync();
    } catch (const cuda_error& e) {
        return pp_err(e, "downloading h");
    }
    return RustError{cudaSuccess};
}

#endif
