//! The term's cutoff: `fixed-cutoff` and `no-eligible-miss`.
//!
//! Terminology:
//! - *cutoff*: `older_than_ms` of a delete; the term's cutoff is that of its first delete.
//! - *allowed cutoff*: `now_ms - retention_ms` (saturating) of a clock read made after the
//!   term's acquire answered a lease and before its first delete.
//! - *newest deleted row*: `newest_created_ms` of an applied delete; it must be older than
//!   (strictly before) the cutoff of the term the delete was sent in.

use retention_worker::WorkerConfig;

use crate::Retention;
use crate::events::Stamped;
use crate::events::{Applied, ClockMs, Event, EventKind, Note, OpKind, ReplicaId, Request};

use leasesim_events::mask;

use super::kinds;
use super::track::{CallBook, PerReplica, Ring, TermLedger, replica_of};
use super::words::At;
use super::{CheckConfig, Checker, Facts, Invariant, Violation};
use crate::events::notes;

/// One replica's view of its latest term, for `fixed-cutoff`.
#[derive(Debug, Default)]
struct CutoffTerm {
    /// Cutoffs the clock reads after the acquire allow, until the first delete.
    allowed_ms: Vec<u64>,
    /// The last clock reads counted in `allowed_ms`.
    reads: Ring<3>,
    /// The term's first delete: its cutoff and its `Call`.
    first: Option<(u64, Stamped<Event>)>,
}

impl CutoffTerm {
    fn delete(
        &mut self,
        ledger: &TermLedger,
        replica: ReplicaId,
        event: &Stamped<Event>,
        cutoff_ms: u64,
        retention_ms: u64,
    ) -> Option<String> {
        if let Some((first_ms, first)) = &self.first {
            if *first_ms == cutoff_ms {
                return None;
            }
            return Some(format!(
                "{replica} sent delete_batch with cutoff {} at {}, but the first delete of term {} \
                 (at {}) used cutoff {}",
                ClockMs(cutoff_ms),
                At(event.at_ms),
                ledger.term(),
                At(first.at_ms),
                ClockMs(*first_ms)
            ));
        }
        // invariant: the first delete fixes the term's cutoff, whatever the verdict.
        self.first = Some((cutoff_ms, event.clone()));
        if self.allowed_ms.contains(&cutoff_ms) {
            return None;
        }
        let head = format!(
            "{replica}'s first delete_batch of term {} at {} used cutoff {}",
            ledger.term(),
            At(event.at_ms),
            ClockMs(cutoff_ms)
        );
        let acquired_ms = ledger
            .acquire_answer
            .as_ref()
            .map_or(0, |answer| answer.at_ms);
        Some(match (ledger.acquired, self.reads.last()) {
            (false, _) => format!("{head}, but its acquire had not answered a lease"),
            (true, None) => format!(
                "{head}, but it read no clock between its acquire answer at {} and that delete",
                At(acquired_ms)
            ),
            (true, Some(read)) => format!(
                "{head}, which no clock read after its acquire answer at {} gives (the last read, \
                 at {}, gives {}){}",
                At(acquired_ms),
                At(read.at_ms),
                ClockMs(self.allowed_ms.last().copied().unwrap_or(0)),
                settings_hint(read, cutoff_ms, retention_ms)
            ),
        })
    }

    fn context<'a>(
        &'a self,
        ledger: &'a TermLedger,
    ) -> impl Iterator<Item = Option<&'a Stamped<Event>>> {
        let first = self.first.as_ref().map(|(_, call)| call);
        [
            ledger.started.as_ref(),
            ledger.acquire_answer.as_ref(),
            first,
        ]
        .into_iter()
        .chain(self.reads.iter())
    }
}

/// What a cutoff no read allows says of the worker's settings: the retention it implies
/// against `read`, named as the worker's default when it is that.
fn settings_hint(read: &Stamped<Event>, cutoff_ms: u64, retention_ms: u64) -> String {
    let EventKind::ClockRead { now_ms } = read.event.kind else {
        return String::new();
    };
    let default_ms = WorkerConfig::default().retention_ms;
    match now_ms.checked_sub(cutoff_ms) {
        Some(implied_ms) if implied_ms == default_ms && default_ms != retention_ms => format!(
            "; that is the read minus {implied_ms} ms, the worker's default retention, but the \
             run judges against the scenario's {retention_ms} ms: build the worker from \
             `ports.config`"
        ),
        Some(implied_ms) => format!(
            "; that is the read minus {implied_ms} ms, and the scenario's retention is \
             {retention_ms} ms"
        ),
        None => String::new(),
    }
}

