//! The shared pieces against what they stand for: the workload against the builtin scenario
//! it is taken from, and the recorder's verdicts against hand-written histories.

use leasesim_events::{OpSet, ReplicaId};
use leasesim_holder_lock::events::{EndKind, Forgetting, Key, Note, Op, ReleaseKind, Request};
use leasesim_holder_lock::{Scenario, load_scenario};
use peers_common::recorder::{Recorder, StoreNode, Verdict};
use peers_common::workload::{self, Workload};

const R1: ReplicaId = ReplicaId(0);
const R2: ReplicaId = ReplicaId(1);

/// The builtin scenario `w` is taken from, as the loader reads its file.
fn builtin(w: &Workload) -> Scenario {
    let path = format!(
        "{}/../../../scenarios/holder-lock/{}.toml",
        env!("CARGO_MANIFEST_DIR"),
        w.scenario
    );
    load_scenario(std::path::Path::new(&path)).expect("the builtin scenario")
}

/// What every workload shares with its scenario: replicas, phases (the safety phase as the
/// workload's overrides set it), claim, schedule, job, each operation's latency, the call
/// timeout.
fn assert_shared(scenario: &Scenario, w: &Workload) {
    assert_eq!(scenario.name, w.scenario);
    assert_eq!(scenario.replicas, workload::REPLICAS);
    let safety_ms = w
        .overrides
        .iter()
        .find(|(key, _)| *key == "duration_ms")
        .map_or(scenario.duration_ms, |(_, ms)| *ms as u64);
    assert_eq!(safety_ms, workload::SAFETY_MS);
    assert_eq!(scenario.liveness_ms, workload::LIVENESS_MS);
    assert_eq!(scenario.settings.claim, w.claim());
    assert_eq!(
        scenario.settings.attempt_bound_ms,
        workload::ATTEMPT_BOUND_MS
    );
    let every = scenario.schedule.run_every_ms;
    assert_eq!((every.min, every.max), w.run_every_ms);
    let job = &scenario.settings.job;
    assert_eq!((job.duration_ms.min, job.duration_ms.max), w.job_ms);
    assert_eq!(job.long_share.get(), w.long_share);
    if w.long_share > 0.0 {
        let long = job.long_duration_ms;
        assert_eq!((long.min, long.max), w.long_job_ms);
    }
    assert_eq!(job.step_ms.get(), w.step_ms);
    // A slow operation's legs are the workload's slow ones; the others take the peers'
    // network latency alone.
    for &op in Op::ALL {
        let latency = scenario.latency.get(op);
        let legs = (latency.min, latency.max);
        match w.slow_ops.contains(&op.name()) {
            true => assert_eq!(Some(legs), w.slow_ms, "{op:?}"),
            false => assert_eq!(legs, workload::LATENCY_MS, "{op:?}"),
        }
    }
    assert_eq!(scenario.faults.timeout_ms.get(), workload::CALL_TIMEOUT_MS);
}

#[test]
fn the_workload_is_the_builtin_scenario() {
    let w = workload::LONG_JOBS;
    assert_eq!(w.scenario, workload::SCENARIO);
    assert_shared(&builtin(&w), &w);
    assert!(w.overrides.is_empty() && w.slow_ops.is_empty());
}

#[test]
fn the_second_workload_is_holder_slow_release() {
    let w = workload::SLOW_RELEASE;
    let scenario = builtin(&w);
    assert_shared(&scenario, &w);
    assert_eq!(w.slow_ops, workload::SLOW_OPS);
    let pause = &scenario.faults.pause;
    let pauses = w.pauses.expect("pauses");
    assert_eq!(pause.probability.get(), pauses.probability);
    assert_eq!((pause.every_ms.min, pause.every_ms.max), pauses.every_ms);
    assert_eq!(
        (pause.duration_ms.min, pause.duration_ms.max),
        pauses.duration_ms
    );
    // The lost replies are the workload's overrides: the file has none.
    assert_eq!(scenario.faults.reply_lost.get(Op::Create).get(), 0.0);
    assert!(w.overrides.iter().all(|(_, share)| *share == w.reply_lost));
}

