//! `delete-after-loss`: a lost renewal does not stop deletion.
//!
//! Terminology:
//! - *loss*: a renewal answered `None` or an error.
//! - *last token*: the token of the latest lease received before the loss.
//!
//! Differs from the correct worker in one place: the deletion loop never checks the recorded
//! loss, so it keeps deleting with the last token until it ends by itself (cap, short batch,
//! stop, or a delete error, typically the store refusing the stale token). The renewal loop
//! still ends at the loss, and the release rules (none after a `None`) are unchanged.
//!
//! Caught by: `no-delete-after-loss`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "delete-after-loss";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "a renewal failure (None or error) is recorded but deletion keeps going with \
                  the last token until the batch loop ends by itself",
    caught_by: &["no-delete-after-loss"],
    counterexample: Some(Counterexample::new("fencing-off", 0, 25)),
};

defective_worker! {
    /// Keeps deleting after its renewal lost the lease.
    DeleteAfterLossWorker,
    Flaws { delete_after_loss: true, ..Flaws::NONE }
}
