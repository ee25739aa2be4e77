//! Scenario files: one TOML file per named situation.
//!
//! Terminology:
//! - *scenario*: the world's shape (replicas, rows, lease lifetime, worker configuration) and
//!   its fault *envelope* (latencies, fault probabilities, clock skew, when to stop whom).
//! - *location*: `file:line:column` of a value; every error names one.
//!
//! Every key is optional except `description`; every fault defaults to off. Value errors
//! (a probability outside [0, 1], a range whose min exceeds its max, zero replicas) are
//! reported at the offending value; errors that relate keys to each other (a batch above the
//! cap) at the table that holds them. `scenarios/README.md` documents every key.

use std::fmt;
use std::ops::Range;

use lease_worker::WorkerConfig;
use serde::Deserialize;
use serde::de::{self, Deserializer};
use toml::Spanned;

use crate::EPOCH_MS;

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

/// One value per port operation. A key left out takes the default of its kind: probability
/// 0, latency `[1, 5]` ms.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(
    default,
    deny_unknown_fields,
    bound = "T: Deserialize<'de>, PerOp<T>: Default"
)]
pub struct PerOp<T> {
    pub acquire: T,
    pub renew: T,
    pub release: T,
    pub delete: T,
}

impl Default for PerOp<Probability> {
    fn default() -> Self {
        PerOp::all(Probability(0.0))
    }
}

impl Default for PerOp<MsRange> {
    fn default() -> Self {
        PerOp::all(MsRange::new(1, 5))
    }
}

impl<T: Copy> PerOp<T> {
    pub fn all(value: T) -> PerOp<T> {
        PerOp {
            acquire: value,
            renew: value,
            release: value,
            delete: value,
        }
    }

    pub fn get(&self, op: leasesim_events::OpKind) -> T {
        use leasesim_events::OpKind;
        match op {
            OpKind::Acquire => self.acquire,
            OpKind::Renew => self.renew,
            OpKind::Release => self.release,
            OpKind::Delete => self.delete,
        }
    }
}

/// `[worker]`: the configuration every replica's worker is built with.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSection {
    pub batch_rows: u32,
    pub cap_rows: u32,
    pub retention_ms: u64,
    pub renew_every_ms: u64,
}

impl Default for WorkerSection {
    fn default() -> Self {
        WorkerSection {
            batch_rows: 200,
            cap_rows: 1_000,
            retention_ms: 300_000,
            renew_every_ms: 1_000,
        }
    }
}

/// `[lease]`: the lease authority.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LeaseSection {
    pub ttl_ms: Positive,
    pub exact_token: bool,
}

impl Default for LeaseSection {
    fn default() -> Self {
        LeaseSection {
            ttl_ms: Positive(3_000),
            exact_token: false,
        }
    }
}

/// `[store]`: the rows and the store's fencing.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSection {
    pub rows: u64,
    /// Creation time of the oldest row, ms relative to the start of the run (may be negative).
    pub created_from_ms: i64,
    /// Creation time of the newest row; rows after the start arrive as time passes.
    pub created_to_ms: i64,
    pub fencing: bool,
}

impl Default for StoreSection {
    fn default() -> Self {
        StoreSection {
            rows: 2_000,
            created_from_ms: -600_000,
            created_to_ms: 0,
            fencing: true,
        }
    }
}

/// `[schedule]`: how each replica's driver calls `run()`.
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

/// `[faults]`: everything that goes wrong on purpose.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultSection {
    /// Probability a request is refused before it is applied.
    pub reject: PerOp<Probability>,
    /// Probability a reply is lost after the request was applied.
    pub reply_lost: PerOp<Probability>,
    /// When a reply is lost, the caller's error arrives this long after it sent the request.
    pub timeout_ms: Positive,
    pub revoke: Periodic,
    pub pause: PauseSection,
    /// Probability a delete answers short: it removes fewer rows than its limit while more
    /// eligible rows remain (as `DELETE ... LIMIT n` with `SKIP LOCKED` can).
    pub short_delete: Probability,
}

