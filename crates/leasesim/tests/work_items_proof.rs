//! The work-items system (design 001): the harness catches each naive shape design 001 warns
//! about by its own invariant, the production core survives every scenario, and each scenario
//! makes the situation it is named after happen.
//!
//! The full-size figures (20,000 seeds per scenario; seeds-to-detect over 20 ranges) are
//! produced by the commands in the report; these tests run smaller counts of the same thing.
//!
//! Terminology:
//! - *probe*: reads a scenario's situation off runs of it: `EachRun` off one run (it must hold
//!   in most seeds: at least 11 of 20), `AcrossSeeds` off the 20 runs together (for swarm,
//!   whose point is that seeds differ).
//! - *control*: a scenario in which the situation cannot happen; the probe must be false in
//!   all 20 of its seeds.
//! - *claim*: a `(replica, item, token)` granted by a claim's answer.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use leasesim::catalog::{resolve_typed, workers};
use leasesim::runner::{RunReport, RunSpec, run};
use leasesim::testkit::{self, Probe, Probe::AcrossSeeds, Probe::EachRun};
use leasesim::{Strategy, Workers};
use leasesim_events::NetFailure;
use leasesim_rt::Feed;
use leasesim_work_items::WorkItems;
use leasesim_work_items::checkers::Invariant;
use leasesim_work_items::events::{
    Answer, Applied, EventKind, LookupView, Mark, Note, Prior, ReplicaId, Request,
};

type Scenario = leasesim_sim::Scenario<WorkItems>;
type Report = RunReport<WorkItems>;

/// The design's naive shapes, each with the invariant that must name it. Written out here on
/// purpose (not read from the defect table) so the table cannot drift unnoticed.
const NAIVE_SHAPES: [(&str, &[Invariant]); 8] = [
    ("plain-write-claim", &[Invariant::ClaimableOnly]),
    ("unfenced-apply", &[Invariant::StaleApply]),
    (
        "keyless-retry",
        &[Invariant::EffectOnce, Invariant::ReconcileFirst],
    ),
    ("lease-lost-retry", &[Invariant::StopOnLeaseLost]),
    ("unfenced-done", &[Invariant::StaleDone]),
    ("worker-token", &[Invariant::ClaimToken]),
    ("store-expiry-renewal", &[Invariant::RenewalDue]),
    ("no-deadline", &[Invariant::PassDeadline]),
];

#[test]
fn each_naive_shape_is_caught_by_its_own_invariant_within_200_seeds() {
    let caught = testkit::defects_caught_by_their_invariants(&testkit::builtin::<WorkItems>(), 200);
    assert_eq!(caught.len(), NAIVE_SHAPES.len());
}

#[test]
fn the_table_of_defects_says_what_the_proof_says() {
    let declared: BTreeMap<&str, Vec<&str>> = workers()
        .into_iter()
        .filter(|(system, _)| *system == "work-items")
        .filter(|(_, w)| w.name != "correct")
        .map(|(_, w)| (w.name, w.caught_by.to_vec()))
        .collect();
    let proved: BTreeMap<&str, Vec<&str>> = NAIVE_SHAPES
        .iter()
        .map(|(name, invariants)| (*name, invariants.iter().map(|i| i.name()).collect()))
        .collect();
    assert_eq!(declared, proved);
}

fn run_of(scenario: &Rc<Scenario>, worker: &str, seed: u64, strategy: Strategy) -> Report {
    let factory = WorkItems::factory(worker).unwrap();
    let spec = RunSpec::new(
        scenario.clone(),
        worker,
        factory,
        Feed::Seed(seed),
        strategy,
    );
    run(&RunSpec {
        keep_events: true,
        ..spec
    })
}

#[test]
fn the_correct_worker_passes_every_scenario_under_random_and_pct() {
    testkit::correct_passes_every_scenario(&testkit::builtin::<WorkItems>(), 50);
}

