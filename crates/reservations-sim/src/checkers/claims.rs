//! Claims, worker side: `fresh-claim-token`, `expire-claimed`, `claim-released`,
//! `idle-pause`.
//!
//! Terminology:
//! - *poll*: a claim call, or the read of a read-then-write claim (`read_due`); the claim
//!   writes that follow a read belong to its poll and share its token.
//! - *held*: a reservation the replica was answered as claimed and has not sent a release for
//!   (see the desk in [`super::track`]).
//! - *idle poll*: a poll that answered no reservation, or failed.

use std::collections::BTreeMap;

use leasesim_events::mask;
use leasesim_invariants::{At, Checker, PerReplica, Violation};

use super::Facts;
use super::track::{Desk, PollEnd, Stamp};
use super::{CheckConfig, Invariant, WORKER_EVENTS};
use crate::Reservations;
use crate::events::{EventKind, Note, ReplicaId, Request, notes};

type Found = Option<Violation<Reservations>>;

/// Runs `judge` on the desk of the event's replica as it was before the event.
fn judged(facts: &Facts, event: &Stamp, judge: impl FnOnce(ReplicaId, &Desk) -> Found) -> Found {
    let replica = event.event.replica?;
    judge(replica, facts.desk(replica))
}

/// Which replica and poll first used a token.
#[derive(Debug)]
struct FirstUse {
    replica: ReplicaId,
    poll: u64,
    event: Stamp,
}

/// `fresh-claim-token`: a claim's token was never used by an earlier poll of any worker.
#[derive(Debug, Default)]
pub struct FreshClaimToken {
    used: BTreeMap<u64, FirstUse>,
    /// Per replica, its polls so far.
    polls: PerReplica<u64>,
}

