//! A capacity simulation: a proof-arrival trace replayed against a pool, static or driven by
//! the autoscaler's own [`decide`](proofpipe_operator::pool::autoscale::decide), to weigh GPU-hours against
//! time to proof before choosing a policy. Pure and deterministic; `proofpipe-simulate` is its
//! command line. A tool of its own, beside the operator: the controller binary carries
//! neither the simulator nor its plotting.
//!
//! The model: a prover proves one job at a time at a fixed number of seconds per partition
//! (measured by `proofpipe-prover bench`, or modelled); a new prover takes the node start-up
//! delay before it takes work, and costs GPU time from the moment it is asked for (a node
//! is paid for while it boots). Jobs are taken first come, first served. Each step is one
//! reconcile.

pub mod command;
pub mod plot;
pub mod trace;

use std::collections::VecDeque;

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use proofpipe_operator::pool::autoscale::{self, AutoscaleObservation, Change, Demand, Policy};
pub use trace::{Arrival, DayShape, TraceError, generate_day, parse};

/// How provers behave, and how the simulation steps.
#[derive(Clone, Copy, Debug)]
pub struct Model {
    /// Seconds one prover spends per partition in steady state.
    pub seconds_per_partition: f64,
    /// Seconds from asking for a prover to it taking work (node provisioning, image pull,
    /// parameters loading).
    pub startup_seconds: f64,
    /// Deadline of jobs whose trace line gives none, in seconds after arrival.
    pub default_deadline_seconds: f64,
    /// Seconds between two reconciles.
    pub step_seconds: f64,
}

/// The pool being simulated.
#[derive(Clone, Copy, Debug)]
pub enum PoolPolicy {
    /// A fixed number of provers, all running from the start.
    Static(u32),
    /// Scaled by the operator's autoscaler; starts at `min_replicas`, running.
    Autoscaled(Policy),
}

impl PoolPolicy {
    pub fn label(&self) -> String {
        match self {
            Self::Static(n) => format!("static {n}"),
            Self::Autoscaled(policy) => format!(
                "autoscaled {}..={} (target {}, delay {} s)",
                policy.min_replicas,
                policy.max_replicas,
                policy.target_queued_partitions_per_prover,
                policy.scale_down_delay.as_secs()
            ),
        }
    }
}

/// One point of the pool's course, for the plot.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Sample {
    pub seconds: f64,
    pub provers: u32,
    pub queued_partitions: u64,
}

/// What a policy cost and delivered on a trace.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub pool: String,
    pub jobs: usize,
    pub gpu_hours: f64,
    pub p50_seconds_to_proof: f64,
    pub p99_seconds_to_proof: f64,
    pub max_seconds_to_proof: f64,
    pub jobs_past_deadline: usize,
    pub most_provers: u32,
    /// The pool's course, one sample per minute of simulated time.
    #[serde(skip)]
    pub samples: Vec<Sample>,
}

struct Prover {
    ready_at: f64,
    /// When its current job is done.
    busy_until: Option<f64>,
}

impl Prover {
    fn is_busy(&self) -> bool {
        self.busy_until.is_some()
    }
}

