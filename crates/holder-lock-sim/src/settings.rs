//! The holder-lock system's part of a scenario file, and what one run draws from it.
//!
//! Terminology:
//! - *settings*: `[claim]` (the lifetime every worker writes its claim with and its renewal
//!   interval, 0 for none), `[store]` (whether the store can compare and delete in one step),
//!   `[job]` (how long a job takes: usually `duration_ms`, and with probability `long_share`
//!   `long_duration_ms`; one effect every `step_ms`), `attempt_bound_ms`, and the system's
//!   own faults: `[faults] job_fail` (a job step fails) and the volatile store's forgetting,
//!   `[faults.evict]`, `[faults.failover]`, `[faults.store_restart]` (each a probability at
//!   every tick of its own period; see `events::Forgetting`).
//! - *drawn*: what one run uses. Without swarm, the scenario's settings. With swarm, the job
//!   faults and the share of long jobs are switched and scaled like every fault, and two
//!   more draws may take the renewal away or the store's compare-and-delete (value 0 keeps
//!   the scenario's, so shrinking moves back to it); the checkers judge the run against what
//!   it drew.

use holder_lock_worker::ClaimConfig;
use leasesim_invariants::{SettingsRule, SettingsRules};
use leasesim_sim::scenario::{MAX_SPAN_MS, MsRange, Periodic, Positive, Probability, whole_field};
use leasesim_sim::{Env, Scale, ScenarioError, Setup, SystemPart, Tick};
use serde::Deserialize;
use toml::Spanned;

use crate::events::{CLAIM_KEY, Forgetting, HolderLock};

/// How long a worker trusts a claim of `lifetime_ms`: four fifths of it (the design's rule,
/// worked out here apart from the core's).
fn trusted_ms(lifetime_ms: u64) -> u64 {
    lifetime_ms - lifetime_ms / 5
}

/// What the harness states about the core's settings: the rules below and the documented
/// defaults. The production factory's construction probe checks the core against them
/// (`leasesim_invariants::probe`).
pub const CLAIM_SETTINGS: SettingsRules<ClaimConfig> = SettingsRules {
    rules: CLAIM_RULES,
    documented_default,
};

/// The default `ClaimConfig`'s documentation states: it "claims `job:nightly-rollup` for five
/// minutes and renews it every minute".
fn documented_default() -> ClaimConfig {
    ClaimConfig {
        key: "job:nightly-rollup".into(),
        lifetime_ms: 300_000,
        renew_every_ms: Some(60_000),
    }
}

/// The rules a configuration keeps, with edges and pasts derived from the run's configuration.
const CLAIM_RULES: &[SettingsRule<ClaimConfig>] = &[
    SettingsRule {
        name: "key-not-empty",
        setting: "key",
        holds: |claim| !claim.key.is_empty(),
        edge: |claim| ClaimConfig {
            key: "k".into(),
            ..claim.clone()
        },
        past: |claim| ClaimConfig {
            key: String::new(),
            ..claim.clone()
        },
    },
    SettingsRule {
        name: "lifetime-at-least-5ms",
        setting: "lifetime_ms",
        holds: |claim| claim.lifetime_ms >= 5,
        edge: |claim| ClaimConfig {
            lifetime_ms: 5,
            renew_every_ms: claim
                .renew_every_ms
                .map(|renew| renew.min(trusted_ms(5) - 1)),
            ..claim.clone()
        },
        past: |claim| ClaimConfig {
            lifetime_ms: 4,
            renew_every_ms: None,
            ..claim.clone()
        },
    },
    SettingsRule {
        name: "renewal-positive",
        setting: "renew_every_ms",
        holds: |claim| claim.renew_every_ms != Some(0),
        edge: |claim| ClaimConfig {
            renew_every_ms: Some(1),
            ..claim.clone()
        },
        past: |claim| ClaimConfig {
            renew_every_ms: Some(0),
            ..claim.clone()
        },
    },
    SettingsRule {
        name: "renewal-within-trust",
        setting: "renew_every_ms",
        holds: |claim| {
            let trusted_ms = trusted_ms(claim.lifetime_ms);
            claim.renew_every_ms.is_none_or(|renew| renew < trusted_ms)
        },
        edge: |claim| ClaimConfig {
            renew_every_ms: Some(trusted_ms(claim.lifetime_ms) - 1),
            ..claim.clone()
        },
        past: |claim| ClaimConfig {
            renew_every_ms: Some(trusted_ms(claim.lifetime_ms)),
            ..claim.clone()
        },
    },
];

/// A span of `[claim]`, from 0 to the longest span a scenario takes (refused at the value,
/// with the key and the range).
fn span_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    whole_field(d, 0, MAX_SPAN_MS as i64)
}

