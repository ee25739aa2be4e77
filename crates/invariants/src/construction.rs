//! `construction`, for any system: a core is built as asked, and refuses settings no run
//! could keep.
//!
//! Terminology:
//! - *settings*: what a worker core is built from besides its ports (`WorkerConfig`,
//!   `ClaimConfig`).
//! - *rule*: one condition a system puts on its settings, stated by the harness on its own
//!   ([`SettingsRule`]): the setting it constrains, whether given settings keep it, and two
//!   settings derived from a run's valid ones: the *edge* (the valid settings nearest the
//!   rule's boundary) and the *past* (one step past it).
//! - *probe*: builds the core from the run's settings and from each rule's edge and past
//!   ([`probe`]). The core must accept the run's settings and every edge, refuse every past
//!   with a message that names the setting, and read back what it was built with (its
//!   accessors: the owner id, the settings); its `Default` settings must be the ones it
//!   documents.
//! - *finding*: the first thing a probe found wrong ([`ConstructionFinding`]). A system's
//!   production factory runs the probe each time it builds a worker and records a finding as
//!   a note; the checker fails the run on it.
//!
//! Swarm runs draw some settings (retention's batch sizes and caps, reservations' claim
//! durations, holder-lock's renewal on or off), so the edges and pasts move from run to run:
//! a campaign probes those rules at many boundaries, where a unit test probes one.

use std::fmt::{self, Debug};

use leasesim_events::{Event, EventKind, Stamped, Vocabulary};
use serde::Serialize;

use crate::{Checker, Judged, Violation};

/// What a run that keeps `construction` guarantees, in every system's words.
pub const CONSTRUCTION_HOLDS_WHEN: &str = "the production core accepts the run's settings and \
     the valid settings at each rule's boundary, refuses settings one step past each rule with a \
     message naming the setting, its accessors read back what it was built with, and its default \
     settings are the documented ones";

/// What a system states about its core's settings: its rules, and the defaults the core
/// documents (what its `Default` must give).
pub struct SettingsRules<C: 'static> {
    pub rules: &'static [SettingsRule<C>],
    /// The defaults as the core's documentation states them, written out by the harness.
    pub documented_default: fn() -> C,
}

/// One rule on a core's settings (see the module docs).
pub struct SettingsRule<C> {
    /// Its kebab-case name (`batch-within-cap`), as a finding names it.
    pub name: &'static str,
    /// The setting a refusal of settings that break this rule may name (`batch_rows`).
    pub setting: &'static str,
    /// Do these settings keep the rule?
    pub holds: fn(&C) -> bool,
    /// The valid settings nearest the boundary, from valid ones.
    pub edge: fn(&C) -> C,
    /// One step past the boundary, from valid ones.
    pub past: fn(&C) -> C,
}

/// What building a core from some settings gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Built {
    /// The core was built; each accessor read back, and whether it read what was given.
    Accepted(Vec<Readback>),
    /// The constructor refused, with this message.
    Refused(String),
}

/// One accessor of a freshly built core, read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Readback {
    /// The accessor (`owner_id`).
    pub accessor: &'static str,
    /// It returned what the core was built with.
    pub kept: bool,
}

/// Which settings a finding concerns, and what the core did wrong with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConstructionProblem {
    /// The run's own settings, which keep every rule, were refused.
    RunRefused,
    /// The rule's edge, which keeps every rule, was refused.
    EdgeRefused,
    /// The rule's past was accepted.
    PastAccepted,
    /// The rule's past was refused with a message that names no setting of a rule it breaks.
    PastUnnamed,
    /// An accessor of a core built from the run's settings read back something else.
    Readback(&'static str),
    /// The core's default settings are not the ones it documents.
    DefaultUndocumented,
}

/// The first thing a probe found wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ConstructionFinding {
    /// The rule concerned (`run` for the run's own settings).
    pub rule: &'static str,
    pub problem: ConstructionProblem,
}

impl fmt::Display for ConstructionFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = self.rule;
        match self.problem {
            ConstructionProblem::RunRefused => {
                write!(
                    f,
                    "the core refused the run's settings, which keep every rule"
                )
            }
            ConstructionProblem::EdgeRefused => write!(
                f,
                "the core refused the edge of rule {rule}: settings that keep every rule"
            ),
            ConstructionProblem::PastAccepted => {
                write!(f, "the core accepted settings one step past rule {rule}")
            }
            ConstructionProblem::PastUnnamed => write!(
                f,
                "the core refused settings one step past rule {rule} without naming the setting"
            ),
            ConstructionProblem::Readback(accessor) => write!(
                f,
                "{accessor}() of a core built from the run's settings read back something else"
            ),
            ConstructionProblem::DefaultUndocumented => {
                write!(
                    f,
                    "the core's default settings are not the ones it documents"
                )
            }
        }
    }
}

