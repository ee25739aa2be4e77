//! work-items' envelopes agree with what is known of them.
//!
//! Terminology:
//! - *apply latency `v`*: the axis `latency.apply`, a range key, is written `[v, v]`: both legs
//!   of every chunk's apply (request to its apply, apply to its answer) take exactly `v` ms.
//!   Everything else is `items-steady`'s: no fault, no clock skew (the store's clock is the
//!   worker's), 1-5 ms legs for every other call, 40 items of 1 or 2 chunks, and the `[worker]`
//!   defaults: a lease of `L` = 2,000 ms, a renewal due `R` = 700 ms after the worker asked for
//!   the last grant (`renew_every_ms`), checked before each call.
//! - *analytic boundary* (the correct worker, the situation `lease-lost-mid-item`): a claim is
//!   asked at `a`, applied at `a + c1` (the store grants it until `a + c1 + L`, and a write is
//!   live only strictly before that) and answered at `a + c1 + c2`. The first chunk leaves then
//!   (10 ms at most since the ask: no renewal is due) and lands at `+ v`, live while
//!   `c2 + v < L` (every `v` up to 1,995). Its answer comes `2v` after it left; from `v` = 350
//!   on, `R` has passed, so the worker renews before its next call (the second chunk, or the
//!   provider), and the renewal is applied `r1` later, at `a + c1 + c2 + 2v + r1`: refused,
//!   the claim lost after a chunk was applied under it, iff `c2 + 2v + r1 >= L` (after each
//!   renewal granted, the same with its answer's leg for `c2`). Both legs are 1-5 ms, so the
//!   situation is reachable iff `2v + 10 >= L`, from `v` = 995 (with both legs at 5 ms, one
//!   grant in 25) and at every grant from `v` = 999. Below 350 no renewal may come before the
//!   second chunk, which lands by `c2 + 3v` and the next renewal by `4v + 20`, both under `L`.
//!   So the boundary is `v` = 995; on a grid of 50 ms steps from 570 the last safe value is
//!   970 and the first unsafe one 1,020. (The loader's settle bound,
//!   `crates/work-items-sim/src/bounds.rs`, refuses from `v` = 1,068: the quickest item, `2v +
//!   8` ms, must fit 14 times into the 30 s run for three replicas to settle 40 items.)
//! - *store-expiry-renewal's boundary* (`renewal-due`, axis `worker.renew_every_ms`): the
//!   correct worker renews once `R` has passed since it asked for the grant; the defective one
//!   once `R` has passed since the store applied it (it reads the store's expiry minus `L - R`),
//!   `c1` (1-5 ms) later. A write sent in between breaks `renewal-due`. Without a renewal, an
//!   item's last write (its done-mark) leaves at most 40 ms after the claim was asked (a claim,
//!   two chunks and the provider, each at most 10 ms there and back), so the defect shows only
//!   while `R <= 40`, and at small `R` in nearly every seed; the correct worker, under a 2,000 ms
//!   lease, breaks nothing at any `R`. Its safe region is a strict subset of the correct one's.

#[path = "envelope_support/mod.rs"]
mod support;

use leasesim::envelope::{Class, Envelope, EnvelopeSpec, Search};
use support::{classes, one_boundary, run, spec};

const SCENARIO: &str = "items-steady";

#[test]
fn a_claim_is_lost_mid_item_where_an_apply_round_trip_nears_the_lease_within_one_step() {
    let lost = support::situation(SCENARIO, "lease-lost-mid-item");
    let axes = ["latency.apply=570..1020"];
    let spec = EnvelopeSpec {
        mark: lost,
        ..spec(SCENARIO, "correct", &axes, 10, 100)
    };
    let envelope = run(&spec);
    let ((below, below_class), (above, above_class)) = one_boundary(&envelope);
    assert_eq!((below_class, above_class), (Class::Safe, Class::Unsafe));
    // 2v + 10 >= L: the claim's answer and the renewal's request at 5 ms each.
    let (lease_ms, legs_ms) = (2_000.0, 10.0);
    let analytic_ms = (lease_ms - legs_ms) / 2.0;
    let step_ms = 50.0;
    assert!(
        below < analytic_ms
            && analytic_ms <= above
            && above - below <= step_ms
            && (analytic_ms - step_ms..=analytic_ms + step_ms).contains(&above),
        "boundary between {below} and {above} ms, analytic {analytic_ms} ms\n{}",
        leasesim::envelope::render::text(&envelope)
    );
    // Every point ran: the settle bound refuses only from 1,068 ms.
    assert!(!classes(&envelope).contains(&Class::Refused));
    // Adaptive: fewer points than the grid's ten.
    assert!(
        envelope.points_run() < 10,
        "{} points",
        envelope.points_run()
    );
}

#[test]
fn store_expiry_renewal_is_safe_on_a_strict_subset_of_the_correct_workers_intervals() {
    let axis = "worker.renew_every_ms=5..95";
    // The correct worker's every point measured, so its safe region is not inferred.
    let correct_spec = spec(SCENARIO, "correct", &[axis], 10, 60);
    let correct = run(&EnvelopeSpec {
        search: Search::Grid,
        ..correct_spec
    });
    let defective = run(&spec(SCENARIO, "store-expiry-renewal", &[axis], 10, 60));
    let safe =
        |e: &Envelope| -> Vec<bool> { classes(e).into_iter().map(|c| c == Class::Safe).collect() };
    let (correct_safe, defective_safe) = (safe(&correct), safe(&defective));
    assert!(
        correct_safe.iter().all(|s| *s),
        "the correct worker breaks nothing: {correct_safe:?}\n{}",
        leasesim::envelope::render::text(&correct)
    );
    assert!(
        defective_safe
            .iter()
            .zip(&correct_safe)
            .all(|(d, c)| !d || *c)
            && defective_safe.contains(&false),
        "store-expiry-renewal safe at {defective_safe:?}, the correct worker at \
         {correct_safe:?}"
    );
    // Renewing a few ms late shows at 5 ms intervals, and never past the 40 ms an item's writes
    // can span without a renewal.
    let ((below, below_class), (above, above_class)) = one_boundary(&defective);
    assert_eq!((below_class, above_class), (Class::Unsafe, Class::Safe));
    assert!(
        below <= 40.0 && above <= 40.0 + 10.0,
        "store-expiry-renewal unsafe up to {below} ms, safe from {above} ms\n{}",
        leasesim::envelope::render::text(&defective)
    );
    let point = defective.point((0, 0)).expect("the lattice's first point");
    let leasesim::envelope::PointResult::Ran(runs) = &point.result else {
        panic!("5 ms is not refused");
    };
    assert_eq!(runs.main_outcome(), Some("renewal-due"));
}
