//! The retention system's defective workers, kept apart from the real core.
//!
//! Terminology:
//! - *defective worker*: the correct worker (`retention_worker::RetentionWorker`) with one named
//!   defect, or, for [`naive`], the five defects of the design review together. Each is a type
//!   generic over the three ports, with the core's `new`, `run` and `stop`, and implements
//!   [`WorkerUnderTest`](crate::ports::WorkerUnderTest) on the simulated ports.
//! - *engine*: the shared implementation: a copy of the core's term logic with defect
//!   switches (*flaws*). Each worker module turns on exactly its own and documents precisely
//!   what differs; each switched place in the engine carries a `// defect(<name>):` comment.
//!   With no switch on, the engine reproduces the core's traces byte for byte (tested), so a
//!   harness verdict against a defective worker is due to its defect and nothing else.
//! - *catalogue*: [`DEFECTS`], one `Defect` per worker (its CLI name, what is wrong,
//!   and the invariants expected to catch it), and `Workers::factory` (in `ports.rs`) to build one by name.
//!
//! The production core never carries these switches; they exist only in this module.

mod declare;
mod engine;
mod flaws;

pub mod acquired_token;
pub mod delete_after_loss;
pub mod early_cutoff;
pub mod interval_renewal;
pub mod leaked_renewal;
pub mod leftover_release;
pub mod moving_cutoff;
pub mod naive;
pub mod no_renewal;
pub mod renew_error_no_release;
pub mod sleepy_stop;
pub mod stale_release;
pub mod stale_renewal;
pub mod uncapped;
pub mod unjoined_stop;
pub mod whole_batches;

use std::rc::Rc;

use leasesim_sim::Defect;

use crate::ports::{AnyWorker, WorkerPorts};

pub use acquired_token::AcquiredTokenWorker;
pub use delete_after_loss::DeleteAfterLossWorker;
pub use early_cutoff::EarlyCutoffWorker;
pub use interval_renewal::IntervalRenewalWorker;
pub use leaked_renewal::LeakedRenewalWorker;
pub use leftover_release::LeftoverReleaseWorker;
pub use moving_cutoff::MovingCutoffWorker;
pub use naive::NaiveWorker;
pub use no_renewal::NoRenewalWorker;
pub use renew_error_no_release::RenewErrorNoReleaseWorker;
pub use sleepy_stop::SleepyStopWorker;
pub use stale_release::StaleReleaseWorker;
pub use stale_renewal::StaleRenewalWorker;
pub use uncapped::UncappedWorker;
pub use unjoined_stop::UnjoinedStopWorker;
pub use whole_batches::WholeBatchesWorker;

/// Builds a defective worker on one replica's ports.
pub type BuildWorker = fn(WorkerPorts) -> Rc<AnyWorker>;

/// Every defective worker: `naive` first, then the design review's five findings one by one,
/// then the extras (`stale-renewal` and `whole-batches` for clauses of the contract audit,
/// `no-renewal` and `sleepy-stop` for the mutants only `renewal-due` and `stop-prompt` catch).
pub const DEFECTS: &[Defect<BuildWorker>] = &[
    Defect {
        info: naive::INFO,
        build: NaiveWorker::from_ports,
    },
    Defect {
        info: interval_renewal::INFO,
        build: IntervalRenewalWorker::from_ports,
    },
    Defect {
        info: stale_release::INFO,
        build: StaleReleaseWorker::from_ports,
    },
    Defect {
        info: moving_cutoff::INFO,
        build: MovingCutoffWorker::from_ports,
    },
    Defect {
        info: uncapped::INFO,
        build: UncappedWorker::from_ports,
    },
    Defect {
        info: unjoined_stop::INFO,
        build: UnjoinedStopWorker::from_ports,
    },
    Defect {
        info: early_cutoff::INFO,
        build: EarlyCutoffWorker::from_ports,
    },
    Defect {
        info: leaked_renewal::INFO,
        build: LeakedRenewalWorker::from_ports,
    },
    Defect {
        info: delete_after_loss::INFO,
        build: DeleteAfterLossWorker::from_ports,
    },
    Defect {
        info: renew_error_no_release::INFO,
        build: RenewErrorNoReleaseWorker::from_ports,
    },
    Defect {
        info: acquired_token::INFO,
        build: AcquiredTokenWorker::from_ports,
    },
    Defect {
        info: leftover_release::INFO,
        build: LeftoverReleaseWorker::from_ports,
    },
    Defect {
        info: stale_renewal::INFO,
        build: StaleRenewalWorker::from_ports,
    },
    Defect {
        info: whole_batches::INFO,
        build: WholeBatchesWorker::from_ports,
    },
    Defect {
        info: no_renewal::INFO,
        build: NoRenewalWorker::from_ports,
    },
    Defect {
        info: sleepy_stop::INFO,
        build: SleepyStopWorker::from_ports,
    },
];

#[cfg(test)]
mod faithful;
