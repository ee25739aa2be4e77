//! `acquired-token`: deletes keep carrying the token from acquire.
//!
//! Terminology:
//! - *acquired token*: the fencing token of the lease acquire answered.
//! - *latest token*: the token of the most recent lease received; each renewal rotates it.
//!
//! Differs from the correct worker in one place: every delete carries the acquired token (as
//! when the token is captured once at the start of the term). Before the first renewal this is
//! the latest token; after it, a fencing store refuses the delete and the term fails, and a
//! store without fencing applies it under a stale token. Renewal and release are correct.
//!
//! Caught by: `latest-token`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "acquired-token";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "every delete carries the fencing token from acquire, not the latest renewed \
                  one",
    caught_by: &["latest-token"],
    counterexample: Some(Counterexample::new("renewal-rejection", 0, 25)),
};

defective_worker! {
    /// Deletes with the token captured at acquire.
    AcquiredTokenWorker,
    Flaws { acquired_token: true, ..Flaws::NONE }
}
