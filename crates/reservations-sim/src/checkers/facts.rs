//! Facts every reservations checker may read, kept once per run instead of once per checker.
//!
//! Terminology:
//! - *desk*: one replica's worker side ([`Desk`]): its calls in flight, what it holds, its
//!   clock, stop, run and kill, derived from its own worker-side events (`WORKER_EVENTS`).
//! - *before view*: each replica's desk as of the events before the one being judged. Every
//!   desk reader judges first and observes after ("judge, then observe"), so this is the only
//!   view they need; the set feeds the desks after all checkers have read the event.
//!
//! - *ledger*: the store side, per reservation ([`Ledger`]), from the agents' notes and what
//!   the store applied. The store-side checkers judge against the ledger before the event
//!   (`ledger`); `liveness` also follows holds after it (`ledger_after`), so both views are
//!   kept: the after view is fed as an event enters, the before view as it leaves.
//!
//! Kept once per run, they spare eleven checkers a copy of every desk and six a copy of the
//! ledger.

use leasesim_invariants::PerReplica;

use super::WORKER_EVENTS;
use super::track::{Desk, Ledger, Stamp};
use crate::Reservations;
use crate::events::ReplicaId;

/// Every replica's desk, as of the events before the one being judged.
#[derive(Debug, Default)]
pub struct Facts {
    desks: PerReplica<Desk>,
    /// The ledger before the event being judged.
    before: Ledger,
    /// The ledger including the event being judged.
    after: Ledger,
}

impl Facts {
    /// The store side before the event being judged.
    pub fn ledger(&self) -> &Ledger {
        &self.before
    }

    /// The store side including the event being judged.
    pub fn ledger_after(&self) -> &Ledger {
        &self.after
    }

    /// `replica`'s desk before the event being judged (an empty desk for a replica no event
    /// has named yet).
    pub fn desk(&self, replica: ReplicaId) -> &Desk {
        // invariant: `enter` created the desk of every replica an event names.
        self.desks
            .get(replica)
            .expect("the facts were entered with this replica's event")
    }
}

impl leasesim_invariants::Facts<Reservations> for Facts {
    fn enter(&mut self, event: &Stamp) {
        self.after.observe(event);
        if let Some(replica) = event.event.replica {
            self.desks.at(replica);
            debug_assert!(self.desks.get(replica).is_some());
        }
    }

    fn leave(&mut self, event: &Stamp) {
        self.before.observe(event);
        // A desk takes in the worker-side events only, as every desk reader's own desk did
        // (its `recent` events become a violation's context).
        if let Some(replica) = event.event.replica
            && event.event.kind.bit() & WORKER_EVENTS != 0
        {
            self.desks.at(replica).observe(event);
        }
        // invariant: between events the two views of the ledger agree.
        debug_assert_eq!(self.before.len(), self.after.len());
    }
}
