//! `interval-renewal`: renewals fire on a fixed timer instead of one after another.
//!
//! Terminology:
//! - *tick*: every `renew_every_ms` while the term deletes; each tick sends a renewal with the
//!   latest lease, whether or not earlier renewals have answered.
//! - *renewals in flight*: the renewals sent and not yet answered; there may be several.
//!
//! Differs from the correct worker only in its renewal half:
//! - a renewal is sent at every tick, not after the previous one answered, so several are in
//!   flight at once and their answers can arrive in any order;
//! - each `Some(lease)` answer replaces the latest lease in arrival order, so an older lease
//!   can replace a newer one;
//! - a `None` answer or an error is ignored: no loss is recorded, deletion goes on.
//!
//! Unchanged: ticks stop when deletion ends or on stop, and the renewals still in flight are
//! awaited before the latest lease is released.
//!
//! Caught by: `serial-renewal` (and `no-delete-after-loss` when a renewal fails, and
//! `renew-latest` when a tick sends the latest lease it has taken before it takes the answer
//! that replaced it).

use crate::defects::declare::defective_worker;
use crate::defects::flaws::{Flaws, RenewalFlaw};
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "interval-renewal";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "renewals fire on a fixed interval without waiting for the previous one; \
                  answers replace the latest lease in arrival order; a None or an error is \
                  ignored and deletion continues",
    caught_by: &["serial-renewal", "no-delete-after-loss", "renew-latest"],
    counterexample: Some(Counterexample::new("renewal-reorder", 0, 25)),
};

defective_worker! {
    /// Renews on a timer, with overlapping renewals whose failures go unobserved.
    IntervalRenewalWorker,
    Flaws { renewal: RenewalFlaw::Interval, ..Flaws::NONE }
}
