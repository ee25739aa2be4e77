//! The holder-lock system's service: the volatile store, applied at the apply instant, its
//! watcher that records each lifetime's end, and the token source's draws.
//!
//! Terminology:
//! - *apply*: a request of a replica reaches the store at store time (`EPOCH_MS` + virtual
//!   time) and is applied there ([`crate::store::ClaimStore::apply`]).
//! - *watcher*: a world task that sleeps until the next lifetime end and records it as a
//!   `Note::Expired` at that instant (the store forgets lazily; the note is for the trace and
//!   the coverage, the checkers work out expiries themselves).
//! - *fresh token*: a random upper half from the run's one choice source (1..=0xFFFFFF, so
//!   never zero) and the run's next serial in the lower half.
//! - *forgetter*: a world task per kind of forgetting switched on (eviction, failover,
//!   restart): at every tick of its period, in the safety phase only, it strikes with its
//!   probability (a coin of the run's one choice source, so value 0 is "no fault") and notes
//!   each key it changed (`Note::Forgot`, and `Note::Reverted` when a failover brings a live
//!   entry back) at that instant. A real run's store hook is told of each forgetting
//!   (`Forgotten`, through `World::services_changed`) and makes it on the real store; a
//!   lifetime's end is not told: a real store ends lifetimes on its own clock.
//! - *slow timers*: at the start of the run each replica whose clock drifts below true speed
//!   is noted (`Note::SlowTimer`): its worker's timers run slower than the store's clock.

use std::pin::pin;
use std::rc::Rc;

use leasesim_events::ReplicaId;
use leasesim_sim::{Apply, EPOCH_MS, FaultProfile, Scenario, World};

use crate::events::{Answer, Applied, Forgetting, HolderLock, Note, Request};
use crate::store::{Forgotten, Loss};

/// The services of one run: the store.
pub type Services = crate::store::ClaimStore;

/// The holder-lock service: the claim store.
impl Apply for HolderLock {
    type Services = crate::store::ClaimStore;

    fn services(
        scenario: &Scenario<HolderLock>,
        profile: &FaultProfile<HolderLock>,
    ) -> crate::store::ClaimStore {
        let _ = scenario;
        crate::store::ClaimStore::new(profile.system.compare_and_delete)
    }

    /// Applies a request of `replica` at the store, now.
    fn apply(world: &World<HolderLock>, replica: ReplicaId, request: Request) -> (Applied, Answer) {
        let now_ms = world.service_now_ms();
        world.services().apply(replica, request, now_ms)
    }
}

/// A fresh holder token (see the module docs).
pub fn fresh_token(world: &World<HolderLock>) -> u64 {
    let random = world.env().range(1, 0xFF_FFFF);
    let serial = world.services().next_serial();
    let token = (random << 32) | u64::from(serial);
    // invariant: a fresh token has a random part, so it never equals a made-up number.
    debug_assert!(token >> 32 != 0);
    token
}

/// The watcher (see the module docs); runs until the run ends.
pub async fn watch_expiries(world: Rc<World<HolderLock>>) {
    let env = world.env();
    let changed = world.services().changed.clone();
    loop {
        let wake = changed.changed();
        let due = world.services().due_expiry();
        let Some((at_ms, key)) = due else {
            wake.await;
            continue;
        };
        let at_virtual_ms = at_ms.saturating_sub(EPOCH_MS);
        if at_virtual_ms > env.now_ms() {
            let sleep = env.sleep_until(at_virtual_ms);
            futures::future::select(pin!(wake), pin!(sleep)).await;
            continue;
        }
        let now_ms = world.service_now_ms();
        let expired = world.services().mark_expired(key, now_ms);
        // invariant: an entry due now is recorded exactly once.
        let entry = expired.expect("a due lifetime end is recorded");
        env.note(Note::Expired {
            key,
            held: entry.held,
        });
    }
}

/// A forgetter (see the module docs); ends once faults heal.
pub async fn forgetter(world: Rc<World<HolderLock>>, cause: Forgetting) {
    let tick = world.profile().system.forgetting[cause.index()];
    // invariant: only a forgetting switched on has a task.
    debug_assert!(tick.probability > 0.0);
    while let Some(strikes) = leasesim_sim::phases::next_tick(&world, tick).await {
        if strikes {
            forget(&world, cause);
        }
    }
}

/// The store forgets now, as `cause` says; each key it changed is noted.
pub fn forget(world: &World<HolderLock>, cause: Forgetting) {
    let now_ms = world.service_now_ms();
    let losses: [Option<Loss>; 2] = {
        let mut store = world.services();
        match cause {
            Forgetting::Eviction => [store.evict(now_ms), None],
            Forgetting::Failover => store.fail_over(now_ms),
            Forgetting::Restart => store.restart(now_ms),
        }
    };
    // A real run's store forgets as the model did; a simulated run has no hook (nothing drawn).
    world.services_changed(&Forgotten { cause, losses });
    let env = world.env();
    for loss in losses.into_iter().flatten() {
        // invariant: a key is noted only for the forgetting that struck.
        debug_assert_eq!(loss.cause, cause);
        let (key, lost) = (loss.key, loss.lost);
        env.note(Note::Forgot { key, cause, lost });
        if let Some(entry) = loss.restored {
            let (held, expires_at_ms) = (entry.held, entry.expires_at_ms);
            env.note(Note::Reverted {
                key,
                held,
                expires_at_ms,
            });
        }
    }
}

/// Notes each replica whose timers run slower than the store's clock (see the module docs).
pub fn note_slow_timers(world: &World<HolderLock>) {
    let env = world.env();
    for (state, clock) in world.replicas().iter().zip(&world.profile().clocks) {
        if clock.drift_ppm < 0 {
            let drift_ppm = clock.drift_ppm;
            env.note_for(state.id, Note::SlowTimer { drift_ppm });
        }
    }
}
