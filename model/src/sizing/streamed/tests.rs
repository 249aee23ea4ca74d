use super::super::{
    GPU_CONTEXT_BYTES, GpuPlan, Overrides, SizingError, SizingInput, partition_shape, plan,
    quotient_workspace_bytes, resident_device_bytes,
};
use super::*;

use BasesPlacement::{Resident as R, Streamed as S};

const GIB: u64 = 1 << 30;

/// A registered proof's partition and its queries, from the prover's committed counts
/// (`filecoin/src/shape.rs` and `post/shape.rs`): h = m - 1, l = aux,
/// a = inputs + a_aux_density, b = b_input_density + b_aux_density.
fn counted(proof: &str, a_aux_density: u64, b_density: u64) -> (CircuitShape, QueryBytes) {
    let row = partition_shape(proof).unwrap();
    let shape = row.shape;
    let m = domain_size(shape.constraints) as u64;
    let queries = QueryBytes::from_counts(
        m - 1,
        shape.aux as u64,
        shape.inputs as u64 + a_aux_density,
        b_density,
    );
    // The same counts the model's table holds the proving key's bytes to.
    assert_eq!(queries.total(), row.params_bytes, "{proof}");
    (shape, queries)
}

fn porep_32gib() -> (CircuitShape, QueryBytes) {
    counted("StackedDrg32GiBV1_1", 129_753_292, 1 + 33_112_281)
}

fn window_32gib() -> (CircuitShape, QueryBytes) {
    counted("StackedDrgWindow32GiBV1_2", 96_179_805, 1 + 91_925_766)
}

fn winning_32gib() -> (CircuitShape, QueryBytes) {
    counted("StackedDrgWinning32GiBV1", 284_196, 1 + 272_184)
}

/// One GPU of `gpu_memory` bytes on a 256 GiB, 16-core host.
fn input(shape: CircuitShape, queries: Option<QueryBytes>, gpu_memory: u64) -> SizingInput {
    SizingInput {
        circuit: "test".into(),
        shape,
        memory_limit: 256 * GIB,
        params_bytes: queries.map_or_else(
            || super::super::estimated_params_bytes(shape),
            |q| q.total(),
        ),
        query_bytes: queries,
        matrices_bytes: 0,
        headroom: 0.1,
        cpu_cores: 16,
        synthesis_threads: 1,
        evaluations_held_twice: false,
        gpu_devices: 1,
        gpu_memory_bytes: Some(gpu_memory),
        max_parallel_partitions: None,
        overrides: Overrides::default(),
    }
}

fn gpu_plan(shape: CircuitShape, queries: QueryBytes, gpu_memory: u64) -> GpuPlan {
    plan(&input(shape, Some(queries), gpu_memory))
        .unwrap()
        .gpu
        .unwrap()
}

fn placement(
    h: BasesPlacement,
    l: BasesPlacement,
    a: BasesPlacement,
    b_g1: BasesPlacement,
    b_g2: BasesPlacement,
) -> QueryPlacement {
    QueryPlacement {
        h,
        l,
        a,
        b_g1,
        b_g2,
    }
}

/// The streamed queries are a prefix of [`streaming_order`].
fn streams_a_prefix_of_the_order(queries: &QueryBytes, p: QueryPlacement) -> bool {
    let flags = streaming_order(queries).map(|q| p.streams(q));
    flags.windows(2).all(|w| w[0] || !w[1])
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB as f64
}