/// `[claim]`: how every replica's worker claims the key.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClaimSection {
    #[serde(deserialize_with = "span_field")]
    pub lifetime_ms: u64,
    /// 0: the worker never renews.
    #[serde(deserialize_with = "span_field")]
    pub renew_every_ms: u64,
}

impl Default for ClaimSection {
    fn default() -> Self {
        ClaimSection {
            lifetime_ms: 3_000,
            renew_every_ms: 1_000,
        }
    }
}

/// `[store]`: the volatile store.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSection {
    /// The store can delete a key only while it holds a given token, in one step.
    pub compare_and_delete: bool,
}

impl Default for StoreSection {
    fn default() -> Self {
        StoreSection {
            compare_and_delete: true,
        }
    }
}

/// `[job]`: the job every claim protects.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobSection {
    /// How long a usual job takes.
    pub duration_ms: MsRange,
    /// How long a long job takes.
    pub long_duration_ms: MsRange,
    /// The share of long jobs.
    pub long_share: Probability,
    /// One effect (a finished step) this often.
    pub step_ms: Positive,
}

impl Default for JobSection {
    fn default() -> Self {
        JobSection {
            duration_ms: MsRange::new(500, 2_000),
            long_duration_ms: MsRange::new(4_000, 9_000),
            long_share: Probability::OFF,
            step_ms: Positive::new(250),
        }
    }
}

/// The system's keys inside `[faults]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FaultsFile {
    /// Probability a job step fails.
    job_fail: Probability,
    /// The store evicts the claim key.
    evict: Periodic,
    /// The store fails over to a replica without each key's last write.
    failover: Periodic,
    /// The store restarts without persistence.
    store_restart: Periodic,
}

/// The system's keys as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsFile {
    #[serde(default)]
    claim: Option<Spanned<ClaimSection>>,
    #[serde(default)]
    store: StoreSection,
    #[serde(default)]
    job: JobSection,
    #[serde(default = "attempt_bound_ms")]
    attempt_bound_ms: Positive,
    #[serde(default)]
    faults: FaultsFile,
}

fn attempt_bound_ms() -> Positive {
    Positive::new(30_000)
}

/// The holder-lock system's checked settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Every replica's worker configuration.
    pub claim: ClaimConfig,
    pub store: StoreSection,
    pub job: JobSection,
    /// Once faults heal, an attempt must end within this long (of its start, or of the
    /// healing for one already running then).
    pub attempt_bound_ms: u64,
    pub job_fail: Probability,
    /// The store's forgetting, by [`Forgetting::index`].
    pub forgetting: [Periodic; 3],
}

/// The worker configuration of a `[claim]` section.
pub fn claim_config(section: &ClaimSection) -> ClaimConfig {
    ClaimConfig {
        key: CLAIM_KEY.into(),
        lifetime_ms: section.lifetime_ms,
        renew_every_ms: (section.renew_every_ms > 0).then_some(section.renew_every_ms),
    }
}

