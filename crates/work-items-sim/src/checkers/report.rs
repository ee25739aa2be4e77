//! The pass report against the answers: `run-report`.
//!
//! Terminology:
//! - *pass report*: what `PassEnded` says `run()` returned: how the pass ended, how its
//!   claims ended (done, failed, released, lost, abandoned), and the store's status it read.
//! - *ending* of a claim, from its answers: done, failed or released when that end mark was
//!   answered ok; lost when a write answered lease-lost; abandoned when a release or fail was
//!   tried and never answered ok. A claim with none of these has no ending, and a report
//!   that accounts for every claim cannot be right about it.
//! - *last status*: the store's last status answer in the pass.
//! - *last find*: what the pass's last answered find found. A pass that ends `idle` found
//!   nothing claimable; one that ends at its `deadline` found an item and left it unclaimed.

use leasesim_invariants::{At, Checker};

use super::facts::Facts;
use super::track::{Ending, Ledger};
use super::{Invariant, Violation, notes_pass};
use crate::events::{
    Answer, EndKind, Event, EventKind, Note, PassCounts, Stamped, StatusView, WorkItems,
};

/// `run-report`: the report matches the pass's answers and the store's word.
#[derive(Debug, Default)]
pub struct RunReport {}

impl RunReport {
    pub fn new() -> RunReport {
        RunReport::default()
    }
}

fn counts_words(counts: &PassCounts) -> String {
    format!(
        "{} done, {} failed, {} released, {} lost, {} abandoned",
        counts.done, counts.failed, counts.released, counts.lost, counts.abandoned
    )
}

fn status_words(status: &StatusView) -> String {
    format!(
        "{} open, {} done, {} failed",
        status.open, status.done, status.failed
    )
}

/// The counts the pass's answers show, and how many of its claims had no ending.
fn answered_counts(ledger: &Ledger) -> (PassCounts, u32) {
    let (mut counts, mut unended) = (ledger.counts, ledger.unended);
    if let Some(held) = &ledger.held {
        match held.ending {
            Ending::Done => counts.done += 1,
            Ending::Failed => counts.failed += 1,
            Ending::Released => counts.released += 1,
            Ending::Lost => counts.lost += 1,
            Ending::Abandoned => counts.abandoned += 1,
            Ending::Open => unended += 1,
        }
    }
    (counts, unended)
}

/// `answered item 3`, `answered nothing claimable`, `was never answered`.
fn found_words(found: Option<Option<u32>>) -> String {
    match found {
        Some(Some(item)) => format!("answered item {item}"),
        Some(None) => "answered nothing claimable".into(),
        None => "was never answered".into(),
    }
}

/// What is wrong with the end a pass reported, if anything.
fn end_wrong(ledger: &Ledger, end: EndKind, status: Option<StatusView>) -> Option<String> {
    let last = match ledger.status.as_ref().map(|e| &e.event.kind) {
        Some(EventKind::Answered {
            answer: Answer::Status(status),
            ..
        }) => Some(*status),
        _ => None,
    };
    if status != last {
        let last = last.map_or("never answered a status read".into(), |s| {
            format!("last answered {}", status_words(&s))
        });
        let reported = status.map_or("no store status".into(), |s| status_words(&s));
        return Some(format!("it reported {reported}, but the store {last}"));
    }
    match end {
        EndKind::Complete if last.is_none_or(|s| s.open > 0) => Some(
            "it reported the run complete, but the store had not counted zero open items".into(),
        ),
        EndKind::Idle | EndKind::Deadline if last.is_none_or(|s| s.open == 0) => {
            Some("it reported items still open, but the store had not counted any open item".into())
        }
        EndKind::Idle if ledger.found != Some(None) => Some(format!(
            "it reported nothing left to claim, but its last find {}",
            found_words(ledger.found)
        )),
        EndKind::Deadline if !matches!(ledger.found, Some(Some(_))) => Some(format!(
            "it reported its deadline reached with an item found, but its last find {}",
            found_words(ledger.found)
        )),
        EndKind::Stopped | EndKind::StoppedBeforeStart if ledger.stop.is_none() => {
            Some("it reported a stop, but stop() had not been called".into())
        }
        EndKind::StoppedBeforeStart if ledger.pass_calls > 0 => {
            Some("it reported stopped before start, but it had sent calls".into())
        }
        EndKind::Unavailable if ledger.unavailable.is_none() => {
            Some("it reported the store unavailable, but no find or status read had failed".into())
        }
        _ => None,
    }
}

impl Checker<WorkItems> for RunReport {
    fn invariant(&self) -> Invariant {
        Invariant::RunReport
    }

