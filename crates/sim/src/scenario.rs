//! Scenario files: one TOML file per named situation, of one system.
//!
//! Terminology:
//! - *scenario*: the world's shape and its fault *envelope*: what every system shares
//!   (replicas, phases, latencies, network and process faults, clocks, stops) and the system's
//!   own part (its services' shape, its worker's settings, its own faults), named by
//!   `system = "NAME"`.
//! - *shared keys*: the top-level keys and `[faults]` keys this module reads; the *system
//!   part* is every key the system declares ([`Setup::KEYS`](crate::Setup::KEYS), [`Setup::FAULT_KEYS`](crate::Setup::FAULT_KEYS)), handed
//!   to [`Setup::settings`](crate::Setup::settings) as a [`SystemPart`] that keeps every value's location.
//! - *location*: `file:line:column` of a value; every error names one.
//!
//! Every key is optional except `description` and `system`; every fault defaults to off. An
//! unknown key is an error at its location that lists the valid ones. `docs/scenario-files.md`
//! documents every key of every system.

use std::ops::Range;

use leasesim_events::OpSet;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::system::System;
pub use crate::values::*;

/// The shared top-level keys, besides `[faults]`.
const SHARED_KEYS: &[&str] = &[
    "description",
    "system",
    "replicas",
    "duration_ms",
    "liveness_ms",
    "stop_bound_ms",
    "swarm",
    "expect",
    "schedule",
    "latency",
    "clocks",
    "stop",
];

/// The shared keys of `[faults]`.
const SHARED_FAULT_KEYS: &[&str] = &[
    "reject",
    "request_lost",
    "reply_lost",
    "timeout_ms",
    "pause",
];

/// Upper bound on replicas (owner ids and per-replica state stay small).
pub const MAX_REPLICAS: u16 = 64;

/// A number of replicas: 1 to [`MAX_REPLICAS`].
pub type ReplicaCount = Whole<1, { MAX_REPLICAS as u64 }>;

/// One value per operation of a system. A key left out takes the default of its kind:
/// probability 0, latency `[1, 5]` ms.
#[derive(Clone, Debug, PartialEq)]
pub struct PerOp<T> {
    values: Vec<T>,
}

impl<T: Copy> PerOp<T> {
    /// The same value for each of `count` operations.
    pub fn all(count: usize, value: T) -> PerOp<T> {
        PerOp {
            values: vec![value; count],
        }
    }

    pub fn get(&self, op: impl OpSet) -> T {
        self.values[op.index()]
    }

    pub fn set(&mut self, op: impl OpSet, value: T) {
        self.values[op.index()] = value;
    }

    /// The values in the system's operation order.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// `f` applied to every value, in order.
    pub fn map<U: Copy>(&self, f: impl FnMut(T) -> U) -> PerOp<U> {
        PerOp {
            values: self.values.iter().copied().map(f).collect(),
        }
    }
}

/// When a stop lands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StopAt<Op> {
    /// No stop during the safety phase.
    #[default]
    None,
    /// At an instant drawn from `window_ms`.
    Time,
    /// While a call of this operation of the replica is in flight.
    During(Op),
    /// While the replica's driver waits between terms.
    BetweenTerms,
    /// Each run draws one of the above (not `none`).
    Anywhere,
}

impl<Op: OpSet> StopAt<Op> {
    pub fn name(self) -> &'static str {
        match self {
            StopAt::None => "none",
            StopAt::Time => "time",
            StopAt::During(op) => op.key(),
            StopAt::BetweenTerms => "between-terms",
            StopAt::Anywhere => "anywhere",
        }
    }

    /// The stop mode named `name` (an operation's scenario key, or a fixed mode).
    pub fn from_name(name: &str) -> Option<StopAt<Op>> {
        match name {
            "none" => Some(StopAt::None),
            "time" => Some(StopAt::Time),
            "between-terms" => Some(StopAt::BetweenTerms),
            "anywhere" => Some(StopAt::Anywhere),
            _ => Op::from_key(name).map(StopAt::During),
        }
    }

    /// Every name `from_name` takes.
    pub fn names() -> Vec<&'static str> {
        let mut names = vec!["none", "time"];
        names.extend(Op::ALL.iter().map(|op| op.key()));
        names.extend(["between-terms", "anywhere"]);
        names
    }
}

