//! `sleepy-stop`: a stop waits for the renewal loop's pending sleep to run out.
//!
//! Terminology:
//! - *pending sleep*: the renewal loop's wait of one renewal interval before its next renewal.
//! - *cancel*: end the pending sleep at once, so the loop ends without renewing.
//!
//! Differs from the correct worker in one place: a stop request does not cancel the renewal
//! loop's pending sleep, and neither does the end of deletion that the stop causes. The loop
//! notices the stop only when its sleep has run out; it then sends no renewal and ends, and
//! only then does the term release its lease and `stop()` resolve. So `stop()` waits up to a
//! renewal interval on a timer, though nothing is in flight. Deletion ending on its own (cap,
//! short batch, delete error) and a loss still cancel the sleep at once, and no call is sent
//! after the stop except the release.
//!
//! Caught by: `stop-prompt`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "sleepy-stop";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "stop() does not cancel the pending renewal sleep: the term releases, and \
                  stop() resolves, only once that sleep has run out",
    caught_by: &["stop-prompt"],
    counterexample: Some(Counterexample::new("slow-deletes", 5, 25)),
};

defective_worker! {
    /// Lets the renewal sleep run out before a stopped term releases.
    SleepyStopWorker,
    Flaws { sleepy_stop: true, ..Flaws::NONE }
}