/// Probes a core's constructor with the run's settings `run` (which keep every rule) and with
/// each rule's edge and past, and its default settings against the documented ones; `build`
/// builds the core from settings. The first finding, if any.
pub fn probe<C: Debug + Default + PartialEq>(
    run: &C,
    settings: &SettingsRules<C>,
    build: impl Fn(&C) -> Built,
) -> Option<ConstructionFinding> {
    let rules = settings.rules;
    let keeps_all = |settings: &C| rules.iter().all(|rule| (rule.holds)(settings));
    // invariant: the probe starts from settings the harness itself holds valid.
    assert!(keeps_all(run), "the run's settings break a rule: {run:?}");
    let finding = |rule, problem| Some(ConstructionFinding { rule, problem });
    match build(run) {
        Built::Refused(_) => return finding("run", ConstructionProblem::RunRefused),
        Built::Accepted(readbacks) => {
            if let Some(wrong) = readbacks.iter().find(|readback| !readback.kept) {
                return finding("run", ConstructionProblem::Readback(wrong.accessor));
            }
        }
    }
    if C::default() != (settings.documented_default)() {
        return finding("default", ConstructionProblem::DefaultUndocumented);
    }
    for rule in rules {
        let (edge, past) = ((rule.edge)(run), (rule.past)(run));
        // invariant: the edge keeps every rule and the past breaks its own, so the verdicts
        // below are the harness's, not the core's.
        assert!(
            keeps_all(&edge),
            "{}: the edge breaks a rule: {edge:?}",
            rule.name
        );
        assert!(
            !(rule.holds)(&past),
            "{}: the past keeps it: {past:?}",
            rule.name
        );
        // A past may break a rule its own implies (`1 <= renew < lease` implies `lease >= 2`):
        // a refusal names any setting of a rule the past breaks.
        let named = |message: &str| {
            rules
                .iter()
                .filter(|other| !(other.holds)(&past))
                .any(|other| message.contains(other.setting))
        };
        if let Built::Refused(_) = build(&edge) {
            return finding(rule.name, ConstructionProblem::EdgeRefused);
        }
        match build(&past) {
            Built::Accepted(_) => return finding(rule.name, ConstructionProblem::PastAccepted),
            Built::Refused(message) if !named(&message) => {
                return finding(rule.name, ConstructionProblem::PastUnnamed);
            }
            Built::Refused(_) => {}
        }
    }
    None
}

/// A system whose notes carry construction findings: one note variant, in a note class of its
/// own.
pub trait ConstructionNotes: Vocabulary {
    /// The interest bit of the note class of findings.
    const CONSTRUCTION_NOTES: u32;

    /// The note that records `finding`.
    fn construction_note(finding: ConstructionFinding) -> Self::Note;

    /// The finding `note` records, if it records one.
    fn construction_finding(note: &Self::Note) -> Option<ConstructionFinding>;
}

/// `construction`: no probe of the run found anything (see the module docs).
#[derive(Debug)]
pub struct Construction<V: Judged> {
    invariant: V::Invariant,
}

impl<V: Judged + ConstructionNotes> Construction<V> {
    /// The checker, reporting as the system's `invariant`.
    pub fn new(invariant: V::Invariant) -> Construction<V> {
        Construction { invariant }
    }
}

impl<V: Judged + ConstructionNotes> Checker<V> for Construction<V> {
    fn invariant(&self) -> V::Invariant {
        self.invariant
    }

    fn wants(&self, kind: &EventKind<V>) -> bool {
        kind.bit() & V::CONSTRUCTION_NOTES != 0
    }

