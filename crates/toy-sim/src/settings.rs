//! The toy's part of a scenario file, and what one run draws from it.
//!
//! Terminology:
//! - *settings*: `[claim]` (`ttl_ms`: a claim's lifetime; `fencing`: the service refuses a
//!   bump whose token is not the live claim's) and the toy's own fault `[faults] claim_lost`
//!   (the probability that, as a bump is applied, the service first drops the live claim).
//! - *drawn*: the run's `claim_lost`, switched and scaled by swarm like every shared fault.
//!
//! Unknown keys are refused by the shared loader (top level, `[faults]`) and by serde's
//! `deny_unknown_fields` here (inside `[claim]`), each at its `file:line:column`.

use leasesim_sim::scenario::{Positive, Probability};
use leasesim_sim::{Env, Scale, Scenario, ScenarioError, Setup, SystemPart};
use serde::Deserialize;

use super::events::Toy;

/// `[claim]`: the counter service's claims.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClaimSection {
    /// A claim expires this long after it is granted.
    pub ttl_ms: Positive,
    /// The service refuses a bump whose token is not the live claim's (`false` shows why).
    pub fencing: bool,
}

impl Default for ClaimSection {
    fn default() -> Self {
        ClaimSection {
            ttl_ms: Positive::new(1_000),
            fencing: true,
        }
    }
}

/// The toy's keys inside `[faults]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FaultsFile {
    claim_lost: Probability,
}

/// The toy's keys as written (the loader hands over only `claim` and `faults.claim_lost`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsFile {
    #[serde(default)]
    claim: ClaimSection,
    #[serde(default)]
    faults: FaultsFile,
}

/// The toy's checked settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub claim: ClaimSection,
    pub claim_lost: Probability,
}

/// The toy's part of a scenario, and what a run draws from it.
impl Setup for Toy {
    const KEYS: &'static [&'static str] = &["claim"];
    const FAULT_KEYS: &'static [&'static str] = &["claim_lost"];
    type Settings = Settings;
    type Drawn = Drawn;

    /// Checks the toy's part of a scenario file.
    fn settings(part: SystemPart<'_>) -> Result<Settings, ScenarioError> {
        let file: SettingsFile = part.deserialize()?;
        Ok(Settings {
            claim: file.claim,
            claim_lost: file.faults.claim_lost,
        })
    }

    /// Draws the toy's part of a run's profile (after the shared part).
    fn draw(scenario: &Scenario<Toy>, env: &dyn Env<Toy>, scale: &Scale<'_>) -> Drawn {
        let (settings, _) = (&scenario.settings, env);
        let drawn = Drawn {
            claim_lost: scale.apply(settings.claim_lost.get()),
        };
        // invariant: a drawn fault stays within its envelope.
        debug_assert!(drawn.claim_lost <= settings.claim_lost.get());
        drawn
    }

    /// Header lines of the toy's drawn part (a fault that is off is left out).
    fn describe(drawn: &Drawn) -> Vec<String> {
        if drawn.claim_lost == 0.0 {
            return Vec::new();
        }
        let p = leasesim_sim::faults::probability_text(drawn.claim_lost);
        vec![format!("claim-lost: p={p}")]
    }

    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[("faults.claim_lost", "0")]
    }

    fn faults_on(settings: &Settings) -> usize {
        usize::from(settings.claim_lost.get() > 0.0)
    }
}

/// What one toy run drew.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    /// Probability a bump's apply first drops the live claim.
    pub claim_lost: f64,
}
