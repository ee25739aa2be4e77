//! A worker that never yields is a verdict, never a hung campaign: it spins at one instant
//! (`spin`), it loops inside one poll while recording events (the watchdog interrupts it:
//! `hang`), or it loops without touching the simulation at all (the watchdog gives its thread
//! up, reports `hang`, and the campaign goes on). Panics carry their file:line.

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::LocalBoxFuture;
use leasesim::Strategy;
use leasesim::catalog::resolve_scenarios;
use leasesim::fuzz::{FactorySource, Progress, ScenarioCampaign, ScenarioSummary, SeedPlan};
use leasesim::retention::{WorkerPorts, WorkerUnderTest};
use leasesim_retention::{AnyWorker, Retention, SimClock, WorkerFactory};
use retention_worker::{Clock, RunError, TermEnd, TermReport};

#[derive(Clone, Copy)]
enum Stuck {
    /// `while !done.get() { clock.sleep(0).await }`: yields, but never lets time move.
    ZeroSleeps,
    /// Reads the clock forever inside one poll (each read is an event).
    ClockReads,
    /// Spins inside one poll touching nothing of the simulation, until released.
    Silent,
    /// Panics.
    Panics,
}

static RELEASE_SILENT: AtomicBool = AtomicBool::new(false);

struct StuckWorker {
    clock: SimClock,
    how: Stuck,
}

impl WorkerUnderTest for StuckWorker {
    type Report = Result<TermReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<TermReport, RunError>> {
        Box::pin(async move {
            // Set by nothing: the loops below wait for a change that never comes.
            let done = std::cell::Cell::new(false);
            match self.how {
                Stuck::ZeroSleeps => {
                    while !done.get() {
                        self.clock.sleep(0).await;
                    }
                }
                Stuck::ClockReads => {
                    while !done.get() {
                        self.clock.now_ms();
                    }
                }
                Stuck::Silent => {
                    while !RELEASE_SILENT.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                }
                Stuck::Panics => panic!("the worker lost track of its lease"),
            }
            Ok(TermReport {
                end: TermEnd::NotLeader,
                rows_deleted: 0,
                batches: 0,
                renewals: 0,
                tokens: Vec::new(),
                cutoff_ms: None,
                release: None,
            })
        })
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

fn campaign(how: Stuck, seeds: u64, seed_timeout_ms: u64, jobs: usize) -> ScenarioSummary {
    let factory = FactorySource::new::<Retention>(move || {
        let build: Rc<WorkerFactory> = Rc::new(move |ports: WorkerPorts| {
            Rc::new(StuckWorker {
                clock: ports.clock,
                how,
            }) as Rc<AnyWorker>
        });
        build
    });
    let scenario = resolve_scenarios("steady").unwrap().remove(0);
    let campaign = ScenarioCampaign {
        scenario,
        worker: "stuck".into(),
        factory: Some(factory),
        strategy: Strategy::Random,
        plan: SeedPlan::Count {
            start: 0,
            count: seeds,
        },
        shard: (1, 1),
        jobs,
        seed_timeout_ms,
    };
    leasesim::fuzz::run_campaign(&campaign, &Arc::new(Progress::default()), &mut || {})
}

#[test]
fn zero_length_sleeps_in_a_loop_are_a_spin_verdict_naming_the_task() {
    let summary = campaign(Stuck::ZeroSleeps, 3, 60_000, 1);
    assert_eq!(
        summary.failures.get("spin"),
        Some(&3),
        "{:?}",
        summary.failures
    );
    let sentence = &summary.findings[0].sentence;
    assert!(
        sentence.contains("(driver) was polled 10001 times"),
        "{sentence}"
    );
}

#[test]
fn a_poll_that_never_returns_but_records_events_is_interrupted_as_a_hang() {
    let summary = campaign(Stuck::ClockReads, 2, 300, 1);
    assert_eq!(
        summary.failures.get("hang"),
        Some(&2),
        "{:?}",
        summary.failures
    );
    let sentence = &summary.findings[0].sentence;
    assert!(
        sentence.contains("made no progress for 0.3 s of real time"),
        "{sentence}"
    );
}

#[test]
fn a_silent_endless_loop_is_given_up_and_the_campaign_goes_on() {
    let summary = campaign(Stuck::Silent, 3, 200, 2);
    RELEASE_SILENT.store(true, Ordering::Relaxed);
    assert_eq!(summary.seeds, 3, "every seed is accounted for");
    assert_eq!(
        summary.failures.get("hang"),
        Some(&3),
        "{:?}",
        summary.failures
    );
    let seeds: Vec<u64> = summary.findings.iter().map(|f| f.seed).collect();
    assert_eq!(seeds, [0, 1, 2]);
    let sentence = &summary.findings[0].sentence;
    assert!(sentence.contains("its thread was given up"), "{sentence}");
}

#[test]
fn a_panicking_worker_fails_with_its_message_and_file_line() {
    let summary = campaign(Stuck::Panics, 2, 60_000, 1);
    assert_eq!(summary.failures.get("panic"), Some(&2));
    let sentence = &summary.findings[0].sentence;
    assert!(
        sentence.contains("panicked at crates/leasesim/tests/stuck.rs:")
            && sentence.ends_with(": the worker lost track of its lease"),
        "{sentence}"
    );
}
