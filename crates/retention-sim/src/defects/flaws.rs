//! The defect switches of the shared engine; each named worker turns on exactly its own.
//!
//! Terminology:
//! - *flaw*: one departure from the correct worker's behaviour, at one place in the engine.
//!   Each such place in the code carries a `// defect(<worker name>):` comment.
//! - [`Flaws::NONE`]: every switch in its correct position; the engine then behaves exactly
//!   like `retention_worker::RetentionWorker` (a unit test compares the two traces byte for byte).
//!
//! These switches live here, in a test-only crate, and never in the production core.

/// How the renewal side of a term is driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenewalFlaw {
    /// Correct: sleep, renew with the latest lease, await the answer, repeat; a `None` or an
    /// error is leadership loss; the loop is cancelled when the term ends.
    Serial,
    /// A timer fires every interval whatever happened to the previous renewal, so several
    /// renewals can be in flight; answers replace the latest lease in arrival order; a `None`
    /// or an error is ignored.
    Interval,
    /// Serial, but the loop is not cancelled when deletion ends: the term waits only for a
    /// renewal in flight, then leaves the loop behind, still scheduled.
    Detached,
    /// No renewal loop at all: the term deletes until the lease runs out under it.
    Never,
}

/// When the retention cutoff is read from the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CutoffFlaw {
    /// Correct: once, after acquire answered a lease.
    AfterAcquire,
    /// Before every batch.
    PerBatch,
    /// Once, before the acquire is sent.
    BeforeAcquire,
}

/// Every switch of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flaws {
    pub(crate) renewal: RenewalFlaw,
    pub(crate) cutoff: CutoffFlaw,
    /// No per-term cap: every batch asks for `batch_rows`, the cap never ends the term.
    pub(crate) uncapped: bool,
    /// The final release sends the lease from acquire, not the latest one.
    pub(crate) release_acquired: bool,
    /// `stop()` returns at once; a delete error skips the release; a lease that an acquire in
    /// flight at stop returns is kept, not released.
    pub(crate) unjoined_stop: bool,
    /// A renewal loss is recorded, but the deletion loop never looks at it.
    pub(crate) delete_after_loss: bool,
    /// A renewal error is treated like a `None` answer: no release.
    pub(crate) renew_error_no_release: bool,
    /// Deletes carry the token from acquire, not the latest one.
    pub(crate) acquired_token: bool,
    /// After an acquire that did not answer a lease, the lease kept from the previous term is
    /// released anyway.
    pub(crate) leftover_release: bool,
    /// Renewals send the lease from acquire, not the latest one.
    pub(crate) renew_acquired: bool,
    /// The term stops once a whole batch no longer fits under the cap (it deletes
    /// `cap / batch` whole batches), so the remainder of a cap that is not a multiple of the
    /// batch is never deleted.
    pub(crate) whole_batches: bool,
    /// A stop request does not cancel the renewal loop's pending sleep: the loop notices the
    /// stop only once the sleep has run out (it then sends nothing), and the term, which waits
    /// for the loop, releases only then. Deletion ending for any other reason still cancels
    /// the sleep at once.
    pub(crate) sleepy_stop: bool,
}

impl Flaws {
    /// The correct worker.
    pub(crate) const NONE: Flaws = Flaws {
        renewal: RenewalFlaw::Serial,
        cutoff: CutoffFlaw::AfterAcquire,
        uncapped: false,
        release_acquired: false,
        unjoined_stop: false,
        delete_after_loss: false,
        renew_error_no_release: false,
        acquired_token: false,
        leftover_release: false,
        renew_acquired: false,
        whole_batches: false,
        sleepy_stop: false,
    };
}
