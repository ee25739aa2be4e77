//! Scenario overrides: the changes a shrink makes to a scenario, written into its choices file.
//!
//! Terminology:
//! - *override*: one `KEY = VALUE` pair, written in a choices file as `# set KEY = VALUE`.
//!   Keys are the scenario file's own dotted keys (`replicas`, `faults.pause.probability`,
//!   `store.rows`, ...), restricted to the ones a shrink may simplify.
//! - *override set*: at most one override per key, kept in the canonical order of
//!   [`Key::ALL`], so the same set always renders the same text.
//! - *apply*: the scenario with every override of a set written into it, then checked the way
//!   a scenario file is (replica count, stop plan against replicas and phase length).
//!
//! Overrides change the scenario, never the choice source: a run of an overridden scenario
//! draws exactly what a scenario file with those values would.

use std::fmt;

use leasesim_events::OpKind;
use leasesim_world::Scenario;
use leasesim_world::scenario::{MAX_REPLICAS, Probability, SignedRange, StopAt};

/// A key an override may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    Replicas,
    DurationMs,
    LivenessMs,
    Drain,
    StoreRows,
    StopAt,
    StopReplicas,
    Reject(OpKind),
    ReplyLost(OpKind),
    RevokeProbability,
    PauseProbability,
    ShortDeleteProbability,
    JumpProbability,
    ClockOffsetMs,
    ClockDriftPpm,
}

/// The kind of value a key takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A whole number; `positive` refuses 0.
    Count {
        positive: bool,
    },
    Flag,
    Probability,
    SignedRange,
    StopMode,
}

const OPS: [OpKind; 4] = [
    OpKind::Acquire,
    OpKind::Renew,
    OpKind::Release,
    OpKind::Delete,
];

/// The scenario file's name of an operation inside a per-operation table.
fn op_key(op: OpKind) -> &'static str {
    match op {
        OpKind::Acquire => "acquire",
        OpKind::Renew => "renew",
        OpKind::Release => "release",
        OpKind::Delete => "delete",
    }
}

const STOP_MODES: [StopAt; 7] = [
    StopAt::None,
    StopAt::Time,
    StopAt::Acquire,
    StopAt::Delete,
    StopAt::Renew,
    StopAt::BetweenTerms,
    StopAt::Anywhere,
];

impl Key {
    /// Every key, in canonical order.
    pub const ALL: [Key; 21] = [
        Key::Replicas,
        Key::DurationMs,
        Key::LivenessMs,
        Key::Drain,
        Key::StoreRows,
        Key::StopAt,
        Key::StopReplicas,
        Key::Reject(OPS[0]),
        Key::Reject(OPS[1]),
        Key::Reject(OPS[2]),
        Key::Reject(OPS[3]),
        Key::ReplyLost(OPS[0]),
        Key::ReplyLost(OPS[1]),
        Key::ReplyLost(OPS[2]),
        Key::ReplyLost(OPS[3]),
        Key::RevokeProbability,
        Key::PauseProbability,
        Key::ShortDeleteProbability,
        Key::JumpProbability,
        Key::ClockOffsetMs,
        Key::ClockDriftPpm,
    ];

    /// The dotted key, as in a scenario file.
    pub fn name(self) -> String {
        match self {
            Key::Replicas => "replicas".into(),
            Key::DurationMs => "duration_ms".into(),
            Key::LivenessMs => "liveness_ms".into(),
            Key::Drain => "drain".into(),
            Key::StoreRows => "store.rows".into(),
            Key::StopAt => "stop.at".into(),
            Key::StopReplicas => "stop.replicas".into(),
            Key::Reject(op) => format!("faults.reject.{}", op_key(op)),
            Key::ReplyLost(op) => format!("faults.reply_lost.{}", op_key(op)),
            Key::RevokeProbability => "faults.revoke.probability".into(),
            Key::PauseProbability => "faults.pause.probability".into(),
            Key::ShortDeleteProbability => "faults.short_delete".into(),
            Key::JumpProbability => "clocks.jump.probability".into(),
            Key::ClockOffsetMs => "clocks.offset_ms".into(),
            Key::ClockDriftPpm => "clocks.drift_ppm".into(),
        }
    }

