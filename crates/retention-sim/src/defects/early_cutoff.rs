//! `early-cutoff`: the cutoff is read before the acquire instead of after it.
//!
//! Terminology:
//! - *cutoff*: `now - retention_ms`, read once per term.
//! - *leadership*: known only once acquire answered a lease.
//!
//! Differs from the correct worker in one place: the term reads the clock for its cutoff
//! before it sends the acquire (even when the acquire then fails), so the cutoff predates
//! leadership by the acquire's round trip, or by a pause in between. The cutoff stays fixed
//! for the term. Everything else is correct.
//!
//! Caught by: `fixed-cutoff`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::{CutoffFlaw, Flaws};
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "early-cutoff";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "reads the clock for the cutoff before acquiring, so the cutoff predates \
                  leadership",
    caught_by: &["fixed-cutoff"],
    counterexample: Some(Counterexample::new("steady", 0, 25)),
};

defective_worker! {
    /// Takes the term's cutoff before it knows it leads.
    EarlyCutoffWorker,
    Flaws { cutoff: CutoffFlaw::BeforeAcquire, ..Flaws::NONE }
}
