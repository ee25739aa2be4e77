//! How much a term deletes: `batch-limit`, `full-batch` and `term-cap`.
//!
//! Terminology:
//! - *limit*: the row count a delete asks for.
//! - *due*: what the contract says a delete asks for: `min(batch, cap - answered rows)`.
//!   `batch-limit` checks a limit is not above it, `full-batch` that it is not below.
//! - *answered rows*: the sum of the term's delete answers `Rows(n)`; what the worker knows it
//!   deleted, and so what `limit` must stay under.
//! - *applied rows*: the sum of `Applied::Deleted { rows }` for deletes sent in the term; what
//!   the store really removed for it, even if the answer was lost or came after the term.

use retention_worker::WorkerConfig;

use crate::Retention;
use crate::events::Stamped;
use crate::events::{Applied, Event, EventKind, Note, OpKind, Request};

use leasesim_events::mask;

use super::kinds;
use super::track::{CallBook, PerReplica, Ring, TermLedger, replica_of};
use super::words::At;
use super::{CheckConfig, Checker, Facts, Invariant, Violation};
use crate::events::notes;

/// One replica's latest term, for `batch-limit`.
#[derive(Debug, Default)]
struct BatchTerm {
    /// The term's last delete answers.
    answers: Ring<3>,
}

/// `batch-limit`: no delete asks for more than the batch or what is left of the cap.
#[derive(Debug)]
pub struct BatchLimit {
    batch_rows: u32,
    cap_rows: u32,
    replicas: PerReplica<BatchTerm>,
}

impl BatchLimit {
    pub fn new(config: &CheckConfig) -> BatchLimit {
        BatchLimit {
            batch_rows: config.batch_rows,
            cap_rows: config.cap_rows,
            replicas: PerReplica::default(),
        }
    }

    /// Why `limit` is too much for `replica` now, if it is.
    fn excess(&self, ledger: &TermLedger, event: &Stamped<Event>, limit: u32) -> Option<String> {
        let replica = replica_of(event)?;
        let answered_rows = match ledger.open {
            true => ledger.rows_answered,
            false => 0,
        };
        let left_rows = u64::from(self.cap_rows).saturating_sub(answered_rows);
        if limit <= self.batch_rows && u64::from(limit) <= left_rows {
            return None;
        }
        // A delete after the cap is used up is a term that goes on past its cap: `term-cap`
        // judges that by the rows the store actually removes. `batch-limit` judges the size
        // of batches within the allowance.
        if limit <= self.batch_rows && left_rows == 0 {
            return None;
        }
        let sent = format!(
            "{replica} sent delete_batch with limit {limit} at {}",
            At(event.at_ms)
        );
        if limit > self.batch_rows {
            let default_rows = WorkerConfig::default().batch_rows;
            let hint = match limit == default_rows {
                true => format!(
                    " ({default_rows} is the worker's default batch size: the run judges against \
                     the scenario's, in `ports.config`)"
                ),
                false => String::new(),
            };
            return Some(format!(
                "{sent}, above the batch size of {} rows{hint}",
                self.batch_rows
            ));
        }
        Some(format!(
            "{sent}, but only {left_rows} rows were left of the {}-row cap ({answered_rows} \
             answered so far in term {})",
            self.cap_rows,
            ledger.term()
        ))
    }
}