/// `[stop]`: who is stopped during the safety phase, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct StopSection<Op> {
    pub at: StopAt<Op>,
    /// How many replicas (r1, r2, ...) are stopped.
    pub replicas: u16,
    /// The span of the safety phase in which the stop may land.
    pub window_ms: MsRange,
    /// Extra delay after the triggering moment (e.g. into the acquire's flight).
    pub delay_ms: MsRange,
}

/// The shared part of `[faults]`.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSection {
    /// Probability a request is refused before it is applied, per operation.
    pub reject: PerOp<Probability>,
    /// Probability a request is lost before it is applied (the caller sees a timeout), per
    /// operation.
    pub request_lost: PerOp<Probability>,
    /// Probability a reply is lost after the request was applied, per operation.
    pub reply_lost: PerOp<Probability>,
    /// When a request or its reply is lost, the caller's error arrives this long after it
    /// sent the request.
    pub timeout_ms: SpanMs,
    pub pause: PauseSection,
}

impl FaultSection {
    /// Can a call end in a timeout (a request or a reply lost on some operation)?
    pub fn timeouts(&self) -> bool {
        let on = |values: &PerOp<Probability>| values.values().iter().any(|p| p.get() > 0.0);
        on(&self.request_lost) || on(&self.reply_lost)
    }

    /// Can a call of `op` fail in the network (refused, or its request or reply lost)?
    pub fn call_can_fail(&self, op: impl OpSet) -> bool {
        [&self.reject, &self.request_lost, &self.reply_lost]
            .iter()
            .any(|values| values.get(op).get() > 0.0)
    }
}

/// A checked scenario of system `S`.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario<S: System> {
    pub name: String,
    /// Where it was read from (a path, or `scenarios/SYSTEM/NAME.toml` for a builtin).
    pub source: String,
    /// The file's text (overrides are applied to it, and it is parsed again).
    pub text: String,
    pub description: String,
    pub replicas: u16,
    /// Length of the safety phase (faults on).
    pub duration_ms: u64,
    /// Length of the liveness phase (faults healed).
    pub liveness_ms: u64,
    /// At shutdown, every stop must resolve within this long.
    pub stop_bound_ms: u64,
    /// Draw the fault profile per run (swarm testing).
    pub swarm: bool,
    /// Invariant names this scenario expects to be violated, with where they were written.
    pub expect: Vec<(S::Invariant, Location)>,
    pub schedule: ScheduleSection,
    pub latency: PerOp<MsRange>,
    pub faults: FaultSection,
    pub clocks: ClockSection,
    pub stop: StopSection<S::Op>,
    /// The system's own part, checked.
    pub settings: S::Settings,
}

impl<S: System> Scenario<S> {
    /// The virtual instant the liveness phase starts.
    pub fn liveness_start_ms(&self) -> u64 {
        self.duration_ms
    }

    /// The invariants this scenario expects to break.
    pub fn expected(&self) -> Vec<S::Invariant> {
        self.expect
            .iter()
            .map(|(invariant, _)| *invariant)
            .collect()
    }
}

/// The system's part of a scenario file, for [`Setup::settings`](crate::Setup::settings): its keys with their
/// locations, and the shared values it may need to check against.
pub struct SystemPart<'a> {
    table: Spanned<DeValue<'a>>,
    source: &'a str,
    text: &'a str,
    /// The length of the safety phase (some checks relate to it).
    pub duration_ms: u64,
    pub replicas: u16,
    pub swarm: bool,
}

impl SystemPart<'_> {
    /// Deserializes the system's keys into `T` (unknown keys are already refused; nested
    /// tables should `deny_unknown_fields`). Errors carry the value's location.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, ScenarioError> {
        let value = Spanned::new(self.table.span(), self.table.get_ref().clone());
        T::deserialize(serde::de::IntoDeserializer::into_deserializer(value))
            .map_err(|err| keyed_error(self.source, self.text, err.span(), err.message()))
    }

    /// An error at byte `span` of the file.
    pub fn error_at(&self, span: Range<usize>, message: &str) -> ScenarioError {
        error_at(self.source, self.text, span, message)
    }
}

