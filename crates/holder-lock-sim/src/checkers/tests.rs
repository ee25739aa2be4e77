//! Each checker on hand-built event sequences: a run that breaks its invariant is named at
//! the right event with the right words, and the correct run breaks nothing.

use crate::events::{EndKind, EventKind, Forgetting, Held, Key, Note, Phase, ReleaseKind, Request};

use super::testkit::{
    LIFETIME_MS, R1, R2, R3, Script, assert_broken, assert_broken_with, assert_holds,
    assert_holds_with, config, failed,
};
use super::{CheckConfig, Invariant, all_checkers};

fn held(token: u64, by: leasesim_events::ReplicaId) -> Held {
    Held { token, by }
}

fn job_started(script: &mut Script, replica: leasesim_events::ReplicaId) -> u64 {
    script.note(
        replica,
        Note::JobStarted {
            duration_ms: 2_000,
            steps: 4,
        },
    )
}

fn unrenewed() -> CheckConfig {
    CheckConfig {
        renewal: false,
        ..config()
    }
}

#[test]
fn the_correct_run_breaks_nothing() {
    let script = Script::correct_run();
    for invariant in Invariant::ALL {
        assert_holds(invariant, &script);
    }
    let mut set = all_checkers(&config());
    for event in &script.events {
        assert_eq!(set.on_event(event), leasesim_events::Flow::Continue);
    }
    assert!(set.finish(script.now_ms()).is_none());
}

/// r1 claims at 0 (until 1002) and runs long; r2 claims at 1200, after r1's claim ran out.
fn overtaken() -> Script {
    let mut script = Script::new();
    script.start(R1, 1);
    script.create(R1, 1);
    job_started(&mut script, R1);
    script.at(1_200).start(R2, 1);
    script.create(R2, 2);
    script
}

#[test]
fn delete_own_claim_names_the_delete_of_a_rivals_claim() {
    let mut script = overtaken();
    script.at(1_500);
    let seq = script.blind_delete(R1, held(2, R2));
    let words = [
        "r1's attempt 1",
        "token 2 of r2's attempt 1",
        "had run out at t=1002ms",
    ];
    assert_broken(Invariant::DeleteOwnClaim, &script, seq, &words);

    let mut own = overtaken();
    own.at(1_500).release_refused(R1, 1, held(2, R2));
    own.at(1_600).release(R2, 2, held(2, R2));
    assert_holds(Invariant::DeleteOwnClaim, &own);
}

#[test]
fn no_third_worker_names_a_job_let_in_by_a_foreign_delete_and_allows_one_after_expiry() {
    let mut script = Script::new();
    script.start(R1, 1);
    script.create(R1, 1);
    job_started(&mut script, R1);
    script.at(500).start(R2, 1);
    script.blind_delete(R2, held(1, R1));
    script.at(600).start(R3, 1);
    script.create(R3, 3);
    let seq = job_started(&mut script, R3);
    let words = [
        "r3's attempt 1",
        "r1's attempt 1",
        "r2's attempt 1 deleted it at t=502ms",
    ];
    assert_broken(Invariant::NoThirdWorker, &script, seq, &words);

    let mut expired = overtaken();
    job_started(&mut expired, R2);
    assert_holds(Invariant::NoThirdWorker, &expired);
}

#[test]
fn job_under_claim_names_a_job_after_the_claim_ran_out_or_before_the_create_won() {
    let mut script = Script::new();
    script.start(R1, 1);
    script.create(R1, 1);
    script.at(1_100);
    let seq = job_started(&mut script, R1);
    let words = ["r1's attempt 1", "its claim had run out at t=1002ms"];
    assert_broken(Invariant::JobUnderClaim, &script, seq, &words);

    let mut early = Script::new();
    early.start(R1, 1);
    let create = Request::Create {
        key: Key::Claim,
        token: 1,
        lifetime_ms: LIFETIME_MS,
    };
    early.send(R1, create);
    let seq = job_started(&mut early, R1);
    assert_broken(Invariant::JobUnderClaim, &early, seq, &["had not won"]);
}

#[test]
fn fresh_token_names_a_token_reused_by_the_same_worker_or_another() {
    let mut script = Script::new();
    script.start(R1, 1);
    script.create_lost(R1, 7, held(5, R2));
    script.end(R1, 1, EndKind::NotHolder, ReleaseKind::None, 0);
    script.at(500).start(R1, 2);
    let seq = script.create(R1, 7) - 1;
    let words = ["r1's attempt 2", "token 7", "its own attempt 1"];
    assert_broken(Invariant::FreshToken, &script, seq, &words);

    let mut other = Script::new();
    other.start(R1, 1);
    other.create(R1, 7);
    other.start(R2, 1);
    let seq = other.create(R2, 7) - 1;
    assert_broken(Invariant::FreshToken, &other, seq, &["but r1's attempt 1"]);
    assert_holds(Invariant::FreshToken, &overtaken());
}

