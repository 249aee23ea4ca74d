// proofpipe's CUDA kernels over BLS12-381, built on sppark's headers.
//
// One translation unit instantiates sppark's Pippenger MSM and its bitmap batch addition for
// G1 *and* G2 (sppark itself instantiates only the G1 kernels; a G2 launch without the lines
// below fails with "invalid device function") and its NTT over Fr, and exports a small C ABI
// to Rust:
//   pp_ngpus / pp_gpu_mem         device discovery (safe without a GPU or a driver)
//   pp_bases_g{1,2}_new / _free   resident base points: our own device buffer (uploaded once,
//                                 reused by every MSM) and an msm_t engine sized for it
//   pp_msm_g{1,2}_run             MSM over resident points; scalars in Montgomery form
//                                 (blst_fr, as blstrs stores them: sppark's fr_t layout) on
//                                 the host or already on the device (the quotient's h), and,
//                                 when asked, split: 0/1 scalars summed by a bitmap batch
//                                 addition, only the rest ("tail") through Pippenger
//   pp_msm_g{1,2}_classified      a split MSM over resident points whose scalars the host
//                                 classified: bitmaps, offsets and the tail's scalars only
//   pp_stream_g{1,2}_new / _free  a streaming msm_t engine (buckets only, sized for a fixed
//                                 point count) for MSMs over bases in host memory
//   pp_msm_streamed_g{1,2}        MSM over page-locked host points: sppark copies them in
//                                 slices, double-buffered, overlapping the kernels
//   pp_host_register / unregister page-lock an existing host range (the streamed bases)
//   pp_pinned_alloc / _free       page-locked host staging for MSM scalars (full-speed DMA)
//   pp_quotient_ws_new / _free    a GPU-stage worker's quotient workspace (stream, 3, 2 or 1
//                                 buffers of the domain's size)
//   pp_quotient_upload            a, b, c (as many as it has buffers for) to the device,
//                                 outside the device lock
//   pp_quotient_compute           h = icoset_ntt((coset_ntt(intt(a))*coset_ntt(intt(b))
//                                      - coset_ntt(intt(c))) * zinv), in Montgomery form
//   pp_quotient_h                 the device address of h (for the H MSM, without a copy)
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

// The bitmap batch addition (sum of the points whose bit is set), as SupraSeal's split MSM
// instantiates it.
template __global__
void batch_addition<bucket_t>(bucket_t::mem_t ret_[], const affine_t::mem_t points_[],
                              uint32_t npoints, const uint32_t bitmap[], bool accumulate,
                              uint32_t sid);
template __global__
void batch_addition<bucket_fp2_t>(bucket_fp2_t::mem_t ret_[],
                                  const affine_fp2_t::mem_t points_[], uint32_t npoints,
                                  const uint32_t bitmap[], bool accumulate, uint32_t sid);

#include <ntt/ntt.cuh>
// Block-level scan only, inlined into our own kernels (cub::DeviceScan's kernel templates are
// instantiated only where they are called, in host code: see pp_split_gather below).
#include <cub/block/block_scan.cuh>

#ifndef __CUDA_ARCH__
# include <map>
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

// The quotient's pointwise passes with fewer than three buffers (see pp_quotient_compute).
__global__ void pp_mul_assign(fr_t* a, const fr_t* b, size_t n)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += stride)
        a[i] = a[i] * b[i];
}

// a = (a - b) * zinv when `a_first`, else a = (b - a) * zinv.
__global__ void pp_sub_scale(fr_t* a, const fr_t* b, fr_t zinv, size_t n, bool a_first)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += stride) {
        fr_t x = a_first ? a[i] - b[i] : b[i] - a[i];
        a[i] = x * zinv;
    }
}

