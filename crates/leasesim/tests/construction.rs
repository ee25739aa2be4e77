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
fn failed<S: leasesim::System>(check: leasesim::Check<S>) -> (String, String) {
    let failure = check
        .try_seeds(1)
        .expect_err("the probe's finding must fail the run");
    (failure.outcome.label(), failure.outcome.sentence())
}

mod holder_lock {
    use leasesim::holder_lock::{HolderPorts, check, correct_worker_of};
    use leasesim_holder_lock::ports::probe_construction;

    use super::*;

    fn with(build: fn(&holder_lock_worker::ClaimConfig) -> Built) -> (String, String) {
        failed(check("holder-steady", move |ports: HolderPorts| {
            probe_construction(&ports, build);
            correct_worker_of(ports)
        }))
    }

    #[test]
    fn a_core_accepting_an_empty_key_fails_construction() {
        let (label, sentence) = with(accepts_everything);
        assert_eq!(label, "construction");
        assert!(
            sentence.contains("accepted settings one step past rule key-not-empty"),
            "{sentence}"
        );
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

mod retention {
    use leasesim::{WorkerPorts, check, correct_worker_of};
    use leasesim_retention::ports::probe_construction;

    use super::*;

    fn with(build: fn(&retention_worker::WorkerConfig) -> Built) -> (String, String) {
        failed(check("steady", move |ports: WorkerPorts| {
            probe_construction(&ports, build);
            correct_worker_of(ports)
        }))
    }

    #[test]
    fn a_core_accepting_a_zero_batch_fails_construction() {
        let (label, sentence) = with(accepts_everything);
        assert_eq!(label, "construction");
        assert!(
            sentence.contains("accepted settings one step past rule batch-positive"),
            "{sentence}"
        );
    }

    #[test]
    fn a_core_refusing_valid_settings_or_forgetting_its_owner_fails_construction() {
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

mod work_items {
    use leasesim::work_items::{WorkerConfig, WorkerPorts, check};
    use leasesim_work_items::correct_worker_of;
    use leasesim_work_items::ports::probe_construction;

    use super::*;

    fn with(build: fn(&WorkerConfig) -> Built) -> (String, String) {
        failed(check("items-steady", move |ports: WorkerPorts| {
            probe_construction(&ports, build);
            correct_worker_of(ports)
        }))
    }

    #[test]
    fn a_core_accepting_a_one_ms_lease_fails_construction() {
        let (label, sentence) = with(accepts_everything);
        assert_eq!(label, "construction");
        assert!(
            sentence.contains("accepted settings one step past rule lease-at-least-2ms"),
            "{sentence}"
        );
    }

    #[test]
    fn a_core_refusing_valid_settings_or_forgetting_its_owner_fails_construction() {
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

mod reservations {
    use leasesim::reservations::{WorkerConfig, WorkerPorts, check, correct_worker_of};
    use leasesim_reservations::ports::probe_construction;

    use super::*;

    fn with(build: fn(&WorkerConfig) -> Built) -> (String, String) {
        failed(check("expiry-steady", move |ports: WorkerPorts| {
            probe_construction(&ports, build);
            correct_worker_of(ports)
        }))
    }

    #[test]
    fn a_core_accepting_a_zero_batch_fails_construction() {
        let (label, sentence) = with(accepts_everything);
        assert_eq!(label, "construction");
        assert!(
            sentence.contains("accepted settings one step past rule batch-positive"),
            "{sentence}"
        );
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
