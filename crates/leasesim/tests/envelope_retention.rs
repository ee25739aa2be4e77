//! retention's envelopes agree with what is known of them.
//!
//! Terminology:
//! - *delete latency `v`*: the axis `latency.delete`, a range key, is written `[v, v]`: both
//!   legs of every delete (request to its apply, apply to its answer) take exactly `v` ms.
//!   Everything else is `steady`'s: no faults, 1-5 ms legs for acquire, renew and release, a
//!   renewal every `R` = 1,000 ms (`renew_every_ms`, the default), a 3,000 ms lease, 200-row
//!   batches under a 1,000-row cap, 3,000 rows created from -600 s to +30 s with 300 s of
//!   retention: about 1,430 rows are eligible at t=0 and 1,570 when faults heal at t=30 s.
//! - *analytic boundary* (the correct worker, `liveness`): a term's acquire is answered at
//!   `t`; in that poll the worker sends its first delete and starts its renewal sleep. The
//!   renewal leaves at `t + R` and is applied at `t + R + l` (`l` in 1-5 ms), and it rotates
//!   the fencing token; the store checks the token when a delete is applied, at `t + v`. So if
//!   `v > R + l` (certainly from `v` = 1,006) every term's first delete is refused as stale,
//!   the term ends on that error, no row is ever deleted and the backlog never drains:
//!   `liveness` breaks in every seed. If `v <= R` every term's first delete is applied before
//!   any renewal, so every term deletes at least one 200-row batch; near `v = R` a term lands
//!   just that one (its second delete is overtaken by the next renewal) and takes about `4v`,
//!   and the next term starts within a second, so the 50 s of the run hold about ten terms,
//!   2,000 rows, more than the 1,570 to drain. The boundary is `v = R` (to within the
//!   renewal's 5 ms flight): on a grid of 100 ms steps from 550 the last safe value is 950 and
//!   the first unsafe one 1,050.
//! - *no-renewal's boundary* (`renewal-due`): the defective worker never renews. A run's first
//!   term deletes the whole cap, five batches back to back, and releases `10v` after its
//!   acquire's answer; `renewal-due` breaks when the release comes after `t + R`, so iff `10v >
//!   R`: the worker is safe only up to `v` = 100 ms, a strict subset of the correct worker's
//!   `v <= R`.

#[path = "envelope_support/mod.rs"]
mod support;

use leasesim::envelope::{Class, Envelope, PointResult};
use support::{one_boundary, run, spec};

/// The outcome most seeds showed at the measured point with axis value `value`.
fn main_outcome_at(envelope: &Envelope, value: f64) -> String {
    let x = envelope.axes[0]
        .values
        .iter()
        .position(|v| *v == value)
        .expect("a grid value");
    match envelope.point((x, 0)).map(|p| &p.result) {
        Some(PointResult::Ran(runs)) => runs.main_outcome().unwrap_or("-").to_string(),
        other => panic!("the point at {value} was not run: {other:?}"),
    }
}

#[test]
fn deletes_land_only_while_their_latency_is_within_the_renewal_interval_within_one_step() {
    let spec = spec("steady", "correct", &["latency.delete=550..1450"], 10, 100);
    let envelope = run(&spec);
    let ((below, below_class), (above, above_class)) = one_boundary(&envelope);
    assert_eq!((below_class, above_class), (Class::Safe, Class::Unsafe));
    // R, the renewal interval; a delete later than R plus the renewal's flight is refused.
    let analytic_ms = 1_000.0;
    let step_ms = 100.0;
    assert!(
        below <= analytic_ms
            && analytic_ms < above
            && above - below <= step_ms
            && above <= analytic_ms + step_ms,
        "boundary between {below} and {above} ms, analytic {analytic_ms} ms"
    );
    // Past it, no row is deleted: the backlog, not a safety invariant, is what breaks.
    assert_eq!(main_outcome_at(&envelope, above), "liveness");
    // Adaptive: fewer points than the grid's ten.
    assert!(
        envelope.points.len() < 10,
        "{} points",
        envelope.points.len()
    );
}

#[test]
fn no_renewal_is_safe_on_a_strict_subset_of_the_correct_workers_delete_latencies() {
    let axis = "latency.delete=50..1450";
    let correct = run(&spec("steady", "correct", &[axis], 8, 60));
    let defective = run(&spec("steady", "no-renewal", &[axis], 8, 60));
    let safe = |e: &Envelope| -> Vec<bool> {
        (0..8).map(|x| e.map.class((x, 0)) == Class::Safe).collect()
    };
    let (correct_safe, defective_safe) = (safe(&correct), safe(&defective));
    assert!(
        defective_safe
            .iter()
            .zip(&correct_safe)
            .all(|(d, c)| !d || *c)
            && defective_safe.iter().filter(|s| **s).count()
                < correct_safe.iter().filter(|s| **s).count(),
        "no-renewal safe at {defective_safe:?}, the correct worker at {correct_safe:?}"
    );
    // Both safe at 50 ms (a term of 10 x 50 ms fits in R); the correct worker up to 850
    // ms, no-renewal not from 250 (10 x 250 ms > R), where renewal-due catches it.
    assert_eq!(
        (correct_safe, defective_safe[..2].to_vec()),
        (
            vec![true, true, true, true, true, false, false, false],
            vec![true, false]
        )
    );
    assert_eq!(main_outcome_at(&defective, 250.0), "renewal-due");
}
