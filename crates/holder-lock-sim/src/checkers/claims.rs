//! Whose claim is it: `delete-own-claim`, `no-third-worker`, `job-under-claim`,
//! `claim-kept`.
//!
//! Terminology:
//! - *own claim*: an entry of the claim key made by the attempt in question (the claim
//!   model attributes each entry to the attempt whose request wrote it).
//! - *foreign removal*: a delete or overwrite by one attempt of a live entry another made.
//! - *running job*: between `JobStarted` and `JobFinished`/`JobFailed`, or until its attempt
//!   sends its release or ends (a dropped job takes no further step; `effects-under-claim`
//!   checks that).
//! - *explained overlap*: a job may start beside a running one only if the running one's
//!   claim had run out by the time the new claim was made; anything else is design 004's
//!   "third worker": a job let in by a release that freed a claim which was not its own. A
//!   claim the store forgot (eviction, failover, restart) counts as run out at that instant;
//!   a failover that undid a renewal moves its end back to the one it had before.
//! - *unaware start*: the store forgot the claim between its create's apply and the job's
//!   start, before the claim would have run out; the worker cannot know, so
//!   `job-under-claim` excuses that start (and nothing else: a start after a renewal said so,
//!   of another attempt, or after the forgotten claim would have run out stays a violation).
//! - *healthy holder*: in the liveness phase (faults healed), an attempt started after the
//!   healing on a replica that is not paused.

use leasesim_events::{ReplicaId, mask};
use leasesim_invariants::{At, PerReplica};

use crate::HolderLock;
use crate::events::{EPOCH_MS, Event, EventKind, Note, Phase, Stamped, TokenText, notes};

use super::facts::Facts;
use super::track::{AttemptRef, Attempts, Change, ClaimModel, ClaimRecord};
use super::{CheckConfig, Checker, Invariant, Violation};

/// What the claim checkers read: the worker side, the store's applies and forgettings, and
/// the notes.
fn claim_events(kind: &EventKind) -> bool {
    let wanted = mask::CALL
        | mask::ANSWERED
        | mask::APPLIED
        | mask::RESTARTED
        | notes::ATTEMPTS
        | notes::JOB
        | notes::FORGOT;
    kind.bit() & wanted != 0
}

/// `delete-own-claim`: every removal of a live claim entry is by the attempt that made it.
#[derive(Debug, Default)]
pub struct DeleteOwnClaim {
    /// Every entry of the claim key made so far (for the sentence: when the deleting
    /// attempt's own claim ran out).
    made: Vec<ClaimRecord>,
}

impl DeleteOwnClaim {
    pub fn new() -> DeleteOwnClaim {
        DeleteOwnClaim::default()
    }

    fn judge(
        &self,
        event: &Stamped<Event>,
        removed: &ClaimRecord,
        by: AttemptRef,
        attempts: &Attempts,
    ) -> Violation {
        let own = self.made.iter().rev().find(|r| r.attempt == Some(by));
        let own_words = match own {
            Some(own) if own.live_at(event.at_ms) => {
                format!("; its own claim (token {}) was live", TokenText(own.token))
            }
            Some(own) => format!(
                "; its own claim (token {}) had run out at {}",
                TokenText(own.token),
                At(own.ends_at_ms())
            ),
            None => "; it never held the claim".into(),
        };
        let sentence = format!(
            "{by} deleted the claim at {}, but it held {}, made at {}{own_words}",
            At(event.at_ms),
            removed.describe(),
            At(removed.made.at_ms),
        );
        let sent = attempts.booked(call_of(event)).map(|b| &b.sent);
        let context = [own.map(|r| &r.made), Some(&removed.made), sent];
        Violation::new(Invariant::DeleteOwnClaim, event, context, sentence)
    }
}

fn call_of(event: &Stamped<Event>) -> u64 {
    match event.event.kind {
        EventKind::Applied { call, .. } | EventKind::Call { call, .. } => call,
        _ => 0,
    }
}

