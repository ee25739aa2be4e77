//! The reservation system (design 002): the harness finds each defect by its own invariant, the
//! production worker survives every scenario, and each scenario makes its situation happen.
//!
//! The full-size figures (20,000 seeds per scenario; seeds-to-detect over 20 ranges) are
//! produced by the commands in docs/systems/reservations.md; these tests run smaller counts
//! of the same thing.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use Probe::{AcrossSeeds, EachRun};
use leasesim::catalog::{builtin_names_of, resolve_typed, workers};
use leasesim::runner::{RunReport, RunSpec, run};
use leasesim::testkit;
use leasesim::{Strategy, Workers};
use leasesim_events::OpSet;
use leasesim_reservations::checkers::{Invariant, Situation};
use leasesim_reservations::events::{
    Applied, EPOCH_MS, EventKind, Note, Op, Phase, ReplicaId, StatusView,
};
use leasesim_reservations::{Reservations, Scenario};
use leasesim_rt::Feed;
use leasesim_sim::scenario::StopAt;

/// Each defective worker and the invariants that must name it, written out here on purpose
/// (not read from the catalogue) so the catalogue cannot drift unnoticed.
const DEFECTS: [(&str, &[Invariant]); 8] = [
    (
        "unguarded-expire",
        &[Invariant::ConsumedNeverExpired, Invariant::SingleTransition],
    ),
    ("read-then-write-claim", &[Invariant::ExclusiveClaim]),
    ("tokenless-release", &[Invariant::ReleaseOwnClaim]),
    (
        "retry-everything",
        &[Invariant::ConflictNotRetried, Invariant::BoundedRetry],
    ),
    (
        "worker-clock-now",
        &[Invariant::StoreClockDecides, Invariant::ExpiredOnlyWhenDue],
    ),
    (
        "worker-clock-claim",
        &[Invariant::StoreClockDecides, Invariant::NoHotReclaim],
    ),
    (
        "token-per-worker",
        &[Invariant::FreshClaimToken, Invariant::ReleaseOwnClaim],
    ),
    ("release-skipped-on-error", &[Invariant::ClaimReleased]),
];

#[test]
fn each_defective_worker_is_caught_by_its_own_invariant_within_200_seeds() {
    let declared: BTreeMap<&str, Vec<&str>> = workers()
        .into_iter()
        .filter(|(system, w)| *system == "reservations" && w.name != "correct")
        .map(|(_, w)| (w.name, w.caught_by.to_vec()))
        .collect();
    let here: BTreeMap<&str, Vec<&str>> = DEFECTS
        .iter()
        .map(|(name, invariants)| (*name, invariants.iter().map(|i| i.name()).collect()))
        .collect();
    assert_eq!(
        declared, here,
        "one line here per defective worker, as declared"
    );
    let caught =
        testkit::defects_caught_by_their_invariants(&testkit::builtin::<Reservations>(), 200);
    assert_eq!(caught.len(), DEFECTS.len());
}

/// `scenario` with `invariant` only observing (`expect = [...]`), as a scenario file says it.
fn observing(scenario: &str, invariant: Invariant) -> Rc<Scenario> {
    let base = resolve_typed::<Reservations>(scenario).unwrap();
    let text = base.text.replacen(
        "system = \"reservations\"",
        &format!(
            "system = \"reservations\"\nexpect = [\"{}\"]",
            invariant.name()
        ),
        1,
    );
    let parsed = leasesim_reservations::parse_scenario(&base.name, &base.source, &text).unwrap();
    assert_eq!(parsed.expected(), [invariant]);
    Rc::new(parsed)
}

/// With `store-clock-decides` only observing on `expiry-clock-skew`, `invariant` names
/// `worker` within the first 10 seeds under both strategies.
fn named_while_store_clock_decides_observes(worker: &str, invariant: Invariant) {
    let scenario = observing("expiry-clock-skew", Invariant::StoreClockDecides);
    for strategy in [Strategy::Random, Strategy::Pct { depth: 3 }] {
        let first = (0..200).find(|&seed| {
            let factory = Reservations::factory(worker).unwrap();
            let feed = Feed::Seed(seed);
            let spec = RunSpec::new(scenario.clone(), worker, factory, feed, strategy);
            run(&spec).outcome.invariant() == Some(invariant)
        });
        let seed = first.unwrap_or_else(|| panic!("{invariant} never named {worker} ({strategy})"));
        println!("{worker} ({strategy}): {invariant} at seed {seed}");
        assert!(seed < 10, "{worker} ({strategy}): first at seed {seed}");
    }
}

