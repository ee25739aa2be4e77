//! Each checker on hand-written streams: silent on a correct run, and breaking, at the event
//! and with the words expected, on a stream that breaks its invariant.

use super::testkit::{R1, R2, Script, assert_broken, assert_holds, config, letter, report, store};
use super::{Invariant, all_checkers};
use crate::events::{
    Answer, Applied, ClassView, EventKind, Failure, OutcomeView, Phase, ReasonView, Request,
    StatusView,
};
use crate::events::{EndView, IdList, Note};
use leasesim_events::Flow;

#[test]
fn a_correct_run_raises_nothing_in_any_checker() {
    let script = Script::correct_run();
    for invariant in Invariant::ALL {
        assert_holds(invariant, &script);
    }
    let mut set = all_checkers(&config());
    for event in &script.events {
        assert_eq!(set.on_event(event), Flow::Continue, "event #{}", event.seq);
    }
    assert_eq!(set.finish(10_000), None);
}

/// `h1` due at 0, claimed by r1 with token 1 at t=10.
fn claimed() -> Script {
    let mut s = Script::new();
    s.place(1, 0);
    s.at(10).claim(R1, 1, &[1]);
    s
}

#[test]
fn an_unguarded_transition_of_a_consumed_hold_breaks_consumed_never_expired() {
    let mut s = claimed();
    s.at(20).consume(1, 0);
    let call = s.send(R1, Request::ExpireById { id: 1 });
    let applied = Applied::ExpiredById {
        id: 1,
        was: StatusView::Consumed,
    };
    let seq = s.at(30).apply(R1, call, applied);
    let words = [
        "r1's expire_by_id expired h1 at t=30ms",
        "consumed it at t=20ms",
    ];
    assert_broken(Invariant::ConsumedNeverExpired, &s, seq, &words);
    assert_broken(
        Invariant::SingleTransition,
        &s,
        seq,
        &["had already become consumed at t=20ms"],
    );
}

#[test]
fn an_early_transition_breaks_expired_only_when_due_and_names_the_clock_passed() {
    let mut s = Script::new();
    s.place(1, 5_000);
    s.at(100).claim(R1, 1, &[1]);
    let request = Request::Expire {
        id: 1,
        now: Some(store(6_000)),
    };
    let call = s.send(R1, request);
    let expired = Applied::Expired {
        id: 1,
        hold_until_ms: store(5_000),
    };
    let seq = s.apply(R1, call, expired);
    let words = [
        "its deadline +5000ms was 4900ms later",
        "r1 passed its own clock +6000ms as now",
    ];
    assert_broken(Invariant::ExpiredOnlyWhenDue, &s, seq, &words);
}

#[test]
fn a_consume_after_the_transition_breaks_single_transition() {
    let mut s = claimed();
    s.expired(R1, 1, 0);
    let seq = s.at(20).consume(1, 0);
    let words = [
        "h1 became consumed at t=20ms (an agent consumed it)",
        "already become expired at t=10ms",
    ];
    assert_broken(Invariant::SingleTransition, &s, seq, &words);
    assert_holds(Invariant::ConsumedNeverExpired, &s);
}

#[test]
fn a_plain_claim_write_over_a_live_claim_breaks_exclusive_claim() {
    let mut s = claimed();
    let request = Request::WriteClaim {
        id: 1,
        token: 2,
        claim_for_ms: 5_000,
    };
    let call = s.at(20).send(R2, request);
    let written = Applied::ClaimWritten {
        id: 1,
        token: 2,
        until_ms: store(5_020),
        replaced: Some(1),
    };
    let seq = s.apply(R2, call, written);
    let words = [
        "r2's claim of h1 with token 2 was applied at t=20ms",
        "r1's claim with token 1",
    ];
    assert_broken(Invariant::ExclusiveClaim, &s, seq, &words);
    // Once the first claim has expired, a new claim is no violation.
    let mut later = claimed();
    later.at(6_000).claim(R2, 2, &[1]);
    assert_holds(Invariant::ExclusiveClaim, &later);
}

