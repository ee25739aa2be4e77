//! `whole-batches`: a term deletes only whole batches, `cap / batch` of them.
//!
//! Terminology:
//! - *batch*: `batch_rows`, the most rows one delete asks for.
//! - *cap*: `cap_rows`, the most rows one term may delete.
//! - *remainder*: `cap % batch`, the rows of the cap that do not fill a whole batch.
//!
//! Differs from the correct worker in one place: after each full batch, the term ends (and
//! reports the cap reached) as soon as another whole batch would not fit under the cap, as if
//! it had planned `cap / batch` batches with integer division. With the default 200-row
//! batches and 1,000-row cap (a multiple) this is exactly the correct worker; with a 64-row
//! batch and a 300-row cap every term stops at 256 rows and the last 44 are never asked for.
//!
//! Caught by: `no-early-stop` (and `term-report`: it reports the cap reached below the cap).

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "whole-batches";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "deletes only whole batches (cap / batch of them): the remainder of a cap that \
                  is not a multiple of the batch is never deleted",
    caught_by: &["no-early-stop", "term-report"],
    counterexample: Some(Counterexample::new("odd-batches", 0, 25)),
};

defective_worker! {
    /// Ends a term when a whole batch no longer fits under the cap.
    WholeBatchesWorker,
    Flaws { whole_batches: true, ..Flaws::NONE }
}