    pub fn from_name(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|key| key.name() == name)
    }

    fn kind(self) -> Kind {
        match self {
            Key::Replicas | Key::DurationMs | Key::LivenessMs => Kind::Count { positive: true },
            Key::StoreRows | Key::StopReplicas => Kind::Count { positive: false },
            Key::Drain => Kind::Flag,
            Key::StopAt => Kind::StopMode,
            Key::ClockOffsetMs | Key::ClockDriftPpm => Kind::SignedRange,
            Key::Reject(_)
            | Key::ReplyLost(_)
            | Key::RevokeProbability
            | Key::PauseProbability
            | Key::ShortDeleteProbability
            | Key::JumpProbability => Kind::Probability,
        }
    }

    /// The value `scenario` has for this key.
    pub fn read(self, scenario: &Scenario) -> Value {
        let faults = &scenario.faults;
        match self {
            Key::Replicas => Value::Count(u64::from(scenario.replicas)),
            Key::DurationMs => Value::Count(scenario.duration_ms),
            Key::LivenessMs => Value::Count(scenario.liveness_ms),
            Key::Drain => Value::Flag(scenario.drain),
            Key::StoreRows => Value::Count(scenario.store.rows),
            Key::StopAt => Value::Stop(scenario.stop.at),
            Key::StopReplicas => Value::Count(u64::from(scenario.stop.replicas)),
            Key::Reject(op) => Value::Probability(faults.reject.get(op).get()),
            Key::ReplyLost(op) => Value::Probability(faults.reply_lost.get(op).get()),
            Key::RevokeProbability => Value::Probability(faults.revoke.probability.get()),
            Key::PauseProbability => Value::Probability(faults.pause.probability.get()),
            Key::ShortDeleteProbability => Value::Probability(faults.short_delete.get()),
            Key::JumpProbability => Value::Probability(scenario.clocks.jump.probability.get()),
            Key::ClockOffsetMs => Value::Range(scenario.clocks.offset_ms),
            Key::ClockDriftPpm => Value::Range(scenario.clocks.drift_ppm),
        }
    }
}

/// An override's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Count(u64),
    Flag(bool),
    Probability(f64),
    Range(SignedRange),
    Stop(StopAt),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Count(n) => write!(f, "{n}"),
            Value::Flag(b) => write!(f, "{b}"),
            // `{}` of an f64 is the shortest text that parses back to the same value.
            Value::Probability(p) => write!(f, "{p}"),
            Value::Range(range) => write!(f, "[{}, {}]", range.min, range.max),
            Value::Stop(at) => write!(f, "{}", at.name()),
        }
    }
}

/// One `KEY = VALUE`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Override {
    pub key: Key,
    pub value: Value,
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", self.key.name(), self.value)
    }
}

/// Why an override's text does not parse: the message and its 0-based byte column in the
/// text that was parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub column: usize,
    pub why: String,
}

/// Parses `KEY = VALUE`.
pub fn parse(text: &str) -> Result<Override, ParseError> {
    let Some((key_text, value_text)) = text.split_once('=') else {
        return Err(ParseError {
            column: 0,
            why: format!("`{}` is not `KEY = VALUE`", text.trim()),
        });
    };
    let key_column = key_text.len() - key_text.trim_start().len();
    let key = Key::from_name(key_text.trim()).ok_or_else(|| {
        let valid: Vec<String> = Key::ALL.iter().map(|k| k.name()).collect();
        ParseError {
            column: key_column,
            why: format!(
                "unknown override key `{}`; valid: {}",
                key_text.trim(),
                valid.join(", ")
            ),
        }
    })?;
    let value_column = key_text.len() + 1 + value_text.len() - value_text.trim_start().len();
    let value = parse_value(key.kind(), value_text.trim()).map_err(|why| ParseError {
        column: value_column,
        why: format!("{}: {why}", key.name()),
    })?;
    Ok(Override { key, value })
}