impl FreshClaimToken {
    fn judge(&mut self, event: &Stamp, replica: ReplicaId, token: u64) -> Found {
        let poll = *self.polls.at(replica);
        let Some(first) = self.used.get(&token) else {
            let first = FirstUse {
                replica,
                poll,
                event: event.clone(),
            };
            self.used.insert(token, first);
            return None;
        };
        if first.replica == replica && first.poll == poll {
            return None;
        }
        let whose = match first.replica == replica {
            true => "its own earlier claim".to_string(),
            false => format!("{}'s claim", first.replica),
        };
        let sentence = format!(
            "{replica} claimed with token {token} at {}, but {whose} had used that token at {}",
            At(event.at_ms),
            At(first.event.at_ms)
        );
        let context = [Some(&first.event)];
        Some(Violation::new(
            Invariant::FreshClaimToken,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<Reservations> for FreshClaimToken {
    fn invariant(&self) -> Invariant {
        Invariant::FreshClaimToken
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::CALL != 0
    }

    fn on_event(&mut self, event: &Stamp, _facts: &Facts) -> Found {
        let replica = event.event.replica?;
        match event.event.kind {
            EventKind::Call { request, .. } if request.is_poll() => {
                *self.polls.at(replica) += 1;
                match request {
                    Request::Claim { token, .. } => self.judge(event, replica, token),
                    _ => None,
                }
            }
            EventKind::Call {
                request: Request::WriteClaim { token, .. },
                ..
            } => self.judge(event, replica, token),
            _ => None,
        }
    }
}

/// `bounded-claim`: a claim asks for at most the batch, for the configured claim duration.
#[derive(Debug)]
pub struct BoundedClaim {
    batch_size: u32,
    claim_for_ms: u64,
}

impl BoundedClaim {
    pub fn new(config: &CheckConfig) -> BoundedClaim {
        BoundedClaim {
            batch_size: config.batch_size,
            claim_for_ms: config.claim_for_ms,
        }
    }

    /// What is wrong with a claim asking for `limit` (if a poll) for `claim_for_ms`.
    fn wrong(&self, limit: Option<u32>, claim_for_ms: Option<u64>) -> Option<String> {
        if let Some(limit) = limit.filter(|limit| *limit > self.batch_size) {
            return Some(format!(
                "asked for {limit}, above the batch of {}",
                self.batch_size
            ));
        }
        let claim_for_ms = claim_for_ms.filter(|ms| *ms != self.claim_for_ms)?;
        Some(format!(
            "claimed for {claim_for_ms}ms, not the configured {}ms",
            self.claim_for_ms
        ))
    }
}

impl Checker<Reservations> for BoundedClaim {
    fn invariant(&self) -> Invariant {
        Invariant::BoundedClaim
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::CALL != 0
    }

    fn on_event(&mut self, event: &Stamp, _facts: &Facts) -> Found {
        let EventKind::Call { request, .. } = event.event.kind else {
            return None;
        };
        let (limit, claim_for_ms) = match request {
            Request::Claim {
                limit,
                claim_for_ms,
                ..
            } => (Some(limit), Some(claim_for_ms)),
            Request::ReadDue { limit, .. } => (Some(limit), None),
            Request::WriteClaim { claim_for_ms, .. } => (None, Some(claim_for_ms)),
            _ => return None,
        };
        let why = self.wrong(limit, claim_for_ms)?;
        let replica = event.event.replica?;
        let sentence = format!("{replica}'s claim at {} {why}", At(event.at_ms));
        Some(Violation::new(Invariant::BoundedClaim, event, [], sentence))
    }
}

/// `expire-claimed`: a transition is sent only for a reservation the sender holds.
#[derive(Debug, Default)]
pub struct ExpireClaimed {}

impl Checker<Reservations> for ExpireClaimed {
    fn invariant(&self) -> Invariant {
        Invariant::ExpireClaimed
    }

    /// Calls only (a call is judged; the facts follow the rest of the worker side).
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::CALL != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        judged(facts, event, |replica, desk| {
            let EventKind::Call { request, .. } = event.event.kind else {
                return None;
            };
            let id = request.id().filter(|_| request.is_expire())?;
            if desk.claimed(id).is_some() {
                return None;
            }
            let sentence = format!(
                "{replica} sent a transition of h{id} at {}, but held no claim on it",
                At(event.at_ms)
            );
            let context = desk.recent.iter();
            Some(Violation::new(
                Invariant::ExpireClaimed,
                event,
                context,
                sentence,
            ))
        })
    }
}

/// `claim-released`: every held reservation is released, with its claim's token, before the
/// next poll and before the run ends.
#[derive(Debug, Default)]
pub struct ClaimReleased {}

fn unreleased(replica: ReplicaId, desk: &Desk, event: &Stamp, before: &str) -> Found {
    let held = desk.claimed.first()?;
    let sentence = format!(
        "{replica} {before} at {}, but had not released h{} (claimed with token {} at {})",
        At(event.at_ms),
        held.id,
        held.token,
        At(held.answered.at_ms)
    );
    let context = [Some(&held.answered)].into_iter().chain(desk.recent.iter());
    Some(Violation::new(
        Invariant::ClaimReleased,
        event,
        context,
        sentence,
    ))
}

fn judge_release(replica: ReplicaId, desk: &Desk, event: &Stamp) -> Found {
    match event.event.kind {
        EventKind::Call {
            request: Request::Release { id, token },
            ..
        } => {
            let held = desk.claimed(id)?;
            (held.token != token).then(|| {
                let sentence = format!(
                    "{replica} released h{id} with token {token} at {}, but had claimed it with \
                     token {} at {}",
                    At(event.at_ms),
                    held.token,
                    At(held.answered.at_ms)
                );
                let context = [Some(&held.answered)];
                Violation::new(Invariant::ClaimReleased, event, context, sentence)
            })
        }
        EventKind::Call { request, .. } if request.is_poll() => {
            unreleased(replica, desk, event, "sent its next claim")
        }
        EventKind::Note(Note::RunEnded { .. }) => unreleased(replica, desk, event, "ended its run"),
        _ => None,
    }
}

impl Checker<Reservations> for ClaimReleased {
    fn invariant(&self) -> Invariant {
        Invariant::ClaimReleased
    }

    /// Calls and run notes (a poll or a run's end is judged; the facts follow the rest).
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & (mask::CALL | notes::RUNS) != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        judged(facts, event, |replica, desk| {
            judge_release(replica, desk, event)
        })
    }
}

/// `idle-pause`: after an idle poll, the next poll follows a pause of the idle length.
#[derive(Debug)]
pub struct IdlePause {
    idle_ms: u64,
    jitter_ms: u64,
}

impl IdlePause {
    pub fn new(config: &CheckConfig) -> IdlePause {
        IdlePause {
            idle_ms: config.idle_ms,
            jitter_ms: config.idle_jitter_ms,
        }
    }

    fn judge(&self, replica: ReplicaId, desk: &Desk, event: &Stamp) -> Found {
        let EventKind::Call { request, .. } = event.event.kind else {
            return None;
        };
        let (PollEnd::Idle, idle) = desk.poll.as_ref()? else {
            return None;
        };
        if !request.is_poll() {
            return None;
        }
        let (low, high) = (self.idle_ms, self.idle_ms + self.jitter_ms);
        let why = match &desk.poll_pause {
            None => "without a pause".to_string(),
            Some((pause_ms, _)) if (low..=high).contains(pause_ms) => return None,
            Some((pause_ms, _)) => format!("after a pause of {pause_ms}ms"),
        };
        let sentence = format!(
            "{replica} claimed again at {} {why}, after its claim at {} found nothing (the idle \
             pause is {low}..{high}ms)",
            At(event.at_ms),
            At(idle.at_ms)
        );
        let pause = desk.poll_pause.as_ref().map(|(_, e)| e);
        let context = [Some(idle), pause];
        Some(Violation::new(
            Invariant::IdlePause,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<Reservations> for IdlePause {
    fn invariant(&self) -> Invariant {
        Invariant::IdlePause
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & WORKER_EVENTS != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        let replica = event.event.replica?;
        self.judge(replica, facts.desk(replica), event)
    }
}
