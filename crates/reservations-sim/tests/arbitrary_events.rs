//! The checkers and the coverage on arbitrary event streams: none panics, whatever order or
//! nonsense the events come in (a checker reads recorded runs of real workers too), a checker
//! set reports the earliest verdict of its checkers alone, every report is well formed
//! (`leasesim_invariants::testkit`), and the shared facts are what each checker built alone.

use leasesim_events::{Phase, ReplicaId, Stamped};
use leasesim_invariants::testkit::{Feed, arbitrary_streams};
use leasesim_invariants::{ConstructionFinding, ConstructionProblem, Facts as _};
use leasesim_reservations::checkers::{
    AnyChecker, CheckConfig, Coverage, Facts, Invariant, WORKER_EVENTS, track::Desk, track::Ledger,
};
use leasesim_reservations::events::{
    Answer, Applied, ClassView, EndView, Event, EventKind, Failure, IdList, LetterView, Note, Op,
    OutcomeView, ReasonView, ReportView, Request, StatusView,
};
use proptest::prelude::*;

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
    match rng.below(6) {
        5 => Note::Construction(ConstructionFinding {
            rule: "idle-pause-positive",
            problem: ConstructionProblem::PastUnnamed,
        }),
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

/// Streams of up to 300 events; proptest shrinks a failing one to a shorter prefix of the same
/// sequence, or to a smaller seed.
fn streams() -> impl Strategy<Value = Vec<Stamped<Event>>> {
    (any::<u64>(), 1usize..300).prop_map(|(seed, len)| stream(seed, len))
}

#[test]
fn the_set_agrees_with_its_checkers_alone_and_every_report_is_well_formed() {
    let config = CheckConfig {
        due_bound_ms: 3_000,
        ..CheckConfig::default()
    };
    let tally = arbitrary_streams(300, streams(), Feed::Wanted, |invariant| {
        AnyChecker::new(invariant, &config)
    });
    // The generator reaches verdicts of most invariants, not only of one.
    assert!(tally.broken.len() >= Invariant::COUNT / 2, "{tally:?}");
}

proptest! {
    #[test]
    fn coverage_takes_any_stream(events in streams()) {
        let mut coverage = Coverage::new();
        events.iter().for_each(|event| coverage.on_event(event));
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