#[test]
fn a_tokenless_release_of_a_successors_claim_breaks_release_own_claim() {
    let mut s = claimed();
    s.at(6_000).claim(R2, 2, &[1]);
    let call = s.at(6_100).send(R1, Request::ReleaseAny { id: 1 });
    let freed = Applied::ReleasedAny {
        id: 1,
        freed: Some(2),
    };
    let seq = s.apply(R1, call, freed);
    let words = [
        "r1's release of h1 (sent for its claim by call #1",
        "freed r2's claim with token 2",
    ];
    assert_broken(Invariant::ReleaseOwnClaim, &s, seq, &words);
    // The same release with its token frees nothing, and breaks nothing.
    let mut fine = claimed();
    fine.at(6_000).claim(R2, 2, &[1]);
    fine.at(6_100).release(R1, 1, 1, false);
    assert_holds(Invariant::ReleaseOwnClaim, &fine);
}

#[test]
fn a_token_used_twice_breaks_fresh_claim_token() {
    let mut s = claimed();
    s.release(R1, 1, 1, true);
    let call = s.at(50).claim(R1, 1, &[]);
    let seq = s.call_seq(call);
    let words = [
        "r1 claimed with token 1 at t=50ms",
        "its own earlier claim had used that token",
    ];
    assert_broken(Invariant::FreshClaimToken, &s, seq, &words);
}

#[test]
fn a_claim_above_the_batch_or_for_another_duration_breaks_bounded_claim() {
    let mut s = Script::new();
    let request = |limit, claim_for_ms| Request::Claim {
        limit,
        now: None,
        token: 1,
        claim_for_ms,
    };
    let call = s.send(R1, request(9, 5_000));
    let seq = s.call_seq(call);
    assert_broken(
        Invariant::BoundedClaim,
        &s,
        seq,
        &["asked for 9, above the batch of 8"],
    );
    let mut long = Script::new();
    let call = long.send(R1, request(8, 60_000));
    let seq = long.call_seq(call);
    let words = ["claimed for 60000ms, not the configured 5000ms"];
    assert_broken(Invariant::BoundedClaim, &long, seq, &words);
}

#[test]
fn a_transition_without_a_claim_breaks_expire_claimed() {
    let mut s = Script::new();
    s.place(1, 0);
    let call = s.at(5).send(R1, Request::Expire { id: 1, now: None });
    let seq = s.call_seq(call);
    assert_broken(
        Invariant::ExpireClaimed,
        &s,
        seq,
        &["r1 sent a transition of h1 at t=5ms"],
    );
}

#[test]
fn a_claim_before_releasing_breaks_claim_released_and_so_does_a_wrong_token() {
    let mut s = claimed();
    s.expired(R1, 1, 0);
    let call = s.at(30).send(
        R1,
        Request::Claim {
            limit: 8,
            now: None,
            token: 2,
            claim_for_ms: 5_000,
        },
    );
    let seq = s.call_seq(call);
    let words = [
        "r1 sent its next claim at t=30ms",
        "had not released h1 (claimed with token 1",
    ];
    assert_broken(Invariant::ClaimReleased, &s, seq, &words);
    let mut wrong = claimed();
    let call = wrong.send(R1, Request::Release { id: 1, token: 9 });
    let seq = wrong.call_seq(call);
    let words = ["r1 released h1 with token 9", "claimed it with token 1"];
    assert_broken(Invariant::ClaimReleased, &wrong, seq, &words);
    let mut killed = claimed();
    killed.on(R1, EventKind::Note(crate::events::Note::Killed));
    killed.at(40).claim(R1, 2, &[]);
    assert_holds(Invariant::ClaimReleased, &killed);
}

#[test]
fn claiming_again_at_once_after_an_empty_claim_breaks_idle_pause() {
    let mut s = Script::new();
    s.claim(R1, 1, &[]);
    let call = s.at(5).claim(R1, 2, &[]);
    let seq = s.call_seq(call);
    let words = ["r1 claimed again at t=5ms without a pause", "1000..2000ms"];
    assert_broken(Invariant::IdlePause, &s, seq, &words);
    let mut short = Script::new();
    short.claim(R1, 1, &[]);
    short.pause(R1, 300);
    let call = short.at(300).claim(R1, 2, &[]);
    let seq = short.call_seq(call);
    assert_broken(
        Invariant::IdlePause,
        &short,
        seq,
        &["after a pause of 300ms"],
    );
}

fn conflicted() -> Script {
    let mut s = claimed();
    let not_eligible = Applied::NotEligible {
        id: 1,
        status: StatusView::Consumed,
        hold_until_ms: store(0),
    };
    s.expire(
        R1,
        1,
        not_eligible,
        Answer::Expire(OutcomeView::NotEligible),
    );
    s
}

