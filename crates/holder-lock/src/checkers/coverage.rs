//! "Sometimes" properties: situations a campaign must reach at least once.
//!
//! Terminology:
//! - *situation*: a moment a run may or may not reach (a claim's deadline passing while its
//!   job runs, a rival claiming after expiry, a release finding another token...). Reaching
//!   one proves nothing wrong; never reaching one in a campaign means it tested nothing there.
//! - Coverage is not a checker: it may read the store's own `Expired` notes and the workers'
//!   reports as they are.

use std::fmt;

use leasesim_events::ReplicaId;
use leasesim_invariants::{PerReplica, SituationName};

use crate::events::{
    Applied, EndKind, Event, EventKind, Key, Note, Op, ReleaseKind, Request, Stamped,
};

use super::track::is_release;

/// A situation a campaign has to reach at least once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Situation {
    /// A claim's lifetime ended while its attempt's job was running.
    DeadlineMidJob,
    /// A create took over a claim whose lifetime had ended.
    RivalAfterExpiry,
    /// A release found another attempt's token.
    ReleaseFoundForeign,
    /// A release found the key absent.
    ReleaseFoundAbsent,
    /// Two jobs ran at once: the second claimed after the first one's claim ran out.
    OverlapAfterExpiry,
    /// An attempt stopped its job because it could no longer trust its claim.
    JobStoppedOnLoss,
    /// A create was answered only after the trusted time: no job.
    TooLateToStart,
    /// `stop()` while a job ran.
    StopDuringJob,
    /// `stop()` while a create was in flight.
    StopDuringCreate,
    /// A request was applied, its reply lost.
    ReplyLostAfterApply,
    /// A job step failed.
    JobFailed,
    /// A release on a store without compare-and-delete left the claim to run out.
    LeftToExpire,
}

impl Situation {
    pub const COUNT: usize = 12;

    pub const ALL: [Situation; Situation::COUNT] = [
        Situation::DeadlineMidJob,
        Situation::RivalAfterExpiry,
        Situation::ReleaseFoundForeign,
        Situation::ReleaseFoundAbsent,
        Situation::OverlapAfterExpiry,
        Situation::JobStoppedOnLoss,
        Situation::TooLateToStart,
        Situation::StopDuringJob,
        Situation::StopDuringCreate,
        Situation::ReplyLostAfterApply,
        Situation::JobFailed,
        Situation::LeftToExpire,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Situation::DeadlineMidJob => "deadline-mid-job",
            Situation::RivalAfterExpiry => "rival-after-expiry",
            Situation::ReleaseFoundForeign => "release-found-foreign",
            Situation::ReleaseFoundAbsent => "release-found-absent",
            Situation::OverlapAfterExpiry => "overlap-after-expiry",
            Situation::JobStoppedOnLoss => "job-stopped-on-loss",
            Situation::TooLateToStart => "too-late-to-start",
            Situation::StopDuringJob => "stop-during-job",
            Situation::StopDuringCreate => "stop-during-create",
            Situation::ReplyLostAfterApply => "reply-lost-after-apply",
            Situation::JobFailed => "job-failed",
            Situation::LeftToExpire => "left-to-expire",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Situation::DeadlineMidJob => "a claim's deadline passed while its job was running",
            Situation::RivalAfterExpiry => "a rival's create took over a claim that had run out",
            Situation::ReleaseFoundForeign => "a release found another attempt's token",
            Situation::ReleaseFoundAbsent => "a release found the key absent",
            Situation::OverlapAfterExpiry => {
                "two jobs ran at once: the second claimed after the first one's claim ran out"
            }
            Situation::JobStoppedOnLoss => {
                "a job was stopped because its claim could no longer be trusted"
            }
            Situation::TooLateToStart => {
                "a create won but was answered after the trusted time: no job started"
            }
            Situation::StopDuringJob => "stop() was called while a job was running",
            Situation::StopDuringCreate => "stop() was called while a create was in flight",
            Situation::ReplyLostAfterApply => "a request was applied but its reply was lost",
            Situation::JobFailed => "a job step failed",
            Situation::LeftToExpire => {
                "a store without compare-and-delete: a release left its claim to run out"
            }
        }
    }
}

impl SituationName for Situation {
    const ALL: &'static [Situation] = &Situation::ALL;

    fn name(self) -> &'static str {
        Situation::name(self)
    }

    fn describe(self) -> &'static str {
        Situation::describe(self)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Situation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of the holder-lock system's situations.
pub type SituationSet = leasesim_invariants::SituationSet<Situation>;

/// Per replica, what coverage follows.
#[derive(Debug, Default)]
struct Side {
    /// The token of its open attempt's create, while its job runs.
    job_token: Option<u64>,
    /// Creates in flight.
    creating: Vec<u64>,
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
            _ => {}
        }
        if let Some(replica) = event.event.replica {
            self.replica_event(replica, event);
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
            EventKind::Restarted => *self.sides.at(replica) = Side::default(),
            EventKind::Note(note) => self.note(replica, note),
            _ => {}
        }
    }

    fn note(&mut self, replica: ReplicaId, note: Note) {
        match note {
            Note::JobStarted { .. } => {
                let running = self.sides.iter().any(|(_, side)| side.job_token.is_some());
                if running {
                    self.reach(Situation::OverlapAfterExpiry);
                }
                let token = *self.tokens.at(replica);
                self.sides.at(replica).job_token = token;
            }
            Note::JobFinished { .. } => self.sides.at(replica).job_token = None,
            Note::JobFailed { .. } => {
                self.sides.at(replica).job_token = None;
                self.reach(Situation::JobFailed);
            }
            Note::AttemptEnded { end, release, .. } => {
                self.sides.at(replica).job_token = None;
                self.ended(end, release);
            }
            _ => {}
        }
    }

    fn ended(&mut self, end: EndKind, release: ReleaseKind) {
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