/// `fixed-cutoff`: one cutoff per term, read from the clock after acquire.
#[derive(Debug)]
pub struct FixedCutoff {
    retention_ms: u64,
    replicas: PerReplica<CutoffTerm>,
}

impl FixedCutoff {
    pub fn new(config: &CheckConfig) -> FixedCutoff {
        FixedCutoff {
            retention_ms: config.retention_ms,
            replicas: PerReplica::default(),
        }
    }
}

impl Checker<Retention> for FixedCutoff {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, notes::TERM_STARTED | mask::CLOCK_READ | mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::FixedCutoff
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        let term = self.replicas.at(replica);
        // Judged on the replica's term including this event (the run's after view).
        let ledger = &facts.after(replica).ledger;
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => {
                term.allowed_ms.clear();
                term.reads.clear();
                term.first = None;
            }
            EventKind::ClockRead { now_ms }
                if ledger.open && ledger.acquired && term.first.is_none() =>
            {
                term.allowed_ms
                    .push(now_ms.saturating_sub(self.retention_ms));
                term.reads.push(event);
            }
            EventKind::Call {
                request: Request::Delete { older_than_ms, .. },
                ..
            } if ledger.open => {
                let sentence =
                    term.delete(ledger, replica, event, older_than_ms, self.retention_ms)?;
                let context = term.context(ledger);
                return Some(Violation::new(
                    Invariant::FixedCutoff,
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

/// A delete sent in a term, waiting for the store.
#[derive(Debug)]
struct SentDelete {
    cutoff_ms: u64,
    /// The term's first delete, which set the cutoff.
    first: Stamped<Event>,
    /// This delete's `Call`.
    sent: Stamped<Event>,
}

/// Per replica: whether a term is open, and its first delete.
#[derive(Debug, Default)]
struct OpenTerm {
    open: bool,
    first: Option<(u64, Stamped<Event>)>,
}

/// `no-eligible-miss`: a deleted row was older than its term's cutoff.
#[derive(Debug, Default)]
pub struct NoEligibleMiss {
    terms: PerReplica<OpenTerm>,
    deletes: CallBook<SentDelete>,
}

impl NoEligibleMiss {
    pub fn new() -> NoEligibleMiss {
        NoEligibleMiss::default()
    }

    fn sent(&mut self, replica: ReplicaId, event: &Stamped<Event>, call: u64, cutoff_ms: u64) {
        let term = self.terms.at(replica);
        if !term.open {
            return;
        }
        let (cutoff_ms, first) = term.first.get_or_insert_with(|| (cutoff_ms, event.clone()));
        let sent = SentDelete {
            cutoff_ms: *cutoff_ms,
            first: first.clone(),
            sent: event.clone(),
        };
        self.deletes.insert(call, replica, sent);
    }

    fn applied(&mut self, event: &Stamped<Event>, call: u64, newest_ms: u64) -> Option<Violation> {
        let (replica, sent) = self.deletes.take(call, replica_of(event))?;
        if newest_ms < sent.cutoff_ms {
            return None;
        }
        let sentence = format!(
            "{replica}'s delete_batch sent at {} removed at {} a row created at {}, which is \
             not older than its term's cutoff {} (set by the first delete at {})",
            At(sent.sent.at_ms),
            At(event.at_ms),
            ClockMs(newest_ms),
            ClockMs(sent.cutoff_ms),
            At(sent.first.at_ms)
        );
        let context = [Some(&sent.first), Some(&sent.sent)];
        Some(Violation::new(
            Invariant::NoEligibleMiss,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<Retention> for NoEligibleMiss {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind) || kinds::service_side(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::NoEligibleMiss
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event);
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => {
                *self.terms.at(replica?) = OpenTerm {
                    open: true,
                    first: None,
                };
            }
            EventKind::Note(Note::TermEnded { .. }) => {
                *self.terms.at(replica?) = OpenTerm::default()
            }
            EventKind::Call {
                call,
                request: Request::Delete { older_than_ms, .. },
            } => {
                self.sent(replica?, event, call, older_than_ms);
            }
            EventKind::Rejected {
                call,
                op: OpKind::Delete,
            }
            | EventKind::RequestLost {
                call,
                op: OpKind::Delete,
            }
            | EventKind::Applied {
                call,
                applied: Applied::DeleteRefused { .. },
            } => {
                self.deletes.take(call, replica);
            }
            EventKind::Applied {
                call,
                applied:
                    Applied::Deleted {
                        newest_created_ms, ..
                    },
            } => match newest_created_ms {
                Some(newest_ms) => return self.applied(event, call, newest_ms),
                None => {
                    self.deletes.take(call, replica);
                }
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::testkit::{R1, Script, assert_broken, assert_holds};

    fn delete(cutoff_ms: u64) -> Request {
        Request::Delete {
            older_than_ms: cutoff_ms,
            limit: 200,
            token: 1,
        }
    }

    #[test]
    fn fixed_cutoff_holds_for_a_correct_run() {
        assert_holds(Invariant::FixedCutoff, &Script::correct_run());
    }

    #[test]
    fn fixed_cutoff_breaks_on_a_moving_cutoff() {
        let mut script = Script::new();
        script.at(10_000).start(R1, 2);
        script.acquire(R1, 1);
        script.clock(R1, 10_010);
        script.at(10_020).delete(R1, 7010, 1, 200);
        script.at(10_400).clock(R1, 10_400);
        script.send(R1, delete(7400));
        let seq = script.last_seq();
        let words = [
            "cutoff -999992600ms at t=10400ms",
            "term 2 (at t=10020ms) used cutoff -999992990ms",
        ];
        assert_broken(Invariant::FixedCutoff, &script, seq, &words);
    }

    #[test]
    fn fixed_cutoff_breaks_on_a_cutoff_read_before_acquire() {
        let mut script = Script::new();
        script.at(10_000).start(R1, 1);
        script.clock(R1, 9_000);
        script.acquire(R1, 1);
        script.at(10_100).send(R1, delete(6000));
        let seq = script.last_seq();
        let words = [
            "first delete_batch of term 1 at t=10100ms used cutoff -999994000ms",
            "read no clock",
        ];
        assert_broken(Invariant::FixedCutoff, &script, seq, &words);
    }

    #[test]
    fn fixed_cutoff_breaks_on_a_cutoff_no_read_gives() {
        let mut script = Script::new();
        script.at(10_000).start(R1, 1);
        script.acquire(R1, 1);
        script.clock(R1, 10_010);
        script.send(R1, delete(8000));
        let seq = script.last_seq();
        assert_broken(
            Invariant::FixedCutoff,
            &script,
            seq,
            &["gives -999992990ms"],
        );
    }

    #[test]
    fn a_cutoff_of_the_workers_default_retention_is_named_as_a_settings_mismatch() {
        let week_ms = 7 * 24 * 60 * 60 * 1_000;
        let mut script = Script::new();
        script.at(10_000).start(R1, 1);
        script.acquire(R1, 1);
        script.clock(R1, 700_000_000);
        script.send(R1, delete(700_000_000 - week_ms));
        let seq = script.last_seq();
        let words = [
            "the read minus 604800000 ms, the worker's default retention",
            "the scenario's 3000 ms: build the worker from `ports.config`",
        ];
        assert_broken(Invariant::FixedCutoff, &script, seq, &words);
        // Another retention is named by its value, without blaming the defaults.
        let mut script = Script::new();
        script.at(10_000).start(R1, 1);
        script.acquire(R1, 1);
        script.clock(R1, 700_000_000);
        script.send(R1, delete(700_000_000 - 5_000));
        let seq = script.last_seq();
        let words = ["the read minus 5000 ms, and the scenario's retention is 3000 ms"];
        assert_broken(Invariant::FixedCutoff, &script, seq, &words);
    }

    #[test]
    fn no_eligible_miss_holds_for_a_correct_run() {
        assert_holds(Invariant::NoEligibleMiss, &Script::correct_run());
    }

    #[test]
    fn no_eligible_miss_breaks_on_a_row_newer_than_the_first_cutoff() {
        let mut script = Script::new();
        script.at(10_000).start(R1, 1);
        script.acquire(R1, 1);
        script.clock(R1, 10_010);
        script.at(10_020).delete(R1, 7010, 1, 200);
        let call = script.at(10_500).send(R1, delete(7500));
        let seq = script.apply(
            call,
            Applied::Deleted {
                rows: 50,
                token_current: true,
                current_token: Some(1),
                newest_created_ms: Some(7200),
                held_back: 0,
            },
        );
        let words = [
            "r1's delete_batch sent at t=10500ms",
            "created at -999992800ms",
            "cutoff -999992990ms",
        ];
        assert_broken(Invariant::NoEligibleMiss, &script, seq, &words);
    }
}
