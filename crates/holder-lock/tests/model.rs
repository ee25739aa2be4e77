//! The store against a reference model: random sequences of requests at random instants
//! get the same answers from both, and the same live entries.

use std::collections::BTreeMap;

use leasesim_events::ReplicaId;
use leasesim_holder_lock::events::{Answer, Key, Request};
use leasesim_holder_lock::store::ClaimStore;
use proptest::prelude::*;

/// The store's rules, written as plainly as possible: an entry is `(token, end)`, live while
/// `now < end`.
#[derive(Default)]
struct Reference {
    entries: BTreeMap<Key, (u64, u64)>,
    compare_and_delete: bool,
}

impl Reference {
    fn live(&self, key: Key, now: u64) -> Option<u64> {
        self.entries
            .get(&key)
            .filter(|(_, end)| now < *end)
            .map(|(token, _)| *token)
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
                    self.entries.insert(key, (token, now + lifetime_ms));
                    Answer::Created
                }
            },
            Request::Renew {
                key,
                token,
                lifetime_ms,
            } => match self.live(key, now) {
                Some(held) if held == token => {
                    self.entries.insert(key, (token, now + lifetime_ms));
                    Answer::Renewed
                }
                Some(_) => Answer::NotHolder,
                None => Answer::Absent,
            },
            Request::DeleteIfHolder { .. } if !self.compare_and_delete => Answer::Unsupported,
            Request::DeleteIfHolder { key, token } => match self.live(key, now) {
                Some(held) if held == token => {
                    self.entries.remove(&key);
                    Answer::Deleted
                }
                Some(_) => Answer::NotHolder,
                None => Answer::Absent,
            },
            Request::Get { key } => self.live(key, now).map_or(Answer::Absent, Answer::Value),
            Request::Delete { key } => match self.live(key, now) {
                Some(_) => {
                    self.entries.remove(&key);
                    Answer::Deleted
                }
                None => Answer::Absent,
            },
            Request::Set {
                key,
                token,
                lifetime_ms,
            } => {
                self.entries.insert(key, (token, now + lifetime_ms));
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

proptest! {
    #[test]
    fn the_store_answers_as_the_reference_does(
        compare_and_delete in any::<bool>(),
        steps in prop::collection::vec((0..300u64, request()), 1..60),
    ) {
        let mut store = ClaimStore::new(compare_and_delete);
        let mut reference = Reference { compare_and_delete, ..Reference::default() };
        let mut now = 0;
        for (advance, request) in steps {
            now += advance;
            let (_, answer) = store.apply(ReplicaId(0), request, now);
            prop_assert_eq!(answer, reference.apply(request, now), "{:?} at {}", request, now);
            for key in Key::ALL {
                let live = store.live(key, now).map(|entry| entry.held.token);
                prop_assert_eq!(live, reference.live(key, now));
            }
        }
    }
}