/// `store-clock-decides` names a claim that carries the worker's clock at its send. With that
/// checker only observing, the cost shows: a worker whose clock runs ahead is handed holds not
/// yet due, the guarded transition refuses them, and it claims them again at once;
/// `no-hot-reclaim` names that second claim.
#[test]
fn a_claim_by_the_workers_clock_loops_hot_and_no_hot_reclaim_names_it() {
    named_while_store_clock_decides_observes("worker-clock-claim", Invariant::NoHotReclaim);
}

/// With `store-clock-decides` only observing, a worker passing its own clock to the transition
/// too makes the store expire a hold before its deadline, and `expired-only-when-due` names it.
#[test]
fn a_transition_by_the_workers_clock_expires_early_and_expired_only_when_due_names_it() {
    named_while_store_clock_decides_observes("worker-clock-now", Invariant::ExpiredOnlyWhenDue);
}

#[test]
fn the_correct_worker_passes_every_scenario() {
    testkit::correct_passes_every_scenario(&testkit::builtin::<Reservations>(), 50);
}

// ---------------------------------------------------------------------------------------------
// Each scenario makes the situation it is named after happen
//
// Terminology (as in `proof.rs`):
// - *probe*: reads a scenario's situation off runs of it: `EachRun` off one run (it must hold
//   in most seeds: at least 11 of 20), `AcrossSeeds` off the 20 runs together (for swarm).
// - *control*: a scenario in which the situation cannot happen; the probe must be false in
//   all 20 of its seeds.
// - *safety stop*: a `StopCalled` before `Phase(Liveness)`.

const PROBE_SEEDS: u64 = 20;
const PROBE_MIN_HITS: usize = 11;

type Report = RunReport<Reservations>;

#[derive(Clone, Copy)]
enum Probe {
    EachRun(fn(&Scenario, &Report) -> bool),
    AcrossSeeds(fn(&Scenario, &[Report]) -> bool),
}

/// Every scenario file's probe and its control, one line each.
#[rustfmt::skip]
const PROBES: &[(&str, Probe, &str)] = &[
    ("expiry-claim-takeover", EachRun(a_claim_expires_mid_batch_and_moves_on), "expiry-steady"),
    ("expiry-clock-skew", EachRun(clocks_read_off_store_time_and_jump), "expiry-steady"),
    ("expiry-consume-race", EachRun(consumes_race_live_claims_both_ways), "expiry-steady"),
    ("expiry-killed-worker", EachRun(a_killed_workers_batch_is_taken_over), "expiry-steady"),
    ("expiry-steady", EachRun(nothing_goes_wrong_and_holds_expire), "expiry-transient-errors"),
    ("expiry-stop-anywhere", EachRun(a_safety_stop_lands_as_its_mode_says), "expiry-steady"),
    ("expiry-swarm", AcrossSeeds(swarm_switches_faults_between_seeds), "expiry-transient-errors"),
    ("expiry-transient-errors", EachRun(a_retry_succeeds_and_a_letter_is_recorded), "expiry-steady"),
];

#[test]
fn every_reservation_scenario_file_has_a_probe() {
    let files: BTreeSet<&str> = builtin_names_of("reservations").into_iter().collect();
    let probed: BTreeSet<&str> = PROBES.iter().map(|(name, _, _)| *name).collect();
    assert_eq!(files, probed, "one PROBES line per scenario file");
    for (name, _, control) in PROBES {
        assert!(
            files.contains(control) && control != name,
            "{name}: control {control}"
        );
    }
}

