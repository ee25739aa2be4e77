//! `leftover-release`: a term that did not acquire releases the previous term's lease.
//!
//! Terminology:
//! - *leftover lease*: the latest lease of the last term that held one; the worker keeps it in
//!   a field that is never cleared.
//! - *ownership*: this term's acquire answered a lease.
//!
//! Differs from the correct worker in one place: when acquire answers `None` or fails, the
//! term releases the leftover lease (if any) instead of making no further call, as a
//! `finally { if (lease) release(lease) }` over a stale field does. The service's
//! compare-and-set usually makes the release free nothing, but the call is made without
//! ownership. Everything else is correct.
//!
//! Caught by: `release-after-ownership`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "leftover-release";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "after an acquire that answered None or failed, releases the lease left over \
                  from an earlier term",
    caught_by: &["release-after-ownership"],
    counterexample: Some(Counterexample::new("slow-deletes", 0, 26)),
};

defective_worker! {
    /// Releases a stale lease in terms that never acquired.
    LeftoverReleaseWorker,
    Flaws { leftover_release: true, ..Flaws::NONE }
}
