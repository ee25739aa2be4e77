//! holder-lock's envelopes agree with what is known of them.
//!
//! Terminology:
//! - *overlap*: the situation `overlap-after-expiry`, two jobs at once, the second claimed
//!   after the first one's claim ran out. With renewal off (`holder-long-jobs`) the correct
//!   worker lets a job outlast its claim, so the design's question, "is the job exclusive?", is
//!   where this situation is reached.
//! - *analytic boundary*: a job of length `d` starts when its create is answered and ends `d`
//!   later; the store forgets the claim `lifetime_ms` after the create's apply; a rival's job
//!   starts after a create applied once the claim ran out, and answered. So two jobs overlap
//!   only if `d` plus the create's reply flight exceeds the lifetime plus the rival's round
//!   trip: with latencies of 1-5 ms, only if the longest job (6,000 ms) is longer than about
//!   the lifetime. Overlap needs `lifetime_ms < 6,000 + 5`; at 6,000 it needs a job drawn
//!   within a few ms of 6,000 and a rival within a few ms of the expiry, so the measured
//!   boundary lies within one step (500 ms) below 6,000.

use std::sync::Arc;

use leasesim::catalog::resolve_one;
use leasesim::envelope::{Axis, Class, Envelope, EnvelopeSpec, Mark, Search, measure};
use leasesim::fuzz::Progress;

fn spec(
    scenario: &str,
    worker: &str,
    axes: &[&str],
    resolution: usize,
    seeds: u64,
    mark: Mark,
) -> EnvelopeSpec {
    EnvelopeSpec {
        scenario: resolve_one(scenario).expect("a builtin scenario"),
        worker: worker.to_string(),
        factory: None,
        strategy: leasesim::Strategy::Random,
        axes: axes
            .iter()
            .map(|a| Axis::parse(a).expect("an axis"))
            .collect(),
        resolution,
        start_seed: 0,
        seeds,
        jobs: 2,
        mark,
        search: Search::Adaptive,
        seed_timeout_ms: 60_000,
    }
}

fn run(spec: &EnvelopeSpec) -> Envelope {
    measure(spec, &Arc::new(Progress::default()), &mut |_| {}).expect("a valid envelope")
}

fn overlap() -> Mark {
    let situations = resolve_one("holder-long-jobs")
        .unwrap()
        .system()
        .situations();
    let index = situations
        .iter()
        .position(|(n, _)| *n == "overlap-after-expiry")
        .unwrap();
    Mark::Situation("overlap-after-expiry", index)
}

/// The values of a 1-D envelope's first axis on each side of its one boundary: `(last of the
/// low class, first of the high class)` and the two classes.
fn one_boundary(envelope: &Envelope) -> ((f64, Class), (f64, Class)) {
    let boundary = envelope.boundary();
    assert_eq!(
        boundary.len(),
        1,
        "one boundary: {boundary:?}\n{}",
        leasesim::envelope::render::text(envelope)
    );
    let (a, b) = boundary[0];
    let values = &envelope.axes[0].values;
    (
        (values[a.0], envelope.map.class(a)),
        (values[b.0], envelope.map.class(b)),
    )
}

#[test]
fn jobs_overlap_where_the_longest_job_outlasts_the_claim_within_one_step() {
    let spec = spec(
        "holder-long-jobs",
        "correct",
        &["claim.lifetime_ms=4000..8000"],
        9,
        100,
        overlap(),
    );
    let envelope = run(&spec);
    let ((below, below_class), (above, above_class)) = one_boundary(&envelope);
    assert_eq!((below_class, above_class), (Class::Unsafe, Class::Safe));
    let analytic_ms = 6_000.0;
    let step_ms = 500.0;
    assert!(
        below < analytic_ms + 5.0
            && (analytic_ms - step_ms..=analytic_ms + step_ms).contains(&above),
        "boundary between {below} and {above} ms, analytic {analytic_ms} ms"
    );
    // Adaptive: fewer points than the grid's nine.
    assert!(
        envelope.points.len() < 9,
        "{} points",
        envelope.points.len()
    );
}

#[test]
fn a_plain_delete_is_safe_on_a_strict_subset_of_the_correct_workers_settings() {
    let axes = ["claim.lifetime_ms=2000..8000"];
    let correct = run(&spec(
        "holder-long-jobs",
        "correct",
        &axes,
        7,
        60,
        Mark::Violations,
    ));
    let defective = run(&spec(
        "holder-long-jobs",
        "plain-delete",
        &axes,
        7,
        60,
        Mark::Violations,
    ));
    let safe = |e: &Envelope| -> Vec<bool> {
        (0..7).map(|x| e.map.class((x, 0)) == Class::Safe).collect()
    };
    let (correct_safe, defective_safe) = (safe(&correct), safe(&defective));
    assert!(
        correct_safe.iter().all(|s| *s),
        "the correct worker breaks nothing: {correct_safe:?}"
    );
    assert!(
        defective_safe
            .iter()
            .zip(&correct_safe)
            .all(|(d, c)| !d || *c)
            && defective_safe.contains(&false),
        "plain-delete safe at {defective_safe:?}, the correct worker at {correct_safe:?}"
    );
    // Where its job outlasts its claim, its release deletes a rival's claim.
    assert_eq!(defective.map.class((0, 0)), Class::Unsafe);
    assert_eq!(defective.map.class((6, 0)), Class::Safe);
}

#[test]
fn the_same_envelope_twice_is_the_same_and_jobs_do_not_change_it() {
    let mut one = spec(
        "holder-long-jobs",
        "correct",
        &["claim.lifetime_ms=1000..8000", "job.long_share=0..0.5"],
        5,
        30,
        overlap(),
    );
    let first = leasesim::envelope::render::text(&run(&one));
    one.jobs = 1;
    let second = leasesim::envelope::render::text(&run(&one));
    assert_eq!(first, second);
    assert!(first.contains("runs: "), "{first}");
}

#[test]
fn a_worker_of_your_own_maps_as_the_builtin_it_wraps() {
    use leasesim::holder_lock::{HolderLock, WorkerFactory, correct_worker_of};
    use std::rc::Rc;
    let axes = ["claim.lifetime_ms=2000..8000"];
    let builtin = run(&spec(
        "holder-long-jobs",
        "correct",
        &axes,
        5,
        20,
        overlap(),
    ));
    let mut own = spec("holder-long-jobs", "mine", &axes, 5, 20, overlap());
    own.factory = Some(leasesim::fuzz::FactorySource::new::<HolderLock>(|| {
        let factory: Rc<WorkerFactory> = Rc::new(|ports| {
            Rc::new(correct_worker_of(ports)) as Rc<leasesim::WorkerOf<HolderLock>>
        });
        factory
    }));
    let mine = run(&own);
    assert_eq!(mine.worker, "mine");
    assert_eq!(mine.map, builtin.map);
    assert_eq!(mine.points, builtin.points);
    assert!(
        mine.map.cells.iter().any(|(c, _)| *c == Class::Unsafe),
        "{:?}",
        mine.map
    );
}