fn parse_value(kind: Kind, text: &str) -> Result<Value, String> {
    let bad = |what: &str| format!("`{text}` is not {what}");
    match kind {
        Kind::Count { positive } => match text.parse::<u64>() {
            Ok(0) if positive => Err("must be greater than zero".into()),
            Ok(n) => Ok(Value::Count(n)),
            Err(_) => Err(bad("a whole number")),
        },
        Kind::Flag => match text {
            "true" => Ok(Value::Flag(true)),
            "false" => Ok(Value::Flag(false)),
            _ => Err(bad("true or false")),
        },
        Kind::Probability => {
            let p: f64 = text.parse().map_err(|_| bad("a probability"))?;
            Probability::new(p)
                .map(|p| Value::Probability(p.get()))
                .ok_or_else(|| format!("probability {p} is outside [0, 1]"))
        }
        Kind::SignedRange => parse_range(text).ok_or_else(|| bad("a range `[min, max]`")),
        Kind::StopMode => STOP_MODES
            .into_iter()
            .find(|mode| mode.name() == text)
            .map(Value::Stop)
            .ok_or_else(|| {
                let names: Vec<&str> = STOP_MODES.iter().map(|m| m.name()).collect();
                format!("unknown stop mode `{text}`; valid: {}", names.join(", "))
            }),
    }
}

fn parse_range(text: &str) -> Option<Value> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    let (min, max) = inner.split_once(',')?;
    let min: i64 = min.trim().parse().ok()?;
    let max: i64 = max.trim().parse().ok()?;
    (min <= max).then_some(Value::Range(SignedRange { min, max }))
}

/// A set of overrides, one per key, in canonical order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides(Vec<Override>);

impl Overrides {
    /// Sets `key` (replacing an earlier value of it).
    pub fn set(&mut self, key: Key, value: Value) {
        self.0.retain(|o| o.key != key);
        let at = self.0.partition_point(|o| o.key < key);
        self.0.insert(at, Override { key, value });
        // invariant: canonical order, one override per key.
        debug_assert!(self.0.windows(2).all(|w| w[0].key < w[1].key));
    }

