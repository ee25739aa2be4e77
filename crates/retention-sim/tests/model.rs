//! The lease authority and the record store agree with a small reference model under random
//! operation sequences.

use leasesim_retention::authority::{Acquired, LeaseAuthority, Release};
use leasesim_retention::store::RecordStore;
use proptest::prelude::*;

const OWNERS: [&str; 3] = ["r1", "r2", "r3"];
const TTL_MS: u64 = 100;

#[derive(Clone, Debug)]
enum Op {
    Acquire {
        owner: usize,
    },
    Renew {
        owner: usize,
        token_back: u64,
    },
    Release {
        owner: usize,
        token_back: u64,
    },
    Revoke,
    Delete {
        older_than: u64,
        limit: u32,
        token_back: u64,
    },
}

fn op() -> impl Strategy<Value = (u64, Op)> {
    let op = prop_oneof![
        (0..3usize).prop_map(|owner| Op::Acquire { owner }),
        (0..3usize, 0..3u64).prop_map(|(owner, token_back)| Op::Renew { owner, token_back }),
        (0..3usize, 0..3u64).prop_map(|(owner, token_back)| Op::Release { owner, token_back }),
        Just(Op::Revoke),
        (0..200u64, 0..20u32, 0..2u64).prop_map(|(older_than, limit, token_back)| Op::Delete {
            older_than,
            limit,
            token_back
        }),
    ];
    (0..60u64, op)
}

/// The reference: the holder as a plain triple, and rows as a sorted list.
#[derive(Default)]
struct Model {
    holder: Option<(usize, u64, u64)>,
    last_token: u64,
    rows: Vec<u64>,
}

impl Model {
    fn live(&self, now: u64) -> Option<(usize, u64, u64)> {
        self.holder.filter(|&(_, _, expires)| now < expires)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn authority_and_store_follow_the_model(
        ops in prop::collection::vec(op(), 1..80),
        rows in prop::collection::vec(0..150u64, 0..60),
        fencing in any::<bool>(),
    ) {
        let mut authority = LeaseAuthority::new(TTL_MS, false);
        let mut store = RecordStore::new(rows.clone(), fencing);
        let mut model = Model { rows: { let mut r = rows; r.sort(); r }, ..Model::default() };
        let mut now = 0u64;
        for (dt, op) in ops {
            now += dt;
            match op {
                Op::Acquire { owner } => {
                    let got = authority.acquire(OWNERS[owner], now);
                    match model.live(now) {
                        Some((_, token, _)) => prop_assert_eq!(got, Acquired::Busy { holder_token: token }),
                        None => {
                            let Acquired::Granted { lease, .. } = got else { panic!("must grant") };
                            // Tokens strictly increase.
                            prop_assert!(lease.token > model.last_token);
                            model.last_token = lease.token;
                            model.holder = Some((owner, lease.token, now + TTL_MS));
                        }
                    }
                }
                Op::Renew { owner, token_back } => {
                    let token = model.last_token.saturating_sub(token_back);
                    let got = authority.renew(OWNERS[owner], token, now);
                    match model.live(now) {
                        Some((holder, _, _)) if holder == owner => {
                            let lease = got.expect("the live holder renews");
                            prop_assert!(lease.token > model.last_token);
                            model.last_token = lease.token;
                            model.holder = Some((owner, lease.token, now + TTL_MS));
                        }
                        _ => prop_assert!(got.is_none()),
                    }
                }
                Op::Release { owner, token_back } => {
                    let token = model.last_token.saturating_sub(token_back);
                    let before = model.live(now);
                    let got = authority.release(OWNERS[owner], token, now);
                    if before.is_some_and(|(o, t, _)| o == owner && t == token) {
                        prop_assert_eq!(got, Release::Freed);
                        model.holder = None;
                    } else {
                        // CAS release never frees a successor (or anyone else).
                        prop_assert_eq!(got, Release::FreedNothing);
                        prop_assert_eq!(authority.current_token(now), before.map(|(_, t, _)| t));
                    }
                }
                Op::Revoke => {
                    let before = model.live(now).map(|(_, t, _)| t);
                    prop_assert_eq!(authority.revoke(now), before);
                    if before.is_some() { model.holder = None; }
                }
                Op::Delete { older_than, limit, token_back } => {
                    let token = model.last_token.saturating_sub(token_back);
                    let live = authority.current_token(now);
                    prop_assert_eq!(live, model.live(now).map(|(_, t, _)| t));
                    // Fencing is decided at apply time, against the token live right now.
                    let admitted = store.admits(token, live);
                    prop_assert_eq!(admitted, !fencing || live == Some(token));
                    if admitted {
                        let done = store.delete_oldest(older_than, limit, u64::MAX);
                        // Oldest first: exactly the smallest eligible rows go.
                        let eligible = model.rows.iter().take_while(|&&c| c < older_than).count();
                        let take = eligible.min(limit as usize);
                        let expected_newest = take.checked_sub(1).map(|i| model.rows[i]);
                        model.rows.drain(..take);
                        prop_assert_eq!(done.rows as usize, take);
                        prop_assert_eq!(done.newest_created_ms, expected_newest);
                    }
                    prop_assert_eq!(store.rows(), model.rows.clone());
                }
            }
        }
    }
}