// The split MSM's device passes over n scalars (Montgomery form), in words of 32:
//   classify: bit j of ones[w] set iff scalar 32w+j is one, of tails[w] iff it is neither zero
//             nor one; tail_count[w] = popcount(tails[w]); totals[0..2] += ones, tails. Words
//             past n are written as zero (the batch addition reads whole 1024-bit chunks).
//   gather:   the tail scalars and their points, compacted in order, from tail_start[w] (the
//             exclusive prefix sum of tail_count).
// `one` is 1 in Montgomery form, as the scalars are. (It comes as an argument: fr_t::is_one()
// reads sppark's constant through a template reference that nvcc 13 cannot compile,
// "constant expressions are not supported".)
__global__ void pp_split_classify(uint32_t* ones, uint32_t* tails, uint32_t* tail_count,
                                  unsigned long long* totals, const fr_t* scalars, size_t n,
                                  size_t words, fr_t one)
{
    static_assert(sizeof(fr_t) == 2 * sizeof(uint4), "a scalar is 32 bytes");
    const uint4* one_w = reinterpret_cast<const uint4*>(&one);
    unsigned long long n_ones = 0, n_tail = 0;
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t w = threadIdx.x + (size_t)blockIdx.x * blockDim.x; w < words; w += stride) {
        uint32_t one_bits = 0, tail_bits = 0;
        size_t first = w * 32;
        for (uint32_t j = 0; j < 32 && first + j < n; j++) {
            // A scalar is 32 bytes: two 16-byte words, compared as they are.
            const uint4* x = reinterpret_cast<const uint4*>(&scalars[first + j]);
            uint4 lo = x[0], hi = x[1];
            bool is_one = lo.x == one_w[0].x && lo.y == one_w[0].y && lo.z == one_w[0].z &&
                          lo.w == one_w[0].w && hi.x == one_w[1].x && hi.y == one_w[1].y &&
                          hi.z == one_w[1].z && hi.w == one_w[1].w;
            bool is_zero = (lo.x | lo.y | lo.z | lo.w | hi.x | hi.y | hi.z | hi.w) == 0;
            if (is_one)
                one_bits |= 1u << j;
            else if (!is_zero)
                tail_bits |= 1u << j;
        }
        ones[w] = one_bits;
        tails[w] = tail_bits;
        tail_count[w] = __popc(tail_bits);
        n_ones += __popc(one_bits);
        n_tail += __popc(tail_bits);
    }
    if (n_ones) atomicAdd(&totals[0], n_ones);
    if (n_tail) atomicAdd(&totals[1], n_tail);
}

template<class affine_h>
__global__ void pp_split_gather(affine_h* tail_points, fr_t* tail_scalars,
                                const affine_h* points, const fr_t* scalars,
                                const uint32_t* tails, const uint32_t* tail_start, size_t words)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t w = threadIdx.x + (size_t)blockIdx.x * blockDim.x; w < words; w += stride) {
        uint32_t bits = tails[w];
        size_t out = tail_start[w];
        while (bits) {
            uint32_t j = __ffs(bits) - 1;
            bits &= bits - 1;
            tail_points[out] = points[w * 32 + j];
            tail_scalars[out] = scalars[w * 32 + j];
            out++;
        }
    }
}

// The tail's points alone, compacted in order (their scalars come compacted from the host).
template<class affine_h>
__global__ void pp_split_gather_points(affine_h* tail_points, const affine_h* points,
                                       const uint32_t* tails, const uint32_t* tail_start,
                                       size_t words)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t w = threadIdx.x + (size_t)blockIdx.x * blockDim.x; w < words; w += stride) {
        uint32_t bits = tails[w];
        size_t out = tail_start[w];
        while (bits) {
            uint32_t j = __ffs(bits) - 1;
            bits &= bits - 1;
            tail_points[out++] = points[w * 32 + j];
        }
    }
}

// A template kernel launched only from host code (inside #ifndef __CUDA_ARCH__ below) is never
// instantiated in the device pass: without these it has no device code and its launch fails
// with "invalid device function" (what cub::DeviceScan's kernels did here too).
template __global__ void pp_split_gather<affine_t::mem_t>(affine_t::mem_t*, fr_t*,
                                                          const affine_t::mem_t*, const fr_t*,
                                                          const uint32_t*, const uint32_t*, size_t);
template __global__ void pp_split_gather<affine_fp2_t::mem_t>(affine_fp2_t::mem_t*, fr_t*,
                                                              const affine_fp2_t::mem_t*,
                                                              const fr_t*, const uint32_t*,
                                                              const uint32_t*, size_t);
template __global__ void pp_split_gather_points<affine_t::mem_t>(affine_t::mem_t*,
                                                                 const affine_t::mem_t*,
                                                                 const uint32_t*,
                                                                 const uint32_t*, size_t);
template __global__ void pp_split_gather_points<affine_fp2_t::mem_t>(affine_fp2_t::mem_t*,
                                                                     const affine_fp2_t::mem_t*,
                                                                     const uint32_t*,
                                                                     const uint32_t*, size_t);

// Exclusive prefix sum of n counts in three launches: each block scans its SCAN_BLOCK counts
// and writes its total; one block scans the totals in place; every count gets its block's
// offset added.
static const int SCAN_BLOCK = 1024;

__global__ void pp_scan_blocks(const uint32_t* in, uint32_t* out, uint32_t* sums, size_t n)
{
    typedef cub::BlockScan<uint32_t, SCAN_BLOCK> Scan;
    __shared__ typename Scan::TempStorage tmp;
    size_t i = blockIdx.x * (size_t)SCAN_BLOCK + threadIdx.x;
    uint32_t v = i < n ? in[i] : 0, total;
    Scan(tmp).ExclusiveSum(v, v, total);
    if (i < n)
        out[i] = v;
    if (threadIdx.x == 0)
        sums[blockIdx.x] = total;
}