#[test]
fn release_reported_names_a_swallowed_signal_and_a_wrong_count() {
    let ended = |release, gone| {
        let mut script = overtaken();
        script.at(1_500).release_refused(R1, 1, held(2, R2));
        let seq = script.end(R1, 1, EndKind::JobDone, release, gone);
        (script, seq)
    };
    let (script, seq) = ended(ReleaseKind::Deleted, 0);
    let words = ["reported a deletion", "another token held the key"];
    assert_broken(Invariant::ReleaseReported, &script, seq, &words);
    let (script, seq) = ended(ReleaseKind::GoneForeign, 0);
    let words = ["reported 0 releases", "but 1 of its worker's"];
    assert_broken(Invariant::ReleaseReported, &script, seq, &words);
    let (script, _) = ended(ReleaseKind::GoneForeign, 1);
    assert_holds(Invariant::ReleaseReported, &script);
}

/// In the liveness phase, r1 claims at 200 (until 1202) and starts its job.
fn healed_claim() -> Script {
    let mut script = Script::new();
    script.world(EventKind::Phase(Phase::Safety));
    script.at(100).world(EventKind::Phase(Phase::Liveness));
    script.at(200).start(R1, 1);
    script.create(R1, 1);
    job_started(&mut script, R1);
    script
}

#[test]
fn claim_kept_names_a_healthy_holders_claim_running_out_only_with_renewal_on() {
    let mut script = healed_claim();
    let expired = Note::Expired {
        key: Key::Claim,
        held: held(1, R1),
    };
    let seq = script.at(1_202).world(EventKind::Note(expired));
    let words = ["r1's attempt 1", "ran out at t=1202ms"];
    assert_broken(Invariant::ClaimKept, &script, seq, &words);
    assert_holds_with(Invariant::ClaimKept, &unrenewed(), &script);

    let mut renewed = healed_claim();
    renewed.at(900).renew(R1, 1);
    renewed.at(1_300).release(R1, 1, held(1, R1));
    assert_holds(Invariant::ClaimKept, &renewed);
}

#[test]
fn effects_under_claim_names_a_step_after_a_loss_a_stop_or_past_the_claim() {
    let mut lost = Script::new();
    lost.start(R1, 1);
    lost.create(R1, 1);
    job_started(&mut lost, R1);
    lost.at(300).renew_refused(R1, 1, Some(held(2, R2)));
    let seq = lost.note(R1, Note::JobStep { step: 1 });
    let words = [
        "r1's attempt 1's job took a step",
        "renewal found the claim gone",
    ];
    assert_broken(Invariant::EffectsUnderClaim, &lost, seq, &words);

    let mut stopped = Script::new();
    stopped.start(R1, 1);
    stopped.create(R1, 1);
    job_started(&mut stopped, R1);
    stopped.at(300).on(R1, EventKind::StopCalled);
    let seq = stopped.note(R1, Note::JobStep { step: 1 });
    assert_broken(
        Invariant::EffectsUnderClaim,
        &stopped,
        seq,
        &["stop() was called"],
    );

    let mut late = Script::new();
    late.start(R1, 1);
    late.create(R1, 1);
    job_started(&mut late, R1);
    let seq = late.at(1_100).note(R1, Note::JobStep { step: 1 });
    let words = ["with renewal on, the store held nothing"];
    assert_broken(Invariant::EffectsUnderClaim, &late, seq, &words);
    assert_holds_with(Invariant::EffectsUnderClaim, &unrenewed(), &late);
}

#[test]
fn own_token_names_a_renewal_with_another_token_or_before_the_create_won() {
    let mut script = Script::new();
    script.start(R1, 1);
    script.create(R1, 1);
    let seq = script.renew(R1, 9) - 1;
    assert_broken(
        Invariant::OwnToken,
        &script,
        seq,
        &["token 9", "claim's token is 1"],
    );

    let mut early = Script::new();
    early.start(R1, 1);
    let create = Request::Create {
        key: Key::Claim,
        token: 1,
        lifetime_ms: LIFETIME_MS,
    };
    early.send(R1, create);
    let seq = early.renew(R1, 1) - 1;
    assert_broken(
        Invariant::OwnToken,
        &early,
        seq,
        &["its create had not won"],
    );
}

