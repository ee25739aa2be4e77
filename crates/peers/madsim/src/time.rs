//! madsim's virtual clock as the peers' [`PeerTime`].
//!
//! Terminology:
//! - *run start*: the instant madsim's runtime was created; `TimeHandle::elapsed` counts from
//!   it, on every node alike, so the store and the workers stamp events on one clock.
//! - *virtual ms*: whole milliseconds since the run start, rounded down (madsim draws
//!   latencies in nanoseconds; the recorder and the store's lifetimes count whole ms).
//! - *timer*: `madsim::time::sleep`. Like tokio's, it sleeps at least 1 ms, even when asked
//!   for 0.

use std::time::Duration;

use madsim::time::TimeHandle;
use peers_common::ports::PeerTime;

/// The run's clock (see the module docs).
#[derive(Clone)]
pub struct MadsimTime {
    pub handle: TimeHandle,
}

impl MadsimTime {
    /// The clock of the runtime this is called in.
    pub fn current() -> MadsimTime {
        MadsimTime {
            handle: TimeHandle::current(),
        }
    }
}

impl PeerTime for MadsimTime {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.handle.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        self.handle.sleep(Duration::from_millis(ms))
    }
}
