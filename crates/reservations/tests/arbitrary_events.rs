//! The checkers and the coverage on arbitrary event streams: none panics, whatever order or
//! nonsense the events come in (a checker reads recorded runs of real workers too), and a
//! checker set reports the first violation of its checkers.

use leasesim_events::{Flow, Phase, ReplicaId, Stamped};
use leasesim_invariants::{Checker, Facts as _, Violation};
use leasesim_reservations::Reservations;
use leasesim_reservations::checkers::{
    AnyChecker, CheckConfig, Coverage, Facts, Invariant, WORKER_EVENTS, all_checkers, track::Desk,
    track::Ledger,
};
use leasesim_reservations::events::{
    Answer, Applied, ClassView, EndView, Event, EventKind, Failure, IdList, LetterView, Note, Op,
    OutcomeView, ReasonView, ReportView, Request, StatusView,
};

/// A small deterministic sequence.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }

    fn id(&mut self) -> u32 {
        self.below(6) as u32
    }

    fn ids(&mut self) -> IdList {
        let n = self.below(4) as usize;
        let ids: Vec<u32> = (0..n).map(|_| self.id()).collect();
        IdList::of(&ids)
    }

    fn now(&mut self) -> Option<u64> {
        (self.below(2) == 0).then(|| 1_000_000_000 + self.below(5_000))
    }
}

fn request(rng: &mut Lcg) -> Request {
    let (id, token) = (rng.id(), rng.below(4));
    match rng.below(8) {
        0 => Request::Claim {
            limit: rng.below(10) as u32,
            now: rng.now(),
            token,
            claim_for_ms: 5_000,
        },
        1 => Request::Expire { id, now: rng.now() },
        2 => Request::Release { id, token },
        3 => Request::DeadLetter {
            letter: LetterView {
                id,
                reason: ReasonView::BudgetExhausted,
                attempts: rng.below(4) as u32,
                first_seen_ms: rng.below(10),
                last_error: ClassView::Timeout,
                replay_id: Some(id),
            },
        },
        4 => Request::ExpireById { id },
        5 => Request::ReadDue {
            limit: 3,
            now: None,
        },
        6 => Request::WriteClaim {
            id,
            token,
            claim_for_ms: 100,
        },
        _ => Request::ReleaseAny { id },
    }
}

fn applied(rng: &mut Lcg) -> Applied {
    let (id, token) = (rng.id(), rng.below(4));
    match rng.below(9) {
        0 => Applied::Claimed {
            ids: rng.ids(),
            token,
            until_ms: 1_000_000_000 + rng.below(9_000),
        },
        1 => Applied::Expired {
            id,
            hold_until_ms: 1_000_000_000 + rng.below(5_000),
        },
        2 => Applied::AlreadyDone { id },
        3 => Applied::NotEligible {
            id,
            status: StatusView::Consumed,
            hold_until_ms: 0,
        },
        4 => Applied::Released {
            id,
            token,
            freed: rng.below(2) == 0,
        },
        5 => Applied::Parked { id },
        6 => Applied::ExpiredById {
            id,
            was: StatusView::Held,
        },
        7 => Applied::ClaimWritten {
            id,
            token,
            until_ms: 1_000_000_000 + rng.below(9_000),
            replaced: None,
        },
        _ => Applied::ReleasedAny {
            id,
            freed: Some(token),
        },
    }
}

fn answer(rng: &mut Lcg) -> Answer {
    match rng.below(6) {
        0 => Answer::Claimed {
            ids: rng.ids(),
            until_ms: 0,
        },
        1 => Answer::Expire(OutcomeView::Expired),
        2 => Answer::Expire(OutcomeView::NotEligible),
        3 => Answer::Failed(Failure::Timeout),
        4 => Answer::Failed(Failure::Invalid),
        _ => Answer::Released,
    }
}

fn note(rng: &mut Lcg) -> Note {
    let id = rng.id();
    match rng.below(5) {
        0 => Note::Placed {
            id,
            hold_until_ms: 1_000_000_000 + rng.below(5_000),
            malformed: false,
        },
        1 => Note::Consumed {
            id,
            hold_until_ms: 0,
        },
        2 => Note::RunStarted { run: 1 },
        3 => Note::Killed,
        _ => Note::RunEnded {
            run: 1,
            report: ReportView {
                end: EndView::Stopped,
                polls: 0,
                claim_errors: 0,
                claimed: 0,
                expired: 0,
                already_done: 0,
                not_eligible: 0,
                retries: 0,
                dead_letters: 0,
                dead_letter_errors: 0,
                release_errors: 0,
                abandoned: 0,
                max_claim_age_ms: 0,
            },
        },
    }
}

fn kind(rng: &mut Lcg, call: u64) -> EventKind {
    let ops = [Op::Claim, Op::Expire, Op::Release, Op::DeadLetter];
    match rng.below(12) {
        0 | 1 => EventKind::Call {
            call,
            request: request(rng),
        },
        2 | 3 => EventKind::Applied {
            call,
            applied: applied(rng),
        },
        4 | 5 => EventKind::Answered {
            call,
            op: ops[rng.below(4) as usize],
            answer: answer(rng),
        },
        6 => EventKind::ClockRead {
            now_ms: 1_000_000_000 + rng.below(9_000),
        },
        7 => EventKind::TimerSet {
            duration_ms: rng.below(3_000),
        },
        8 => [
            EventKind::StopCalled,
            EventKind::StopResolved,
            EventKind::Restarted,
        ][rng.below(3) as usize],
        9 => EventKind::Phase(
            [Phase::Safety, Phase::Liveness, Phase::Shutdown, Phase::End][rng.below(4) as usize],
        ),
        10 => {
            let op = ops[rng.below(4) as usize];
            match rng.below(2) {
                0 => EventKind::Rejected { call, op },
                _ => EventKind::RequestLost { call, op },
            }
        }
        _ => EventKind::Note(note(rng)),
    }
}

