//! The claim-store driver on the model itself, and a planted bug in a store that the driver
//! must catch, without any server.

use leasesim_conformance::{Config, holder_lock};
use leasesim_holder_lock::events::{Answer, Request};
use leasesim_stores::StoreError;
use leasesim_stores::holder_lock::{
    ClaimConnection, ClaimModel, ClaimSetup, ClaimState, ClaimStoreKind, ModelConnection,
    StoreClock,
};

#[test]
fn the_model_agrees_with_itself_and_its_lifetimes_run_out_on_the_given_time() {
    let config = Config::default().with_env();
    let report = holder_lock::check(&mut ClaimModel, &config).unwrap_or_else(|m| panic!("{m}"));
    println!("model: {report}");
    assert_eq!(report.cases, u64::from(config.cases));
    holder_lock::check_expiry(&mut ClaimModel).unwrap_or_else(|m| panic!("{m}"));
}

/// The model with one planted bug: a compare-and-delete that deletes whatever the key holds
/// (the token predicate dropped), and, on request, a clock of its own.
struct Planted {
    clock: StoreClock,
}

struct PlantedConnection(ModelConnection);

impl ClaimStoreKind for Planted {
    type Connection = PlantedConnection;
    fn clock(&self) -> StoreClock {
        self.clock
    }
    fn open(
        &mut self,
        setup: &ClaimSetup,
        callers: usize,
    ) -> Result<Vec<PlantedConnection>, StoreError> {
        Ok(ClaimModel
            .open(setup, callers)?
            .into_iter()
            .map(PlantedConnection)
            .collect())
    }
}

impl ClaimConnection for PlantedConnection {
    fn apply(&mut self, request: Request, now_ms: u64) -> Result<Answer, StoreError> {
        let answer = self.0.apply(request, now_ms)?;
        match (request, answer) {
            // The bug: a key that holds another token is deleted all the same.
            (Request::DeleteIfHolder { key, .. }, Answer::NotHolder) => {
                self.0.apply(Request::Delete { key }, now_ms)
            }
            _ => Ok(answer),
        }
    }
    fn state(&mut self, now_ms: u64) -> Result<ClaimState, StoreError> {
        self.0.state(now_ms)
    }
}

#[test]
fn a_compare_and_delete_without_its_token_check_is_caught_and_shrunk() {
    for clock in [StoreClock::Given, StoreClock::Own { slack_ms: 5_000 }] {
        let mismatch = holder_lock::check(&mut Planted { clock }, &Config::default())
            .expect_err("a delete that ignores the token must disagree with the model");
        println!("{mismatch}");
        let last = mismatch.steps.last().expect("the mismatching step");
        assert!(last.contains("delete_if_holder"), "{mismatch}");
        assert!(
            last.contains("model NotHolder | store Deleted"),
            "{mismatch}"
        );
        assert!(
            mismatch.steps.len() <= 3,
            "shrunk to create, create-or-set, delete: {mismatch}"
        );
    }
}

#[test]
fn the_same_seed_draws_the_same_cases_and_an_own_clock_draws_no_time_step() {
    use leasesim_conformance::proptest::strategy::{Strategy, ValueTree};
    use leasesim_conformance::proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let draw = |seed: u8, clock| {
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
        let mut runner = TestRunner::new_with_rng(Default::default(), rng);
        let strategy = holder_lock::cases(&Config::default(), clock);
        (0..20)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(1, StoreClock::Given), draw(1, StoreClock::Given));
    assert_ne!(draw(1, StoreClock::Given), draw(2, StoreClock::Given));
    let advances = |cases: &[holder_lock::Case]| {
        let ops = cases.iter().flat_map(|case| &case.ops);
        ops.filter(|op| matches!(op, holder_lock::Op::Advance { .. }))
            .count()
    };
    assert!(advances(&draw(3, StoreClock::Given)) > 0);
    assert_eq!(advances(&draw(3, StoreClock::Own { slack_ms: 1 })), 0);
}
