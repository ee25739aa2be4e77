//! The toy's one service: a counter guarded by a claim, applied at the apply instant.
//!
//! Terminology:
//! - *live claim*: the last claim granted, unless it expired (`now >= expires_at_ms`) or was
//!   dropped by the `claim_lost` fault.
//! - *fence*: a bump is applied only with the live claim's token; otherwise it is refused
//!   (`Applied::Fenced`), unless the scenario switched fencing off.
//! - *service time*: `leasesim_sim::EPOCH_MS` + virtual time (`World::service_now_ms`).

use leasesim_events::ReplicaId;
use leasesim_sim::{Apply, FaultProfile, Scenario, World};

use super::events::{Answer, Applied, Note, Request, Toy};
use super::settings::ClaimSection;

/// The claim the service granted last.
#[derive(Clone, Copy, Debug)]
struct Claim {
    token: u64,
    expires_at_ms: u64,
}

/// The counter service's state in one run.
#[derive(Debug)]
pub struct Counter {
    ttl_ms: u64,
    fencing: bool,
    claim: Option<Claim>,
    last_token: u64,
    count: u64,
}

impl Counter {
    /// No claim yet, the counter at zero.
    pub fn new(section: &ClaimSection) -> Counter {
        Counter {
            ttl_ms: section.ttl_ms.get(),
            fencing: section.fencing,
            claim: None,
            last_token: 0,
            count: 0,
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    fn live(&self, now_ms: u64) -> Option<Claim> {
        self.claim.filter(|claim| now_ms < claim.expires_at_ms)
    }

    /// Grants a new claim when none is live.
    fn claim(&mut self, now_ms: u64) -> (Applied, Answer) {
        if let Some(live) = self.live(now_ms) {
            let holder_token = live.token;
            return (Applied::Busy { holder_token }, Answer::Busy);
        }
        let token = self.last_token + 1;
        let expires_at_ms = now_ms + self.ttl_ms;
        self.claim = Some(Claim {
            token,
            expires_at_ms,
        });
        self.last_token = token;
        // invariant: the granted claim is live now, with a token above every earlier one.
        debug_assert_eq!(self.live(now_ms).map(|c| c.token), Some(token));
        (
            Applied::Granted {
                token,
                expires_at_ms,
            },
            Answer::Granted(token),
        )
    }

    /// Bumps the counter when `token` is the live claim's (or fencing is off).
    fn bump(&mut self, token: u64, now_ms: u64) -> (Applied, Answer) {
        let live_token = self.live(now_ms).map(|claim| claim.token);
        if self.fencing && live_token != Some(token) {
            return (Applied::Fenced { token, live_token }, Answer::Fenced);
        }
        let before = self.count;
        self.count += 1;
        // invariant: an applied bump adds exactly one.
        assert_eq!(self.count, before + 1);
        let count = self.count;
        (Applied::Bumped { token, count }, Answer::Bumped(count))
    }

    /// Fault: drops the live claim; returns its token.
    fn drop_claim(&mut self, now_ms: u64) -> Option<u64> {
        let dropped = self.live(now_ms).map(|claim| claim.token);
        self.claim = None;
        // invariant: nothing is live after a drop.
        debug_assert!(self.live(now_ms).is_none());
        dropped
    }
}

/// The toy's service: the counter.
impl Apply for Toy {
    type Services = Counter;

    fn services(scenario: &Scenario<Toy>, profile: &FaultProfile<Toy>) -> Counter {
        let _ = profile;
        Counter::new(&scenario.settings.claim)
    }

    /// Applies `request` at the counter now (the replica does not matter to this service).
    fn apply(world: &World<Toy>, replica: ReplicaId, request: Request) -> (Applied, Answer) {
        let _ = replica;
        let now_ms = world.service_now_ms();
        match request {
            Request::Claim => world.services().claim(now_ms),
            Request::Bump { token } => {
                if world.fault(world.profile().system.claim_lost) {
                    let dropped = world.services().drop_claim(now_ms);
                    if let Some(token) = dropped {
                        world.env().note(Note::ClaimLost { token });
                    }
                }
                world.services().bump(token, now_ms)
            }
        }
    }
}
