//! The store agrees with a reference model: a plain list of holds, every operation written
//! the simplest way (linear scans, no index), over long pseudo-random sequences of every
//! operation, the primitives included.

use leasesim_reservations::events::{Applied, IdList, StatusView};
use leasesim_reservations::store::Store;

/// One hold of the reference model.
#[derive(Clone, Debug)]
struct Hold {
    due: u64,
    status: StatusView,
    claim: Option<(u64, u64)>,
    malformed: bool,
    parked: bool,
}

#[derive(Default)]
struct Model {
    holds: Vec<Hold>,
}

impl Model {
    fn live(&self, i: usize, now: u64) -> Option<u64> {
        self.holds[i]
            .claim
            .filter(|(_, until)| *until > now)
            .map(|(t, _)| t)
    }

    fn due(&self, limit: u32, at: u64, now: u64) -> Vec<u32> {
        let mut due: Vec<(u64, u32)> = (0..self.holds.len())
            .filter(|&i| {
                let h = &self.holds[i];
                h.status == StatusView::Held
                    && !h.parked
                    && h.due <= at
                    && self.live(i, now).is_none()
            })
            .map(|i| (self.holds[i].due, i as u32 + 1))
            .collect();
        due.sort();
        due.into_iter()
            .take(limit.min(8) as usize)
            .map(|(_, id)| id)
            .collect()
    }

    fn claim(&mut self, limit: u32, at: u64, token: u64, for_ms: u64, now: u64) -> Applied {
        let ids = self.due(limit, at, now);
        for &id in &ids {
            self.holds[id as usize - 1].claim = Some((token, now + for_ms));
        }
        Applied::Claimed {
            ids: IdList::of(&ids),
            token,
            until_ms: now + for_ms,
        }
    }

    fn release(&mut self, id: u32, token: u64) -> Applied {
        let hold = &mut self.holds[id as usize - 1];
        let freed = hold.claim.is_some_and(|(t, _)| t == token);
        if freed {
            hold.claim = None;
        }
        Applied::Released { id, token, freed }
    }

    fn consume(&mut self, id: u32) -> Result<u64, StatusView> {
        let hold = &mut self.holds[id as usize - 1];
        match hold.status {
            StatusView::Held => {
                hold.status = StatusView::Consumed;
                Ok(hold.due)
            }
            status => Err(status),
        }
    }

    fn expire(&mut self, id: u32, at: u64) -> Applied {
        let h = &mut self.holds[id as usize - 1];
        match (h.malformed, h.status) {
            (true, _) => Applied::Invalid { id },
            (false, StatusView::Held) if h.due <= at => {
                h.status = StatusView::Expired;
                Applied::Expired {
                    id,
                    hold_until_ms: h.due,
                }
            }
            (false, StatusView::Expired) => Applied::AlreadyDone { id },
            (false, status) => Applied::NotEligible {
                id,
                status,
                hold_until_ms: h.due,
            },
        }
    }
}

/// A small deterministic sequence (the test needs no randomness of quality).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// One pseudo-random operation on both; the two applies to compare, if it has any.
fn step(
    store: &mut Store,
    model: &mut Model,
    rng: &mut Lcg,
    now: u64,
    token: u64,
) -> Option<(Applied, Applied)> {
    let id = (rng.below(model.holds.len() as u64 + 1) + 1) as u32;
    let known = (id as usize) <= model.holds.len();
    let pair = match rng.below(8) {
        0 | 1 => {
            let (due, bad) = (now + rng.below(300), rng.below(10) == 0);
            let placed = store.place(due, bad);
            model.holds.push(Hold {
                due,
                status: StatusView::Held,
                claim: None,
                malformed: bad,
                parked: false,
            });
            assert_eq!(placed as usize, model.holds.len());
            return None;
        }
        2 => {
            let (limit, at) = (rng.below(9) as u32, now + rng.below(100));
            (
                store.claim(limit, at, token, 200, now),
                model.claim(limit, at, token, 200, now),
            )
        }
        3 if known => (store.expire(id, now), model.expire(id, now)),
        4 if known => {
            let held = model.holds[id as usize - 1].claim.map_or(7, |(t, _)| t);
            let token = held + rng.below(2);
            (store.release(id, token, now), model.release(id, token))
        }
        5 if known => {
            assert_eq!(store.consume(id), model.consume(id));
            return None;
        }
        6 if known => {
            model.holds[id as usize - 1].parked = true;
            (store.park(id), Applied::Parked { id })
        }
        _ => return None,
    };
    Some(pair)
}

#[test]
fn the_store_agrees_with_the_reference_model() {
    for seed in 1..40 {
        let (mut store, mut model, mut rng) = (Store::new(), Model::default(), Lcg(seed));
        let mut now = 0;
        for step_number in 0..400 {
            now += rng.below(50);
            let token = 1_000 + step_number;
            if let Some((got, want)) = step(&mut store, &mut model, &mut rng, now, token) {
                assert_eq!(got, want, "seed {seed} step {step_number}");
            }
        }
        let metrics = store.metrics(now);
        let due_held = model
            .holds
            .iter()
            .filter(|h| h.status == StatusView::Held && !h.parked && h.due <= now)
            .count();
        assert_eq!(metrics.due_held as usize, due_held, "seed {seed}");
    }
}
