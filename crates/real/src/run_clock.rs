//! The run clock: the one place a real run reads real time.
//!
//! Terminology:
//! - *run clock*: real time since the run started, in whole milliseconds (see the crate
//!   docs). The workspace forbids wall clocks because a simulation must not read one; a real
//!   run is judged in real time on purpose, and reads it only here.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use leasesim_events::EPOCH_MS;

/// Real time since the run started.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    started: Instant,
}

impl RunClock {
    pub fn start() -> RunClock {
        RunClock {
            started: Instant::now(),
        }
    }

    /// Whole milliseconds since the run started (an event's `at_ms`).
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The clocks' reading now: [`EPOCH_MS`] plus the elapsed time.
    pub fn now_ms(&self) -> u64 {
        EPOCH_MS + self.elapsed_ms()
    }

    /// The instant `at_ms` after the start.
    pub fn instant(&self, at_ms: u64) -> Instant {
        self.started + Duration::from_millis(at_ms)
    }

    /// Sleeps until `at_ms` after the start (never wakes earlier).
    pub async fn sleep_until(&self, at_ms: u64) {
        tokio::time::sleep_until(self.instant(at_ms).into()).await;
    }
}
