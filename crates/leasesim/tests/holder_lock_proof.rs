//! The holder-lock system (design 004): the harness finds every defect of the design's "costs you
//! the question" list, each by its own invariants, and the production core survives every
//! scenario; each scenario makes the situation it is named after happen.
//!
//! The full-size figures (20,000 seeds per scenario; seeds-to-detect over 20 ranges) come from
//! the commands in docs/systems/holder-lock.md; these tests run smaller counts of the same
//! thing.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

use leasesim::catalog::{resolve_in, resolve_typed, workers};
use leasesim::detect::detect_range;
use leasesim::runner::{RunReport, RunSpec, run};
use leasesim::systems::{AnyScenario, erase};
use leasesim::testkit::{self, Probe, Probe::AcrossSeeds, Probe::EachRun};
use leasesim::{Strategy, Workers};
use leasesim_holder_lock::HolderLock;
use leasesim_holder_lock::checkers::{Invariant, Situation};
use leasesim_holder_lock::events::{
    Answer, Applied, EndKind, Event, EventKind, Forgetting, Key, Note, Op, Phase, ReleaseKind,
    Request, Stamped,
};
use leasesim_rt::Feed;
use leasesim_sim::scenario::StopAt;

type Scenario = leasesim_sim::Scenario<HolderLock>;
type Report = RunReport<HolderLock>;

/// The design's list, each with the invariants that must name it. Written out here on purpose
/// (not read from the catalogue) so that the catalogue cannot drift unnoticed.
const DEFECTS: [(&str, &[Invariant]); 7] = [
    (
        "plain-delete",
        &[Invariant::DeleteOwnClaim, Invariant::NoThirdWorker],
    ),
    (
        "read-then-delete",
        &[Invariant::DeleteOwnClaim, Invariant::NoThirdWorker],
    ),
    ("fixed-token", &[Invariant::FreshToken]),
    (
        "side-key",
        &[
            Invariant::DeleteOwnClaim,
            Invariant::NoThirdWorker,
            Invariant::AttemptReport,
        ],
    ),
    ("swallowed-release", &[Invariant::ReleaseReported]),
    (
        "long-lifetime",
        &[Invariant::FreshToken, Invariant::DeleteOwnClaim],
    ),
    (
        "trust-from-answer",
        &[Invariant::EffectsUnderClaim, Invariant::JobUnderClaim],
    ),
];

fn names(invariants: &[Invariant]) -> Vec<&'static str> {
    invariants.iter().map(|i| i.name()).collect()
}

fn caught_within(
    scenarios: &[Arc<dyn AnyScenario>],
    worker: &str,
    invariants: &[&str],
    strategy: Strategy,
    start: u64,
) -> (u64, String) {
    let result = detect_range(scenarios, worker, invariants, strategy, start, 200);
    let (seeds, runs, scenario, invariant) = result
        .detected
        .unwrap_or_else(|| panic!("{worker} ({strategy}) was not caught within 200 seeds"));
    assert!(invariants.contains(&invariant.as_str()), "{invariant}");
    println!("{worker} ({strategy}): {invariant} in {scenario} after {seeds} seeds / {runs} runs");
    (seeds, invariant)
}

#[test]
fn each_defect_is_caught_by_its_own_invariants_within_200_seeds_under_both_strategies() {
    let caught =
        testkit::defects_caught_by_their_invariants(&testkit::builtin::<HolderLock>(), 200);
    assert_eq!(caught.len(), DEFECTS.len());
}

#[test]
fn the_catalogue_declares_what_this_test_expects() {
    let declared: BTreeMap<&str, Vec<&str>> = workers()
        .into_iter()
        .filter(|(system, w)| *system == "holder-lock" && w.name != "correct")
        .map(|(_, w)| (w.name, w.caught_by.to_vec()))
        .collect();
    let expected: BTreeMap<&str, Vec<&str>> = DEFECTS
        .iter()
        .map(|(worker, invariants)| (*worker, names(invariants)))
        .collect();
    assert_eq!(declared, expected);
}

