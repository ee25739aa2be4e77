//! The store against a reference model: random sequences of requests and forgettings
//! (evictions, failovers, restarts) at random instants get the same answers from both, the
//! same losses, and the same live entries.

use std::collections::BTreeMap;

use leasesim_events::ReplicaId;
use leasesim_holder_lock::events::{Answer, Key, Request};
use leasesim_holder_lock::store::ClaimStore;
use proptest::prelude::*;

/// The store's rules, written as plainly as possible: an entry is `(token, end)`, live while
/// `now < end`; `undo` holds, per key written since its last forgetting, what it held before
/// its last write.
#[derive(Default)]
struct Reference {
    entries: BTreeMap<Key, (u64, u64)>,
    undo: BTreeMap<Key, Option<(u64, u64)>>,
    compare_and_delete: bool,
}

/// One step of a sequence: a request of a replica, or the store forgetting.
#[derive(Clone, Copy, Debug)]
enum Step {
    Request(Request),
    Evict,
    FailOver,
    Restart,
}

impl Reference {
    fn live(&self, key: Key, now: u64) -> Option<u64> {
        self.entries
            .get(&key)
            .filter(|(_, end)| now < *end)
            .map(|(token, _)| *token)
    }

    /// A write of `key` (`None`: a delete): remember what it held.
    fn put(&mut self, key: Key, entry: Option<(u64, u64)>) {
        let before = match entry {
            Some(entry) => self.entries.insert(key, entry),
            None => self.entries.remove(&key),
        };
        self.undo.insert(key, before);
    }

    /// The tokens lost (live before, per key) by a forgetting, as the store reports them.
    fn forget(&mut self, step: Step, now: u64) -> Vec<(Key, Option<u64>)> {
        let mut losses = Vec::new();
        for key in Key::ALL {
            let lost = self.live(key, now);
            let reported = match step {
                Step::Evict => key == Key::Claim && lost.is_some(),
                Step::FailOver => self.undo.contains_key(&key),
                Step::Restart => {
                    key == Key::Claim
                        || self.entries.contains_key(&key)
                        || self.undo.contains_key(&key)
                }
                Step::Request(_) => false,
            };
            if !reported {
                continue;
            }
            let back = match step {
                Step::FailOver => self.undo[&key].filter(|(_, end)| now < *end),
                _ => None,
            };
            match back {
                Some(entry) => self.entries.insert(key, entry),
                None => self.entries.remove(&key),
            };
            self.undo.remove(&key);
            losses.push((key, lost));
        }
        losses
    }

    fn apply(&mut self, request: Request, now: u64) -> Answer {
        match request {
            Request::Create {
                key,
                token,
                lifetime_ms,
            } => match self.live(key, now) {
                Some(_) => Answer::Exists,
                None => {
                    let before = self.entries.get(&key).copied();
                    self.entries.insert(key, (token, now + lifetime_ms));
                    self.undo.insert(key, before);
                    Answer::Created
                }
            },
            Request::Renew {
                key,
                token,
                lifetime_ms,
            } => match self.live(key, now) {
                Some(held) if held == token => {
                    self.put(key, Some((token, now + lifetime_ms)));
                    Answer::Renewed
                }
                Some(_) => Answer::NotHolder,
                None => Answer::Absent,
            },
            Request::DeleteIfHolder { .. } if !self.compare_and_delete => Answer::Unsupported,
            Request::DeleteIfHolder { key, token } => match self.live(key, now) {
                Some(held) if held == token => {
                    self.put(key, None);
                    Answer::Deleted
                }
                Some(_) => Answer::NotHolder,
                None => Answer::Absent,
            },
            Request::Get { key } => self.live(key, now).map_or(Answer::Absent, Answer::Value),
            Request::Delete { key } => match self.live(key, now) {
                Some(_) => {
                    self.put(key, None);
                    Answer::Deleted
                }
                None => Answer::Absent,
            },
            Request::Set {
                key,
                token,
                lifetime_ms,
            } => {
                self.put(key, Some((token, now + lifetime_ms)));
                Answer::Written
            }
        }
    }
}

fn request() -> impl Strategy<Value = Request> {
    let key = prop_oneof![Just(Key::Claim), Just(Key::Holder)];
    (0..6u8, key, 1..4u64, 50..500u64).prop_map(|(op, key, token, lifetime_ms)| match op {
        0 => Request::Create {
            key,
            token,
            lifetime_ms,
        },
        1 => Request::Renew {
            key,
            token,
            lifetime_ms,
        },
        2 => Request::DeleteIfHolder { key, token },
        3 => Request::Get { key },
        4 => Request::Delete { key },
        _ => Request::Set {
            key,
            token,
            lifetime_ms,
        },
    })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => request().prop_map(Step::Request),
        1 => Just(Step::Evict),
        2 => Just(Step::FailOver),
        1 => Just(Step::Restart),
    ]
}

/// What the store reports of a forgetting, as the reference does.
fn forgotten(store: &mut ClaimStore, step: Step, now: u64) -> Vec<(Key, Option<u64>)> {
    let losses = match step {
        Step::Evict => [store.evict(now), None],
        Step::FailOver => store.fail_over(now),
        Step::Restart => store.restart(now),
        Step::Request(_) => [None, None],
    };
    let token = |loss: leasesim_holder_lock::store::Loss| loss.lost.map(|held| held.token);
    losses
        .into_iter()
        .flatten()
        .map(|l| (l.key, token(l)))
        .collect()
}

proptest! {
    #[test]
    fn the_store_answers_as_the_reference_does(
        compare_and_delete in any::<bool>(),
        steps in prop::collection::vec((0..300u64, step()), 1..60),
    ) {
        let mut store = ClaimStore::new(compare_and_delete);
        let mut reference = Reference { compare_and_delete, ..Reference::default() };
        let mut now = 0;
        for (advance, step) in steps {
            now += advance;
            if let Step::Request(request) = step {
                let (_, answer) = store.apply(ReplicaId(0), request, now);
                let expected = reference.apply(request, now);
                prop_assert_eq!(answer, expected, "{:?} at {}", request, now);
            } else {
                let losses = forgotten(&mut store, step, now);
                prop_assert_eq!(losses, reference.forget(step, now), "{:?} at {}", step, now);
            }
            for key in Key::ALL {
                let live = store.live(key, now).map(|entry| entry.held.token);
                prop_assert_eq!(live, reference.live(key, now));
            }
        }
    }
}