impl Checker<Retention> for BatchLimit {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, notes::TERM_STARTED | mask::ANSWERED | mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::BatchLimit
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        let term = self.replicas.at(replica);
        // Judged on the replica's term including this event (the run's after view).
        let ledger = &facts.after(replica).ledger;
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => term.answers.clear(),
            EventKind::Answered {
                op: OpKind::Delete, ..
            } if ledger.open => {
                term.answers.push(event);
            }
            EventKind::Call {
                request: Request::Delete { limit, .. },
                ..
            } => {
                let sentence = self.excess(ledger, event, limit)?;
                let term = self.replicas.get(replica)?;
                let context = [ledger.started.as_ref()]
                    .into_iter()
                    .chain(term.answers.iter());
                return Some(Violation::new(
                    Invariant::BatchLimit,
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

/// `full-batch`: no delete asks for less than the batch or what is left of the cap.
#[derive(Debug)]
pub struct FullBatch {
    batch_rows: u32,
    cap_rows: u32,
    replicas: PerReplica<BatchTerm>,
}

impl FullBatch {
    pub fn new(config: &CheckConfig) -> FullBatch {
        FullBatch {
            batch_rows: config.batch_rows,
            cap_rows: config.cap_rows,
            replicas: PerReplica::default(),
        }
    }

    /// Why `limit` is less than was due for `replica` now, if it is.
    fn shortfall(&self, ledger: &TermLedger, event: &Stamped<Event>, limit: u32) -> Option<String> {
        let replica = replica_of(event)?;
        if !ledger.open {
            return None;
        }
        let answered_rows = ledger.rows_answered;
        let left_rows = u64::from(self.cap_rows).saturating_sub(answered_rows);
        let due = left_rows.min(u64::from(self.batch_rows));
        // A used-up cap is `term-cap`'s verdict; nothing is due then.
        if due == 0 || u64::from(limit) >= due {
            return None;
        }
        Some(format!(
            "{replica} sent delete_batch with limit {limit} at {}, but {due} rows were due: the \
             smaller of the {}-row batch and the {left_rows} rows left of the {}-row cap \
             ({answered_rows} answered so far in term {})",
            At(event.at_ms),
            self.batch_rows,
            self.cap_rows,
            ledger.term()
        ))
    }
}

impl Checker<Retention> for FullBatch {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, notes::TERM_STARTED | mask::ANSWERED | mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::FullBatch
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        let term = self.replicas.at(replica);
        let before = &facts.before(replica).ledger;
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => term.answers.clear(),
            EventKind::Answered {
                op: OpKind::Delete, ..
            } if before.open => term.answers.push(event),
            EventKind::Call {
                request: Request::Delete { limit, .. },
                ..
            } => {
                // Judged on what was answered before this delete was sent.
                let sentence = self.shortfall(before, event, limit)?;
                let term = self.replicas.get(replica)?;
                let context = [facts.after(replica).ledger.started.as_ref()]
                    .into_iter()
                    .chain(term.answers.iter());
                return Some(Violation::new(
                    Invariant::FullBatch,
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

/// The applied rows of one term that is open or still has deletes waiting for the store.
#[derive(Debug)]
struct TermRows {
    /// This checker's own count of the replica's terms (1 for the first).
    serial: u32,
    started: Stamped<Event>,
    open: bool,
    rows_applied: u64,
    /// Deletes of the term the store has not acted on yet.
    pending: u32,
}

/// Per replica: the terms whose applied rows may still grow.
#[derive(Debug, Default)]
struct ReplicaTerms {
    serial: u32,
    terms: Vec<TermRows>,
}

impl ReplicaTerms {
    fn start(&mut self, event: &Stamped<Event>) {
        self.terms.iter_mut().for_each(|term| term.open = false);
        self.serial += 1;
        let serial = self.serial;
        self.terms.push(TermRows {
            serial,
            started: event.clone(),
            open: true,
            rows_applied: 0,
            pending: 0,
        });
        self.prune();
    }

    fn end(&mut self) {
        self.terms.iter_mut().for_each(|term| term.open = false);
        self.prune();
    }

    fn open_serial(&mut self) -> Option<u32> {
        let term = self.terms.last_mut().filter(|term| term.open)?;
        term.pending += 1;
        Some(term.serial)
    }

    /// The store acted on a delete of term `serial`, removing `rows`; the term's new total.
    fn acted(&mut self, serial: u32, rows: u32) -> Option<&TermRows> {
        let index = self.terms.iter().position(|term| term.serial == serial)?;
        let term = &mut self.terms[index];
        debug_assert!(term.pending > 0, "a delete acted on twice");
        term.pending = term.pending.saturating_sub(1);
        term.rows_applied += u64::from(rows);
        self.terms.get(index)
    }

    /// invariant: only open terms and terms with deletes pending are kept.
    fn prune(&mut self) {
        self.terms.retain(|term| term.open || term.pending > 0);
    }
}

/// `term-cap`: the rows applied for one term's deletes stay within the cap.
#[derive(Debug)]
pub struct TermCap {
    cap_rows: u64,
    replicas: PerReplica<ReplicaTerms>,
    /// Deletes the store has not acted on: their term's serial and their `Call`.
    deletes: CallBook<(u32, Stamped<Event>)>,
}

impl TermCap {
    pub fn new(config: &CheckConfig) -> TermCap {
        TermCap {
            cap_rows: u64::from(config.cap_rows),
            replicas: PerReplica::default(),
            deletes: CallBook::default(),
        }
    }

    fn acted(&mut self, event: &Stamped<Event>, call: u64, rows: u32) -> Option<Violation> {
        let (replica, (serial, sent)) = self.deletes.take(call, replica_of(event))?;
        let terms = self.replicas.at(replica);
        let term = terms.acted(serial, rows)?;
        let verdict = (term.rows_applied > self.cap_rows).then(|| {
            let sentence = format!(
                "{replica}'s term {} (started at {}) had {} rows applied by {}, {rows} of them \
                 by the delete_batch sent at {}, above the cap of {} rows",
                super::track::term_number(&term.started),
                At(term.started.at_ms),
                term.rows_applied,
                At(event.at_ms),
                At(sent.at_ms),
                self.cap_rows
            );
            Violation::new(
                Invariant::TermCap,
                event,
                [Some(&term.started), Some(&sent)],
                sentence,
            )
        });
        terms.prune();
        verdict
    }
}

impl Checker<Retention> for TermCap {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind) || kinds::service_side(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::TermCap
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event);
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => self.replicas.at(replica?).start(event),
            EventKind::Note(Note::TermEnded { .. }) => self.replicas.at(replica?).end(),
            EventKind::Call {
                call,
                request: Request::Delete { .. },
            } => {
                let replica = replica?;
                if let Some(serial) = self.replicas.at(replica).open_serial() {
                    self.deletes.insert(call, replica, (serial, event.clone()));
                }
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
                return self.acted(event, call, 0);
            }
            EventKind::Applied {
                call,
                applied: Applied::Deleted { rows, .. },
            } => {
                return self.acted(event, call, rows);
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{Answer, EndKind, ReplicaId};

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, config, run};

    fn delete(limit: u32) -> Request {
        Request::Delete {
            older_than_ms: 5000,
            limit,
            token: 1,
        }
    }

    /// A term that deletes `batches` full batches of 200 rows.
    fn full_batches(script: &mut Script, replica: ReplicaId, batches: u32) {
        script.start(replica, 1);
        script.acquire(replica, 1);
        script.clock(replica, 8000);
        for _ in 0..batches {
            script.delete(replica, 5000, 1, 200);
        }
    }

    #[test]
    fn batch_limit_holds_for_a_correct_run_and_a_capped_term() {
        assert_holds(Invariant::BatchLimit, &Script::correct_run());
        let mut script = Script::new();
        full_batches(&mut script, R1, 5);
        script.end(R1, 1, EndKind::CapReached, 1000);
        assert_holds(Invariant::BatchLimit, &script);
    }

    #[test]
    fn batch_limit_breaks_on_a_batch_above_the_batch_size() {
        let mut script = Script::new();
        full_batches(&mut script, R2, 1);
        script.at(7000).send(R2, delete(250));
        let seq = script.last_seq();
        let words = [
            "r2 sent delete_batch with limit 250 at t=7000ms",
            "batch size of 200",
        ];
        assert_broken(Invariant::BatchLimit, &script, seq, &words);
    }

    #[test]
    fn a_batch_of_the_workers_default_size_is_named_as_a_settings_mismatch() {
        let small = CheckConfig {
            batch_rows: 64,
            ..config()
        };
        let mut script = Script::new();
        script.start(R1, 1);
        script.acquire(R1, 1);
        script.clock(R1, 8000);
        script.send(R1, delete(200));
        let mut checker = BatchLimit::new(&small);
        let violation = run(&mut checker, &script).expect("a 200-row batch breaks a 64-row limit");
        let wanted = "above the batch size of 64 rows (200 is the worker's default batch size";
        assert!(violation.sentence.contains(wanted), "{violation}");
        let mut script = Script::new();
        script.start(R1, 1);
        script.acquire(R1, 1);
        script.send(R1, delete(100));
        let violation = run(&mut BatchLimit::new(&small), &script).expect("100 > 64");
        assert!(!violation.sentence.contains("default"), "{violation}");
    }

    #[test]
    fn batch_limit_breaks_on_a_batch_beyond_the_cap() {
        let mut script = Script::new();
        full_batches(&mut script, R1, 4);
        let call = script.send(R1, delete(200));
        script.answer(R1, call, OpKind::Delete, Answer::Rows(150));
        script.send(R1, delete(200));
        let seq = script.last_seq();
        let words = [
            "limit 200",
            "only 50 rows were left of the 1000-row cap",
            "950 answered",
        ];
        assert_broken(Invariant::BatchLimit, &script, seq, &words);
    }

    #[test]
    fn going_on_past_a_used_up_cap_is_left_to_term_cap() {
        // An uncapped worker's sixth full batch: batch-limit stays quiet (the batch size is
        // fine), term-cap breaks once the store removes rows beyond the cap.
        let mut script = Script::new();
        full_batches(&mut script, R1, 6);
        assert_holds(Invariant::BatchLimit, &script);
        let seq = script.last_seq() - 1;
        assert_broken(Invariant::TermCap, &script, seq, &["1200 rows applied"]);
    }

    #[test]
    fn full_batch_holds_for_a_correct_run_and_a_trimmed_last_batch() {
        assert_holds(Invariant::FullBatch, &Script::correct_run());
        let mut script = Script::new();
        full_batches(&mut script, R1, 4);
        let call = script.send(R1, delete(200));
        script.answer(R1, call, OpKind::Delete, Answer::Rows(150));
        script.send(R1, delete(50));
        assert_holds(Invariant::FullBatch, &script);
    }

    #[test]
    fn full_batch_breaks_on_a_batch_below_what_was_due() {
        let mut script = Script::new();
        full_batches(&mut script, R2, 2);
        script.at(7000).send(R2, delete(150));
        let seq = script.last_seq();
        let words = [
            "r2 sent delete_batch with limit 150 at t=7000ms, but 200 rows were due",
            "600 rows left of the 1000-row cap (400 answered so far in term 1)",
        ];
        assert_broken(Invariant::FullBatch, &script, seq, &words);
        let mut script = Script::new();
        full_batches(&mut script, R1, 4);
        let call = script.send(R1, delete(200));
        script.answer(R1, call, OpKind::Delete, Answer::Rows(150));
        script.send(R1, delete(40));
        let seq = script.last_seq();
        assert_broken(
            Invariant::FullBatch,
            &script,
            seq,
            &["but 50 rows were due"],
        );
    }

    #[test]
    fn term_cap_holds_for_a_correct_run_and_a_capped_term() {
        assert_holds(Invariant::TermCap, &Script::correct_run());
        let mut script = Script::new();
        full_batches(&mut script, R1, 5);
        script.end(R1, 1, EndKind::CapReached, 1000);
        full_batches(&mut script, R1, 5);
        assert_holds(Invariant::TermCap, &script);
    }

    #[test]
    fn term_cap_breaks_when_a_term_deletes_beyond_the_cap() {
        let mut script = Script::new();
        full_batches(&mut script, R1, 5);
        script.at(9000);
        script.delete(R1, 5000, 1, 200);
        let seq = script.last_seq() - 1;
        let words = [
            "r1's term 1",
            "1200 rows applied by t=9005ms",
            "sent at t=9000ms",
            "1000",
        ];
        assert_broken(Invariant::TermCap, &script, seq, &words);
    }

    #[test]
    fn term_cap_counts_a_late_apply_for_the_term_that_sent_it() {
        let mut script = Script::new();
        full_batches(&mut script, R1, 4);
        let call = script.send(R1, delete(200));
        script.end(R1, 1, EndKind::Stopped, 800);
        full_batches(&mut script, R1, 1);
        let applied = Applied::Deleted {
            rows: 300,
            token_current: false,
            current_token: None,
            newest_created_ms: None,
            held_back: 0,
        };
        let seq = script.apply(call, applied);
        assert_broken(Invariant::TermCap, &script, seq, &["1100 rows applied"]);
    }
}