/// A builtin scenario with `invariant` only observed (a scenario's `expect`), so the next
/// invariant in line must catch what it would have caught first.
fn observing(name: &str, invariant: Invariant) -> Arc<dyn AnyScenario> {
    let scenario: Scenario = resolve_typed(name).unwrap();
    let text = format!("expect = [\"{}\"]\n{}", invariant.name(), scenario.text);
    let source = format!("{name} (observing {invariant})");
    erase(leasesim_holder_lock::parse_scenario(name, &source, &text).unwrap())
}

#[test]
fn the_third_worker_walks_in_where_a_foreign_delete_goes_unnamed() {
    // `delete-own-claim` always speaks first (the delete comes before the third job); with
    // it only observing, `no-third-worker` must catch what the foreign delete lets in.
    let scenarios = [observing("holder-long-jobs", Invariant::DeleteOwnClaim)];
    for worker in ["plain-delete", "read-then-delete", "side-key"] {
        let caught = ["no-third-worker"];
        let slow = [observing("holder-slow-release", Invariant::DeleteOwnClaim)];
        let set: &[Arc<dyn AnyScenario>] = match worker {
            "plain-delete" => &scenarios,
            _ => &slow,
        };
        caught_within(set, worker, &caught, Strategy::Random, 0);
    }
}

/// Jobs that outlast even four lifetimes, with `fresh-token` only observing.
const LONGER_STILL: &str = r#"
expect = ["fresh-token"]
description = "jobs that outlast even four lifetimes"
system = "holder-lock"
replicas = 3
duration_ms = 60_000
liveness_ms = 20_000

[claim]
lifetime_ms = 3_000
renew_every_ms = 0

[job]
duration_ms = [800, 1_600]
long_duration_ms = [13_000, 20_000]
long_share = 0.5
step_ms = 1_000

[schedule]
run_every_ms = [50, 1_000]
"#;

#[test]
fn a_longer_lifetime_still_frees_a_rivals_claim_when_a_job_outlasts_it() {
    // The defect is named by `fresh-token` first (every claim holds the same value); with
    // that only observing, its consequence shows: a release that frees another's claim.
    let scenario = leasesim_holder_lock::parse_scenario("longer-still", "test", LONGER_STILL);
    let scenarios = [erase(scenario.unwrap())];
    let caught = ["delete-own-claim"];
    caught_within(&scenarios, "long-lifetime", &caught, Strategy::Random, 0);
    let pct = Strategy::Pct { depth: 3 };
    caught_within(&scenarios, "long-lifetime", &caught, pct, 1_000_000);
}

fn spec(scenario: &str, worker: &str, seed: u64, strategy: Strategy) -> RunSpec<HolderLock> {
    let scenario = Rc::new(resolve_typed::<HolderLock>(scenario).unwrap());
    let factory = HolderLock::factory(worker).unwrap();
    RunSpec::new(scenario, worker, factory, Feed::Seed(seed), strategy)
}

#[test]
fn the_correct_worker_passes_every_scenario_under_random_and_pct() {
    testkit::correct_passes_every_scenario(&testkit::builtin::<HolderLock>(), 60);
}

// ---------------------------------------------------------------------------------------------
// Each scenario makes the situation it is named after happen
//
// Terminology (as in `proof.rs`):
// - *probe*: reads a scenario's situation off its runs: `EachRun` off one run (it must hold
//   in at least 11 of 20 seeds), `AcrossSeeds` off the 20 runs together (swarm).
// - *control*: a scenario where the situation cannot happen: the probe must be false in all
//   its 20 seeds.

