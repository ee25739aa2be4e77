//! The toy's judgement: its invariants, their checkers, its "sometimes" situations.
//!
//! Terminology:
//! - *stale bump* (service side): a bump the counter applied although its token was not the
//!   live claim's at that instant. The checker follows the claims itself (grants, expiries,
//!   drops) and never trusts the service's fence: with fencing off it must still see it.
//! - *claimed bump* (worker side): a worker sends a bump only in a round whose claim was
//!   granted to it, with that claim's token, and at most once per round.
//! - *situation*: a moment a campaign must reach at least once (a fenced bump...).

use leasesim_events::{EPOCH_MS, EventKind, Stamped, mask};
use leasesim_invariants::{At, Checker, Coverage, Judged, PerReplica, Violation};

use leasesim_sim::{Checks, FaultProfile, Scenario};

use super::events::{Answer, Applied, CLAIM_NOTES, Event, Note, ROUND_NOTES, Request, Toy};

leasesim_invariants::situations! {
    /// The fence refused a bump.
    BumpFenced = "bump-fenced",
        "the fence refused a bump carrying a token that was not live";
    /// The `claim_lost` fault dropped a live claim.
    ClaimLost = "claim-lost",
        "the service dropped a live claim (fault)";
}

/// The last claim granted, as the checker saw it.
#[derive(Debug)]
struct Grant {
    token: u64,
    expires_at_ms: u64,
    event: Stamped<Event>,
}

/// `stale-bump`: follows grants, expiries and drops; judges every applied bump.
#[derive(Debug, Default)]
pub struct StaleBump {
    granted: Option<Grant>,
}

impl StaleBump {
    fn judge(&self, event: &Stamped<Event>, token: u64) -> Option<Violation<Toy>> {
        let now_ms = EPOCH_MS + event.at_ms;
        let live = self.granted.as_ref().filter(|g| now_ms < g.expires_at_ms);
        if live.is_some_and(|grant| grant.token == token) {
            return None;
        }
        let replica = event.event.replica?;
        let at = At(event.at_ms);
        let sentence = match live {
            Some(grant) => format!(
                "the counter applied {replica}'s bump with token {token} at {at}, but the live \
                 claim was token {}",
                grant.token
            ),
            None => format!(
                "the counter applied {replica}'s bump with token {token} at {at}, but no claim \
                 was live"
            ),
        };
        let context = [self.granted.as_ref().map(|g| &g.event)];
        Some(Violation::new(
            Invariant::StaleBump,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<Toy> for StaleBump {
    fn invariant(&self) -> Invariant {
        Invariant::StaleBump
    }

    fn wants(&self, kind: &EventKind<Toy>) -> bool {
        kind.bit() & (mask::APPLIED | mask::note(CLAIM_NOTES)) != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, _facts: &()) -> Option<Violation<Toy>> {
        match event.event.kind {
            EventKind::Applied {
                applied:
                    Applied::Granted {
                        token,
                        expires_at_ms,
                    },
                ..
            } => {
                let event = event.clone();
                self.granted = Some(Grant {
                    token,
                    expires_at_ms,
                    event,
                });
                None
            }
            EventKind::Note(Note::ClaimLost { .. }) => {
                self.granted = None;
                None
            }
            EventKind::Applied {
                applied: Applied::Bumped { token, .. },
                ..
            } => self.judge(event, token),
            _ => None,
        }
    }
}

/// One replica's current round, as `claimed-bump` follows it.
#[derive(Debug, Default)]
struct Round {
    round: u32,
    /// The token its claim was granted in this round, and that answer.
    granted: Option<(u64, Stamped<Event>)>,
    /// Bumps sent in this round.
    bumps: u32,
}

/// `claimed-bump`: per replica, the round's granted claim and the bumps sent in it.
#[derive(Debug, Default)]
pub struct ClaimedBump {
    rounds: PerReplica<Round>,
}

impl Checker<Toy> for ClaimedBump {
    fn invariant(&self) -> Invariant {
        Invariant::ClaimedBump
    }

    fn wants(&self, kind: &EventKind<Toy>) -> bool {
        kind.bit() & (mask::CALL | mask::ANSWERED | mask::note(ROUND_NOTES)) != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, _facts: &()) -> Option<Violation<Toy>> {
        let replica = event.event.replica?;
        let round = self.rounds.at(replica);
        match event.event.kind {
            EventKind::Note(Note::RoundStarted { round: number }) => {
                *round = Round {
                    round: number,
                    ..Round::default()
                };
            }
            EventKind::Answered {
                answer: Answer::Granted(token),
                ..
            } => round.granted = Some((token, event.clone())),
            EventKind::Call {
                request: Request::Bump { token },
                ..
            } => {
                round.bumps += 1;
                let granted = round.granted.as_ref().map(|(granted, _)| *granted);
                let why = match granted {
                    None => "no claim was granted to it in that round".to_string(),
                    Some(granted) if granted != token => {
                        format!("its claim in that round was granted token {granted}")
                    }
                    Some(_) if round.bumps > 1 => "it had already bumped in that round".into(),
                    Some(_) => return None,
                };
                let sentence = format!(
                    "{replica} sent a bump with token {token} at {} in round {}, but {why}",
                    At(event.at_ms),
                    round.round
                );
                let context = [round.granted.as_ref().map(|(_, e)| e)];
                return Some(Violation::new(
                    Invariant::ClaimedBump,
                    event,
                    context,
                    sentence,
                ));
            }
            _ => {}
        }
        None
    }
}

leasesim_invariants::invariants! {
    system: Toy, config: (), liveness: [];
    StaleBump = "stale-bump",
        "the counter never applies a bump whose token is not live",
        |_| StaleBump::default();
    ClaimedBump = "claimed-bump",
        "a worker bumps only under the claim granted to it in the round, at most once",
        |_| ClaimedBump::default();
}

/// The situations one toy run reached.
#[derive(Debug, Default)]
pub struct ToyCoverage {
    reached: SituationSet,
}

impl Coverage<Toy> for ToyCoverage {
    fn on_event(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            EventKind::Applied {
                applied: Applied::Fenced { .. },
                ..
            } => self.reached.insert(Situation::BumpFenced),
            EventKind::Note(Note::ClaimLost { .. }) => self.reached.insert(Situation::ClaimLost),
            _ => {}
        }
    }

    fn reached(&self) -> SituationSet {
        self.reached
    }
}

impl Judged for Toy {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = ();
}

/// The toy's checkers of one run (they need nothing of what it drew).
impl Checks for Toy {
    type Checker = AnyChecker;
    type Coverage = ToyCoverage;

    fn checkers(
        scenario: &Scenario<Toy>,
        profile: &FaultProfile<Toy>,
        invariants: &[Invariant],
    ) -> Vec<AnyChecker> {
        let _ = (scenario, profile);
        invariants
            .iter()
            .map(|&i| AnyChecker::new(i, &()))
            .collect()
    }
}