fn error_at(source: &str, text: &str, span: Range<usize>, message: &str) -> ScenarioError {
    ScenarioError {
        location: Location::at(source, text, span.start),
        message: message.to_string(),
    }
}

/// A value's error at byte `span`, its message led by the dotted key it is the value of
/// (`` `duration_ms` must be ...``), so it names the key as well as the place.
fn keyed_error(
    source: &str,
    text: &str,
    span: Option<Range<usize>>,
    message: &str,
) -> ScenarioError {
    let span = span.unwrap_or(0..0);
    let message = message.trim();
    let message = match key_at(text, span.start) {
        Some(key) if message.starts_with("must ") => format!("`{key}` {message}"),
        Some(key) => format!("`{key}`: {message}"),
        None => message.to_string(),
    };
    error_at(source, text, span, &message)
}

/// The dotted key whose value holds byte `offset` (the innermost: `latency.delete`, not
/// `latency`); `None` outside every value.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let root = DeTable::parse(text).ok()?;
    let mut path = Vec::new();
    key_in(root.get_ref(), offset, &mut path).then(|| path.join("."))
}

fn key_in(table: &DeTable<'_>, offset: usize, path: &mut Vec<String>) -> bool {
    for (key, value) in table {
        path.push(key.get_ref().to_string());
        // A table's keys may lie outside its own span (`[worker]` then its lines): look inside
        // first.
        if let DeValue::Table(inner) = value.get_ref()
            && key_in(inner, offset, path)
        {
            return true;
        }
        let span = value.span();
        if span.contains(&offset) || (span.is_empty() && span.start == offset) {
            return true;
        }
        path.pop();
    }
    false
}

/// An error about dotted `key` as a whole (a bound across keys), at its value when the file
/// writes it, else at the nearest table of it the file writes, else at the file's start.
fn key_error(source: &str, text: &str, key: &str, message: &str) -> ScenarioError {
    let offset = DeTable::parse(text).ok().map_or(0, |root| {
        let mut table = root.get_ref();
        let mut offset = 0;
        for part in key.split('.') {
            let Some(value) = table.get(part) else { break };
            offset = value.span().start;
            match value.get_ref() {
                DeValue::Table(inner) => table = inner,
                _ => break,
            }
        }
        offset
    });
    error_at(source, text, offset..offset, &format!("`{key}` {message}"))
}

/// The file's `system` value and where it is written: which system's loader to use.
pub fn system_of(source: &str, text: &str) -> Result<(String, Location), ScenarioError> {
    let root = parse_root(source, text)?;
    let valid = "every scenario file names its system, e.g. `system = \"retention\"`";
    let Some(value) = root.get_ref().get("system") else {
        return Err(error_at(
            source,
            text,
            0..0,
            &format!("missing key `system`: {valid}"),
        ));
    };
    let location = Location::at(source, text, value.span().start);
    match value.get_ref().as_str() {
        Some(name) => Ok((name.to_string(), location)),
        None => Err(ScenarioError {
            location,
            message: format!("`system` must be a string: {valid}"),
        }),
    }
}

fn parse_root<'a>(source: &str, text: &'a str) -> Result<Spanned<DeTable<'a>>, ScenarioError> {
    DeTable::parse(text).map_err(|err| {
        error_at(
            source,
            text,
            err.span().unwrap_or(0..0),
            err.message().trim(),
        )
    })
}