/// Every scenario file's probe and its control.
#[rustfmt::skip]
const PROBES: &[(&str, Probe<HolderLock>, &str)] = &[
    ("holder-long-jobs", EachRun(a_deadline_passes_mid_job_and_a_rival_claims), "holder-steady"),
    ("holder-no-cas", EachRun(claims_are_left_to_run_out_never_deleted), "holder-steady"),
    ("holder-pauses", EachRun(a_paused_holder_loses_its_claim_to_a_rival), "holder-steady"),
    ("holder-slow-release", EachRun(a_release_call_is_slow_and_a_holder_pauses), "holder-steady"),
    ("holder-steady", EachRun(every_job_runs_under_its_claim_and_is_released), "holder-long-jobs"),
    ("holder-stop-anywhere", EachRun(a_safety_stop_lands_as_its_mode_says), "holder-steady"),
    ("holder-swarm", AcrossSeeds(swarm_switches_faults_between_seeds), "holder-steady"),
    ("holder-volatile", EachRun(the_store_forgets_a_running_jobs_claim_and_a_renewal_says_so), "holder-steady"),
    ("holder-slow-timers", EachRun(slow_timers_keep_their_claims_and_stop_before_the_store_forgets), "holder-steady"),
];

#[test]
fn every_scenario_makes_its_named_situation_happen_in_most_seeds_and_never_in_its_control() {
    testkit::scenarios_make_their_situations(PROBES, 20);
}

// --- reading runs ----------------------------------------------------------------------------

fn kinds(report: &Report) -> impl Iterator<Item = EventKind> + '_ {
    report.events.iter().map(|e| e.event.kind)
}

fn safety(report: &Report) -> &[Stamped<Event>] {
    let end = report
        .events
        .iter()
        .position(|e| e.event.kind == EventKind::Phase(Phase::Liveness))
        .expect("a liveness phase");
    &report.events[..end]
}

fn ended(report: &Report, wanted: impl Fn(EndKind, ReleaseKind) -> bool) -> bool {
    kinds(report).any(|k| match k {
        EventKind::Note(Note::AttemptEnded { end, release, .. }) => wanted(end, release),
        _ => false,
    })
}

/// holder-long-jobs: a claim's deadline passes while its job runs, a rival claims the key
/// after it ran out, and the first holder's release finds the claim gone.
fn a_deadline_passes_mid_job_and_a_rival_claims(report: &Report) -> bool {
    let coverage = report.coverage;
    coverage.contains(Situation::DeadlineMidJob)
        && coverage.contains(Situation::RivalAfterExpiry)
        && ended(report, |_, release| release == ReleaseKind::GoneForeign)
}

/// holder-no-cas: releases leave claims to run out, and no delete of any kind is sent.
fn claims_are_left_to_run_out_never_deleted(report: &Report) -> bool {
    let deletes = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Call {
                request: Request::DeleteIfHolder { .. } | Request::Delete { .. },
                ..
            }
        )
    });
    !deletes && ended(report, |_, release| release == ReleaseKind::LeftToExpire)
}

/// holder-pauses: a replica holding a claim is paused, its claim runs out during the pause,
/// a rival takes the key, and the holder's job is stopped on the loss.
fn a_paused_holder_loses_its_claim_to_a_rival(report: &Report) -> bool {
    let mut paused_until: BTreeMap<u16, u64> = BTreeMap::new();
    let mut lost_while_paused = false;
    for e in &report.events {
        match (e.event.replica, e.event.kind) {
            (Some(r), EventKind::Paused { until_ms }) => {
                paused_until.insert(r.0, until_ms);
            }
            (
                None,
                EventKind::Note(Note::Expired {
                    key: Key::Claim,
                    held,
                }),
            ) => {
                let until = paused_until.get(&held.by.0).copied().unwrap_or(0);
                lost_while_paused |= e.at_ms < until;
            }
            _ => {}
        }
    }
    lost_while_paused
        && report.coverage.contains(Situation::RivalAfterExpiry)
        && report.coverage.contains(Situation::JobStoppedOnLoss)
}

