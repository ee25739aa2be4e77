//! "Sometimes" properties: situations a campaign must reach at least once.
//!
//! Terminology:
//! - *situation*: a moment a run may or may not reach (a claim's deadline passing while its
//!   job runs, a rival claiming after expiry, a release finding another token...). Reaching
//!   one proves nothing wrong; never reaching one in a campaign means it tested nothing there.
//! - Coverage is not a checker: it may read the store's own `Expired`, `Forgot` and
//!   `SlowTimer` notes and the workers' reports as they are.
//! - *forgotten job*: a running job whose claim the store forgot (`Forgot` of its token), up
//!   to the answer of its attempt's next renewal that is not `renewed`.

use leasesim_events::ReplicaId;
use leasesim_invariants::PerReplica;

use crate::events::{
    Answer, Applied, EndKind, Event, EventKind, Forgetting, Key, Note, Op, ReleaseKind, Request,
    Stamped,
};

use super::track::is_release;

leasesim_invariants::situations! {
    /// A claim's lifetime ended while its attempt's job was running.
    DeadlineMidJob = "deadline-mid-job",
        "a claim's deadline passed while its job was running";
    /// A create took over a claim whose lifetime had ended.
    RivalAfterExpiry = "rival-after-expiry",
        "a rival's create took over a claim that had run out";
    /// A release found another attempt's token.
    ReleaseFoundForeign = "release-found-foreign",
        "a release found another attempt's token";
    /// A release found the key absent.
    ReleaseFoundAbsent = "release-found-absent",
        "a release found the key absent";
    /// Two jobs ran at once: the second claimed after the first one's claim ran out.
    OverlapAfterExpiry = "overlap-after-expiry",
        "two jobs ran at once: the second claimed after the first one's claim ran out";
    /// An attempt stopped its job because it could no longer trust its claim.
    JobStoppedOnLoss = "job-stopped-on-loss",
        "a job was stopped because its claim could no longer be trusted";
    /// A create was answered only after the trusted time: no job.
    TooLateToStart = "too-late-to-start",
        "a create won but was answered after the trusted time: no job started";
    /// `stop()` while a job ran.
    StopDuringJob = "stop-during-job",
        "stop() was called while a job was running";
    /// `stop()` while a create was in flight.
    StopDuringCreate = "stop-during-create",
        "stop() was called while a create was in flight";
    /// A request was applied, its reply lost.
    ReplyLostAfterApply = "reply-lost-after-apply",
        "a request was applied but its reply was lost";
    /// A job step failed.
    JobFailed = "job-failed",
        "a job step failed";
    /// A release on a store without compare-and-delete left the claim to run out.
    LeftToExpire = "left-to-expire",
        "a store without compare-and-delete: a release left its claim to run out";
    /// The store forgot a claim while its job was running.
    ClaimLostMidJob = "claim-lost-mid-job",
        "the store forgot a claim (eviction, failover, restart) while its job ran";
    /// The store evicted the claim key.
    ClaimEvicted = "claim-evicted",
        "the store evicted the claim key under memory pressure";
    /// A failover lost a live claim, or undid its renewal.
    FailoverLostWrite = "failover-lost-write",
        "a failover lost a live claim or undid its renewal (the replica lacked the write)";
    /// The store restarted without persistence.
    StoreRestarted = "store-restarted",
        "the store restarted without persistence";
    /// A job step after the store forgot its claim, before a renewal said so.
    StepBeforeLearning = "step-before-learning",
        "a job step after the store forgot its claim, before a renewal said so (no \
                 worker can prevent it)";
    /// A job was stopped because a renewal found the key absent.
    RenewalFoundAbsent = "renewal-found-absent",
        "a job was stopped because its renewal found the key absent";
    /// A job was stopped because a renewal found another attempt's token.
    RenewalFoundForeign = "renewal-found-foreign",
        "a job was stopped because its renewal found another attempt's token";
    /// Two jobs ran at once: the second claimed after the store forgot the first one's claim.
    OverlapAfterLoss = "overlap-after-loss",
        "two jobs ran at once: the second claimed after the store forgot the first's claim";
    /// A holder whose timers run slower than the store's clock renewed its claim and released
    /// it as its own.
    SlowTimerKeptClaim = "slow-timer-kept-claim",
        "a holder whose timers run slower than the store's clock renewed and released its \
                 own claim";
    /// A replica's process paused while its job ran.
    PauseDuringJob = "pause-during-job",
        "a replica's process paused while its job ran";
    /// A job started on a claim the store had forgotten after its create won.
    StartOnForgottenClaim = "start-on-forgotten-claim",
        "a job started on a claim the store forgot after the create won, before the \
                 worker could know";
}