/// The shared part of a scenario file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SharedFile {
    description: String,
    system: String,
    #[serde(default = "defaults::replicas")]
    replicas: ReplicaCount,
    #[serde(default = "defaults::duration_ms")]
    duration_ms: SpanMs,
    #[serde(default = "defaults::liveness_ms")]
    liveness_ms: SpanMs,
    #[serde(default = "defaults::bound_ms")]
    stop_bound_ms: SpanMs,
    #[serde(default)]
    swarm: bool,
    #[serde(default)]
    expect: Vec<Spanned<String>>,
    #[serde(default)]
    schedule: ScheduleSection,
    #[serde(default)]
    latency: Option<Spanned<OpTable<MsRange>>>,
    #[serde(default)]
    faults: SharedFaults,
    #[serde(default)]
    clocks: ClockSection,
    #[serde(default)]
    stop: Option<Spanned<StopFile>>,
}

/// A per-operation table as written: operation keys, checked against the system's.
type OpTable<T> = std::collections::BTreeMap<String, Spanned<T>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SharedFaults {
    #[serde(default)]
    reject: Option<Spanned<OpTable<Probability>>>,
    #[serde(default)]
    request_lost: Option<Spanned<OpTable<Probability>>>,
    #[serde(default)]
    reply_lost: Option<Spanned<OpTable<Probability>>>,
    #[serde(default = "defaults::timeout_ms")]
    timeout_ms: SpanMs,
    #[serde(default)]
    pause: PauseSection,
}

impl Default for SharedFaults {
    fn default() -> Self {
        SharedFaults {
            reject: None,
            request_lost: None,
            reply_lost: None,
            timeout_ms: defaults::timeout_ms(),
            pause: PauseSection::default(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct StopFile {
    at: Spanned<String>,
    replicas: ReplicaCount,
    window_ms: MsRange,
    delay_ms: MsRange,
}

impl Default for StopFile {
    fn default() -> Self {
        StopFile {
            at: Spanned::new(0..0, "none".to_string()),
            replicas: ReplicaCount::new(1),
            window_ms: MsRange::new(0, 30_000),
            delay_ms: MsRange::new(0, 0),
        }
    }
}

mod defaults {
    use super::{ReplicaCount, SpanMs};

    pub fn replicas() -> ReplicaCount {
        ReplicaCount::new(3)
    }

    pub fn duration_ms() -> SpanMs {
        SpanMs::new(60_000)
    }

    pub fn liveness_ms() -> SpanMs {
        SpanMs::new(60_000)
    }

    pub fn bound_ms() -> SpanMs {
        SpanMs::new(20_000)
    }

    pub fn timeout_ms() -> SpanMs {
        SpanMs::new(1_000)
    }
}

/// The file's top-level table split into the shared keys and the system's.
struct Split<'a> {
    shared: DeTable<'a>,
    system: DeTable<'a>,
}

/// Routes every key to the shared part or the system's; an unknown key is an error at it.
fn split<'a, S: System>(
    root: DeTable<'a>,
    source: &str,
    text: &str,
) -> Result<Split<'a>, ScenarioError> {
    let mut parts = Split {
        shared: DeTable::new(),
        system: DeTable::new(),
    };
    for (key, value) in root {
        let name: &str = key.get_ref();
        if name == "faults" {
            let faults = split_faults::<S>(&key, value, source, text)?;
            parts.shared.insert(key.clone(), faults.0);
            if let Some(system) = faults.1 {
                parts.system.insert(key, system);
            }
        } else if SHARED_KEYS.contains(&name) {
            parts.shared.insert(key, value);
        } else if S::KEYS.contains(&name) {
            parts.system.insert(key, value);
        } else {
            let mut valid: Vec<&str> = SHARED_KEYS.to_vec();
            valid.extend(S::KEYS);
            valid.push("faults");
            let message = format!(
                "unknown key `{name}` for a {} scenario; valid: {}",
                S::NAME,
                valid.join(", ")
            );
            return Err(error_at(source, text, key.span(), &message));
        }
    }
    Ok(parts)
}

type Value<'a> = Spanned<DeValue<'a>>;

/// Splits `[faults]` into its shared keys and the system's (if it has any there).
fn split_faults<'a, S: System>(
    key: &Spanned<std::borrow::Cow<'a, str>>,
    value: Value<'a>,
    source: &str,
    text: &str,
) -> Result<(Value<'a>, Option<Value<'a>>), ScenarioError> {
    let span = value.span();
    let DeValue::Table(table) = value.into_inner() else {
        return Err(error_at(
            source,
            text,
            key.span(),
            "`faults` must be a table",
        ));
    };
    let (mut shared, mut system) = (DeTable::new(), DeTable::new());
    for (name, entry) in table {
        if SHARED_FAULT_KEYS.contains(&name.get_ref().as_ref()) {
            shared.insert(name, entry);
        } else if S::FAULT_KEYS.contains(&name.get_ref().as_ref()) {
            system.insert(name, entry);
        } else {
            let mut valid: Vec<&str> = SHARED_FAULT_KEYS.to_vec();
            valid.extend(S::FAULT_KEYS);
            let message = format!(
                "unknown key `faults.{}` for a {} scenario; valid: {}",
                name.get_ref(),
                S::NAME,
                valid.join(", ")
            );
            return Err(error_at(source, text, name.span(), &message));
        }
    }
    let system = (!system.is_empty()).then(|| Spanned::new(span.clone(), DeValue::Table(system)));
    Ok((Spanned::new(span, DeValue::Table(shared)), system))
}