fn probe_runs(scenario: &Rc<Scenario>) -> Vec<Report> {
    (0..PROBE_SEEDS)
        .map(|seed| {
            let factory = Reservations::factory("correct").unwrap();
            let feed = Feed::Seed(seed);
            let spec = RunSpec::new(scenario.clone(), "correct", factory, feed, Strategy::Random);
            run(&RunSpec {
                keep_events: true,
                ..spec
            })
        })
        .collect()
}

fn score(probe: Probe, scenario: &Scenario, runs: &[Report]) -> (usize, usize, usize) {
    match probe {
        EachRun(holds) => {
            let hits = runs.iter().filter(|r| holds(scenario, r)).count();
            (hits, PROBE_MIN_HITS, runs.len())
        }
        AcrossSeeds(holds) => (usize::from(holds(scenario, runs)), 1, 1),
    }
}

#[test]
fn every_reservation_scenario_makes_its_named_situation_happen_in_most_seeds() {
    let names: BTreeSet<&str> = PROBES.iter().flat_map(|(s, _, c)| [*s, *c]).collect();
    let (mut subject, mut control) = (BTreeMap::new(), BTreeMap::new());
    for name in names {
        let scenario = Rc::new(resolve_typed::<Reservations>(name).unwrap());
        let runs = probe_runs(&scenario);
        for (probed, probe, control_name) in PROBES {
            if *probed == name {
                subject.insert(*probed, score(*probe, &scenario, &runs));
            }
            if *control_name == name {
                control.insert(*probed, score(*probe, &scenario, &runs));
            }
        }
    }
    let mut wrong = Vec::new();
    for (name, _, control_name) in PROBES {
        let (hits, needed, out_of) = subject[name];
        let (false_hits, _, control_out_of) = control[name];
        println!(
            "{name}: happened in {hits} of {out_of}; in control {control_name}: {false_hits} of \
             {control_out_of}"
        );
        if hits < needed {
            wrong.push(format!(
                "{name}: its situation happened in only {hits} of {out_of}"
            ));
        }
        if false_hits > 0 {
            wrong.push(format!(
                "{name}: the probe also holds in {false_hits} runs of {control_name}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// --- reading runs ----------------------------------------------------------------------------

fn kinds(report: &Report) -> impl Iterator<Item = EventKind> + '_ {
    report.events.iter().map(|e| e.event.kind)
}

fn liveness_index(report: &Report) -> usize {
    report
        .events
        .iter()
        .position(|e| e.event.kind == EventKind::Phase(Phase::Liveness))
        .expect("every run has a liveness phase")
}

fn clock_is_skewed(report: &Report) -> bool {
    report
        .profile
        .clocks
        .iter()
        .any(|c| c.offset_ms != 0 || c.drift_ppm != 0)
}

fn expired_some(report: &Report) -> bool {
    kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Applied {
                applied: Applied::Expired { .. },
                ..
            }
        )
    })
}

// --- the probes, one per scenario ------------------------------------------------------------

/// claim-takeover: a claim expires while its worker still settles the batch, another worker
/// claims the reservation, and the first worker's release then frees nothing.
fn a_claim_expires_mid_batch_and_moves_on(_: &Scenario, report: &Report) -> bool {
    report.coverage.contains(Situation::ReclaimedAfterExpiry)
        && report.coverage.contains(Situation::ReleaseFreedNothing)
}

/// clock-skew: clocks are drawn skewed, read at least a second off the store's time, jump,
/// and holds still expire (the store's clock decides).
fn clocks_read_off_store_time_and_jump(_: &Scenario, report: &Report) -> bool {
    let off = report.events.iter().any(|e| match e.event.kind {
        EventKind::ClockRead { now_ms } => now_ms.abs_diff(EPOCH_MS + e.at_ms) >= 1_000,
        _ => false,
    });
    let jumped = kinds(report).any(|k| matches!(k, EventKind::ClockJumped { .. }));
    clock_is_skewed(report) && off && jumped && expired_some(report)
}

/// consume-race: consumes land past deadlines on claimed holds, and both sides win at least
/// once: a transition answers not-eligible for a consumed hold, and a consume is refused for
/// a hold just expired.
fn consumes_race_live_claims_both_ways(_: &Scenario, report: &Report) -> bool {
    let consume_won = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Applied {
                applied: Applied::NotEligible {
                    status: StatusView::Consumed,
                    ..
                },
                ..
            }
        )
    });
    let expire_won = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Note(Note::ConsumeRefused {
                status: StatusView::Expired,
                ..
            })
        )
    });
    report.coverage.contains(Situation::ConsumeRacesExpiry) && consume_won && expire_won
}

