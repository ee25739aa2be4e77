//! Each defective worker, run in the simulated world, leaves its defect's trace in the event
//! stream; the correct worker, on the very same runs, leaves none.
//!
//! Terminology: *pattern* and *sighting* as in `common`. A worker *shows* a pattern when some
//! run of its test has a sighting of it. Single-defect workers must show their own pattern and
//! nothing outside the few patterns their defect leads to.

#[path = "defects_common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::rc::Rc;

use common::Pattern::{self, *};
use common::{Sighting, names, scenario, shipped, sightings_over};
use leasesim_retention::events::{EndKind, EventKind, Note};
use leasesim_retention::{Scenario, WorkerFactory, correct_worker};

/// Three replicas contending for a short lease while renewals (every 150 ms, up to 400 ms
/// each way) overlap slow deletes; renewals are sometimes refused, the lease sometimes
/// revoked, and r1 is stopped during a delete.
const CONTENTION: &str = r#"
description = "contention: overlapping renewals, refusals, revocations, a stop during a delete"
system = "retention"
replicas = 3
duration_ms = 8_000
liveness_ms = 4_000

[worker]
renew_every_ms = 150

[lease]
ttl_ms = 2_000

[schedule]
run_every_ms = [20, 200]

[latency]
acquire = [1, 20]
renew = [5, 400]
release = [1, 20]
delete = [30, 120]

[faults.reject]
renew = 0.25

[faults.revoke]
probability = 0.5
every_ms = [500, 1_500]

[stop]
at = "delete"
replicas = 1
window_ms = [1_000, 6_000]
delay_ms = [0, 10]

[store]
rows = 6_000
created_from_ms = -600_000
created_to_ms = 8_000
"#;

/// Two replicas; quick renewals every 100 ms land between and during 30-60 ms deletes, so a
/// term often goes on deleting after it renewed.
const RENEWING: &str = r#"
description = "renewals land mid-term and the term goes on"
system = "retention"
replicas = 2
duration_ms = 6_000
liveness_ms = 3_000

[worker]
renew_every_ms = 100

[lease]
ttl_ms = 2_000

[latency]
acquire = [1, 5]
renew = [1, 5]
release = [1, 5]
delete = [30, 60]

[store]
rows = 6_000
created_from_ms = -600_000
created_to_ms = 6_000
"#;

/// Two replicas stopped while their acquire is in flight (it then answers a lease).
const STOP_IN_ACQUIRE: &str = r#"
description = "stops land while an acquire is in flight"
system = "retention"
replicas = 3
duration_ms = 6_000
liveness_ms = 3_000

[latency]
acquire = [30, 120]
renew = [1, 5]
release = [1, 5]
delete = [1, 5]

[stop]
at = "acquire"
replicas = 2
window_ms = [0, 4_000]
delay_ms = [0, 20]

[store]
rows = 2_000
"#;

/// A 64-row batch under a 300-row cap (not a multiple) with plenty of eligible rows, so terms
/// reach the cap's remainder.
const ODD_CAP: &str = r#"
description = "a cap that is not a multiple of the batch"
system = "retention"
replicas = 2
duration_ms = 6_000
liveness_ms = 3_000

[worker]
batch_rows = 64
cap_rows = 300

[store]
rows = 4_000
created_from_ms = -900_000
created_to_ms = -400_000
"#;

/// The seeds every inline scenario runs under.
const SEEDS: [u64; 6] = [0, 1, 2, 3, 4, 5];

fn contention() -> Rc<Scenario> {
    scenario(CONTENTION)
}

fn defective(name: &str) -> Rc<WorkerFactory> {
    <leasesim_retention::Retention as leasesim_sim::Workers>::factory(name)
        .unwrap_or_else(|| panic!("no worker named {name}"))
}

/// Asserts `name` shows every pattern of `wanted` and none outside `wanted` + `tolerated`.
fn assert_shows(
    name: &str,
    sightings: &[(u64, Sighting)],
    wanted: &[Pattern],
    tolerated: &[Pattern],
) {
    let shown = names(sightings);
    for pattern in wanted {
        assert!(
            shown.contains(pattern),
            "{name} never showed {pattern:?}; it showed {shown:?}"
        );
    }
    let allowed: BTreeSet<Pattern> = wanted.iter().chain(tolerated).copied().collect();
    let stray: Vec<_> = sightings
        .iter()
        .filter(|(_, s)| !allowed.contains(&s.pattern))
        .collect();
    assert!(
        stray.is_empty(),
        "{name} showed patterns its defect does not explain: {stray:#?}"
    );
}

#[test]
fn naive_shows_all_five_findings() {
    let factory = defective("naive");
    let mut sightings = sightings_over(&contention(), &factory, &SEEDS);
    sightings.extend(sightings_over(&shipped("backlog-cap"), &factory, &[0]));
    let wanted = [
        OverlappingRenewals,
        StaleRelease,
        MovingCutoff,
        OverCap,
        StopResolvedInTerm,
    ];
    // Its interval renewals answer out of order, as interval-renewal's do: the latest lease
    // can be an older one, and a renewal carries it.
    let tolerated = [
        DeleteAfterLoss,
        NoRelease,
        NoReleaseAfterRenewError,
        RenewWithOldToken,
    ];
    assert_shows("naive", &sightings, &wanted, &tolerated);
}

#[test]
fn interval_renewal_has_renewals_in_flight_together() {
    let sightings = sightings_over(&contention(), &defective("interval-renewal"), &SEEDS);
    // Out-of-order answers make the latest lease an older one; ignored failures let
    // deletion go on.
    let tolerated = [
        StaleRelease,
        DeleteAfterLoss,
        DeleteWithOldToken,
        RenewWithOldToken,
    ];
    assert_shows(
        "interval-renewal",
        &sightings,
        &[OverlappingRenewals],
        &tolerated,
    );
}

