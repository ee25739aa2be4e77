//! The toy's worker core: what would be the production crate (it names no runtime and no
//! harness type; only `futures` and its port trait), and its one defect.
//!
//! Terminology:
//! - *port*: [`CounterPort`], the worker's only door to the world.
//! - *round*: one `run()`: claim; if granted, exactly one bump with that claim's token.
//! - *stop*: no new call after it; it returns once the round in flight has ended.
//! - *flaw*: a defect switch; the correct worker has none. Each switched place carries a
//!   `// defect(NAME):` comment.

use std::cell::Cell;
use std::future::Future;

use futures::lock::Mutex;

use super::events::RoundEnd;

/// Why a call gave the worker an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The network failed (refused, or no answer in time).
    Network,
    /// The service's fence refused the bump.
    Fenced,
}

/// The counter service, as the worker sees it.
pub trait CounterPort {
    /// `Some(token)`: the claim is granted; `None`: another claim is live.
    fn claim(&self) -> impl Future<Output = Result<Option<u64>, CallError>>;
    /// Bumps under `token`; the counter's new value.
    fn bump(&self, token: u64) -> impl Future<Output = Result<u64, CallError>>;
}

/// The defects a toy worker may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flaw {
    /// `blind-bump`: after a refused claim, bump anyway with the last token this worker was
    /// ever granted (a stale worker committing).
    BlindBump,
    /// `double-bump`: bump twice under one claim.
    DoubleBump,
}

/// The fenced-counter worker (correct when it has no flaw).
pub struct Bumper<P> {
    port: P,
    flaw: Option<Flaw>,
    stopped: Cell<bool>,
    /// Held for the whole round, so `stop()` can wait for the round in flight.
    round: Mutex<()>,
    /// The last token this worker was granted (only the defect reads it).
    last_token: Cell<Option<u64>>,
}

impl<P: CounterPort> Bumper<P> {
    pub fn new(port: P, flaw: Option<Flaw>) -> Bumper<P> {
        Bumper {
            port,
            flaw,
            stopped: Cell::new(false),
            round: Mutex::new(()),
            last_token: Cell::new(None),
        }
    }

    /// One round: claim, then one bump with the granted token.
    pub async fn run(&self) -> RoundEnd {
        let _round = self.round.lock().await;
        if self.stopped.get() {
            return RoundEnd::Stopped;
        }
        let token = match self.port.claim().await {
            Ok(Some(token)) => token,
            Ok(None) | Err(_) => return self.refused().await,
        };
        self.last_token.set(Some(token));
        if self.stopped.get() {
            return RoundEnd::Stopped;
        }
        let bumped = self.port.bump(token).await;
        if self.flaw == Some(Flaw::DoubleBump) {
            // defect(double-bump): the correct worker sends one bump per claim.
            let _ = self.port.bump(token).await;
        }
        match bumped {
            Ok(_) => RoundEnd::Bumped,
            Err(CallError::Network | CallError::Fenced) => RoundEnd::BumpFailed,
        }
    }

    /// A refused claim ends the round; the defective worker bumps anyway.
    async fn refused(&self) -> RoundEnd {
        // defect(blind-bump): the correct worker returns here without a call.
        let blind = self.flaw == Some(Flaw::BlindBump);
        if let Some(token) = self.last_token.get().filter(|_| blind) {
            let _ = self.port.bump(token).await;
        }
        RoundEnd::Refused
    }

    /// Prevents new calls, then waits for the round in flight to end.
    pub async fn stop(&self) {
        self.stopped.set(true);
        let _quiet = self.round.lock().await;
        // invariant: after stop, no round is running and none will start.
        debug_assert!(self.stopped.get());
    }
}