#[test]
fn with_fencing_off_the_correct_workers_late_writes_land_and_are_reported() {
    let scenario = Rc::new(resolve_typed::<WorkItems>("items-fencing-off").unwrap());
    let hits = (0..20)
        .filter(|&seed| {
            let report = run_of(&scenario, "correct", seed, Strategy::Random);
            assert!(report.outcome.is_pass(), "{}", report.outcome.sentence());
            report
                .expected
                .iter()
                .any(|v| matches!(v.invariant, Invariant::StaleApply | Invariant::StaleDone))
        })
        .count();
    assert!(
        hits >= 15,
        "stale-apply or stale-done reported in only {hits} of 20 seeds"
    );
}

#[test]
fn the_same_seed_gives_the_same_trace_and_another_seed_another() {
    let scenario = Rc::new(resolve_typed::<WorkItems>("items-swarm").unwrap());
    let hash = |seed| {
        run_of(&scenario, "correct", seed, Strategy::Random)
            .stats
            .trace_hash
    };
    assert_eq!(hash(3), hash(3));
    assert_ne!(hash(3), hash(4));
}

// ---------------------------------------------------------------------------------------------
// Each scenario makes the situation it is named after happen

/// Every scenario file's probe and its control, one line each.
#[rustfmt::skip]
const PROBES: &[(&str, Probe<WorkItems>, &str)] = &[
    ("items-clock-skew", EachRun(a_clock_fell_back_and_the_late_write_was_refused), "items-steady"),
    ("items-fencing-off", EachRun(a_write_of_an_expired_claim_was_applied), "items-clock-skew"),
    ("items-long-items", EachRun(renewed_between_chunks_and_a_pass_hit_its_deadline), "items-steady"),
    ("items-provider-timeouts", EachRun(a_lost_provider_reply_was_reconciled_to_applied), "items-steady"),
    ("items-steady", EachRun(every_item_was_done_on_its_first_claim), "items-store-reply-lost"),
    ("items-stop-anywhere", EachRun(a_stop_while_holding_released_the_claim), "items-steady"),
    ("items-store-outage", EachRun(a_pass_ended_with_the_store_unavailable), "items-steady"),
    ("items-store-reply-lost", EachRun(a_write_whose_reply_was_lost_was_retried), "items-steady"),
    ("items-swarm", AcrossSeeds(swarm_switches_faults_between_seeds), "items-provider-timeouts"),
    ("items-ugly-transition", EachRun(the_ugly_transition), "items-steady"),
];

#[test]
fn every_scenario_makes_its_named_situation_happen_in_most_seeds() {
    testkit::scenarios_make_their_situations(PROBES, 20);
}

// --- reading runs ----------------------------------------------------------------------------

/// Every call of a run with its replica and request, by call id.
fn calls(report: &Report) -> BTreeMap<u64, (ReplicaId, Request)> {
    report
        .events
        .iter()
        .filter_map(|e| match (e.event.kind, e.event.replica) {
            (EventKind::Call { call, request }, Some(replica)) => Some((call, (replica, request))),
            _ => None,
        })
        .collect()
}

/// `(call, applied)` of every apply, and the calls whose reply was lost.
fn applies(report: &Report) -> (Vec<(u64, Applied)>, BTreeSet<u64>) {
    let mut applied = Vec::new();
    let mut lost = BTreeSet::new();
    for event in &report.events {
        match event.event.kind {
            EventKind::Applied { call, applied: a } => applied.push((call, a)),
            EventKind::ReplyLost { call } => {
                lost.insert(call);
            }
            _ => {}
        }
    }
    (applied, lost)
}

/// Each answer with its call: `(call, replica, request, answer)`, in answer order.
fn answers(report: &Report) -> Vec<(u64, ReplicaId, Request, Answer)> {
    let calls = calls(report);
    report
        .events
        .iter()
        .filter_map(|e| match e.event.kind {
            EventKind::Answered { call, answer, .. } => {
                let (replica, request) = calls.get(&call)?;
                Some((call, *replica, *request, answer))
            }
            _ => None,
        })
        .collect()
}