fn stream(seed: u64, len: usize) -> Vec<Stamped<Event>> {
    let mut rng = Lcg(seed);
    let mut at_ms = 0;
    (0..len)
        .map(|seq| {
            at_ms += rng.below(700);
            let call = rng.below(8);
            let kind = kind(&mut rng, call);
            let replica = (rng.below(4) != 0).then(|| ReplicaId(rng.below(3) as u16));
            Stamped {
                seq: seq as u64,
                at_ms,
                event: Event { replica, kind },
            }
        })
        .collect()
}

/// Feeds `event` to `checker` alone, with facts of its own kept as a set keeps them (entered
/// before the checker reads the event, left after, whether or not it reads it).
fn alone(
    checker: &mut AnyChecker,
    facts: &mut Facts,
    event: &Stamped<Event>,
) -> Option<Violation<Reservations>> {
    facts.enter(event);
    let verdict = match checker.wants(&event.event.kind) {
        true => checker.on_event(event, facts),
        false => None,
    };
    facts.leave(event);
    verdict
}

#[test]
fn no_checker_and_no_coverage_panics_on_arbitrary_streams() {
    let config = CheckConfig {
        due_bound_ms: 3_000,
        ..CheckConfig::default()
    };
    let mut violations = 0;
    for seed in 0..300 {
        let events = stream(seed, 300);
        for invariant in Invariant::ALL {
            let mut checker = AnyChecker::new(invariant, &config);
            let mut facts = Facts::default();
            for event in &events {
                let verdict = alone(&mut checker, &mut facts, event);
                violations += usize::from(verdict.is_some());
            }
            violations += usize::from(
                checker
                    .finish(events.last().map_or(0, |e| e.at_ms), &facts)
                    .is_some(),
            );
        }
        let mut coverage = Coverage::new();
        events.iter().for_each(|event| coverage.on_event(event));
    }
    assert!(
        violations > 1_000,
        "arbitrary streams break invariants: {violations}"
    );
}

#[test]
fn a_set_reports_the_first_violation_among_its_checkers() {
    let config = CheckConfig::default();
    for seed in 0..50 {
        let events = stream(seed, 200);
        // Each checker alone: its first violation. The set's is the earliest event's, and on
        // one event the first invariant in the system's order.
        let first = Invariant::ALL
            .iter()
            .filter_map(|&invariant| {
                let mut checker = AnyChecker::new(invariant, &config);
                let mut facts = Facts::default();
                let found = events
                    .iter()
                    .find_map(|e| alone(&mut checker, &mut facts, e));
                found.map(|v| (v.event.seq, invariant))
            })
            .min();
        let mut set = all_checkers(&config);
        let halted = events
            .iter()
            .position(|event| set.on_event(event) == Flow::Halt);
        let found = set.violation().map(|v| (v.event.seq, v.invariant));
        assert_eq!(found, first, "seed {seed}");
        assert_eq!(halted.map(|at| at as u64), found.map(|(seq, _)| seq));
    }
}

/// The plumbing of the run's shared facts: at every event the desks (one per replica, fed
/// once per event after the checkers, worker-side events only) and the two views of the ledger
/// are those rebuilt from scratch here: a fresh desk fed every earlier worker-side event of that
/// replica, a fresh ledger fed every earlier event (before view) or every event up to this one
/// (after view). Quadratic, no state carried over; `Desk` and `Ledger` themselves are the
/// checkers' own (tested with them), so this checks what each view is fed and when.
#[test]
fn the_shared_desks_and_ledgers_are_what_each_checker_built_for_itself() {
    let rebuilt = |events: &[Stamped<Event>]| {
        let mut ledger = Ledger::default();
        events.iter().for_each(|event| ledger.observe(event));
        format!("{ledger:?}")
    };
    for seed in 0..40 {
        let events = stream(seed, 200);
        let mut facts = Facts::default();
        for (index, event) in events.iter().enumerate() {
            facts.enter(event);
            assert_eq!(format!("{:?}", facts.ledger()), rebuilt(&events[..index]));
            assert_eq!(
                format!("{:?}", facts.ledger_after()),
                rebuilt(&events[..=index])
            );
            if let Some(replica) = event.event.replica {
                let mut fresh = Desk::default();
                events[..index]
                    .iter()
                    .filter(|earlier| earlier.event.replica == Some(replica))
                    .filter(|earlier| earlier.event.kind.bit() & WORKER_EVENTS != 0)
                    .for_each(|earlier| fresh.observe(earlier));
                assert_eq!(
                    format!("{:?}", facts.desk(replica)),
                    format!("{fresh:?}"),
                    "seed {seed}, event {index}"
                );
            }
            facts.leave(event);
        }
    }
}
