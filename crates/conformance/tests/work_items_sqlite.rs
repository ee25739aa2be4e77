//! The work-items item store on SQLite against the simulated model, and planted bugs in its
//! statements that conformance must catch.

use leasesim_conformance::{Config, Mismatch, work_items};
use leasesim_stores::sqlite::work_items::{
    APPLY, CLAIM, DONE, RELEASE, SqliteWorkItemStore, Statements,
};
use leasesim_stores::work_items::WorkItemModel;

#[test]
fn the_work_item_model_agrees_with_itself() {
    let config = Config::default().with_env();
    let report = work_items::check(&mut WorkItemModel, &config).unwrap_or_else(|m| panic!("{m}"));
    println!("model work items: {report}");
    assert_eq!(report.cases, u64::from(config.cases));
}

#[test]
fn sqlite_work_items_agree_with_the_model() {
    let config = Config::default().with_env();
    let report = work_items::check(&mut SqliteWorkItemStore::default(), &config)
        .unwrap_or_else(|m| panic!("{m}"));
    println!("sqlite work items: {report}");
    assert_eq!(report.cases, u64::from(config.cases));
    assert!(
        report.steps >= report.cases,
        "every case applies at least one step"
    );
}

/// The mismatch conformance finds on a store whose statements `rewrite` changed.
fn planted(rewrite: impl FnOnce(&mut Statements)) -> Mismatch {
    let mut statements = Statements::default();
    rewrite(&mut statements);
    assert_ne!(statements, Statements::default(), "the bug was planted");
    let mismatch = work_items::check(&mut SqliteWorkItemStore { statements }, &Config::default())
        .expect_err("a planted bug must disagree with the model");
    println!("{mismatch}");
    mismatch
}

#[test]
fn an_apply_without_its_token_predicate_is_caught_and_shrunk() {
    let mismatch = planted(|sql| sql.apply = APPLY.replace("AND token = :token", ""));
    let last = mismatch.steps.last().expect("the mismatching step");
    assert!(last.contains(" Apply {"), "{mismatch}");
    assert!(last.contains("model LeaseLost"), "{mismatch}");
    assert!(last.contains("store ChunkApplied"), "{mismatch}");
    assert!(
        mismatch.steps.len() <= 3,
        "shrunk to a few steps: {mismatch}"
    );
}

#[test]
fn a_done_without_its_token_predicate_is_caught_and_shrunk() {
    let mismatch = planted(|sql| sql.done = DONE.replace("AND token = :token", ""));
    let last = mismatch.steps.last().expect("the mismatching step");
    assert!(last.contains(" Done {"), "{mismatch}");
    assert!(last.contains("model LeaseLost"), "{mismatch}");
    assert!(last.contains("store Marked"), "{mismatch}");
    assert!(
        mismatch.steps.len() <= 3,
        "shrunk to a few steps: {mismatch}"
    );
}

#[test]
fn a_claim_that_does_not_increment_the_token_is_caught_and_shrunk() {
    let mismatch = planted(|sql| {
        sql.claim = CLAIM.replace(
            "token = (SELECT last_token + 1 FROM work_item_tokens)",
            "token = token",
        );
    });
    let last = mismatch.steps.last().expect("the mismatching step");
    assert!(last.contains(" Claim {"), "{mismatch}");
    assert!(
        mismatch.steps.len() <= 2,
        "shrunk to a few steps: {mismatch}"
    );
}

#[test]
fn a_claim_counting_tokens_per_item_is_caught_and_shrunk() {
    // Tokens that grow per item, not store-wide: each item's claims still grow, but two
    // items' claims share numbers, so a token no longer names one claim.
    let mismatch = planted(|sql| {
        sql.claim = CLAIM.replace("(SELECT last_token + 1 FROM work_item_tokens)", "token + 1");
    });
    let last = mismatch.steps.last().expect("the mismatching step");
    assert!(last.contains(" Claim {"), "{mismatch}");
    assert!(
        mismatch.steps.len() <= 3,
        "shrunk to a few steps: {mismatch}"
    );
}

#[test]
fn a_release_that_drops_its_error_is_caught_by_the_state_comparison() {
    // Its answer is right (the release is applied): only the item row shows the bug.
    let mismatch = planted(|sql| sql.release = RELEASE.replace(", last_error = :error", ""));
    let last = mismatch.steps.last().expect("the mismatching step");
    assert!(last.contains(" Release {"), "{mismatch}");
    assert!(
        mismatch.difference.contains("last_error: Some("),
        "{mismatch}"
    );
    assert!(
        mismatch.steps.len() <= 3,
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
        let strategy = work_items::cases(&Config::default());
        (0..5)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(1), draw(1));
    assert_ne!(draw(1), draw(2));
}