#[test]
fn release_on_exit_names_an_attempt_that_won_and_never_released() {
    let mut script = Script::new();
    script.start(R1, 1);
    script.create(R1, 1);
    job_started(&mut script, R1);
    script.note(R1, Note::JobFinished { steps: 4 });
    let seq = script.end(R1, 1, EndKind::JobDone, ReleaseKind::None, 0);
    let words = [
        "r1's attempt 1 ended",
        "without releasing its claim (token 1)",
    ];
    assert_broken(Invariant::ReleaseOnExit, &script, seq, &words);

    let mut failed_create = Script::new();
    failed_create.start(R1, 1);
    failed_create.create_answered(R1, 1, failed());
    failed_create.end(R1, 1, EndKind::CreateFailed, ReleaseKind::None, 0);
    assert_holds(Invariant::ReleaseOnExit, &failed_create);
}

#[test]
fn stop_quiesces_names_new_work_after_stop_but_lets_a_release_through() {
    let mut script = Script::new();
    script.start(R1, 1);
    script.create(R1, 1);
    script.at(100).on(R1, EventKind::StopCalled);
    script.release(R1, 1, held(1, R1));
    script.end(R1, 1, EndKind::Stopped, ReleaseKind::Deleted, 0);
    assert_holds(Invariant::StopQuiesces, &script);
    script.start(R1, 2);
    let seq = script.create(R1, 2) - 1;
    let words = ["r1 sent a create", "after its stop() was called at t=100ms"];
    assert_broken(Invariant::StopQuiesces, &script, seq, &words);
}

#[test]
fn stop_joins_names_a_stop_returning_before_the_attempt_or_a_call_ended() {
    let mut open = Script::new();
    open.start(R1, 1);
    open.on(R1, EventKind::StopCalled);
    let seq = open.on(R1, EventKind::StopResolved);
    assert_broken(Invariant::StopJoins, &open, seq, &["had not ended"]);

    let mut pending = Script::new();
    pending.start(R1, 1);
    pending.send(R1, Request::Get { key: Key::Claim });
    pending.end(R1, 1, EndKind::Stopped, ReleaseKind::None, 0);
    pending.on(R1, EventKind::StopCalled);
    let seq = pending.on(R1, EventKind::StopResolved);
    assert_broken(
        Invariant::StopJoins,
        &pending,
        seq,
        &["its get sent at t=0ms"],
    );
}

#[test]
fn liveness_names_an_attempt_past_its_bound_and_a_stop_that_never_returned() {
    let mut script = Script::new();
    script.world(EventKind::Phase(Phase::Liveness));
    let seq = script.at(200).start(R1, 1);
    script.at(10_000);
    let Some(violation) = super::testkit::check_with(Invariant::Liveness, &config(), &script)
    else {
        panic!("an attempt open for 9.8 s passed a 5 s bound");
    };
    assert_eq!((violation.event.seq, violation.at_ms), (seq, 10_000));
    assert!(
        violation
            .sentence
            .contains("past its bound of 5000ms (deadline t=5200ms)")
    );

    let mut stop = Script::new();
    stop.world(EventKind::Phase(Phase::Liveness));
    let seq = stop.at(100).on(R2, EventKind::StopCalled);
    let words = ["r2's stop() was called at t=100ms"];
    assert_broken_with(Invariant::Liveness, &config(), &stop, seq, &words);
}

// --- the store forgets: what no worker can prevent is excused, nothing else --------------

/// r1 claims at 0 (until 1002) and starts its job.
fn r1_working() -> Script {
    let mut script = Script::new();
    script.start(R1, 1);
    script.create(R1, 1);
    job_started(&mut script, R1);
    script
}

/// r1 at work; at 200 the store evicts its claim.
fn evicted() -> Script {
    let mut script = r1_working();
    script
        .at(200)
        .forgot(Key::Claim, Forgetting::Eviction, Some(held(1, R1)));
    script
}

/// r1 at work renews at 500 (until 1502); at 600 a failover undoes that renewal: its claim
/// runs out at 1002 again.
fn renewal_undone() -> Script {
    let mut script = r1_working();
    script.at(500).renew(R1, 1);
    script
        .at(600)
        .forgot(Key::Claim, Forgetting::Failover, Some(held(1, R1)));
    script
}