/// Index of `Phase(Liveness)`: the safety phase is every event before it.
fn liveness_index(report: &Report) -> usize {
    report
        .events
        .iter()
        .position(|e| e.event.kind == EventKind::Phase(leasesim_events::Phase::Liveness))
        .expect("every run has a liveness phase")
}

// --- the probes ------------------------------------------------------------------------------

/// items-steady: every claim of the run ends done (one claim per item, no write refused, no
/// call failed), and the tally counts every item done.
fn every_item_was_done_on_its_first_claim(report: &Report) -> bool {
    let (applied, lost) = applies(report);
    let claims = applied
        .iter()
        .filter(|(_, a)| matches!(a, Applied::Claimed { .. }))
        .count();
    let dones = applied
        .iter()
        .filter(|(_, a)| {
            matches!(
                a,
                Applied::Marked {
                    mark: Mark::Done,
                    repeat: false,
                    ..
                }
            )
        })
        .count();
    let trouble = answers(report)
        .iter()
        .any(|(_, _, _, a)| matches!(a, Answer::LeaseLost | Answer::Failed(_)));
    let tally_done = report.events.iter().any(|e| {
        matches!(e.event.kind, EventKind::Note(Note::Tally { status, .. }) if status.open == 0
            && status.done as usize == dones)
    });
    claims == dones && dones > 0 && !trouble && lost.is_empty() && tally_done
}

