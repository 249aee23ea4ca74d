//! Which proving-key queries keep their bases resident on the GPU and which stream them from
//! page-locked host memory, and the device memory each choice needs.
//!
//! A streamed query's bases stay in host memory; sppark's MSM (`msm_t::invoke` with host
//! points) copies them to the device in batches, double-buffered against its kernels. The
//! device then holds, instead of the bases, the engine's buckets and, per call, two batches
//! of points, their signed digits and a scalar or sort temporary. The formulas here follow
//! sppark 0.1.16's `msm/pippenger.cuh`; the kernels crate keeps its own copy for its ledger.

use serde::{Deserialize, Serialize};

use crate::sizing::circuit::{CircuitShape, G1_AFFINE_BYTES, G2_AFFINE_BYTES, SCALAR, domain_size};
use crate::sizing::device::GPU_MSM_BYTES_PER_POINT;

/// Bits of a BLS12-381 scalar (sppark's `scalar_t::bit_length()`).
pub const MSM_SCALAR_BITS: u64 = 255;

/// Streaming multiprocessors the engine's extra buckets are counted for: 132 on an H100 SXM
/// and an H200 (sppark adds `sm_count * BATCH_ADD_BLOCK_SIZE / WARP_SZ` = 8 per SM).
pub const MSM_SM_COUNT: u64 = 132;

/// The point count a streamed query's MSM engine is built for (`msm_t`'s `np`): its window
/// (16 bits at 2^24) sets the bucket count and how finely a call is cut into batches.
pub const STREAMED_MSM_ENGINE_POINTS: u64 = 1 << 24;

/// The group an MSM runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MsmGroup {
    G1,
    G2,
}

impl MsmGroup {
    /// Bytes of an affine point as the device holds it (`affine_t::mem_t`).
    pub fn point_bytes(self) -> u64 {
        match self {
            Self::G1 => G1_AFFINE_BYTES,
            Self::G2 => G2_AFFINE_BYTES,
        }
    }

    /// Bytes of a bucket (`bucket_t::mem_t`: an XYZZ point, four coordinates).
    pub fn bucket_bytes(self) -> u64 {
        match self {
            Self::G1 => 4 * 48,
            Self::G2 => 4 * 96,
        }
    }
}

/// sppark's `floor(log2(n))` (0 for 0).
fn lg2(n: u64) -> u64 {
    n.checked_ilog2().map_or(0, u64::from)
}

/// The window of an MSM engine: `wbits`-bit signed digits, `nwins` windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MsmWindows {
    pub wbits: u64,
    pub nwins: u64,
}

impl MsmWindows {
    /// An engine built for `np` points (`msm_t`'s constructor): np rounded up to a warp,
    /// wbits = clamp(lg2(1.5 np) - 8, 10, 18) (17 for none), nwins = (255 - 1) / wbits + 1.
    pub fn for_engine_points(np: u64) -> Self {
        let n = np.next_multiple_of(32);
        let wbits = match n {
            0 => 17,
            1..=192 => 10,
            _ => lg2(n + n / 2).saturating_sub(8).clamp(10, 18),
        };
        Self {
            wbits,
            nwins: (MSM_SCALAR_BITS - 1) / wbits + 1,
        }
    }

    /// The engine streamed queries use ([`STREAMED_MSM_ENGINE_POINTS`]): 16-bit windows, 16
    /// of them.
    pub fn streamed() -> Self {
        Self::for_engine_points(STREAMED_MSM_ENGINE_POINTS)
    }
}

/// How `msm_t::invoke` cuts an MSM over `n` points: `batch` calls of `stride` points each,
/// batch = max(1, 2^(max(lg2(1.5 n), wbits) - wbits) / 64), stride = ceil(n / batch)
/// rounded up to a warp.
pub fn streamed_msm_batches(windows: MsmWindows, n: u64) -> (u64, u64) {
    let lg = lg2(n + n / 2).max(windows.wbits);
    let batch = ((1u64 << (lg - windows.wbits)) >> 6).max(1);
    let stride = n.div_ceil(batch).next_multiple_of(32);
    (batch, stride)
}

/// Device bytes an MSM engine keeps while it exists, whatever its calls: its buckets
/// (nwins * 2^(wbits-1), plus 8 per SM for the batch addition) and their histogram
/// (4 B per bucket row entry).
pub fn msm_engine_device_bytes(group: MsmGroup, windows: MsmWindows) -> u64 {
    let row = 1u64 << (windows.wbits - 1);
    let buckets = windows.nwins * row + MSM_SM_COUNT * 8;
    buckets * group.bucket_bytes() + windows.nwins * row * 4
}