/// Parses and checks scenario `name` of system `S` from `text`, read from `source`.
pub fn parse_scenario<S: System>(
    name: &str,
    source: &str,
    text: &str,
) -> Result<Scenario<S>, ScenarioError> {
    let root = parse_root(source, text)?;
    let span = root.span();
    let parts = split::<S>(root.into_inner(), source, text)?;
    let shared_value = Spanned::new(span.clone(), DeValue::Table(parts.shared));
    let file =
        SharedFile::deserialize(serde::de::IntoDeserializer::into_deserializer(shared_value))
            .map_err(|err| keyed_error(source, text, err.span(), err.message()))?;
    if file.system != S::NAME {
        let message = format!(
            "this file is a `{}` scenario, not `{}`",
            file.system,
            S::NAME
        );
        return Err(error_at(source, text, 0..0, &message));
    }
    let ctx = Context { source, text };
    let replicas = file.replicas.get() as u16;
    let part = SystemPart {
        table: Spanned::new(span, DeValue::Table(parts.system)),
        source,
        text,
        duration_ms: file.duration_ms.get(),
        replicas,
        swarm: file.swarm,
    };
    let settings = S::settings(part)?;
    let stop = ctx.stop::<S>(file.stop, replicas, file.duration_ms.get())?;
    let faults = FaultSection {
        reject: ctx.per_op::<S, _>(file.faults.reject, Probability::OFF, "faults.reject")?,
        request_lost: ctx.per_op::<S, _>(
            file.faults.request_lost,
            Probability::OFF,
            "faults.request_lost",
        )?,
        reply_lost: ctx.per_op::<S, _>(
            file.faults.reply_lost,
            Probability::OFF,
            "faults.reply_lost",
        )?,
        timeout_ms: file.faults.timeout_ms,
        pause: file.faults.pause,
    };
    let scenario = Scenario {
        name: name.to_string(),
        source: source.to_string(),
        text: text.to_string(),
        description: file.description,
        replicas,
        duration_ms: file.duration_ms.get(),
        liveness_ms: file.liveness_ms.get(),
        stop_bound_ms: file.stop_bound_ms.get(),
        swarm: file.swarm,
        expect: ctx.expect::<S>(file.expect)?,
        schedule: file.schedule,
        latency: ctx.per_op::<S, _>(file.latency, MsRange::new(1, 5), "latency")?,
        faults,
        clocks: file.clocks,
        stop,
        settings,
    };
    S::check_scenario(&scenario)
        .map_err(|(key, message)| key_error(source, text, key, &message))?;
    Ok(scenario)
}

/// Reads and checks a scenario file of system `S`; its name is the file stem.
pub fn load_scenario<S: System>(path: &std::path::Path) -> Result<Scenario<S>, ScenarioError> {
    let (source, text) = read_file(path)?;
    let name = stem(path);
    parse_scenario(&name, &source, &text)
}