/// items-ugly-transition: the design's sequence. A replica claims an item and pauses holding
/// it; the claim expires and another replica is granted the item; the first replica's
/// provider apply of that item was accepted with its reply lost; after the takeover the first
/// replica gets lease-lost for a write of its claim (its renewal or its done-mark), and the
/// item still ends done with its effect carried out once.
fn the_ugly_transition(report: &Report) -> bool {
    let calls = calls(report);
    let (applied, lost) = applies(report);
    let taken_over: BTreeSet<(u32, u64)> = applied
        .iter()
        .filter_map(|(_, a)| match a {
            Applied::Claimed {
                item,
                prior: Prior::Expired { token },
                ..
            } => Some((*item, *token)),
            _ => None,
        })
        .collect();
    let lost_provider: BTreeSet<(ReplicaId, u32)> = applied
        .iter()
        .filter(|(call, a)| {
            lost.contains(call)
                && matches!(
                    a,
                    Applied::ProviderApplied { .. } | Applied::ProviderDuplicate { .. }
                )
        })
        .filter_map(|(call, _)| calls.get(call))
        .filter_map(|(replica, request)| Some((*replica, request.item()?)))
        .collect();
    // Per replica: the claim it holds and whether it paused while holding it.
    let mut held: BTreeMap<ReplicaId, (u32, u64, bool)> = BTreeMap::new();
    for event in &report.events {
        let Some(replica) = event.event.replica else {
            continue;
        };
        match event.event.kind {
            EventKind::Paused { .. } => {
                if let Some(claim) = held.get_mut(&replica) {
                    claim.2 = true;
                }
            }
            EventKind::Answered {
                answer: Answer::Claimed(lease),
                ..
            } => {
                held.insert(replica, (lease.item, lease.token, false));
            }
            EventKind::Answered {
                answer: Answer::LeaseLost,
                ..
            } => {
                if let Some(&(item, token, paused)) = held.get(&replica)
                    && paused
                    && taken_over.contains(&(item, token))
                    && lost_provider.contains(&(replica, item))
                {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// items-provider-timeouts: a provider apply was carried out with its reply lost, and the
/// replica's next provider call for that item was a lookup that found it applied.
fn a_lost_provider_reply_was_reconciled_to_applied(report: &Report) -> bool {
    let (applied, lost) = applies(report);
    let ambiguous: BTreeSet<u64> = applied
        .iter()
        .filter(|(call, a)| lost.contains(call) && matches!(a, Applied::ProviderApplied { .. }))
        .map(|(call, _)| *call)
        .collect();
    let mut waiting: BTreeSet<(ReplicaId, u32)> = BTreeSet::new();
    for (call, replica, request, answer) in answers(report) {
        match (request, answer) {
            (Request::ProviderApply { item, .. }, Answer::Failed(NetFailure::Timeout))
                if ambiguous.contains(&call) =>
            {
                waiting.insert((replica, item));
            }
            (Request::Lookup { key }, Answer::Lookup(LookupView::Applied))
                if waiting.contains(&(replica, key.item)) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// items-store-reply-lost: a store write (a chunk, a done-mark or a release) was applied with
/// its reply lost, and the same replica sent the same write again and it was answered as a
/// success (the chunk already applied, the mark a repeat).
fn a_write_whose_reply_was_lost_was_retried(report: &Report) -> bool {
    let calls = calls(report);
    let (applied, lost) = applies(report);
    // A write, whatever clock reading it carried: replica, operation, item, token, chunk.
    let write = |call: &u64| {
        let (replica, request) = calls.get(call)?;
        let chunk = match request {
            Request::Apply { chunk, .. } => Some(*chunk),
            _ => None,
        };
        Some((
            *replica,
            request.op(),
            request.item(),
            request.token(),
            chunk,
        ))
    };
    let lost_writes: Vec<_> = applied
        .iter()
        .filter(|(call, a)| {
            lost.contains(call)
                && matches!(a, Applied::ChunkApplied { .. } | Applied::Marked { .. })
        })
        .filter_map(|(call, _)| write(call))
        .collect();
    applied.iter().any(|(call, a)| {
        let repeat = matches!(
            a,
            Applied::ChunkApplied { fresh: false, .. } | Applied::Marked { repeat: true, .. }
        );
        repeat && !lost.contains(call) && write(call).is_some_and(|w| lost_writes.contains(&w))
    })
}

/// items-clock-skew: a replica's clock jumped back while it held a claim, that claim was
/// taken over after it expired, and a later write of the first holder was refused as
/// lease-lost.
fn a_clock_fell_back_and_the_late_write_was_refused(report: &Report) -> bool {
    let (applied, _) = applies(report);
    let taken_over: BTreeSet<u64> = applied
        .iter()
        .filter_map(|(_, a)| match a {
            Applied::Claimed {
                prior: Prior::Expired { token },
                ..
            } => Some(*token),
            _ => None,
        })
        .collect();
    let mut held: BTreeMap<ReplicaId, (u64, bool)> = BTreeMap::new();
    for event in &report.events {
        let Some(replica) = event.event.replica else {
            continue;
        };
        match event.event.kind {
            EventKind::ClockJumped { by_ms } if by_ms < 0 => {
                if let Some(claim) = held.get_mut(&replica) {
                    claim.1 = true;
                }
            }
            EventKind::Answered {
                answer: Answer::Claimed(lease),
                ..
            } => {
                held.insert(replica, (lease.token, false));
            }
            EventKind::Answered {
                answer: Answer::LeaseLost,
                ..
            } if held
                .get(&replica)
                .is_some_and(|&(token, fell)| fell && taken_over.contains(&token)) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// items-fencing-off: the store applied a chunk or a done-mark under a token that was not the
/// item's live claim.
fn a_write_of_an_expired_claim_was_applied(report: &Report) -> bool {
    report.events.iter().any(|e| match e.event.kind {
        EventKind::Applied {
            applied: Applied::ChunkApplied { token, live, .. },
            ..
        }
        | EventKind::Applied {
            applied:
                Applied::Marked {
                    token,
                    live,
                    repeat: false,
                    ..
                },
            ..
        } => live != Some(token),
        _ => false,
    })
}

/// items-long-items: a claim was renewed between two of its chunks, and a pass ended at its
/// deadline with items still open.
fn renewed_between_chunks_and_a_pass_hit_its_deadline(report: &Report) -> bool {
    let mut last: BTreeMap<ReplicaId, Option<&str>> = BTreeMap::new();
    let mut renewed_mid_item = false;
    for (_, replica, request, answer) in answers(report) {
        let kind = match (request, answer) {
            (Request::Apply { .. }, Answer::Applied { .. }) => Some("chunk"),
            (Request::Renew { .. }, Answer::Renewed { .. }) => Some("renewal"),
            (Request::Claim { .. }, _) => None,
            _ => continue,
        };
        let before = last.insert(replica, kind).flatten();
        if before == Some("renewal") && kind == Some("chunk") {
            renewed_mid_item = true;
        }
    }
    let deadline = report.events.iter().any(|e| {
        matches!(e.event.kind, EventKind::Note(Note::PassEnded {
            end: leasesim_work_items::events::EndKind::Deadline, status: Some(s), ..
        }) if s.open > 0)
    });
    renewed_mid_item && deadline
}

/// items-stop-anywhere: a stop in the safety phase landed while its replica held a claim,
/// and that replica's claim was then released with `stopped`.
fn a_stop_while_holding_released_the_claim(report: &Report) -> bool {
    let safety = &report.events[..liveness_index(report)];
    let mut holding: BTreeSet<ReplicaId> = BTreeSet::new();
    let mut stopped_holding: BTreeSet<ReplicaId> = BTreeSet::new();
    for event in safety {
        let Some(replica) = event.event.replica else {
            continue;
        };
        match event.event.kind {
            EventKind::Answered {
                answer: Answer::Claimed(_),
                ..
            } => {
                holding.insert(replica);
            }
            EventKind::Answered {
                answer: Answer::Ok | Answer::LeaseLost,
                ..
            } => {
                holding.remove(&replica);
            }
            EventKind::StopCalled if holding.contains(&replica) => {
                stopped_holding.insert(replica);
            }
            _ => {}
        }
    }
    answers(report).iter().any(|(_, replica, request, answer)| {
        let stopped = leasesim_work_items::events::ErrorCode::Stopped;
        stopped_holding.contains(replica)
            && *answer == Answer::Ok
            && matches!(request, Request::Release { error, .. } if *error == stopped)
    })
}

/// items-store-outage: a pass gave up because the store stayed unreachable through every
/// retry of a find or a status read.
fn a_pass_ended_with_the_store_unavailable(report: &Report) -> bool {
    report.events.iter().any(|e| {
        matches!(
            e.event.kind,
            EventKind::Note(Note::PassEnded {
                end: leasesim_work_items::events::EndKind::Unavailable,
                ..
            })
        )
    })
}

/// items-swarm: across the seeds, at least six of its seven switchable fault dimensions are
/// on in some runs and off in others (the stop is always drawn). Refusals, lost requests and
/// lost replies are switched one operation at a time, so each of those three counts as
/// varying when some operation's switch varies.
fn swarm_switches_faults_between_seeds(runs: &[Report]) -> bool {
    let switches = |r: &Report| -> Vec<Vec<bool>> {
        let p = &r.profile;
        let per_op = |table: &leasesim_sim::scenario::PerOp<f64>| -> Vec<bool> {
            table.values().iter().map(|&x| x > 0.0).collect()
        };
        vec![
            vec![p.pause.probability > 0.0],
            vec![p.jump.probability > 0.0],
            vec![
                p.clocks
                    .iter()
                    .any(|c| c.offset_ms != 0 || c.drift_ppm != 0),
            ],
            vec![p.system.provider_refuses > 0.0],
            per_op(&p.reject),
            per_op(&p.request_lost),
            per_op(&p.reply_lost),
        ]
    };
    let all: Vec<Vec<Vec<bool>>> = runs.iter().map(switches).collect();
    let varies = |d: usize, s: usize| all.iter().any(|v| v[d][s]) && all.iter().any(|v| !v[d][s]);
    let varying = (0..all[0].len())
        .filter(|&d| (0..all[0][d].len()).any(|s| varies(d, s)))
        .count();
    varying >= 6
}

/// `keyless-retry` is first named by `reconcile-first` (its retry is sent before any lookup),
/// which halts the run there. With that checker only observing, the harm itself shows: the
/// provider carries out the item's effect a second time, and `effect-once` names it.
#[test]
fn a_keyless_retry_makes_a_second_effect_that_effect_once_names() {
    let base = resolve_typed::<WorkItems>("items-provider-timeouts").unwrap();
    let text = base.text.replacen(
        "system = \"work-items\"",
        "system = \"work-items\"\nexpect = [\"reconcile-first\"]",
        1,
    );
    let scenario = leasesim_work_items::parse_scenario(&base.name, &base.source, &text).unwrap();
    let scenario = Rc::new(scenario);
    for strategy in [Strategy::Random, Strategy::Pct { depth: 3 }] {
        let first = (0..200).find(|&seed| {
            let report = run_of(&scenario, "keyless-retry", seed, strategy);
            report.outcome.invariant() == Some(Invariant::EffectOnce)
        });
        let seed = first.unwrap_or_else(|| panic!("effect-once never named it ({strategy})"));
        println!("keyless-retry ({strategy}): effect-once at seed {seed}");
        assert!(seed < 10, "{strategy}: first at seed {seed}");
    }
}

/// Each defective worker's counterexample (as the snapshots shrink it) shrinks to a handful of
/// calls, and the saved choices file alone (its overrides and values) replays the same run.
#[test]
fn each_counterexample_shrinks_small_and_its_choices_file_replays_it() {
    use leasesim::choices;
    use leasesim::shrink::shrink;
    use leasesim::systems::{erase, typed};
    const CASES: [(&str, &str, u64, u64); 6] = [
        ("plain-write-claim", "items-steady", 0, 17),
        ("unfenced-apply", "items-clock-skew", 0, 34),
        ("keyless-retry", "items-provider-timeouts", 0, 22),
        ("lease-lost-retry", "items-ugly-transition", 0, 19),
        ("unfenced-done", "items-clock-skew", 2, 42),
        ("worker-token", "items-long-items", 0, 25),
    ];
    for (worker, name, seed, max_events) in CASES {
        let scenario = Rc::new(resolve_typed::<WorkItems>(name).unwrap());
        let spec = || {
            let factory = WorkItems::factory(worker).unwrap();
            RunSpec::new(
                scenario.clone(),
                worker,
                factory,
                Feed::Seed(seed),
                Strategy::Random,
            )
        };
        let shrunk = shrink(&spec(), 20_000).unwrap_or_else(|| panic!("{worker} passes"));
        let report = &shrunk.report;
        let events = report.stats.events;
        println!(
            "{worker:<18} {name:<24} seed {seed}: {} -> {events} events",
            shrunk.original_events
        );
        assert!(events <= max_events, "{worker}: {events} events");
        let text = choices::render(&[], &shrunk.overrides, &report.choices);
        let file = choices::parse_file("shrunk.choices", &text).unwrap();
        let changed = file.apply(&erase((*scenario).clone())).unwrap();
        let replayed = run(&RunSpec {
            scenario: Rc::new(typed::<WorkItems>(changed.as_ref()).unwrap()),
            feed: Feed::Replay(file.values),
            ..spec()
        });
        assert_eq!(replayed.outcome, report.outcome, "{worker}: replay verdict");
        assert_eq!(
            replayed.stats.trace_hash, report.stats.trace_hash,
            "{worker}: replay trace"
        );
    }
}

/// The library entry: a user's crate checks a work-item worker of its own with
/// `leasesim::work_items::check`, and a failing check says which invariant broke.
#[test]
fn leasesim_work_items_check_runs_a_users_worker_and_reports_a_failure() {
    use leasesim::work_items::prelude::*;
    let summary = check("items-steady", leasesim::work_items::correct_worker_of)
        .strategy(Strategy::Pct { depth: 3 })
        .seeds(20);
    assert_eq!((summary.seeds, summary.skipped), (20, false));
    let failure = leasesim::work_items::check_builtin("items-steady", "worker-token")
        .try_seeds(20)
        .expect_err("worker-token fails")
        .into_failure()
        .expect("a seed failed, not the input");
    assert_eq!(failure.outcome.invariant(), Some(Invariant::ClaimToken));
    assert!(
        failure.replay.contains("--worker worker-token"),
        "{}",
        failure.replay
    );
}
