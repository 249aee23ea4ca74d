//! The main lane as the urgent lane sees it (ADR 0026): what the main job's plan takes
//! ([`Footprint`]), published by the main lane ([`MainLane`]) and read by the urgent lane
//! ([`crate::urgent`]), never the other way round, and the room it leaves.

use tokio::sync::watch;

/// What the main lane's job takes, as the urgent lane plans beside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// The main plan's predicted peak of host memory.
    pub memory_bytes: u64,
    /// The main plan's predicted device memory per GPU (0 on the CPU backend).
    pub device_bytes: u64,
}

/// The main lane, as the urgent lane sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MainLane {
    #[default]
    Idle,
    /// A main job started and has no plan yet: what it will take is unknown.
    Planning,
    /// A main job's pipeline runs with this plan.
    Running(Footprint),
}

impl MainLane {
    /// Whether what the main lane takes is known: it is idle or its job has a plan.
    fn is_settled(self) -> bool {
        self != Self::Planning
    }
}

/// The host memory an urgent job may plan into beside `taken` under `limit`.
pub fn room_beside(limit: u64, taken: Footprint) -> u64 {
    limit.saturating_sub(taken.memory_bytes)
}

/// Waits until the main lane has a plan or is idle: the main job's footprint, or `None` when
/// the lane is idle (the urgent job is alone).
pub async fn until_planned(lane: &mut watch::Receiver<MainLane>) -> Option<Footprint> {
    match lane.wait_for(|state| state.is_settled()).await {
        Ok(state) => match *state {
            MainLane::Running(footprint) => Some(footprint),
            MainLane::Idle | MainLane::Planning => None,
        },
        // The daemon is going away: plan as if alone, the process ends anyway.
        Err(_) => None,
    }
}

/// Waits until the main lane is idle: its job ended and its pipeline stopped.
pub async fn until_idle(lane: &mut watch::Receiver<MainLane>) {
    let _ = lane.wait_for(|state| *state == MainLane::Idle).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_urgent_lane_plans_into_what_the_main_plan_leaves() {
        let gib = 1u64 << 30;
        let main = Footprint {
            memory_bytes: 100 * gib,
            device_bytes: 60 * gib,
        };
        assert_eq!(room_beside(128 * gib, main), 28 * gib);
        assert_eq!(room_beside(64 * gib, main), 0, "never below zero");
        assert!(MainLane::Running(main).is_settled() && MainLane::Idle.is_settled());
        assert!(!MainLane::Planning.is_settled(), "unknown until planned");
    }

    #[tokio::test]
    async fn the_urgent_lane_waits_while_the_main_job_plans() {
        let (main, mut lane) = watch::channel(MainLane::Planning);
        let waiter = tokio::spawn(async move { until_planned(&mut lane).await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        let footprint = Footprint {
            memory_bytes: 5,
            device_bytes: 1,
        };
        main.send_replace(MainLane::Running(footprint));
        assert_eq!(waiter.await.unwrap(), Some(footprint));
    }

    #[tokio::test]
    async fn an_idle_main_lane_leaves_the_urgent_job_alone_even_with_a_zero_plan() {
        let (main, mut lane) = watch::channel(MainLane::Running(Footprint::default()));
        assert_eq!(
            until_planned(&mut lane).await,
            Some(Footprint::default()),
            "a running main job, however small, is beside the urgent one"
        );
        main.send_replace(MainLane::Idle);
        assert_eq!(until_planned(&mut lane).await, None);
    }
}