impl Default for FaultSection {
    fn default() -> Self {
        FaultSection {
            reject: PerOp::default(),
            reply_lost: PerOp::default(),
            timeout_ms: Positive(1_000),
            revoke: Periodic::default(),
            pause: PauseSection::default(),
            short_delete: Probability(0.0),
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

/// When a stop lands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopAt {
    /// No stop during the safety phase.
    #[default]
    None,
    /// At an instant drawn from `window_ms`.
    Time,
    /// While an acquire of the replica is in flight.
    Acquire,
    /// While a delete of the replica is in flight.
    Delete,
    /// While a renewal of the replica is in flight.
    Renew,
    /// While the replica's driver waits between terms.
    BetweenTerms,
    /// Each run draws one of the above (not `none`).
    Anywhere,
}

impl StopAt {
    pub fn name(self) -> &'static str {
        match self {
            StopAt::None => "none",
            StopAt::Time => "time",
            StopAt::Acquire => "acquire",
            StopAt::Delete => "delete",
            StopAt::Renew => "renew",
            StopAt::BetweenTerms => "between-terms",
            StopAt::Anywhere => "anywhere",
        }
    }
}

/// `[stop]`: who is stopped during the safety phase, and when.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StopSection {
    pub at: StopAt,
    /// How many replicas (r1, r2, ...) are stopped.
    pub replicas: u16,
    /// The span of the safety phase in which the stop may land.
    pub window_ms: MsRange,
    /// Extra delay after the triggering moment (e.g. into the acquire's flight).
    pub delay_ms: MsRange,
}

impl Default for StopSection {
    fn default() -> Self {
        StopSection {
            at: StopAt::None,
            replicas: 1,
            window_ms: MsRange::new(0, 30_000),
            delay_ms: MsRange::new(0, 0),
        }
    }
}

fn default_replicas() -> Spanned<u16> {
    Spanned::new(0..0, 3)
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    description: String,
    #[serde(default = "default_replicas")]
    replicas: Spanned<u16>,
    #[serde(default = "defaults::duration_ms")]
    duration_ms: Positive,
    #[serde(default = "defaults::liveness_ms")]
    liveness_ms: Positive,
    #[serde(default = "defaults::bound_ms")]
    term_bound_ms: Positive,
    #[serde(default = "defaults::bound_ms")]
    stop_bound_ms: Positive,
    #[serde(default = "defaults::yes")]
    drain: bool,
    #[serde(default)]
    swarm: bool,
    #[serde(default)]
    expect: Vec<Spanned<String>>,
    #[serde(default)]
    worker: Option<Spanned<WorkerSection>>,
    #[serde(default)]
    lease: LeaseSection,
    #[serde(default)]
    store: Option<Spanned<StoreSection>>,
    #[serde(default)]
    schedule: ScheduleSection,
    #[serde(default)]
    latency: PerOp<MsRange>,
    #[serde(default)]
    faults: FaultSection,
    #[serde(default)]
    clocks: ClockSection,
    #[serde(default)]
    stop: Option<Spanned<StopSection>>,
}

mod defaults {
    use super::Positive;

    pub fn duration_ms() -> Positive {
        Positive(60_000)
    }

    pub fn liveness_ms() -> Positive {
        Positive(60_000)
    }

    pub fn bound_ms() -> Positive {
        Positive(20_000)
    }

    pub fn yes() -> bool {
        true
    }
}

/// A checked scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    /// Where it was read from (a path, or `<builtin>/NAME.toml`).
    pub source: String,
    pub description: String,
    pub replicas: u16,
    /// Length of the safety phase (faults on).
    pub duration_ms: u64,
    /// Length of the liveness phase (faults healed).
    pub liveness_ms: u64,
    /// In the liveness phase, a term must end within this long.
    pub term_bound_ms: u64,
    /// At shutdown, every stop must resolve within this long.
    pub stop_bound_ms: u64,
    /// Check that the eligible backlog drains during the liveness phase.
    pub drain: bool,
    /// Draw the fault profile per run (swarm testing).
    pub swarm: bool,
    /// Invariant names this scenario expects to be violated, with where they were written.
    pub expect: Vec<(String, Location)>,
    pub worker: WorkerConfig,
    pub lease: LeaseSection,
    pub store: StoreSection,
    pub schedule: ScheduleSection,
    pub latency: PerOp<MsRange>,
    pub faults: FaultSection,
    pub clocks: ClockSection,
    pub stop: StopSection,
}

/// Upper bound on replicas (owner ids and per-replica state stay small).
pub const MAX_REPLICAS: u16 = 64;