#[test]
fn effects_under_claim_excuses_a_step_only_until_the_attempt_learns_its_claim_was_forgotten() {
    // Removing the excuse fails this: the step lands on an absent key.
    let mut unaware = evicted();
    unaware.at(300).note(R1, Note::JobStep { step: 1 });
    assert_holds(Invariant::EffectsUnderClaim, &unaware);

    // After the renewal said so, no step (an excuse that outlived the answer fails this).
    let mut learned = evicted();
    learned.at(400).renew_refused(R1, 1, None);
    let seq = learned.note(R1, Note::JobStep { step: 1 });
    let words = ["renewal found the claim gone or failed"];
    assert_broken(Invariant::EffectsUnderClaim, &learned, seq, &words);

    // Past the end the forgotten claim would have had anyway (an excuse without that end
    // fails this).
    let mut late = evicted();
    let seq = late.at(1_100).note(R1, Note::JobStep { step: 1 });
    let words = ["with renewal on, the store held nothing"];
    assert_broken(Invariant::EffectsUnderClaim, &late, seq, &words);

    // Another attempt's step is not excused by r1's forgotten claim: r2's claim was deleted
    // by r3, not forgotten by the store.
    let mut other = evicted();
    other.at(250).start(R2, 1);
    other.create(R2, 2);
    job_started(&mut other, R2);
    other.at(280).blind_delete(R3, held(2, R2));
    let seq = other.at(300).note(R2, Note::JobStep { step: 1 });
    assert_broken(Invariant::EffectsUnderClaim, &other, seq, &["held nothing"]);
}

#[test]
fn effects_under_claim_excuses_a_renewal_a_failover_undid_up_to_the_end_it_would_have_had() {
    let mut script = renewal_undone();
    script.at(1_100).note(R1, Note::JobStep { step: 1 });
    assert_holds(Invariant::EffectsUnderClaim, &script);
    let seq = script.at(1_502).note(R1, Note::JobStep { step: 2 });
    let words = ["the store held nothing"];
    assert_broken(Invariant::EffectsUnderClaim, &script, seq, &words);
}

#[test]
fn job_under_claim_excuses_a_start_the_store_forgot_the_claim_before_and_nothing_else() {
    let forgotten_before_start = |at_ms: u64| {
        let mut script = Script::new();
        script.start(R1, 1);
        script.create(R1, 1);
        script.forgot(Key::Claim, Forgetting::Restart, Some(held(1, R1)));
        script.at(at_ms);
        script
    };
    // Removing the excuse fails this: the key is absent at the start.
    let mut unaware = forgotten_before_start(10);
    job_started(&mut unaware, R1);
    assert_holds(Invariant::JobUnderClaim, &unaware);

    let mut late = forgotten_before_start(1_100);
    let seq = job_started(&mut late, R1);
    assert_broken(
        Invariant::JobUnderClaim,
        &late,
        seq,
        &["the key was absent"],
    );

    let mut learned = forgotten_before_start(10);
    learned.renew_refused(R1, 1, None);
    let seq = job_started(&mut learned, R1);
    assert_broken(
        Invariant::JobUnderClaim,
        &learned,
        seq,
        &["the key was absent"],
    );

    let mut other = forgotten_before_start(10);
    other.start(R2, 1);
    other.create_answered(R2, 2, crate::events::Answer::Created);
    let seq = job_started(&mut other, R2);
    assert_broken(Invariant::JobUnderClaim, &other, seq, &["r2's attempt 1"]);
}

#[test]
fn no_third_worker_counts_a_forgotten_claim_as_run_out_at_the_forgetting_and_no_earlier() {
    // Eviction at 200, the rival's claim at 400: explained (removing the rule fails this).
    let mut evicted_first = evicted();
    evicted_first.at(400).start(R2, 1);
    evicted_first.create(R2, 2);
    job_started(&mut evicted_first, R2);
    assert_holds(Invariant::NoThirdWorker, &evicted_first);

    // A forgotten holder record ends no claim.
    let mut holder_key = r1_working();
    holder_key
        .at(200)
        .forgot(Key::Holder, Forgetting::Restart, Some(held(1, R1)));
    holder_key.at(400).start(R2, 1);
    holder_key.create(R2, 2);
    let seq = job_started(&mut holder_key, R2);
    let words = ["until t=1002ms", "still in the store"];
    assert_broken(Invariant::NoThirdWorker, &holder_key, seq, &words);

    // A failover that undid r1's renewal at 600 ends r1's claim at 1002, not at 600.
    let undone = |rival_ms: u64| {
        let mut script = renewal_undone();
        script.at(rival_ms).start(R2, 1);
        script.create(R2, 2);
        let seq = job_started(&mut script, R2);
        (script, seq)
    };
    let (after_end, _) = undone(1_100);
    assert_holds(Invariant::NoThirdWorker, &after_end);
    let (before_end, seq) = undone(800);
    let words = ["would have held the key until t=1002ms"];
    assert_broken(Invariant::NoThirdWorker, &before_end, seq, &words);
}
