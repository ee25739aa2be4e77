//! The reservation store on SQLite against the simulated model, and a planted bug in the
//! guarded transition that conformance must catch.

use leasesim_conformance::{Config, reservations};
use leasesim_stores::reservations::ReservationModel;
use leasesim_stores::sqlite::reservations::{EXPIRE, SqliteReservationStore, Statements};

#[test]
fn the_reservation_model_agrees_with_itself() {
    let report = reservations::check(&mut ReservationModel, &Config::default())
        .unwrap_or_else(|m| panic!("{m}"));
    assert_eq!(report.cases, u64::from(Config::default().cases));
}

#[test]
fn sqlite_reservations_agree_with_the_model() {
    let config = Config::default().with_env();
    let report = reservations::check(&mut SqliteReservationStore::default(), &config)
        .unwrap_or_else(|m| panic!("{m}"));
    println!("sqlite reservations: {report}");
    assert_eq!(report.cases, u64::from(config.cases));
}

#[test]
fn an_expiry_without_its_status_guard_is_caught_and_shrunk() {
    let statements = Statements {
        expire: EXPIRE.replace("AND status = 'held' ", ""),
        ..Statements::default()
    };
    assert_ne!(statements, Statements::default(), "the bug was planted");
    let mut store = SqliteReservationStore { statements };
    let mismatch = reservations::check(&mut store, &Config::default())
        .expect_err("an expiry that overwrites a consumed hold must disagree with the model");
    println!("{mismatch}");
    assert!(
        mismatch.steps.last().unwrap().contains("Expire"),
        "{mismatch}"
    );
    assert!(mismatch.steps.len() <= 4, "shrunk: {mismatch}");
}
