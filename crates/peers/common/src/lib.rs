//! peers-common: what the holder-lock side-by-side shares across leasesim, madsim and turmoil.
//!
//! Terminology:
//! - *side*: one harness running the workload: leasesim, madsim or turmoil.
//! - *workload*: a holder-lock setting every side runs ([`workload`]): the builtin scenario
//!   `holder-long-jobs` (latency only), `holder-slow-release` with lost replies (slow
//!   releases, lost replies, pauses), or `holder-volatile` with store restarts only;
//!   `--workload NAME` picks one per process.
//! - *peer ports*: the production core's ports on a peer's runtime. A peer brings only its
//!   network (the [`holder_lock_worker::Store`] port, a client of the store node) and its
//!   timers ([`ports::PeerTime`]); the clock, the job, the token source and the replica's
//!   driver loop are shared ([`ports`], [`driver`]), so every side runs the same workers the
//!   same way.
//! - *recorder*: what a peer run did, as the holder-lock system's event stream, judged by the
//!   system's own checkers ([`recorder`]).
//! - *side checks*: what every side's binary must do on the store-restart workload, for each
//!   side's tests ([`side_checks`]).
//! - *figures*: runs per second, runs and CPU seconds to the first violation, replay, as JSON
//!   ([`measure`]).

pub mod cli;
pub mod driver;
pub mod figures;
pub mod measure;
pub mod ports;
pub mod recorder;
pub mod rng;
pub mod side_checks;
pub mod wire;
pub mod workers;
pub mod workload;
