//! The work-items system's item store port (design 001): items claimed with a lease and a
//! store-wide fencing token, and fenced writes, as one connection sees them; and the
//! simulated model behind the same port.
//!
//! Terminology:
//! - *item row*: one work item ([`ItemRow`]): its state (pending, claimed, released, done,
//!   failed), its last claimant and that claim's token and expiry, its attempts, its last
//!   error, the claim that wrote its end mark, its size in chunks.
//! - *token*: every granted claim takes the next number of one store-wide counter, so a token
//!   names one claim and an item's token grows on every grant.
//! - *live claim*: the item is claimed and `now_ms < expires_at_ms`.
//! - *claimable*: pending, released, or claimed with the claim expired; never done or failed.
//! - *fenced write*: renew, apply a chunk, done, release, fail: applied only while the token
//!   shown is the item's live claim (the check is inside the statement); a refused write
//!   answers `LeaseLost` with the live token, if any. A store set up with `fencing` off skips
//!   that check for applies and done-marks (only to show why it is needed).
//! - *repeat*: the claim that wrote an end mark writing the same mark again: answered as a
//!   success that changes nothing (a retry after a lost reply succeeds).
//! - *applied chunk*: one chunk of an item's local effect, recorded once, by the first claim
//!   that applied it; applying it again answers `fresh: false`.
//! - *observed answer*: every call answers the [`Applied`] value the simulation records at
//!   its apply instant (which token was granted and what the item was before, which claim
//!   was live when a write was refused, ...), read inside the same transaction as the
//!   statement; the worker's answer follows from it ([`answer_of`]).
//! - *now*: every call takes the store's time `now_ms`; the store compares expiries with it,
//!   so a test decides every expiry.

use std::cell::RefCell;
use std::rc::Rc;

/// The vocabulary of the port, re-exported so an adapter needs no other crate.
pub use leasesim_events::ReplicaId;
pub use leasesim_work_items::events::{
    Applied, ErrorCode, ItemState, Mark, Op, Prior, Request, StatusView,
};
pub use leasesim_work_items::services::answer_of;
use leasesim_work_items::services::apply_at;
pub use leasesim_work_items::settings::MAX_CHUNKS;
use leasesim_work_items::store::ItemStore;

use crate::StoreError;

/// A fresh store: the run's items as the dispatcher creates them (item `n` has `sizes[n]`
/// chunks, 1 to [`MAX_CHUNKS`]), all pending; and whether fenced applies and done-marks
/// check the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemSetup {
    pub sizes: Vec<u32>,
    pub fencing: bool,
}

impl Default for ItemSetup {
    fn default() -> ItemSetup {
        ItemSetup {
            sizes: Vec::new(),
            fencing: true,
        }
    }
}

/// One item as a store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemRow {
    pub item: u32,
    pub state: ItemState,
    /// The last claimant's owner id (`r1`, ...), kept after its claim ends.
    pub owner: Option<String>,
    /// The last claim's token (0: never claimed).
    pub token: u64,
    pub expires_at_ms: u64,
    pub attempts: u32,
    pub last_error: Option<ErrorCode>,
    /// The claim that wrote the current end mark (0: none).
    pub marked_by: u64,
    pub chunks: u32,
}

impl ItemRow {
    /// The live claim's token at `now_ms`, if any.
    pub fn live(&self, now_ms: u64) -> Option<u64> {
        (self.state == ItemState::Claimed && now_ms < self.expires_at_ms).then_some(self.token)
    }
}

/// What an item store holds at an instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ItemsState {
    /// Every item, by number.
    pub items: Vec<ItemRow>,
    /// Every applied chunk as `(item, chunk)`, in order.
    pub applied: Vec<(u32, u32)>,
}

/// One caller's connection to an item store. Every call is atomic.
pub trait WorkItemConnection {
    /// Applies `owner`'s store `request` at store time `now_ms`: what the store did. A
    /// provider request (`ProviderApply`, `Lookup`) or an unknown item is refused. Requests
    /// are a worker's: a lease of at least 1 ms, a chunk below the item's size (the model
    /// asserts the first and does not check the second).
    fn apply(
        &mut self,
        owner: ReplicaId,
        request: Request,
        now_ms: u64,
    ) -> Result<Applied, StoreError>;
    /// Every item, and every applied chunk.
    fn state(&mut self) -> Result<ItemsState, StoreError>;
}