#[test]
fn retrying_a_conflict_breaks_conflict_not_retried_and_bounded_retry() {
    let mut s = conflicted();
    s.pause(R1, 1_000);
    let call = s.at(1_010).send(R1, Request::Expire { id: 1, now: None });
    let seq = s.call_seq(call);
    let words = ["r1 attempted h1 again at t=1010ms", "answered not-eligible"];
    assert_broken(Invariant::ConflictNotRetried, &s, seq, &words);
    assert_broken(
        Invariant::BoundedRetry,
        &s,
        seq,
        &["attempt 1 had answered not-eligible"],
    );
}

#[test]
fn a_retry_without_its_backoff_or_past_the_budget_breaks_bounded_retry() {
    let mut s = claimed();
    s.failed(R1, 1, Failure::Timeout);
    s.pause(R1, 100);
    let call = s.at(110).send(R1, Request::Expire { id: 1, now: None });
    let seq = s.call_seq(call);
    let words = [
        "r1 sent attempt 2 of h1",
        "it paused 100ms after attempt 1, and the backoff is 1000..1500ms",
    ];
    assert_broken(Invariant::BoundedRetry, &s, seq, &words);
    let mut over = claimed();
    for (at, pause) in [(10, 1_000), (1_010, 2_000), (3_010, 4_000)] {
        over.at(at).failed(R1, 1, Failure::Timeout);
        over.pause(R1, pause);
    }
    let call = over
        .at(7_010)
        .send(R1, Request::Expire { id: 1, now: None });
    let seq = over.call_seq(call);
    let words = [
        "r1 sent attempt 4 of h1",
        "the budget is 3 attempts and 3 were made",
    ];
    assert_broken(Invariant::BoundedRetry, &over, seq, &words);
}

#[test]
fn releasing_after_a_transient_error_with_attempts_left_breaks_transient_retried() {
    let mut s = claimed();
    s.failed(R1, 1, Failure::Rejected);
    let call = s.at(20).send(R1, Request::Release { id: 1, token: 1 });
    let seq = s.call_seq(call);
    let words = [
        "r1 released h1 at t=20ms after attempt 1 answered error: connection",
        "2 of 3 attempts left",
    ];
    assert_broken(Invariant::TransientRetried, &s, seq, &words);
    let mut stopped = claimed();
    stopped.failed(R1, 1, Failure::Rejected);
    stopped.on(R1, EventKind::StopCalled);
    stopped.release(R1, 1, 1, true);
    assert_holds(Invariant::TransientRetried, &stopped);
}

#[test]
fn a_missing_or_wrong_dead_letter_breaks_dead_letter_record() {
    let mut s = claimed();
    s.failed(R1, 1, Failure::Invalid);
    let call = s.at(20).send(R1, Request::Release { id: 1, token: 1 });
    let seq = s.call_seq(call);
    let words = [
        "r1 released h1 at t=20ms after giving up on it",
        "without recording a dead letter",
    ];
    assert_broken(Invariant::DeadLetterRecord, &s, seq, &words);
    let mut wrong = claimed();
    wrong.failed(R1, 1, Failure::Invalid);
    let reason = ReasonView::NotRetryable(ClassView::Invalid);
    let call = wrong.send(
        R1,
        Request::DeadLetter {
            letter: letter(1, reason, 2, ClassView::Invalid, 10),
        },
    );
    let seq = wrong.call_seq(call);
    assert_broken(
        Invariant::DeadLetterRecord,
        &wrong,
        seq,
        &["it counts 2 attempts, not 1"],
    );
    let mut right = claimed();
    right.failed(R1, 1, Failure::Invalid);
    right.letter(R1, letter(1, reason, 1, ClassView::Invalid, 10));
    right.release(R1, 1, 1, true);
    assert_holds(Invariant::DeadLetterRecord, &right);
    let mut late = claimed();
    late.failed(R1, 1, Failure::Invalid);
    let call = late.send(
        R1,
        Request::DeadLetter {
            letter: letter(1, reason, 1, ClassView::Invalid, 11),
        },
    );
    let seq = late.call_seq(call);
    assert_broken(
        Invariant::DeadLetterRecord,
        &late,
        seq,
        &["first-seen time"],
    );
}

