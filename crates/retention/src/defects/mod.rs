//! The retention system's defective workers, kept apart from the real core.
//!
//! Terminology:
//! - *defective worker*: the correct worker (`retention_worker::RetentionWorker`) with one named
//!   defect, or, for [`naive`], the five defects of the seed review together. Each is a type
//!   generic over the three ports, with the core's `new`, `run` and `stop`, and implements
//!   [`WorkerUnderTest`] on the simulated ports.
//! - *engine*: the shared implementation: a copy of the core's term logic with defect
//!   switches (*flaws*). Each worker module turns on exactly its own and documents precisely
//!   what differs; each switched place in the engine carries a `// defect(<name>):` comment.
//!   With no switch on, the engine reproduces the core's traces byte for byte (tested), so a
//!   harness verdict against a defective worker is due to its defect and nothing else.
//! - *catalogue*: [`DEFECTS`], one [`DefectInfo`] per worker (its CLI name, what is wrong,
//!   and the invariants expected to catch it), and [`factory`] to build one by name.
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

use leasesim_sim::WorkerInfo;

use crate::ports::{WorkerFactory, WorkerPorts, WorkerUnderTest, correct_worker};

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

/// One defective worker as the harness lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefectInfo {
    /// The worker's name on the command line (`--worker NAME`).
    pub name: &'static str,
    /// What is wrong with it, in one line.
    pub description: &'static str,
    /// The invariants expected to catch it, by name; the first is its specific one.
    pub caught_by: &'static [&'static str],
}

/// Every defective worker: `naive` first, then the seed review's five findings one by one,
/// then the extras (`stale-renewal` and `whole-batches` found by the contract audit of issue
/// 11, the last two by mutation testing).
pub const DEFECTS: &[DefectInfo] = &[
    naive::INFO,
    interval_renewal::INFO,
    stale_release::INFO,
    moving_cutoff::INFO,
    uncapped::INFO,
    unjoined_stop::INFO,
    early_cutoff::INFO,
    leaked_renewal::INFO,
    delete_after_loss::INFO,
    renew_error_no_release::INFO,
    acquired_token::INFO,
    leftover_release::INFO,
    stale_renewal::INFO,
    whole_batches::INFO,
    no_renewal::INFO,
    sleepy_stop::INFO,
];

/// Every worker of the retention system: `correct` (the production core) first, then the
/// defective ones.
pub fn workers() -> Vec<WorkerInfo> {
    let correct = WorkerInfo {
        name: "correct",
        defect: "the production worker core (retention-worker)",
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
    let build: fn(WorkerPorts) -> Rc<dyn WorkerUnderTest> = match name {
        naive::NAME => NaiveWorker::from_ports,
        interval_renewal::NAME => IntervalRenewalWorker::from_ports,
        stale_release::NAME => StaleReleaseWorker::from_ports,
        moving_cutoff::NAME => MovingCutoffWorker::from_ports,
        uncapped::NAME => UncappedWorker::from_ports,
        unjoined_stop::NAME => UnjoinedStopWorker::from_ports,
        early_cutoff::NAME => EarlyCutoffWorker::from_ports,
        leaked_renewal::NAME => LeakedRenewalWorker::from_ports,
        delete_after_loss::NAME => DeleteAfterLossWorker::from_ports,
        renew_error_no_release::NAME => RenewErrorNoReleaseWorker::from_ports,
        acquired_token::NAME => AcquiredTokenWorker::from_ports,
        leftover_release::NAME => LeftoverReleaseWorker::from_ports,
        stale_renewal::NAME => StaleRenewalWorker::from_ports,
        whole_batches::NAME => WholeBatchesWorker::from_ports,
        no_renewal::NAME => NoRenewalWorker::from_ports,
        sleepy_stop::NAME => SleepyStopWorker::from_ports,
        _ => return None,
    };
    Some(Rc::new(build))
}

#[cfg(test)]
mod faithful;
