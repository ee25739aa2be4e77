//! Giving the claim back: `release-reported`, `release-on-exit`.
//!
//! Terminology:
//! - *release call*: `delete_if_holder`, `delete` or `get` of an attempt, on either key (see
//!   `track`). What the attempt's release did is read off the answer of its last one: a
//!   conditional delete answered `deleted`, `not holder`, `absent`; a blind delete `deleted`
//!   or `absent`; a read its own token (left to run out), another token, or nothing.
//! - *signal*: a release that found the claim gone (another token, or none). The worker's
//!   report must say so, and its running count of them (`claims_gone`, per worker: a restart
//!   starts a fresh count) must include it.

use leasesim_events::mask;
use leasesim_invariants::{At, PerReplica};

use crate::HolderLock;
use crate::events::{
    Answer, EndKind, Event, EventKind, Note, ReleaseKind, Request, Stamped, notes,
};

use super::facts::Facts;
use super::track::is_release;
use super::{Checker, Invariant, Violation};

/// What one release call's answer says the release did; `own` is the attempt's token.
pub fn release_seen(request: &Request, answer: Answer, own: Option<u64>) -> ReleaseKind {
    match (request, answer) {
        (Request::Get { .. }, Answer::Value(token)) if Some(token) == own => {
            ReleaseKind::LeftToExpire
        }
        (_, Answer::Value(_) | Answer::NotHolder) => ReleaseKind::GoneForeign,
        (_, Answer::Absent) => ReleaseKind::GoneAbsent,
        (_, Answer::Deleted) => ReleaseKind::Deleted,
        // An error, or an answer no store gives to a release call: no answer to count on.
        _ => ReleaseKind::Failed,
    }
}

fn release_name(kind: ReleaseKind) -> &'static str {
    match kind {
        ReleaseKind::None => "no release",
        ReleaseKind::Deleted => "a deletion",
        ReleaseKind::LeftToExpire => "a claim left to run out",
        ReleaseKind::GoneForeign => "a claim gone (another token held the key)",
        ReleaseKind::GoneAbsent => "a claim gone (the key was absent)",
        ReleaseKind::Failed => "a failed release",
    }
}

/// Per replica: the open attempt's release as its answers say it, and the signals counted.
#[derive(Debug, Default)]
struct Tally {
    seen: Option<(ReleaseKind, Stamped<Event>)>,
    signals: u64,
}

/// `release-reported`: every attempt reports its release as answered; signals are counted.
#[derive(Debug, Default)]
pub struct ReleaseReported {
    tallies: PerReplica<Tally>,
}

impl ReleaseReported {
    pub fn new() -> ReleaseReported {
        ReleaseReported::default()
    }

    /// Read on the before view: the call still booked, the attempt as it was.
    fn answered(&mut self, event: &Stamped<Event>, call: u64, answer: Answer, facts: &Facts) {
        let Some(replica) = event.event.replica else {
            return;
        };
        let attempts = facts.before();
        let Some(booked) = attempts.booked(call) else {
            return;
        };
        let open = attempts.open(replica);
        let ours = open.is_some_and(|o| Some(o.id) == booked.attempt);
        if ours && is_release(&booked.request) {
            let own = open.and_then(|o| o.token());
            let kind = release_seen(&booked.request, answer, own);
            self.tallies.at(replica).seen = Some((kind, event.clone()));
        }
    }

    /// `reported` and `claims_gone` are what the attempt's end said; the attempt is the
    /// before view's (the end closes it).
    fn ended(
        &mut self,
        event: &Stamped<Event>,
        (reported, claims_gone): (ReleaseKind, u64),
        facts: &Facts,
    ) -> Option<Violation> {
        let replica = event.event.replica?;
        let id = facts.before().open(replica).map(|o| o.id);
        let tally = self.tallies.at(replica);
        let (seen, answer) = match tally.seen.take() {
            Some((kind, answer)) => (kind, Some(answer)),
            None => (ReleaseKind::None, None),
        };
        tally.signals += u64::from(seen.is_signal());
        let who = id.map_or(replica.to_string(), |id| id.to_string());
        let sentence = if reported != seen {
            let when = answer
                .as_ref()
                .map_or(String::new(), |a| format!(" at {}", At(a.at_ms)));
            format!(
                "{who} reported {} at {}, but the answers to its release said {}{when}: a \
                 release that deleted nothing must be reported",
                release_name(reported),
                At(event.at_ms),
                release_name(seen)
            )
        } else if claims_gone != tally.signals {
            format!(
                "{who} reported {claims_gone} releases that found the claim gone at {}, but \
                 {} of its worker's releases did",
                At(event.at_ms),
                tally.signals
            )
        } else {
            return None;
        };
        let context = [answer.as_ref()];
        Some(Violation::new(
            Invariant::ReleaseReported,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<HolderLock> for ReleaseReported {
    fn invariant(&self) -> Invariant {
        Invariant::ReleaseReported
    }

    /// Answers, restarts and attempt notes: the facts follow the calls.
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & (mask::ANSWERED | mask::RESTARTED | notes::ATTEMPTS) != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        let verdict = match event.event.kind {
            EventKind::Answered { call, answer, .. } => {
                self.answered(event, call, answer, facts);
                None
            }
            EventKind::Note(Note::AttemptEnded {
                end,
                release,
                claims_gone,
                ..
            }) if end != EndKind::AlreadyRunning => {
                self.ended(event, (release, claims_gone), facts)
            }
            EventKind::Restarted => {
                *self.tallies.at(replica) = Tally::default();
                None
            }
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

/// `release-on-exit`: an attempt whose create won sends a release call before it ends.
#[derive(Debug, Default)]
pub struct ReleaseOnExit {}

impl ReleaseOnExit {
    pub fn new() -> ReleaseOnExit {
        ReleaseOnExit::default()
    }
}

impl Checker<HolderLock> for ReleaseOnExit {
    fn invariant(&self) -> Invariant {
        Invariant::ReleaseOnExit
    }

    /// Attempt notes only (an end is judged): the facts follow the rest.
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & notes::ATTEMPTS != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        let verdict = match event.event.kind {
            EventKind::Note(Note::AttemptEnded { end, .. }) => {
                // The before view: the attempt the end closes.
                let open = facts.before().open(replica);
                open.filter(|o| o.won.is_some() && o.released.is_none())
                    .map(|open| {
                        let token = open.token().map(crate::events::TokenText);
                        let sentence = format!(
                            "{} ended ({end:?}) at {} without releasing its claim (token {}), \
                             which its create won at {}",
                            open.id,
                            At(event.at_ms),
                            token.map_or("?".into(), |t| t.to_string()),
                            At(open.won.as_ref().map_or(0, |w| w.at_ms))
                        );
                        let context = [Some(&open.started), open.won.as_ref(), open.job.as_ref()];
                        Violation::new(Invariant::ReleaseOnExit, event, context, sentence)
                    })
            }
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}
