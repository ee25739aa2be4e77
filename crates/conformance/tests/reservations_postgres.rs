//! The reservation store on PostgreSQL against the simulated model. Needs a server: set
//! `LEASESIM_PG_URL` and run `cargo test -p leasesim-conformance --features postgres --
//! --ignored postgres` (`.ci/run` starts one).
#![cfg(feature = "postgres")]

use leasesim_conformance::{Config, reservations};
use leasesim_stores::postgres::URL_VAR;
use leasesim_stores::postgres::reservations::PgReservationStore;

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