#[test]
fn the_third_workload_is_holder_volatile_with_restarts_only() {
    let w = workload::VOLATILE;
    let scenario = builtin(&w);
    assert_shared(&scenario, &w);
    assert_eq!(w.slow_ops, ["create", "renew", "delete_if_holder"]);
    let restart = &scenario.settings.forgetting[Forgetting::Restart.index()];
    let restarts = w.store_restarts.expect("store restarts");
    assert_eq!(restart.probability.get(), restarts.probability);
    assert_eq!(
        (restart.every_ms.min, restart.every_ms.max),
        restarts.every_ms
    );
    // The file also evicts and fails over, and runs 40 s of safety: the overrides take the
    // first two away and shorten the third to the other workloads' 30 s.
    for cause in [Forgetting::Eviction, Forgetting::Failover] {
        assert!(
            scenario.settings.forgetting[cause.index()]
                .probability
                .get()
                > 0.0
        );
    }
    assert_eq!(scenario.duration_ms, 40_000);
    let overrides: Vec<(&str, f64)> = w.overrides.to_vec();
    assert_eq!(
        overrides,
        [
            ("duration_ms", workload::SAFETY_MS as f64),
            ("faults.evict.probability", 0.0),
            ("faults.failover.probability", 0.0),
        ]
    );
}

/// The clock of a store that is dropped only after the run's end: it must not be read.
fn clock_not_read() -> u64 {
    panic!("a store dropped after the run's end read its clock")
}

/// `replica` sends `request` at `at_ms`, the store applies it 1 ms later, the answer lands
/// 1 ms after that.
fn call(
    recorder: &Recorder,
    store: &mut StoreNode,
    replica: ReplicaId,
    request: Request,
    at_ms: u64,
) {
    let call = recorder.call(replica, request, at_ms);
    let answer = store.apply(replica, call, request, at_ms + 1);
    recorder.answered(replica, call, request.op(), answer, at_ms + 2);
}

fn create(token: u64) -> Request {
    Request::Create {
        key: Key::Claim,
        token,
        lifetime_ms: workload::LIFETIME_MS,
    }
}

/// r1 claims at 100 ms and runs a job past its claim's end; r2 claims at 3,500 ms; r1's
/// release at 4,000 ms is `release`.
fn story(release: Request) -> Option<String> {
    let recorder = Recorder::new(false);
    let mut store = StoreNode::new(recorder.clone(), clock_not_read);
    recorder.note(R1, Note::AttemptStarted { attempt: 1 }, 100);
    call(&recorder, &mut store, R1, create(1 << 32 | 1), 100);
    recorder.note(
        R1,
        Note::JobStarted {
            duration_ms: 3_800,
            steps: 1,
        },
        102,
    );
    recorder.note(R2, Note::AttemptStarted { attempt: 1 }, 3_500);
    call(&recorder, &mut store, R2, create(2 << 32 | 2), 3_500);
    recorder.note(
        R2,
        Note::JobStarted {
            duration_ms: 500,
            steps: 1,
        },
        3_502,
    );
    recorder.note(R1, Note::JobStep { step: 1 }, 3_902);
    recorder.note(R1, Note::JobFinished { steps: 1 }, 3_902);
    call(&recorder, &mut store, R1, release, 4_000);
    // Only what the checkers found by the release: the story stops there (no attempt ends).
    let by_the_release = recorder.violated();
    let verdict = recorder.finish(4_002);
    by_the_release.then_some(verdict.violation).flatten()
}

#[test]
fn a_plain_delete_of_a_rivals_claim_is_judged_a_violation() {
    let violation = story(Request::Delete { key: Key::Claim }).expect("a violation");
    assert!(violation.starts_with("delete-own-claim"), "{violation}");
}