/// A scenario file's text, with the path as shown in errors.
pub fn read_file(path: &std::path::Path) -> Result<(String, String), ScenarioError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|err| ScenarioError {
        location: Location {
            file: source.clone(),
            line: 0,
            column: 0,
        },
        message: format!("cannot read scenario file: {err}"),
    })?;
    Ok((source, text))
}

/// A scenario's name: its file stem.
pub fn stem(path: &std::path::Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into(),
    )
}

/// Where errors point while one file is checked.
struct Context<'a> {
    source: &'a str,
    text: &'a str,
}

impl Context<'_> {
    fn error(&self, span: Range<usize>, message: &str) -> ScenarioError {
        error_at(self.source, self.text, span, message)
    }

    /// A per-operation table: every key must be one of the system's operations.
    fn per_op<S: System, T: Copy>(
        &self,
        table: Option<Spanned<OpTable<T>>>,
        default: T,
        what: &str,
    ) -> Result<PerOp<T>, ScenarioError> {
        let mut out = PerOp::all(S::Op::ALL.len(), default);
        for (key, value) in table.map(Spanned::into_inner).unwrap_or_default() {
            let Some(op) = S::Op::from_key(&key) else {
                let keys: Vec<&str> = S::Op::ALL.iter().map(|op| op.key()).collect();
                let message = format!(
                    "unknown operation `{key}` in [{what}]; the {} system's operations are {}",
                    S::NAME,
                    keys.join(", ")
                );
                return Err(self.error(value.span(), &message));
            };
            out.set(op, *value.get_ref());
        }
        Ok(out)
    }

    fn stop<S: System>(
        &self,
        stop: Option<Spanned<StopFile>>,
        replicas: u16,
        duration_ms: u64,
    ) -> Result<StopSection<S::Op>, ScenarioError> {
        let (file, span) = match stop {
            Some(spanned) => (spanned.get_ref().clone_file(), spanned.span()),
            None => (StopFile::default(), 0..0),
        };
        let Some(at) = StopAt::<S::Op>::from_name(file.at.get_ref()) else {
            let message = format!(
                "unknown stop mode `{}`; valid: {}",
                file.at.get_ref(),
                StopAt::<S::Op>::names().join(", ")
            );
            return Err(self.error(file.at.span(), &message));
        };
        let stopped = file.replicas.get();
        if at != StopAt::None && stopped > u64::from(replicas) {
            let message = format!(
                "[stop]: replicas must be 1..={replicas} (the scenario's replicas), got {stopped}"
            );
            return Err(self.error(span, &message));
        }
        if at != StopAt::None && file.window_ms.min >= duration_ms {
            let message = format!(
                "[stop]: window_ms starts at {} ms, after the safety phase ends ({duration_ms} ms)",
                file.window_ms.min
            );
            return Err(self.error(span, &message));
        }
        Ok(StopSection {
            at,
            replicas: stopped as u16,
            window_ms: file.window_ms,
            delay_ms: file.delay_ms,
        })
    }

    /// `expect`: every name must be one of the system's invariants.
    fn expect<S: System>(
        &self,
        names: Vec<Spanned<String>>,
    ) -> Result<Vec<(S::Invariant, Location)>, ScenarioError> {
        use leasesim_invariants::InvariantName;
        names
            .into_iter()
            .map(|name| {
                let location = Location::at(self.source, self.text, name.span().start);
                match S::Invariant::from_name(name.get_ref()) {
                    Some(invariant) => Ok((invariant, location)),
                    None => {
                        let valid: Vec<&str> = S::Invariant::ALL.iter().map(|i| i.name()).collect();
                        Err(ScenarioError {
                            location,
                            message: format!(
                                "unknown invariant `{}` in expect (a {} scenario); valid: {}",
                                name.get_ref(),
                                S::NAME,
                                valid.join(", ")
                            ),
                        })
                    }
                }
            })
            .collect()
    }
}

impl StopFile {
    fn clone_file(&self) -> StopFile {
        StopFile {
            at: Spanned::new(self.at.span(), self.at.get_ref().clone()),
            replicas: self.replicas,
            window_ms: self.window_ms,
            delay_ms: self.delay_ms,
        }
    }
}