/// Replays `arrivals` against `pool` until every job is proved.
pub fn simulate(arrivals: &[Arrival], model: &Model, pool: PoolPolicy) -> Outcome {
    let step = model.step_seconds.max(1e-3);
    let initial = match pool {
        PoolPolicy::Static(n) => n,
        PoolPolicy::Autoscaled(policy) => policy.min_replicas,
    };
    let mut provers: Vec<Prover> = (0..initial)
        .map(|_| Prover {
            ready_at: 0.0,
            busy_until: None,
        })
        .collect();
    let mut queue: VecDeque<&Arrival> = VecDeque::new();
    let mut next_arrival = 0;
    let mut seconds_to_proof: Vec<f64> = Vec::with_capacity(arrivals.len());
    let mut past_deadline = 0;
    // Jobs being proved: (done at, arrived at, deadline).
    let mut running: Vec<(f64, f64, f64)> = Vec::new();
    let mut gpu_seconds = 0.0;
    let mut surplus_since = None;
    let mut samples = Vec::new();
    let mut most_provers = initial;
    let mut next_sample = 0.0;
    let epoch = Timestamp::UNIX_EPOCH;

    let mut t = 0.0;
    while next_arrival < arrivals.len() || !queue.is_empty() || !running.is_empty() {
        while next_arrival < arrivals.len() && arrivals[next_arrival].at_seconds <= t {
            queue.push_back(&arrivals[next_arrival]);
            next_arrival += 1;
        }
        for prover in &mut provers {
            if prover.busy_until.is_some_and(|done| done <= t) {
                prover.busy_until = None;
            }
        }
        running.retain(|&(done, arrived, deadline)| {
            if done > t {
                return true;
            }
            let took = done - arrived;
            seconds_to_proof.push(took);
            if took > deadline {
                past_deadline += 1;
            }
            false
        });

        if let PoolPolicy::Autoscaled(policy) = pool {
            let demand = Demand {
                busy_provers: count(provers.iter().filter(|p| p.is_busy()).count()),
                queued_jobs: count(queue.len()),
                queued_partitions: queue.iter().map(|a| u64::from(a.partitions)).sum(),
            };
            let decision = autoscale::decide(&AutoscaleObservation {
                policy,
                replicas: count(provers.len()),
                demand,
                surplus_since,
                now: at(epoch, t),
            });
            surplus_since = decision.surplus_since;
            match decision.change {
                Some(Change::Up { from, to }) => {
                    provers.extend((from..to).map(|_| Prover {
                        ready_at: t + model.startup_seconds,
                        busy_until: None,
                    }));
                }
                Some(Change::Down { from, to }) => {
                    remove_provers(&mut provers, (from - to) as usize, t)
                }
                None => {}
            }
        }

        for prover in provers
            .iter_mut()
            .filter(|p| !p.is_busy() && p.ready_at <= t)
        {
            let Some(job) = queue.pop_front() else { break };
            let done = t + f64::from(job.partitions) * model.seconds_per_partition;
            prover.busy_until = Some(done);
            let deadline = job
                .deadline_seconds
                .unwrap_or(model.default_deadline_seconds);
            running.push((done, job.at_seconds, deadline));
        }

        most_provers = most_provers.max(count(provers.len()));
        gpu_seconds += provers.len() as f64 * step;
        if t >= next_sample {
            samples.push(Sample {
                seconds: t,
                provers: count(provers.len()),
                queued_partitions: queue.iter().map(|a| u64::from(a.partitions)).sum(),
            });
            next_sample += 60.0;
        }
        let ceiling = match pool {
            PoolPolicy::Static(n) => n,
            PoolPolicy::Autoscaled(policy) => policy.max_replicas,
        };
        if ceiling == 0 {
            // A pool that may never have a prover proves nothing: every job misses.
            past_deadline = arrivals.len();
            break;
        }
        t += step;
    }

    seconds_to_proof.sort_by(f64::total_cmp);
    Outcome {
        pool: pool.label(),
        jobs: arrivals.len(),
        gpu_hours: gpu_seconds / 3600.0,
        p50_seconds_to_proof: percentile(&seconds_to_proof, 0.50),
        p99_seconds_to_proof: percentile(&seconds_to_proof, 0.99),
        max_seconds_to_proof: seconds_to_proof.last().copied().unwrap_or(0.0),
        jobs_past_deadline: past_deadline,
        most_provers,
        samples,
    }
}

/// Removes `n` provers the way the operator's pod plan does: not yet ready first, then idle
/// ones; busy provers never (the autoscaler never asks for that many).
fn remove_provers(provers: &mut Vec<Prover>, n: usize, t: f64) {
    let mut left = n;
    for starting in [true, false] {
        let mut index = provers.len();
        while left > 0 && index > 0 {
            index -= 1;
            let prover = &provers[index];
            let matches = !prover.is_busy() && (prover.ready_at > t) == starting;
            if matches {
                provers.remove(index);
                left -= 1;
            }
        }
    }
}

