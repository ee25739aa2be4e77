//! The reservations system's store port (design 002): holds with deadlines, claims, and the
//! guarded transition, as one connection sees them, and the simulated model behind it.
//!
//! Terminology:
//! - *hold*: one reservation row: its deadline (`hold_until_ms`), its status (held, expired,
//!   consumed), its claim (a token and the instant it runs out; kept after it runs out until a
//!   release frees it), whether its record is malformed, whether a dead letter parked it.
//! - *guarded transition*: held and due becomes expired, with the check inside the statement
//!   (`UPDATE ... SET status = 'expired' WHERE id = ? AND status = 'held' AND hold_until <=
//!   ?`), so a consumed or early hold is never expired.
//! - *observed answer*: every call answers the [`Applied`] value the simulation records:
//!   which ids a claim took, `Expired`, `AlreadyDone` or `NotEligible` with the status found,
//!   `Released { freed }`, ... read inside the same transaction as the statement.
//! - *now*: every call takes the store's time `now_ms`; a request's own `now` (`Some`) is the
//!   instant the worker asks eligibility at, `None` the store's time.
//! - *agents*: the world's callers beside the worker: they place holds and consume them.

use std::cell::RefCell;
use std::rc::Rc;

/// The vocabulary of the port, re-exported so an adapter needs no other crate.
pub use leasesim_reservations::events::{Applied, IdList, LetterView, Request, StatusView};
use leasesim_reservations::services::apply_at;
use leasesim_reservations::store::Store;

use crate::StoreError;

/// A fresh store: its holds, placed in order (ids 1, 2, ...): `(hold_until_ms, malformed)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReservationSetup {
    pub holds: Vec<(u64, bool)>,
}

/// One hold as a store holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldState {
    pub id: u32,
    pub hold_until_ms: u64,
    pub status: StatusView,
    /// The claim's token and end, live or run out, until a release frees it.
    pub claim: Option<(u64, u64)>,
    pub malformed: bool,
    pub parked: bool,
}

/// One caller's connection to a reservation store. Every call is atomic.
pub trait ReservationConnection {
    /// Applies a worker's `request` at store time `now_ms`: what the store did.
    fn apply(&mut self, request: Request, now_ms: u64) -> Result<Applied, StoreError>;
    /// An agent places a hold: its id (the next one).
    fn place(&mut self, hold_until_ms: u64, malformed: bool) -> Result<u32, StoreError>;
    /// An agent consumes `id`, allowed while it is held: its deadline, or the status that
    /// refused it. An unknown id is refused as an error.
    fn consume(&mut self, id: u32) -> Result<Result<u64, StatusView>, StoreError>;
    /// Every hold, by id.
    fn state(&mut self) -> Result<Vec<HoldState>, StoreError>;
}

impl<C: ReservationConnection + ?Sized> ReservationConnection for Box<C> {
    fn apply(&mut self, request: Request, now_ms: u64) -> Result<Applied, StoreError> {
        (**self).apply(request, now_ms)
    }
    fn place(&mut self, hold_until_ms: u64, malformed: bool) -> Result<u32, StoreError> {
        (**self).place(hold_until_ms, malformed)
    }
    fn consume(&mut self, id: u32) -> Result<Result<u64, StatusView>, StoreError> {
        (**self).consume(id)
    }
    fn state(&mut self) -> Result<Vec<HoldState>, StoreError> {
        (**self).state()
    }
}

/// A kind of reservation store that opens fresh stores: what a conformance driver is given.
pub trait ReservationStore {
    type Connection: ReservationConnection;

    /// A fresh store holding exactly `setup`'s holds, and `callers` connections to it.
    fn open(
        &mut self,
        setup: &ReservationSetup,
        callers: usize,
    ) -> Result<Vec<Self::Connection>, StoreError>;
}

/// The simulated store behind the port, applied through the simulation's own function
/// ([`apply_at`]).
#[derive(Debug, Default)]
pub struct ReservationModel;

/// One caller's connection to a [`ReservationModel`] store (callers share the store).
#[derive(Clone, Debug)]
pub struct ModelConnection {
    store: Rc<RefCell<Store>>,
}

impl ReservationStore for ReservationModel {
    type Connection = ModelConnection;

    fn open(
        &mut self,
        setup: &ReservationSetup,
        callers: usize,
    ) -> Result<Vec<ModelConnection>, StoreError> {
        let mut store = Store::new();
        for &(hold_until_ms, malformed) in &setup.holds {
            store.place(hold_until_ms, malformed);
        }
        let shared = ModelConnection {
            store: Rc::new(RefCell::new(store)),
        };
        Ok(vec![shared; callers])
    }
}

impl ReservationConnection for ModelConnection {
    fn apply(&mut self, request: Request, now_ms: u64) -> Result<Applied, StoreError> {
        Ok(apply_at(&mut self.store.borrow_mut(), request, now_ms))
    }

    fn place(&mut self, hold_until_ms: u64, malformed: bool) -> Result<u32, StoreError> {
        Ok(self.store.borrow_mut().place(hold_until_ms, malformed))
    }

    fn consume(&mut self, id: u32) -> Result<Result<u64, StatusView>, StoreError> {
        let mut store = self.store.borrow_mut();
        if store.row(id).is_none() {
            return Err(StoreError::Refused(format!("no hold h{id}")));
        }
        Ok(store.consume(id))
    }

    fn state(&mut self) -> Result<Vec<HoldState>, StoreError> {
        let store = self.store.borrow();
        let holds = (1..=u32::try_from(store.len()).expect("fewer than 2^32 holds"))
            .map(|id| {
                let row = store.row(id).expect("ids 1..=len exist");
                HoldState {
                    id,
                    hold_until_ms: row.hold_until_ms,
                    status: row.status,
                    claim: row.claim.map(|claim| (claim.token, claim.until_ms)),
                    malformed: row.malformed,
                    parked: row.parked,
                }
            })
            .collect();
        Ok(holds)
    }
}

/// A status as SQL stores it.
pub fn status_name(status: StatusView) -> &'static str {
    match status {
        StatusView::Held => "held",
        StatusView::Expired => "expired",
        StatusView::Consumed => "consumed",
    }
}

/// A status SQL stored.
pub fn status_of(name: &str) -> Result<StatusView, StoreError> {
    match name {
        "held" => Ok(StatusView::Held),
        "expired" => Ok(StatusView::Expired),
        "consumed" => Ok(StatusView::Consumed),
        other => Err(StoreError::Refused(format!("unknown status {other:?}"))),
    }
}

/// How a SQL adapter turns what its statements did into the observed answer, from the hold
/// row as the transaction read (and locked) it before the statement.
pub(crate) mod observe {
    use super::HoldState;
    use leasesim_reservations::events::{Applied, StatusView};

    /// The guarded transition changed `changed` rows of hold `before`.
    pub(crate) fn expire(before: &HoldState, changed: u64) -> Applied {
        let (id, hold_until_ms) = (before.id, before.hold_until_ms);
        match (changed, before.status) {
            (1.., _) => Applied::Expired { id, hold_until_ms },
            (0, StatusView::Expired) => Applied::AlreadyDone { id },
            (0, status) => Applied::NotEligible {
                id,
                status,
                hold_until_ms,
            },
        }
    }

    /// The claim a write over hold `before` replaced: its token, if it was live at `now_ms`.
    pub(crate) fn replaced(before: &HoldState, now_ms: u64) -> Option<u64> {
        before
            .claim
            .filter(|&(_, until_ms)| until_ms > now_ms)
            .map(|(token, _)| token)
    }
}
