//! A system written outside the harness's crates proves its extension points: the toy fenced
//! counter of this crate (its own service, events, checkers, scenario keys, fault, workers)
//! runs through the generic scenario loader, fault layer, runner, trace renderer, shrinker
//! and facade, without being one of the harness's own systems.
//!
//! Terminology:
//! - *toy scenario*: `scenarios/counter.toml`, with `system = "toy"`: three replicas under
//!   every shared fault (latency, rejections, lost replies, pauses, a stop) and the toy's own
//!   (`claim_lost`).
//! - *defective workers*: `blind-bump` (bumps after a refused claim) and `double-bump` (bumps
//!   twice under one claim); `claimed-bump` must catch each, and its shrunk counterexample
//!   must be small.

use leasesim::testkit;
use leasesim_toy as toy;

use std::rc::Rc;

use leasesim::runner::{RunReport, RunSpec, run};
use leasesim::shrink::shrink;
use leasesim::trace::{TraceHeader, line, render};
use leasesim_events::EventKind;
use leasesim_rt::{Feed, Strategy};
use leasesim_sim::scenario::parse_scenario;
use leasesim_sim::{Scenario, System, Workers};
use leasesim_timeline::Render;
use toy::Toy;
use toy::checkers::{Invariant, Situation};

/// The toy's scenario: every shared fault on, and the toy's own.
const SCENARIO: &str = toy::SCENARIOS[0].1;

/// Seeds the correct worker must pass.
const SEEDS: u64 = 200;

fn scenario(text: &str) -> Rc<Scenario<Toy>> {
    let parsed = parse_scenario::<Toy>("counter", "toy/counter.toml", text);
    Rc::new(parsed.unwrap_or_else(|err| panic!("{err}")))
}

/// A spec of `worker` in `scenario` at `seed`, keeping events.
fn spec(scenario: &Rc<Scenario<Toy>>, worker: &str, seed: u64) -> RunSpec<Toy> {
    let factory = Toy::factory(worker).expect("a toy worker");
    let mut spec = RunSpec::new(
        scenario.clone(),
        worker,
        factory,
        Feed::Seed(seed),
        Strategy::Random,
    );
    spec.keep_events = true;
    spec
}

/// The first seed below 100 at which `worker` fails `scenario`, with its report.
fn first_failure(scenario: &Rc<Scenario<Toy>>, worker: &str) -> (u64, RunReport<Toy>) {
    (0..100)
        .map(|seed| (seed, run(&spec(scenario, worker, seed))))
        .find(|(_, report)| report.failed())
        .unwrap_or_else(|| panic!("{worker} passed 100 seeds"))
}

/// How many runs showed each kind of fault, shared and the toy's own.
#[derive(Debug, Default)]
struct FaultsSeen {
    rejected: u64,
    reply_lost: u64,
    paused: u64,
    stopped: u64,
    claim_lost: u64,
    fenced: u64,
}

#[test]
fn the_correct_toy_worker_passes_its_scenario_with_every_fault_on() {
    let scenario = scenario(SCENARIO);
    let mut seen = FaultsSeen::default();
    for seed in 0..SEEDS {
        let mut spec = spec(&scenario, "correct", seed);
        if seed % 2 == 1 {
            spec = RunSpec {
                strategy: Strategy::Pct { depth: 3 },
                ..spec
            }
            .calibrated();
        }
        let report = run(&spec);
        assert!(
            report.outcome.is_pass(),
            "seed {seed}: {}",
            report.outcome.verdict_line()
        );
        let any = |wanted: fn(&EventKind<Toy>) -> bool| {
            u64::from(report.events.iter().any(|e| wanted(&e.event.kind)))
        };
        seen.rejected += any(|k| matches!(k, EventKind::Rejected { .. }));
        seen.reply_lost += any(|k| matches!(k, EventKind::ReplyLost { .. }));
        seen.paused += any(|k| matches!(k, EventKind::Paused { .. }));
        seen.stopped += any(|k| matches!(k, EventKind::StopCalled));
        seen.claim_lost += u64::from(report.coverage.contains(Situation::ClaimLost));
        seen.fenced += u64::from(report.coverage.contains(Situation::BumpFenced));
    }
    // The faults really struck: the shared layer applies to the toy as to any system.
    let counts = [
        seen.rejected,
        seen.reply_lost,
        seen.paused,
        seen.stopped,
        seen.claim_lost,
        seen.fenced,
    ];
    assert!(counts.iter().all(|&runs| runs >= SEEDS / 4), "{seen:?}");
}

#[test]
fn the_shared_proofs_run_on_a_system_the_registry_does_not_know() {
    let scenarios = [scenario(SCENARIO)];
    testkit::correct_passes_every_scenario(&scenarios, 20);
    let caught = testkit::defects_caught_by_their_invariants(&scenarios, 50);
    let names: Vec<&str> = caught.iter().map(|(worker, _)| worker.as_str()).collect();
    assert_eq!(names, ["blind-bump", "double-bump"]);
}

