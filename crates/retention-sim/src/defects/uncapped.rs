//! `uncapped`: a term has no row cap.
//!
//! Terminology:
//! - *cap*: `cap_rows`, the most rows one term may delete (1,000 by default).
//! - *short batch*: a delete that answers fewer rows than it asked for.
//!
//! Differs from the correct worker in one place: the deletion loop keeps no allowance. Every
//! batch asks for `batch_rows`, and the term ends only on a short batch, loss, stop or a delete
//! error, so a large backlog is deleted in one term. Everything else is correct.
//!
//! Caught by: `term-cap`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "uncapped";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "no per-term cap: every batch asks for batch_rows and the term ends only on a \
                  short batch, loss, stop or error",
    caught_by: &["term-cap"],
    counterexample: Some(Counterexample::new("steady", 0, 25)),
};

defective_worker! {
    /// Deletes until the backlog is drained, ignoring the per-term cap.
    UncappedWorker,
    Flaws { uncapped: true, ..Flaws::NONE }
}