impl Checker<HolderLock> for DeleteOwnClaim {
    fn invariant(&self) -> Invariant {
        Invariant::DeleteOwnClaim
    }

    /// Only the store's applies: the facts follow the attempts and the claim key.
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::APPLIED != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let made = facts.claims_after().current();
        if let Some(record) = made.filter(|r| r.made.seq == event.seq) {
            self.made.push(record.clone());
        }
        match facts.change() {
            Some(Change::Removed {
                removed,
                by: Some(by),
            }) if removed.attempt != Some(*by) => {
                Some(self.judge(event, removed, *by, facts.after()))
            }
            _ => None,
        }
    }
}

/// A running job and the claim its attempt made.
#[derive(Debug, Clone)]
struct Running {
    attempt: AttemptRef,
    started: Stamped<Event>,
    claim: Option<ClaimRecord>,
    /// A removal of its live claim by another attempt: who, and the event.
    removed_by: Option<(AttemptRef, Stamped<Event>)>,
}

/// `no-third-worker`: a job starts beside a running one only if that one's claim had run
/// out by the time the new claim was made.
#[derive(Debug, Default)]
pub struct NoThirdWorker {
    running: Vec<Running>,
}

impl NoThirdWorker {
    pub fn new() -> NoThirdWorker {
        NoThirdWorker::default()
    }

    /// Follows the store's applies and forgettings: claims made, renewed, removed, forgotten.
    fn applied(&mut self, event: &Stamped<Event>, facts: &Facts) {
        match facts.change() {
            Some(Change::Forgot { lost, restored }) => {
                // A forgotten claim ran out at the forgetting, or at its end before the
                // renewal a failover undid.
                let end_ms = match restored {
                    Some(r) if r.made.seq == lost.made.seq => r.expires_at_ms,
                    _ => EPOCH_MS + event.at_ms,
                };
                let victim = self.running.iter_mut().filter_map(|job| job.claim.as_mut());
                for claim in victim.filter(|c| c.made.seq == lost.made.seq) {
                    claim.expires_at_ms = end_ms;
                }
            }
            Some(Change::Renewed) => {
                let current = facts.claims_after().current();
                for job in &mut self.running {
                    if let Some(claim) = job.claim.as_mut()
                        && current.is_some_and(|c| c.made.seq == claim.made.seq)
                    {
                        claim.expires_at_ms = current.map_or(0, |c| c.expires_at_ms);
                    }
                }
            }
            Some(Change::Removed { removed, by }) => {
                let victim = self.running.iter_mut().find(|job| {
                    job.claim
                        .as_ref()
                        .is_some_and(|c| c.made.seq == removed.made.seq)
                });
                if let (Some(job), Some(by)) = (victim, *by)
                    && by != job.attempt
                {
                    job.removed_by = Some((by, event.clone()));
                }
            }
            _ => {}
        }
    }

    /// A job starts: every other running job's claim must have run out before this one's
    /// claim was made.
    fn started(
        &mut self,
        event: &Stamped<Event>,
        replica: ReplicaId,
        facts: &Facts,
    ) -> Option<Violation> {
        let attempt = facts.after().open(replica)?.id;
        let claim = facts
            .claims_after()
            .current()
            .filter(|c| c.attempt == Some(attempt))
            .cloned();
        let job = Running {
            attempt,
            started: event.clone(),
            claim: claim.clone(),
            removed_by: None,
        };
        self.running
            .retain(|other| other.attempt.replica != replica);
        let made_ms = claim.as_ref().map(|c| c.made.at_ms);
        let unexplained = self.running.iter().find(|other| {
            let other_ends_ms = other.claim.as_ref().map(ClaimRecord::ends_at_ms);
            matches!((made_ms, other_ends_ms), (Some(made), Some(ends)) if ends > made)
        });
        let violation = unexplained.map(|other| self.judge(event, &job, other));
        self.running.push(job);
        violation
    }

