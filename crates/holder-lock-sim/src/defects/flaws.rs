//! The defect switches of the shared engine; each defective worker turns on exactly its own.
//!
//! Terminology:
//! - *flaw*: one departure from the correct worker, at one place in the engine; each such
//!   place carries a `// defect(<worker name>):` comment.
//! - [`Flaws::NONE`]: every switch in its correct position; the engine then behaves exactly
//!   like `holder_lock_worker::JobRunner` (a test compares the two traces).
//!
//! These switches live here, in the harness, never in the production core.

/// How the claim is given back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseFlaw {
    /// Correct: delete only while the key holds the attempt's token, in one step (or, on a
    /// store without compare-and-delete, read it and leave the claim to run out).
    Conditional,
    /// `plain-delete`: delete the key by name, whatever it holds.
    PlainDelete,
    /// `read-then-delete`: read the key, compare in the worker, then delete by name: two
    /// steps, with a gap between them.
    ReadThenDelete,
    /// `side-key`: the token is also written to a second key; the release checks that key
    /// (conditionally), then deletes the claim by name.
    SideKey,
}

/// Where the attempt's token comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenFlaw {
    /// Correct: a fresh token from the token source for every attempt.
    Fresh,
    /// `fixed-token`: the worker's process id, the same for all its attempts.
    ProcessId(u64),
    /// `long-lifetime`: no token at all (every claim holds the same value), and a lifetime
    /// four times as long instead.
    NoToken,
}

/// Which clock and which instant the trust in a claim is counted from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrustFlaw {
    /// Correct: four fifths of the lifetime on the worker's timer, from the moment the create
    /// (or renewal) was sent, so the trust ends before the store's lifetime, which started at
    /// the apply, even on a slowish timer.
    FromSend,
    /// `trust-from-answer`: the whole lifetime on the worker's timer, from the moment the
    /// answer arrived: the store's lifetime started earlier (at the apply), and a slow timer
    /// stretches the trust further, so the worker acts on claims the store has forgotten.
    FromAnswer,
}

/// Every switch of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flaws {
    pub release: ReleaseFlaw,
    pub token: TokenFlaw,
    pub trust: TrustFlaw,
    /// `swallowed-release`: a release that found the claim gone is reported as a deletion
    /// and not counted.
    pub swallow_gone: bool,
}

impl Flaws {
    /// The correct worker.
    pub const NONE: Flaws = Flaws {
        release: ReleaseFlaw::Conditional,
        token: TokenFlaw::Fresh,
        trust: TrustFlaw::FromSend,
        swallow_gone: false,
    };
}

/// The value a worker without tokens writes with every claim.
pub const NO_TOKEN: u64 = 1;

/// How much longer the `long-lifetime` worker makes its claims.
pub const LONGER: u64 = 4;
