//! `stale-renewal`: renewals keep sending the lease acquire returned.
//!
//! Terminology:
//! - *acquired lease*: the lease acquire answered at the start of the term.
//! - *latest lease*: the most recent lease the term received; each renewal replaces it.
//! - *owner mode* / *exact-token mode*: a lease service that renews for the owner whatever
//!   token it shows, or one that also demands the current token (`[lease] exact_token`).
//!
//! Differs from the correct worker in one place: every renewal sends the acquired lease, not
//! the latest one. The first renewal of a term is right; from the second on it shows a
//! superseded token. An owner-mode service renews it anyway (the bug stays silent there), an
//! exact-token service answers `None` and the term loses its leadership. Deletes and the
//! release carry the latest lease, as they should.
//!
//! Caught by: `renew-latest`.

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;
use leasesim_sim::{Counterexample, WorkerInfo};

/// The name under which the harness knows this worker.
pub const NAME: &str = "stale-renewal";

/// The catalogue entry of this worker.
pub const INFO: WorkerInfo = WorkerInfo {
    name: NAME,
    description: "renews with the lease it acquired, not the latest renewed one",
    caught_by: &["renew-latest"],
    counterexample: Some(Counterexample::new("exact-token-renewal", 0, 25)),
};

defective_worker! {
    /// Renews the superseded lease from acquire.
    StaleRenewalWorker,
    Flaws { renew_acquired: true, ..Flaws::NONE }
}
