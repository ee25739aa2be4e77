//! One leadership term without `stop`: batching, cap, drain, renewal, loss, release, cutoff.
//!
//! Every test checks the exact sequence of port calls (with their arguments and the virtual
//! instant they were issued) and the term report, under several scheduler seeds.

mod common;

use common::{Call, SEEDS, World, cutoff_at, lease, run_one_term};
use retention_worker::{LossCause, Op, PortError, TermEnd, TermReport, WorkerConfig};

fn delete(limit: u32, token: u64) -> Call {
    Call::delete(cutoff_at(0), limit, token)
}

#[test]
fn backlog_of_1200_rows_deletes_five_full_batches_then_stops_at_the_cap_and_releases() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world.records().set_backlog(1_200);

        let report = run_one_term(&mut world);

        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (0, delete(200, 1)),
                (0, delete(200, 1)),
                (0, delete(200, 1)),
                (0, delete(200, 1)),
                (0, Call::Release(lease(1))),
            ]
        );
        assert_eq!(
            report,
            TermReport {
                end: TermEnd::CapReached,
                rows_deleted: 1_000,
                batches: 5,
                renewals: 0,
                tokens: vec![1],
                cutoff_ms: Some(cutoff_at(0)),
                release: Some(Ok(())),
            }
        );
        assert_eq!(
            world.records().backlog(),
            200,
            "the cap leaves the rest for later terms"
        );
    }
}

#[test]
fn backlog_of_450_rows_ends_after_the_short_batch() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world.records().set_backlog(450);

        let report = run_one_term(&mut world);

        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (0, delete(200, 1)),
                (0, delete(200, 1)),
                (0, Call::Release(lease(1))),
            ]
        );
        assert_eq!(report.end, TermEnd::Drained);
        assert_eq!((report.rows_deleted, report.batches), (450, 3));
        assert_eq!(report.release, Some(Ok(())));
    }
}

#[test]
fn the_last_batch_asks_only_for_what_is_left_of_the_cap() {
    let config = WorkerConfig {
        batch_rows: 200,
        cap_rows: 500,
        ..WorkerConfig::default()
    };
    for seed in SEEDS {
        let mut world = World::with_config(seed, config.clone());
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world.records().set_backlog(10_000);

        let report = run_one_term(&mut world);

        assert_eq!(
            world.log.calls(),
            vec![
                Call::acquire(),
                delete(200, 1),
                delete(200, 1),
                delete(100, 1),
                Call::Release(lease(1)),
            ]
        );
        assert_eq!(report.end, TermEnd::CapReached);
        assert_eq!(report.rows_deleted, 500);
    }
}

#[test]
fn a_renewal_during_deletes_rotates_the_token_and_the_next_delete_carries_it() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_renew(500, Ok(Some(lease(2))));
        world.records().set_backlog(5_000).set_latency(4_000);

        let report = run_one_term(&mut world);

        // Deletes are issued at 0, 4 s, 8 s, 12 s and 16 s; the renewal goes out at 10 s and
        // answers at 10.5 s, so the fourth delete already carries token 2.
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (4_000, delete(200, 1)),
                (8_000, delete(200, 1)),
                (10_000, Call::Renew(lease(1))),
                (12_000, delete(200, 2)),
                (16_000, delete(200, 2)),
                (20_000, Call::Release(lease(2))),
            ]
        );
        assert_eq!(report.end, TermEnd::CapReached);
        assert_eq!((report.renewals, report.tokens.clone()), (1, vec![1, 2]));
    }
}

#[test]
fn a_renewal_answering_none_stops_new_deletes_and_skips_the_release() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_renew(1_000, Ok(None));
        world.records().set_backlog(5_000).set_latency(4_000);

        let report = run_one_term(&mut world);

        // The renewal answers None at 11 s, during the delete issued at 8 s; that delete is
        // awaited (until 12 s) and nothing follows it: no delete, no release.
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (4_000, delete(200, 1)),
                (8_000, delete(200, 1)),
                (10_000, Call::Renew(lease(1))),
            ]
        );
        assert_eq!(
            report,
            TermReport {
                end: TermEnd::LeadershipLost(LossCause::RenewAnsweredNone),
                rows_deleted: 600,
                batches: 3,
                renewals: 0,
                tokens: vec![1],
                cutoff_ms: Some(cutoff_at(0)),
                release: None,
            }
        );
        assert_eq!(
            world.handle.now_ms(),
            12_000,
            "the term ends once the delete in flight answers"
        );
    }
}

