//! `moving-cutoff`: the retention cutoff is recomputed for every batch.
//!
//! Terminology:
//! - *cutoff*: `now - retention_ms`; rows created before it are eligible.
//! - *batch cutoff*: the cutoff one delete carries.
//!
//! Differs from the correct worker in one place: instead of one clock read after acquire, the
//! deletion loop reads the clock before every batch, so the batches of one term carry a cutoff
//! that advances with time and later batches delete rows that were not eligible when the term
//! began. The term report gives the first cutoff read. Everything else is correct.
//!
//! Caught by: `fixed-cutoff`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::{CutoffFlaw, Flaws};
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "moving-cutoff";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "reads the clock and recomputes the cutoff for every batch",
    caught_by: &["fixed-cutoff"],
    counterexample: Some(Counterexample::new("steady", 0, 25)),
};

defective_worker! {
    /// Reads a fresh cutoff before every batch.
    MovingCutoffWorker,
    Flaws { cutoff: CutoffFlaw::PerBatch, ..Flaws::NONE }
}
