//! Facts every reservations checker may read, kept once per run instead of once per checker.
//!
//! Terminology:
//! - *desk*: one replica's worker side ([`Desk`]): its calls in flight, what it holds, its
//!   clock, stop, run and kill, derived from its own events.
//! - *before view*: each replica's desk as of the events before the one being judged. Every
//!   desk reader judges first and observes after ("judge, then observe"), so this is the only
//!   view they need; the set feeds the desks after all checkers have read the event.
//!
//! Eleven checkers used to keep their own copy of every desk.

use leasesim_invariants::PerReplica;

use super::track::{Desk, Stamp};
use crate::Reservations;
use crate::events::ReplicaId;

/// Every replica's desk, as of the events before the one being judged.
#[derive(Debug, Default)]
pub struct Facts {
    desks: PerReplica<Desk>,
}

impl Facts {
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
        if let Some(replica) = event.event.replica {
            self.desks.at(replica);
            debug_assert!(self.desks.get(replica).is_some());
        }
    }

    fn leave(&mut self, event: &Stamp) {
        if let Some(replica) = event.event.replica {
            self.desks.at(replica).observe(event);
        }
    }
}