#[test]
fn the_streamed_engine_and_its_batches_are_sppark_s() {
    let w = MsmWindows::streamed();
    assert_eq!((w.wbits, w.nwins), (16, 16));
    // An engine built for all of a 2^27 query would take sppark's widest window.
    assert_eq!(MsmWindows::for_engine_points(1 << 27).wbits, 18);
    assert_eq!(MsmWindows::for_engine_points(100).wbits, 10);
    // h of a 2^27 domain: 32 batches of 2^22 points.
    assert_eq!(streamed_msm_batches(w, (1 << 27) - 1), (32, 1 << 22));
    // A small MSM is one batch: a single points buffer.
    assert_eq!(streamed_msm_batches(w, 1000), (1, 1024));
    assert_eq!(
        streamed_msm_call_device_bytes(MsmGroup::G1, w, 1000, false),
        1024 * (32 + 16 * 4 + 96)
    );
    // h's call: two 2^22-point buffers, digits, the 16 B sort temporary (scalars on device).
    let stride = 1u64 << 22;
    assert_eq!(
        streamed_msm_call_device_bytes(MsmGroup::G1, w, (1 << 27) - 1, true),
        stride * (16 + 16 * 4 + 2 * 96)
    );
    // Buckets: 16 windows of 2^15, plus 8 per SM; and their histogram.
    let buckets = 16 * (1 << 15) + MSM_SM_COUNT * 8;
    assert_eq!(
        msm_engine_device_bytes(MsmGroup::G2, w),
        buckets * 384 + 16 * (1 << 15) * 4
    );
    assert_eq!(
        streamed_msm_device_bytes(MsmGroup::G1, (1 << 27) - 1, true),
        msm_engine_device_bytes(MsmGroup::G1, w) + stride * (16 + 16 * 4 + 2 * 96)
    );
    assert_eq!(streamed_msm_call_device_bytes(MsmGroup::G1, w, 0, false), 0);
}

#[test]
fn streaming_order_is_h_then_g2_then_the_assignment_largest_first() {
    let (_, porep) = porep_32gib();
    use Query::*;
    assert_eq!(streaming_order(&porep), [H, BG2, L, A, BG1]);
    let odd = QueryBytes {
        h: 10,
        l: 1,
        a: 3,
        b_g1: 2,
        b_g2: 0,
    };
    assert_eq!(streaming_order(&odd), [H, BG2, A, BG1, L]);
}

#[test]
fn a_32gib_porep_streams_what_each_card_cannot_hold() {
    let (shape, q) = porep_32gib();
    assert_eq!(quotient_workspace_bytes(shape, 3), 12 * GIB);
    assert_eq!(quotient_workspace_bytes(shape, 2), 8 * GIB);
    assert_eq!(
        quotient_workspace_bytes(shape, 1),
        4 * GIB + 128 * (1 << 20)
    );
    // (cap, placement, workers per device, quotient buffers, predicted GiB to 0.01)
    let expected = [
        (8, placement(S, S, S, S, S), 1, 1, 7.26),
        (10, placement(S, S, S, S, S), 1, 1, 7.26),
        (12, placement(S, S, S, S, S), 1, 2, 11.14),
        (16, placement(S, S, S, S, S), 1, 3, 15.14),
        (24, placement(S, S, S, R, S), 1, 3, 20.07),
        (48, placement(S, S, R, R, S), 1, 3, 37.43),
        (64, placement(S, R, R, R, R), 1, 3, 54.04),
        (80, QueryPlacement::all_resident(), 2, 3, 77.12),
        (141, QueryPlacement::all_resident(), 2, 3, 77.12),
    ];
    for (cap, placement, workers, buffers, predicted) in expected {
        let g = gpu_plan(shape, q, cap * GIB);
        println!(
            "PoRep 32 GiB at {cap} GiB: {placement:?}, {workers} workers, {:.2} GiB \
             (resident {:.2}, stream buffers {:.2}, streamed {:.2})",
            gib(g.predicted_device_bytes),
            gib(g.resident_bytes),
            gib(g.stream_buffer_bytes),
            gib(g.streamed_bytes)
        );
        assert_eq!(g.placement, placement, "at {cap} GiB");
        assert_eq!(g.workers_per_device, workers, "at {cap} GiB");
        assert_eq!(g.quotient_buffers, buffers, "at {cap} GiB");
        assert!(
            (gib(g.predicted_device_bytes) - predicted).abs() < 0.01,
            "at {cap} GiB: {g:?}"
        );
        assert!(g.predicted_device_bytes <= g.device_memory_bytes);
        assert_eq!(
            g.predicted_device_bytes,
            g.resident_bytes + workers as u64 * g.per_worker_bytes
        );
        assert_eq!(g.per_worker_bytes, quotient_workspace_bytes(shape, buffers));
        let placed = placed_bytes(&q, shape, placement);
        assert_eq!(g.streamed_bytes, placed.streamed);
        assert_eq!(g.resident_bytes, GPU_CONTEXT_BYTES + placed.device());
        assert_eq!(g.stream_buffer_bytes == 0, !placement.any_streamed());
    }
    // Everything resident is today's plan: 53.1 GiB resident.
    let all = gpu_plan(shape, q, 141 * GIB);
    assert_eq!(all.resident_bytes, resident_device_bytes(shape, q.total()));
    assert_eq!((all.streamed_bytes, all.stream_buffer_bytes), (0, 0));
    // Streaming every query leaves the context and ~2.1 GiB of MSM buffers (the G2 call's
    // the largest).
    let streamed = gpu_plan(shape, q, 16 * GIB);
    assert_eq!(streamed.streamed_bytes, q.total());
    assert!((2 * GIB..3 * GIB).contains(&streamed.stream_buffer_bytes));
}

