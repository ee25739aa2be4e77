//! The reservation system's defective workers, kept apart from the production core.
//!
//! Terminology:
//! - *defective worker*: the correct worker with exactly one defect, built on the shared
//!   [`engine`] with one flaw switched on. The store primitives some of them use (an update by
//!   id alone, a read then a plain write, a release without a token) are separate store
//!   operations ([`crate::ports::RawStore`]) the correct core never calls.
//! - *catalogue*: [`DEFECTS`], one `Defect` per worker: its CLI name, what is wrong with it,
//!   the invariants expected to catch it (its own first), and its flaw.
//!
//! | worker | defect | caught by |
//! |---|---|---|
//! | `unguarded-expire` | expires by id alone: `UPDATE ... SET status = 'expired' WHERE id = ?` | `consumed-never-expired`, `single-transition` |
//! | `read-then-write-claim` | claims by reading the due ids, then writing each claim plainly | `exclusive-claim` |
//! | `tokenless-release` | releases a claim without its token (frees whoever's claim is there) | `release-own-claim` |
//! | `retry-everything` | retries every outcome but expired, forever, with one fixed delay | `conflict-not-retried`, `bounded-retry` |
//! | `worker-clock-now` | passes its own clock as "now" for eligibility | `store-clock-decides`, `expired-only-when-due` |
//! | `worker-clock-claim` | claims with its own clock as "now", re-claiming at once what the transition refuses as not due | `store-clock-decides`, `no-hot-reclaim` |
//! | `token-per-worker` | one claim token for all its claims instead of one per claim | `fresh-claim-token`, `release-own-claim` |
//! | `release-skipped-on-error` | skips the release of a reservation whose settling ended in an error | `claim-released` |

pub mod engine;

use futures::future::LocalBoxFuture;
use leasesim_sim::{Counterexample, Defect, WorkerInfo};
use reservations_worker::{RunError, RunReport};

use crate::ports::{SimClock, SimLetters, SimStore, SimTokens, WorkerPorts, WorkerUnderTest};
use engine::{ClaimFlaw, Engine, ExpireFlaw, Flaws, NowFlaw, ReleaseFlaw, RetryFlaw, TokenFlaw};

/// Every defective worker of the reservation system, in the contract's order; each one's
/// engine switches are [`Flaws::NONE`] with exactly one changed.
pub const DEFECTS: &[Defect<Flaws>] = &[
    Defect {
        info: WorkerInfo {
            name: "unguarded-expire",
            description: "expires by id alone (no status or deadline guard)",
            caught_by: &["consumed-never-expired", "single-transition"],
            counterexample: Some(Counterexample::new("expiry-consume-race", 0, 25)),
        },
        build: Flaws {
            expire: ExpireFlaw::ById,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "read-then-write-claim",
            description: "claims by reading the due ids, then writing each claim plainly",
            caught_by: &["exclusive-claim"],
            counterexample: Some(Counterexample::new("expiry-claim-takeover", 0, 25)),
        },
        build: Flaws {
            claim: ClaimFlaw::ReadThenWrite,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "tokenless-release",
            description: "releases a claim without its token, freeing whoever's claim is there",
            caught_by: &["release-own-claim"],
            counterexample: Some(Counterexample::new("expiry-claim-takeover", 0, 35)),
        },
        build: Flaws {
            release: ReleaseFlaw::Tokenless,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "retry-everything",
            description: "retries every outcome but expired, forever, with one fixed delay",
            caught_by: &["conflict-not-retried", "bounded-retry"],
            counterexample: Some(Counterexample::new("expiry-consume-race", 0, 25)),
        },
        build: Flaws {
            retry: RetryFlaw::Everything,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "worker-clock-now",
            description: "passes its own (skewed) clock as now for eligibility",
            caught_by: &["store-clock-decides", "expired-only-when-due"],
            counterexample: Some(Counterexample::new("expiry-clock-skew", 0, 25)),
        },
        build: Flaws {
            now: NowFlaw::WorkerClock,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "worker-clock-claim",
            description: "claims with its own clock as now: a clock ahead of the store's is handed \
                      holds not yet due, which it acknowledges as not eligible and claims \
                      again at once",
            caught_by: &["store-clock-decides", "no-hot-reclaim"],
            counterexample: Some(Counterexample::new("expiry-clock-skew", 0, 25)),
        },
        build: Flaws {
            now: NowFlaw::WorkerClockClaims,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "token-per-worker",
            description: "uses one claim token for all its claims instead of a fresh one per claim",
            caught_by: &["fresh-claim-token", "release-own-claim"],
            counterexample: Some(Counterexample::new("expiry-steady", 0, 25)),
        },
        build: Flaws {
            token: TokenFlaw::PerWorker,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "release-skipped-on-error",
            description: "skips the finally-path release when settling ends in an error",
            caught_by: &["claim-released"],
            counterexample: Some(Counterexample::new("expiry-transient-errors", 0, 25)),
        },
        build: Flaws {
            skip_release_on_error: true,
            ..Flaws::NONE
        },
    },
];

/// A defective worker on the simulated ports.
pub type DefectiveWorker = Engine<SimStore, SimLetters, SimClock, SimTokens>;

impl WorkerUnderTest for DefectiveWorker {
    type Report = Result<RunReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(Engine::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(Engine::stop(self))
    }
}

/// The engine with `flaws`, built on one replica's ports.
pub fn engine_of(ports: WorkerPorts, flaws: Flaws) -> DefectiveWorker {
    let parts = (ports.store, ports.letters, ports.clock, ports.tokens);
    Engine::new(ports.config, parts, flaws)
}

#[cfg(test)]
mod faithful;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_defect_switches_exactly_one_flaw() {
        for defect in DEFECTS {
            let f = defect.build;
            let n = Flaws::NONE;
            let changed = [
                f.expire != n.expire,
                f.claim != n.claim,
                f.release != n.release,
                f.now != n.now,
                f.token != n.token,
                f.retry != n.retry,
                f.skip_release_on_error != n.skip_release_on_error,
            ];
            let count = changed.iter().filter(|c| **c).count();
            assert_eq!(count, 1, "{} switches {count} flaws", defect.info.name);
            assert!(!defect.info.caught_by.is_empty());
        }
    }
}
