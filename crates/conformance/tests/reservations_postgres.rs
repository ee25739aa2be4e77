//! The reservation store on PostgreSQL against the simulated model. Needs a server: set
//! `LEASESIM_PG_URL` and run `cargo test -p leasesim-conformance --features postgres --
//! --ignored postgres` (`.ci/run` starts one).
#![cfg(feature = "postgres")]

use leasesim_conformance::{Config, reservations};
use leasesim_reservations::events::{Applied, Request};
use leasesim_stores::postgres::reservations::PgReservationStore;
use leasesim_stores::postgres::{URL_VAR, connect};
use leasesim_stores::reservations::{ReservationConnection, ReservationSetup, ReservationStore};

#[test]
#[ignore = "needs PostgreSQL: LEASESIM_PG_URL; .ci/run starts one"]
fn postgres_reservations_agree_with_the_model() {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| panic!("{URL_VAR} names the server"));
    let schema = format!("leasesim_reservations_{}", std::process::id());
    let mut store = PgReservationStore::connect(&url, &schema).unwrap_or_else(|e| panic!("{e}"));
    let config = Config::default().with_env();
    let report = reservations::check(&mut store, &config).unwrap_or_else(|m| panic!("{m}"));
    println!("postgres reservations: {report}");
    assert_eq!(report.cases, u64::from(config.cases));
}

/// As retention's delete (see its test): statistics taken with one hold, then two more holds, make PostgreSQL
/// rescan a plain `IN (... LIMIT n FOR UPDATE SKIP LOCKED)` pick once per row, and every
/// rescan claims the next hold. The adapter's claim picks once and keeps its limit.
#[test]
#[ignore = "needs PostgreSQL: LEASESIM_PG_URL; .ci/run starts one"]
fn postgres_claim_keeps_its_limit_when_the_plan_rescans() {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| panic!("{URL_VAR} names the server"));
    let schema = format!("leasesim_claim_rescan_{}", std::process::id());
    let mut store = PgReservationStore::connect(&url, &schema).unwrap_or_else(|e| panic!("{e}"));
    let one_hold = ReservationSetup {
        holds: vec![(900, false)],
    };
    let mut connections = store.open(&one_hold, 1).unwrap_or_else(|e| panic!("{e}"));
    let mut admin = connect(&url, &schema).unwrap_or_else(|e| panic!("{e}"));
    admin.batch_execute("ANALYZE reservations").unwrap();
    // Holds placed after the statistics were taken, as agents place them in a case (a reset
    // truncates the table, and the planner then guesses a larger one).
    for expected_id in [2, 3] {
        assert_eq!(connections[0].place(900, false).unwrap(), expected_id);
    }
    // The premise: under these statistics the plain subquery overruns its limit.
    let naive = "UPDATE reservations SET claim_token = 1 WHERE id IN (SELECT id FROM \
                 reservations WHERE status = 'held' AND NOT parked AND hold_until <= 1000 \
                 ORDER BY hold_until, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id";
    let mut probe = admin.transaction().unwrap();
    let overrun = probe.query(naive, &[]).unwrap().len();
    probe.rollback().unwrap();
    assert_eq!(overrun, 3, "the rescanning plan is no longer chosen");
    let claim = Request::Claim {
        limit: 1,
        now: None,
        token: 7,
        claim_for_ms: 100,
    };
    let claimed = connections[0].apply(claim, 1_000).unwrap();
    assert!(
        matches!(&claimed, Applied::Claimed { ids, .. } if ids.as_slice() == [1]),
        "a claim with limit 1 answered {claimed:?}"
    );
}