#[test]
fn every_plan_fits_its_card_and_streams_in_order() {
    for (name, (shape, q)) in [
        ("PoRep", porep_32gib()),
        ("WindowPoSt", window_32gib()),
        ("WinningPoSt", winning_32gib()),
    ] {
        let mut last: Option<QueryPlacement> = None;
        // 1 to 160 GiB in 1/4 GiB steps.
        for quarter in 4..=640u64 {
            let cap = quarter * GIB / 4;
            let Ok(p) = plan(&input(shape, Some(q), cap)) else {
                assert!(
                    last.is_none(),
                    "{name}: refused at {cap} after a plan below it"
                );
                continue;
            };
            let g = p.gpu.unwrap();
            assert!(g.predicted_device_bytes <= cap, "{name} at {cap}: {g:?}");
            assert!(
                streams_a_prefix_of_the_order(&q, g.placement),
                "{name} at {cap}: {:?}",
                g.placement
            );
            // h streams before anything else.
            if g.placement.any_streamed() {
                assert_eq!(g.placement.h, S, "{name} at {cap}");
            }
            // More memory never streams more.
            if let Some(last) = last {
                for query in Query::ALL {
                    assert!(
                        !g.placement.streams(query) || last.streams(query),
                        "{name} at {cap}: {:?} after {last:?}",
                        g.placement
                    );
                }
            }
            last = Some(g.placement);
        }
        assert_eq!(last, Some(QueryPlacement::all_resident()), "{name}");
    }
}

#[test]
fn window_and_winning_post_at_32gib() {
    let (shape, q) = window_32gib();
    // 77.6 GiB all resident with one worker (docs/operating.md): an 80 GiB card holds it.
    let g = gpu_plan(shape, q, 80 * GIB);
    assert_eq!(
        (g.placement, g.workers_per_device),
        (QueryPlacement::all_resident(), 1)
    );
    assert!(
        (gib(g.predicted_device_bytes) - 77.60).abs() < 0.01,
        "{g:?}"
    );
    // Its 16.4 GiB G2 query streams right after h.
    let g = gpu_plan(shape, q, 64 * GIB);
    assert_eq!(g.placement, placement(S, R, R, R, S));
    let g = gpu_plan(shape, q, 48 * GIB);
    assert_eq!(g.placement, placement(S, S, R, R, S));
    let g = gpu_plan(shape, q, 24 * GIB);
    assert_eq!(g.placement, QueryPlacement::all_streamed());
    assert!(g.predicted_device_bytes <= 16 * GIB);
    let g = gpu_plan(shape, q, 141 * GIB);
    assert_eq!(
        (g.placement, g.workers_per_device),
        (QueryPlacement::all_resident(), 2)
    );

    // WinningPoSt: 1.3 GiB, resident on any card.
    let (shape, q) = winning_32gib();
    for cap in [2, 16, 141] {
        let g = gpu_plan(shape, q, cap * GIB);
        assert_eq!(
            (g.placement, g.workers_per_device),
            (QueryPlacement::all_resident(), 2)
        );
        assert!(gib(g.predicted_device_bytes) < 1.4, "{g:?}");
    }
}

