//! The work-items item store on PostgreSQL against the simulated model. Needs a server: set
//! `LEASESIM_PG_URL` and run `cargo test -p leasesim-conformance --features postgres --
//! --ignored postgres` (`.ci/run` starts one).
#![cfg(feature = "postgres")]

use leasesim_conformance::{Config, work_items};
use leasesim_stores::postgres::URL_VAR;
use leasesim_stores::postgres::work_items::PgWorkItemStore;

#[test]
#[ignore = "needs PostgreSQL: LEASESIM_PG_URL; .ci/run starts one"]
fn postgres_work_items_agree_with_the_model() {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| panic!("{URL_VAR} names the server"));
    let schema = format!("leasesim_work_items_{}", std::process::id());
    let mut store = PgWorkItemStore::connect(&url, &schema).unwrap_or_else(|e| panic!("{e}"));
    let config = Config::default().with_env();
    let report = work_items::check(&mut store, &config).unwrap_or_else(|m| panic!("{m}"));
    println!("postgres work items: {report}");
    assert_eq!(report.cases, u64::from(config.cases));
}
