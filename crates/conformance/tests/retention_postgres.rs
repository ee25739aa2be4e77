//! The retention store on PostgreSQL against the simulated model. Needs a server: set
//! `LEASESIM_PG_URL` and run `cargo test -p leasesim-conformance --features postgres --
//! --ignored` (`.ci/run` starts one).
#![cfg(feature = "postgres")]

use leasesim_conformance::{Config, retention};
use leasesim_stores::postgres::URL_VAR;
use leasesim_stores::postgres::retention::PgStore;

fn server() -> String {
    std::env::var(URL_VAR).unwrap_or_else(|_| panic!("{URL_VAR} names the PostgreSQL server"))
}

#[test]
#[ignore = "needs PostgreSQL: LEASESIM_PG_URL; .ci/run starts one"]
fn postgres_agrees_with_the_model() {
    let schema = format!("leasesim_conformance_{}", std::process::id());
    let mut store = PgStore::connect(&server(), &schema).unwrap_or_else(|e| panic!("{e}"));
    let config = Config::default().with_env();
    let report = retention::check(&mut store, &config).unwrap_or_else(|m| panic!("{m}"));
    println!("postgres: {report}");
    assert_eq!(report.cases, u64::from(config.cases));
}
