//! Real runs on the shared world (feature `real`): a system's scenario, faults and checkers in
//! real time, its store on SQLite, and on PostgreSQL with the feature `postgres` and
//! `LEASESIM_PG_URL` set; the holder-lock system's claim store on Redis with the feature
//! `redis` and `LEASESIM_REDIS_URL` set. Real time, so ignored by default: `.ci/run` runs them.
#![cfg(feature = "real")]

use std::sync::Arc;

use leasesim::real::StoreTarget;
use leasesim::real_world::{RealOutcome, RealRequest, StoreKind};
use leasesim::registry::Registry;
use leasesim::systems::AnyScenario;

/// `items-steady` cut to `duration_ms` + `liveness_ms`.
fn steady(duration_ms: u64, liveness_ms: u64) -> Arc<dyn AnyScenario> {
    cut("items-steady", duration_ms, liveness_ms)
}

/// The builtin scenario `name` cut to `duration_ms` + `liveness_ms`.
fn cut(name: &str, duration_ms: u64, liveness_ms: u64) -> Arc<dyn AnyScenario> {
    let scenario = leasesim::catalog::resolve_one(name).expect("a builtin");
    let mut overrides = leasesim::overrides::Overrides::default();
    for text in [
        format!("duration_ms={duration_ms}"),
        format!("liveness_ms={liveness_ms}"),
    ] {
        let set = leasesim::overrides::parse(&text).expect("an override");
        overrides.set(&set.key, set.value);
    }
    scenario.with_overrides(&overrides).expect("valid")
}

/// Runs `worker` on `scenario` at `target` through the builtin registry's entry.
fn run(
    scenario: Arc<dyn AnyScenario>,
    worker: &str,
    target: StoreTarget,
    seed: u64,
) -> RealOutcome {
    let registry = Registry::builtin();
    let system = scenario.system().name();
    let entry = registry
        .real_store(system)
        .expect("the system runs on real stores");
    let kinds: &[StoreKind] = match system {
        "holder-lock" => &[StoreKind::Redis],
        _ => &[StoreKind::Sqlite, StoreKind::Postgres],
    };
    assert_eq!(entry.kinds, kinds);
    (entry.preflight)(scenario.as_ref()).expect("the scenario passes in simulation");
    let request = RealRequest {
        scenario,
        worker: worker.to_string(),
        target,
        seed,
        keep_events: true,
    };
    (entry.run)(&request).expect("the run starts")
}

fn assert_correct_passes(target: impl Fn(u64) -> StoreTarget) {
    for seed in 0..2 {
        let run = run(steady(2_000, 3_000), "correct", target(seed), seed);
        assert!(!run.failed, "seed {seed}: {}", run.verdict);
        assert_eq!(run.verdict, "pass: every invariant held");
        assert!(run.tally.answered > 40, "seed {seed}: {:?}", run.tally);
        assert_eq!(
            run.tally.divergence, None,
            "the store answers as the model does"
        );
        assert_eq!(run.trace.len() as u64, run.events);
        assert!(
            run.end_ms >= 5_000,
            "the phases ran in real time: {}ms",
            run.end_ms
        );
    }
}

#[test]
#[ignore = "real time on tokio against a real store"]
fn work_items_correct_worker_passes_on_sqlite() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    assert_correct_passes(|seed| StoreTarget::Sqlite {
        path: dir.path().join(format!("items-{seed}.db")),
    });
}

#[test]
#[ignore = "real time on tokio against a real store"]
fn work_items_plain_write_claim_is_caught_on_sqlite() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let caught = (0..3).find_map(|seed| {
        let target = StoreTarget::Sqlite {
            path: dir.path().join(format!("items-{seed}.db")),
        };
        let run = run(steady(2_000, 3_000), "plain-write-claim", target, seed);
        run.failed.then_some(run)
    });
    let run = caught.expect("a plain-write claim is caught within three real runs");
    assert_eq!(
        run.invariant.as_deref(),
        Some("claimable-only"),
        "{}",
        run.verdict
    );
    assert_eq!(run.tally.divergence, None);
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "real time on tokio against a PostgreSQL server (LEASESIM_PG_URL)"]
fn work_items_correct_worker_passes_on_postgres() {
    let url = std::env::var("LEASESIM_PG_URL").expect("LEASESIM_PG_URL names the server");
    assert_correct_passes(|seed| StoreTarget::Postgres {
        url: url.clone(),
        schema: format!("leasesim_real_world_{}_{seed}", std::process::id()),
    });
}

