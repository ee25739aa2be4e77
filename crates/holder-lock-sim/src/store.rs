//! The volatile store: keys with lifetimes on the store's own clock, applied at the instant a
//! request arrives.
//!
//! Terminology:
//! - *entry*: what a key holds: a token, who wrote it, and the instant its lifetime ends.
//! - *live*: an entry whose lifetime has not ended (`now < expires_at_ms`). An entry past its
//!   end is absent for every operation; it stays in the table only until something
//!   overwrites it, so a create can say whose expired claim it took over.
//! - *compare-and-delete*: `delete_if_holder` compares and deletes in one step. A store
//!   without it (`[store] compare_and_delete = false`) refuses that operation; `get` and
//!   `delete` remain, so a read followed by a delete leaves a real gap.
//! - *expiry note*: the first time an entry's lifetime ends, the store's watcher records it
//!   (`Note::Expired`), at that instant; `due_expiry` and `mark_expired` serve it.
//! - *serial*: the number of token draws so far, kept here so that every fresh token of a
//!   run is distinct (see `events`).
//! - *last write*: per key, what it held before the last request that wrote or deleted it
//!   (`None` once nothing is left to revert). A failover goes back to it.
//! - *forgetting*: the store losing what a key holds without its holder's release (see
//!   `events::Forgetting`): [`ClaimStore::evict`], [`ClaimStore::fail_over`],
//!   [`ClaimStore::restart`]. Each returns what it changed, for the notes; each leaves no
//!   last write to revert behind it (a replica promoted or restarted has no older state).
//! - *forgotten*: the world's one change to the store outside requests ([`Forgotten`]),
//!   handed to a real run's store hook so a real store forgets as the model did. A lifetime's
//!   end is no such change: a real store ends lifetimes on its own clock.
//! - *probe*: what a request would answer at an instant, and the live token it would find
//!   there, without applying it ([`ClaimStore::probe`]): a real run's hook asks it to explain
//!   a real store's answer by the clock.

use std::rc::Rc;

use leasesim_events::ReplicaId;
use leasesim_sim::Signal;

use crate::events::{Answer, Applied, Forgetting, Held, Key, Request};

/// One key's entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub held: Held,
    pub expires_at_ms: u64,
    /// The watcher has recorded that its lifetime ended.
    pub expiry_noted: bool,
}

/// What a forgetting did to one key: the live entry it lost (`None`: nothing live), and for
/// a failover the live entry the key holds again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loss {
    pub key: Key,
    pub cause: Forgetting,
    pub lost: Option<Held>,
    pub restored: Option<Entry>,
}

/// The world's change to the store outside requests (see the module docs): `cause` struck
/// now, and changed the keys of `losses` (each holds now what the model says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forgotten {
    pub cause: Forgetting,
    pub losses: [Option<Loss>; 2],
}

/// The store of one run.
#[derive(Debug)]
pub struct ClaimStore {
    entries: [Option<Entry>; 2],
    /// Per key: what it held before its last write (see the module docs).
    before_write: [Option<Option<Entry>>; 2],
    compare_and_delete: bool,
    serial: u32,
    /// Notified whenever an entry is written or removed (the watcher waits on it).
    pub changed: Rc<Signal>,
}

impl ClaimStore {
    /// An empty store.
    pub fn new(compare_and_delete: bool) -> ClaimStore {
        ClaimStore {
            entries: [None, None],
            before_write: [None, None],
            compare_and_delete,
            serial: 0,
            changed: Rc::default(),
        }
    }

    pub fn compare_and_delete(&self) -> bool {
        self.compare_and_delete
    }

    /// The next serial number of a token draw (1, 2, ...).
    pub fn next_serial(&mut self) -> u32 {
        let before = self.serial;
        self.serial += 1;
        // invariant: serials strictly increase, so no two draws of a run share one.
        debug_assert!(self.serial > before);
        self.serial
    }

