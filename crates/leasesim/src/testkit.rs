//! The proofs every system owes, written once, generic over its [`System`]: for a system's
//! own tests (and a user's system's).
//!
//! Terminology:
//! - *builtin scenarios*: the system's default scenarios (`scenarios/SYSTEM/`).
//! - *declared invariants*: the invariants a defective worker's catalogue entry says catch it
//!   (`WorkerInfo::caught_by`).
//! - *probe*: reads the situation a scenario is named after off its runs ([`Probe`]); a
//!   *control* is a scenario where that situation cannot happen.
//!
//! Each function panics with a sentence naming what does not hold: the scenario, strategy and
//! seed of a failing run of the production worker; the worker, strategy and seed count of a
//! defect no declared invariant caught; the scenario whose situation did not happen.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use leasesim_sim::System;
use leasesim_timeline::Render;

use leasesim_sim::Scenario;

use crate::catalog::{builtin_names_of, resolve_typed};
use crate::detect::detect_range;
use crate::runner::{RunReport, RunSpec, run};
use crate::systems::erase;
use leasesim_rt::Feed;

use crate::Strategy;

/// The strategies a proof runs under: random, and PCT at depth 3.
pub const STRATEGIES: [Strategy; 2] = [Strategy::Random, Strategy::Pct { depth: 3 }];

/// The builtin scenarios of a registered system `S`.
pub fn builtin<S: System + Render>() -> Vec<Rc<Scenario<S>>> {
    let names = builtin_names_of(S::NAME);
    assert!(!names.is_empty(), "{} has no builtin scenario", S::NAME);
    names
        .into_iter()
        .map(|name| Rc::new(load::<S>(name)))
        .collect()
}

/// The builtin scenario `name` of `S`.
fn load<S: System + Render>(name: &str) -> Scenario<S> {
    resolve_typed::<S>(name).unwrap_or_else(|error| panic!("{}: {name}: {error}", S::NAME))
}

/// A run of `worker` on `scenario`, from `seed`.
pub fn spec<S: System + Render>(
    scenario: &Rc<Scenario<S>>,
    worker: &str,
    seed: u64,
    strategy: Strategy,
) -> RunSpec<S> {
    let factory =
        S::factory(worker).unwrap_or_else(|| panic!("{}: no worker named {worker}", S::NAME));
    RunSpec::new(
        scenario.clone(),
        worker,
        factory,
        Feed::Seed(seed),
        strategy,
    )
}

/// The production worker passes every one of `scenarios` at seeds `0..seeds`, under random
/// and PCT depth 3.
pub fn correct_passes_every_scenario<S: System + Render>(
    scenarios: &[Rc<Scenario<S>>],
    seeds: u64,
) {
    for scenario in scenarios {
        let name = &scenario.name;
        for strategy in STRATEGIES {
            let base = spec(scenario, "correct", 0, strategy).calibrated();
            for seed in 0..seeds {
                let report = run(&RunSpec {
                    feed: Feed::Seed(seed),
                    ..base.clone()
                });
                assert!(
                    report.outcome.is_pass(),
                    "{} {name} {strategy} seed {seed}: {}",
                    S::NAME,
                    report.outcome.sentence()
                );
            }
        }
    }
}

/// Every defective worker of `S`'s catalogue is caught, within `max_seeds` seeds of
/// `scenarios`, by one of its declared invariants, under random (from seed 0) and PCT depth 3
/// (from seed 1,000,000); returns each worker's name and the invariant that caught it under
/// random.
pub fn defects_caught_by_their_invariants<S: System + Render>(
    scenarios: &[Rc<Scenario<S>>],
    max_seeds: u64,
) -> Vec<(String, String)> {
    let scenarios: Vec<_> = scenarios
        .iter()
        .map(|scenario| erase((**scenario).clone()))
        .collect();
    let defects: Vec<_> = S::workers()
        .into_iter()
        .filter(|info| info.name != "correct")
        .collect();
    assert!(!defects.is_empty(), "{} has no defective worker", S::NAME);
    let mut caught = Vec::new();
    for info in defects {
        assert!(
            !info.caught_by.is_empty(),
            "{} declares no invariant",
            info.name
        );
        for (strategy, start) in [(STRATEGIES[0], 0), (STRATEGIES[1], 1_000_000)] {
            let found = detect_range(
                &scenarios,
                info.name,
                info.caught_by,
                strategy,
                start,
                max_seeds,
            );
            let (seeds, _, scenario, invariant) = found.detected.unwrap_or_else(|| {
                panic!(
                    "{} ({strategy}) was not caught by {:?} within {max_seeds} seeds",
                    info.name, info.caught_by
                )
            });
            // invariant: detection stops only at a declared invariant.
            assert!(info.caught_by.contains(&invariant.as_str()));
            println!(
                "{} ({strategy}): {invariant} in {scenario} after {seeds} seeds",
                info.name
            );
            if start == 0 {
                caught.push((info.name.to_string(), invariant));
            }
        }
    }
    caught
}

/// How a scenario's situation is read off its runs.
#[derive(Clone, Copy)]
pub enum Probe<S: System + Render> {
    /// Off each run: it must hold in most seeds.
    EachRun(fn(&RunReport<S>) -> bool),
    /// Off the runs together (a swarm scenario switching faults between seeds).
    AcrossSeeds(fn(&[RunReport<S>]) -> bool),
}

/// Every builtin scenario of a registered `S` has one row of `probes` (scenario, probe,
/// control); each scenario's situation happens in more than half of `seeds` runs of the
/// production worker (`AcrossSeeds`: over them), and in none of its control's.
pub fn scenarios_make_their_situations<S: System + Render>(
    probes: &[(&str, Probe<S>, &str)],
    seeds: u64,
) {
    let files: BTreeSet<&str> = builtin_names_of(S::NAME).into_iter().collect();
    let probed: BTreeSet<&str> = probes.iter().map(|(name, _, _)| *name).collect();
    assert_eq!(files, probed, "every scenario file needs exactly one probe");
    for (name, _, control) in probes {
        assert!(
            files.contains(control) && control != name,
            "{name}: bad control {control}"
        );
    }
    let runs_of = |name: &str| -> Vec<RunReport<S>> {
        let scenario = Rc::new(load::<S>(name));
        (0..seeds)
            .map(|seed| {
                run(&RunSpec {
                    keep_events: true,
                    ..spec(&scenario, "correct", seed, Strategy::Random)
                })
            })
            .collect()
    };
    let score = |probe: Probe<S>, runs: &[RunReport<S>]| match probe {
        Probe::EachRun(holds) => runs.iter().filter(|report| holds(report)).count(),
        Probe::AcrossSeeds(holds) => usize::from(holds(runs)) * runs.len(),
    };
    let names: BTreeSet<&str> = probes.iter().flat_map(|(s, _, c)| [*s, *c]).collect();
    let runs: BTreeMap<&str, Vec<RunReport<S>>> = names.iter().map(|n| (*n, runs_of(n))).collect();
    let mut wrong = Vec::new();
    for &(name, probe, control) in probes {
        let hits = score(probe, &runs[name]);
        let false_hits = score(probe, &runs[control]);
        println!("{name}: {hits} of {seeds}; in control {control}: {false_hits}");
        if hits * 2 <= seeds as usize {
            wrong.push(format!(
                "{name}: its situation happened in only {hits} of {seeds} runs"
            ));
        }
        if false_hits > 0 {
            wrong.push(format!(
                "{name}: its situation happened in control {control}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