#[test]
fn a_system_of_ones_own_is_checked_through_the_library_entries() {
    let scenario = (*scenario(SCENARIO)).clone();
    let correct = Toy::factory("correct").expect("the toy's correct worker");
    let summary = leasesim::check_system(scenario.clone(), move |ports| correct(ports)).seeds(50);
    assert_eq!((summary.seeds, summary.skipped), (50, false));
    let failure = leasesim::check_builtin::<Toy>(scenario.clone(), "blind-bump")
        .try_seeds(100)
        .expect_err("blind-bump is caught")
        .into_failure()
        .expect("a seed failed, not the input");
    assert_eq!(failure.outcome.label(), "claimed-bump");
    // The leasesim binary does not know the toy: no replay line it could not run.
    assert!(
        !failure.replay.contains("leasesim replay"),
        "{}",
        failure.replay
    );
    assert!(
        failure.replay.contains("LEASESIM_SEED="),
        "{}",
        failure.replay
    );
    let unknown = leasesim::check_builtin::<Toy>(scenario, "stale-release").try_seeds(1);
    match unknown {
        Err(leasesim::CheckError::Input(err)) => {
            assert_eq!(
                err.to_string(),
                "unknown worker `stale-release`; valid: correct, blind-bump, double-bump"
            );
        }
        other => panic!(
            "a retention worker name ran a toy check: {:?}",
            other.map(|s| s.seeds)
        ),
    }
}

#[test]
fn each_defective_toy_worker_is_caught_by_its_invariant_and_shrinks_small() {
    let scenario = scenario(SCENARIO);
    let defective = Toy::workers().into_iter().filter(|w| w.name != "correct");
    for info in defective {
        let (seed, report) = first_failure(&scenario, info.name);
        let caught = report.outcome.invariant().map(|i| i.name());
        assert_eq!(caught, Some(info.caught_by[0]), "{} seed {seed}", info.name);
        let shrunk = shrink(&spec(&scenario, info.name, seed), 5_000).expect("it fails");
        let events = shrunk.report.stats.events;
        assert_eq!(
            shrunk.report.outcome.invariant(),
            report.outcome.invariant()
        );
        assert!(
            events < shrunk.original_events,
            "{events} of {}",
            shrunk.original_events
        );
        // One replica and one or two rounds: 14 events for blind-bump, 9 for double-bump.
        assert!(events <= 16, "{}: shrunk to {events} events", info.name);
    }
}

#[test]
fn the_trace_shows_the_toys_own_lines_under_a_toy_header() {
    let scenario = scenario(SCENARIO);
    let (seed, report) = first_failure(&scenario, "blind-bump");
    let head = TraceHeader::of(&spec(&scenario, "blind-bump", seed), format!("seed {seed}"));
    let trace = render(&head, &report);
    let header: Vec<&str> = trace.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(header[0], "system:   toy");
    assert!(header.contains(&"worker:   blind-bump"), "{header:#?}");
    assert!(header.contains(&"checkers: 2 halting (all)"), "{header:#?}");
    assert!(
        header.iter().any(|l| l.ends_with("claim-lost: p=0.1")),
        "{header:#?}"
    );
    assert!(trace.contains("!! claimed-bump violated: "), "{trace}");
    // Every event's line is in the trace, and the toy's parts read as its System says.
    for event in &report.events {
        assert!(trace.contains(&line(event)), "missing: {}", line(event));
        let own = match &event.event.kind {
            EventKind::Call { request, .. } => Toy::request_text(request),
            EventKind::Applied { applied, .. } => Toy::applied_text(applied),
            EventKind::Answered { answer, .. } => Toy::answer_text(answer),
            EventKind::Note(note) => Toy::note_text(note),
            _ => continue,
        };
        assert!(line(event).ends_with(&own) || line(event).contains(&format!("{own} #")));
    }
    for expected in [
        "-> claim #",
        ": granted token=",
        "<- claim #",
        "-> bump token=",
        "run() round 1 begins",
    ] {
        assert!(trace.contains(expected), "no `{expected}` in\n{trace}");
    }
}