__global__ void pp_scan_sums(uint32_t* sums, size_t m)
{
    typedef cub::BlockScan<uint32_t, SCAN_BLOCK> Scan;
    __shared__ typename Scan::TempStorage tmp;
    __shared__ uint32_t carry;
    if (threadIdx.x == 0)
        carry = 0;
    __syncthreads();
    for (size_t base = 0; base < m; base += SCAN_BLOCK) {
        size_t i = base + threadIdx.x;
        uint32_t v = i < m ? sums[i] : 0, total;
        Scan(tmp).ExclusiveSum(v, v, total);
        if (i < m)
            sums[i] = v + carry;
        __syncthreads();
        if (threadIdx.x == 0)
            carry += total;
        __syncthreads();
    }
}

__global__ void pp_scan_add(uint32_t* out, const uint32_t* sums, size_t n)
{
    size_t i = blockIdx.x * (size_t)SCAN_BLOCK + threadIdx.x;
    if (i < n)
        out[i] += sums[blockIdx.x];
}

#ifndef __CUDA_ARCH__

static RustError::by_value pp_err(const cuda_error& e, const char* what)
{
    // A failed runtime call stays the thread's "last error" until read: left there, it would
    // fail the next kernel launch check (CUDA_OK(cudaGetLastError())) of a later, good call
    // (after an out-of-memory upload that evicted bases and retried, say). Sticky errors
    // persist regardless.
    (void)cudaGetLastError();
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

// Resident bases: the points of one query range in a device buffer of ours (so that the
// split MSM's batch addition and tail gather can read them), and one msm_t engine per range,
// made without points (so it owns only its buckets, sized for n), that every MSM over them
// runs through. The points are handed to the engine as a non-owning dev_ptr_t<affine_t>:
// sppark's invoke() template then takes them as device points and calls its plain overload.
// (Handing it dev_ptr_t<affine_t::mem_t> instead recurses forever: mem_t is not affine_t for
// these curves, ADR 0005. The two have the same layout, X then Y, checked below.)
template<class bucket_t, class point_t, class affine_t>
struct pp_bases {
    typedef typename affine_t::mem_t affine_h;
    typedef msm_t<bucket_t, point_t, affine_t, scalar_t> engine_t;
    static_assert(sizeof(affine_h) == sizeof(affine_t), "device and host affine layouts differ");

    int dev;
    size_t n;
    affine_h* d_points = nullptr;
    engine_t* engine = nullptr;
    // Engines for split MSMs' tails, by the power of two at or above the tail's size: sppark
    // sizes its windows (and buckets) from the point count an engine is made for, and a tail
    // far smaller than n would otherwise pay the full MSM's bucket reduction. Made once each
    // (an msm_t's destructor frees with a device-wide synchronisation).
    std::map<size_t, engine_t*> tail_engines;

    pp_bases(int dev, size_t n) : dev(dev), n(n) {}
    ~pp_bases()
    {
        delete engine;
        for (auto& t : tail_engines)
            delete t.second;
        if (d_points) {
            (void)cudaSetDevice(dev);
            (void)cudaFree(d_points);
        }
    }
    dev_ptr_t<affine_t> points() const  { return dev_ptr_t<affine_t>((affine_t*)d_points); }

    engine_t* tail_engine(size_t ntail)
    {
        size_t size_class = 1;
        while (size_class < ntail)
            size_class <<= 1;
        auto it = tail_engines.find(size_class);
        if (it != tail_engines.end())
            return it->second;
        auto* e = new engine_t{nullptr, size_class, sizeof(affine_t), dev};
        tail_engines[size_class] = e;
        return e;
    }
};

template<class bucket_t, class point_t, class affine_t>
static RustError::by_value pp_bases_new(int dev, const affine_t* host, size_t n, void** out,
                                        const char* what)
{
    typedef pp_bases<bucket_t, point_t, affine_t> bases_t;
    bases_t* b = nullptr;
    try {
        const gpu_t& gpu = select_gpu(dev);
        b = new bases_t{dev, n};
        CUDA_OK(cudaMalloc(&b->d_points, n * sizeof(affine_t)));
        CUDA_OK(cudaMemcpy(b->d_points, host, n * sizeof(affine_t), cudaMemcpyHostToDevice));
        b->engine = new typename bases_t::engine_t{nullptr, n, sizeof(affine_t), dev};
        gpu.sync();
        *out = b;
    } catch (const cuda_error& e) {
        delete b;
        return pp_err(e, what);
    }
    return RustError{cudaSuccess};
}

// What one MSM did: split or not, and how many of its scalars were one and how many went to
// the tail (both 0 when not split).
struct pp_msm_info {
    unsigned long long ones;
    unsigned long long tail;
    uint32_t split;
};

// A split pays when most scalars are 0 or 1; below this share of ones, or above this share of
// tail scalars (whose points and scalars are gathered into temporaries), the MSM runs plain.
static const size_t SPLIT_MIN_ONES_DIV = 16;   // ones >= n/16
static const size_t SPLIT_MAX_TAIL_DIV = 4;    // tail <= n/4

static RustError::by_value pp_msm_error(const RustError& r, const char* what)
{
    (void)cudaGetLastError();   // as in pp_err
    std::string m = std::string(what) + ": " +
        (r.message ? r.message : cudaGetErrorString((cudaError_t)r.code));
    return RustError{r.code, m};
}

// `scalars`: n scalars in Montgomery form (mont = true has sppark take them out of it on the
// device), in host memory or, with `on_device`, in device memory of the bases' GPU; `one`: 1
// in Montgomery form (host memory), what a split counts as a one.
template<class bucket_t, class point_t, class affine_t>
static RustError::by_value pp_msm_run(void* handle, point_t* out, size_t n,
                                      const scalar_t* scalars, bool on_device, bool split,
                                      const scalar_t* one, pp_msm_info* info, const char* what)
{
    typedef pp_bases<bucket_t, point_t, affine_t> bases_t;
    typedef typename affine_t::mem_t affine_h;
    auto* b = static_cast<bases_t*>(handle);
    out->inf();
    *info = pp_msm_info{0, 0, 0};
    if (n == 0)
        return RustError{cudaSuccess};
    if (n > b->n)
        return RustError{cudaErrorInvalidValue, std::string(what) + ": more scalars than resident points"};
    try {
        const gpu_t& gpu = select_gpu(b->dev);
        RustError r{cudaSuccess};
        if (!split) {
            r = on_device
                ? b->engine->invoke(*out, b->points(), n, dev_ptr_t<scalar_t>((scalar_t*)scalars), true)
                : b->engine->invoke(*out, b->points(), n, scalars, true);
            return r.code == cudaSuccess ? RustError{cudaSuccess} : pp_msm_error(r, what);
        }

        // Everything below runs on the stream sppark's invoke() starts on, in order with it.
        stream_t& s = gpu[2];
        dev_ptr_t<scalar_t> d_upload{on_device ? 0 : n, s};
        const scalar_t* d_scalars = on_device ? scalars : (const scalar_t*)d_upload;
        if (!on_device)
            s.HtoD(&d_upload[0], scalars, n);

        // Whole 1024-bit chunks of bitmap words: what the batch addition reads at a time.
        size_t words = (n + 1023) / 1024 * 32;
        dev_ptr_t<uint32_t> d_words{3 * words, s};
        uint32_t* d_ones = &d_words[0];
        uint32_t* d_tails = &d_words[words];
        uint32_t* d_tail_count = &d_words[2 * words];
        dev_ptr_t<unsigned long long> d_totals{2, s};
        s.bzero(&d_totals[0], 2);
        int grid = gpu.sm_count() * 4;
        pp_split_classify<<<grid, 256, 0, s>>>(d_ones, d_tails, d_tail_count, &d_totals[0],
                                               d_scalars, n, words, *one);
        CUDA_OK(cudaGetLastError());
        unsigned long long totals[2];
        s.DtoH(totals, &d_totals[0], 2);
        s.sync();

        if (totals[0] < n / SPLIT_MIN_ONES_DIV || totals[1] > n / SPLIT_MAX_TAIL_DIV) {
            r = b->engine->invoke(*out, b->points(), n,
                                  dev_ptr_t<scalar_t>((scalar_t*)d_scalars), true);
            return r.code == cudaSuccess ? RustError{cudaSuccess} : pp_msm_error(r, what);
        }
        *info = pp_msm_info{totals[0], totals[1], 1};

        // The ones: a bitmap batch addition over all resident points, one partial sum per
        // warp, added up here.
        point_t ones_sum;
        ones_sum.inf();
        if (totals[0]) {
            uint32_t nbuckets = gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
            dev_ptr_t<typename bucket_t::mem_t> d_partial{nbuckets, s};
            s.launch_coop(batch_addition<bucket_t>, {gpu.sm_count(), BATCH_ADD_BLOCK_SIZE},
                          (typename bucket_t::mem_t*)&d_partial[0], (const affine_h*)b->d_points,
                          (uint32_t)n, (const uint32_t*)d_ones, false, (uint32_t)0);
            std::vector<bucket_t> partial(nbuckets);
            s.DtoH(partial, &d_partial[0]);
            s.sync();
            ones_sum = sum_up(partial);
        }

        // The tail: its scalars and points compacted in order, then Pippenger over them.
        point_t tail_sum;
        tail_sum.inf();
        if (totals[1]) {
            size_t ntail = totals[1];
            dev_ptr_t<uint32_t> d_tail_start{words, s};
            size_t blocks = (words + SCAN_BLOCK - 1) / SCAN_BLOCK;
            dev_ptr_t<uint32_t> d_block_sums{blocks, s};
            pp_scan_blocks<<<blocks, SCAN_BLOCK, 0, s>>>(d_tail_count, &d_tail_start[0],
                                                        &d_block_sums[0], words);
            CUDA_OK(cudaGetLastError());
            pp_scan_sums<<<1, SCAN_BLOCK, 0, s>>>(&d_block_sums[0], blocks);
            CUDA_OK(cudaGetLastError());
            pp_scan_add<<<blocks, SCAN_BLOCK, 0, s>>>(&d_tail_start[0], &d_block_sums[0], words);
            CUDA_OK(cudaGetLastError());
            dev_ptr_t<affine_h> d_tail_points{ntail, s};
            dev_ptr_t<scalar_t> d_tail_scalars{ntail, s};
            pp_split_gather<affine_h><<<grid, 256, 0, s>>>(&d_tail_points[0], &d_tail_scalars[0],
                                                         b->d_points, d_scalars, d_tails,
                                                         &d_tail_start[0], words);
            CUDA_OK(cudaGetLastError());
            r = b->tail_engine(ntail)->invoke(tail_sum,
                                              dev_ptr_t<affine_t>((affine_t*)&d_tail_points[0]),
                                              ntail, dev_ptr_t<scalar_t>(&d_tail_scalars[0]), true);
            if (r.code != cudaSuccess)
                return pp_msm_error(r, what);
        }
        *out = ones_sum;
        out->add(tail_sum);
    } catch (const cuda_error& e) {
        return pp_err(e, what);
    }
    return RustError{cudaSuccess};
}

// A split MSM whose scalars the host classified (kernels/src/split.rs): `ones` and `tails`
// bitmaps and the tail's start per word (`words` of each, whole 1024-bit chunks covering n),
// and the `ntail` tail scalars in order. Only these go to the device, not n scalars; the ones
// are summed by the bitmap batch addition, the tail by Pippenger over its gathered points.
template<class bucket_t, class point_t, class affine_t>
static RustError::by_value pp_msm_classified(void* handle, point_t* out, size_t n,
                                             const uint32_t* ones, const uint32_t* tails,
                                             const uint32_t* tail_start, size_t words,
                                             const scalar_t* tail_scalars, size_t ntail,
                                             size_t nones, const char* what)
{
    typedef pp_bases<bucket_t, point_t, affine_t> bases_t;
    typedef typename affine_t::mem_t affine_h;
    auto* b = static_cast<bases_t*>(handle);
    out->inf();
    if (n == 0)
        return RustError{cudaSuccess};
    if (n > b->n)
        return RustError{cudaErrorInvalidValue, std::string(what) + ": more scalars than resident points"};
    if (words % 32 != 0 || words * 32 < n || (words - 32) * 32 >= n)
        return RustError{cudaErrorInvalidValue, std::string(what) + ": the bitmaps are not whole 1024-bit chunks covering the scalars"};
    try {
        const gpu_t& gpu = select_gpu(b->dev);
        // The stream sppark's invoke() starts on, as in pp_msm_run.
        stream_t& s = gpu[2];
        dev_ptr_t<uint32_t> d_words{3 * words, s};
        s.HtoD(&d_words[0], ones, words);
        s.HtoD(&d_words[words], tails, words);
        s.HtoD(&d_words[2 * words], tail_start, words);

        point_t ones_sum;
        ones_sum.inf();
        if (nones) {
            uint32_t nbuckets = gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
            dev_ptr_t<typename bucket_t::mem_t> d_partial{nbuckets, s};
            s.launch_coop(batch_addition<bucket_t>, {gpu.sm_count(), BATCH_ADD_BLOCK_SIZE},
                          (typename bucket_t::mem_t*)&d_partial[0], (const affine_h*)b->d_points,
                          (uint32_t)n, (const uint32_t*)&d_words[0], false, (uint32_t)0);
            std::vector<bucket_t> partial(nbuckets);
            s.DtoH(partial, &d_partial[0]);
            s.sync();
            ones_sum = sum_up(partial);
        }

        point_t tail_sum;
        tail_sum.inf();
        if (ntail) {
            dev_ptr_t<affine_h> d_tail_points{ntail, s};
            dev_ptr_t<scalar_t> d_tail_scalars{ntail, s};
            s.HtoD(&d_tail_scalars[0], tail_scalars, ntail);
            int grid = gpu.sm_count() * 4;
            pp_split_gather_points<affine_h><<<grid, 256, 0, s>>>(&d_tail_points[0], b->d_points,
                                                                 &d_words[words],
                                                                 &d_words[2 * words], words);
            CUDA_OK(cudaGetLastError());
            RustError r = b->tail_engine(ntail)->invoke(tail_sum,
                                                        dev_ptr_t<affine_t>((affine_t*)&d_tail_points[0]),
                                                        ntail, dev_ptr_t<scalar_t>(&d_tail_scalars[0]), true);
            if (r.code != cudaSuccess)
                return pp_msm_error(r, what);
        }
        *out = ones_sum;
        out->add(tail_sum);
    } catch (const cuda_error& e) {
        return pp_err(e, what);
    }
    return RustError{cudaSuccess};
}

extern "C" RustError::by_value pp_msm_g1_classified(void* h, point_t* out, size_t n,
        const uint32_t* ones, const uint32_t* tails, const uint32_t* tail_start, size_t words,
        const scalar_t* tail, size_t ntail, size_t nones)
{   return pp_msm_classified<bucket_t, point_t, affine_t>(h, out, n, ones, tails, tail_start, words, tail, ntail, nones, "G1 MSM");   }

extern "C" RustError::by_value pp_msm_g2_classified(void* h, point_fp2_t* out, size_t n,
        const uint32_t* ones, const uint32_t* tails, const uint32_t* tail_start, size_t words,
        const scalar_t* tail, size_t ntail, size_t nones)
{   return pp_msm_classified<bucket_fp2_t, point_fp2_t, affine_fp2_t>(h, out, n, ones, tails, tail_start, words, tail, ntail, nones, "G2 MSM");   }

extern "C" RustError::by_value pp_bases_g1_new(int dev, const affine_t* host, size_t n, void** out)
{   return pp_bases_new<bucket_t, point_t, affine_t>(dev, host, n, out, "uploading G1 bases");   }

extern "C" RustError::by_value pp_bases_g2_new(int dev, const affine_fp2_t* host, size_t n, void** out)
{   return pp_bases_new<bucket_fp2_t, point_fp2_t, affine_fp2_t>(dev, host, n, out, "uploading G2 bases");   }

extern "C" RustError::by_value pp_msm_g1_run(void* h, point_t* out, size_t n, const scalar_t* s,
                                             bool on_device, bool split, const scalar_t* one,
                                             pp_msm_info* info)
{   return pp_msm_run<bucket_t, point_t, affine_t>(h, out, n, s, on_device, split, one, info, "G1 MSM");   }

extern "C" RustError::by_value pp_msm_g2_run(void* h, point_fp2_t* out, size_t n, const scalar_t* s,
                                             bool on_device, bool split, const scalar_t* one,
                                             pp_msm_info* info)
{   return pp_msm_run<bucket_fp2_t, point_fp2_t, affine_fp2_t>(h, out, n, s, on_device, split, one, info, "G2 MSM");   }

extern "C" void pp_bases_g1_free(void* h)
{   delete static_cast<pp_bases<bucket_t, point_t, affine_t>*>(h);   }

extern "C" void pp_bases_g2_free(void* h)
{   delete static_cast<pp_bases<bucket_fp2_t, point_fp2_t, affine_fp2_t>*>(h);   }

// Streamed bases: an msm_t engine made without points for a fixed point count (its window
// width, buckets and slice size follow from that count, not from each MSM's), kept by Rust
// per device and group. invoke() takes host points as they are, in slices of `stride` points
// copied on two streams while the other slice's kernels run; the points must be page-locked
// (pp_host_register) or the copies crawl. It never reads device points here, so a streamed
// MSM is never split (the batch addition reads resident points).
template<class bucket_t, class point_t, class affine_t>
struct pp_stream {
    typedef msm_t<bucket_t, point_t, affine_t, scalar_t> engine_t;
    int dev;
    engine_t* engine;
    ~pp_stream() { delete engine; }
};

template<class bucket_t, class point_t, class affine_t>
static RustError::by_value pp_stream_new(int dev, size_t npoints, void** out, const char* what)
{
    typedef pp_stream<bucket_t, point_t, affine_t> stream_t_;
    try {
        (void)select_gpu(dev);
        auto* e = new typename stream_t_::engine_t{nullptr, npoints, sizeof(affine_t), dev};
        *out = new stream_t_{dev, e};
    } catch (const cuda_error& e) {
        return pp_err(e, what);
    }
    return RustError{cudaSuccess};
}

// `points`: n page-locked host points; `scalars`: n scalars in Montgomery form, on the host or,
// with `on_device`, in the engine's device memory (the quotient's h). Device scalars go in as
// a non-owning dev_ptr_t (invoke's template then keeps the points as host memory: a raw
// pointer would be taken as host scalars). Points are affine_t*, not mem_t* (see pp_bases).
template<class bucket_t, class point_t, class affine_t>
static RustError::by_value pp_msm_streamed(void* handle, const affine_t* points, size_t n,
                                           const scalar_t* scalars, bool on_device,
                                           point_t* out, const char* what)
{
    auto* st = static_cast<pp_stream<bucket_t, point_t, affine_t>*>(handle);
    out->inf();
    if (n == 0)
        return RustError{cudaSuccess};
    try {
        (void)select_gpu(st->dev);
        RustError r = on_device
            ? st->engine->invoke(*out, points, n, dev_ptr_t<scalar_t>((scalar_t*)scalars), true)
            : st->engine->invoke(*out, points, n, scalars, true);
        return r.code == cudaSuccess ? RustError{cudaSuccess} : pp_msm_error(r, what);
    } catch (const cuda_error& e) {
        return pp_err(e, what);
    }
}

extern "C" RustError::by_value pp_stream_g1_new(int dev, size_t npoints, void** out)
{   return pp_stream_new<bucket_t, point_t, affine_t>(dev, npoints, out, "making the G1 streaming engine");   }

extern "C" RustError::by_value pp_stream_g2_new(int dev, size_t npoints, void** out)
{   return pp_stream_new<bucket_fp2_t, point_fp2_t, affine_fp2_t>(dev, npoints, out, "making the G2 streaming engine");   }

extern "C" void pp_stream_g1_free(void* h)
{   delete static_cast<pp_stream<bucket_t, point_t, affine_t>*>(h);   }

extern "C" void pp_stream_g2_free(void* h)
{   delete static_cast<pp_stream<bucket_fp2_t, point_fp2_t, affine_fp2_t>*>(h);   }

extern "C" RustError::by_value pp_msm_streamed_g1(void* h, const affine_t* points, size_t n,
                                                  const scalar_t* s, bool on_device, point_t* out)
{   return pp_msm_streamed<bucket_t, point_t, affine_t>(h, points, n, s, on_device, out, "streamed G1 MSM");   }

extern "C" RustError::by_value pp_msm_streamed_g2(void* h, const affine_fp2_t* points, size_t n,
                                                  const scalar_t* s, bool on_device,
                                                  point_fp2_t* out)
{   return pp_msm_streamed<bucket_fp2_t, point_fp2_t, affine_fp2_t>(h, points, n, s, on_device, out, "streamed G2 MSM");   }

// Page-locks an existing host range for every device (portable), so sppark's copies of
// streamed points run as DMA. cudaErrorHostMemoryAlreadyRegistered comes back as it is: the
// caller then neither needs nor owns the registration.
extern "C" RustError::by_value pp_host_register(void* ptr, size_t bytes)
{
    try {
        CUDA_OK(cudaHostRegister(ptr, bytes, cudaHostRegisterPortable));
    } catch (const cuda_error& e) {
        return pp_err(e, "page-locking streamed base points");
    }
    return RustError{cudaSuccess};
}

extern "C" void pp_host_unregister(void* ptr)
{
    if (cudaHostUnregister(ptr) != cudaSuccess)
        (void)cudaGetLastError();
}

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
// a GPU-stage worker uploads what it can (pageable or page-locked copies) and downloads h on
// its own stream *outside* the device lock, overlapping the other worker's kernels; only the
// NTTs run under the lock. Each worker keeps a workspace (its stream and device buffers of
// 2^lg elements) across partitions.
//
// A workspace has 3, 2 or 1 such buffers, so that a card too small for three (12 GiB at 2^27)
// still proves:
//   3: a, b, c all uploaded ahead; the NTTs and one pointwise pass.
//   2: a and b uploaded ahead; c goes into b's buffer once a*b is formed (a copy inside the
//      lock).
//   1: only a uploaded ahead; each transform's result waits in a host buffer (the caller's a,
//      no longer needed on the host) while the next input is transformed, and is combined
//      with it through a small staging buffer, slice by slice: two more downloads and two
//      more uploads of n elements, all inside the lock.
//
// Values are n = 2^lg field elements in Montgomery form (blst_fr layout, blstrs' Scalar as
// it is), in and out; h comes back in the first buffer (the caller drops its top coefficient).
static const size_t QUOTIENT_STAGE = (size_t)1 << 22;   // elements: 128 MiB

struct pp_quotient_ws {
    int dev;
    size_t n;
    uint32_t nbuf;
    stream_t stream;
    fr_t* d[3] = {nullptr, nullptr, nullptr};
    fr_t* stage = nullptr;
    size_t stage_n = 0;
    pp_quotient_ws(int dev, size_t n, uint32_t nbuf) : dev(dev), n(n), nbuf(nbuf), stream(dev) {}
    ~pp_quotient_ws()
    {
        (void)cudaSetDevice(dev);
        for (fr_t* p : d)
            if (p) (void)cudaFree(p);
        if (stage) (void)cudaFree(stage);
    }
};

extern "C" RustError::by_value pp_quotient_ws_new(int dev, uint32_t lg, uint32_t nbuf, void** out)
{
    pp_quotient_ws* ws = nullptr;
    try {
        if (nbuf < 1 || nbuf > 3)
            return RustError{cudaErrorInvalidValue, "a quotient workspace has 1, 2 or 3 buffers"};
        (void)select_gpu(dev);
        CUDA_OK(cudaSetDevice(dev));
        ws = new pp_quotient_ws{dev, (size_t)1 << lg, nbuf};
        for (uint32_t i = 0; i < nbuf; i++)
            CUDA_OK(cudaMalloc(&ws->d[i], ws->n * sizeof(fr_t)));
        if (nbuf == 1) {
            // At least four slices, so that small domains (the tests') are cut too.
            ws->stage_n = std::max<size_t>(1, std::min(ws->n / 4, QUOTIENT_STAGE));
            CUDA_OK(cudaMalloc(&ws->stage, ws->stage_n * sizeof(fr_t)));
        }
        *out = ws;
    } catch (const cuda_error& e) {
        delete ws;
        return pp_err(e, "allocating the quotient's device buffers");
    }
    return RustError{cudaSuccess};
}

extern "C" void pp_quotient_ws_free(void* ws)
{   delete static_cast<pp_quotient_ws*>(ws);   }

// Uploads the inputs the workspace has buffers for ahead (a, b, c; a, b; or a); the rest are
// read by pp_quotient_compute.
extern "C" RustError::by_value pp_quotient_upload(void* h, const fr_t* a, const fr_t* b,
                                                  const fr_t* c)
{
    auto* ws = static_cast<pp_quotient_ws*>(h);
    try {
        CUDA_OK(cudaSetDevice(ws->dev));
        const fr_t* src[3] = {a, b, c};
        for (uint32_t i = 0; i < ws->nbuf; i++)
            CUDA_OK(cudaMemcpyAsync(ws->d[i], src[i], ws->n * sizeof(fr_t),
                                    cudaMemcpyHostToDevice, ws->stream));
        ws->stream.sync();
    } catch (const cuda_error& e) {
        return pp_err(e, "uploading a, b, c");
    }
    return RustError{cudaSuccess};
}

// Evaluations on the coset from values on the domain, in place: intt, then coset ntt.
static void pp_to_coset(stream_t& s, fr_t* d, uint32_t lg)
{
    typedef NTT::InputOutputOrder O;
    typedef NTT::Direction D;
    typedef NTT::Type T;
    NTT::Base_dev_ptr(s, d, lg, O::NR, D::inverse, T::standard);
    NTT::Base_dev_ptr(s, d, lg, O::RN, D::forward, T::coset);
}

// h = icoset_ntt((coset_ntt(intt(a)) * coset_ntt(intt(b)) - coset_ntt(intt(c))) * zinv),
// left in the first buffer. `a`, `b`, `c`: the host inputs, read for what was not uploaded
// ahead; with one buffer `a` is overwritten (it holds intermediate results).
extern "C" RustError::by_value pp_quotient_compute(void* h, uint32_t lg, const fr_t* zinv,
                                                   fr_t* a, const fr_t* b, const fr_t* c)
{
    auto* ws = static_cast<pp_quotient_ws*>(h);
    try {
        CUDA_OK(cudaSetDevice(ws->dev));
        stream_t& s = ws->stream;
        const size_t n = ws->n;
        const int grid = s.sm_count() * 2;
        fr_t* d0 = ws->d[0];
        if (ws->nbuf == 3) {
            for (fr_t* d : ws->d)
                pp_to_coset(s, d, lg);
            pp_pointwise<<<grid, 512, 0, s>>>(d0, ws->d[1], ws->d[2], *zinv, n);
            CUDA_OK(cudaGetLastError());
        } else if (ws->nbuf == 2) {
            fr_t* d1 = ws->d[1];
            pp_to_coset(s, d0, lg);
            pp_to_coset(s, d1, lg);
            pp_mul_assign<<<grid, 512, 0, s>>>(d0, d1, n);
            CUDA_OK(cudaGetLastError());
            s.HtoD(d1, c, n);
            pp_to_coset(s, d1, lg);
            pp_sub_scale<<<grid, 512, 0, s>>>(d0, d1, *zinv, n, true);
            CUDA_OK(cudaGetLastError());
        } else {
            // a~ to the host (into a), then b~; a~*b~ formed slice by slice on the device and
            // sent to the host in its turn; then c~, and (a~*b~ - c~)*zinv slice by slice.
            fr_t* stage = ws->stage;
            auto combine = [&](bool multiply) {
                for (size_t off = 0; off < n; off += ws->stage_n) {
                    size_t len = std::min(ws->stage_n, n - off);
                    s.HtoD(stage, a + off, len);
                    if (multiply)
                        pp_mul_assign<<<grid, 512, 0, s>>>(d0 + off, stage, len);
                    else
                        pp_sub_scale<<<grid, 512, 0, s>>>(d0 + off, stage, *zinv, len, false);
                    CUDA_OK(cudaGetLastError());
                }
            };
            pp_to_coset(s, d0, lg);
            s.DtoH(a, d0, n);
            s.HtoD(d0, b, n);
            pp_to_coset(s, d0, lg);
            combine(true);
            s.DtoH(a, d0, n);
            s.HtoD(d0, c, n);
            pp_to_coset(s, d0, lg);
            combine(false);
        }
        typedef NTT::InputOutputOrder O;
        typedef NTT::Direction D;
        typedef NTT::Type T;
        NTT::Base_dev_ptr(s, d0, lg, O::NN, D::inverse, T::coset);
        s.sync();
    } catch (const cuda_error& e) {
        return pp_err(e, "quotient NTTs");
    }
    return RustError{cudaSuccess};
}

// h, left on the device by pp_quotient_compute: for an MSM with on_device scalars, which
// must run before the workspace's next upload.
extern "C" const fr_t* pp_quotient_h(void* h)
{   return static_cast<pp_quotient_ws*>(h)->d[0];   }

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
