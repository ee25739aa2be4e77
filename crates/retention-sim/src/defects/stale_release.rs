//! `stale-release`: the final release sends the lease acquire returned.
//!
//! Terminology:
//! - *acquired lease*: the lease acquire answered at the start of the term.
//! - *latest lease*: the most recent lease the term received; after a renewal it carries a
//!   newer token, so the service's compare-and-set no longer matches the acquired one.
//!
//! Differs from the correct worker in one place: at the end of a term the release carries the
//! acquired lease instead of the latest one. Whenever the term renewed, the release frees
//! nothing and the lease stays held until it expires. Everything else (renewal, deletion with
//! the latest token, when to release) is correct.
//!
//! Caught by: `release-latest`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "stale-release";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "releases the lease it acquired, not the latest renewed one",
    caught_by: &["release-latest"],
    counterexample: Some(Counterexample::new("reply-lost", 0, 25)),
};

defective_worker! {
    /// Releases the superseded lease from acquire.
    StaleReleaseWorker,
    Flaws { release_acquired: true, ..Flaws::NONE }
}
