//! What a work-items run can do: the checks across keys that refuse a scenario no correct
//! worker could pass, so bad input is never reported as the worker's failure.
//!
//! Terminology:
//! - *settling an item*: the correct worker finds it, claims it and writes its end mark (done,
//!   or failed), one call after the other. Done takes every chunk of the item applied and the
//!   provider's effect first; failed takes a provider refusal (after the chunks), or every
//!   attempt given up, each attempt a find, a claim and at least one apply (only where an
//!   apply can fail: refused or its reply lost, or a swarm that may switch those on). The
//!   quickest of these paths at the lowest latencies is a lower bound of an item, whatever
//!   else it needs (renewals, retries, backoffs) and whatever faults strike.
//! - *settle capacity*: the most items the replicas could settle from the start of the run to
//!   the end of the liveness phase, each worker settling one item at a time at the lowest
//!   latencies. An upper bound: a scenario over it cannot settle in any run (one under it may
//!   still not, in a given run).
//! - *empty run*: a `run()` that finds nothing to claim: one find, then one status read. A
//!   run takes no virtual time when both can answer at once.
//!
//! Each check blames one key (`(key, message)`); the shared loader places it.

use crate::Scenario;
use crate::events::Op;

/// A scenario check's finding: the dotted key to blame and what is wrong with it.
pub type Finding = (&'static str, String);

/// Every cross-key check of a work-items scenario.
pub fn check(scenario: &Scenario) -> Result<(), Finding> {
    runs_take_time(scenario)?;
    items_can_settle(scenario)
}

/// With no pause between runs and an empty run that can take no time, a replica with nothing
/// to claim starts run after run at one virtual instant forever: a `spin` of its driver.
fn runs_take_time(scenario: &Scenario) -> Result<(), Finding> {
    let pause_ms = scenario.schedule.run_every_ms.min;
    let empty_run_ms =
        quickest_round_trip_ms(scenario, Op::Find) + quickest_round_trip_ms(scenario, Op::Status);
    if pause_ms + empty_run_ms > 0 {
        return Ok(());
    }
    let message = "starts at 0 ms while find and status latencies can be 0 too: a replica with \
                   nothing to claim could start run after run at one virtual instant forever; \
                   give one of them a minimum of at least 1 ms"
        .to_string();
    Err(("schedule.run_every_ms", message))
}

/// The shortest round trip of `op`: its lowest latency there and back.
fn quickest_round_trip_ms(scenario: &Scenario, op: Op) -> u64 {
    2 * scenario.latency.get(op).min
}

/// The shortest time in which one worker settles one item (see *settling an item*).
pub fn quickest_item_ms(scenario: &Scenario) -> u64 {
    let trip = |op| quickest_round_trip_ms(scenario, op);
    let settings = &scenario.settings;
    let chunks = u64::from(settings.items.chunks[0]);
    let attempts = u64::from(settings.worker.max_attempts);
    let claimed_ms = trip(Op::Find) + trip(Op::Claim);
    let effects_ms = claimed_ms + chunks * trip(Op::Apply) + trip(Op::Provider);
    let done_ms = effects_ms + trip(Op::Done);
    let refused_ms = effects_ms + trip(Op::Fail);
    let faults = &scenario.faults;
    let apply_can_fail = scenario.swarm || faults.call_can_fail(Op::Apply);
    let given_up_ms = match apply_can_fail {
        true => attempts * (claimed_ms + trip(Op::Apply)) + trip(Op::Fail),
        false => u64::MAX,
    };
    let quickest_ms = done_ms.min(refused_ms).min(given_up_ms);
    // invariant: every path holds a find and a claim, and at least one apply.
    debug_assert!(quickest_ms >= claimed_ms + trip(Op::Apply));
    quickest_ms
}

/// With `settle` on, every item must end done or failed by the end of the liveness phase:
/// refused when the items outnumber the settle capacity.
fn items_can_settle(scenario: &Scenario) -> Result<(), Finding> {
    let settings = &scenario.settings;
    let item_ms = quickest_item_ms(scenario);
    if !settings.settle || item_ms == 0 {
        return Ok(());
    }
    let run_ms = scenario.duration_ms + scenario.liveness_ms;
    let replicas = u64::from(scenario.replicas);
    let capacity = replicas * (run_ms / item_ms);
    let count = u64::from(settings.items.count);
    if count <= capacity {
        return Ok(());
    }
    let message = format!(
        "({count}) is more than any run can settle: {replicas} replica(s) settle at most \
         {capacity} item(s) in the {run_ms}ms up to the end of the liveness phase, each item \
         taking at least {item_ms}ms (a find, a claim, its chunks, the provider and a \
         done-mark, or the quickest way to fail it, there and back at the lowest latencies); \
         lower the count, lengthen the phases, or set `settle = false`"
    );
    Err(("items.count", message))
}
