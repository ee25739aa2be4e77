//! The value types scenario files are made of, shared by every system's tables.
//!
//! Terminology:
//! - *location*: `file:line:column` of a value; every scenario error names one.
//! - *range*: a two-element array `[min, max]`, inclusive; each use draws a value in it.
//! - *probability*: a float in [0, 1]; 0 (the default of every fault) means off.

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
        let p = f64::deserialize(deserializer)?;
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
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let [min, max] = <[u64; 2]>::deserialize(deserializer)?;
        if min > max {
            return Err(de::Error::custom(format!(
                "range [{min}, {max}]: min exceeds max"
            )));
        }
        Ok(MsRange { min, max })
    }
}

/// An inclusive range `[min, max]` of signed values (clock offsets, jumps, drift).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignedRange {
    pub min: i64,
    pub max: i64,
}

impl<'de> Deserialize<'de> for SignedRange {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let [min, max] = <[i64; 2]>::deserialize(deserializer)?;
        if min > max {
            return Err(de::Error::custom(format!(
                "range [{min}, {max}]: min exceeds max"
            )));
        }
        Ok(SignedRange { min, max })
    }
}

/// A whole number above zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Positive(u64);

impl Positive {
    /// `value`, which must be above zero.
    pub const fn new(value: u64) -> Positive {
        assert!(value > 0, "Positive must be above zero");
        Positive(value)
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match u64::deserialize(deserializer)? {
            0 => Err(de::Error::custom("must be greater than zero")),
            n => Ok(Positive(n)),
        }
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
    pub drift_ppm: SignedRange,
    pub jump: JumpSection,
}