/// The correct retention worker passes `steady` cut short on `target(seed)`.
fn assert_retention_passes(target: impl Fn(u64) -> StoreTarget) {
    for seed in 0..2 {
        let run = run(cut("steady", 2_000, 3_000), "correct", target(seed), seed);
        assert!(!run.failed, "seed {seed}: {}", run.verdict);
        assert!(run.tally.answered > 20, "seed {seed}: {:?}", run.tally);
        assert_eq!(
            run.tally.divergence, None,
            "the store answers as the model does"
        );
        assert!(run.reached.contains(&"cap-reached"), "{:?}", run.reached);
    }
}

#[test]
#[ignore = "real time on tokio against a real store"]
fn retention_correct_worker_passes_on_sqlite() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    assert_retention_passes(|seed| StoreTarget::Sqlite {
        path: dir.path().join(format!("rows-{seed}.db")),
    });
}

#[test]
#[ignore = "real time on tokio against a real store"]
fn retention_stale_release_is_caught_on_sqlite_with_lost_replies() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let target = StoreTarget::Sqlite {
        path: dir.path().join("rows.db"),
    };
    let run = run(cut("reply-lost", 3_000, 4_000), "stale-release", target, 0);
    assert!(run.failed, "{}", run.verdict);
    assert_eq!(
        run.invariant.as_deref(),
        Some("release-latest"),
        "{}",
        run.verdict
    );
    assert_eq!(run.tally.divergence, None);
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "real time on tokio against a PostgreSQL server (LEASESIM_PG_URL)"]
fn retention_correct_worker_passes_on_postgres() {
    let url = std::env::var("LEASESIM_PG_URL").expect("LEASESIM_PG_URL names the server");
    assert_retention_passes(|seed| StoreTarget::Postgres {
        url: url.clone(),
        schema: format!("leasesim_real_rows_{}_{seed}", std::process::id()),
    });
}

/// `expiry-steady` cut to 3 s + 4 s: agents place holds and consume some before their
/// deadlines while three workers expire the due ones.
fn expiry_steady() -> Arc<dyn AnyScenario> {
    cut("expiry-steady", 3_000, 4_000)
}

/// How many trace lines contain `word`.
fn lines_with(run: &RealOutcome, word: &str) -> usize {
    run.trace.iter().filter(|line| line.contains(word)).count()
}

fn assert_reservations_correct_passes(target: impl Fn(u64) -> StoreTarget) {
    for seed in 0..2 {
        let run = run(expiry_steady(), "correct", target(seed), seed);
        assert!(!run.failed, "seed {seed}: {}", run.verdict);
        assert_eq!(run.verdict, "pass: every invariant held");
        assert_eq!(
            run.tally.divergence, None,
            "the store answers as the model does, the agents' changes included"
        );
        // The agents' placements reached the store: its claims took holds, and the workers
        // expired them there.
        assert!(lines_with(&run, "agent places h") > 10, "seed {seed}");
        assert!(lines_with(&run, ": expired h") > 5, "seed {seed}");
        assert!(run.tally.answered > 40, "seed {seed}: {:?}", run.tally);
        assert!(
            run.end_ms >= 7_000,
            "the phases ran in real time: {}ms",
            run.end_ms
        );
    }
}

#[test]
#[ignore = "real time on tokio against a real store"]
fn reservations_correct_worker_passes_on_sqlite() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    assert_reservations_correct_passes(|seed| StoreTarget::Sqlite {
        path: dir.path().join(format!("holds-{seed}.db")),
    });
}

