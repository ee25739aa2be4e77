//! `unjoined-stop`: stop only flips a flag, and two exits skip the release.
//!
//! Terminology:
//! - *join*: `stop()` resolving only after the running term settled, its release included.
//! - *acquire in flight at stop*: an acquire sent before `stop()` that answers a lease after.
//!
//! Differs from the correct worker in the three places of the design review's fifth finding:
//! - `stop()` sets the stop request and returns at once: it does not wait for the running
//!   term, its call in flight, or its release;
//! - a delete error ends the term without a release (the release is skipped, not guarded);
//! - a lease returned by an acquire that was in flight at stop is kept, not released.
//!
//! Unchanged: the stop request still blocks new acquires, renewals and deletes, and the other
//! exits (cap, drained, stopped, renewal error) release the latest lease.
//!
//! Caught by: `stop-joins` (and `release-on-exit` for the two skipped releases).

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "unjoined-stop";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "stop() only sets the flag and returns at once; a delete error skips the \
                  release; a lease returned by an acquire in flight at stop is not released",
    caught_by: &["stop-joins", "release-on-exit"],
    counterexample: Some(Counterexample::new("stop-during-acquire", 0, 25)),
};

defective_worker! {
    /// Stops without joining the term; leaks the lease on two exit paths.
    UnjoinedStopWorker,
    Flaws { unjoined_stop: true, ..Flaws::NONE }
}
