//! leasesim-conformance: does a store behave like the model the worker was fuzzed against?
//!
//! Every invariant leasesim proves holds against simulated services. These drivers tie each
//! simulated model to a real store: they draw operation sequences (proptest), apply each
//! operation to the model and to the store under test, compare every answer and the state
//! after every step, and shrink a mismatch to a minimal sequence. Users run the same drivers
//! on their own adapters.
//!
//! Terminology:
//! - *case*: one drawn setup (configuration and rows) and one operation sequence.
//! - *step*: one operation of a case, resolved against what the callers hold (a token
//!   "r1's latest" becomes the number r1 last received) and applied to both sides.
//! - *mismatch*: the first step whose answer, or whose state afterwards, differs between the
//!   model and the store (or where the store failed); reported shrunk ([`Mismatch`]).
//! - *time*: deterministic: every operation takes `now_ms` explicitly and cases advance it by
//!   drawn steps, so expiries fall exactly where the case says, on both sides.
//!
//! One module per system: [`retention`] (the lease authority and the record store) and
//! [`holder_lock`] (the volatile key-value store with lifetimes) and [`reservations`] (holds,
//! claims and the guarded transition) and [`work_items`] (claimed items with a store-wide
//! fencing token and fenced writes). A later system adds its own module with its store
//! port's operations.

use std::fmt;
use std::time::Duration;

pub mod holder_lock;
pub mod reservations;
pub mod retention;
pub mod work_items;

pub use proptest;

/// Wall time of a driver's run, for its report (sequences per second); it never reaches a
/// case, whose time is the case's own.
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
pub(crate) struct Stopwatch(std::time::Instant);

#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
impl Stopwatch {
    pub(crate) fn start() -> Stopwatch {
        Stopwatch(std::time::Instant::now())
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
}

/// How many cases a driver runs, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Cases to run (each a fresh store).
    pub cases: u32,
    /// The most operations of one case.
    pub max_steps: usize,
    /// Callers (connections) sharing one store; operations interleave them.
    pub callers: usize,
    /// Seeds the draws: the same seed draws the same cases.
    pub seed: u64,
    /// The most shrinking steps after a mismatch.
    pub max_shrink_iters: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            cases: 256,
            max_steps: 40,
            callers: 3,
            seed: 0,
            max_shrink_iters: 4_096,
        }
    }
}

impl Config {
    /// This configuration with `LEASESIM_CONFORMANCE_CASES` and `LEASESIM_CONFORMANCE_SEED`
    /// applied where set (CI runs more cases than a local `cargo test`).
    pub fn with_env(mut self) -> Config {
        let number = |key: &str| std::env::var(key).ok()?.trim().parse::<u64>().ok();
        if let Some(cases) = number("LEASESIM_CONFORMANCE_CASES") {
            self.cases = u32::try_from(cases).unwrap_or(u32::MAX).max(1);
        }
        if let Some(seed) = number("LEASESIM_CONFORMANCE_SEED") {
            self.seed = seed;
        }
        self
    }

    fn runner(&self) -> proptest::test_runner::TestRunner {
        use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
        let config = proptest::test_runner::Config {
            cases: self.cases,
            max_shrink_iters: self.max_shrink_iters,
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        };
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&self.seed.to_le_bytes());
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed))
    }
}

/// What a clean run checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Cases run (each a fresh store and one sequence).
    pub cases: u64,
    /// Operations applied to both sides, over all cases.
    pub steps: u64,
    /// Wall time of the whole run.
    pub elapsed: Duration,
}

impl Report {
    /// Sequences (cases) checked per second.
    pub fn cases_per_s(&self) -> f64 {
        self.cases as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} sequences ({} operations) agreed with the model in {:.2} s ({:.0} sequences/s)",
            self.cases,
            self.steps,
            self.elapsed.as_secs_f64(),
            self.cases_per_s()
        )
    }
}

/// The first disagreement between the model and a store, on the shrunk case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The case's setup, in words.
    pub setup: String,
    /// Every step of the shrunk case up to the mismatch, one line each (the last one
    /// differs).
    pub steps: Vec<String>,
    /// What differed, in one sentence.
    pub difference: String,
    /// Cases run before the first failing one.
    pub cases_before: u64,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "the store disagrees with the model: {}", self.difference)?;
        writeln!(f, "setup: {}", self.setup)?;
        writeln!(f, "shrunk sequence ({} steps):", self.steps.len())?;
        for line in &self.steps {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Mismatch {}