    pub fn get(&self, key: Key) -> Option<Value> {
        self.0.iter().find(|o| o.key == key).map(|o| o.value)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Override> {
        self.0.iter()
    }

    /// `KEY = VALUE`, one per override.
    pub fn lines(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }

    /// `scenario` with every override written in, checked as a scenario file is. An error
    /// names the key whose value makes the scenario invalid.
    pub fn apply(&self, scenario: &Scenario) -> Result<Scenario, (Key, String)> {
        let mut out = scenario.clone();
        for o in &self.0 {
            write(&mut out, *o);
        }
        check(&out).map_err(|(key, why)| {
            // Blame an override when one of the keys involved was set.
            let blamed = self.0.iter().map(|o| o.key).find(|k| key.contains(k));
            (blamed.unwrap_or(key[0]), why)
        })?;
        Ok(out)
    }
}

/// Writes one override into a scenario. The kind was checked when it was parsed or built.
fn write(scenario: &mut Scenario, o: Override) {
    let probability = |p: f64| Probability::new(p).expect("a parsed probability");
    let faults = &mut scenario.faults;
    match (o.key, o.value) {
        (Key::Replicas, Value::Count(n)) => scenario.replicas = n.min(u64::from(u16::MAX)) as u16,
        (Key::DurationMs, Value::Count(n)) => scenario.duration_ms = n,
        (Key::LivenessMs, Value::Count(n)) => scenario.liveness_ms = n,
        (Key::Drain, Value::Flag(b)) => scenario.drain = b,
        (Key::StoreRows, Value::Count(n)) => scenario.store.rows = n,
        (Key::StopAt, Value::Stop(at)) => scenario.stop.at = at,
        (Key::StopReplicas, Value::Count(n)) => {
            scenario.stop.replicas = n.min(u64::from(u16::MAX)) as u16;
        }
        (Key::Reject(op), Value::Probability(p)) => set_op(&mut faults.reject, op, probability(p)),
        (Key::ReplyLost(op), Value::Probability(p)) => {
            set_op(&mut faults.reply_lost, op, probability(p));
        }
        (Key::RevokeProbability, Value::Probability(p)) => {
            faults.revoke.probability = probability(p);
        }
        (Key::PauseProbability, Value::Probability(p)) => {
            faults.pause.probability = probability(p);
        }
        (Key::ShortDeleteProbability, Value::Probability(p)) => {
            faults.short_delete = probability(p);
        }
        (Key::JumpProbability, Value::Probability(p)) => {
            scenario.clocks.jump.probability = probability(p);
        }
        (Key::ClockOffsetMs, Value::Range(range)) => scenario.clocks.offset_ms = range,
        (Key::ClockDriftPpm, Value::Range(range)) => scenario.clocks.drift_ppm = range,
        (key, value) => unreachable!("{} cannot take {value}", key.name()),
    }
}

fn set_op(
    table: &mut leasesim_world::scenario::PerOp<Probability>,
    op: OpKind,
    value: Probability,
) {
    match op {
        OpKind::Acquire => table.acquire = value,
        OpKind::Renew => table.renew = value,
        OpKind::Release => table.release = value,
        OpKind::Delete => table.delete = value,
    }
}

/// The checks a scenario file gets that an override can break, with the keys involved.
fn check(scenario: &Scenario) -> Result<(), (&'static [Key], String)> {
    if !(1..=MAX_REPLICAS).contains(&scenario.replicas) {
        return Err((
            &[Key::Replicas],
            format!(
                "replicas must be 1..={MAX_REPLICAS}, got {}",
                scenario.replicas
            ),
        ));
    }
    let stop = &scenario.stop;
    if stop.at == StopAt::None {
        return Ok(());
    }
    if !(1..=scenario.replicas).contains(&stop.replicas) {
        return Err((
            &[Key::StopReplicas, Key::Replicas, Key::StopAt],
            format!(
                "stop.replicas must be 1..={} (the replicas), got {}",
                scenario.replicas, stop.replicas
            ),
        ));
    }
    if stop.window_ms.min >= scenario.duration_ms {
        return Err((
            &[Key::DurationMs, Key::StopAt],
            format!(
                "the stop window starts at {} ms, after the safety phase ends ({} ms)",
                stop.window_ms.min, scenario.duration_ms
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fencing_off() -> Scenario {
        crate::catalog::builtin("fencing-off").unwrap().unwrap()
    }

    #[test]
    fn every_key_round_trips_through_its_text() {
        let scenario = fencing_off();
        for key in Key::ALL {
            let o = Override {
                key,
                value: key.read(&scenario),
            };
            assert_eq!(parse(&o.to_string()), Ok(o), "{o}");
        }
        let o = parse(" faults.pause.probability =  0.35 ").unwrap();
        assert_eq!(o.to_string(), "faults.pause.probability = 0.35");
    }

    #[test]
    fn bad_overrides_name_the_column() {
        let err = parse("replica = 2").unwrap_err();
        assert_eq!(err.column, 0);
        assert!(
            err.why.starts_with("unknown override key `replica`"),
            "{err:?}"
        );
        let err = parse("replicas = two").unwrap_err();
        assert_eq!(
            (err.column, err.why.as_str()),
            (11, "replicas: `two` is not a whole number")
        );
        let err = parse("faults.pause.probability = 1.5").unwrap_err();
        assert_eq!(err.column, 27);
        assert!(err.why.ends_with("outside [0, 1]"), "{err:?}");
        assert_eq!(parse("replicas = 0").unwrap_err().column, 11);
        assert!(parse("clocks.offset_ms = [3, -3]").is_err());
        assert!(parse("stop.at = sometimes").is_err());
        assert!(parse("replicas 2").is_err());
    }

    #[test]
    fn apply_changes_the_scenario_and_checks_it() {
        let scenario = fencing_off();
        let mut set = Overrides::default();
        set.set(Key::PauseProbability, Value::Probability(0.0));
        set.set(Key::Replicas, Value::Count(1));
        assert_eq!(
            set.lines(),
            ["replicas = 1", "faults.pause.probability = 0"],
            "canonical order"
        );
        let changed = set.apply(&scenario).unwrap();
        assert_eq!(changed.replicas, 1);
        assert_eq!(changed.faults.pause.probability.get(), 0.0);
        assert_eq!(changed.duration_ms, scenario.duration_ms);
        set.set(Key::Replicas, Value::Count(65));
        assert_eq!(set.apply(&scenario).unwrap_err().0, Key::Replicas);

        let stops = crate::catalog::builtin("stop-anywhere").unwrap().unwrap();
        let mut set = Overrides::default();
        set.set(Key::Replicas, Value::Count(1));
        let (key, why) = set.apply(&stops).unwrap_err();
        assert_eq!(key, Key::Replicas);
        assert!(why.contains("stop.replicas must be 1..=1"), "{why}");
        set.set(Key::StopAt, Value::Stop(StopAt::None));
        assert!(set.apply(&stops).is_ok());
    }
}