    /// Pass notes only (a pass's end is judged): the facts follow the rest.
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & notes_pass() != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        // The before view: the pass as its answers left it before its end.
        let ledger = facts.ledger(replica);
        let verdict = match event.event.kind {
            EventKind::Note(Note::PassEnded {
                pass,
                end:
                    end @ (EndKind::Complete
                    | EndKind::Idle
                    | EndKind::Deadline
                    | EndKind::Stopped
                    | EndKind::StoppedBeforeStart
                    | EndKind::Unavailable),
                counts,
                status,
            }) => {
                let (answered, unended) = answered_counts(ledger);
                let why = if counts != answered || unended > 0 {
                    let open = match unended {
                        0 => String::new(),
                        n => format!(", and {n} claim(s) had no ending"),
                    };
                    Some(format!(
                        "it reported {}, but its answers show {}{open}",
                        counts_words(&counts),
                        counts_words(&answered)
                    ))
                } else {
                    end_wrong(ledger, end, status)
                };
                why.map(|why| {
                    let sentence = format!(
                        "{replica}'s pass {pass} ended at {}: {why}",
                        At(event.at_ms)
                    );
                    let context = [ledger.pass.as_ref(), ledger.status.as_ref()];
                    Violation::new(Invariant::RunReport, event, context, sentence)
                })
            }
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::testkit::{R1, Script, assert_broken, assert_holds};

    fn status(open: u32, done: u32) -> StatusView {
        StatusView {
            open,
            done,
            failed: 0,
        }
    }

    /// r1's pass processed item 0 to done and read `read` from the store.
    fn pass(read: StatusView) -> Script {
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.find(R1, Some(0));
        script.correct_item(R1, 0, 1);
        script.find(R1, None);
        script.status(R1, read);
        script
    }

    fn one_done() -> PassCounts {
        PassCounts {
            done: 1,
            ..PassCounts::default()
        }
    }

    #[test]
    fn run_report_holds_for_a_true_report() {
        assert_holds(Invariant::RunReport, &Script::correct_run());
        let mut script = pass(status(3, 1));
        script.pass_end(R1, 1, EndKind::Idle, one_done(), Some(status(3, 1)));
        assert_holds(Invariant::RunReport, &script);
    }

    #[test]
    fn run_report_breaks_on_an_idle_end_after_an_item_found_and_the_reverse() {
        let mut script = pass(status(3, 1));
        script.find(R1, Some(5));
        let seq = script.pass_end(R1, 1, EndKind::Idle, one_done(), Some(status(3, 1)));
        let words = ["reported nothing left to claim, but its last find answered item 5"];
        assert_broken(Invariant::RunReport, &script, seq, &words);
        let mut script = pass(status(3, 1));
        script.find(R1, Some(5));
        script.pass_end(R1, 1, EndKind::Deadline, one_done(), Some(status(3, 1)));
        assert_holds(Invariant::RunReport, &script);
        let mut script = pass(status(3, 1));
        let seq = script.pass_end(R1, 1, EndKind::Deadline, one_done(), Some(status(3, 1)));
        let words = [
            "reported its deadline reached with an item found, but its last find answered \
                      nothing claimable",
        ];
        assert_broken(Invariant::RunReport, &script, seq, &words);
    }

    #[test]
    fn run_report_breaks_on_wrong_counts_a_false_status_or_a_silent_success() {
        let mut script = pass(status(0, 1));
        let lost = PassCounts {
            lost: 1,
            ..PassCounts::default()
        };
        let seq = script.pass_end(R1, 1, EndKind::Complete, lost, Some(status(0, 1)));
        let words = [
            "r1's pass 1 ended at",
            "it reported 0 done, 0 failed, 0 released, 1 lost, 0 abandoned, but its answers show \
             1 done",
        ];
        assert_broken(Invariant::RunReport, &script, seq, &words);
        let mut script = pass(status(2, 1));
        let seq = script.pass_end(R1, 1, EndKind::Idle, one_done(), Some(status(0, 3)));
        let words = ["it reported 0 open, 3 done, 0 failed, but the store last answered 2 open"];
        assert_broken(Invariant::RunReport, &script, seq, &words);
        let mut script = pass(status(2, 1));
        let seq = script.pass_end(R1, 1, EndKind::Complete, one_done(), Some(status(2, 1)));
        let words = ["reported the run complete, but the store had not counted zero open items"];
        assert_broken(Invariant::RunReport, &script, seq, &words);
        let mut script = pass(status(0, 1));
        let seq = script.pass_end(R1, 1, EndKind::Stopped, one_done(), Some(status(0, 1)));
        assert_broken(
            Invariant::RunReport,
            &script,
            seq,
            &["stop() had not been called"],
        );
    }
}