    fn on_event(&mut self, event: &Stamped<Event<V>>, _facts: &V::Facts) -> Option<Violation<V>> {
        let EventKind::Note(note) = &event.event.kind else {
            return None;
        };
        let found = V::construction_finding(note)?;
        let who = match event.event.replica {
            Some(replica) => format!("building {replica}'s worker, "),
            None => String::new(),
        };
        let sentence = format!("{who}{found}");
        Some(Violation::new(self.invariant, event, [], sentence))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Settings of a toy core: `1 <= batch <= cap`; by default a batch of 1 and a cap of 10.
    #[derive(Clone, Debug, PartialEq)]
    struct Toy {
        batch: u32,
        cap: u32,
    }

    impl Default for Toy {
        fn default() -> Self {
            Toy { batch: 1, cap: 10 }
        }
    }

    const RULES: SettingsRules<Toy> = SettingsRules {
        rules: TOY_RULES,
        documented_default: || Toy { batch: 1, cap: 10 },
    };

    const TOY_RULES: &[SettingsRule<Toy>] = &[
        SettingsRule {
            name: "batch-positive",
            setting: "batch",
            holds: |toy| toy.batch >= 1,
            edge: |toy| Toy { batch: 1, ..*toy },
            past: |toy| Toy { batch: 0, ..*toy },
        },
        SettingsRule {
            name: "batch-within-cap",
            setting: "cap",
            holds: |toy| toy.batch <= toy.cap,
            edge: |toy| Toy {
                cap: toy.batch,
                ..*toy
            },
            past: |toy| Toy {
                cap: toy.batch - 1,
                ..*toy
            },
        },
    ];

    /// A toy constructor with `check` as its validation.
    fn builder(check: fn(&Toy) -> Result<(), &'static str>) -> impl Fn(&Toy) -> Built {
        move |toy| match check(toy) {
            Ok(()) => Built::Accepted(vec![Readback {
                accessor: "batch",
                kept: true,
            }]),
            Err(message) => Built::Refused(message.to_owned()),
        }
    }

    fn right(toy: &Toy) -> Result<(), &'static str> {
        match (toy.batch == 0, toy.batch > toy.cap) {
            (true, _) => Err("batch is zero"),
            (_, true) => Err("batch above cap"),
            _ => Ok(()),
        }
    }

    fn found(check: fn(&Toy) -> Result<(), &'static str>) -> Option<ConstructionFinding> {
        probe(&Toy { batch: 3, cap: 10 }, &RULES, builder(check))
    }

    #[test]
    fn a_core_that_keeps_every_rule_gives_no_finding() {
        assert_eq!(found(right), None);
    }

    #[test]
    fn a_boundary_moved_by_one_is_found_on_its_side() {
        let too_strict = |toy: &Toy| {
            if toy.batch >= toy.cap {
                Err("batch above cap")
            } else {
                right(toy)
            }
        };
        // The cap loosened by one, the zero batch still refused.
        let too_lax = |toy: &Toy| match (toy.batch == 0, toy.batch > toy.cap + 1) {
            (true, _) => Err("batch is zero"),
            (_, true) => Err("batch above cap"),
            _ => Ok(()),
        };
        assert_eq!(
            found(too_strict),
            Some(ConstructionFinding {
                rule: "batch-within-cap",
                problem: ConstructionProblem::EdgeRefused
            })
        );
        assert_eq!(
            found(too_lax),
            Some(ConstructionFinding {
                rule: "batch-within-cap",
                problem: ConstructionProblem::PastAccepted
            })
        );
    }

    #[test]
    fn a_refusal_must_name_the_setting_and_accessors_must_read_back() {
        let silent = |toy: &Toy| right(toy).map_err(|_| "");
        assert_eq!(
            found(silent),
            Some(ConstructionFinding {
                rule: "batch-positive",
                problem: ConstructionProblem::PastUnnamed
            })
        );
        let forgetful = |_: &Toy| {
            Built::Accepted(vec![Readback {
                accessor: "owner_id",
                kept: false,
            }])
        };
        assert_eq!(
            probe(&Toy { batch: 3, cap: 10 }, &RULES, forgetful),
            Some(ConstructionFinding {
                rule: "run",
                problem: ConstructionProblem::Readback("owner_id")
            })
        );
    }

    #[test]
    fn a_default_other_than_the_documented_one_is_found() {
        let other = SettingsRules {
            rules: TOY_RULES,
            documented_default: || Toy { batch: 1, cap: 20 },
        };
        assert_eq!(
            probe(&Toy { batch: 3, cap: 10 }, &other, builder(right)),
            Some(ConstructionFinding {
                rule: "default",
                problem: ConstructionProblem::DefaultUndocumented
            })
        );
    }

    #[test]
    fn refusing_everything_is_found_at_the_run_settings() {
        let refuse = |_: &Toy| Err("batch");
        assert_eq!(
            found(refuse),
            Some(ConstructionFinding {
                rule: "run",
                problem: ConstructionProblem::RunRefused
            })
        );
    }
}
