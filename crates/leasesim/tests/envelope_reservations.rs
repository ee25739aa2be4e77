//! reservations' envelopes agree with what is known of them.
//!
//! Terminology:
//! - *round trip* of an operation: its request and its reply, each drawn from the scenario's
//!   `[latency]` range; every operation these scenarios leave at the default `[1, 5]` takes
//!   10 ms at most. Varying `latency.expire` writes `[v, v]`: a transition takes exactly `v`
//!   each way.
//! - *span* of a batch: how long after its claim applied the claiming worker's transition of
//!   the batch's last reservation applies. The correct core (and every defective worker but in
//!   its defect) settles and releases a batch one reservation after the other: a claim's reply,
//!   then per reservation a transition and a release round trip, so the `k`-th transition
//!   applies at most `5 + (k - 1) * (2v + 10) + v` ms after the claim: `15v + 75` for a batch
//!   of 8 (the batch of every scenario here; the first claim of a run takes 8 of the backlog of
//!   10 due holds).
//! - *tokenless window*: `tokenless-release` frees whatever claim a reservation has, so it
//!   breaks `release-own-claim` only by freeing a rival's claim. A rival can claim a
//!   reservation only while it is held and due with no live claim: after the first worker's
//!   claim expired (`claim_for_ms` after it applied) and before that worker's transition of it
//!   applied (then it is expired and nobody claims it). So the defect can show only if a
//!   batch's span outlasts the claim: `15v + 75 > claim_for_ms`. Agents consume before the
//!   deadline or race it, never reopen a hold; a killed worker (`expiry-killed-worker`) sends no
//!   release at all, so kills cut a span short and add no window. Once the window is hundreds
//!   of ms wide, a rival's poll (every idle pause, 1,000-3,000 ms) lands in it in some seeds.
//! - *analytic boundaries* of `tokenless-release` on `expiry-killed-worker` (claims of
//!   3,000 ms) as `latency.expire` varies: unsafe only above `v = (3,000 - 75) / 15 = 195 ms`;
//!   and refused (`crates/reservations-sim/src/bounds.rs`) once a correct worker's longest wait
//!   outgrows `due_bound_ms` (45,000): 4,000 blocked (kills on: the longest `restart_ms` beats
//!   the 3,000 ms claim), a retry chain of four backoffs with half jitter (1,000 + 2,000 +
//!   4,000 + 8,000, times 1.5: 22,500) plus five transitions (`10v`), a dead letter and a
//!   release (20), the rest of the batch (`7 * (2v + 20)`), the idle pause (3,000), a claim and
//!   a transition (`10 + 2v`): `29,670 + 26v > 45,000`, `v > 589.6 ms`.
//! - *claim lengths* on `expiry-steady` (default latencies, no faults): a batch's span is at
//!   most `15 * 5 + 75 = 150` ms, so `tokenless-release` is safe at every `claim_for_ms` above
//!   150 ms (the correct worker, which frees only its own token, at every one); with 1 ms
//!   claims a rival's claim is there to free in most seeds.

#[path = "envelope_support/mod.rs"]
mod support;

use leasesim::envelope::{Class, Envelope, PointResult, render};
use support::{boundaries, run};

fn spec(scenario: &str, worker: &str, axis: &str, seeds: u64) -> leasesim::envelope::EnvelopeSpec {
    support::spec(scenario, worker, &[axis], 10, seeds)
}

/// A correct worker's longest wait on `expiry-killed-worker` with transitions of `v` ms each
/// way (module docs).
fn longest_wait_ms(v: u64) -> u64 {
    29_670 + 26 * v
}

/// Whether `analytic` lies within the boundary `(below, above]`, one grid step.
fn within_one_step(analytic: f64, ((below, _), (above, _)): ((f64, Class), (f64, Class))) -> bool {
    below <= analytic && analytic < above
}

