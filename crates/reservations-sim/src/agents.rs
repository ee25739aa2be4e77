//! Support agents: they place holds and consume some of them, concurrently with the workers.
//!
//! Terminology:
//! - *placement*: a new hold with a deadline `hold_ms` ahead (a *backlog* hold, placed at the
//!   start, is already due); the `malformed` fault makes its record fail every transition.
//! - *consume*: an agent uses a held reservation; allowed while it is held, also past its
//!   deadline. A consume is *early* (somewhere before the deadline) or *at the deadline*
//!   (`race_ms` after it): the latter races the workers' claims and transitions.
//!
//! Agents act on the store directly (they are the support application, not workers under
//! test): each action is one atomic step at its instant, recorded as a world note. They place
//! holds until the liveness phase ends.
//! - *store change*: an agent's action as the store sees it ([`StoreChange`]), told to the
//!   world right after the simulated store made it ([`World::services_changed`]), so a real
//!   run's store hook makes the same change on the real store. A simulated run has no hook:
//!   telling it draws nothing and emits nothing.

use std::rc::Rc;

use leasesim_sim::{EPOCH_MS, World};

use crate::Reservations;
use crate::events::{Note, StatusView};
use crate::settings::AgentsSection;

/// A change the agents made to the store outside any worker's request, with what the
/// simulated store answered (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreChange {
    /// A hold was placed: the id the store gave it, its deadline, whether it is malformed.
    Placed {
        id: u32,
        hold_until_ms: u64,
        malformed: bool,
    },
    /// Hold `id` was consumed (its deadline), or the consume was refused (the status found).
    Consumed {
        id: u32,
        outcome: Result<u64, StatusView>,
    },
}

/// The agents of one run: the backlog, then a placement every `place_every_ms`.
pub async fn agents(world: Rc<World<Reservations>>) {
    let env = world.env();
    let agents = world.scenario().settings.agents.clone();
    let end_ms = world.scenario().duration_ms + world.scenario().liveness_ms;
    for _ in 0..agents.backlog {
        // Overdue by up to a hold's length; value 0: due right at the start.
        let overdue_ms = env.range(0, agents.hold_ms.max);
        place(&world, &agents, EPOCH_MS.saturating_sub(overdue_ms));
    }
    let every = agents.place_every_ms;
    loop {
        // The longest pause is value 0, the simplest: fewer holds, shorter traces.
        env.sleep(every.max - env.range(0, every.max - every.min))
            .await;
        if env.now_ms() >= end_ms {
            return;
        }
        let hold_ms = env.range(agents.hold_ms.min, agents.hold_ms.max);
        place(&world, &agents, world.service_now_ms() + hold_ms);
    }
}

/// Places one hold due at `hold_until_ms`, and maybe schedules its consume.
fn place(world: &Rc<World<Reservations>>, agents: &AgentsSection, hold_until_ms: u64) {
    let env = world.env();
    let malformed = world.fault(world.profile().system.malformed);
    let id = world.services().store.place(hold_until_ms, malformed);
    world.services_changed(&StoreChange::Placed {
        id,
        hold_until_ms,
        malformed,
    });
    env.note(Note::Placed {
        id,
        hold_until_ms,
        malformed,
    });
    if !env.coin(agents.consume.get()) {
        return;
    }
    let now_ms = world.service_now_ms();
    let at_ms = if env.coin(agents.at_deadline.get()) {
        hold_until_ms + env.range(agents.race_ms.min, agents.race_ms.max)
    } else {
        // Early: anywhere from now to just before the deadline (value 0: at once).
        now_ms + env.range(0, hold_until_ms.saturating_sub(now_ms + 1))
    };
    let world_for_task = world.clone();
    leasesim_sim::phases::spawn(world, "consume", async move {
        consume_at(world_for_task, id, at_ms).await;
    });
}

/// An agent consumes `id` at store time `at_ms`.
async fn consume_at(world: Rc<World<Reservations>>, id: u32, at_ms: u64) {
    let env = world.env();
    env.sleep_until(at_ms.saturating_sub(EPOCH_MS)).await;
    let consumed = world.services().store.consume(id);
    world.services_changed(&StoreChange::Consumed {
        id,
        outcome: consumed,
    });
    let note = match consumed {
        Ok(hold_until_ms) => Note::Consumed { id, hold_until_ms },
        Err(status) => Note::ConsumeRefused { id, status },
    };
    env.note(note);
}
