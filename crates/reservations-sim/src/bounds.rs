//! What a reservations run can do: the checks across keys that refuse a scenario no correct
//! worker could pass, so bad input is never reported as the worker's failure.
//!
//! Terminology:
//! - *round trip* of an operation: its highest latency there and back (faults healed).
//! - *blocked*: a due reservation another worker holds the claim of; nobody else may take it
//!   before the claim expires, `claim_for_ms` after it was set (with swarm, the longer of the
//!   scenario's and the longest drawn one, 3 s). A killed worker's claims block that long, and
//!   with kills on a replica may stay dead for `restart_ms` (the longer of the two counts).
//! - *retry chain*: one reservation's settle begun before the healing: `max_attempts`
//!   transitions, the policy's capped backoffs with their jitter between them, then a dead
//!   letter and the release.
//! - *rest of the batch*: after that chain, the claiming worker settles and releases every
//!   other reservation of its batch (a transition, a dead letter, a release each).
//! - *taking over*: once a claim expires, a worker ends its idle pause (`idle_ms` plus
//!   `idle_jitter_ms`), claims the reservation and expires it.
//! - *longest wait*: what the liveness bound must cover after a reservation's deadline or the
//!   healing, whichever is later (see `checkers/liveness.rs`): blocked, the retry chain and
//!   the rest of the batch of the worker that takes over, taking over; plus a lost reply's
//!   timeout when replies can be lost, and a pause still running when pauses are on.
//! - *longest stop*: what a correct `stop()` waits for at shutdown (faults healed): the call
//!   in flight, a dead letter that call may lead to, then the release of every claim of a
//!   whole batch.
//!
//! Each check blames one key (`(key, message)`), and the shared loader places it.

use reservations_worker::RetryPolicy;

use crate::Scenario;
use crate::events::{MAX_BATCH, Op};