    fn judge(&self, event: &Stamped<Event>, job: &Running, other: &Running) -> Violation {
        let claim = other.claim.as_ref().expect("judged only with a claim");
        let why = match &other.removed_by {
            Some((by, removal)) => format!(": {by} deleted it at {}", At(removal.at_ms)),
            None => ": it was still in the store".into(),
        };
        let made_ms = job.claim.as_ref().map_or(0, |c| c.made.at_ms);
        let sentence = format!(
            "{}'s job started at {} (claim made at {}) while {}'s job was still running, and \
             {}'s claim ({}) would have held the key until {}{why}; only a claim that ran out \
             lets a second job in",
            job.attempt,
            At(event.at_ms),
            At(made_ms),
            other.attempt,
            other.attempt.replica,
            TokenText(claim.token),
            At(claim.ends_at_ms()),
        );
        let removal = other.removed_by.as_ref().map(|(_, e)| e);
        let context = [
            Some(&other.started),
            Some(&claim.made),
            removal,
            job.claim.as_ref().map(|c| &c.made),
        ];
        Violation::new(Invariant::NoThirdWorker, event, context, sentence)
    }
}

impl Checker<HolderLock> for NoThirdWorker {
    fn invariant(&self) -> Invariant {
        Invariant::NoThirdWorker
    }