#[test]
fn a_renewal_error_stops_new_deletes_and_releases_the_latest_lease() {
    let rejected = PortError::Rejected {
        reason: "lease service busy".to_owned(),
    };
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_renew(0, Ok(Some(lease(2))))
            .on_renew(0, Err(rejected.clone()));
        world.records().set_backlog(5_000).set_latency(7_000);

        let report = run_one_term(&mut world);

        // Second renewal fails at 20 s, during the delete issued at 14 s; after that delete
        // answers (21 s) the term releases lease 2, the latest one, and deletes nothing more.
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (7_000, delete(200, 1)),
                (10_000, Call::Renew(lease(1))),
                (14_000, delete(200, 2)),
                (20_000, Call::Renew(lease(2))),
                (21_000, Call::Release(lease(2))),
            ]
        );
        assert_eq!(
            report,
            TermReport {
                end: TermEnd::LeadershipLost(LossCause::RenewFailed(rejected.clone())),
                rows_deleted: 600,
                batches: 3,
                renewals: 1,
                tokens: vec![1, 2],
                cutoff_ms: Some(cutoff_at(0)),
                release: Some(Ok(())),
            }
        );
    }
}

#[test]
fn a_delete_error_ends_the_term_without_retry_and_releases() {
    let stale = PortError::StaleToken { token: 1 };
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world
            .records()
            .set_backlog(5_000)
            .fail_call(2, stale.clone());

        let report = run_one_term(&mut world);

        assert_eq!(
            world.log.calls(),
            vec![
                Call::acquire(),
                delete(200, 1),
                delete(200, 1),
                delete(200, 1),
                Call::Release(lease(1)),
            ]
        );
        assert_eq!(
            report.end,
            TermEnd::Failed {
                op: Op::Delete,
                error: stale.clone()
            }
        );
        assert_eq!((report.rows_deleted, report.batches), (400, 2));
        assert_eq!(report.release, Some(Ok(())));
    }
}

#[test]
fn the_release_carries_the_latest_lease_after_several_renewals() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        for token in 2..=5 {
            world.leases().on_renew(0, Ok(Some(lease(token))));
        }
        world.records().set_backlog(5_000).set_latency(9_000);
        world.leases().on_release(0, Err(PortError::Timeout));

        let report = run_one_term(&mut world);

        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (9_000, delete(200, 1)),
                (10_000, Call::Renew(lease(1))),
                (18_000, delete(200, 2)),
                (20_000, Call::Renew(lease(2))),
                (27_000, delete(200, 3)),
                (30_000, Call::Renew(lease(3))),
                (36_000, delete(200, 4)),
                (40_000, Call::Renew(lease(4))),
                (45_000, Call::Release(lease(5))),
            ]
        );
        assert_eq!(report.end, TermEnd::CapReached);
        assert_eq!(
            (report.renewals, report.tokens.clone()),
            (4, vec![1, 2, 3, 4, 5])
        );
        assert_eq!(
            report.release,
            Some(Err(PortError::Timeout)),
            "release outcome is reported"
        );
    }
}

#[test]
fn the_cutoff_is_read_once_after_acquire_and_reused_while_time_advances() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(250, Ok(Some(lease(1))))
            .on_renew(0, Ok(Some(lease(2))));
        world.records().set_backlog(5_000).set_latency(3_000);

        let report = run_one_term(&mut world);

        // The acquire answers at 250 ms: that is when the clock is read. Later batches go out
        // seconds apart but all carry the same cutoff.
        let cutoff = cutoff_at(250);
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (250, Call::delete(cutoff, 200, 1)),
                (3_250, Call::delete(cutoff, 200, 1)),
                (6_250, Call::delete(cutoff, 200, 1)),
                (9_250, Call::delete(cutoff, 200, 1)),
                (10_250, Call::Renew(lease(1))),
                (12_250, Call::delete(cutoff, 200, 2)),
                (15_250, Call::Release(lease(2))),
            ]
        );
        assert_eq!(report.cutoff_ms, Some(cutoff));
        assert_eq!(
            world.worker.clock().reads(),
            1,
            "the clock is read exactly once per term"
        );
    }
}