#[test]
fn stale_release_releases_a_superseded_token() {
    let sightings = sightings_over(&contention(), &defective("stale-release"), &SEEDS);
    assert_shows("stale-release", &sightings, &[StaleRelease], &[]);
}

#[test]
fn moving_cutoff_sends_different_cutoffs_in_one_term() {
    let sightings = sightings_over(&contention(), &defective("moving-cutoff"), &SEEDS);
    assert_shows("moving-cutoff", &sightings, &[MovingCutoff], &[]);
}

#[test]
fn uncapped_deletes_past_the_cap_in_one_term() {
    let sightings = sightings_over(&shipped("backlog-cap"), &defective("uncapped"), &[0]);
    assert_shows("uncapped", &sightings, &[OverCap], &[]);
}

#[test]
fn unjoined_stop_resolves_mid_term_and_skips_releases() {
    let factory = defective("unjoined-stop");
    let mut sightings = sightings_over(&contention(), &factory, &SEEDS);
    sightings.extend(sightings_over(&scenario(STOP_IN_ACQUIRE), &factory, &SEEDS));
    let wanted = [StopResolvedInTerm, NoRelease];
    assert_shows(
        "unjoined-stop",
        &sightings,
        &wanted,
        &[NoReleaseAfterRenewError],
    );
    let unreleased_ends: Vec<EndKind> = sightings
        .iter()
        .filter_map(|(_, s)| match s.event.event.kind {
            EventKind::Note(Note::TermEnded { end, .. }) if s.pattern == NoRelease => Some(end),
            _ => None,
        })
        .collect();
    // A delete error skips the release, and so does a lease from an acquire in flight at stop.
    for end in [EndKind::FailedDelete, EndKind::Stopped] {
        assert!(
            unreleased_ends.contains(&end),
            "no unreleased {end:?} term; saw {unreleased_ends:?}"
        );
    }
}

#[test]
fn early_cutoff_reads_the_clock_before_acquire_answers() {
    let sightings = sightings_over(&contention(), &defective("early-cutoff"), &SEEDS);
    assert_shows("early-cutoff", &sightings, &[ClockReadBeforeAcquire], &[]);
}

#[test]
fn leaked_renewal_renews_an_ended_terms_lease() {
    let sightings = sightings_over(&contention(), &defective("leaked-renewal"), &SEEDS);
    // The leaked loop runs beside the next term's own loop, and a leaked renewal that
    // succeeds rotates the token under the next term, whose own loop then renews a token
    // that is no longer the newest.
    let tolerated = [
        OverlappingRenewals,
        StaleRelease,
        DeleteAfterLoss,
        DeleteWithOldToken,
        RenewWithOldToken,
    ];
    assert_shows(
        "leaked-renewal",
        &sightings,
        &[RenewalOfAnotherTerm],
        &tolerated,
    );
}

#[test]
fn delete_after_loss_deletes_after_a_failed_renewal() {
    let sightings = sightings_over(&contention(), &defective("delete-after-loss"), &SEEDS);
    assert_shows("delete-after-loss", &sightings, &[DeleteAfterLoss], &[]);
}

#[test]
fn renew_error_no_release_skips_the_release_after_a_renewal_error() {
    let sightings = sightings_over(&contention(), &defective("renew-error-no-release"), &SEEDS);
    let wanted = [NoReleaseAfterRenewError];
    assert_shows("renew-error-no-release", &sightings, &wanted, &[]);
}

#[test]
fn acquired_token_deletes_with_a_superseded_token() {
    let sightings = sightings_over(&scenario(RENEWING), &defective("acquired-token"), &SEEDS);
    assert_shows("acquired-token", &sightings, &[DeleteWithOldToken], &[]);
}

#[test]
fn leftover_release_releases_without_ownership() {
    let sightings = sightings_over(&contention(), &defective("leftover-release"), &SEEDS);
    assert_shows(
        "leftover-release",
        &sightings,
        &[ReleaseWithoutOwnership],
        &[],
    );
}

#[test]
fn stale_renewal_renews_with_a_superseded_token() {
    let sightings = sightings_over(&scenario(RENEWING), &defective("stale-renewal"), &SEEDS);
    assert_shows("stale-renewal", &sightings, &[RenewWithOldToken], &[]);
}

#[test]
fn whole_batches_claims_the_cap_below_it_only_when_the_cap_is_not_a_multiple() {
    let factory = defective("whole-batches");
    let sightings = sightings_over(&scenario(ODD_CAP), &factory, &SEEDS);
    assert_shows("whole-batches", &sightings, &[CapClaimedEarly], &[]);
    let sightings = sightings_over(&shipped("backlog-cap"), &factory, &[0, 1]);
    assert_shows("whole-batches on backlog-cap", &sightings, &[], &[]);
}

#[test]
fn the_correct_worker_shows_no_pattern_on_the_same_runs() {
    let correct: Rc<WorkerFactory> = Rc::new(correct_worker);
    let runs: [(Rc<Scenario>, &[u64]); 5] = [
        (contention(), &SEEDS),
        (shipped("backlog-cap"), &[0]),
        (scenario(STOP_IN_ACQUIRE), &SEEDS),
        (scenario(RENEWING), &SEEDS),
        (scenario(ODD_CAP), &SEEDS),
    ];
    for (scenario, seeds) in &runs {
        let sightings = sightings_over(scenario, &correct, seeds);
        assert!(
            sightings.is_empty(),
            "the correct worker showed defect patterns on {}: {sightings:#?}",
            scenario.name
        );
    }
}