/// The `q`-quantile of sorted `values` (nearest rank); 0 when empty.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn at(epoch: Timestamp, seconds: f64) -> Timestamp {
    let millis = epoch.as_millisecond() + (seconds * 1000.0).round() as i64;
    Timestamp::from_millisecond(millis).unwrap_or(epoch)
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MODEL: Model = Model {
        seconds_per_partition: 10.0,
        startup_seconds: 60.0,
        default_deadline_seconds: 1000.0,
        step_seconds: 1.0,
    };

    fn job(at_seconds: f64, partitions: u32) -> Arrival {
        Arrival {
            at_seconds,
            partitions,
            deadline_seconds: None,
        }
    }

    fn autoscaled(min: u32, max: u32, delay: u64) -> PoolPolicy {
        PoolPolicy::Autoscaled(Policy {
            min_replicas: min,
            max_replicas: max,
            target_queued_partitions_per_prover: 10,
            scale_down_delay: Duration::from_secs(delay),
        })
    }

    #[test]
    fn a_static_prover_proves_jobs_one_after_another() {
        // Two 10-partition jobs at once: 100 s each, the second waits for the first.
        let outcome = simulate(&[job(0.0, 10), job(0.0, 10)], &MODEL, PoolPolicy::Static(1));
        assert_eq!(outcome.jobs, 2);
        assert_eq!(outcome.p50_seconds_to_proof, 100.0);
        assert_eq!(outcome.max_seconds_to_proof, 200.0);
        assert_eq!(outcome.jobs_past_deadline, 0);
        // The loop stops at the step the last job is done: 200 s of one GPU.
        assert!(
            (outcome.gpu_hours - 201.0 / 3600.0).abs() < 1e-9,
            "{}",
            outcome.gpu_hours
        );
    }

    #[test]
    fn a_pool_without_provers_misses_every_job_and_ends() {
        let outcome = simulate(&[job(0.0, 1), job(5.0, 1)], &MODEL, PoolPolicy::Static(0));
        assert_eq!(outcome.jobs_past_deadline, 2);
        assert_eq!(outcome.gpu_hours, 0.0);
    }

    #[test]
    fn deadlines_count_jobs_that_waited_too_long() {
        let mut late = job(0.0, 10);
        late.deadline_seconds = Some(150.0);
        let outcome = simulate(&[job(0.0, 10), late], &MODEL, PoolPolicy::Static(1));
        assert_eq!(outcome.jobs_past_deadline, 1);
    }

    #[test]
    fn an_autoscaled_pool_from_zero_pays_the_startup_delay() {
        let outcome = simulate(&[job(0.0, 10), job(0.0, 10)], &MODEL, autoscaled(0, 4, 30));
        assert_eq!(outcome.most_provers, 2, "one prover per job");
        // Both start after the 60 s start-up and take 100 s.
        assert_eq!(outcome.max_seconds_to_proof, 160.0);
        assert_eq!(outcome.samples.last().map(|s| s.provers), Some(2));
        // Two provers from t=0 to t=160.
        assert!(
            (outcome.gpu_hours - 2.0 * 161.0 / 3600.0).abs() < 1e-9,
            "{}",
            outcome.gpu_hours
        );
    }

    #[test]
    fn on_a_bursty_day_autoscaling_costs_less_than_a_static_pool_of_its_maximum() {
        let day = generate_day(
            DayShape {
                jobs_per_hour: 1.0,
                bursts: 2,
                burst_jobs: 12,
                partitions: 10,
            },
            3,
        );
        let model = Model {
            step_seconds: 5.0,
            ..MODEL
        };
        let fixed = simulate(&day, &model, PoolPolicy::Static(6));
        let scaled = simulate(&day, &model, autoscaled(0, 6, 300));
        assert!(
            (3..=6).contains(&scaled.most_provers),
            "{}",
            scaled.most_provers
        );
        assert!(
            scaled.gpu_hours < fixed.gpu_hours / 3.0,
            "autoscaled {} vs static {} GPU-hours",
            scaled.gpu_hours,
            fixed.gpu_hours
        );
        // It pays in latency: the start-up delay and the smaller pool between bursts.
        assert!(scaled.p99_seconds_to_proof >= fixed.p99_seconds_to_proof);
        let small = simulate(&day, &model, PoolPolicy::Static(1));
        assert!(small.p99_seconds_to_proof > scaled.p99_seconds_to_proof);
    }

    #[test]
    fn scale_down_takes_idle_and_starting_provers_never_busy_ones() {
        let mut provers = vec![
            Prover {
                ready_at: 0.0,
                busy_until: Some(50.0),
            },
            Prover {
                ready_at: 0.0,
                busy_until: None,
            },
            Prover {
                ready_at: 99.0,
                busy_until: None,
            },
        ];
        remove_provers(&mut provers, 3, 10.0);
        assert_eq!(provers.len(), 1);
        assert!(provers[0].is_busy());
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), 50.0);
        assert_eq!(percentile(&values, 0.99), 99.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
    }
}
