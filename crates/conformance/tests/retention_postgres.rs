//! The retention store on PostgreSQL against the simulated model. Needs a server: set
//! `LEASESIM_PG_URL` and run `cargo test -p leasesim-conformance --features postgres --
//! --ignored` (`.ci/run` starts one).
#![cfg(feature = "postgres")]

use leasesim_conformance::{Config, retention};
use leasesim_retention::events::Applied;
use leasesim_stores::postgres::retention::PgStore;
use leasesim_stores::postgres::{URL_VAR, connect};
use leasesim_stores::retention::{RetentionConnection, RetentionStore, Setup, StoreConfig};

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

/// The plan a rescan needs: statistics that say the rows table is tiny (taken with one row),
/// then three rows. With those statistics PostgreSQL runs a plain `IN (... LIMIT n FOR UPDATE
/// SKIP LOCKED)` pick as the inner side of a nested-loop semi-join, rescanned once per row;
/// every rescan skips the rows already deleted and locks the next, so `LIMIT 1` deletes all
/// three. The adapter's pick runs once.
#[test]
#[ignore = "needs PostgreSQL: LEASESIM_PG_URL; .ci/run starts one"]
fn postgres_delete_keeps_its_limit_when_the_plan_rescans() {
    let url = server();
    for fencing in [false, true] {
        let schema = format!("leasesim_rescan_{}_{fencing}", std::process::id());
        let mut store = PgStore::connect(&url, &schema).unwrap_or_else(|e| panic!("{e}"));
        let setup = |rows_created_ms: Vec<u64>| Setup {
            config: StoreConfig {
                fencing,
                ..StoreConfig::default()
            },
            rows_created_ms,
        };
        store
            .open(&setup(vec![900]), 1)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut admin = connect(&url, &schema).unwrap_or_else(|e| panic!("{e}"));
        admin.batch_execute("ANALYZE retention_rows").unwrap();
        let mut connections = store.open(&setup(vec![900; 3]), 1).unwrap();
        // The premise: under these statistics the plain subquery overruns its limit.
        let naive = "DELETE FROM retention_rows WHERE id IN (SELECT id FROM retention_rows \
                     WHERE created_ms < 901 ORDER BY created_ms, id LIMIT 1 \
                     FOR UPDATE SKIP LOCKED) RETURNING created_ms";
        let mut probe = admin.transaction().unwrap();
        let overrun = probe.query(naive, &[]).unwrap().len();
        probe.rollback().unwrap();
        assert_eq!(overrun, 3, "the rescanning plan is no longer chosen");
        let connection = &mut connections[0];
        let token = if fencing {
            match connection.acquire("r1", 1_000).unwrap() {
                Applied::Granted { lease, .. } => lease.token,
                other => panic!("acquire on a fresh store: {other:?}"),
            }
        } else {
            0
        };
        let deleted = connection.delete_batch(901, 1, token, 1_000).unwrap();
        assert!(
            matches!(deleted, Applied::Deleted { rows: 1, .. }),
            "fencing {fencing}: a delete with limit 1 answered {deleted:?}"
        );
    }
}