/// Per replica, what coverage follows.
#[derive(Debug, Default)]
struct Side {
    /// The token of its open attempt's create, while its job runs.
    job_token: Option<u64>,
    /// Its running job is a forgotten job (see the module docs).
    forgotten: bool,
    /// The store forgot its open attempt's claim before the job started.
    forgotten_before_job: bool,
    /// Creates in flight.
    creating: Vec<u64>,
    /// Renewals of its open attempt in flight.
    renewing: Vec<u64>,
    /// The answer to its open attempt's last answered renewal.
    renewal: Option<Answer>,
    /// Its open attempt had a renewal granted.
    renewed: bool,
    /// Its timers run slower than the store's clock (kept across restarts: the clock is the
    /// replica's).
    slow_timer: bool,
}

/// The situations one run reached.
#[derive(Debug, Default)]
pub struct Coverage {
    reached: SituationSet,
    sides: PerReplica<Side>,
    /// The token of each replica's open attempt's create.
    tokens: PerReplica<Option<u64>>,
}

impl Coverage {
    pub fn new() -> Coverage {
        Coverage::default()
    }

    fn reach(&mut self, situation: Situation) {
        self.reached.insert(situation);
    }

    /// Reads one event of the run.
    pub fn on_event(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            EventKind::Applied { applied, .. } => self.applied(applied),
            EventKind::ReplyLost { .. } => self.reach(Situation::ReplyLostAfterApply),
            EventKind::Note(Note::Expired {
                key: Key::Claim,
                held,
            }) => {
                let running = self
                    .sides
                    .iter()
                    .any(|(_, s)| s.job_token == Some(held.token));
                if running {
                    self.reach(Situation::DeadlineMidJob);
                }
            }
            EventKind::Note(Note::Forgot { key, cause, lost }) => self.forgot(key, cause, lost),
            _ => {}
        }
        if let Some(replica) = event.event.replica {
            self.replica_event(replica, event);
        }
    }

    /// The store forgot `key` (see `Note::Forgot`).
    fn forgot(&mut self, key: Key, cause: Forgetting, lost: Option<crate::events::Held>) {
        match cause {
            Forgetting::Eviction => self.reach(Situation::ClaimEvicted),
            Forgetting::Failover if lost.is_some() => self.reach(Situation::FailoverLostWrite),
            Forgetting::Failover => {}
            Forgetting::Restart => self.reach(Situation::StoreRestarted),
        }
        let Some(lost) = lost.filter(|_| key == Key::Claim) else {
            return;
        };
        let mut mid_job = false;
        for (replica, token) in self.tokens.iter() {
            let side = self.sides.at(replica);
            if side.job_token == Some(lost.token) {
                side.forgotten = true;
                mid_job = true;
            } else if side.job_token.is_none() && *token == Some(lost.token) {
                side.forgotten_before_job = true;
            }
        }
        if mid_job {
            self.reach(Situation::ClaimLostMidJob);
        }
    }

    fn applied(&mut self, applied: Applied) {
        if let Applied::Created {
            key: Key::Claim,
            took_over: Some(_),
            ..
        } = applied
        {
            self.reach(Situation::RivalAfterExpiry);
        }
    }

    fn replica_event(&mut self, replica: ReplicaId, event: &Stamped<Event>) {
        match event.event.kind {
            EventKind::Call {
                call,
                request: Request::Create { token, .. },
            } => {
                self.sides.at(replica).creating.push(call);
                *self.tokens.at(replica) = Some(token);
            }
            EventKind::Answered {
                call,
                op: Op::Create,
                ..
            } => self.sides.at(replica).creating.retain(|c| *c != call),
            EventKind::Call {
                call,
                request: Request::Renew { .. },
            } => self.sides.at(replica).renewing.push(call),
            EventKind::Answered {
                call,
                op: Op::Renew,
                answer,
            } => self.renewal_answered(replica, call, answer),
            EventKind::Call { request, .. } if is_release(&request) => {
                self.sides.at(replica).job_token = None;
            }
            EventKind::StopCalled => {
                let side = self.sides.at(replica);
                if side.job_token.is_some() {
                    self.reach(Situation::StopDuringJob);
                }
                if !self.sides.at(replica).creating.is_empty() {
                    self.reach(Situation::StopDuringCreate);
                }
            }
            EventKind::Paused { .. } if self.sides.at(replica).job_token.is_some() => {
                self.reach(Situation::PauseDuringJob);
            }
            EventKind::Restarted => {
                let slow_timer = self.sides.at(replica).slow_timer;
                *self.sides.at(replica) = Side {
                    slow_timer,
                    ..Side::default()
                };
            }
            EventKind::Note(note) => self.note(replica, note),
            _ => {}
        }
    }

    /// A renewal of `replica`'s open attempt was answered.
    fn renewal_answered(&mut self, replica: ReplicaId, call: u64, answer: Answer) {
        let side = self.sides.at(replica);
        let Some(index) = side.renewing.iter().position(|c| *c == call) else {
            return;
        };
        side.renewing.swap_remove(index);
        side.renewal = Some(answer);
        match answer {
            Answer::Renewed => side.renewed = true,
            _ => side.forgotten = false,
        }
    }

    fn note(&mut self, replica: ReplicaId, note: Note) {
        match note {
            Note::JobStarted { .. } => self.job_started(replica),
            Note::JobStep { .. } if self.sides.at(replica).forgotten => {
                self.reach(Situation::StepBeforeLearning);
            }
            Note::JobFinished { .. } => self.job_over(replica),
            Note::JobFailed { .. } => {
                self.job_over(replica);
                self.reach(Situation::JobFailed);
            }
            Note::AttemptStarted { .. } => {
                let side = self.sides.at(replica);
                (side.renewal, side.renewed) = (None, false);
                side.forgotten_before_job = false;
                side.renewing.clear();
            }
            Note::AttemptEnded { end, release, .. } => {
                self.job_over(replica);
                self.ended(replica, end, release);
            }
            Note::SlowTimer { .. } => self.sides.at(replica).slow_timer = true,
            _ => {}
        }
    }

    fn job_started(&mut self, replica: ReplicaId) {
        let running = self
            .sides
            .iter()
            .filter(|(_, side)| side.job_token.is_some());
        let (mut any, mut after_loss) = (false, false);
        for (_, side) in running {
            any = true;
            after_loss |= side.forgotten;
        }
        match (any, after_loss) {
            (true, true) => self.reach(Situation::OverlapAfterLoss),
            (true, false) => self.reach(Situation::OverlapAfterExpiry),
            _ => {}
        }
        let token = *self.tokens.at(replica);
        let side = self.sides.at(replica);
        let unaware = side.forgotten_before_job;
        (side.job_token, side.forgotten) = (token, unaware);
        if unaware {
            self.reach(Situation::StartOnForgottenClaim);
        }
    }

    fn job_over(&mut self, replica: ReplicaId) {
        let side = self.sides.at(replica);
        (side.job_token, side.forgotten) = (None, false);
    }

    fn ended(&mut self, replica: ReplicaId, end: EndKind, release: ReleaseKind) {
        let side = self.sides.at(replica);
        let (renewal, renewed, slow) = (side.renewal, side.renewed, side.slow_timer);
        match (end, renewal) {
            (EndKind::LostRefused, Some(Answer::Absent)) => {
                self.reach(Situation::RenewalFoundAbsent);
            }
            (EndKind::LostRefused, Some(Answer::NotHolder)) => {
                self.reach(Situation::RenewalFoundForeign);
            }
            _ => {}
        }
        let own = matches!(release, ReleaseKind::Deleted | ReleaseKind::LeftToExpire);
        if slow && renewed && own {
            self.reach(Situation::SlowTimerKeptClaim);
        }
        match end {
            EndKind::LostRefused | EndKind::LostFailed | EndKind::LostNotRenewed => {
                self.reach(Situation::JobStoppedOnLoss);
            }
            EndKind::TooLate => self.reach(Situation::TooLateToStart),
            _ => {}
        }
        match release {
            ReleaseKind::GoneForeign => self.reach(Situation::ReleaseFoundForeign),
            ReleaseKind::GoneAbsent => self.reach(Situation::ReleaseFoundAbsent),
            ReleaseKind::LeftToExpire => self.reach(Situation::LeftToExpire),
            _ => {}
        }
    }

    /// The situations reached so far.
    pub fn reached(&self) -> SituationSet {
        self.reached
    }
}

impl leasesim_invariants::Coverage<crate::HolderLock> for Coverage {
    fn on_event(&mut self, event: &Stamped<Event>) {
        Coverage::on_event(self, event);
    }

    fn reached(&self) -> SituationSet {
        self.reached
    }
}