/// killed-worker: a worker dies after an update, and a hold of its unreleased batch is later
/// claimed by another worker.
fn a_killed_workers_batch_is_taken_over(_: &Scenario, report: &Report) -> bool {
    let mut batch: BTreeMap<ReplicaId, BTreeSet<u32>> = BTreeMap::new();
    let mut orphans: BTreeMap<u32, ReplicaId> = BTreeMap::new();
    for e in &report.events {
        let Some(replica) = e.event.replica else {
            continue;
        };
        match e.event.kind {
            EventKind::Applied {
                applied: Applied::Claimed { ids, .. },
                ..
            } => {
                if ids
                    .as_slice()
                    .iter()
                    .any(|id| orphans.get(id).is_some_and(|r| *r != replica))
                {
                    return true;
                }
                batch.insert(replica, ids.as_slice().iter().copied().collect());
            }
            EventKind::Applied {
                applied: Applied::Released { id, .. },
                ..
            } => {
                batch.entry(replica).or_default().remove(&id);
            }
            EventKind::Note(Note::Killed) => {
                for id in batch.remove(&replica).unwrap_or_default() {
                    orphans.insert(id, replica);
                }
            }
            _ => {}
        }
    }
    false
}

/// steady: no fault of any kind, no stop before shutdown, clocks true, and holds expire.
fn nothing_goes_wrong_and_holds_expire(_: &Scenario, report: &Report) -> bool {
    let safety = &report.events[..liveness_index(report)];
    let fault = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Rejected { .. }
                | EventKind::ReplyLost { .. }
                | EventKind::Paused { .. }
                | EventKind::ClockJumped { .. }
                | EventKind::Note(Note::Killed)
                | EventKind::Applied {
                    applied: Applied::StoreTimeout | Applied::Invalid { .. },
                    ..
                }
        )
    });
    let early_stop = safety.iter().any(|e| e.event.kind == EventKind::StopCalled);
    !fault && !early_stop && !clock_is_skewed(report) && expired_some(report)
}

