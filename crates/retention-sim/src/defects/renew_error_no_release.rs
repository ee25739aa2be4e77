//! `renew-error-no-release`: a renewal error is treated like a `None` answer.
//!
//! Terminology:
//! - *`None` answer*: the service says the lease is gone; there is nothing to release.
//! - *renewal error*: the answer did not arrive or was refused; the lease may well still be
//!   held (a lost reply means the renewal even took effect).
//!
//! Differs from the correct worker in one place: after a renewal error the term ends without
//! releasing its latest lease, as it rightly does after a `None`. The lease then blocks every
//! rival until it expires. Everything else is correct.
//!
//! Caught by: `release-on-exit`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "renew-error-no-release";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "treats a renewal error like a None answer and skips the release",
    caught_by: &["release-on-exit"],
    counterexample: Some(Counterexample::new("reply-lost", 0, 25)),
};

defective_worker! {
    /// Skips the release after a renewal error.
    RenewErrorNoReleaseWorker,
    Flaws { renew_error_no_release: true, ..Flaws::NONE }
}