/// Device bytes one call of an MSM over `n` streamed points allocates: the points' buffers
/// (two batches, double-buffered, or one when a single batch covers all), the signed digits
/// (nwins * stride * 4 B) and a temporary of stride * max(16 B, 32 B when the scalars are
/// copied from the host). sppark keeps 16 B a point for its digit sort even when the
/// scalars are already on the device (the H query's case).
pub fn streamed_msm_call_device_bytes(
    group: MsmGroup,
    windows: MsmWindows,
    n: u64,
    scalars_on_device: bool,
) -> u64 {
    if n == 0 {
        return 0;
    }
    let (batch, stride) = streamed_msm_batches(windows, n);
    let temp = stride
        * if scalars_on_device {
            16
        } else {
            SCALAR.max(16)
        };
    let digits = windows.nwins * stride * 4;
    let point_buffers = if batch > 1 { 2 } else { 1 };
    temp + digits + point_buffers * stride * group.point_bytes()
}

/// Device bytes of a streamed MSM over `n` points on the streamed engine: its buckets and
/// one call's buffers.
pub fn streamed_msm_device_bytes(group: MsmGroup, n: u64, scalars_on_device: bool) -> u64 {
    let windows = MsmWindows::streamed();
    msm_engine_device_bytes(group, windows)
        + streamed_msm_call_device_bytes(group, windows, n, scalars_on_device)
}

/// Bytes of each proving-key query's bases as the host holds them (affine points: 96 B in
/// G1, 192 B in G2). Their sum is the proving key's heap bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryBytes {
    /// The quotient's query, m - 1 points for a domain of m.
    pub h: u64,
    /// One point per auxiliary variable.
    pub l: u64,
    /// The variables that occur in A.
    pub a: u64,
    /// The variables that occur in B, over G1 ...
    pub b_g1: u64,
    /// ... and over G2.
    pub b_g2: u64,
}

impl QueryBytes {
    /// From each query's point count (`b` both B queries').
    pub fn from_counts(h: u64, l: u64, a: u64, b: u64) -> Self {
        Self {
            h: h * G1_AFFINE_BYTES,
            l: l * G1_AFFINE_BYTES,
            a: a * G1_AFFINE_BYTES,
            b_g1: b * G1_AFFINE_BYTES,
            b_g2: b * G2_AFFINE_BYTES,
        }
    }

    pub fn total(&self) -> u64 {
        self.h + self.l + self.a + self.b_g1 + self.b_g2
    }

    fn bytes(&self, q: Query) -> u64 {
        match q {
            Query::H => self.h,
            Query::L => self.l,
            Query::A => self.a,
            Query::BG1 => self.b_g1,
            Query::BG2 => self.b_g2,
        }
    }

    fn points(&self, q: Query) -> u64 {
        self.bytes(q) / q.group().point_bytes()
    }
}

/// Where a query's bases live while the prover runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BasesPlacement {
    /// Uploaded once, kept on the device.
    Resident,
    /// Kept in page-locked host memory, copied in batches by each MSM.
    Streamed,
}

/// Each query's placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryPlacement {
    pub h: BasesPlacement,
    pub l: BasesPlacement,
    pub a: BasesPlacement,
    pub b_g1: BasesPlacement,
    pub b_g2: BasesPlacement,
}

impl QueryPlacement {
    pub fn all_resident() -> Self {
        Self::all(BasesPlacement::Resident)
    }

    pub fn all_streamed() -> Self {
        Self::all(BasesPlacement::Streamed)
    }

    fn all(p: BasesPlacement) -> Self {
        Self {
            h: p,
            l: p,
            a: p,
            b_g1: p,
            b_g2: p,
        }
    }

    pub fn any_streamed(&self) -> bool {
        Query::ALL.iter().any(|&q| self.streams(q))
    }

    /// The names (`h`, `l`, `a`, `b_g1`, `b_g2`, as the fields) of the queries placed so.
    pub fn queries(&self, placement: BasesPlacement) -> Vec<&'static str> {
        Query::ALL
            .into_iter()
            .filter(|&q| self.get(q) == placement)
            .map(Query::name)
            .collect()
    }

    fn get(&self, q: Query) -> BasesPlacement {
        match q {
            Query::H => self.h,
            Query::L => self.l,
            Query::A => self.a,
            Query::BG1 => self.b_g1,
            Query::BG2 => self.b_g2,
        }
    }

    fn set(&mut self, q: Query, p: BasesPlacement) {
        match q {
            Query::H => self.h = p,
            Query::L => self.l = p,
            Query::A => self.a = p,
            Query::BG1 => self.b_g1 = p,
            Query::BG2 => self.b_g2 = p,
        }
    }

    fn streams(&self, q: Query) -> bool {
        self.get(q) == BasesPlacement::Streamed
    }
}

/// A proving-key query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Query {
    H,
    L,
    A,
    BG1,
    BG2,
}