/// A scenario check's finding: the dotted key to blame and what is wrong with it.
pub type Finding = (&'static str, String);

/// The longest claim a swarm run draws (see `settings::draw_worker`).
pub const SWARM_CLAIM_MAX_MS: u64 = 3_000;

/// Every cross-key check of a reservations scenario, in the order they are reported.
pub fn check(scenario: &Scenario) -> Result<(), Finding> {
    due_bound_is_reachable(scenario)?;
    stop_bound_is_reachable(scenario)
}

/// The round trip of `op` at its highest latency.
fn round_trip_ms(scenario: &Scenario, op: Op) -> u64 {
    2 * scenario.latency.get(op).max
}

/// The largest batch a run may claim (with swarm, any drawn one up to [`MAX_BATCH`]).
fn largest_batch(scenario: &Scenario) -> u64 {
    let own = u64::from(scenario.settings.worker.batch_size);
    match scenario.swarm {
        true => own.max(MAX_BATCH as u64),
        false => own,
    }
}

/// How long a due reservation may stay blocked by a claim set before the healing.
fn blocked_ms(scenario: &Scenario) -> u64 {
    let settings = &scenario.settings;
    let own = settings.worker.claim_for_ms;
    let claim_ms = match scenario.swarm {
        true => own.max(SWARM_CLAIM_MAX_MS),
        false => own,
    };
    match settings.kill.probability.get() > 0.0 {
        true => claim_ms.max(settings.kill.restart_ms.max),
        false => claim_ms,
    }
}

/// The longest retry chain of one reservation (see the module docs).
fn retry_chain_ms(scenario: &Scenario) -> u64 {
    let retry: &RetryPolicy = &scenario.settings.worker.retry;
    let backoffs_ms: u64 = (1..retry.max_attempts)
        .map(|attempt| retry.backoff(attempt))
        .map(|backoff| backoff.base_ms.saturating_add(backoff.jitter_ms))
        .fold(0, u64::saturating_add);
    let transitions_ms = u64::from(retry.max_attempts) * round_trip_ms(scenario, Op::Expire);
    backoffs_ms
        .saturating_add(transitions_ms)
        .saturating_add(round_trip_ms(scenario, Op::DeadLetter))
        .saturating_add(round_trip_ms(scenario, Op::Release))
}

/// The longest wait (see the module docs), with the parts it adds up, for the message.
fn longest_wait_ms(scenario: &Scenario) -> (u64, String) {
    let worker = &scenario.settings.worker;
    let blocked = blocked_ms(scenario);
    let chain = retry_chain_ms(scenario);
    let batch = largest_batch(scenario);
    let per_reservation = round_trip_ms(scenario, Op::Expire)
        + round_trip_ms(scenario, Op::DeadLetter)
        + round_trip_ms(scenario, Op::Release);
    let rest = (batch - 1) * per_reservation;
    let idle = worker.idle_ms + worker.idle_jitter_ms;
    let take_over = round_trip_ms(scenario, Op::Claim) + round_trip_ms(scenario, Op::Expire);
    let mut total = [blocked, chain, rest, idle, take_over]
        .into_iter()
        .fold(0, u64::saturating_add);
    let mut parts = format!(
        "{blocked} ms blocked by a claim (claim_for_ms{}), {chain} ms of a retry chain ({} \
         attempts with their backoffs and jitter, a dead letter, the release), {rest} ms for \
         the rest of a batch of {batch}, {idle} ms of an idle pause, {take_over} ms to claim \
         and expire",
        match scenario.settings.kill.probability.get() > 0.0 {
            true => ", or a killed replica's restart_ms",
            false => "",
        },
        worker.retry.max_attempts
    );
    if scenario.faults.timeouts() {
        let timeout_ms = scenario.faults.timeout_ms.get();
        total = total.saturating_add(timeout_ms);
        parts.push_str(&format!(
            ", {timeout_ms} ms of a lost request's or reply's timeout"
        ));
    }
    if scenario.faults.pause.probability.get() > 0.0 {
        let pause_ms = scenario.faults.pause.duration_ms.max;
        total = total.saturating_add(pause_ms);
        parts.push_str(&format!(", {pause_ms} ms of a pause still running"));
    }
    (total, parts)
}

/// `due_bound_ms` must leave a correct worker time to expire every due reservation once
/// faults heal.
fn due_bound_is_reachable(scenario: &Scenario) -> Result<(), Finding> {
    let bound_ms = scenario.settings.due_bound_ms;
    let (longest_ms, parts) = longest_wait_ms(scenario);
    if bound_ms >= longest_ms {
        return Ok(());
    }
    let message = format!(
        "({bound_ms} ms) is shorter than a due reservation can correctly wait once faults \
         heal, {longest_ms} ms: {parts}; raise it to at least {longest_ms}, or shorten the \
         claims, the retry policy or the latencies"
    );
    Err(("due_bound_ms", message))
}

/// `stop_bound_ms` must leave a correct `stop()` time to resolve at shutdown (see the module
/// docs: it waits for the call in flight, a dead letter, and releases a whole batch).
fn stop_bound_is_reachable(scenario: &Scenario) -> Result<(), Finding> {
    let bound_ms = scenario.stop_bound_ms;
    let in_flight = [Op::Claim, Op::Expire, Op::DeadLetter, Op::Release]
        .into_iter()
        .map(|op| round_trip_ms(scenario, op))
        .max()
        .unwrap_or(0);
    let batch = largest_batch(scenario);
    let releases = batch * round_trip_ms(scenario, Op::Release);
    let letter = round_trip_ms(scenario, Op::DeadLetter);
    let longest_ms = in_flight + letter + releases;
    if bound_ms >= longest_ms {
        return Ok(());
    }
    let message = format!(
        "({bound_ms} ms) is shorter than a correct stop() can take at shutdown: {longest_ms} ms \
         ({in_flight} ms for the call in flight, {letter} ms for the dead letter it may lead \
         to, {releases} ms to release a batch of {batch}, round trips at the highest \
         latencies); raise it to at least {longest_ms}, or lower the latencies"
    );
    Err(("stop_bound_ms", message))
}
