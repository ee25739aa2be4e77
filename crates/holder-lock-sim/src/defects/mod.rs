//! The holder-lock system's defective workers: the design's "saying these in an interview
//! costs you the question" list, one defect each, kept apart from the production core.
//!
//! Terminology:
//! - *defective worker*: the correct worker with exactly one defect: the shared [`engine`]
//!   (a copy of the core's attempt logic) with one switch of [`flaws`] on.
//! - *catalogue*: [`DEFECTS`], one `Defect` per worker: its CLI name, what is wrong,
//!   the invariants expected to catch it (its own first), and its switches.
//!
//! | worker | the design's item | what it does |
//! |---|---|---|
//! | `plain-delete` | releases the claim with a plain delete by key name | `delete` of the key, whatever it holds |
//! | `read-then-delete` | believes a read, a compare, then a delete closes the race | `get`, compare in the worker, `delete`: two steps |
//! | `fixed-token` | uses the host name or process id as the holder token | token = its process id (4100 + replica number) for every attempt |
//! | `side-key` | (the design's "stored with the claim, not beside it") | writes the token to `job:nightly-rollup:holder` too; the release checks that key, then deletes the claim by name |
//! | `swallowed-release` | (the design's "the signal you should not swallow") | a release that found the claim gone is reported as a deletion, and not counted |
//! | `long-lifetime` | thinks a longer lifetime removes the need for a holder token | no token (every claim holds `1`), a lifetime four times as long |
//! | `trust-from-answer` | (the design's "assumes a claim can only be gone if its holder released it", on the clock's side) | trusts its claim for the whole lifetime on its own timer, counted from the create's (or renewal's) answer instead of four fifths from the send |

pub mod engine;
pub mod flaws;

#[cfg(test)]
mod faithful;

use futures::future::LocalBoxFuture;
use holder_lock_worker::{AttemptReport, RunError};
use leasesim_events::ReplicaId;
use leasesim_sim::{Counterexample, Defect, WorkerInfo};

use crate::ports::{SimClock, SimJob, SimStore, SimTokens, WorkerPorts, WorkerUnderTest};
use engine::Engine;
use flaws::{Flaws, ReleaseFlaw, TokenFlaw, TrustFlaw};

/// A defective worker's switches, for the replica it runs on.
pub type FlawsOf = fn(ReplicaId) -> Flaws;

/// The defective worker on simulated ports.
pub type SimEngine = Engine<SimClock, SimStore, SimTokens, SimJob>;

impl WorkerUnderTest for SimEngine {
    type Report = Result<AttemptReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<AttemptReport, RunError>> {
        Box::pin(Engine::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(Engine::stop(self))
    }
}

/// The process id the `fixed-token` worker of `replica` uses as its token.
pub fn process_id(replica: ReplicaId) -> u64 {
    4101 + u64::from(replica.0)
}

/// Every defective worker, in the design's order.
pub const DEFECTS: &[Defect<FlawsOf>] = &[
    Defect {
        info: WorkerInfo {
            name: "plain-delete",
            description: "releases the claim with a plain delete by key name",
            caught_by: &["delete-own-claim", "no-third-worker"],
            counterexample: Some(Counterexample::new("holder-long-jobs", 0, 45)),
        },
        build: |_| Flaws {
            release: ReleaseFlaw::PlainDelete,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "read-then-delete",
            description: "releases by reading the key, comparing, then deleting it: two steps",
            caught_by: &["delete-own-claim", "no-third-worker"],
            counterexample: Some(Counterexample::new("holder-slow-release", 1, 25)),
        },
        build: |_| Flaws {
            release: ReleaseFlaw::ReadThenDelete,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "fixed-token",
            description: "uses its process id as the holder token of every attempt",
            caught_by: &["fresh-token"],
            counterexample: Some(Counterexample::new("holder-long-jobs", 0, 25)),
        },
        build: |replica| Flaws {
            token: TokenFlaw::ProcessId(process_id(replica)),
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "side-key",
            description: "keeps its token in a second key; its release checks that key, then \
                      deletes the claim by name",
            caught_by: &["delete-own-claim", "no-third-worker", "attempt-report"],
            counterexample: Some(Counterexample::new("holder-slow-release", 2, 25)),
        },
        build: |_| Flaws {
            release: ReleaseFlaw::SideKey,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "swallowed-release",
            description: "reports a release that found the claim gone as a deletion, uncounted",
            caught_by: &["release-reported"],
            counterexample: Some(Counterexample::new("holder-long-jobs", 0, 25)),
        },
        build: |_| Flaws {
            swallow_gone: true,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "long-lifetime",
            description: "writes no token, and claims for four times the lifetime instead",
            caught_by: &["fresh-token", "delete-own-claim"],
            counterexample: Some(Counterexample::new("holder-long-jobs", 0, 25)),
        },
        build: |_| Flaws {
            token: TokenFlaw::NoToken,
            ..Flaws::NONE
        },
    },
    Defect {
        info: WorkerInfo {
            name: "trust-from-answer",
            description: "trusts its claim for the whole lifetime on its own timer, counted from \
                      the create's or renewal's answer instead of four fifths from the send",
            caught_by: &["effects-under-claim", "job-under-claim"],
            counterexample: Some(Counterexample::new("holder-slow-timers", 2, 25)),
        },
        build: |_| Flaws {
            trust: TrustFlaw::FromAnswer,
            ..Flaws::NONE
        },
    },
];

/// The engine with `flaws` on one replica's ports.
pub fn engine_of(ports: WorkerPorts, flaws: Flaws) -> SimEngine {
    let parts = (ports.clock, ports.store, ports.tokens, ports.job);
    Engine::new(ports.config, parts, flaws)
        .expect("scenario loading validated the claim configuration")
}