#[test]
fn new_work_after_stop_breaks_stop_quiesces_and_an_open_run_breaks_stop_joins() {
    let mut s = Script::new();
    s.run_started(R1);
    s.on(R1, EventKind::StopCalled);
    let call = s.at(10).claim(R1, 1, &[]);
    let seq = s.call_seq(call);
    assert_broken(
        Invariant::StopQuiesces,
        &s,
        seq,
        &["r1 sent claim_expired limit=8"],
    );
    let mut open = Script::new();
    open.run_started(R1);
    open.on(R1, EventKind::StopCalled);
    let seq = open.at(10).on(R1, EventKind::StopResolved);
    let words = [
        "r1's stop() returned at t=10ms",
        "its run started at t=0ms had not ended",
    ];
    assert_broken(Invariant::StopJoins, &open, seq, &words);
}

#[test]
fn a_report_that_miscounts_breaks_run_report() {
    let mut s = Script::new();
    s.place(1, 0);
    s.run_started(R1);
    s.at(10).claim(R1, 1, &[1]);
    s.expired(R1, 1, 0);
    s.release(R1, 1, 1, true);
    s.on(R1, EventKind::StopCalled);
    let seq = s.run_ended(R1, report(1, 1, [0, 1, 0], 0, 0));
    assert_broken(
        Invariant::RunReport,
        &s,
        seq,
        &["r1's run ended at t=10ms", "it reports"],
    );
}

#[test]
fn a_second_run_that_is_not_refused_breaks_run_report() {
    let second = |end| EventKind::Note(Note::SecondRun { run: 1, end });
    let mut refused = Script::new();
    refused.run_started(R1);
    refused.at(5).on(R1, second(EndView::AlreadyRunning));
    assert_holds(Invariant::RunReport, &refused);
    let mut ran = Script::new();
    ran.run_started(R1);
    let seq = ran.at(5).on(R1, second(EndView::Stopped));
    let words = [
        "r1's second run() while run() 1 was active ended at t=5ms as Stopped",
        "refuses another at once",
    ];
    assert_broken(Invariant::RunReport, &ran, seq, &words);
}

#[test]
fn a_due_hold_left_past_the_bound_and_a_stop_that_never_returns_break_liveness() {
    let mut s = Script::new();
    s.place(1, 0);
    s.at(1_000).world(EventKind::Phase(Phase::Liveness));
    s.at(2_900).claim(R2, 1, &[]);
    let seq = s.at(3_100).world(EventKind::Phase(Phase::Shutdown));
    let words = [
        "h1, due at +0ms, was still held at t=3100ms",
        "2000ms after faults healed at t=1000ms",
    ];
    assert_broken(Invariant::Liveness, &s, seq, &words);
    let mut stuck = Script::new();
    stuck.on(R1, EventKind::StopCalled);
    let seq = stuck.at(500).world(EventKind::Phase(Phase::End));
    assert_broken(
        Invariant::Liveness,
        &stuck,
        seq,
        &["r1's stop() called at t=0ms had not returned"],
    );
}

/// A claim request passing `now` (virtual ms on the store's clock) as its own clock.
fn claim_at(token: u64, now_ms: u64) -> Request {
    Request::Claim {
        limit: 8,
        now: Some(store(now_ms)),
        token,
        claim_for_ms: 5_000,
    }
}

#[test]
fn a_claim_or_transition_carrying_the_workers_clock_breaks_store_clock_decides() {
    let mut s = Script::new();
    s.place(1, 5_000);
    let call = s.at(100).send(R1, claim_at(1, 3_100));
    let seq = s.call_seq(call);
    let words = [
        "r1's claim at t=100ms carried its own clock +3100ms as now",
        "3000ms ahead of the store's +100ms",
    ];
    assert_broken(Invariant::StoreClockDecides, &s, seq, &words);
    let mut expire = claimed();
    let call = expire.at(20).send(
        R1,
        Request::Expire {
            id: 1,
            now: Some(store(15)),
        },
    );
    let seq = expire.call_seq(call);
    let words = ["r1's transition at t=20ms", "5ms behind the store's"];
    assert_broken(Invariant::StoreClockDecides, &expire, seq, &words);
    assert_holds(Invariant::StoreClockDecides, &Script::correct_run());
}

