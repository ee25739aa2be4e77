//! The reservation system's defective workers, kept apart from the production core.
//!
//! Terminology:
//! - *defective worker*: the correct worker with exactly one defect, built on the shared
//!   [`engine`] with one flaw switched on. The store primitives some of them use (an update by
//!   id alone, a read then a plain write, a release without a token) are separate store
//!   operations ([`crate::ports::RawStore`]) the correct core never calls.
//! - *catalogue*: [`DEFECTS`], one [`Defect`] per worker: its CLI name, what is wrong with it,
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

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use leasesim_sim::WorkerInfo;
use reservations_worker::{RunError, RunReport};

use crate::ports::{
    SimClock, SimLetters, SimStore, SimTokens, WorkerFactory, WorkerPorts, WorkerUnderTest,
    correct_worker,
};
use engine::{ClaimFlaw, Engine, ExpireFlaw, Flaws, NowFlaw, ReleaseFlaw, RetryFlaw, TokenFlaw};

/// One defective worker as the harness lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Defect {
    /// `--worker NAME`.
    pub name: &'static str,
    /// What is wrong with it, in one line.
    pub description: &'static str,
    /// The invariants expected to catch it; the first is its own.
    pub caught_by: &'static [&'static str],
    /// The engine's switches: [`Flaws::NONE`] with exactly one changed.
    pub flaws: Flaws,
}

/// Every defective worker of the reservation system, in the order.
pub const DEFECTS: &[Defect] = &[
    Defect {
        name: "unguarded-expire",
        description: "expires by id alone (no status or deadline guard)",
        caught_by: &["consumed-never-expired", "single-transition"],
        flaws: Flaws {
            expire: ExpireFlaw::ById,
            ..Flaws::NONE
        },
    },
    Defect {
        name: "read-then-write-claim",
        description: "claims by reading the due ids, then writing each claim plainly",
        caught_by: &["exclusive-claim"],
        flaws: Flaws {
            claim: ClaimFlaw::ReadThenWrite,
            ..Flaws::NONE
        },
    },
    Defect {
        name: "tokenless-release",
        description: "releases a claim without its token, freeing whoever's claim is there",
        caught_by: &["release-own-claim"],
        flaws: Flaws {
            release: ReleaseFlaw::Tokenless,
            ..Flaws::NONE
        },
    },
    Defect {
        name: "retry-everything",
        description: "retries every outcome but expired, forever, with one fixed delay",
        caught_by: &["conflict-not-retried", "bounded-retry"],
        flaws: Flaws {
            retry: RetryFlaw::Everything,
            ..Flaws::NONE
        },
    },
    Defect {
        name: "worker-clock-now",
        description: "passes its own (skewed) clock as now for eligibility",
        caught_by: &["store-clock-decides", "expired-only-when-due"],
        flaws: Flaws {
            now: NowFlaw::WorkerClock,
            ..Flaws::NONE
        },
    },
    Defect {
        name: "worker-clock-claim",
        description: "claims with its own clock as now: a clock ahead of the store's is handed \
                      holds not yet due, which it acknowledges as not eligible and claims \
                      again at once",
        caught_by: &["store-clock-decides", "no-hot-reclaim"],
        flaws: Flaws {
            now: NowFlaw::WorkerClockClaims,
            ..Flaws::NONE
        },
    },
    Defect {
        name: "token-per-worker",
        description: "uses one claim token for all its claims instead of a fresh one per claim",
        caught_by: &["fresh-claim-token", "release-own-claim"],
        flaws: Flaws {
            token: TokenFlaw::PerWorker,
            ..Flaws::NONE
        },
    },
    Defect {
        name: "release-skipped-on-error",
        description: "skips the finally-path release when settling ends in an error",
        caught_by: &["claim-released"],
        flaws: Flaws {
            skip_release_on_error: true,
            ..Flaws::NONE
        },
    },
];

/// A defective worker on the simulated ports.
pub type DefectiveWorker = Engine<SimStore, SimLetters, SimClock, SimTokens>;

impl WorkerUnderTest for DefectiveWorker {
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

/// Every worker of the reservation system: `correct` first, then the defective ones.
pub fn workers() -> Vec<WorkerInfo> {
    let correct = WorkerInfo {
        name: "correct",
        defect: "the production worker core (reservations-worker)",
        caught_by: &[],
    };
    let defects = DEFECTS.iter().map(|d| WorkerInfo {
        name: d.name,
        defect: d.description,
        caught_by: d.caught_by,
    });
    std::iter::once(correct).chain(defects).collect()
}

/// The factory of a worker by name: `correct`, or any name in [`DEFECTS`].
pub fn factory(name: &str) -> Option<Rc<WorkerFactory>> {
    if name == "correct" {
        return Some(Rc::new(correct_worker));
    }
    let flaws = DEFECTS.iter().find(|d| d.name == name)?.flaws;
    Some(Rc::new(move |ports: WorkerPorts| {
        Rc::new(engine_of(ports, flaws)) as Rc<dyn WorkerUnderTest>
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_defect_switches_exactly_one_flaw() {
        for defect in DEFECTS {
            let f = defect.flaws;
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
            assert_eq!(count, 1, "{} switches {count} flaws", defect.name);
            assert!(!defect.caught_by.is_empty());
        }
    }
}
