//! Shrinking a failing run to a small counterexample, Hypothesis-style.
//!
//! Terminology:
//! - *choice sequence*: the values a run drew, in order. Replaying it reproduces the run;
//!   replaying an edited one runs *some* run (a missing value reads as 0, the simplest).
//! - *target*: the outcome label to keep (an invariant name, `panic`, `deadlock`,
//!   `liveness`). A candidate is *interesting* when its run ends with the same label.
//! - *size*: `(events until the verdict, number of choices, the choices)`, compared in that
//!   order. A candidate is accepted only if it is interesting and strictly smaller, so the
//!   search always terminates, and what it returns is the smallest run it met.
//! - *passes*: delete chunks of choices, zero chunks, then minimise single values (try 0,
//!   the largest value, halve, decrement). Repeated until a full round finds nothing.
//!
//! The largest value is tried because some draws (a driver's pause between terms) yield
//! fewer events when they are larger: fewer events is what a reviewer cares about.

use leasesim_rt::{Choice, Feed};

use crate::runner::{RunReport, RunSpec, run};

/// The result of a shrink.
#[derive(Debug)]
pub struct Shrunk {
    /// Events of the original failing run.
    pub original_events: u64,
    /// The smallest interesting run found, with its events kept for the trace.
    pub report: RunReport,
    /// Candidate runs tried.
    pub candidates: u64,
}

/// Size of an interesting run (smaller is better).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Size {
    events: u64,
    len: usize,
    values: Vec<u64>,
}

struct Search<'a> {
    spec: &'a RunSpec,
    target: String,
    best: Size,
    best_choices: Vec<Choice>,
    candidates: u64,
    budget: u64,
}

impl Search<'_> {
    /// Runs `values`; adopts it when interesting and smaller. Returns whether it was adopted.
    fn try_values(&mut self, values: Vec<u64>) -> bool {
        if self.candidates >= self.budget {
            return false;
        }
        self.candidates += 1;
        let spec = RunSpec {
            feed: Feed::Replay(values),
            keep_events: false,
            record_choices: true,
            // A candidate longer than the best cannot win: cut it off there.
            event_limit: Some(self.best.events),
            ..self.spec.clone()
        };
        let report = run(&spec);
        if report.truncated || report.outcome.label() != self.target {
            return false;
        }
        // The choices the run actually consumed (a run that fails earlier reads fewer).
        let consumed: Vec<u64> = report.choices.iter().map(|c| c.value).collect();
        let size = Size {
            events: report.stats.events,
            len: consumed.len(),
            values: consumed,
        };
        if size < self.best {
            self.best = size;
            self.best_choices = report.choices;
            return true;
        }
        false
    }

    fn delete_chunks(&mut self) -> bool {
        let mut improved = false;
        for chunk in [32usize, 16, 8, 4, 2, 1] {
            let mut start = self.best.len.saturating_sub(chunk);
            loop {
                let values = &self.best.values;
                if start + chunk <= values.len() {
                    let mut candidate = values[..start].to_vec();
                    candidate.extend_from_slice(&values[start + chunk..]);
                    improved |= self.try_values(candidate);
                }
                if start == 0 {
                    break;
                }
                start -= 1;
            }
        }
        improved
    }

    fn zero_chunks(&mut self) -> bool {
        let mut improved = false;
        for chunk in [16usize, 8, 4, 2] {
            let mut start = 0;
            while start + chunk <= self.best.len {
                let window = &self.best.values[start..start + chunk];
                if window.iter().any(|&v| v != 0) {
                    let mut candidate = self.best.values.clone();
                    candidate[start..start + chunk].fill(0);
                    improved |= self.try_values(candidate);
                }
                start += chunk;
            }
        }
        improved
    }

    fn minimise_values(&mut self) -> bool {
        let mut improved = false;
        let mut index = 0;
        while index < self.best.len {
            let value = self.best.values[index];
            let max = self.best_choices.get(index).map_or(value, |c| c.max);
            for replacement in [0, max, value / 2, value.saturating_sub(1)] {
                if replacement == value || index >= self.best.len {
                    continue;
                }
                let mut candidate = self.best.values.clone();
                candidate[index] = replacement;
                if self.try_values(candidate) {
                    improved = true;
                    break;
                }
            }
            index += 1;
        }
        improved
    }
}

/// Shrinks the failing run of `spec` (its feed is the original seed or choices).
/// Returns `None` when the run does not fail.
pub fn shrink(spec: &RunSpec, budget: u64) -> Option<Shrunk> {
    let original = run(&RunSpec {
        keep_events: false,
        record_choices: true,
        event_limit: None,
        ..spec.clone()
    });
    if !original.failed() {
        return None;
    }
    let values: Vec<u64> = original.choices.iter().map(|c| c.value).collect();
    let mut search = Search {
        spec,
        target: original.outcome.label(),
        best: Size {
            events: original.stats.events,
            len: values.len(),
            values,
        },
        best_choices: original.choices,
        candidates: 0,
        budget,
    };
    while search.candidates < search.budget {
        let deleted = search.delete_chunks();
        let zeroed = search.zero_chunks();
        let lowered = search.minimise_values();
        if !(deleted || zeroed || lowered) {
            break;
        }
    }
    let final_spec = RunSpec {
        feed: Feed::Replay(search.best.values.clone()),
        keep_events: true,
        record_choices: true,
        event_limit: None,
        ..spec.clone()
    };
    let report = run(&final_spec);
    // invariant: the shrunk run reproduces the target outcome.
    assert_eq!(
        report.outcome.label(),
        search.target,
        "shrunk choices must still fail the same way"
    );
    Some(Shrunk {
        original_events: original.stats.events,
        report,
        candidates: search.candidates,
    })
}