#[test]
fn a_conditional_release_of_a_claim_gone_is_no_violation_yet() {
    assert_eq!(
        story(Request::DeleteIfHolder {
            key: Key::Claim,
            token: 1 << 32 | 1
        }),
        None
    );
}

#[test]
fn a_finished_history_passes_and_hashes_the_same_twice() {
    let run = || {
        let recorder = Recorder::new(false);
        let mut store = StoreNode::new(recorder.clone(), clock_not_read);
        recorder.note(R1, Note::AttemptStarted { attempt: 1 }, 100);
        call(&recorder, &mut store, R1, create(1 << 32 | 1), 100);
        recorder.note(
            R1,
            Note::JobStarted {
                duration_ms: 500,
                steps: 1,
            },
            102,
        );
        recorder.note(R1, Note::JobStep { step: 1 }, 602);
        recorder.note(R1, Note::JobFinished { steps: 1 }, 602);
        let release = Request::DeleteIfHolder {
            key: Key::Claim,
            token: 1 << 32 | 1,
        };
        call(&recorder, &mut store, R1, release, 602);
        let ended = Note::AttemptEnded {
            attempt: 1,
            end: EndKind::JobDone,
            release: ReleaseKind::Deleted,
            claims_gone: 0,
            renewals: 0,
        };
        recorder.note(R1, ended, 604);
        for replica in 0..workload::REPLICAS {
            recorder.stop_called(ReplicaId(replica), workload::STOP_AT_MS);
            recorder.stop_resolved(ReplicaId(replica), workload::STOP_AT_MS);
        }
        recorder.finish(workload::STOP_AT_MS)
    };
    let (first, second) = (run(), run());
    assert_eq!(first.violation, None);
    assert_eq!(first.trace_hash, second.trace_hash);
    // 17 reported (an attempt's start and end, two calls of three events each, the job's
    // three notes, three stops called and returned) and four phases (safety, liveness,
    // shutdown, end).
    assert_eq!(first.events, 21);
}

/// r1 claims at 100 ms for a 3,800 ms job; the store's process crashes at 1,000 ms (its node
/// dropped, a fresh one started); r2 claims at 1,500 ms and starts its job beside r1's.
fn crash_story() -> (Recorder, Verdict) {
    let recorder = Recorder::new(true);
    let mut store = StoreNode::new(recorder.clone(), || 1_000);
    recorder.note(R1, Note::AttemptStarted { attempt: 1 }, 100);
    call(&recorder, &mut store, R1, create(1 << 32 | 1), 100);
    let job = Note::JobStarted {
        duration_ms: 3_800,
        steps: 1,
    };
    recorder.note(R1, job, 102);
    drop(store);
    let mut store = StoreNode::new(recorder.clone(), clock_not_read);
    recorder.note(R2, Note::AttemptStarted { attempt: 1 }, 1_500);
    call(&recorder, &mut store, R2, create(2 << 32 | 2), 1_500);
    recorder.note(R2, job, 1_502);
    let verdict = recorder.clone().finish(1_502);
    drop(store);
    (recorder, verdict)
}

#[test]
fn a_store_crash_is_noted_as_a_restart_that_lost_the_live_claim() {
    let (recorder, verdict) = crash_story();
    // r2's job beside r1's is explained: the store forgot r1's claim.
    assert_eq!(verdict.violation, None);
    let trace = verdict.trace;
    let forgot: Vec<&String> = trace
        .iter()
        .filter(|line| line.contains("Forgot"))
        .collect();
    assert_eq!(forgot.len(), 1, "{trace:#?}");
    assert!(forgot[0].starts_with("t=    1000ms"), "{}", forgot[0]);
    assert!(forgot[0].contains("Restart"), "{}", forgot[0]);
    assert!(forgot[0].contains("lost: Some"), "{}", forgot[0]);
    // The second store was dropped after the run's end without reading its clock (a read
    // would panic).
    assert!(recorder.finished());
}