/// The holder-lock part of a scenario, and what a run draws from it.
impl Setup for HolderLock {
    const KEYS: &'static [&'static str] = &["claim", "store", "job", "attempt_bound_ms"];
    const FAULT_KEYS: &'static [&'static str] = &["job_fail", "evict", "failover", "store_restart"];
    type Settings = Settings;
    type Drawn = Drawn;

    /// Checks the holder-lock part of a scenario file.
    fn settings(part: SystemPart<'_>) -> Result<Settings, ScenarioError> {
        let file: SettingsFile = part.deserialize()?;
        let (section, span) = match file.claim {
            Some(spanned) => {
                let span = spanned.span();
                (spanned.into_inner(), span)
            }
            None => (ClaimSection::default(), 0..0),
        };
        let claim = claim_config(&section);
        claim
            .validate()
            .map_err(|err| part.error_at(span, &format!("[claim]: {err}")))?;
        Ok(Settings {
            claim,
            store: file.store,
            job: file.job,
            attempt_bound_ms: file.attempt_bound_ms.get(),
            job_fail: file.faults.job_fail,
            forgetting: [
                file.faults.evict,
                file.faults.failover,
                file.faults.store_restart,
            ],
        })
    }

    fn check_scenario(
        scenario: &leasesim_sim::Scenario<HolderLock>,
    ) -> Result<(), (&'static str, String)> {
        crate::bounds::check(scenario)
    }

    /// Draws the holder-lock part of one run's profile.
    fn draw(
        scenario: &leasesim_sim::Scenario<HolderLock>,
        env: &dyn Env<HolderLock>,
        scale: &Scale<'_>,
    ) -> Drawn {
        let settings = &scenario.settings;
        let job_fail = scale.apply(settings.job_fail.get());
        let long_share = scale.apply(settings.job.long_share.get());
        let job = JobSection {
            long_share: Probability::new(long_share).expect("a scaled probability"),
            ..settings.job.clone()
        };
        let forgetting = settings.forgetting.clone().map(|periodic| Tick {
            probability: scale.apply(periodic.probability.get()),
            every_ms: periodic.every_ms,
        });
        let swarm = scale.swarm().then(|| SwarmDraw {
            renewal_off: settings.claim.renew_every_ms.is_some() && env.pick(2) == 1,
            compare_and_delete_off: settings.store.compare_and_delete && env.pick(2) == 1,
        });
        let mut claim = settings.claim.clone();
        let mut compare_and_delete = settings.store.compare_and_delete;
        if let Some(draw) = swarm {
            if draw.renewal_off {
                claim.renew_every_ms = None;
            }
            compare_and_delete &= !draw.compare_and_delete_off;
        }
        let drawn = Drawn {
            claim,
            compare_and_delete,
            job,
            job_fail,
            forgetting,
            swarm,
        };
        // invariant: the drawn configuration is one the worker accepts, and the faults stay
        // within their envelope.
        assert!(drawn.claim.validate().is_ok(), "{:?}", drawn.claim);
        debug_assert!(drawn.job_fail <= settings.job_fail.get());
        debug_assert!(Forgetting::ALL.iter().all(|cause| {
            let i = cause.index();
            drawn.forgetting[i].probability <= settings.forgetting[i].probability.get()
        }));
        drawn
    }

    /// Header lines of the holder-lock part of a profile.
    fn describe(drawn: &Drawn) -> Vec<String> {
        let claim = &drawn.claim;
        let renewal = match claim.renew_every_ms {
            Some(every_ms) => format!("renewed every {every_ms}ms"),
            None => "never renewed".into(),
        };
        let drew = |taken: bool| if taken { " (drawn)" } else { "" };
        let swarm = drawn.swarm.unwrap_or(SwarmDraw {
            renewal_off: false,
            compare_and_delete_off: false,
        });
        let mut lines = vec![format!(
            "claim: {} for {}ms, trusted {}ms, {renewal}{}",
            claim.key,
            claim.lifetime_ms,
            claim.trusted_ms(),
            drew(swarm.renewal_off)
        )];
        if !drawn.compare_and_delete {
            let taken = drew(swarm.compare_and_delete_off);
            lines.push(format!("store: no compare-and-delete{taken}"));
        }
        let job = &drawn.job;
        let mut line = format!(
            "job: {}..{}ms, a step every {}ms",
            job.duration_ms.min,
            job.duration_ms.max,
            job.step_ms.get()
        );
        if job.long_share.get() > 0.0 {
            let share = leasesim_sim::faults::probability_text(job.long_share.get());
            let long = job.long_duration_ms;
            line.push_str(&format!("; long ({}..{}ms) p={share}", long.min, long.max));
        }
        lines.push(line);
        if drawn.job_fail > 0.0 {
            let p = leasesim_sim::faults::probability_text(drawn.job_fail);
            lines.push(format!("job-fail: p={p} per step"));
        }
        for cause in Forgetting::ALL {
            let tick = &drawn.forgetting[cause.index()];
            if tick.probability > 0.0 {
                let label = cause.key().replace('_', "-");
                lines.push(leasesim_sim::faults::tick_text(&label, tick, ""));
            }
        }
        lines
    }

    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[
            ("faults.job_fail", "0"),
            ("faults.evict.probability", "0"),
            ("faults.failover.probability", "0"),
            ("faults.store_restart.probability", "0"),
            ("job.long_share", "0"),
        ]
    }

    fn faults_on(settings: &Settings) -> usize {
        let forgetting = settings.forgetting.iter();
        let on = forgetting.filter(|p| p.probability.get() > 0.0).count();
        usize::from(settings.job_fail.get() > 0.0) + on
    }
}

/// What a swarm run drew beyond the faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwarmDraw {
    /// The renewal was taken away (value 1 of its draw).
    pub renewal_off: bool,
    /// The store's compare-and-delete was taken away (value 1 of its draw).
    pub compare_and_delete_off: bool,
}

/// What one run of the holder-lock system drew.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    /// Every replica's worker configuration in this run.
    pub claim: ClaimConfig,
    /// The store can compare and delete in one step in this run.
    pub compare_and_delete: bool,
    /// The job (its `long_share` as drawn).
    pub job: JobSection,
    /// Probability a job step fails.
    pub job_fail: f64,
    /// The store's forgetting in this run, by [`Forgetting::index`].
    pub forgetting: [Tick; 3],
    /// What a swarm run drew (`None` without swarm).
    pub swarm: Option<SwarmDraw>,
}