impl Query {
    const ALL: [Self; 5] = [Self::H, Self::L, Self::A, Self::BG1, Self::BG2];

    fn name(self) -> &'static str {
        match self {
            Self::H => "h",
            Self::L => "l",
            Self::A => "a",
            Self::BG1 => "b_g1",
            Self::BG2 => "b_g2",
        }
    }

    fn group(self) -> MsmGroup {
        if self == Self::BG2 {
            MsmGroup::G2
        } else {
            MsmGroup::G1
        }
    }
}

/// The order queries are streamed in, first to last:
///
/// 1. h: its scalars are full-width field elements (the quotient's coefficients, already on
///    the device), so its MSM is bound by Pippenger's arithmetic and the copies of its
///    bases hide behind it;
/// 2. b_g2: 2x the bytes of a G1 point but ~3x the arithmetic per point, so its copies hide
///    best of the rest;
/// 3. the assignment's G1 queries, largest first (l, then a and b_g1 by size): their
///    scalars are mostly 0 and 1, so they run through the split MSM, whose batch addition
///    needs resident points and does little work per byte; streaming them costs the most.
fn streaming_order(q: &QueryBytes) -> [Query; 5] {
    let mut assignment = [Query::L, Query::A, Query::BG1];
    // Stable: l before a before b_g1 at equal sizes.
    assignment.sort_by_key(|&x| std::cmp::Reverse(q.bytes(x)));
    [
        Query::H,
        Query::BG2,
        assignment[0],
        assignment[1],
        assignment[2],
    ]
}

/// Device bytes that stay on a GPU for a placement, whatever its worker count (the CUDA
/// context aside).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PlacedBytes {
    /// Bases of the resident queries.
    pub resident_bases: u64,
    /// Temporaries of the largest resident MSM ([`GPU_MSM_BYTES_PER_POINT`] a point; h's MSM
    /// counted at the domain size, as the unstreamed plan counts it).
    pub resident_msm: u64,
    /// The streamed engines' buckets (one engine per group that streams) and the largest
    /// streamed call's buffers: one MSM runs at a time per device. 0 if nothing streams.
    pub stream_buffers: u64,
    /// Host bytes of the streamed queries' bases.
    pub streamed: u64,
}

impl PlacedBytes {
    /// What the device holds besides the context and the workers' workspaces.
    pub fn device(&self) -> u64 {
        self.resident_bases + self.resident_msm + self.stream_buffers
    }
}

/// The device bytes of `placement` for a proving key of `queries` and a circuit of `shape`.
pub fn placed_bytes(
    queries: &QueryBytes,
    shape: CircuitShape,
    placement: QueryPlacement,
) -> PlacedBytes {
    let m = domain_size(shape.constraints) as u64;
    let windows = MsmWindows::streamed();
    let mut out = PlacedBytes::default();
    let (mut msm_points, mut largest_call) = (0, 0);
    let (mut g1_engine, mut g2_engine) = (false, false);
    for q in Query::ALL {
        let (bytes, points) = (queries.bytes(q), queries.points(q));
        if placement.streams(q) {
            out.streamed += bytes;
            if points > 0 {
                match q.group() {
                    MsmGroup::G1 => g1_engine = true,
                    MsmGroup::G2 => g2_engine = true,
                }
            }
            let call = streamed_msm_call_device_bytes(q.group(), windows, points, q == Query::H);
            largest_call = largest_call.max(call);
        } else {
            out.resident_bases += bytes;
            let msm = if q == Query::H && points > 0 {
                m
            } else {
                points
            };
            msm_points = msm_points.max(msm);
        }
    }
    out.resident_msm = GPU_MSM_BYTES_PER_POINT * msm_points;
    if g1_engine || g2_engine {
        out.stream_buffers = largest_call
            + u64::from(g1_engine) * msm_engine_device_bytes(MsmGroup::G1, windows)
            + u64::from(g2_engine) * msm_engine_device_bytes(MsmGroup::G2, windows);
    }
    out
}

/// The placement for a device with `room` bytes left after the CUDA context and one
/// GPU-stage worker's workspace: every query resident if that fits, else the fewest queries
/// streamed, in [`streaming_order`], for the rest to fit; `None` if even streaming every
/// query does not.
pub fn place_queries(
    queries: &QueryBytes,
    shape: CircuitShape,
    room: u64,
) -> Option<QueryPlacement> {
    let mut placement = QueryPlacement::all_resident();
    let fits = |p| placed_bytes(queries, shape, p).device() <= room;
    if fits(placement) {
        return Some(placement);
    }
    for q in streaming_order(queries) {
        placement.set(q, BasesPlacement::Streamed);
        if fits(placement) {
            return Some(placement);
        }
    }
    None
}

#[cfg(test)]
mod tests;