#[test]
fn a_tokenless_release_breaks_where_a_batch_outlasts_its_claim_and_is_refused_past_the_bound() {
    let axis = "latency.expire=60..600";
    let envelope = run(&spec(
        "expiry-killed-worker",
        "tokenless-release",
        axis,
        100,
    ));
    let text = render::text(&envelope);
    let found = boundaries(&envelope);
    assert_eq!(found.len(), 2, "two boundaries: {found:?}\n{text}");
    let (unsafe_from, refused_from) = (found[0], found[1]);
    assert_eq!(
        (
            unsafe_from.0.1,
            unsafe_from.1.1,
            refused_from.0.1,
            refused_from.1.1
        ),
        (Class::Safe, Class::Unsafe, Class::Unsafe, Class::Refused),
        "{text}"
    );
    // A batch of 8 outlasts a 3,000 ms claim once 15v + 75 > 3,000.
    let span_ms = (3_000.0 - 75.0) / 15.0;
    assert!(
        within_one_step(span_ms, unsafe_from),
        "unsafe from {unsafe_from:?}, analytic {span_ms} ms\n{text}"
    );
    // Refused once 29,670 + 26v > 45,000.
    let bound_ms = (45_000.0 - 29_670.0) / 26.0;
    assert!(
        within_one_step(bound_ms, refused_from),
        "refused from {refused_from:?}, analytic {bound_ms:.1} ms\n{text}"
    );
    // The refusal adds up the parts the derivation does, and the defect is the one that shows.
    let first_refused = envelope.axes[0]
        .values
        .iter()
        .position(|v| *v == refused_from.1.0);
    let Some(PointResult::Refused { why, .. }) = first_refused
        .and_then(|x| envelope.point((x, 0)))
        .map(|p| &p.result)
    else {
        panic!("the first refused point was measured\n{text}");
    };
    let figure = format!("{} ms:", longest_wait_ms(refused_from.1.0 as u64));
    assert!(
        why.contains("due_bound_ms") && why.contains(&figure),
        "{why}"
    );
    for point in &envelope.points {
        if let PointResult::Ran(runs) = &point.result {
            assert_eq!(runs.seeds, 100);
            if runs.marked > 0 {
                assert_eq!(runs.main_outcome(), Some("release-own-claim"), "{text}");
            }
        }
    }
}

#[test]
fn a_tokenless_release_is_safe_on_a_strict_subset_of_the_correct_workers_claim_lengths() {
    let axis = "worker.claim_for_ms=1..271";
    let correct = run(&spec("expiry-steady", "correct", axis, 60));
    let defective = run(&spec("expiry-steady", "tokenless-release", axis, 60));
    let safe = |e: &Envelope| -> Vec<bool> {
        (0..10)
            .map(|x| e.map.class((x, 0)) == Class::Safe)
            .collect()
    };
    let (correct_safe, defective_safe) = (safe(&correct), safe(&defective));
    assert!(
        correct_safe.iter().all(|s| *s),
        "the correct worker breaks nothing: {correct_safe:?}\n{}",
        render::text(&correct)
    );
    assert!(
        defective_safe
            .iter()
            .zip(&correct_safe)
            .all(|(d, c)| !d || *c)
            && defective_safe.contains(&false),
        "tokenless-release safe at {defective_safe:?}, the correct worker at {correct_safe:?}"
    );
    // With 1 ms claims a rival's claim is there to free; past a batch's span (150 ms) there
    // never is.
    let text = render::text(&defective);
    assert_eq!(defective.map.class((0, 0)), Class::Unsafe, "{text}");
    let values = &defective.axes[0].values;
    for x in (0..10).filter(|&x| values[x] > 150.0) {
        assert_eq!(defective.map.class((x, 0)), Class::Safe, "{x}: {text}");
    }
    for point in &defective.points {
        if let PointResult::Ran(runs) = &point.result
            && runs.marked > 0
        {
            assert_eq!(runs.main_outcome(), Some("release-own-claim"), "{text}");
        }
    }
}
