//! The one choice source.
//!
//! Terminology:
//! - *draw*: one nondeterministic decision, answered by a value in `0..=max`.
//! - *choice*: a recorded draw (`kind`, `value`, `max`). Value 0 is always the simplest
//!   outcome: the first ready task, the lowest value in a range, no fault.
//! - *feed*: where values come from: a ChaCha stream seeded by a `u64`, or a recorded
//!   sequence of values (replay). A replay that runs out answers 0 (the simplest value),
//!   and a recorded value above `max` is clamped to `max`, so any edited sequence still runs.
//!
//! Draws with `max == 0` carry no information and are neither made nor recorded. That keeps
//! recorded sequences short and makes shrinking work on real decisions only.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// What a draw decided. Only used for reading and for statistics; replay uses values alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChoiceKind {
    /// Which ready task runs next (index into the ready list, oldest first).
    Schedule,
    /// A PCT task priority (lower runs first).
    Priority,
    /// A PCT priority change point (a step number).
    ChangePoint,
    /// A value in a range, offset from the range's lower end.
    Range,
    /// A biased coin; 1 means the unlikely, interesting side (a fault).
    Coin,
}

impl ChoiceKind {
    /// Short stable name used in choice files.
    pub fn name(self) -> &'static str {
        match self {
            ChoiceKind::Schedule => "schedule",
            ChoiceKind::Priority => "priority",
            ChoiceKind::ChangePoint => "change-point",
            ChoiceKind::Range => "range",
            ChoiceKind::Coin => "coin",
        }
    }

    /// Inverse of [`ChoiceKind::name`].
    pub fn from_name(name: &str) -> Option<ChoiceKind> {
        [
            ChoiceKind::Schedule,
            ChoiceKind::Priority,
            ChoiceKind::ChangePoint,
            ChoiceKind::Range,
            ChoiceKind::Coin,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

/// One recorded draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Choice {
    pub kind: ChoiceKind,
    /// The value drawn, `0..=max`; 0 is the simplest.
    pub value: u64,
    /// The largest value this draw could take.
    pub max: u64,
}

/// Where draw values come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Feed {
    /// A ChaCha8 stream from this seed.
    Seed(u64),
    /// A recorded sequence of values, consumed in order.
    Replay(Vec<u64>),
}

enum Source {
    Seeded(Box<ChaCha8Rng>),
    Replay { values: Vec<u64>, next: usize },
}

/// The single object every nondeterministic decision of a run goes through.
pub struct ChoiceSource {
    source: Source,
    recorded: Option<Vec<Choice>>,
    draws: u64,
    hash: u64,
}

impl std::fmt::Debug for ChoiceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChoiceSource")
            .field("draws", &self.draws)
            .finish_non_exhaustive()
    }
}

impl ChoiceSource {
    /// A source fed by `feed`; `record` keeps every choice for replay and shrinking.
    pub fn new(feed: Feed, record: bool) -> ChoiceSource {
        let source = match feed {
            Feed::Seed(seed) => Source::Seeded(Box::new(ChaCha8Rng::seed_from_u64(seed))),
            Feed::Replay(values) => Source::Replay { values, next: 0 },
        };
        ChoiceSource {
            source,
            recorded: record.then(Vec::new),
            draws: 0,
            hash: 0,
        }
    }

    /// Draws a value in `0..=max`. A draw with `max == 0` is not made and answers 0.
    pub fn draw(&mut self, kind: ChoiceKind, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let value = match &mut self.source {
            Source::Seeded(rng) => uniform_at_most(rng.next_u64(), max),
            Source::Replay { values, next } => {
                let value = values.get(*next).copied().unwrap_or(0).min(max);
                *next += 1;
                value
            }
        };
        // invariant: every answer lies within the draw's declared bound.
        debug_assert!(value <= max);
        self.draws += 1;
        self.hash = crate::hash::mix(self.hash, value ^ (max << 1));
        if let Some(recorded) = &mut self.recorded {
            recorded.push(Choice { kind, value, max });
        }
        value
    }