#[test]
#[ignore = "real time on tokio against a real store"]
fn reservations_unguarded_expire_is_caught_on_sqlite() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let caught = (0..3).find_map(|seed| {
        let target = StoreTarget::Sqlite {
            path: dir.path().join(format!("holds-{seed}.db")),
        };
        let race = cut("expiry-consume-race", 5_000, 8_000);
        let run = run(race, "unguarded-expire", target, seed);
        run.failed.then_some(run)
    });
    // Caught only if the store itself saw the agents consume the hold the worker expired.
    let run = caught.expect("an unguarded expire is caught within three real runs");
    assert_eq!(
        run.invariant.as_deref(),
        Some("consumed-never-expired"),
        "{}",
        run.verdict
    );
    assert_eq!(run.tally.divergence, None);
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "real time on tokio against a PostgreSQL server (LEASESIM_PG_URL)"]
fn reservations_correct_worker_passes_on_postgres() {
    let url = std::env::var("LEASESIM_PG_URL").expect("LEASESIM_PG_URL names the server");
    assert_reservations_correct_passes(|seed| StoreTarget::Postgres {
        url: url.clone(),
        schema: format!("leasesim_real_world_holds_{}_{seed}", std::process::id()),
    });
}

/// A Redis namespace of this test's own for `seed`.
#[cfg(feature = "redis")]
fn redis(test: &str, seed: u64) -> StoreTarget {
    let url = std::env::var("LEASESIM_REDIS_URL").expect("LEASESIM_REDIS_URL names the server");
    StoreTarget::Redis {
        url,
        prefix: format!("leasesim:real-world:{}:{test}:{seed}:", std::process::id()),
    }
}

#[cfg(feature = "redis")]
#[test]
#[ignore = "real time on tokio against a Redis server (LEASESIM_REDIS_URL)"]
fn holder_lock_correct_worker_passes_on_redis_as_its_store_forgets() {
    // `holder-volatile`: evictions, failovers and restarts the hook makes on Redis too. Which
    // calls a forgetting meets follows real time, so a given seed may see none; three do.
    let forgot = ["claim-evicted", "failover-lost-write", "store-restarted"];
    let mut forgettings = Vec::new();
    for seed in 0..3 {
        let target = redis("correct", seed);
        let run = run(
            cut("holder-volatile", 4_000, 4_000),
            "correct",
            target,
            seed,
        );
        assert!(!run.failed, "seed {seed}: {}", run.verdict);
        assert_eq!(run.verdict, "pass: every invariant held");
        assert!(run.tally.answered > 40, "seed {seed}: {:?}", run.tally);
        assert_eq!(
            run.tally.divergence, None,
            "the store answers as the model does, up to the clock margin"
        );
        assert!(run.end_ms >= 8_000, "real time: {}ms", run.end_ms);
        forgettings.extend(run.reached.iter().filter(|s| forgot.contains(s)).copied());
    }
    assert!(
        !forgettings.is_empty(),
        "the store forgot nothing in three runs"
    );
}

#[cfg(feature = "redis")]
#[test]
#[ignore = "real time on tokio against a Redis server (LEASESIM_REDIS_URL)"]
fn holder_lock_plain_delete_is_caught_on_redis() {
    let caught = (0..4).find_map(|seed| {
        let target = redis("plain-delete", seed);
        let run = run(
            cut("holder-long-jobs", 8_000, 5_000),
            "plain-delete",
            target,
            seed,
        );
        run.failed.then_some(run)
    });
    let run = caught.expect("a plain delete is caught within four real runs");
    let invariant = run.invariant.as_deref().unwrap_or_default();
    assert!(
        ["delete-own-claim", "no-third-worker"].contains(&invariant),
        "{}",
        run.verdict
    );
    assert_eq!(run.tally.divergence, None);
}

#[test]
#[ignore = "real time on tokio against a real store"]
fn retention_short_deletes_ask_the_store_for_what_the_short_answer_leaves() {
    // `swarm` switches the short-delete fault on in some runs: a short answer is drawn as in
    // a simulated run, and the real delete must remove exactly the rows the model removes.
    let dir = tempfile::tempdir().expect("a scratch directory");
    let mut short = 0;
    for seed in 0..4 {
        let target = StoreTarget::Sqlite {
            path: dir.path().join(format!("swarm-{seed}.db")),
        };
        let run = run(cut("swarm", 5_000, 8_000), "correct", target, seed);
        assert!(!run.failed, "seed {seed}: {}", run.verdict);
        assert_eq!(run.tally.divergence, None, "seed {seed}");
        short += run
            .trace
            .iter()
            .filter(|l| l.contains("short answer (fault)"))
            .count();
    }
    assert!(short > 0, "no run drew a short answer");
}