impl<C: WorkItemConnection + ?Sized> WorkItemConnection for Box<C> {
    fn apply(
        &mut self,
        owner: ReplicaId,
        request: Request,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        (**self).apply(owner, request, now_ms)
    }
    fn state(&mut self) -> Result<ItemsState, StoreError> {
        (**self).state()
    }
}

/// A kind of item store that opens fresh stores: what a conformance driver is given.
pub trait WorkItemStore {
    type Connection: WorkItemConnection;

    /// A fresh store holding exactly `setup`'s items (numbered from 0, all pending, no token
    /// handed out yet), and `callers` connections to it.
    fn open(
        &mut self,
        setup: &ItemSetup,
        callers: usize,
    ) -> Result<Vec<Self::Connection>, StoreError>;
}

/// The simulated item store behind the port, applied through the simulation's own function
/// ([`apply_at`]).
#[derive(Debug, Default)]
pub struct WorkItemModel;

/// One caller's connection to a [`WorkItemModel`] store (callers share the store).
#[derive(Clone, Debug)]
pub struct ModelConnection {
    store: Rc<RefCell<ItemStore>>,
}

impl WorkItemStore for WorkItemModel {
    type Connection = ModelConnection;

    fn open(
        &mut self,
        setup: &ItemSetup,
        callers: usize,
    ) -> Result<Vec<ModelConnection>, StoreError> {
        check_sizes(&setup.sizes)?;
        let shared = ModelConnection {
            store: Rc::new(RefCell::new(ItemStore::new(&setup.sizes, setup.fencing))),
        };
        Ok(vec![shared; callers])
    }
}

/// Refuses a setup with an item of no chunk or of more than [`MAX_CHUNKS`] (the simulation's
/// bound: the model keeps an item's applied chunks in a 64-bit set).
pub fn check_sizes(sizes: &[u32]) -> Result<(), StoreError> {
    let odd = sizes
        .iter()
        .position(|&chunks| !(1..=MAX_CHUNKS).contains(&chunks));
    match odd {
        Some(item) => Err(StoreError::Refused(format!(
            "item {item} has {} chunks: every item has 1 to {MAX_CHUNKS}",
            sizes[item]
        ))),
        None => Ok(()),
    }
}

/// The refusal of a request that is not the store's.
pub fn not_a_store_request(request: &Request) -> StoreError {
    StoreError::Refused(format!(
        "{request:?} is the provider's, not the item store's"
    ))
}

/// The refusal of a request naming an item the store does not hold.
pub fn no_such_item(item: u32) -> StoreError {
    StoreError::Refused(format!("no item {item}"))
}

impl WorkItemConnection for ModelConnection {
    fn apply(
        &mut self,
        owner: ReplicaId,
        request: Request,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let mut store = self.store.borrow_mut();
        if let Some(item) = request.item().filter(|&item| item >= store.len()) {
            return Err(no_such_item(item));
        }
        apply_at(&mut store, owner, request, now_ms).ok_or_else(|| not_a_store_request(&request))
    }

    fn state(&mut self) -> Result<ItemsState, StoreError> {
        let store = self.store.borrow();
        let mut state = ItemsState::default();
        for item in 0..store.len() {
            let record = store.record(item);
            state.items.push(ItemRow {
                item,
                state: record.state,
                owner: record.owner.map(ReplicaId::owner_id),
                token: record.token,
                expires_at_ms: record.expires_at_ms,
                attempts: record.attempts,
                last_error: record.last_error,
                marked_by: record.marked_by,
                chunks: record.chunks,
            });
            let chunks = (0..64u32).filter(|&chunk| record.applied & (1u64 << chunk) != 0);
            state.applied.extend(chunks.map(|chunk| (item, chunk)));
        }
        Ok(state)
    }
}

/// A state as SQL stores it.
pub fn state_name(state: ItemState) -> &'static str {
    match state {
        ItemState::Pending => "pending",
        ItemState::Claimed => "claimed",
        ItemState::Released => "released",
        ItemState::Done => "done",
        ItemState::Failed => "failed",
    }
}