/// r1 is handed `h1` (due at 5 s) by a claim trusting a clock 3 s ahead; the transition
/// finds it held and not due; r1 releases it.
fn early_hold() -> Script {
    let mut s = Script::new();
    s.place(1, 5_000);
    let call = s.at(2_000).send(R1, claim_at(1, 5_000));
    let ids = IdList::of(&[1]);
    let until_ms = store(7_000);
    let claimed = Applied::Claimed {
        ids,
        token: 1,
        until_ms,
    };
    s.apply(R1, call, claimed);
    s.answer(
        R1,
        call,
        claim_at(1, 5_000),
        Answer::Claimed { ids, until_ms },
    );
    let refused = Applied::NotEligible {
        id: 1,
        status: StatusView::Held,
        hold_until_ms: store(5_000),
    };
    s.at(2_010)
        .expire(R1, 1, refused, Answer::Expire(OutcomeView::NotEligible));
    s.release(R1, 1, 1, true);
    s
}

#[test]
fn claiming_again_at_once_after_a_hold_not_yet_due_breaks_no_hot_reclaim() {
    let mut s = early_hold();
    let call = s.at(2_030).send(R1, claim_at(2, 5_030));
    let seq = s.call_seq(call);
    let words = [
        "r1 claimed again at t=2030ms with no pause of 1000ms or more",
        "found h1 held and not due until +5000ms (store clock +2010ms at t=2010ms)",
        "hot loop",
    ];
    assert_broken(Invariant::NoHotReclaim, &s, seq, &words);
    // A pause as long as the idle pause's base paces it; a short one does not.
    let mut short = early_hold();
    short.pause(R1, 999);
    let call = short.at(3_100).send(R1, claim_at(2, 6_100));
    let seq = short.call_seq(call);
    assert_broken(Invariant::NoHotReclaim, &short, seq, &["at t=3100ms"]);
    let mut paced = early_hold();
    paced.pause(R1, 1_000);
    paced.at(3_100).send(R1, claim_at(2, 6_100));
    assert_holds(Invariant::NoHotReclaim, &paced);
    // Once the hold is due, claiming again is work, not a hot loop.
    let mut due = early_hold();
    due.at(5_000).send(R1, claim_at(2, 8_000));
    assert_holds(Invariant::NoHotReclaim, &due);
    // Another replica's claim, and a hold found consumed, are not r1's hot loop.
    let mut other = early_hold();
    other.at(2_030).send(R2, claim_at(2, 2_030));
    assert_holds(Invariant::NoHotReclaim, &other);
    let mut consumed = claimed();
    consumed.at(20).consume(1, 0);
    let refused = Applied::NotEligible {
        id: 1,
        status: StatusView::Consumed,
        hold_until_ms: store(0),
    };
    consumed.expire(R1, 1, refused, Answer::Expire(OutcomeView::NotEligible));
    consumed.release(R1, 1, 1, true);
    consumed.claim(R1, 2, &[]);
    assert_holds(Invariant::NoHotReclaim, &consumed);
}

#[test]
fn a_construction_finding_breaks_construction() {
    use leasesim_invariants::{ConstructionFinding, ConstructionProblem};
    let mut s = claimed();
    assert_holds(Invariant::Construction, &s);
    let finding = ConstructionFinding {
        rule: "batch-positive",
        problem: ConstructionProblem::PastAccepted,
    };
    let seq = s.on(R1, EventKind::Note(Note::Construction(finding)));
    let words = [
        "building r1's worker",
        "accepted settings one step past rule batch-positive",
    ];
    assert_broken(Invariant::Construction, &s, seq, &words);
}

#[test]
fn every_invariant_has_a_breaking_case_here() {
    // The tests above cover every invariant; this list keeps that true when one is added.
    let covered = [
        Invariant::ConsumedNeverExpired,
        Invariant::ExpiredOnlyWhenDue,
        Invariant::SingleTransition,
        Invariant::ExclusiveClaim,
        Invariant::ReleaseOwnClaim,
        Invariant::FreshClaimToken,
        Invariant::BoundedClaim,
        Invariant::StoreClockDecides,
        Invariant::ExpireClaimed,
        Invariant::ClaimReleased,
        Invariant::IdlePause,
        Invariant::NoHotReclaim,
        Invariant::ConflictNotRetried,
        Invariant::BoundedRetry,
        Invariant::TransientRetried,
        Invariant::DeadLetterRecord,
        Invariant::StopQuiesces,
        Invariant::StopJoins,
        Invariant::RunReport,
        Invariant::Construction,
        Invariant::Liveness,
    ];
    assert_eq!(covered, Invariant::ALL);
}
