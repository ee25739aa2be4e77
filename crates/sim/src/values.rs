//! The value types scenario files are made of, shared by every system's tables.
//!
//! Terminology:
//! - *location*: `file:line:column` of a value; every scenario error names one.
//! - *range*: a two-element array `[min, max]`, inclusive; each use draws a value in it.
//! - *probability*: a float in [0, 1]; 0 (the default of every fault) means off.
//! - *bound*: every number a scenario holds has a range a run can do (see [`MAX_SPAN_MS`] and
//!   its siblings); a value outside it is refused at its location with the range in words,
//!   never with a Rust type (`expected u16`).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer};

/// Where a value sits in a scenario file (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` in `text`.
    pub fn at(file: &str, text: &str, offset: usize) -> Location {
        let before = &text[..offset.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit('\n')
            .next()
            .map_or(0, |tail| tail.chars().count())
            + 1;
        Location {
            file: file.to_string(),
            line,
            column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Line 0 means "the file as a whole" (it could not be read).
        match self.line {
            0 => write!(f, "{}", self.file),
            line => write!(f, "{}:{}:{}", self.file, line, self.column),
        }
    }
}

/// A scenario file that could not be read or is invalid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub location: Location,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// The longest a phase of a run may last, and so any latency, delay, period or bound inside
/// one: one hour of virtual time. At a default scenario's event rate (about 14 events per
/// replica and virtual second), 64 replicas through the longest phases are about 6.5 million
/// events: some 4 s of one core, well under the 60 s watchdog and the run's step budget.
pub const MAX_SPAN_MS: u64 = 3_600_000;

/// The largest clock offset and the largest single clock jump: one day either way.
pub const MAX_CLOCK_SKEW_MS: i64 = 86_400_000;

/// The largest clock drift either way: half speed to one and a half times true speed (at
/// -1,000,000 ppm a clock would stand still).
pub const MAX_DRIFT_PPM: i64 = 500_000;

/// Reads a whole number in `min..=max`. TOML integers are 64-bit signed; what is expected is
/// said in words (`a whole number from 1 to 64`), never as a Rust type.
fn whole_in<'de, D: Deserializer<'de>>(
    deserializer: D,
    min: i64,
    max: i64,
) -> Result<i64, D::Error> {
    struct Whole {
        min: i64,
        max: i64,
    }
    impl Whole {
        fn check<E: de::Error>(&self, value: i128) -> Result<i64, E> {
            match i64::try_from(value) {
                Ok(v) if (self.min..=self.max).contains(&v) => Ok(v),
                _ => Err(E::custom(format!(
                    "must be a whole number from {} to {}, got {value}",
                    self.min, self.max
                ))),
            }
        }
    }
    impl de::Visitor<'_> for Whole {
        type Value = i64;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a whole number from {} to {}", self.min, self.max)
        }

        fn visit_i64<E: de::Error>(self, value: i64) -> Result<i64, E> {
            self.check(i128::from(value))
        }

        fn visit_u64<E: de::Error>(self, value: u64) -> Result<i64, E> {
            self.check(i128::from(value))
        }
    }
    deserializer.deserialize_i64(Whole { min, max })
}

/// A whole number in `MIN..=MAX` (counts and lengths a run can do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Whole<const MIN: u64, const MAX: u64>(u64);

impl<const MIN: u64, const MAX: u64> Whole<MIN, MAX> {
    /// `value`, which must lie in `MIN..=MAX`.
    pub const fn new(value: u64) -> Self {
        assert!(value >= MIN && value <= MAX, "a Whole outside its bounds");
        Whole(value)
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Whole<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // invariant: TOML integers are i64, so every bound used fits one.
        debug_assert!(MAX <= i64::MAX as u64 && MIN <= MAX);
        let value = whole_in(deserializer, MIN as i64, MAX as i64)?;
        Ok(Whole(value as u64))
    }
}

/// A whole number in `min..=max` as a plain field's value:
/// `#[serde(deserialize_with = "...")]` on a field of any integer type `T` the range fits.
pub fn whole_field<'de, D, T>(deserializer: D, min: i64, max: i64) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64>,
{
    let value = whole_in(deserializer, min, max)?;
    // invariant: callers give ranges their field type holds.
    T::try_from(value).map_err(|_| de::Error::custom("a bound wider than its field"))
}

/// A span of virtual time above zero and at most [`MAX_SPAN_MS`] (phases, bounds, timeouts,
/// lease lifetimes).
pub type SpanMs = Whole<1, MAX_SPAN_MS>;

/// What [`SpanMs`] was called before spans were bounded; systems' settings may still say it.
pub type Positive = SpanMs;

/// Reads `[min, max]` of whole numbers in `low..=high`, `min <= max`.
fn range_in<'de, D: Deserializer<'de>>(
    deserializer: D,
    low: i64,
    high: i64,
) -> Result<(i64, i64), D::Error> {
    struct Pair {
        low: i64,
        high: i64,
    }
    impl<'de> de::Visitor<'de> for Pair {
        type Value = (i64, i64);

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                f,
                "a range [min, max] of whole numbers from {} to {}",
                self.low, self.high
            )
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(i64, i64), A::Error> {
            let mut next = |index: usize| -> Result<i64, A::Error> {
                let bounded = seq.next_element_seed(Bounded(self.low, self.high))?;
                bounded.ok_or_else(|| de::Error::invalid_length(index, &self))
            };
            let (min, max) = (next(0)?, next(1)?);
            if seq.next_element::<de::IgnoredAny>()?.is_some() {
                return Err(de::Error::invalid_length(3, &self));
            }
            if min > max {
                return Err(de::Error::custom(format!(
                    "range [{min}, {max}]: min exceeds max"
                )));
            }
            Ok((min, max))
        }
    }
    /// One element, read like [`whole_in`] but saying it is a range's.
    struct Bounded(i64, i64);
    impl<'de> de::DeserializeSeed<'de> for Bounded {
        type Value = i64;

        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<i64, D::Error> {
            whole_in(deserializer, self.0, self.1)
        }
    }
    deserializer.deserialize_seq(Pair { low, high })
}

