//! What a holder-lock run can do: the checks across keys that refuse a scenario no correct
//! worker could pass, so bad input is never reported as the worker's failure.
//!
//! Terminology:
//! - *correct attempt*: what the production worker does in one `run()`: a create; if it wins,
//!   the job beside its keeper (which waits for a renewal in flight before letting the attempt
//!   end); then the release: a `delete_if_holder`, or a `get` on a store without
//!   compare-and-delete. Every bound below is about such an attempt with faults healed.
//! - *longest attempt*: its serial round trips at the scenario's highest latencies (the
//!   create, the renewal it waits for, the release), plus the longest job on the slowest
//!   clock; plus, for an attempt open when faults heal, a lost request's or reply's timeout
//!   and a pause still running.
//! - *release operations*: `delete_if_holder` on a store with compare-and-delete, and `get`
//!   too with `swarm` (a swarm run may take compare-and-delete away); `get` alone without it.
//! - *trust margin*: the worker trusts its claim for four fifths of the lifetime, counted on
//!   its own timer from the moment it sent the create or renewal; the store keeps the claim
//!   for the whole lifetime from the apply, on its own clock. The last fifth absorbs a timer
//!   slower than the store's clock: down to 4/5 of true speed (-200,000 ppm; exactly: while
//!   the trusted time on the slowest clock fits in the lifetime plus the shortest flight of a
//!   create or renewal). A slower timer would let a correct worker start or continue a job
//!   on a claim the store has already forgotten, so such a scenario is refused.
//!
//! Each check blames one key (`(key, message)`), and the shared loader places it.

use crate::Scenario;
use crate::events::Op;

/// A scenario check's finding: the dotted key to blame and what is wrong with it.
pub type Finding = (&'static str, String);

/// Every cross-key check of a holder-lock scenario, in the order they are reported.
pub fn check(scenario: &Scenario) -> Result<(), Finding> {
    attempts_take_time(scenario)?;
    attempt_bound_is_reachable(scenario)?;
    stop_bound_is_reachable(scenario)?;
    timers_within_the_trust_margin(scenario)
}

fn highest(scenario: &Scenario, op: Op) -> u64 {
    scenario.latency.get(op).max
}

/// With no pause between attempts and no create latency, a replica whose create loses (or is
/// refused) starts its next attempt at the same virtual instant, forever: a `spin` of its
/// driver.
fn attempts_take_time(scenario: &Scenario) -> Result<(), Finding> {
    let pause_ms = scenario.schedule.run_every_ms.min;
    if pause_ms + 2 * scenario.latency.get(Op::Create).min > 0 {
        return Ok(());
    }
    let message = "starts at 0 ms while create latency can be 0 too: a replica whose create \
                   finds the key taken could start attempt after attempt at one virtual instant \
                   forever; give one of them a minimum of at least 1 ms"
        .to_string();
    Err(("schedule.run_every_ms", message))
}

/// The release operations a run may use (see the module docs).
fn release_ops(scenario: &Scenario) -> &'static [Op] {
    match (scenario.settings.store.compare_and_delete, scenario.swarm) {
        (true, false) => &[Op::DeleteIfHolder],
        (true, true) => &[Op::DeleteIfHolder, Op::Get],
        (false, _) => &[Op::Get],
    }
}

/// The slowest release's one-way latency.
fn highest_release(scenario: &Scenario) -> u64 {
    let ops = release_ops(scenario).iter();
    ops.map(|&op| highest(scenario, op)).max().unwrap_or(0)
}

/// Virtual ms that pass while the slowest clock (the lowest drift) counts `local_ms`, rounded
/// up as a replica's clock rounds each sleep.
fn on_slowest_clock_ms(scenario: &Scenario, local_ms: u64) -> u64 {
    let rate = (1_000_000 + scenario.clocks.drift_ppm.min.min(0)).max(1) as u128;
    let span = (u128::from(local_ms) * 1_000_000).div_ceil(rate);
    span.min(u128::from(u64::MAX)) as u64
}

/// The longest job in virtual time: the longest drawn length (a long one if any can be drawn:
/// swarm only scales a share above 0), step by step on the slowest clock.
fn longest_job_ms(scenario: &Scenario) -> (u64, u64) {
    let job = &scenario.settings.job;
    let mut local_ms = job.duration_ms.max;
    if job.long_share.get() > 0.0 {
        local_ms = local_ms.max(job.long_duration_ms.max);
    }
    let local_ms = local_ms.max(1);
    let step_ms = job.step_ms.get();
    let steps_ms = (local_ms / step_ms) * on_slowest_clock_ms(scenario, step_ms);
    let virtual_ms = steps_ms + on_slowest_clock_ms(scenario, local_ms % step_ms);
    // invariant: a job never takes less virtual time than its length on a true clock.
    debug_assert!(virtual_ms >= local_ms);
    (local_ms, virtual_ms)
}