    /// A coin that lands on the interesting side (true) with probability `p`.
    /// `p <= 0` and `p >= 1` are certain and draw nothing.
    pub fn coin(&mut self, p: f64) -> bool {
        if p.is_nan() || p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        let value = match &mut self.source {
            Source::Seeded(rng) => u64::from(rng.next_u64() < threshold(p)),
            Source::Replay { values, next } => {
                let value = values.get(*next).copied().unwrap_or(0).min(1);
                *next += 1;
                value
            }
        };
        self.draws += 1;
        self.hash = crate::hash::mix(self.hash, value ^ 2);
        if let Some(recorded) = &mut self.recorded {
            recorded.push(Choice {
                kind: ChoiceKind::Coin,
                value,
                max: 1,
            });
        }
        value == 1
    }

    /// Number of draws made so far.
    pub fn draws(&self) -> u64 {
        self.draws
    }

    /// Running hash of every value drawn.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The choices recorded so far (empty when recording is off).
    pub fn recorded(&self) -> &[Choice] {
        self.recorded.as_deref().unwrap_or(&[])
    }

    /// Takes the recorded choices out of the source.
    pub fn take_recorded(&mut self) -> Vec<Choice> {
        self.recorded
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// For a replay feed: how many recorded values were consumed, and how many were given.
    pub fn replay_position(&self) -> Option<(usize, usize)> {
        match &self.source {
            Source::Replay { values, next } => Some((*next, values.len())),
            Source::Seeded(_) => None,
        }
    }
}

/// Maps a uniform `u64` onto `0..=max` by a widening multiply (bias below 2^-64 per value).
fn uniform_at_most(raw: u64, max: u64) -> u64 {
    let span = u128::from(max) + 1;
    let value = ((u128::from(raw) * span) >> 64) as u64;
    debug_assert!(value <= max);
    value
}

/// The `u64` threshold below which a uniform draw counts as "true" for probability `p`.
fn threshold(p: f64) -> u64 {
    debug_assert!(p > 0.0 && p < 1.0);
    // 2^64 * p, computed in f64; the rounding error is far below any probability we use.
    (p * 18_446_744_073_709_551_616.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_draws_respect_bounds_and_are_recorded() {
        let mut source = ChoiceSource::new(Feed::Seed(1), true);
        for max in [1u64, 2, 7, 1000, u64::MAX] {
            let value = source.draw(ChoiceKind::Range, max);
            assert!(value <= max);
        }
        assert_eq!(source.recorded().len(), 5);
        assert_eq!(source.draw(ChoiceKind::Range, 0), 0);
        assert_eq!(
            source.recorded().len(),
            5,
            "a draw with one possible answer is not recorded"
        );
    }

    #[test]
    fn replay_clamps_and_runs_out_into_zero() {
        let mut source = ChoiceSource::new(Feed::Replay(vec![9, 1]), true);
        assert_eq!(
            source.draw(ChoiceKind::Range, 3),
            3,
            "9 is clamped to the bound 3"
        );
        assert!(source.coin(0.5));
        assert_eq!(
            source.draw(ChoiceKind::Schedule, 10),
            0,
            "past the end: simplest value"
        );
        assert!(!source.coin(0.5));
        assert_eq!(source.replay_position(), Some((4, 2)));
    }

    #[test]
    fn certain_coins_draw_nothing() {
        let mut source = ChoiceSource::new(Feed::Seed(3), true);
        assert!(!source.coin(0.0));
        assert!(source.coin(1.0));
        assert!(!source.coin(f64::NAN));
        assert_eq!(source.draws(), 0);
    }

    #[test]
    fn coin_frequency_follows_probability() {
        let mut source = ChoiceSource::new(Feed::Seed(11), false);
        let heads = (0..20_000).filter(|_| source.coin(0.25)).count();
        assert!((4_500..5_500).contains(&heads), "heads = {heads}");
    }

    #[test]
    fn kind_names_round_trip() {
        for kind in [
            ChoiceKind::Schedule,
            ChoiceKind::Coin,
            ChoiceKind::ChangePoint,
        ] {
            assert_eq!(ChoiceKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(ChoiceKind::from_name("dice"), None);
    }
}