    fn wants(&self, kind: &EventKind) -> bool {
        claim_events(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        if let EventKind::Applied { .. } | EventKind::Note(Note::Forgot { .. }) = event.event.kind {
            self.applied(event, facts);
            return None;
        }
        let replica = event.event.replica?;
        let verdict = match event.event.kind {
            EventKind::Note(Note::JobStarted { .. }) => self.started(event, replica, facts),
            _ => None,
        };
        // A job stops running at its end, at its attempt's release call or end.
        let still = |job: &Running, attempts: &Attempts| {
            attempts
                .open(job.attempt.replica)
                .is_some_and(|open| open.id == job.attempt && open.job_running())
        };
        let attempts = facts.after();
        self.running.retain(|job| still(job, attempts));
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

/// `job-under-claim`: a job starts only while the store holds its attempt's claim, after its
/// create won.
#[derive(Debug, Default)]
pub struct JobUnderClaim {}

impl JobUnderClaim {
    pub fn new() -> JobUnderClaim {
        JobUnderClaim::default()
    }
}

impl Checker<HolderLock> for JobUnderClaim {
    fn invariant(&self) -> Invariant {
        Invariant::JobUnderClaim
    }

    /// Job notes only (a job's start is judged): the facts follow the rest.
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & notes::JOB != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let EventKind::Note(Note::JobStarted { .. }) = event.event.kind else {
            return None;
        };
        let replica = event.event.replica?;
        let Some(open) = facts.after().open(replica) else {
            let sentence = format!(
                "{replica} started a job at {} outside any attempt",
                At(event.at_ms)
            );
            return Some(Violation::new(
                Invariant::JobUnderClaim,
                event,
                [],
                sentence,
            ));
        };
        let model = facts.claims_after();
        let live = model.live(event.at_ms);
        let holds = live.is_some_and(|c| c.attempt == Some(open.id));
        // An unaware start (see the module docs) is excused; nothing else is.
        let unaware = open.lost.is_none() && model.ghost_of(open.id, event.at_ms).is_some();
        if open.won.is_some() && (holds || unaware) {
            return None;
        }
        let why = match (&open.won, live) {
            (None, _) => "its create had not won".to_string(),
            (Some(_), Some(other)) => format!("the store held {}", other.describe()),
            (Some(_), None) => match model.current().filter(|c| c.attempt == Some(open.id)) {
                Some(own) => format!("its claim had run out at {}", At(own.ends_at_ms())),
                None => "the key was absent".into(),
            },
        };
        let sentence = format!(
            "{} started its job at {}, but {why}",
            open.id,
            At(event.at_ms)
        );
        let context = [
            Some(&open.started),
            open.create.as_ref().map(|(_, e)| e),
            open.won.as_ref(),
            live.map(|c| &c.made),
        ];
        Some(Violation::new(
            Invariant::JobUnderClaim,
            event,
            context,
            sentence,
        ))
    }
}

/// `claim-kept`: with renewal on, in the liveness phase, no claim of a healthy holder runs out
/// while its attempt still holds it.
#[derive(Debug)]
pub struct ClaimKept {
    renewal: bool,
    healed_ms: Option<u64>,
    paused_until_ms: PerReplica<u64>,
    /// Attempts judged: started after the healing, on a replica not paused then.
    healthy: Vec<AttemptRef>,
}

impl ClaimKept {
    pub fn new(config: &CheckConfig) -> ClaimKept {
        ClaimKept {
            renewal: config.renewal,
            healed_ms: None,
            paused_until_ms: PerReplica::default(),
            healthy: Vec::new(),
        }
    }

    /// The holder of the current claim (per `model` and `attempts`, one view), if it is a
    /// healthy attempt that still holds it.
    fn holder<'a>(
        &self,
        model: &'a ClaimModel,
        attempts: &Attempts,
    ) -> Option<(&'a ClaimRecord, AttemptRef)> {
        let claim = model.current()?;
        let attempt = claim.attempt.filter(|a| self.healthy.contains(a))?;
        let open = attempts.open(attempt.replica)?;
        let holds = open.id == attempt && open.won.is_some() && open.released.is_none();
        holds.then_some((claim, attempt))
    }

    /// Judged on the before view: at `at_ms`, before `event` changes anything.
    fn judge(&self, event: &Stamped<Event>, at_ms: u64, facts: &Facts) -> Option<Violation> {
        let attempts = facts.before();
        let (claim, attempt) = self.holder(facts.claims_before(), attempts)?;
        if claim.live_at(at_ms) {
            return None;
        }
        let sentence = format!(
            "{attempt}'s claim ({}) ran out at {} while it still held it for its job, with \
             renewal on and faults healed",
            TokenText(claim.token),
            At(claim.ends_at_ms())
        );
        let started = attempts.open(attempt.replica).map(|o| &o.started);
        let context = [started, Some(&claim.made)];
        Some(Violation::new(
            Invariant::ClaimKept,
            event,
            context,
            sentence,
        ))
    }

    fn follow(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            EventKind::Phase(Phase::Liveness) => self.healed_ms = Some(event.at_ms),
            EventKind::Paused { until_ms } => {
                if let Some(replica) = event.event.replica {
                    *self.paused_until_ms.at(replica) = until_ms;
                }
            }
            EventKind::Note(Note::AttemptStarted { attempt }) => {
                let Some(replica) = event.event.replica else {
                    return;
                };
                let paused = *self.paused_until_ms.at(replica) > event.at_ms;
                let healed = self.healed_ms.is_some_and(|at| at <= event.at_ms);
                if healed && !paused {
                    let seq = event.seq;
                    let number = attempt;
                    self.healthy.push(AttemptRef {
                        replica,
                        number,
                        seq,
                    });
                }
            }
            _ => {}
        }
    }
}

impl Checker<HolderLock> for ClaimKept {
    fn invariant(&self) -> Invariant {
        Invariant::ClaimKept
    }

    fn wants(&self, kind: &EventKind) -> bool {
        self.renewal
            && (claim_events(kind)
                || kind.bit() & (mask::PHASE | mask::PAUSED | notes::EXPIRED) != 0)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        if !self.renewal {
            return None;
        }
        // Judged before this event changes anything: at its instant, was the claim kept?
        let verdict = self.judge(event, event.at_ms, facts);
        if verdict.is_some() {
            return verdict;
        }
        self.follow(event);
        None
    }

    fn finish(&mut self, end_ms: u64, facts: &Facts) -> Option<Violation> {
        // After the last event the before view has caught up with the after view.
        let (claim, _) = self.holder(facts.claims_before(), facts.before())?;
        let last = claim.made.clone();
        self.judge(&last, end_ms, facts).map(|v| v.dated(end_ms))
    }
}