#[test]
fn acquire_answering_none_makes_no_other_call() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(30, Ok(None));
        world.records().set_backlog(5_000);

        let report = run_one_term(&mut world);

        assert_eq!(world.log.entries(), vec![(0, Call::acquire())]);
        assert_eq!(
            report,
            TermReport {
                end: TermEnd::NotLeader,
                rows_deleted: 0,
                batches: 0,
                renewals: 0,
                tokens: vec![],
                cutoff_ms: None,
                release: None,
            }
        );
        assert_eq!(world.worker.clock().reads(), 0);
        assert_eq!(world.handle.pending_timers(), 0, "no renewal was scheduled");
    }
}

#[test]
fn acquire_error_makes_no_other_call() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(30, Err(PortError::Timeout));
        world.records().set_backlog(5_000);

        let report = run_one_term(&mut world);

        assert_eq!(world.log.entries(), vec![(0, Call::acquire())]);
        assert_eq!(
            report.end,
            TermEnd::Failed {
                op: Op::Acquire,
                error: PortError::Timeout
            }
        );
        assert_eq!((report.tokens.len(), report.release.clone()), (0, None));
        assert_eq!(world.worker.clock().reads(), 0);
        assert_eq!(world.handle.pending_timers(), 0, "no renewal was scheduled");
    }
}

#[test]
fn renewals_are_serial_even_when_one_takes_longer_than_the_interval() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_renew(15_000, Ok(Some(lease(2))))
            .on_renew(15_000, Ok(Some(lease(3))));
        world.records().set_backlog(200).push_latencies(&[40_000]);

        let report = run_one_term(&mut world);

        // The first renewal answers at 25 s; the next one is scheduled only then (35 s). The
        // backlog is drained at 40 s while that renewal is in flight: it is awaited (50 s) and
        // the lease it hands back is the one released.
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (10_000, Call::Renew(lease(1))),
                (35_000, Call::Renew(lease(2))),
                (40_000, delete(200, 2)),
                (50_000, Call::Release(lease(3))),
            ]
        );
        assert_eq!(world.leases().max_renews_in_flight(), 1);
        assert_eq!(report.end, TermEnd::Drained);
        assert_eq!(report.tokens, vec![1, 2, 3]);
    }
}

#[test]
fn a_renewal_due_at_the_instant_deletion_ends_is_not_issued() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world.records().set_backlog(150).set_latency(10_000);

        let report = run_one_term(&mut world);

        // The short batch answers at 10 s, the very instant the renewal sleep is due: the
        // term is over, so the renewal is dropped rather than sent.
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (10_000, Call::Release(lease(1)))
            ]
        );
        assert_eq!(report.end, TermEnd::Drained);
        assert_eq!(report.renewals, 0);
    }
}

#[test]
fn no_renewal_is_issued_after_the_term_ended() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_renew(0, Ok(Some(lease(2))));
        world.records().set_backlog(450).set_latency(4_000);
        let worker = world.worker.clone();
        let handle = world.handle.clone();
        let log = world.log.clone();

        let (report, timers_after_run) = world
            .sim
            .block_on(async move {
                let report = worker.run().await.expect("no other run");
                let timers_after_run = handle.pending_timers();
                log.mark("run returned");
                // Well past several renew intervals.
                handle.sleep(100_000).await;
                log.mark("slept");
                (report, timers_after_run)
            })
            .expect_completed();

        assert_eq!(report.end, TermEnd::Drained);
        assert_eq!(
            timers_after_run, 0,
            "the renewal sleep was cancelled, not left pending"
        );
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (4_000, delete(200, 1)),
                (8_000, delete(200, 1)),
                (10_000, Call::Renew(lease(1))),
                (12_000, Call::Release(lease(2))),
                (12_000, Call::Mark("run returned")),
                (112_000, Call::Mark("slept")),
            ]
        );
    }
}

#[test]
fn each_run_performs_exactly_one_term() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_acquire(0, Ok(Some(lease(2))));
        world.records().set_backlog(1_300);

        let first = run_one_term(&mut world);
        let second = run_one_term(&mut world);

        let mut expected = vec![Call::acquire()];
        expected.extend(std::iter::repeat_n(delete(200, 1), 5));
        expected.push(Call::Release(lease(1)));
        expected.push(Call::acquire());
        expected.extend([delete(200, 2), delete(200, 2), Call::Release(lease(2))]);
        assert_eq!(world.log.calls(), expected);
        assert_eq!(
            (first.end, first.rows_deleted),
            (TermEnd::CapReached, 1_000)
        );
        assert_eq!((second.end, second.rows_deleted), (TermEnd::Drained, 300));
    }
}