/// The longest a correct attempt can take once faults heal (see the module docs), with the
/// parts it adds up, for the message.
fn longest_attempt_ms(scenario: &Scenario) -> (u64, String) {
    let renewal = scenario.settings.claim.renew_every_ms.is_some();
    let renew_ms = if renewal {
        highest(scenario, Op::Renew)
    } else {
        0
    };
    let round_trips_ms = 2 * (highest(scenario, Op::Create) + renew_ms + highest_release(scenario));
    let (local_ms, job_ms) = longest_job_ms(scenario);
    let mut total_ms = round_trips_ms + job_ms;
    let waited = if renewal {
        ", the renewal it waits for"
    } else {
        ""
    };
    let mut parts = format!(
        "{round_trips_ms} ms of round trips at the highest latencies (the create{waited}, the \
         release), {job_ms} ms of the longest job"
    );
    if job_ms > local_ms {
        let drift_ppm = scenario.clocks.drift_ppm.min;
        parts.push_str(&format!(
            " ({local_ms} ms on a clock drifting {drift_ppm} ppm)"
        ));
    }
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

/// `attempt_bound_ms` must leave a correct attempt time to end once faults heal.
fn attempt_bound_is_reachable(scenario: &Scenario) -> Result<(), Finding> {
    let bound_ms = scenario.settings.attempt_bound_ms;
    let (longest_ms, parts) = longest_attempt_ms(scenario);
    if bound_ms >= longest_ms {
        return Ok(());
    }
    let message = format!(
        "({bound_ms} ms) is shorter than a correct attempt can take once faults heal, \
         {longest_ms} ms: {parts}; raise it to at least {longest_ms}, or shorten the jobs or \
         the latencies"
    );
    Err(("attempt_bound_ms", message))
}

/// `stop_bound_ms` must leave a correct `stop()` time to resolve at shutdown: the job is
/// dropped at once, but the call in flight (a create, a renewal, or the release itself) is
/// awaited, and then the claim is released.
fn stop_bound_is_reachable(scenario: &Scenario) -> Result<(), Finding> {
    let bound_ms = scenario.stop_bound_ms;
    let renewal = scenario.settings.claim.renew_every_ms.is_some();
    let renew_ms = if renewal {
        highest(scenario, Op::Renew)
    } else {
        0
    };
    let release_ms = highest_release(scenario);
    let in_flight_ms = highest(scenario, Op::Create).max(renew_ms).max(release_ms);
    let longest_ms = 2 * (in_flight_ms + release_ms);
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

/// The slowest clock must leave the trusted time inside the store's lifetime of the claim
/// (see the module docs).
fn timers_within_the_trust_margin(scenario: &Scenario) -> Result<(), Finding> {
    let claim = &scenario.settings.claim;
    let (lifetime_ms, trusted_ms) = (claim.lifetime_ms, claim.trusted_ms());
    let flight_ms = scenario.latency.get(Op::Create).min;
    let flight_ms = flight_ms.min(scenario.latency.get(Op::Renew).min);
    let kept_ms = lifetime_ms + flight_ms;
    let trusted_on_store_ms = on_slowest_clock_ms(scenario, trusted_ms);
    if trusted_on_store_ms <= kept_ms {
        return Ok(());
    }
    // The lowest drift whose rate keeps the trusted time within `kept_ms`, rounded up.
    let rate_ppm = (u128::from(trusted_ms) * 1_000_000).div_ceil(u128::from(kept_ms));
    let lowest_ppm = rate_ppm as i64 - 1_000_000;
    let drift_ppm = scenario.clocks.drift_ppm.min;
    let message = format!(
        "({drift_ppm} ppm at its lowest) makes a replica's timer so slow that the worker's \
         trusted time, {trusted_ms} ms on its own timer (four fifths of the {lifetime_ms} ms \
         lifetime, counted from the send), lasts {trusted_on_store_ms} ms of the store's \
         clock, past the {kept_ms} ms the store keeps the claim from that send at the earliest \
         (the lifetime plus the shortest flight of a create or renewal): a correct worker would \
         act on a claim the store has forgotten; keep it at {lowest_ppm} ppm or above"
    );
    Err(("clocks.drift_ppm", message))
}