    /// The live entry of `key` at `now_ms`.
    pub fn live(&self, key: Key, now_ms: u64) -> Option<Entry> {
        self.entries[key.index()].filter(|entry| now_ms < entry.expires_at_ms)
    }

    /// The entry of `key`, live or not.
    pub fn entry(&self, key: Key) -> Option<Entry> {
        self.entries[key.index()]
    }

    /// The earliest end of a lifetime not yet noted, with its key.
    pub fn due_expiry(&self) -> Option<(u64, Key)> {
        Key::ALL
            .into_iter()
            .filter_map(|key| {
                let entry = self.entries[key.index()]?;
                (!entry.expiry_noted).then_some((entry.expires_at_ms, key))
            })
            .min()
    }

    /// Records that the entry of `key` ran out; returns it.
    pub fn mark_expired(&mut self, key: Key, now_ms: u64) -> Option<Entry> {
        let entry = self.entries[key.index()].as_mut()?;
        if entry.expiry_noted || now_ms < entry.expires_at_ms {
            return None;
        }
        entry.expiry_noted = true;
        Some(*entry)
    }

    fn write(&mut self, key: Key, held: Held, expires_at_ms: u64) {
        let entry = Entry {
            held,
            expires_at_ms,
            expiry_noted: false,
        };
        self.replace(key, Some(entry));
    }

    fn remove(&mut self, key: Key) {
        self.replace(key, None);
    }

    /// A write of a request: what the key held before becomes its last write.
    fn replace(&mut self, key: Key, entry: Option<Entry>) {
        let before = std::mem::replace(&mut self.entries[key.index()], entry);
        self.before_write[key.index()] = Some(before);
        self.changed.notify();
    }

    /// Memory pressure: the claim key's live entry is gone (`None` when it held nothing live:
    /// nothing to evict).
    pub fn evict(&mut self, now_ms: u64) -> Option<Loss> {
        let key = Key::Claim;
        let lost = self.live(key, now_ms)?.held;
        self.forget(key);
        // invariant: an evicted key is absent, with nothing to revert.
        debug_assert!(self.entry(key).is_none() && self.before_write[key.index()].is_none());
        Some(Loss {
            key,
            cause: Forgetting::Eviction,
            lost: Some(lost),
            restored: None,
        })
    }

    /// A failover: each key with a last write holds what it held before it (kept only if
    /// still live); a key without one is untouched.
    pub fn fail_over(&mut self, now_ms: u64) -> [Option<Loss>; 2] {
        Key::ALL.map(|key| {
            let before = self.before_write[key.index()].take()?;
            let lost = self.live(key, now_ms).map(|entry| entry.held);
            let restored = before.filter(|entry| now_ms < entry.expires_at_ms);
            self.entries[key.index()] = restored;
            self.changed.notify();
            Some(Loss {
                key,
                cause: Forgetting::Failover,
                lost,
                restored,
            })
        })
    }

    /// A restart without persistence: every key is gone. The claim key is always reported
    /// (so every restart shows), the holder record only when it held something.
    pub fn restart(&mut self, now_ms: u64) -> [Option<Loss>; 2] {
        Key::ALL.map(|key| {
            let held = self.entry(key).is_some() || self.before_write[key.index()].is_some();
            let lost = self.live(key, now_ms).map(|entry| entry.held);
            self.forget(key);
            (held || key == Key::Claim).then_some(Loss {
                key,
                cause: Forgetting::Restart,
                lost,
                restored: None,
            })
        })
    }

    fn forget(&mut self, key: Key) {
        self.entries[key.index()] = None;
        self.before_write[key.index()] = None;
        self.changed.notify();
    }

    /// What `request` of `replica` would answer at store time `now_ms`, and the token its key
    /// holds live then (`None` for a store that refuses it unsupported, which reads nothing),
    /// without applying it (see the module docs).
    pub fn probe(
        &self,
        replica: ReplicaId,
        request: Request,
        now_ms: u64,
    ) -> (Answer, Option<u64>) {
        let mut scratch = ClaimStore {
            entries: self.entries,
            before_write: self.before_write,
            compare_and_delete: self.compare_and_delete,
            serial: self.serial,
            changed: Rc::default(),
        };
        let (_, answer) = scratch.apply(replica, request, now_ms);
        let held = self
            .live(request.key(), now_ms)
            .map(|entry| entry.held.token);
        (answer, held.filter(|_| answer != Answer::Unsupported))
    }