/// A state SQL stored.
pub fn state_of(name: &str) -> Result<ItemState, StoreError> {
    Ok(match name {
        "pending" => ItemState::Pending,
        "claimed" => ItemState::Claimed,
        "released" => ItemState::Released,
        "done" => ItemState::Done,
        "failed" => ItemState::Failed,
        other => return Err(StoreError::Refused(format!("unknown item state {other:?}"))),
    })
}

/// An error as SQL stores it: `rejected:claim`, `timeout:apply`, `provider_refused`,
/// `stopped`.
pub fn error_name(error: ErrorCode) -> String {
    use leasesim_events::OpSet;
    match error {
        ErrorCode::Rejected(op) => format!("rejected:{}", op.key()),
        ErrorCode::Timeout(op) => format!("timeout:{}", op.key()),
        ErrorCode::ProviderRefused => "provider_refused".into(),
        ErrorCode::Stopped => "stopped".into(),
    }
}

/// An error SQL stored.
pub fn error_of(name: &str) -> Result<ErrorCode, StoreError> {
    use leasesim_events::OpSet;
    let unknown = || StoreError::Refused(format!("unknown item error {name:?}"));
    let op_of = |key: &str| Op::ALL.iter().copied().find(|op| op.key() == key);
    Ok(match name.split_once(':') {
        Some(("rejected", key)) => ErrorCode::Rejected(op_of(key).ok_or_else(unknown)?),
        Some(("timeout", key)) => ErrorCode::Timeout(op_of(key).ok_or_else(unknown)?),
        Some(_) => return Err(unknown()),
        None if name == "provider_refused" => ErrorCode::ProviderRefused,
        None if name == "stopped" => ErrorCode::Stopped,
        None => return Err(unknown()),
    })
}

/// The state an end mark writes.
pub fn marked_state(mark: Mark) -> ItemState {
    match mark {
        Mark::Done => ItemState::Done,
        Mark::Released => ItemState::Released,
        Mark::Failed => ItemState::Failed,
    }
}

/// How a SQL adapter turns what its statements did into the observed answer, from the item
/// row as its transaction read (and locked) it before the statement. The statement decides
/// whether anything is written; the read only tells which answer that is.
pub(crate) mod observe {
    use super::{Applied, ItemRow, ItemState, Mark, Prior, marked_state};

    /// What a granted claim returned: token, expiry, attempts, chunks.
    pub(crate) type Granted = (u64, u64, u32, u32);

    /// A claim of `before` at `now_ms`: granted (the statement returned the new claim), or
    /// refused.
    pub(crate) fn claim(before: &ItemRow, granted: Option<Granted>, now_ms: u64) -> Applied {
        let item = before.item;
        let Some((token, expires_at_ms, attempt, chunks)) = granted else {
            return match before.state {
                state @ (ItemState::Done | ItemState::Failed) => Applied::Closed { item, state },
                _ => Applied::Busy {
                    item,
                    token: before.token,
                },
            };
        };
        let prior = match (before.state, before.live(now_ms)) {
            (ItemState::Pending, _) => Prior::Fresh,
            (ItemState::Released, _) => Prior::Released {
                token: before.marked_by,
            },
            (ItemState::Claimed, None) => Prior::Expired {
                token: before.token,
            },
            (ItemState::Claimed, Some(held)) => Prior::Held { token: held },
            (state @ (ItemState::Done | ItemState::Failed), _) => Prior::Closed {
                token: before.marked_by,
                state,
            },
        };
        Applied::Claimed {
            item,
            token,
            expires_at_ms,
            attempt,
            chunks,
            prior,
        }
    }

    /// A renewal of claim `token`: the new expiry, if the statement matched.
    pub(crate) fn renew(
        before: &ItemRow,
        token: u64,
        renewed: Option<u64>,
        now_ms: u64,
    ) -> Applied {
        let item = before.item;
        match renewed {
            Some(expires_at_ms) => Applied::Renewed {
                item,
                token,
                expires_at_ms,
            },
            None => Applied::LeaseLost {
                item,
                token,
                live: before.live(now_ms),
            },
        }
    }

