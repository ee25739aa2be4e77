//! The work-items system's defective workers, kept apart from the production core.
//!
//! Terminology:
//! - *defective worker*: the production worker with exactly one defect, one of the naive
//!   shapes the design warns about. Each is a [`DefectiveWorker`] whose engine has one flaw.
//! - *engine*: a copy of the production worker's loop with defect switches (`engine/`); each
//!   switched place carries a `// defect(<name>):` comment. With no flaw the engine gives the
//!   production worker's traces byte for byte (the `faithful` test).
//! - *unsafe primitive*: a store operation without a condition (`crate::ports::UnsafeStore`):
//!   the defects that need one call it; the production core cannot.
//! - *catalogue*: [`DEFECTS`], one `Defect` per worker (its name, what is wrong, the
//!   invariants expected to catch it, its own first), and `Workers::factory` (in
//!   `ports.rs`) to build one by name.

mod engine;

#[cfg(test)]
mod faithful;

use futures::future::LocalBoxFuture;
use leasesim_sim::{Counterexample, Defect, WorkerInfo};
use work_items_worker::{Clock, ConfigError, Provider, RunError, RunReport, Store, WorkerConfig};

use crate::ports::{SimClock, SimProvider, SimStore, UnsafeStore, WorkerUnderTest};
use engine::Engine;
pub use engine::Flaw;

/// Every defective worker, in the order the design's warnings come.
pub const DEFECTS: &[Defect<Flaw>] = &[
    Defect {
        info: WorkerInfo {
            name: "plain-write-claim",
            description: "claims an item a read found claimable with a plain write of itself as \
                      owner (no condition)",
            caught_by: &["claimable-only"],
            counterexample: Some(Counterexample::new("items-steady", 0, 17)),
        },
        build: Flaw::PlainWriteClaim,
    },
    Defect {
        info: WorkerInfo {
            name: "unfenced-apply",
            description: "applies the item's effect without the token predicate",
            caught_by: &["stale-apply"],
            counterexample: Some(Counterexample::new("items-clock-skew", 0, 34)),
        },
        build: Flaw::UnfencedApply,
    },
    Defect {
        info: WorkerInfo {
            name: "keyless-retry",
            description: "retries an ambiguous provider timeout with a new key, without \
                      reconciling",
            caught_by: &["effect-once", "reconcile-first"],
            counterexample: Some(Counterexample::new("items-provider-timeouts", 0, 22)),
        },
        build: Flaw::KeylessRetry,
    },
    Defect {
        info: WorkerInfo {
            name: "lease-lost-retry",
            description: "treats lease-lost as a transient error and retries with the same token",
            caught_by: &["stop-on-lease-lost"],
            counterexample: Some(Counterexample::new("items-ugly-transition", 0, 19)),
        },
        build: Flaw::LeaseLostRetry,
    },
    Defect {
        info: WorkerInfo {
            name: "unfenced-done",
            description: "marks items done without the owner check",
            caught_by: &["stale-done"],
            counterexample: Some(Counterexample::new("items-clock-skew", 2, 42)),
        },
        build: Flaw::UnfencedDone,
    },
    Defect {
        info: WorkerInfo {
            name: "worker-token",
            description: "keeps the first token it was granted and sends it with every later claim",
            caught_by: &["claim-token"],
            counterexample: Some(Counterexample::new("items-long-items", 0, 25)),
        },
        build: Flaw::WorkerToken,
    },
    Defect {
        info: WorkerInfo {
            name: "store-expiry-renewal",
            description: "renews when its own clock nears the store's lease expiry, not when the \
                      interval has passed on its own clock: a clock behind the store's renews \
                      late",
            caught_by: &["renewal-due"],
            counterexample: Some(Counterexample::new("items-clock-skew", 0, 25)),
        },
        build: Flaw::StoreExpiryRenewal,
    },
    Defect {
        info: WorkerInfo {
            name: "no-deadline",
            description: "goes on claiming new items after the pass's deadline has passed on its \
                      clock",
            caught_by: &["pass-deadline"],
            counterexample: Some(Counterexample::new("items-long-items", 0, 25)),
        },
        build: Flaw::NoDeadline,
    },
];

/// The production worker with one defect (see [`DEFECTS`]).
pub struct DefectiveWorker<C: Clock, S: Store + UnsafeStore, P: Provider> {
    name: &'static str,
    engine: Engine<C, S, P>,
}

impl<C: Clock, S: Store + UnsafeStore, P: Provider> std::fmt::Debug for DefectiveWorker<C, S, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple(self.name).field(&self.engine).finish()
    }
}

impl<C: Clock, S: Store + UnsafeStore, P: Provider> DefectiveWorker<C, S, P> {
    /// The worker called `name` in [`DEFECTS`] (`None` for any other name); fails with the
    /// first rule `config` breaks, as `ItemWorker::new` does.
    pub fn named(
        name: &str,
        owner_id: impl Into<String>,
        config: WorkerConfig,
        ports: (C, S, P),
    ) -> Option<Result<Self, ConfigError>> {
        let defect = DEFECTS.iter().find(|d| d.info.name == name)?;
        let engine = Engine::new(owner_id, config, ports, Some(defect.build));
        Some(engine.map(|engine| DefectiveWorker {
            name: defect.info.name,
            engine,
        }))
    }

    /// One pass, as `ItemWorker::run` except for the defect.
    pub async fn run(&self) -> Result<RunReport, RunError> {
        self.engine.run().await
    }

    /// As `ItemWorker::stop`.
    pub async fn stop(&self) {
        self.engine.stop().await;
    }
}

impl WorkerUnderTest for DefectiveWorker<SimClock, SimStore, SimProvider> {
    type Report = Result<RunReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(DefectiveWorker::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(DefectiveWorker::stop(self))
    }
}