    /// Applies `request` of `replica` at store time `now_ms`.
    pub fn apply(
        &mut self,
        replica: ReplicaId,
        request: Request,
        now_ms: u64,
    ) -> (Applied, Answer) {
        let outcome = match request {
            Request::Create {
                key,
                token,
                lifetime_ms,
            } => self.create(
                key,
                Held { token, by: replica },
                now_ms + lifetime_ms,
                now_ms,
            ),
            Request::Renew {
                key,
                token,
                lifetime_ms,
            } => self.renew(key, token, now_ms + lifetime_ms, now_ms),
            Request::DeleteIfHolder { key, token } => self.delete_if_holder(key, token, now_ms),
            Request::Get { key } => {
                let held = self.live(key, now_ms).map(|entry| entry.held);
                let answer = held.map_or(Answer::Absent, |held| Answer::Value(held.token));
                (Applied::Read { key, held }, answer)
            }
            Request::Delete { key } => self.delete(key, now_ms),
            Request::Set {
                key,
                token,
                lifetime_ms,
            } => {
                let replaced = self.live(key, now_ms).map(|entry| entry.held);
                let expires_at_ms = now_ms + lifetime_ms;
                self.write(key, Held { token, by: replica }, expires_at_ms);
                let applied = Applied::Written {
                    key,
                    token,
                    expires_at_ms,
                    replaced,
                };
                (applied, Answer::Written)
            }
        };
        // invariant: a write leaves the key live with the token written.
        debug_assert!(match outcome.0 {
            Applied::Created { key, token, .. }
            | Applied::Renewed { key, token, .. }
            | Applied::Written { key, token, .. } =>
                self.live(key, now_ms).map(|e| e.held.token) == Some(token),
            Applied::Deleted { key, .. } => self.live(key, now_ms).is_none(),
            _ => true,
        });
        outcome
    }

    fn create(
        &mut self,
        key: Key,
        held: Held,
        expires_at_ms: u64,
        now_ms: u64,
    ) -> (Applied, Answer) {
        if let Some(live) = self.live(key, now_ms) {
            let applied = Applied::Exists {
                key,
                held: live.held,
            };
            return (applied, Answer::Exists);
        }
        let took_over = self.entries[key.index()].map(|entry| entry.held);
        self.write(key, held, expires_at_ms);
        let applied = Applied::Created {
            key,
            token: held.token,
            expires_at_ms,
            took_over,
        };
        (applied, Answer::Created)
    }

    fn renew(
        &mut self,
        key: Key,
        token: u64,
        expires_at_ms: u64,
        now_ms: u64,
    ) -> (Applied, Answer) {
        match self.live(key, now_ms) {
            Some(live) if live.held.token == token => {
                self.write(key, live.held, expires_at_ms);
                let applied = Applied::Renewed {
                    key,
                    token,
                    expires_at_ms,
                };
                (applied, Answer::Renewed)
            }
            Some(live) => {
                let held = Some(live.held);
                (Applied::RenewRefused { key, held }, Answer::NotHolder)
            }
            None => (Applied::RenewRefused { key, held: None }, Answer::Absent),
        }
    }

    fn delete_if_holder(&mut self, key: Key, token: u64, now_ms: u64) -> (Applied, Answer) {
        if !self.compare_and_delete {
            return (Applied::Unsupported { key }, Answer::Unsupported);
        }
        match self.live(key, now_ms) {
            Some(live) if live.held.token == token => {
                self.remove(key);
                let applied = Applied::Deleted {
                    key,
                    removed: live.held,
                };
                (applied, Answer::Deleted)
            }
            Some(live) => {
                let held = Some(live.held);
                (Applied::NotDeleted { key, held }, Answer::NotHolder)
            }
            None => (Applied::NotDeleted { key, held: None }, Answer::Absent),
        }
    }