#[test]
fn a_bad_toy_scenario_is_refused_at_its_place_with_the_valid_keys() {
    // (the file's tail after `system` and `description`, where the error points, what it says)
    let cases = [
        // An unknown key inside the toy's own table: serde names the toy's keys.
        (
            "[claim]\nttl = 5\n",
            "4:1",
            "unknown field `ttl`, expected `ttl_ms` or `fencing`",
        ),
        // A wrong-typed value of the toy's.
        (
            "[claim]\nttl_ms = \"soon\"\n",
            "4:10",
            "invalid type: string \"soon\"",
        ),
        // Keys the shared loader routes: it lists the shared keys and the toy's.
        (
            "[claims]\n",
            "3:2",
            "for a toy scenario; valid: description, system,",
        ),
        (
            "[faults]\nclaim_lots = 0.5\n",
            "4:1",
            "valid: reject, request_lost, reply_lost, timeout_ms, pause, claim_lost",
        ),
        (
            "[faults.reject]\ndelete = 0.5\n",
            "4:10",
            "the toy system's operations are claim, bump",
        ),
        (
            "expect = [\"stale-token-delete\"]\n",
            "3:11",
            "valid: stale-bump, claimed-bump",
        ),
    ];
    for (tail, at, says) in cases {
        let text = format!("system = \"toy\"\ndescription = \"bad\"\n{tail}");
        let shown = parse_scenario::<Toy>("bad", "bad.toml", &text)
            .expect_err(tail)
            .to_string();
        assert!(shown.starts_with(&format!("bad.toml:{at}: ")), "{shown}");
        assert!(shown.contains(says), "{shown}");
    }
}

#[test]
fn the_same_seed_gives_the_same_toy_trace() {
    let scenario = scenario(SCENARIO);
    let trace = |seed: u64| {
        let spec = spec(&scenario, "correct", seed);
        let report = run(&spec);
        (
            report.stats.trace_hash,
            render(&TraceHeader::of(&spec, format!("seed {seed}")), &report),
        )
    };
    assert_eq!(trace(7), trace(7));
    assert_ne!(
        trace(7).0,
        trace(8).0,
        "different seeds should run differently"
    );
}

#[test]
fn with_fencing_off_the_correct_worker_shows_the_expected_stale_bump() {
    let text = SCENARIO
        .replace("ttl_ms = 400", "ttl_ms = 400\nfencing = false")
        .replace(
            "replicas = 3\n",
            "replicas = 3\nexpect = [\"stale-bump\"]\n",
        );
    let scenario = scenario(&text);
    let mut shown = 0;
    for seed in 0..40 {
        let report = run(&spec(&scenario, "correct", seed));
        assert!(
            report.outcome.is_pass(),
            "seed {seed}: {}",
            report.outcome.verdict_line()
        );
        shown += report
            .expected
            .iter()
            .filter(|v| v.invariant == Invariant::StaleBump)
            .count();
    }
    assert!(shown >= 10, "stale bumps shown in {shown} of 40 seeds");
}

#[test]
fn the_erased_facade_runs_and_shrinks_the_toy() {
    let erased = leasesim::systems::erase((*scenario(SCENARIO)).clone());
    let factory = Toy::factory("blind-bump").unwrap();
    let runner = erased
        .custom_runner("blind-bump", Box::new(factory), Strategy::Random)
        .expect("an Rc<WorkerFactory<Toy>> is a toy factory");
    let (seed, _) = first_failure(&scenario(SCENARIO), "blind-bump");
    let report = runner.run(Feed::Seed(seed), true, false);
    assert_eq!(report.invariant(), Some("claimed-bump"));
    let head = runner.header(format!("seed {seed}"));
    assert!(report.trace(&head).starts_with("system:   toy\n"));
    let shrunk = runner.shrink(Feed::Seed(seed), 5_000).expect("it fails");
    assert_eq!(shrunk.report.invariant(), Some("claimed-bump"));

    // The toy's builtin workers by name; a factory of another system is refused.
    let correct = erased
        .runner("correct", Strategy::Random)
        .expect("the toy's correct worker");
    assert!(!correct.run(Feed::Seed(seed), false, false).failed());
    let retention = leasesim::retention::Retention::factory("correct").unwrap();
    assert!(
        erased
            .custom_runner("x", Box::new(retention), Strategy::Random)
            .is_none()
    );
}

#[test]
fn an_erased_scenario_of_an_unregistered_system_names_its_system() {
    let erased = leasesim::systems::erase((*scenario(SCENARIO)).clone());
    let system = erased.system();
    assert_eq!(system.name(), "toy");
    assert_eq!(system.description(), Toy::DESCRIPTION);
    let workers: Vec<&str> = system.workers().iter().map(|w| w.name).collect();
    assert_eq!(workers, ["correct", "blind-bump", "double-bump"]);
    let invariants: Vec<&str> = system.invariants().iter().map(|(n, _)| *n).collect();
    let expected: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
    assert_eq!(invariants, expected);
    let situations: Vec<&str> = system.situations().iter().map(|(n, _)| *n).collect();
    let expected: Vec<&str> = Situation::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(situations, expected);
    // The entry parses the toy's files too, and the registry is left as it was.
    let again = system
        .parse("counter", "again.toml", SCENARIO)
        .expect("a toy scenario");
    assert!(again.same_as(erased.as_ref()));
    assert!(leasesim::systems::system("toy").is_none());
}