#[test]
fn a_card_too_small_for_the_workspace_names_it() {
    let (shape, q) = porep_32gib();
    // The context, a one-buffer workspace (4.1 GiB) and 2.1 GiB of stream buffers: 7.3 GiB.
    let err = plan(&input(shape, Some(q), 7 * GIB)).unwrap_err();
    let SizingError::GpuMemoryTooSmall {
        resident,
        per_worker,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    let one_buffer = quotient_workspace_bytes(shape, 1);
    assert_eq!(per_worker.as_u64(), one_buffer);
    let all = placed_bytes(&q, shape, QueryPlacement::all_streamed());
    assert_eq!(resident.as_u64(), GPU_CONTEXT_BYTES + all.device());
    let message = err.to_string();
    assert!(
        message.contains("quotient workspace alone needs 4.1 GiB (with a single buffer"),
        "{message}"
    );
    // Fits just above that.
    let least = GPU_CONTEXT_BYTES + all.device() + one_buffer;
    assert!(plan(&input(shape, Some(q), least)).is_ok());
    assert!(plan(&input(shape, Some(q), least - 1)).is_err());
}

/// Today's GPU plan, all bases resident, as it was before queries could stream.
fn todays_gpu_plan(
    shape: CircuitShape,
    params: u64,
    memory: u64,
    k: usize,
    buffers: u32,
) -> GpuPlan {
    let resident = resident_device_bytes(shape, params);
    let per_worker = quotient_workspace_bytes(shape, buffers);
    GpuPlan {
        devices: 1,
        workers_per_device: k,
        device_memory_bytes: memory,
        placement: QueryPlacement::all_resident(),
        streamed_bytes: 0,
        stream_buffer_bytes: 0,
        resident_bytes: resident,
        quotient_buffers: buffers,
        per_worker_bytes: per_worker,
        predicted_device_bytes: resident + k as u64 * per_worker,
    }
}

#[test]
fn without_query_sizes_every_base_stays_resident_as_before() {
    for (shape, q) in [porep_32gib(), window_32gib(), winning_32gib()] {
        for cap in [2, 16, 24, 48, 64, 66, 78, 80, 141] {
            let memory = cap * GIB;
            let without = plan(&input(shape, None, memory));
            let params = super::super::estimated_params_bytes(shape);
            let resident = resident_device_bytes(shape, params);
            let per_worker = quotient_workspace_bytes(shape, 3);
            match without {
                Ok(p) => {
                    let g = p.gpu.clone().unwrap();
                    // The most quotient buffers that fit one worker.
                    let b = g.quotient_buffers;
                    let worker = quotient_workspace_bytes(shape, b);
                    assert!(resident + worker <= memory);
                    assert!(b == 3 || resident + quotient_workspace_bytes(shape, b + 1) > memory);
                    // As many workers as fit (plan() may take one fewer to keep a partition
                    // synthesizing).
                    let k = g.workers_per_device;
                    assert!(k == 1 || resident + 2 * worker <= memory);
                    assert_eq!(g, todays_gpu_plan(shape, params, memory, k, b));
                }
                Err(SizingError::GpuMemoryTooSmall {
                    resident: r,
                    per_worker: w,
                    ..
                }) => {
                    let least = quotient_workspace_bytes(shape, 1);
                    assert!(resident + least > memory);
                    assert_eq!((r.as_u64(), w.as_u64()), (resident, least));
                }
                Err(e) => panic!("{e}"),
            }
            // With the query sizes and room for them all, the same device plan.
            let with = plan(&input(shape, Some(q), memory));
            if resident_device_bytes(shape, q.total()) + per_worker <= memory {
                let with = with.unwrap();
                let mut i = input(shape, None, memory);
                i.params_bytes = q.total();
                assert_eq!(with, plan(&i).unwrap());
            }
        }
    }
}

#[test]
fn queries_are_named_by_placement_in_field_order() {
    let mut p = QueryPlacement::all_resident();
    p.h = BasesPlacement::Streamed;
    p.b_g2 = BasesPlacement::Streamed;
    assert_eq!(p.queries(BasesPlacement::Streamed), ["h", "b_g2"]);
    assert_eq!(p.queries(BasesPlacement::Resident), ["l", "a", "b_g1"]);
}

/// A 32 GiB WindowPoSt sent to a prover busy with a 32 GiB PoRep, planned as the daemon's
/// urgent lane plans it (ADR 0026): the PoRep's plan holds both sets' parameters; the PoSt's
/// pipeline gets what that plan leaves of the host and of the card.
#[test]
fn a_32gib_window_post_beside_a_32gib_porep_needs_a_larger_host_and_room_on_the_card() {
    let (porep, pq) = porep_32gib();
    let (window, wq) = window_32gib();
    // What `bench --porep-shape 32GiB --synthesis matrices` predicts for its matrices.
    const MATRICES_32GIB: u64 = 13_238_467_926;
    let porep_with_window_key = |limit: u64, card: u64| SizingInput {
        memory_limit: limit,
        params_bytes: pq.total() + wq.total(),
        matrices_bytes: MATRICES_32GIB,
        synthesis_threads: 16,
        ..input(porep, Some(pq), card)
    };
    let window_beside = |porep_plan: &super::super::Plan, limit: u64, card: u64| {
        let taken = porep_plan.gpu.as_ref().unwrap().predicted_device_bytes;
        plan(&SizingInput {
            memory_limit: limit - porep_plan.predicted_peak_bytes,
            // Its key is held already, within the PoRep's plan.
            params_bytes: 0,
            ..input(window, Some(wq), card - taken)
        })
    };

    // The lent host (128 GiB): the two keys (44 + 57 GiB) do not fit beside the PoRep's
    // pipeline, so the WindowPoSt waits for the PoRep to end and loads its key in its place.
    let refused = plan(&porep_with_window_key(128 * GIB, 80 * GIB));
    assert!(
        matches!(refused, Err(SizingError::MemoryLimitTooSmall { .. })),
        "{refused:?}"
    );

    // 256 GiB holds both keys, but the PoRep's plan takes the 80 GiB card (every base
    // resident, two workers): 2.9 GiB are left, not the 12 GiB workspace of one worker.
    let porep_plan = plan(&porep_with_window_key(256 * GIB, 80 * GIB)).unwrap();
    let g = porep_plan.gpu.as_ref().unwrap();
    assert_eq!(
        (g.placement, g.workers_per_device),
        (QueryPlacement::all_resident(), 2)
    );
    let waits = window_beside(&porep_plan, 256 * GIB, 80 * GIB);
    assert!(
        matches!(waits, Err(SizingError::GpuMemoryTooSmall { .. })),
        "{waits:?}"
    );

    // Planned for a card 16 GiB smaller (as a GPU memory cap holds it), the PoRep streams h
    // and keeps one worker, and the WindowPoSt fits in the 16 GiB left, every base streamed.
    let porep_plan = plan(&porep_with_window_key(256 * GIB, 64 * GIB)).unwrap();
    let g = porep_plan.gpu.as_ref().unwrap();
    assert!(g.placement.h == S && g.workers_per_device == 1, "{g:?}");
    let w = window_beside(&porep_plan, 256 * GIB, 80 * GIB).unwrap();
    assert_eq!(
        w.gpu.as_ref().unwrap().placement,
        QueryPlacement::all_streamed()
    );
}

#[test]
fn streaming_every_base_can_be_asked_for_on_any_card() {
    let (shape, q) = winning_32gib();
    let mut i = input(shape, Some(q), 80 * GIB);
    i.overrides.stream_bases = true;
    let g = plan(&i).unwrap().gpu.unwrap();
    assert_eq!(g.placement, QueryPlacement::all_streamed());
    assert_eq!(g.streamed_bytes, q.total());
    assert!(g.stream_buffer_bytes > 0, "{g:?}");
    // Without the override the same card keeps every base.
    i.overrides.stream_bases = false;
    let g = plan(&i).unwrap().gpu.unwrap();
    assert_eq!(g.placement, QueryPlacement::all_resident());
}

#[test]
fn every_32gib_kind_plans_on_a_12gib_card_with_fewer_quotient_buffers() {
    for (name, (shape, q)) in [
        ("PoRep", porep_32gib()),
        ("WindowPoSt", window_32gib()),
        ("WinningPoSt", winning_32gib()),
    ] {
        for (cap, most_buffers) in [(12, 2), (10, 1)] {
            let g = gpu_plan(shape, q, cap * GIB);
            assert!(
                g.predicted_device_bytes <= cap * GIB,
                "{name} at {cap} GiB: {g:?}"
            );
            // WinningPoSt's domain is small enough for three anywhere.
            let large = domain_size(shape.constraints) >= 1 << 26;
            assert_eq!(
                g.quotient_buffers,
                if large { most_buffers } else { 3 },
                "{name} at {cap} GiB"
            );
        }
    }
}