    fn delete(&mut self, key: Key, now_ms: u64) -> (Applied, Answer) {
        match self.live(key, now_ms) {
            Some(live) => {
                self.remove(key);
                let applied = Applied::Deleted {
                    key,
                    removed: live.held,
                };
                (applied, Answer::Deleted)
            }
            None => (Applied::NotDeleted { key, held: None }, Answer::Absent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R1: ReplicaId = ReplicaId(0);
    const R2: ReplicaId = ReplicaId(1);

    fn create(token: u64) -> Request {
        Request::Create {
            key: Key::Claim,
            token,
            lifetime_ms: 100,
        }
    }

    #[test]
    fn a_claim_runs_out_and_only_its_own_token_renews_or_deletes_it() {
        let mut store = ClaimStore::new(true);
        assert_eq!(store.apply(R1, create(7), 0).1, Answer::Created);
        assert_eq!(store.apply(R2, create(8), 99).1, Answer::Exists);
        let (applied, answer) = store.apply(R2, create(8), 100);
        assert_eq!(answer, Answer::Created, "the first claim ran out at 100");
        assert!(matches!(
            applied,
            Applied::Created {
                took_over: Some(Held { token: 7, by: R1 }),
                ..
            }
        ));
        let delete_7 = Request::DeleteIfHolder {
            key: Key::Claim,
            token: 7,
        };
        assert_eq!(store.apply(R1, delete_7, 120).1, Answer::NotHolder);
        let renew_8 = Request::Renew {
            key: Key::Claim,
            token: 8,
            lifetime_ms: 100,
        };
        assert_eq!(store.apply(R2, renew_8, 150).1, Answer::Renewed);
        assert_eq!(store.live(Key::Claim, 249).map(|e| e.held.token), Some(8));
        let blind = Request::Delete { key: Key::Claim };
        assert_eq!(store.apply(R1, blind, 160).1, Answer::Deleted);
        assert_eq!(store.apply(R1, blind, 161).1, Answer::Absent);
    }

    #[test]
    fn without_compare_and_delete_only_get_and_delete_remain() {
        let mut store = ClaimStore::new(false);
        store.apply(R1, create(7), 0);
        let delete_7 = Request::DeleteIfHolder {
            key: Key::Claim,
            token: 7,
        };
        assert_eq!(store.apply(R1, delete_7, 1).1, Answer::Unsupported);
        let get = Request::Get { key: Key::Claim };
        assert_eq!(store.apply(R1, get, 2).1, Answer::Value(7));
        assert_eq!(store.apply(R1, get, 100).1, Answer::Absent);
    }

    #[test]
    fn each_lifetime_end_is_due_once() {
        let mut store = ClaimStore::new(true);
        store.apply(R1, create(7), 0);
        assert_eq!(store.due_expiry(), Some((100, Key::Claim)));
        assert_eq!(store.mark_expired(Key::Claim, 99), None);
        assert!(store.mark_expired(Key::Claim, 100).is_some());
        assert_eq!(store.mark_expired(Key::Claim, 101), None);
        assert_eq!(store.due_expiry(), None);
    }

    fn renew(token: u64) -> Request {
        Request::Renew {
            key: Key::Claim,
            token,
            lifetime_ms: 100,
        }
    }

    fn token_at(store: &ClaimStore, now_ms: u64) -> Option<(u64, u64)> {
        let entry = store.live(Key::Claim, now_ms)?;
        Some((entry.held.token, entry.expires_at_ms))
    }

    #[test]
    fn an_eviction_takes_only_a_live_claim_and_leaves_nothing_to_revert() {
        let mut store = ClaimStore::new(true);
        assert_eq!(store.evict(0), None, "nothing to evict");
        store.apply(R1, create(7), 0);
        let loss = store.evict(10).expect("the live claim is evicted");
        assert_eq!(loss.lost, Some(Held { token: 7, by: R1 }));
        assert_eq!(token_at(&store, 10), None);
        assert_eq!(store.fail_over(20), [None, None], "no write left to revert");
        assert_eq!(store.apply(R1, renew(7), 30).1, Answer::Absent);
    }

    #[test]
    fn a_failover_undoes_each_keys_last_write_once() {
        let mut store = ClaimStore::new(true);
        store.apply(R1, create(7), 0);
        store.apply(R1, renew(7), 50);
        let [claim, holder] = store.fail_over(60);
        assert_eq!(holder, None, "the holder record was never written");
        let claim = claim.expect("the renewal is undone");
        assert_eq!(claim.lost, Some(Held { token: 7, by: R1 }));
        assert_eq!(
            token_at(&store, 60),
            Some((7, 100)),
            "back to the create's end"
        );
        assert_eq!(
            store.fail_over(60),
            [None, None],
            "only one write is undone"
        );
        assert_eq!(token_at(&store, 99), Some((7, 100)));
        assert_eq!(token_at(&store, 100), None);

        let mut created = ClaimStore::new(true);
        created.apply(R1, create(7), 0);
        let lost = created.fail_over(10)[0].expect("the create is undone");
        assert_eq!((lost.lost.map(|h| h.token), lost.restored), (Some(7), None));
        assert_eq!(created.apply(R2, create(8), 11).1, Answer::Created);

        let mut released = ClaimStore::new(true);
        released.apply(R1, create(7), 0);
        let delete_7 = Request::DeleteIfHolder {
            key: Key::Claim,
            token: 7,
        };
        released.apply(R1, delete_7, 10);
        let back = released.fail_over(20)[0].expect("the release is undone");
        assert_eq!(back.lost, None);
        assert_eq!(token_at(&released, 20), Some((7, 100)), "the claim is back");
        released.apply(R1, delete_7, 30);
        let late = released.fail_over(100)[0].expect("a write to undo");
        assert_eq!(
            (late.lost, late.restored),
            (None, None),
            "it had run out by then"
        );
    }

    #[test]
    fn a_restart_forgets_every_key_and_always_reports_the_claim() {
        let mut store = ClaimStore::new(true);
        let [claim, holder] = store.restart(0);
        assert_eq!(
            claim.map(|l| l.lost),
            Some(None),
            "an empty store's restart shows"
        );
        assert_eq!(holder, None);
        store.apply(R1, create(7), 0);
        let set = Request::Set {
            key: Key::Holder,
            token: 7,
            lifetime_ms: 100,
        };
        store.apply(R1, set, 0);
        let [claim, holder] = store.restart(5);
        assert_eq!(claim.and_then(|l| l.lost).map(|h| h.token), Some(7));
        assert_eq!(holder.and_then(|l| l.lost).map(|h| h.token), Some(7));
        assert!(Key::ALL.iter().all(|&key| store.entry(key).is_none()));
        assert_eq!(store.fail_over(6), [None, None]);
    }

    #[test]
    fn a_probe_answers_as_apply_would_and_changes_nothing() {
        let mut store = ClaimStore::new(true);
        store.apply(R1, create(7), 0);
        assert_eq!(store.probe(R2, create(8), 99), (Answer::Exists, Some(7)));
        assert_eq!(store.probe(R2, create(8), 100), (Answer::Created, None));
        assert_eq!(
            token_at(&store, 99),
            Some((7, 100)),
            "the probes wrote nothing"
        );
        assert_eq!(store.apply(R2, create(8), 99).1, Answer::Exists);
        let mut no_cad = ClaimStore::new(false);
        no_cad.apply(R1, create(7), 0);
        let delete_7 = Request::DeleteIfHolder {
            key: Key::Claim,
            token: 7,
        };
        assert_eq!(no_cad.probe(R1, delete_7, 1), (Answer::Unsupported, None));
    }
}