/// stop-anywhere: a safety stop lands as the run's drawn stop mode says: while a call of the
/// named operation is open, between polls (holding no claim), or anywhere (time).
fn a_safety_stop_lands_as_its_mode_says(_: &Scenario, report: &Report) -> bool {
    let mode = report.profile.stop.at;
    let mut open: BTreeMap<(ReplicaId, u64), Op> = BTreeMap::new();
    let mut holding: BTreeMap<ReplicaId, usize> = BTreeMap::new();
    for e in &report.events[..liveness_index(report)] {
        let Some(replica) = e.event.replica else {
            continue;
        };
        match e.event.kind {
            EventKind::Call { call, request } => {
                open.insert((replica, call), request.op());
                if request.op() == Op::Release {
                    let held = holding.entry(replica).or_default();
                    *held = held.saturating_sub(1);
                }
            }
            EventKind::Answered { call, answer, .. } => {
                open.remove(&(replica, call));
                if let leasesim_reservations::events::Answer::Claimed { ids, .. } = answer {
                    *holding.entry(replica).or_default() += ids.len();
                }
            }
            EventKind::StopCalled => {
                let busy = |op: Op| open.iter().any(|((of, _), o)| *of == replica && *o == op);
                let landed = match mode {
                    StopAt::During(op) => busy(op),
                    StopAt::BetweenTerms => holding.get(&replica).copied().unwrap_or(0) == 0,
                    StopAt::Time => true,
                    StopAt::None | StopAt::Anywhere => false,
                };
                if landed {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// transient-errors: a transition that failed transiently is retried and then expires its
/// hold, and a dead letter is recorded.
fn a_retry_succeeds_and_a_letter_is_recorded(_: &Scenario, report: &Report) -> bool {
    report.coverage.contains(Situation::RetryThenSuccess)
        && report.coverage.contains(Situation::DeadLetter)
}

/// One fault dimension of a run: (name, switched on in the profile, seen in the run).
fn fault_dimensions(report: &Report) -> Vec<(String, bool, bool)> {
    let profile = &report.profile;
    let seen = |wanted: fn(&EventKind) -> bool| kinds(report).any(|k| wanted(&k));
    let mut dimensions: Vec<(String, bool, bool)> = Op::ALL
        .iter()
        .map(|&op| {
            let rejected =
                kinds(report).any(|k| matches!(k, EventKind::Rejected { op: of, .. } if of == op));
            (
                format!("reject {}", op.name()),
                profile.reject.get(op) > 0.0,
                rejected,
            )
        })
        .collect();
    let system = &profile.system;
    dimensions.extend([
        (
            "reply-lost".to_string(),
            Op::ALL.iter().any(|&op| profile.reply_lost.get(op) > 0.0),
            seen(|k| matches!(k, EventKind::ReplyLost { .. })),
        ),
        (
            "store-timeout".to_string(),
            system.store_timeout > 0.0,
            seen(|k| {
                matches!(
                    k,
                    EventKind::Applied {
                        applied: Applied::StoreTimeout,
                        ..
                    }
                )
            }),
        ),
        (
            "kill".to_string(),
            system.kill > 0.0,
            seen(|k| matches!(k, EventKind::Note(Note::Killed))),
        ),
        (
            "pause".to_string(),
            profile.pause.probability > 0.0,
            seen(|k| matches!(k, EventKind::Paused { .. })),
        ),
        (
            "clock-jump".to_string(),
            profile.jump.probability > 0.0,
            seen(|k| matches!(k, EventKind::ClockJumped { .. })),
        ),
    ]);
    dimensions
}

/// swarm: across the seeds, at least eight fault dimensions are off in one seed's profile
/// (and absent from its run) and on in another's (and present in its run).
fn swarm_switches_faults_between_seeds(scenario: &Scenario, runs: &[Report]) -> bool {
    let per_run: Vec<Vec<(String, bool, bool)>> = runs.iter().map(fault_dimensions).collect();
    let varying: Vec<&str> = (0..per_run[0].len())
        .filter(|&d| {
            let off = per_run.iter().any(|dims| !dims[d].1 && !dims[d].2);
            let on = per_run.iter().any(|dims| dims[d].1 && dims[d].2);
            off && on
        })
        .map(|d| per_run[0][d].0.as_str())
        .collect();
    println!("{}: switched between seeds: {varying:?}", scenario.name);
    varying.len() >= 8
}

// --- the library entry ----------------------------------------------------------------------

/// A user's own worker: the production core behind a newtype, as a user crate would wrap it.
struct Wrapped(leasesim::reservations::SimWorker);

impl leasesim::reservations::WorkerUnderTest for Wrapped {
    type Report = Result<leasesim::reservations::RunReport, leasesim::reservations::RunError>;

    fn run(
        &self,
    ) -> leasesim::reservations::LocalBoxFuture<
        '_,
        Result<leasesim::reservations::RunReport, leasesim::reservations::RunError>,
    > {
        Box::pin(self.0.run())
    }

    fn stop(&self) -> leasesim::reservations::LocalBoxFuture<'_, ()> {
        Box::pin(self.0.stop())
    }
}

#[test]
fn the_check_entry_passes_a_users_worker_and_names_a_defects_invariant() {
    use leasesim::reservations::{check, check_builtin, correct_worker_of};
    let summary = check("expiry-consume-race", |ports| {
        Wrapped(correct_worker_of(ports))
    })
    .seeds(5);
    assert_eq!(
        (summary.scenario.as_str(), summary.seeds),
        ("expiry-consume-race", 5)
    );
    let failure = check_builtin("expiry-consume-race", "unguarded-expire")
        .try_seeds(20)
        .expect_err("the defect is caught")
        .into_failure()
        .expect("a seed failed, not the input");
    let text = failure.to_string();
    assert!(text.contains("consumed-never-expired"), "{text}");
    assert!(
        text.contains("leasesim replay --scenario expiry-consume-race --seed"),
        "{text}"
    );
}
