//! Synthesis of the real Filecoin PoRep partition (filecoin-proofs 19.1's `StackedCircuit`,
//! built from placeholder vanilla proofs of the sector size's exact shape: no sector, no
//! parameters) in one pass against two (the witness, then a, b, c from the R1CS matrices
//! recorded once per sector size), one partition on one thread as a pipeline worker runs it.
//!
//! Reports per case: both times and their ratio (> 1: the matrices are faster), the one-off
//! recording, the matrices' size, and the counting pass (`shape::count`: every witness value
//! computed, nothing kept). A case `32GiB:1` is a slice of the 32 GiB partition with 1 of its
//! 18 challenges (the partition's constraints are 18 such slices plus a few hundred), so its
//! times scale to the whole partition without holding its 17 GB here. The two syntheses are
//! checked equal.
//!
//! Times are wall seconds and, since a shared machine stretches wall time, the thread's own
//! seconds on a CPU. `PROOFPIPE_BENCH_PARAMS=1` also times the timing-only parameters of each
//! case's counts (what `bench --porep-shape` makes first), on all cores.
//!
//! `cargo bench -p proofpipe-benches --bench porep_synthesis`; choose cases with
//! `PROOFPIPE_BENCH="2KiB,512MiB,32GiB:1,32GiB:2"` (sector size[:challenges per partition]).

use std::time::Instant;

use proofpipe_filecoin::shape::{self, PartitionShape, Placeholder};
use proofpipe_filecoin::{parse_seal_proof, seal_proof_name};
use proofpipe_kernels::EvalAlloc;
use proofpipe_pipeline::groth16::SynthesisMode;
use proofpipe_pipeline::params::ProvingKey;

/// Wall time and this thread's time on a CPU (Linux's schedstat; the wall time if unreadable),
/// so a machine shared with other work still gives the work's own cost.
#[derive(Clone, Copy)]
struct Took {
    wall: f64,
    cpu: f64,
}

fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(nanos as f64 / 1e9)
}

/// This process's CPU seconds, all threads (user + system, from /proc/self/stat).
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name's closing parenthesis; utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Took) {
    let (start, cpu_start) = (Instant::now(), thread_cpu_seconds());
    let value = f();
    let wall = start.elapsed().as_secs_f64();
    let cpu = match (cpu_start, thread_cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => wall,
    };
    (value, Took { wall, cpu })
}

fn main() {
    let spec = std::env::var("PROOFPIPE_BENCH").unwrap_or_else(|_| "2KiB,512MiB,32GiB:1".into());
    for case in spec.split(',') {
        let (size, challenges) = match case.split_once(':') {
            Some((size, n)) => (
                size,
                Some(n.parse::<usize>().expect("challenges is a number")),
            ),
            None => (case, None),
        };
        let proof = parse_seal_proof(size).unwrap_or_else(|e| panic!("{e}"));
        let whole = PartitionShape::of(proof).expect("an interactive PoRep");
        let placeholder = Placeholder {
            challenges_per_partition: challenges,
            ..Placeholder::of(proof)
        };
        let (counts, count_time) = timed(|| shape::count(placeholder).expect("counting"));
        let shape = counts.shape();

        let one_pass = shape::placeholder_job(placeholder, SynthesisMode::OnePass).unwrap();
        let (direct, direct_time) = timed(|| {
            one_pass
                .source
                .synthesize(0, shape, &EvalAlloc::heap())
                .unwrap()
        });
        let (two_pass, record_time) =
            timed(|| shape::placeholder_job(placeholder, SynthesisMode::Matrices).unwrap());
        let (split, split_time) = timed(|| {
            two_pass
                .source
                .synthesize(0, shape, &EvalAlloc::heap())
                .unwrap()
        });
        assert!(
            split.a == direct.a && split.b == direct.b && split.c == direct.c,
            "the two syntheses must agree"
        );
        drop((direct, split));
        let matrices = two_pass.matrices.as_ref().expect("recorded");
        let used = challenges.unwrap_or(whole.challenges_per_partition);
        let scale = whole.challenges_per_partition as f64 / used as f64;
        if std::env::var_os("PROOFPIPE_BENCH_PARAMS").is_some() {
            // What `bench --porep-shape` makes before its pipeline starts, on every core.
            let (cpu_start, start) = (process_cpu_seconds(), Instant::now());
            let key = ProvingKey::timing_only("bench", shape, counts.query_counts());
            let wall = start.elapsed().as_secs_f64();
            let cpu = process_cpu_seconds()
                .zip(cpu_start)
                .map_or(wall, |(b, a)| b - a);
            let q = counts.query_counts();
            let g1 = q.h + q.l + q.a + q.b;
            println!(
                "{} timing-only parameters: {wall:.1} s wall, {cpu:.1} s on CPU (all threads) for {g1} G1 + {} G2 points, {:.2} GiB ({:.2} us per G1-equivalent point on CPU, G2 as 3)",
                seal_proof_name(proof),
                q.b,
                key.heap_bytes() as f64 / f64::from(1 << 30),
                cpu * 1e6 / (g1 + 3 * q.b) as f64,
            );
        }
        let t = |took: Took| format!("{:.2} s ({:.2} s on CPU)", took.wall, took.cpu);
        println!(
            "{} {}/{} challenges, {} constraints (2^{:.1}): one pass {} | matrices {} | one pass / matrices = {:.2} (on CPU {:.2}) | counted in {} | recorded once in {}: {} nonzeros ({:.1} per constraint), {:.0} MiB ({:.1} B per nonzero){}",
            seal_proof_name(proof),
            used,
            whole.challenges_per_partition,
            shape.constraints,
            (shape.constraints as f64).log2(),
            t(direct_time),
            t(split_time),
            direct_time.wall / split_time.wall,
            direct_time.cpu / split_time.cpu,
            t(count_time),
            t(record_time),
            matrices.nonzeros(),
            matrices.nonzeros() as f64 / shape.constraints as f64,
            matrices.heap_bytes() as f64 / f64::from(1 << 20),
            matrices.heap_bytes() as f64 / matrices.nonzeros() as f64,
            if challenges.is_some() {
                format!(
                    " | whole partition (x{scale:.0}): one pass ~{:.0} s, matrices ~{:.0} s on CPU",
                    direct_time.cpu * scale,
                    split_time.cpu * scale
                )
            } else {
                String::new()
            },
        );
    }
}
