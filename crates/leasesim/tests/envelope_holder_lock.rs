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

#[path = "envelope_support/mod.rs"]
mod support;

use leasesim::envelope::{Class, Envelope, EnvelopeSpec, Mark};
use support::{one_boundary, run, spec};

/// The design's story: a 3 s claim never renewed, jobs of about 1.2 s that sometimes take 6 s.
const STORY: &str = "holder-long-jobs";

fn overlap() -> Mark {
    support::situation(STORY, "overlap-after-expiry")
}

#[test]
fn jobs_overlap_where_the_longest_job_outlasts_the_claim_within_one_step() {
    let axes = ["claim.lifetime_ms=4000..8000"];
    let spec = EnvelopeSpec {
        mark: overlap(),
        ..spec(STORY, "correct", &axes, 9, 100)
    };
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
        envelope.points_run() < 9,
        "{} points",
        envelope.points_run()
    );
}

#[test]
fn a_plain_delete_is_safe_on_a_strict_subset_of_the_correct_workers_settings() {
    let axes = ["claim.lifetime_ms=2000..8000"];
    let correct = run(&spec(STORY, "correct", &axes, 7, 60));
    let defective = run(&spec(STORY, "plain-delete", &axes, 7, 60));
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
    let axes = ["claim.lifetime_ms=1000..8000", "job.long_share=0..0.5"];
    let mut one = EnvelopeSpec {
        mark: overlap(),
        ..spec(STORY, "correct", &axes, 5, 30)
    };
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
    let builtin = run(&EnvelopeSpec {
        mark: overlap(),
        ..spec(STORY, "correct", &axes, 5, 20)
    });
    let mut own = EnvelopeSpec {
        mark: overlap(),
        ..spec(STORY, "mine", &axes, 5, 20)
    };
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
