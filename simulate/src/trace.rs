//! Proof-arrival traces: read from a file, or generated for a day with bursts.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// One ProofJob arriving in the queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    /// Seconds from the start of the trace.
    pub at_seconds: f64,
    pub partitions: u32,
    /// Seconds after arrival by which the proof must be done; `None` takes the run's default.
    pub deadline_seconds: Option<f64>,
}

/// A line of a trace file that could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error(
    "line {line}: {reason} (expected `arrival_seconds,partitions[,deadline_seconds]`, e.g. `3600,10,1800`)"
)]
pub struct TraceError {
    pub line: usize,
    pub reason: String,
}

/// Parses a trace: one job per line, `arrival_seconds,partitions[,deadline_seconds]`; blank
/// lines and lines starting with `#` are skipped. Arrivals are sorted by time.
pub fn parse(text: &str) -> Result<Vec<Arrival>, TraceError> {
    let mut arrivals = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = raw.trim();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let fail = |reason: String| TraceError { line, reason };
        let fields: Vec<&str> = content.split(',').map(str::trim).collect();
        if !(2..=3).contains(&fields.len()) {
            return Err(fail(format!("{} fields", fields.len())));
        }
        let at_seconds: f64 = fields[0]
            .parse()
            .map_err(|_| fail(format!("arrival {:?} is not a number", fields[0])))?;
        if !at_seconds.is_finite() || at_seconds < 0.0 {
            return Err(fail(format!("arrival {at_seconds} is negative")));
        }
        let partitions: u32 = fields[1].parse().ok().filter(|&n| n > 0).ok_or_else(|| {
            fail(format!(
                "partitions {:?} is not a positive integer",
                fields[1]
            ))
        })?;
        let deadline_seconds = match fields.get(2) {
            None => None,
            Some(text) => Some(
                text.parse::<f64>()
                    .ok()
                    .filter(|d| d.is_finite() && *d > 0.0)
                    .ok_or_else(|| fail(format!("deadline {text:?} is not a positive number")))?,
            ),
        };
        arrivals.push(Arrival {
            at_seconds,
            partitions,
            deadline_seconds,
        });
    }
    arrivals.sort_by(|a, b| a.at_seconds.total_cmp(&b.at_seconds));
    Ok(arrivals)
}

/// The shape of a generated day.
#[derive(Clone, Copy, Debug)]
pub struct DayShape {
    /// Jobs per hour outside bursts.
    pub jobs_per_hour: f64,
    /// Bursts in the day, each of `burst_jobs` jobs arriving within ten minutes.
    pub bursts: u32,
    pub burst_jobs: u32,
    /// Partitions per job (a 32 GiB Filecoin PoRep proof has 10).
    pub partitions: u32,
}

impl Default for DayShape {
    fn default() -> Self {
        Self {
            jobs_per_hour: 6.0,
            bursts: 3,
            burst_jobs: 30,
            partitions: 10,
        }
    }
}

/// A day of arrivals: a Poisson stream at `jobs_per_hour`, plus `bursts` bursts at random
/// times. The same seed gives the same day.
pub fn generate_day(shape: DayShape, seed: u64) -> Vec<Arrival> {
    const DAY: f64 = 86_400.0;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut uniform = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let job = |at_seconds| Arrival {
        at_seconds,
        partitions: shape.partitions,
        deadline_seconds: None,
    };
    let mut arrivals = Vec::new();
    if shape.jobs_per_hour > 0.0 {
        let mean_gap = 3600.0 / shape.jobs_per_hour;
        let mut t = 0.0;
        loop {
            // Exponential gaps: 1 - u is in (0, 1], so the log is finite.
            t += -mean_gap * (1.0 - uniform()).ln();
            if t >= DAY {
                break;
            }
            arrivals.push(job(t));
        }
    }
    for _ in 0..shape.bursts {
        let start = uniform() * (DAY - 600.0);
        for _ in 0..shape.burst_jobs {
            arrivals.push(job(start + uniform() * 600.0));
        }
    }
    arrivals.sort_by(|a, b| a.at_seconds.total_cmp(&b.at_seconds));
    arrivals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_jobs_skipping_comments_and_sorting() {
        let trace = parse("# at,partitions,deadline\n\n60,10\n0, 4, 900\n").unwrap();
        assert_eq!(
            trace,
            [
                Arrival {
                    at_seconds: 0.0,
                    partitions: 4,
                    deadline_seconds: Some(900.0)
                },
                Arrival {
                    at_seconds: 60.0,
                    partitions: 10,
                    deadline_seconds: None
                },
            ]
        );
    }

    #[test]
    fn a_bad_line_is_named_with_what_is_wrong() {
        let err = parse("0,10\n5,zero\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(
            err.to_string()
                .contains("partitions \"zero\" is not a positive integer"),
            "{err}"
        );
        assert_eq!(parse("1,2,3,4").unwrap_err().reason, "4 fields");
        assert!(parse("-1,2").unwrap_err().reason.contains("negative"));
        assert!(parse("1,0").is_err());
        assert!(parse("1,2,-5").is_err());
    }

    #[test]
    fn a_generated_day_is_reproducible_and_has_its_bursts() {
        let shape = DayShape {
            jobs_per_hour: 2.0,
            bursts: 2,
            burst_jobs: 25,
            partitions: 10,
        };
        let day = generate_day(shape, 7);
        assert_eq!(day, generate_day(shape, 7));
        assert_ne!(day, generate_day(shape, 8));
        assert!(day.windows(2).all(|w| w[0].at_seconds <= w[1].at_seconds));
        assert!(day.iter().all(|a| (0.0..86_400.0).contains(&a.at_seconds)));
        // 50 burst jobs plus ~48 background ones.
        assert!((70..=130).contains(&day.len()), "{} jobs", day.len());
        // Some ten-minute window holds a whole burst.
        let densest = day
            .iter()
            .map(|a| {
                day.iter()
                    .filter(|b| (a.at_seconds..a.at_seconds + 600.0).contains(&b.at_seconds))
                    .count()
            })
            .max()
            .unwrap();
        assert!(densest >= 25, "densest ten minutes: {densest} jobs");
    }
}