/// holder-slow-release: a release call is answered 200 ms or more after it was sent, and a
/// holder's claim runs out while it is paused (the two things a two-step release's gap needs).
fn a_release_call_is_slow_and_a_holder_pauses(report: &Report) -> bool {
    let mut sent = BTreeMap::new();
    let mut slow = false;
    for e in &report.events {
        match e.event.kind {
            EventKind::Call { call, request } if request.op() == Op::DeleteIfHolder => {
                sent.insert(call, e.at_ms);
            }
            EventKind::Answered { call, .. } => {
                slow |= sent.remove(&call).is_some_and(|at| e.at_ms >= at + 200);
            }
            _ => {}
        }
    }
    slow && a_paused_holder_loses_its_claim_to_a_rival(report)
}

/// holder-steady: no fault, no claim runs out under a job, every job is done and every
/// release deletes its own claim.
fn every_job_runs_under_its_claim_and_is_released(report: &Report) -> bool {
    let fault = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Rejected { .. }
                | EventKind::ReplyLost { .. }
                | EventKind::Paused { .. }
                | EventKind::ClockJumped { .. }
        )
    });
    let early_stop = safety(report)
        .iter()
        .any(|e| e.event.kind == EventKind::StopCalled);
    let bad_end = ended(report, |end, release| {
        let won = !matches!(end, EndKind::NotHolder | EndKind::StoppedBeforeStart);
        let done = matches!(end, EndKind::JobDone | EndKind::Stopped);
        won && (!done || release != ReleaseKind::Deleted)
    });
    let jobs_done = ended(report, |end, _| end == EndKind::JobDone);
    !fault
        && !early_stop
        && !bad_end
        && jobs_done
        && !report.coverage.contains(Situation::DeadlineMidJob)
}

