//! What a retention run can do: the checks across keys that refuse a scenario no correct worker
//! could pass, so bad input is never reported as the worker's failure.
//!
//! Terminology:
//! - *correct term*: what the production worker does in one `run()`: acquire, up to the cap in
//!   batches (one delete in flight at a time), then release, after waiting for a renewal in
//!   flight. Every bound below is about such a term with faults healed.
//! - *longest term*: its serial round trips at the scenario's highest latencies: acquire,
//!   every delete of a full cap, the renewal it waits for, the release; plus, for a term open
//!   when faults heal, a pause still running and a lost request's or reply's timeout.
//! - *drain capacity*: the most rows the replicas could delete before the liveness phase ends,
//!   even at the lowest latencies and the shortest pauses between terms; an upper bound, so a
//!   scenario over it is certainly undrainable (one under it may still be, in a given run).
//! - *backlog at healing*: the rows the liveness phase must drain, counted at the earliest
//!   clock any replica can read when faults heal; a lower bound.
//!
//! Each check blames one key (`(key, message)`), and the shared loader places it.

use leasesim_events::EPOCH_MS;

use crate::Scenario;
use crate::events::OpKind;
use crate::store::RecordStore;

/// A scenario check's finding: the dotted key to blame and what is wrong with it.
pub type Finding = (&'static str, String);

/// Every cross-key check of a retention scenario, in the order they are reported.
pub fn check(scenario: &Scenario) -> Result<(), Finding> {
    terms_take_time(scenario)?;
    term_bound_is_reachable(scenario)?;
    stop_bound_is_reachable(scenario)?;
    backlog_can_drain(scenario)
}

fn lowest(scenario: &Scenario, op: OpKind) -> u64 {
    scenario.latency.get(op).min
}

fn highest(scenario: &Scenario, op: OpKind) -> u64 {
    scenario.latency.get(op).max
}

/// With no pause between terms and no acquire latency, a replica's terms repeat at one virtual
/// instant, and the run ends as a `spin` of its driver.
fn terms_take_time(scenario: &Scenario) -> Result<(), Finding> {
    let pause_ms = scenario.schedule.run_every_ms.min;
    if pause_ms + 2 * lowest(scenario, OpKind::Acquire) > 0 {
        return Ok(());
    }
    let message = "starts at 0 ms while acquire latency can be 0 too: a replica's terms could \
                   follow each other at one virtual instant forever; give one of them a minimum \
                   of at least 1 ms"
        .to_string();
    Err(("schedule.run_every_ms", message))
}

/// The most deletes one term sends: a full cap in batches (with swarm, of any drawn pair that
/// requires the drain or not: small batches are at most seven, large ones the scenario's
/// count plus two).
fn deletes_per_term(scenario: &Scenario) -> u64 {
    let worker = &scenario.settings.worker;
    let own = u64::from(worker.cap_rows).div_ceil(u64::from(worker.batch_rows));
    match scenario.swarm {
        true => (own + 2).max(7),
        false => own,
    }
}

/// The longest a correct term can take once faults heal (see the module docs), with the parts
/// it adds up, for the message.
fn longest_term_ms(scenario: &Scenario) -> (u64, String) {
    let deletes = deletes_per_term(scenario);
    let round_trips = highest(scenario, OpKind::Acquire)
        + deletes * highest(scenario, OpKind::Delete)
        + highest(scenario, OpKind::Renew)
        + highest(scenario, OpKind::Release);
    let mut total_ms = 2 * round_trips;
    let mut parts = format!(
        "{total_ms} ms of round trips at the highest latencies (acquire, {deletes} deletes, a \
         renewal, the release)"
    );
    if scenario.faults.timeouts() {
        let timeout_ms = scenario.faults.timeout_ms.get();
        total_ms += timeout_ms;
        parts.push_str(&format!(
            ", {timeout_ms} ms of a lost request's or reply's timeout"
        ));
    }
    if scenario.faults.pause.probability.get() > 0.0 {
        let pause_ms = scenario.faults.pause.duration_ms.max;
        total_ms += pause_ms;
        parts.push_str(&format!(", {pause_ms} ms of a pause still running"));
    }
    (total_ms, parts)
}

/// `term_bound_ms` must leave a correct term time to end once faults heal.
fn term_bound_is_reachable(scenario: &Scenario) -> Result<(), Finding> {
    let bound_ms = scenario.settings.term_bound_ms;
    let (longest_ms, parts) = longest_term_ms(scenario);
    if bound_ms >= longest_ms {
        return Ok(());
    }
    let message = format!(
        "({bound_ms} ms) is shorter than a correct term can take once faults heal, \
         {longest_ms} ms: {parts}; raise it to at least {longest_ms}, or lower the latencies"
    );
    Err(("term_bound_ms", message))
}

/// `stop_bound_ms` must leave a correct `stop()` time to resolve at shutdown: it waits for the
/// call in flight, then releases.
fn stop_bound_is_reachable(scenario: &Scenario) -> Result<(), Finding> {
    let bound_ms = scenario.stop_bound_ms;
    let in_flight = [OpKind::Acquire, OpKind::Delete, OpKind::Renew]
        .into_iter()
        .map(|op| highest(scenario, op))
        .max()
        .unwrap_or(0);
    let longest_ms = 2 * (in_flight + highest(scenario, OpKind::Release));
    if bound_ms >= longest_ms {
        return Ok(());
    }
    let message = format!(
        "({bound_ms} ms) is shorter than a correct stop() can take at shutdown: {longest_ms} ms \
         (the round trip of the call in flight and of the release, at the highest latencies); \
         raise it to at least {longest_ms}"
    );
    Err(("stop_bound_ms", message))
}

/// The earliest clock (relative to the epoch) any replica can read when faults heal.
fn earliest_clock_at_healing(scenario: &Scenario) -> i128 {
    let duration_ms = i128::from(scenario.duration_ms);
    let clocks = &scenario.clocks;
    let drift = duration_ms * i128::from(clocks.drift_ppm.min.min(0)) / 1_000_000;
    let jump = &clocks.jump;
    let jumps = match jump.probability.get() > 0.0 && jump.by_ms.min < 0 {
        true => {
            let ticks = duration_ms / i128::from(jump.every_ms.min.max(1)) + 1;
            ticks * i128::from(jump.by_ms.min)
        }
        false => 0,
    };
    duration_ms + i128::from(clocks.offset_ms.min.min(0)) + drift + jumps
}

/// The most rows one term may delete: the cap (with swarm, of the largest pair a draw that
/// requires the drain can make).
fn rows_per_term(scenario: &Scenario) -> u64 {
    let worker = &scenario.settings.worker;
    let (cap, batch) = (u64::from(worker.cap_rows), u64::from(worker.batch_rows));
    match scenario.swarm {
        true => 2 * cap + 6 * batch,
        false => cap,
    }
}

/// With the drain required, the backlog at healing must fit the drain capacity.
fn backlog_can_drain(scenario: &Scenario) -> Result<(), Finding> {
    let settings = &scenario.settings;
    if !settings.drain {
        return Ok(());
    }
    let cutoff = earliest_clock_at_healing(scenario) - i128::from(settings.worker.retention_ms);
    let cutoff_ms = (i128::from(EPOCH_MS) + cutoff).clamp(0, i128::from(u64::MAX)) as u64;
    let (from_ms, to_ms) = settings.created_window_ms();
    let backlog =
        RecordStore::spread(settings.store.rows, from_ms, to_ms, true).remaining_before(cutoff_ms);
    // A replica's deleting terms are at least this far apart: the acquire's round trip, the
    // first delete's, and the pause before its next term.
    let spacing_ms = (2 * lowest(scenario, OpKind::Acquire)
        + 2 * lowest(scenario, OpKind::Delete)
        + scenario.schedule.run_every_ms.min)
        .max(1);
    let first_ms = 2 * lowest(scenario, OpKind::Acquire) + lowest(scenario, OpKind::Delete);
    let end_ms = scenario.duration_ms + scenario.liveness_ms;
    // No term deletes anything before its first delete can land: a run that ends sooner
    // drains nothing.
    let terms = match end_ms.checked_sub(first_ms) {
        Some(span_ms) => span_ms / spacing_ms + 1,
        None => 0,
    };
    let per_term = rows_per_term(scenario);
    let capacity = u64::from(scenario.replicas)
        .saturating_mul(terms)
        .saturating_mul(per_term);
    if backlog <= capacity {
        return Ok(());
    }
    let message = format!(
        "({}) leaves a backlog no run can drain: at least {backlog} rows are eligible when \
         faults heal at t={}ms, and {} replicas can delete at most {capacity} by the end of the \
         liveness phase at t={end_ms}ms (terms of at most {per_term} rows, each replica's at \
         least {spacing_ms} ms apart: the acquire and delete round trips at the lowest \
         latencies and the shortest pause between terms); lower `store.rows`, lengthen the \
         phases, or set `drain = false`",
        settings.store.rows, scenario.duration_ms, scenario.replicas
    );
    Err(("store.rows", message))
}