    /// Chunk `chunk` applied under `token`: whether the statement recorded it, and whether
    /// that statement checked the token (`fenced`).
    pub(crate) fn apply(
        before: &ItemRow,
        (token, chunk): (u64, u32),
        recorded: bool,
        fenced: bool,
        now_ms: u64,
    ) -> Applied {
        let (item, live) = (before.item, before.live(now_ms));
        if !recorded && fenced && live != Some(token) {
            return Applied::LeaseLost { item, token, live };
        }
        // A chunk recorded under a token that was not live is what the store did, and the
        // answer says so (`live` differs from `token`).
        Applied::ChunkApplied {
            item,
            token,
            chunk,
            fresh: recorded,
            live,
        }
    }

    /// End mark `mark` under `token`: how many rows the statement changed.
    pub(crate) fn mark(
        before: &ItemRow,
        (token, mark): (u64, Mark),
        changed: u64,
        now_ms: u64,
    ) -> Applied {
        let (item, live) = (before.item, before.live(now_ms));
        let repeat = before.state == marked_state(mark) && before.marked_by == token;
        if repeat || changed > 0 {
            return Applied::Marked {
                item,
                token,
                mark,
                repeat,
                live,
            };
        }
        Applied::LeaseLost { item, token, live }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_work_items::events::Answer;

    const R1: ReplicaId = ReplicaId(0);
    const R2: ReplicaId = ReplicaId(1);

    #[test]
    fn model_callers_share_one_store_and_tokens_are_store_wide() {
        let setup = ItemSetup {
            sizes: vec![2, 1],
            fencing: true,
        };
        let mut callers = WorkItemModel.open(&setup, 2).unwrap();
        let claim = |item| Request::Claim {
            item,
            lease_ms: 100,
            now_ms: 0,
        };
        let first = callers[0].apply(R1, claim(0), 10).unwrap();
        assert!(matches!(first, Applied::Claimed { token: 1, .. }));
        let second = callers[1].apply(R2, claim(1), 20).unwrap();
        assert!(matches!(second, Applied::Claimed { token: 2, .. }));
        let busy = callers[1].apply(R2, claim(0), 30).unwrap();
        assert_eq!(busy, Applied::Busy { item: 0, token: 1 });
        assert_eq!(answer_of(&busy), Answer::Busy);
        let state = callers[0].state().unwrap();
        assert_eq!(state.items[1].owner.as_deref(), Some("r2"));
        assert_eq!(state.items[0].live(30), Some(1));
        assert!(state.applied.is_empty());
    }

    #[test]
    fn provider_requests_and_unknown_items_are_refused() {
        let mut callers = WorkItemModel
            .open(
                &ItemSetup {
                    sizes: vec![1],
                    fencing: true,
                },
                1,
            )
            .unwrap();
        let lookup = Request::Lookup {
            key: leasesim_work_items::events::Key { item: 0, salt: 0 },
        };
        assert!(callers[0].apply(R1, lookup, 0).is_err());
        assert!(
            callers[0]
                .apply(R1, Request::Find { after: None }, 0)
                .is_ok()
        );
        let unknown = Request::Done {
            item: 1,
            token: 1,
            now_ms: 0,
        };
        assert_eq!(callers[0].apply(R1, unknown, 0), Err(no_such_item(1)));
        for sizes in [vec![1, 0], vec![MAX_CHUNKS + 1]] {
            let setup = ItemSetup {
                sizes,
                fencing: true,
            };
            assert!(WorkItemModel.open(&setup, 1).is_err());
        }
    }

    #[test]
    fn errors_and_states_read_back_as_written() {
        for error in [
            ErrorCode::Rejected(Op::Claim),
            ErrorCode::Timeout(Op::Lookup),
            ErrorCode::ProviderRefused,
            ErrorCode::Stopped,
        ] {
            assert_eq!(error_of(&error_name(error)), Ok(error));
        }
        for state in [
            ItemState::Pending,
            ItemState::Claimed,
            ItemState::Released,
            ItemState::Done,
            ItemState::Failed,
        ] {
            assert_eq!(state_of(state_name(state)), Ok(state));
        }
        assert!(error_of("timeout:nothing").is_err());
        assert!(error_of("late").is_err());
    }
}
