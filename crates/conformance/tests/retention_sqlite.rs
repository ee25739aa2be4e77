//! The retention store on SQLite against the simulated model, and planted bugs in its
//! statements that conformance must catch.

use leasesim_conformance::{Config, retention};
use leasesim_stores::retention::Model;
use leasesim_stores::sqlite::retention::{DELETE_FENCED, RELEASE, SqliteStore, Statements};

#[test]
fn the_model_agrees_with_itself() {
    let report = retention::check(&mut Model, &Config::default()).unwrap_or_else(|m| panic!("{m}"));
    assert_eq!(report.cases, u64::from(Config::default().cases));
}

#[test]
fn sqlite_agrees_with_the_model() {
    let config = Config::default().with_env();
    let report =
        retention::check(&mut SqliteStore::default(), &config).unwrap_or_else(|m| panic!("{m}"));
    println!("sqlite: {report}");
    assert_eq!(report.cases, u64::from(config.cases));
    assert!(
        report.steps >= report.cases,
        "every case applies at least one step"
    );
}

/// A store whose statement `pick` says is `rewrite` of the reference one.
fn planted(rewrite: impl FnOnce(&mut Statements)) -> SqliteStore {
    let mut statements = Statements::default();
    rewrite(&mut statements);
    assert_ne!(statements, Statements::default(), "the bug was planted");
    SqliteStore { statements }
}

#[test]
fn a_delete_without_its_token_predicate_is_caught_and_shrunk() {
    let mut store = planted(|sql| {
        sql.delete_fenced = DELETE_FENCED.replace("AND token = :token", "");
    });
    let mismatch = retention::check(&mut store, &Config::default())
        .expect_err("a delete that ignores its token must disagree with the model");
    println!("{mismatch}");
    let last = mismatch.steps.last().expect("the mismatching step");
    assert!(last.contains("delete_batch"), "{mismatch}");
    assert!(last.contains("store Applied(Deleted"), "{mismatch}");
    assert!(
        mismatch.steps.len() <= 4,
        "shrunk to a few steps: {mismatch}"
    );
}

#[test]
fn a_release_without_its_token_predicate_is_caught_and_shrunk() {
    let mut store = planted(|sql| {
        sql.release = RELEASE.replace("AND token = :token", "");
    });
    let mismatch = retention::check(&mut store, &Config::default())
        .expect_err("a release that frees a renewed lease must disagree with the model");
    println!("{mismatch}");
    assert!(
        mismatch.steps.last().unwrap().contains("release"),
        "{mismatch}"
    );
    assert!(
        mismatch.steps.len() <= 5,
        "shrunk to a few steps: {mismatch}"
    );
}

#[test]
fn the_same_seed_draws_the_same_cases() {
    use leasesim_conformance::proptest::strategy::{Strategy, ValueTree};
    use leasesim_conformance::proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let draw = |seed: u8| {
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
        let mut runner = TestRunner::new_with_rng(Default::default(), rng);
        let strategy = retention::cases(&Config::default());
        (0..5)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(1), draw(1));
    assert_ne!(draw(1), draw(2));
}