/// `[min, max]` of a tick period: at least 1 ms (a period of 0 would tick forever at one
/// instant), at most [`MAX_SPAN_MS`].
pub fn period_ms<'de, D: Deserializer<'de>>(deserializer: D) -> Result<MsRange, D::Error> {
    let (min, max) = range_in(deserializer, 1, MAX_SPAN_MS as i64)?;
    Ok(MsRange::new(min as u64, max as u64))
}

/// `[min, max]` of a clock drift, within ±[`MAX_DRIFT_PPM`].
pub fn drift_ppm<'de, D: Deserializer<'de>>(deserializer: D) -> Result<SignedRange, D::Error> {
    let (min, max) = range_in(deserializer, -MAX_DRIFT_PPM, MAX_DRIFT_PPM)?;
    Ok(SignedRange { min, max })
}

/// A probability in [0, 1].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Probability(f64);

impl Probability {
    /// Probability 0: the fault is off.
    pub const OFF: Probability = Probability(0.0);

    pub fn new(p: f64) -> Option<Probability> {
        (0.0..=1.0).contains(&p).then_some(Probability(p))
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Probability {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Number;
        impl de::Visitor<'_> for Number {
            type Value = f64;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a probability from 0 to 1")
            }

            fn visit_f64<E: de::Error>(self, value: f64) -> Result<f64, E> {
                Ok(value)
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<f64, E> {
                Ok(value as f64)
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<f64, E> {
                Ok(value as f64)
            }
        }
        let p = deserializer.deserialize_f64(Number)?;
        Probability::new(p)
            .ok_or_else(|| de::Error::custom(format!("probability {p} is outside [0, 1]")))
    }
}

/// An inclusive range `[min, max]` of milliseconds (or another unsigned unit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsRange {
    pub min: u64,
    pub max: u64,
}

impl MsRange {
    pub const fn new(min: u64, max: u64) -> MsRange {
        assert!(min <= max);
        MsRange { min, max }
    }
}

impl<'de> Deserialize<'de> for MsRange {
    /// `[min, max]` within `0..=MAX_SPAN_MS` (a latency, delay or window in one run).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (min, max) = range_in(deserializer, 0, MAX_SPAN_MS as i64)?;
        Ok(MsRange::new(min as u64, max as u64))
    }
}

/// An inclusive range `[min, max]` of signed values (clock offsets, jumps, drift).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignedRange {
    pub min: i64,
    pub max: i64,
}

impl<'de> Deserialize<'de> for SignedRange {
    /// `[min, max]` within ±[`MAX_CLOCK_SKEW_MS`] (clock offsets and jumps).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (min, max) = range_in(deserializer, -MAX_CLOCK_SKEW_MS, MAX_CLOCK_SKEW_MS)?;
        Ok(SignedRange { min, max })
    }
}

/// `[schedule]`: how each replica's driver paces its work (e.g. the pause between `run()`s).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleSection {
    /// Pause between the end of one `run()` and the next call.
    pub run_every_ms: MsRange,
}

impl Default for ScheduleSection {
    fn default() -> Self {
        ScheduleSection {
            run_every_ms: MsRange::new(200, 1_000),
        }
    }
}

/// A fault that may strike at every tick of a jittered period.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Periodic {
    pub probability: Probability,
    #[serde(deserialize_with = "period_ms")]
    pub every_ms: MsRange,
}

impl Default for Periodic {
    fn default() -> Self {
        Periodic {
            probability: Probability(0.0),
            every_ms: MsRange::new(1_000, 5_000),
        }
    }
}

/// `[faults.pause]`: process pauses.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PauseSection {
    pub probability: Probability,
    #[serde(deserialize_with = "period_ms")]
    pub every_ms: MsRange,
    pub duration_ms: MsRange,
}

impl Default for PauseSection {
    fn default() -> Self {
        PauseSection {
            probability: Probability(0.0),
            every_ms: MsRange::new(1_000, 5_000),
            duration_ms: MsRange::new(1_000, 6_000),
        }
    }
}

/// `[clocks.jump]`: sudden clock jumps.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JumpSection {
    pub probability: Probability,
    #[serde(deserialize_with = "period_ms")]
    pub every_ms: MsRange,
    pub by_ms: SignedRange,
}

impl Default for JumpSection {
    fn default() -> Self {
        JumpSection {
            probability: Probability(0.0),
            every_ms: MsRange::new(1_000, 5_000),
            by_ms: SignedRange {
                min: -2_000,
                max: 2_000,
            },
        }
    }
}

/// `[clocks]`: each replica's clock.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClockSection {
    pub offset_ms: SignedRange,
    #[serde(deserialize_with = "drift_ppm")]
    pub drift_ppm: SignedRange,
    pub jump: JumpSection,
}
