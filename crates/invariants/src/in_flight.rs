//! Which faults met a call of each kind in flight: coverage every system shares.
//!
//! Terminology:
//! - *in flight*: a call the worker sent and has not yet received the answer of (from its
//!   `Call` event to its `Answered` event).
//! - *landing*: what can meet a call in flight: `stop()` called on its replica, its process
//!   paused, its clock jumping, the call refused before it was applied, lost before it was
//!   applied, or applied with its reply lost ([`Landing`]). `Called` counts the calls themselves, so a campaign can tell a
//!   call kind no run made from one no fault met.
//! - *cell*: one (landing, operation) pair. A run reaches the cell when that landing met a
//!   call of that operation; a cell no run of a campaign reached is a gap: that interleaving
//!   of a fault with that call was never tested.
//!
//! A call whose future the worker's process dropped without an answer (a killed process)
//! stays in flight here until its replica restarts: the events show no end of it.
//!
//! Timing bugs hide exactly there (a stop during a renewal, a pause during a release, a lost
//! reply of a delete), so each system's own situations are not the only measure: the cells
//! are the same for every system and cost no system any code.

use leasesim_events::{Event, EventKind, OpSet, Stamped, Vocabulary};

use crate::track::PerReplica;

/// What can meet a call in flight (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Landing {
    /// The call was made (the row's total, not a fault).
    Called,
    Stop,
    Pause,
    ClockJump,
    Rejected,
    RequestLost,
    ReplyLost,
}

impl Landing {
    pub const ALL: [Landing; 7] = [
        Landing::Called,
        Landing::Stop,
        Landing::Pause,
        Landing::ClockJump,
        Landing::Rejected,
        Landing::RequestLost,
        Landing::ReplyLost,
    ];

    /// Its column name in a campaign's summary.
    pub fn name(self) -> &'static str {
        match self {
            Landing::Called => "calls",
            Landing::Stop => "stop",
            Landing::Pause => "pause",
            Landing::ClockJump => "clock-jump",
            Landing::Rejected => "rejected",
            Landing::RequestLost => "request-lost",
            Landing::ReplyLost => "reply-lost",
        }
    }

    /// The cell's situation name for operation `op` (`stop-during-renew`).
    pub fn situation(self, op: &str) -> String {
        match self {
            Landing::Called => format!("called-{op}"),
            Landing::Stop => format!("stop-during-{op}"),
            Landing::Pause => format!("pause-during-{op}"),
            Landing::ClockJump => format!("clock-jump-during-{op}"),
            Landing::Rejected => format!("rejected-{op}"),
            Landing::RequestLost => format!("request-lost-{op}"),
            Landing::ReplyLost => format!("reply-lost-{op}"),
        }
    }

    /// The index of cell (`self`, the operation at `op_index` of `ops` operations) in a
    /// run's bits and a campaign's tally.
    pub fn cell(self, op_index: usize, ops: usize) -> usize {
        let index = self as usize * ops + op_index;
        // invariant: a system's cells fit the bitset (checked once per run, in `default`).
        debug_assert!(op_index < ops && index < 128);
        index
    }

    /// The bit of that cell.
    pub fn bit(self, op_index: usize, ops: usize) -> u128 {
        1 << self.cell(op_index, ops)
    }
}

/// The cells one run reached (see the module docs).
#[derive(Debug)]
pub struct InFlightCoverage<V: Vocabulary> {
    reached: u128,
    /// Per replica, its calls in flight: (call id, operation).
    flights: PerReplica<Vec<(u64, V::Op)>>,
}

impl<V: Vocabulary> Default for InFlightCoverage<V> {
    fn default() -> Self {
        let ops = V::Op::ALL.len();
        assert!(
            ops * Landing::ALL.len() <= 128,
            "{ops} operations: at most 18 fit the in-flight cells"
        );
        InFlightCoverage {
            reached: 0,
            flights: PerReplica::default(),
        }
    }
}

impl<V: Vocabulary> InFlightCoverage<V> {
    fn reach(&mut self, landing: Landing, op: V::Op) {
        self.reached |= landing.bit(op.index(), V::Op::ALL.len());
    }

    /// Every call of `replica` in flight meets `landing`.
    fn meet_all(&mut self, replica: leasesim_events::ReplicaId, landing: Landing) {
        let ops = V::Op::ALL.len();
        let bits = self.flights.at(replica).iter();
        let met = bits.fold(0, |bits, &(_, op)| bits | landing.bit(op.index(), ops));
        self.reached |= met;
    }

    /// Reads one event of the run.
    pub fn on_event(&mut self, event: &Stamped<Event<V>>) {
        let Some(replica) = event.event.replica else {
            return;
        };
        match &event.event.kind {
            EventKind::Call { call, request } => {
                let op = V::op(request);
                self.flights.at(replica).push((*call, op));
                self.reach(Landing::Called, op);
            }
            EventKind::Answered { call, .. } => {
                self.flights.at(replica).retain(|(c, _)| c != call);
            }
            EventKind::Rejected { op, .. } => self.reach(Landing::Rejected, *op),
            EventKind::RequestLost { op, .. } => self.reach(Landing::RequestLost, *op),
            EventKind::ReplyLost { call } => {
                let flight = self.flights.at(replica).iter().find(|(c, _)| c == call);
                if let Some(&(_, op)) = flight {
                    self.reach(Landing::ReplyLost, op);
                }
            }
            EventKind::StopCalled => self.meet_all(replica, Landing::Stop),
            EventKind::Paused { .. } => self.meet_all(replica, Landing::Pause),
            EventKind::ClockJumped { .. } => self.meet_all(replica, Landing::ClockJump),
            EventKind::Restarted => self.flights.at(replica).clear(),
            _ => {}
        }
    }

    /// The cells reached so far, as bits (see [`Landing::bit`]).
    pub fn reached(&self) -> u128 {
        self.reached
    }
}
