//! `naive`: the worker as the design review found it, with all five of its findings at once.
//!
//! Terminology: as in the single-defect modules this worker combines.
//!
//! Differs from the correct worker in exactly the places of these five workers, and nowhere
//! else:
//! 1. [`interval-renewal`](crate::defects::interval_renewal): renewals fire on a fixed timer, several
//!    may be in flight, answers replace the latest lease in arrival order, and a `None` or an
//!    error is ignored, so deletion never stops for a lost lease.
//! 2. [`stale-release`](crate::defects::stale_release): the release sends the lease from acquire.
//! 3. [`moving-cutoff`](crate::defects::moving_cutoff): the cutoff is read again for every batch.
//! 4. [`uncapped`](crate::defects::uncapped): no per-term cap.
//! 5. [`unjoined-stop`](crate::defects::unjoined_stop): `stop()` only sets the flag; a delete error
//!    skips the release; a lease an acquire in flight at stop returns is kept.
//!
//! Caught by: `serial-renewal`, `release-latest`, `fixed-cutoff`, `term-cap`, `stop-joins`
//! (and, as consequences, `no-delete-after-loss` and `release-on-exit`).

use crate::defects::declare::defective_worker;
use crate::defects::flaws::{CutoffFlaw, Flaws, RenewalFlaw};
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "naive";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "all five findings of the design review at once: interval renewals whose failures \
                  go unobserved, release of the acquired lease, a cutoff per batch, no cap, and \
                  a stop that neither joins nor releases",
    caught_by: &[
        "serial-renewal",
        "release-latest",
        "fixed-cutoff",
        "term-cap",
        "stop-joins",
        "no-delete-after-loss",
        "release-on-exit",
    ],
    counterexample: Some(Counterexample::new("steady", 0, 25)),
};

defective_worker! {
    /// The design review's worker: five defects together (see the module documentation).
    NaiveWorker,
    Flaws {
        renewal: RenewalFlaw::Interval,
        release_acquired: true,
        cutoff: CutoffFlaw::PerBatch,
        uncapped: true,
        unjoined_stop: true,
        ..Flaws::NONE
    }
}
