//! `construction`, in every system: a run whose production factory probes a core that builds
//! from settings past a rule, refuses valid ones or forgets what it was built with fails the
//! run with `construction` at seed 0; the real cores pass (every proof test runs them).
//!
//! Each test probes with a stand-in constructor (the probe is the system's own,
//! `probe_construction`), then builds the production worker as usual.

use leasesim_invariants::{Built, Readback};

/// A constructor that accepts everything and reads back what it was given.
fn accepts_everything<C>(_: &C) -> Built {
    Built::Accepted(vec![Readback {
        accessor: "config",
        kept: true,
    }])
}

/// A constructor that refuses valid settings, with a message naming every setting.
fn refuses_everything<C>(_: &C) -> Built {
    Built::Refused("batch_rows cap_rows renew_every_ms lease_ms lifetime_ms key".into())
}

/// A constructor that builds a core whose owner id reads back wrong.
fn forgets_owner<C>(_: &C) -> Built {
    Built::Accepted(vec![Readback {
        accessor: "owner_id",
        kept: false,
    }])
}

/// The failure of seed 0: its label (the invariant) and sentence.
fn failed<S: leasesim::System + leasesim::Render>(check: leasesim::Check<S>) -> (String, String) {
    let failure = check
        .try_seeds(1)
        .expect_err("the probe's finding must fail the run")
        .into_failure()
        .expect("a seed failed, not the input");
    (failure.outcome.label(), failure.outcome.sentence())
}

/// The two tests of one system: `$module` checks `$scenario` with a factory that probes with
/// a stand-in constructor (`$probe`, the system's own) before building the production worker;
/// a constructor that accepts everything is found first at `$first_rule`.
macro_rules! construction_tests {
    ($module:ident, $check:path, $ports:ty, $config:ty, $probe:path, $correct:path,
     $scenario:literal, $first_rule:literal) => {
        mod $module {
            use super::*;

            fn with(build: fn(&$config) -> Built) -> (String, String) {
                failed($check($scenario, move |ports: $ports| {
                    $probe(&ports, build);
                    $correct(ports)
                }))
            }

            #[test]
            fn a_core_accepting_settings_past_a_rule_fails_construction() {
                let (label, sentence) = with(accepts_everything);
                assert_eq!(label, "construction");
                let words = concat!("accepted settings one step past rule ", $first_rule);
                assert!(sentence.contains(words), "{sentence}");
            }

            #[test]
            fn a_core_refusing_valid_settings_or_forgetting_them_fails_construction() {
                let (label, sentence) = with(refuses_everything);
                assert_eq!(label, "construction");
                assert!(
                    sentence.contains("refused the run's settings"),
                    "{sentence}"
                );
                let (label, sentence) = with(forgets_owner);
                assert_eq!(label, "construction");
                assert!(
                    sentence.contains("owner_id() of a core built"),
                    "{sentence}"
                );
            }
        }
    };
}

construction_tests!(
    holder_lock,
    leasesim::holder_lock::check,
    leasesim::holder_lock::WorkerPorts,
    holder_lock_worker::ClaimConfig,
    leasesim_holder_lock::ports::probe_construction,
    leasesim::holder_lock::correct_worker_of,
    "holder-steady",
    "key-not-empty"
);

construction_tests!(
    retention,
    leasesim::retention::check,
    leasesim::retention::WorkerPorts,
    retention_worker::WorkerConfig,
    leasesim_retention::ports::probe_construction,
    leasesim::retention::correct_worker_of,
    "steady",
    "batch-positive"
);

construction_tests!(
    work_items,
    leasesim::work_items::check,
    leasesim::work_items::WorkerPorts,
    leasesim::work_items::WorkerConfig,
    leasesim_work_items::ports::probe_construction,
    leasesim_work_items::correct_worker_of,
    "items-steady",
    "lease-at-least-2ms"
);

construction_tests!(
    reservations,
    leasesim::reservations::check,
    leasesim::reservations::WorkerPorts,
    leasesim::reservations::WorkerConfig,
    leasesim_reservations::ports::probe_construction,
    leasesim::reservations::correct_worker_of,
    "expiry-steady",
    "batch-positive"
);