impl Scenario {
    /// Parses and checks scenario `name` from `text`, read from `source`.
    pub fn parse(name: &str, source: &str, text: &str) -> Result<Scenario, ScenarioError> {
        let error_at = |span: Range<usize>, message: String| ScenarioError {
            location: Location::at(source, text, span.start),
            message,
        };
        let file: ScenarioFile = toml::from_str(text).map_err(|err| {
            error_at(err.span().unwrap_or(0..0), err.message().trim().to_string())
        })?;
        let replicas = *file.replicas.get_ref();
        if !(1..=MAX_REPLICAS).contains(&replicas) {
            let message = format!("replicas must be 1..={MAX_REPLICAS}, got {replicas}");
            return Err(error_at(file.replicas.span(), message));
        }
        let (worker, worker_span) = split(file.worker);
        let config = WorkerConfig {
            batch_rows: worker.batch_rows,
            cap_rows: worker.cap_rows,
            retention_ms: worker.retention_ms,
            renew_every_ms: worker.renew_every_ms,
            lease_ttl_ms: file.lease.ttl_ms.get(),
        };
        config
            .validate()
            .map_err(|err| error_at(worker_span.clone(), format!("[worker]: {err}")))?;
        let (store, store_span) = split(file.store);
        check_store(&store).map_err(|message| error_at(store_span, message))?;
        let (stop, stop_span) = split(file.stop);
        check_stop(&stop, replicas, file.duration_ms.get())
            .map_err(|message| error_at(stop_span, message))?;
        let expect = file
            .expect
            .into_iter()
            .map(|name| {
                (
                    name.get_ref().clone(),
                    Location::at(source, text, name.span().start),
                )
            })
            .collect();
        Ok(Scenario {
            name: name.to_string(),
            source: source.to_string(),
            description: file.description,
            replicas,
            duration_ms: file.duration_ms.get(),
            liveness_ms: file.liveness_ms.get(),
            term_bound_ms: file.term_bound_ms.get(),
            stop_bound_ms: file.stop_bound_ms.get(),
            drain: file.drain,
            swarm: file.swarm,
            expect,
            worker: config,
            lease: file.lease,
            store,
            schedule: file.schedule,
            latency: file.latency,
            faults: file.faults,
            clocks: file.clocks,
            stop,
        })
    }

    /// Reads and checks a scenario file; its name is the file stem.
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|err| ScenarioError {
            location: Location {
                file: source.clone(),
                line: 0,
                column: 0,
            },
            message: format!("cannot read scenario file: {err}"),
        })?;
        let name = path
            .file_stem()
            .map_or_else(|| source.clone(), |s| s.to_string_lossy().into());
        Scenario::parse(&name, &source, &text)
    }

    /// The virtual instant the liveness phase starts.
    pub fn liveness_start_ms(&self) -> u64 {
        self.duration_ms
    }

    /// Creation times of the initial rows, on the store's clock.
    pub fn created_window_ms(&self) -> (u64, u64) {
        let at = |relative: i64| EPOCH_MS.saturating_add_signed(relative);
        (at(self.store.created_from_ms), at(self.store.created_to_ms))
    }
}

fn split<T: Default>(section: Option<Spanned<T>>) -> (T, Range<usize>) {
    match section {
        Some(spanned) => {
            let span = spanned.span();
            (spanned.into_inner(), span)
        }
        None => (T::default(), 0..0),
    }
}

fn check_store(store: &StoreSection) -> Result<(), String> {
    if store.created_from_ms > store.created_to_ms {
        return Err(format!(
            "[store]: created_from_ms ({}) is after created_to_ms ({})",
            store.created_from_ms, store.created_to_ms
        ));
    }
    let reach = EPOCH_MS as i64;
    if store.created_from_ms < -reach || store.created_to_ms > reach {
        return Err(format!(
            "[store]: creation times must lie within ±{reach} ms of the start"
        ));
    }
    Ok(())
}

fn check_stop(stop: &StopSection, replicas: u16, duration_ms: u64) -> Result<(), String> {
    if stop.at != StopAt::None && !(1..=replicas).contains(&stop.replicas) {
        return Err(format!(
            "[stop]: replicas must be 1..={replicas}, got {}",
            stop.replicas
        ));
    }
    if stop.at != StopAt::None && stop.window_ms.min >= duration_ms {
        return Err(format!(
            "[stop]: window_ms starts at {} ms, after the safety phase ends ({duration_ms} ms)",
            stop.window_ms.min
        ));
    }
    Ok(())
}
