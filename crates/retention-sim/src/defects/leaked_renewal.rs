//! `leaked-renewal`: the renewal loop is not cancelled when its term ends.
//!
//! Terminology:
//! - *detached loop*: the term's renewal loop, which stops only on a renewal `None` or error,
//!   or on `stop()`, but not when deletion ends.
//! - *parked loop*: a detached loop after its term returned. This crate spawns no task (like
//!   the core), so the worker keeps the loop and polls it beside whatever it does next: the
//!   next `run` (whose term then carries renewals of the previous lease) or `stop`.
//!
//! Differs from the correct worker in one place: at the end of a term the renewal loop's
//! pending sleep is not cancelled. The term still waits for a renewal in flight and releases
//! the latest lease, but the loop stays scheduled: once its sleep elapses (typically at the
//! start of the next term) it renews the ended term's lease. After a release that renewal
//! answers `None` and the loop ends; if the replica leads again by then, the owner-keyed
//! renewal succeeds and rotates the new term's token away from under it. `stop()` still
//! cancels the loop (and waits for it).
//!
//! Caught by: `renewal-stops` (and `release-last` when the leaked timer fires between the
//! term's release and its end).

use crate::defects::declare::defective_worker;
use crate::defects::flaws::{Flaws, RenewalFlaw};
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "leaked-renewal";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "the renewal loop is not cancelled when the term ends and keeps renewing the \
                  ended term's lease until a renewal fails",
    caught_by: &["renewal-stops", "release-last"],
    counterexample: Some(Counterexample::new("slow-deletes", 0, 25)),
};

defective_worker! {
    /// Leaves its renewal timer running after the term ends.
    LeakedRenewalWorker,
    Flaws { renewal: RenewalFlaw::Detached, ..Flaws::NONE }
}