/// holder-stop-anywhere: a safety stop lands as the drawn mode says: while a call of the
/// named operation is in flight, between attempts, or at a drawn instant.
fn a_safety_stop_lands_as_its_mode_says(report: &Report) -> bool {
    let mode = report.profile.stop.at;
    let mut open: BTreeMap<(u16, u64), Op> = BTreeMap::new();
    let mut in_attempt = BTreeSet::new();
    for e in safety(report) {
        let Some(r) = e.event.replica.map(|r| r.0) else {
            continue;
        };
        match e.event.kind {
            EventKind::Call { call, request } => {
                open.insert((r, call), request.op());
            }
            EventKind::Answered { call, .. } => {
                open.remove(&(r, call));
            }
            EventKind::Note(Note::AttemptStarted { .. }) => {
                in_attempt.insert(r);
            }
            EventKind::Note(Note::AttemptEnded { .. }) => {
                in_attempt.remove(&r);
            }
            EventKind::StopCalled => {
                let landed = match mode {
                    StopAt::During(op) => open.iter().any(|((of, _), o)| *of == r && *o == op),
                    StopAt::BetweenTerms => !in_attempt.contains(&r),
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

/// holder-volatile: the store forgets the claim of a running job (by eviction, failover or
/// restart); a renewal of that same attempt then finds the key absent or another token, and
/// that attempt ends on it.
fn the_store_forgets_a_running_jobs_claim_and_a_renewal_says_so(report: &Report) -> bool {
    /// One replica's open attempt, as this probe follows it.
    #[derive(Default)]
    struct Attempt {
        token: u64,
        running: bool,
        forgotten: bool,
        refused: bool,
    }
    let mut attempts: BTreeMap<u16, Attempt> = BTreeMap::new();
    for e in &report.events {
        match (e.event.replica.map(|r| r.0), e.event.kind) {
            (
                Some(r),
                EventKind::Call {
                    request: Request::Create { token, .. },
                    ..
                },
            ) => {
                let fresh = Attempt {
                    token,
                    ..Attempt::default()
                };
                attempts.insert(r, fresh);
            }
            (Some(r), EventKind::Note(Note::JobStarted { .. })) => {
                attempts.entry(r).or_default().running = true;
            }
            (
                None,
                EventKind::Note(Note::Forgot {
                    key: Key::Claim,
                    lost: Some(held),
                    ..
                }),
            ) => {
                for attempt in attempts.values_mut() {
                    attempt.forgotten |= attempt.running && attempt.token == held.token;
                }
            }
            (
                Some(r),
                EventKind::Answered {
                    op: Op::Renew,
                    answer: Answer::Absent | Answer::NotHolder,
                    ..
                },
            ) => {
                let attempt = attempts.entry(r).or_default();
                attempt.refused |= attempt.forgotten;
            }
            (Some(r), EventKind::Note(Note::AttemptEnded { end, .. })) => {
                let attempt = attempts.remove(&r).unwrap_or_default();
                if attempt.refused && end == EndKind::LostRefused {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// holder-slow-timers: every replica's timers run slower than the store's clock; a holder
/// kept its claim to the end on its slow timer, and a job is stopped when the trust ran out
/// (that the store still held the claim then is `effects-under-claim`'s to judge).
fn slow_timers_keep_their_claims_and_stop_before_the_store_forgets(report: &Report) -> bool {
    let slow = kinds(report)
        .filter(|k| matches!(k, EventKind::Note(Note::SlowTimer { .. })))
        .count();
    slow == report.profile.clocks.len()
        && report.coverage.contains(Situation::SlowTimerKeptClaim)
        && ended(report, |end, _| end == EndKind::LostNotRenewed)
}

/// One fault dimension of a run: (name, on in its drawn profile, seen in its events).
fn dimensions(report: &Report) -> Vec<(&'static str, bool, bool)> {
    let profile = &report.profile;
    let seen = |f: fn(&EventKind) -> bool| kinds(report).any(|k| f(&k));
    let rejected =
        |op: Op| kinds(report).any(|k| matches!(k, EventKind::Rejected { op: o, .. } if o == op));
    let mut dims = vec![
        (
            "reject create",
            profile.reject.get(Op::Create) > 0.0,
            rejected(Op::Create),
        ),
        (
            "reject renew",
            profile.reject.get(Op::Renew) > 0.0,
            rejected(Op::Renew),
        ),
        (
            "reply-lost",
            profile.reply_lost.values().iter().any(|&p| p > 0.0),
            seen(|k| matches!(k, EventKind::ReplyLost { .. })),
        ),
        (
            "pause",
            profile.pause.probability > 0.0,
            seen(|k| matches!(k, EventKind::Paused { .. })),
        ),
        (
            "clock-jump",
            profile.jump.probability > 0.0,
            seen(|k| matches!(k, EventKind::ClockJumped { .. })),
        ),
        (
            "job-fail",
            profile.system.job_fail > 0.0,
            seen(|k| matches!(k, EventKind::Note(Note::JobFailed { .. }))),
        ),
    ];
    for cause in Forgetting::ALL {
        let forgot = kinds(report)
            .any(|k| matches!(k, EventKind::Note(Note::Forgot { cause: c, .. }) if c == cause));
        let on = profile.system.forgetting[cause.index()].probability > 0.0;
        dims.push((cause.key(), on, forgot));
    }
    let slow_timer = profile.clocks.iter().any(|c| c.drift_ppm < 0);
    let noted = seen(|k| matches!(k, EventKind::Note(Note::SlowTimer { .. })));
    dims.push(("slow timers", slow_timer, noted));
    let left = ended(report, |_, release| release == ReleaseKind::LeftToExpire);
    dims.push((
        "no compare-and-delete",
        !profile.system.compare_and_delete,
        left,
    ));
    let renewed = seen(|k| {
        matches!(
            k,
            EventKind::Applied {
                applied: Applied::Renewed { .. },
                ..
            }
        )
    });
    dims.push((
        "renewal",
        profile.system.claim.renew_every_ms.is_some(),
        renewed,
    ));
    dims
}

/// holder-swarm: across the seeds, at least nine fault dimensions are off (and absent) in one
/// run and on (and present) in another, the store's forgetting and slow timers among them.
fn swarm_switches_faults_between_seeds(runs: &[Report]) -> bool {
    let per_run: Vec<_> = runs.iter().map(dimensions).collect();
    let varying: Vec<&str> = (0..per_run[0].len())
        .filter(|&d| {
            let off = per_run.iter().any(|dims| !dims[d].1 && !dims[d].2);
            let on = per_run.iter().any(|dims| dims[d].1 && dims[d].2);
            off && on
        })
        .map(|d| per_run[0][d].0)
        .collect();
    println!("holder-swarm: switched between seeds: {varying:?}");
    let volatile = ["evict", "failover", "store_restart", "slow timers"];
    varying.len() >= 9 && volatile.iter().all(|d| varying.contains(d))
}

/// Which clock decides: the store's lifetime starts at the apply, on the store's clock; a
/// worker that counts the whole lifetime on its own timer from the answer acts on claims the
/// store has forgotten, where slow timers and pauses make the difference tell.
#[test]
fn trusting_the_whole_lifetime_from_the_answer_acts_on_claims_the_store_forgot() {
    let scenarios = resolve_in("holder-slow-timers", Some("holder-lock")).unwrap();
    let caught = names(&[Invariant::EffectsUnderClaim, Invariant::JobUnderClaim]);
    for strategy in [Strategy::Random, Strategy::Pct { depth: 3 }] {
        let (seeds, _) = caught_within(&scenarios, "trust-from-answer", &caught, strategy, 0);
        assert!(seeds <= 20, "{strategy}: {seeds} seeds");
    }
}

#[test]
fn a_store_without_compare_and_delete_never_sees_a_conditional_delete_from_the_correct_worker() {
    for seed in 0..10 {
        let report = run(&RunSpec {
            keep_events: true,
            ..spec("holder-no-cas", "correct", seed, Strategy::Random)
        });
        assert!(report.outcome.is_pass(), "{}", report.outcome.sentence());
        let refused = kinds(&report).any(|k| {
            matches!(
                k,
                EventKind::Answered {
                    answer: Answer::Unsupported,
                    ..
                }
            )
        });
        assert!(
            !refused,
            "seed {seed}: the worker asked for what the store cannot do"
        );
    }
}

#[test]
fn a_worker_is_checked_from_a_test_with_leasesim_holder_lock_check() {
    use leasesim::holder_lock::{check, check_builtin};
    let make = leasesim::holder_lock::correct_worker_of;
    let summary = check("holder-steady", make).seeds(10);
    assert_eq!((summary.seeds, summary.skipped), (10, false));
    let failure = check_builtin("holder-long-jobs", "plain-delete")
        .try_seeds(20)
        .expect_err("plain-delete frees a rival's claim")
        .into_failure()
        .expect("a seed failed, not the input");
    assert_eq!(failure.outcome.invariant(), Some(Invariant::DeleteOwnClaim));
    assert!(
        failure.replay.contains("--worker plain-delete"),
        "{}",
        failure.replay
    );
}

#[test]
fn a_shrunk_counterexample_draws_its_foreign_delete_and_violation_on_a_timeline() {
    let scenario = leasesim::catalog::resolve_one("holder-long-jobs").unwrap();
    let runner = scenario.runner("plain-delete", Strategy::Random).unwrap();
    let shrunk = runner
        .shrink(Feed::Seed(0), 20_000)
        .expect("plain-delete fails seed 0");
    let head = runner.header("seed 0, shrunk".into());
    let html = shrunk.report.html(&head);
    assert!(html.contains("id=\"violation\""), "the violation is marked");
    assert!(
        html.contains(">r1</text>") && html.contains(">r2</text>"),
        "a lane per replica"
    );
    // The delete of another replica's live claim is drawn as a stale delete, named so.
    assert!(
        html.contains("<g class=\"ms\"><title>delete of a token another wrote"),
        "the foreign delete is drawn"
    );
    let lower = html.to_lowercase();
    for outside in ["http://", "https://", "<script src", "<link"] {
        assert!(
            !lower.contains(outside),
            "the document reaches outside: {outside}"
        );
    }
}
