//! `no-renewal`: the term never renews its lease.
//!
//! Terminology:
//! - *renewal loop*: in the correct worker, the half of a term that sleeps the renewal interval,
//!   renews with the latest lease and waits for the answer, over and over.
//!
//! Differs from the correct worker in one place: a term that acquired runs its deletion loop
//! alone, with no renewal loop beside it. Every delete carries the acquired token; once the
//! lease's lifetime has run out the store refuses them (a delete error, which ends the term)
//! or, with fencing off, a rival's term overlaps. Cutoff, batches, cap, stop and the release of
//! the (only) lease are unchanged.
//!
//! This is what several mutants of the core's renewal loop amount to (`renewal_wanted`
//! answering false, the loop returning at once), and the contract's other invariants all hold
//! for it: a lease that simply runs out breaks none of them.
//!
//! Caught by: `renewal-due`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::{Flaws, RenewalFlaw};
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "no-renewal";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "never renews: the term deletes with the acquired lease until it runs out",
    caught_by: &["renewal-due"],
    counterexample: Some(Counterexample::new("renewal-reorder", 0, 25)),
};

defective_worker! {
    /// Deletes with the acquired lease and never renews it.
    NoRenewalWorker,
    Flaws { renewal: RenewalFlaw::Never, ..Flaws::NONE }
}
