//! Properties every system's checkers must have, over arbitrary event streams (feature
//! `testkit`, for a system's tests).
//!
//! Terminology:
//! - *stream*: a sequence of events a generator made up, not one a run produced: replicas
//!   acting out of turn, answers without calls, notes at any moment. Checkers must judge
//!   such streams too: a real store or a recorded run can be as odd.
//! - *lone checker*: one checker with facts of its own that see every event (entered before
//!   the checker reads an event and left after, as a set keeps them), fed the events its
//!   interest mask asks for ([`Feed::Wanted`], as a set feeds it) or every event
//!   ([`Feed::Every`]: stricter, for checkers whose verdicts do not depend on being spared
//!   the events they do not want; a mask that hides an event the checker needs then shows).
//! - *agreement*: the set's verdict is the earliest verdict of its checkers run alone (at one
//!   event, the first in the system's order; `finish` verdicts after every event's): sharing
//!   facts, reader lists and halting change no verdict.
//!
//! [`arbitrary_streams`] runs the agreement over many generated streams, checks every
//! violation is well formed, and fails when no stream broke any invariant at all: a
//! generator that never reaches a violation proves nothing.

use std::cell::Cell;
use std::fmt::Debug;

use leasesim_events::{Event, Stamped};
use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use crate::{Checker, CheckerSet, Facts, InvariantName, Judged, Violation};

/// Which events a lone checker is fed (see *lone checker*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    Wanted,
    Every,
}

/// What [`arbitrary_streams`] saw over all its streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamTally<I> {
    /// How many streams were judged.
    pub streams: u32,
    /// How many streams the set found a violation in.
    pub violating_streams: u32,
    /// Each invariant some lone checker found broken, at least once.
    pub broken: Vec<I>,
}

/// The first violation of `checker` alone on `events` (see *lone checker*): its event's
/// sequence number (`u64::MAX` for a verdict of `finish`) and the violation.
pub fn alone<V: Judged, C: Checker<V>>(
    mut checker: C,
    feed: Feed,
    events: &[Stamped<Event<V>>],
    end_ms: u64,
) -> Option<(u64, Violation<V>)> {
    let mut facts = V::Facts::default();
    for event in events {
        facts.enter(event);
        let verdict = match feed == Feed::Every || checker.wants(&event.event.kind) {
            true => checker.on_event(event, &facts),
            false => None,
        };
        facts.leave(event);
        if let Some(violation) = verdict {
            return Some((event.seq, violation));
        }
    }
    checker
        .finish(end_ms, &facts)
        .map(|violation| (u64::MAX, violation))
}

/// Why `violation` of `invariant`, found on `events` by `end_ms`, is not well formed: it names
/// another invariant, its event is not one of the stream's, its context is not distinct
/// earlier events oldest first (at most six), its sentence is empty or more than one line, or
/// its time is outside the stream.
fn malformed<V: Judged>(
    violation: &Violation<V>,
    invariant: V::Invariant,
    events: &[Stamped<Event<V>>],
    end_ms: u64,
) -> Option<String> {
    let context = &violation.context;
    let problem = if violation.invariant != invariant {
        "it names another invariant"
    } else if !events.iter().any(|event| event.seq == violation.event.seq) {
        "its event is not one of the stream's"
    } else if context.len() > crate::MAX_CONTEXT
        || !context.windows(2).all(|pair| pair[0].seq < pair[1].seq)
        || !context
            .iter()
            .all(|earlier| earlier.seq < violation.event.seq)
    {
        "its context is not distinct earlier events, oldest first"
    } else if violation.sentence.is_empty() || violation.sentence.contains('\n') {
        "its sentence is not one line"
    } else if violation.at_ms < violation.event.at_ms || violation.at_ms > end_ms {
        "its time is outside the stream"
    } else {
        return None;
    };
    Some(format!("{}: {problem}: {violation}", invariant.name()))
}

/// Judges one stream (see *agreement*); the invariants its lone checkers found broken, and
/// whether the set found a violation.
pub fn agreement<V: Judged, C: Checker<V>>(
    events: &[Stamped<Event<V>>],
    feed: Feed,
    make: &impl Fn(V::Invariant) -> C,
) -> Result<(Vec<V::Invariant>, bool), String> {
    let end_ms = events.last().map_or(0, |event| event.at_ms) + 1;
    let mut first: Option<(u64, Violation<V>)> = None;
    let mut broken = Vec::new();
    for &invariant in V::Invariant::ALL {
        let Some((seq, violation)) = alone(make(invariant), feed, events, end_ms) else {
            continue;
        };
        if let Some(problem) = malformed(&violation, invariant, events, end_ms) {
            return Err(problem);
        }
        broken.push(invariant);
        if first.as_ref().is_none_or(|(earliest, _)| seq < *earliest) {
            first = Some((seq, violation));
        }
    }
    let mut set = CheckerSet::new(V::Invariant::ALL.iter().map(|&i| make(i)).collect());
    events.iter().for_each(|event| {
        set.on_event(event);
    });
    let verdict = set.finish(end_ms).cloned();
    let expected = first.map(|(_, violation)| violation);
    if verdict != expected {
        let words = |found: &Option<Violation<V>>| match found {
            Some(violation) => violation.to_string(),
            None => "none".to_owned(),
        };
        return Err(format!(
            "the set found {}, its checkers alone first found {}",
            words(&verdict),
            words(&expected)
        ));
    }
    Ok((broken, verdict.is_some()))
}

/// Runs [`agreement`] over `cases` streams from `streams`, drawn from a fixed seed (proptest
/// shrinks a failing one),
/// with the checkers `make` builds, each alone fed as `feed` says; panics on the first disagreement or malformed violation,
/// and when no stream broke any invariant. Returns the tally.
pub fn arbitrary_streams<V, C, S>(
    cases: u32,
    streams: S,
    feed: Feed,
    make: impl Fn(V::Invariant) -> C,
) -> StreamTally<V::Invariant>
where
    V: Judged,
    C: Checker<V>,
    S: Strategy<Value = Vec<Stamped<Event<V>>>>,
    Event<V>: Debug,
{
    // A fixed generator seed: the same streams on every machine and every run, so a test
    // that passes passes everywhere, and a failure reproduces.
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let violating = Cell::new(0u32);
    let broken = std::cell::RefCell::new(Vec::new());
    let result = runner.run(&streams, |events| {
        let (found, violated) = agreement(&events, feed, &make).map_err(TestCaseError::fail)?;
        violating.set(violating.get() + u32::from(violated));
        broken.borrow_mut().extend(found);
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    let mut broken = broken.into_inner();
    broken.sort_unstable();
    broken.dedup();
    let tally = StreamTally {
        streams: cases,
        violating_streams: violating.get(),
        broken,
    };
    // invariant: a generator that never breaks an invariant proves nothing about verdicts.
    assert!(
        tally.violating_streams > 0,
        "none of {cases} generated streams broke any invariant: {tally:?}"
    );
    tally
}
