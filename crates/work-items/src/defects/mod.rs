//! The work-items system's defective workers, kept apart from the production core.
//!
//! Terminology:
//! - *defective worker*: the production worker with exactly one defect, one of the naive
//!   shapes the seed warns about. Each is a [`DefectiveWorker`] whose engine has one flaw.
//! - *engine*: a copy of the production worker's loop with defect switches (`engine/`); each
//!   switched place carries a `// defect(<name>):` comment. With no flaw the engine gives the
//!   production worker's traces byte for byte (the `faithful` test).
//! - *unsafe primitive*: a store operation without a condition (`crate::ports::UnsafeStore`):
//!   the defects that need one call it; the production core cannot.
//! - *catalogue*: [`DEFECTS`], one [`DefectInfo`] per worker (its name, what is wrong, the
//!   invariants expected to catch it, its own first), and [`factory`] to build one by name.

mod engine;

#[cfg(test)]
mod faithful;

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use leasesim_sim::WorkerInfo;
use work_items_worker::{Clock, ConfigError, Provider, RunError, RunReport, Store, WorkerConfig};

use crate::ports::{
    SimClock, SimProvider, SimStore, UnsafeStore, WorkerFactory, WorkerPorts, WorkerUnderTest,
    correct_worker,
};
use engine::{Engine, Flaw};

/// One defective worker as the harness lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefectInfo {
    /// `--worker NAME`.
    pub name: &'static str,
    /// What is wrong with it, in one line.
    pub description: &'static str,
    /// The invariants expected to catch it, its own first.
    pub caught_by: &'static [&'static str],
}

/// Every defective worker, in the order the seed's warnings come.
pub const DEFECTS: &[DefectInfo] = &[
    DefectInfo {
        name: "plain-write-claim",
        description: "claims an item a read found claimable with a plain write of itself as \
                      owner (no condition)",
        caught_by: &["claimable-only"],
    },
    DefectInfo {
        name: "unfenced-apply",
        description: "applies the item's effect without the token predicate",
        caught_by: &["stale-apply"],
    },
    DefectInfo {
        name: "keyless-retry",
        description: "retries an ambiguous provider timeout with a new key, without \
                      reconciling",
        caught_by: &["effect-once", "reconcile-first"],
    },
    DefectInfo {
        name: "lease-lost-retry",
        description: "treats lease-lost as a transient error and retries with the same token",
        caught_by: &["stop-on-lease-lost"],
    },
    DefectInfo {
        name: "unfenced-done",
        description: "marks items done without the owner check",
        caught_by: &["stale-done"],
    },
    DefectInfo {
        name: "worker-token",
        description: "keeps the first token it was granted and sends it with every later claim",
        caught_by: &["claim-token"],
    },
    DefectInfo {
        name: "store-expiry-renewal",
        description: "renews when its own clock nears the store's lease expiry, not when the \
                      interval has passed on its own clock: a clock behind the store's renews \
                      late",
        caught_by: &["renewal-due"],
    },
    DefectInfo {
        name: "no-deadline",
        description: "goes on claiming new items after the pass's deadline has passed on its \
                      clock",
        caught_by: &["pass-deadline"],
    },
];

fn flaw_of(name: &str) -> Option<Flaw> {
    Some(match name {
        "plain-write-claim" => Flaw::PlainWriteClaim,
        "unfenced-apply" => Flaw::UnfencedApply,
        "keyless-retry" => Flaw::KeylessRetry,
        "lease-lost-retry" => Flaw::LeaseLostRetry,
        "unfenced-done" => Flaw::UnfencedDone,
        "worker-token" => Flaw::WorkerToken,
        "store-expiry-renewal" => Flaw::StoreExpiryRenewal,
        "no-deadline" => Flaw::NoDeadline,
        _ => return None,
    })
}

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
        let info = DEFECTS.iter().find(|d| d.name == name)?;
        let engine = Engine::new(owner_id, config, ports, flaw_of(name));
        Some(engine.map(|engine| DefectiveWorker {
            name: info.name,
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
    fn run(&self) -> LocalBoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(DefectiveWorker::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(DefectiveWorker::stop(self))
    }
}

/// Every worker of the system: `correct` (the production core) first.
pub fn workers() -> Vec<WorkerInfo> {
    let correct = WorkerInfo {
        name: "correct",
        defect: "the production worker core (work-items-worker)",
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
    let info = DEFECTS.iter().find(|d| d.name == name)?;
    let name = info.name;
    Some(Rc::new(move |ports: WorkerPorts| {
        let parts = (ports.clock, ports.store, ports.provider);
        let worker = DefectiveWorker::named(name, ports.owner_id, ports.config, parts)
            .expect("a catalogued name")
            .expect("scenario loading validated the worker configuration");
        Rc::new(worker) as Rc<dyn WorkerUnderTest>
    }))
}
