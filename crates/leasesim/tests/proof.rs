//! The harness finds the review's bugs, and the real worker survives every scenario.
//!
//! The full-size figures (20,000 seeds per scenario; seeds-to-detect over 20 ranges) are
//! produced by the commands in docs/systems/retention.md; these tests run smaller counts of
//! the same thing.

use Probe::{AcrossSeeds, EachRun};
use leasesim::catalog::{builtin_names_of, resolve_in, resolve_typed};
use leasesim::detect::detect_range;
use leasesim::retention::{Retention, Scenario};
use leasesim::runner::{RunReport, RunSpec, run};
use leasesim::testkit;
use leasesim::{Strategy, Workers};
use leasesim_retention::checkers::{Invariant, Situation};
use leasesim_retention::events::{
    Answer, Applied, EPOCH_MS, EndKind, Event, EventKind, Failure, Note, OpKind, Phase, ReplicaId,
    Request, Stamped,
};
use leasesim_rt::Feed;
use leasesim_sim::scenario::StopAt;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// The five findings of the design review, each with the invariants that must name it. Written
/// out here on purpose (not read from the defect table) so the table cannot drift unnoticed.
const FINDINGS: [(&str, &[Invariant]); 5] = [
    (
        "interval-renewal",
        &[Invariant::SerialRenewal, Invariant::NoDeleteAfterLoss],
    ),
    ("stale-release", &[Invariant::ReleaseLatest]),
    ("moving-cutoff", &[Invariant::FixedCutoff]),
    ("uncapped", &[Invariant::TermCap]),
    (
        "unjoined-stop",
        &[Invariant::StopJoins, Invariant::ReleaseOnExit],
    ),
];

fn caught_within(worker: &str, invariants: &[Invariant], strategy: Strategy, start: u64) {
    let scenarios = resolve_in("all", Some("retention")).unwrap();
    let names: Vec<&str> = invariants.iter().map(|i| i.name()).collect();
    let result = detect_range(&scenarios, worker, &names, strategy, start, 200);
    let (seeds, runs, scenario, invariant) = result
        .detected
        .unwrap_or_else(|| panic!("{worker} ({strategy}) was not caught within 200 seeds"));
    assert!(names.contains(&invariant.as_str()));
    println!(
        "{worker} ({strategy}): caught by {invariant} in {scenario} after {seeds} seeds / {runs} runs"
    );
}

#[test]
fn each_review_finding_is_caught_by_its_own_invariant_within_200_seeds() {
    for (worker, invariants) in FINDINGS {
        caught_within(worker, invariants, Strategy::Random, 0);
        caught_within(worker, invariants, Strategy::Pct { depth: 3 }, 1_000_000);
    }
}

#[test]
fn every_defective_worker_is_caught_by_the_invariants_it_declares() {
    let caught = testkit::defects_caught_by_their_invariants(&testkit::builtin::<Retention>(), 200);
    let defects = Retention::workers().len() - 1;
    assert_eq!(caught.len(), defects);
    for (worker, _) in FINDINGS {
        assert!(caught.iter().any(|(name, _)| name == worker), "{worker}");
    }
}

fn correct_run(scenario: &str, seed: u64) -> RunReport<Retention> {
    correct_run_keeping(scenario, seed, false)
}

fn correct_run_keeping(scenario: &str, seed: u64, keep_events: bool) -> RunReport<Retention> {
    let scenario = Rc::new(resolve_typed::<Retention>(scenario).unwrap());
    let spec = RunSpec {
        scenario,
        worker: "correct".into(),
        factory: Retention::factory("correct").unwrap(),
        feed: Feed::Seed(seed),
        strategy: if seed.is_multiple_of(2) {
            Strategy::Random
        } else {
            Strategy::Pct { depth: 3 }
        },
        keep_events,
        record_choices: false,
        event_limit: None,
        pct_steps: None,
        interrupt: None,
    };
    run(&spec)
}

#[test]
fn the_correct_worker_passes_every_scenario() {
    testkit::correct_passes_every_scenario(&testkit::builtin::<Retention>(), 50);
}

#[test]
fn fencing_off_reports_its_expected_stale_delete_for_the_correct_worker() {
    let seeds = 20;
    let hits = (0..seeds)
        .filter(|&seed| {
            let report = correct_run("fencing-off", seed);
            assert!(report.outcome.is_pass(), "{}", report.outcome.sentence());
            report
                .expected
                .iter()
                .any(|v| v.invariant == Invariant::StaleTokenDelete)
        })
        .count();
    assert!(
        hits >= 15,
        "stale-token-delete reported in only {hits} of {seeds} seeds"
    );
}

#[test]
fn fencing_on_never_applies_a_stale_delete() {
    // The same pauses with the store enforcing tokens: deletes carrying a token that is no
    // longer current (a rival took over, or the worker's own renewal rotated it while the
    // delete was on its way) reach the store, and the store refuses them instead.
    let seeds = 20;
    let mut refused_in = 0u64;
    for seed in 0..seeds {
        let report = correct_run_keeping("lease-expiry-successor", seed, true);
        assert!(report.outcome.is_pass(), "{}", report.outcome.sentence());
        assert!(
            !a_stale_delete_is_applied(&report),
            "seed {seed}: the fencing store applied a stale delete"
        );
        refused_in += u64::from(report.coverage.contains(Situation::StoreRejectedStale));
    }
    assert!(
        refused_in > seeds / 2,
        "the store refused a stale delete in only {refused_in} of {seeds} seeds: the stale \
         deletes this test is about hardly happen"
    );
}

// ---------------------------------------------------------------------------------------------
// Each scenario makes the situation it is named after happen
//
// Terminology:
// - *probe*: reads a scenario's situation off runs of it: `EachRun` off one run (it must hold
//   in most seeds: at least 11 of 20), `AcrossSeeds` off the 20 runs together (for swarm,
//   whose point is that seeds differ).
// - *control*: a scenario in which the situation cannot happen. The probe must be false in all
//   20 seeds of its control, so that a probe true for any run (as the old "stop-anywhere" and
//   "swarm" probes were) fails here.
// - *safety stop*: a `StopCalled` before `Phase(Liveness)`; the shutdown phase stops every
//   replica of every scenario, so only safety stops say anything about a scenario.
// - *open call*: a call its replica sent and has not had answered (a restart forgets it).

/// Seeds each scenario and each control is run with.
const PROBE_SEEDS: u64 = 20;
/// Of `PROBE_SEEDS`, how many must show an `EachRun` probe's situation: most of them.
const PROBE_MIN_HITS: usize = 11;

#[derive(Clone, Copy)]
enum Probe {
    EachRun(fn(&Scenario, &RunReport<Retention>) -> bool),
    AcrossSeeds(fn(&Scenario, &[RunReport<Retention>]) -> bool),
}

/// Every scenario file's probe and its control, one line each. A new scenario needs a line
/// here (`every_scenario_file_has_a_probe` says so).
#[rustfmt::skip]
const PROBES: &[(&str, Probe, &str)] = &[
    ("backlog-cap", EachRun(term_after_term_stops_at_the_cap), "steady"),
    ("clock-skew", EachRun(clocks_read_off_true_time_and_jump), "steady"),
    ("exact-token-renewal", EachRun(renewals_by_exact_token_fence_a_delete), "steady"),
    ("fencing-off", EachRun(|_, r| a_stale_delete_is_applied(r)), "lease-expiry-successor"),
    ("lease-expiry-successor", EachRun(a_successor_fences_out_the_old_token), "steady"),
    ("odd-batches", EachRun(the_remainder_is_asked_and_a_short_batch_ends), "steady"),
    ("release-race", EachRun(a_release_frees_nothing), "steady"),
    ("renewal-rejection", EachRun(a_rejected_renewal_ends_the_term), "steady"),
    ("renewal-reorder", EachRun(a_slow_renewal_and_a_renewal_answer_mid_delete), "steady"),
    ("reply-lost", EachRun(an_applied_request_answers_a_timeout), "steady"),
    ("slow-deletes", EachRun(time_passes_between_batches_of_a_term), "steady"),
    ("steady", EachRun(nothing_goes_wrong_and_rows_go), "reply-lost"),
    ("stop-anywhere", EachRun(a_safety_stop_lands_as_its_mode_says), "steady"),
    ("stop-during-acquire", EachRun(a_stopped_acquire_is_granted), "steady"),
    ("swarm", AcrossSeeds(swarm_switches_faults_between_seeds), "reply-lost"),
];

/// The retention system's scenario folder.
fn scenarios_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/retention")
}

/// The scenario files: the builtin list and the directory itself (they should agree).
fn scenario_files() -> BTreeSet<String> {
    let mut names: BTreeSet<String> = builtin_names_of("retention")
        .into_iter()
        .map(String::from)
        .collect();
    for entry in std::fs::read_dir(scenarios_dir()).expect("the scenarios directory") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let stem = path.file_stem().expect("a file name").to_string_lossy();
            names.insert(stem.into_owned());
        }
    }
    names
}

#[test]
fn every_scenario_file_has_a_probe() {
    let files = scenario_files();
    let probed: Vec<&str> = PROBES.iter().map(|(name, _, _)| *name).collect();
    let missing: Vec<String> = files
        .iter()
        .filter(|name| !probed.contains(&name.as_str()))
        .map(|name| {
            format!(
                "scenarios/retention/{name}.toml has no probe: add the line\n    \
                 (\"{name}\", EachRun(<probe>), \"<control>\"),\n\
                 to PROBES in crates/leasesim/tests/proof.rs, where <probe> is a \
                 fn(&Scenario, &RunReport<Retention>) -> bool that is true when the situation `{name}` is \
                 named after happened in the run (it must be, in most of {PROBE_SEEDS} seeds), \
                 and <control> a scenario in which it cannot happen (often \"steady\"; the \
                 probe must be false in all its seeds)"
            )
        })
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    for (name, _, control) in PROBES {
        assert!(
            files.contains(*name),
            "PROBES has a line for `{name}`, but there is no scenarios/{name}.toml"
        );
        assert!(
            files.contains(*control) && control != name,
            "the control of `{name}` must be another scenario file, not `{control}`"
        );
        assert_eq!(
            probed.iter().filter(|other| *other == name).count(),
            1,
            "`{name}` has more than one line in PROBES"
        );
    }
}

fn probe_runs(scenario: &Rc<Scenario>) -> Vec<RunReport<Retention>> {
    (0..PROBE_SEEDS)
        .map(|seed| {
            let factory = Retention::factory("correct").unwrap();
            let feed = Feed::Seed(seed);
            run(&RunSpec {
                keep_events: true,
                ..RunSpec::new(scenario.clone(), "correct", factory, feed, Strategy::Random)
            })
        })
        .collect()
}

/// How often `probe` held on `runs` of `scenario`: (hits, needed, out of).
fn score(
    probe: Probe,
    scenario: &Scenario,
    runs: &[RunReport<Retention>],
) -> (usize, usize, usize) {
    match probe {
        EachRun(holds) => {
            let hits = runs.iter().filter(|r| holds(scenario, r)).count();
            (hits, PROBE_MIN_HITS, runs.len())
        }
        AcrossSeeds(holds) => (usize::from(holds(scenario, runs)), 1, 1),
    }
}

/// Each default scenario is tuned so the situation it is named after happens in most seeds,
/// and the probe that reads it is false where it cannot happen. Each scenario is run once per
/// seed, serving as subject and as control.
#[test]
fn every_scenario_makes_its_named_situation_happen_in_most_seeds() {
    let names: BTreeSet<&str> = PROBES.iter().flat_map(|(s, _, c)| [*s, *c]).collect();
    let mut subject = BTreeMap::new();
    let mut control = BTreeMap::new();
    for name in names {
        let scenario = Rc::new(resolve_typed::<Retention>(name).unwrap());
        let runs = probe_runs(&scenario);
        for (probed, probe, control_name) in PROBES {
            if *probed == name {
                subject.insert(*probed, score(*probe, &scenario, &runs));
            }
            if *control_name == name {
                control.insert(*probed, score(*probe, &scenario, &runs));
            }
        }
    }
    let mut wrong = Vec::new();
    for (name, _, control_name) in PROBES {
        let (hits, needed, out_of) = subject[name];
        let (false_hits, _, control_out_of) = control[name];
        println!(
            "{name}: its situation happened in {hits} of {out_of}; \
             in control {control_name}: {false_hits} of {control_out_of}"
        );
        if hits < needed {
            wrong.push(format!(
                "{name}: its situation happened in only {hits} of {out_of}"
            ));
        }
        if false_hits > 0 {
            wrong.push(format!(
                "{name}: the probe also holds in {false_hits} of {control_out_of} runs of \
                 {control_name}, where the situation cannot happen: it proves nothing"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// --- reading runs ----------------------------------------------------------------------------

/// Index of `Phase(Liveness)`: the safety phase is every event before it.
fn liveness_index(report: &RunReport<Retention>) -> usize {
    report
        .events
        .iter()
        .position(|e| e.event.kind == EventKind::Phase(Phase::Liveness))
        .expect("every run has a liveness phase")
}

/// Open calls of every replica, walked event by event: (replica, call) -> (op, sent at ms).
#[derive(Default)]
struct OpenCalls(BTreeMap<(ReplicaId, u64), (OpKind, u64)>);

impl OpenCalls {
    /// Takes in one event (query before calling this for the same event).
    fn see(&mut self, event: &Stamped<Event>) {
        let Some(replica) = event.event.replica else {
            return;
        };
        match event.event.kind {
            EventKind::Call { call, request } => {
                self.0.insert((replica, call), (request.op(), event.at_ms));
            }
            EventKind::Answered { call, .. } => {
                self.0.remove(&(replica, call));
            }
            EventKind::Restarted => self.0.retain(|(of, _), _| *of != replica),
            _ => {}
        }
    }

    fn has(&self, replica: ReplicaId, op: OpKind) -> bool {
        self.0
            .iter()
            .any(|((of, _), (open, _))| *of == replica && *open == op)
    }

    fn sent_at_ms(&self, replica: ReplicaId, call: u64) -> Option<u64> {
        self.0.get(&(replica, call)).map(|(_, at_ms)| *at_ms)
    }
}

fn kinds(report: &RunReport<Retention>) -> impl Iterator<Item = EventKind> + '_ {
    report.events.iter().map(|e| e.event.kind)
}

fn clock_is_skewed(report: &RunReport<Retention>) -> bool {
    report
        .profile
        .clocks
        .iter()
        .any(|c| c.offset_ms != 0 || c.drift_ppm != 0)
}

// --- the probes, one per scenario ------------------------------------------------------------

/// backlog-cap: at least five terms stop at the cap (the backlog is six caps deep), and the
/// capped terms are not all one replica's: a capped term yields.
fn term_after_term_stops_at_the_cap(_: &Scenario, report: &RunReport<Retention>) -> bool {
    let capped: Vec<ReplicaId> = report
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.event.kind,
                EventKind::Note(Note::TermEnded {
                    end: EndKind::CapReached,
                    ..
                })
            )
        })
        .filter_map(|e| e.event.replica)
        .collect();
    let replicas: BTreeSet<ReplicaId> = capped.iter().copied().collect();
    capped.len() >= 5 && replicas.len() >= 2
}

/// exact-token-renewal: the lease service renews only for the exact current token, renewals
/// are granted, and a delete still in flight when a renewal rotated the token is refused.
fn renewals_by_exact_token_fence_a_delete(
    scenario: &Scenario,
    report: &RunReport<Retention>,
) -> bool {
    let renewed = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Applied {
                applied: Applied::Renewed { .. },
                ..
            }
        )
    });
    scenario.settings.lease.exact_token
        && renewed
        && report.coverage.contains(Situation::StoreRejectedStale)
}

/// odd-batches: a term asks for exactly the cap's remainder (a cap that is not a multiple of
/// the batch), and a short answer ends a term.
fn the_remainder_is_asked_and_a_short_batch_ends(
    scenario: &Scenario,
    report: &RunReport<Retention>,
) -> bool {
    let (batch, cap) = (
        scenario.settings.worker.batch_rows,
        scenario.settings.worker.cap_rows,
    );
    let remainder = cap % batch;
    let asked = kinds(report).any(|k| match k {
        EventKind::Call {
            request: Request::Delete { limit, .. },
            ..
        } => remainder > 0 && limit == remainder,
        _ => false,
    });
    let short = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Applied {
                applied: Applied::Deleted { held_back: 1.., .. },
                ..
            }
        )
    });
    let drained = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Note(Note::TermEnded {
                end: EndKind::Drained,
                ..
            })
        )
    });
    asked && short && drained
}

/// clock-skew: clocks are drawn skewed, read at least a second off true time, and jump.
fn clocks_read_off_true_time_and_jump(_: &Scenario, report: &RunReport<Retention>) -> bool {
    let off = report.events.iter().any(|e| match e.event.kind {
        EventKind::ClockRead { now_ms } => now_ms.abs_diff(EPOCH_MS + e.at_ms) >= 1_000,
        _ => false,
    });
    let jumped = kinds(report).any(|k| matches!(k, EventKind::ClockJumped { .. }));
    clock_is_skewed(report) && off && jumped
}

/// fencing-off: the store applies a delete whose token was not the current one.
fn a_stale_delete_is_applied(report: &RunReport<Retention>) -> bool {
    kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Applied {
                applied: Applied::Deleted {
                    token_current: false,
                    ..
                },
                ..
            }
        )
    })
}

/// lease-expiry-successor: another replica is granted the lease that had expired in one
/// replica's hands, and the store then refuses a delete of that replica (before it acquires
/// again): the old token is fenced out.
fn a_successor_fences_out_the_old_token(_: &Scenario, report: &RunReport<Retention>) -> bool {
    let mut holder = BTreeMap::new();
    let mut overtaken = BTreeSet::new();
    for e in &report.events {
        let Some(replica) = e.event.replica else {
            continue;
        };
        match e.event.kind {
            EventKind::Applied {
                applied: Applied::Granted { lease, replaced },
                ..
            } => {
                overtaken.remove(&replica);
                if let Some(previous) = replaced.and_then(|old| holder.get(&old))
                    && *previous != replica
                {
                    overtaken.insert(*previous);
                }
                holder.insert(lease.token, replica);
            }
            EventKind::Applied {
                applied: Applied::Renewed { lease },
                ..
            } => {
                holder.insert(lease.token, replica);
            }
            EventKind::Applied {
                applied: Applied::DeleteRefused { .. },
                ..
            } if overtaken.contains(&replica) => return true,
            _ => {}
        }
    }
    false
}

/// release-race: a release arrives after its lease expired or moved on and frees nothing.
fn a_release_frees_nothing(_: &Scenario, report: &RunReport<Retention>) -> bool {
    report.coverage.contains(Situation::ReleaseFreedNothing)
}

/// renewal-rejection: a renewal is refused and the term ends with leadership lost by that
/// error.
fn a_rejected_renewal_ends_the_term(_: &Scenario, report: &RunReport<Retention>) -> bool {
    let mut rejected = BTreeSet::new();
    for e in &report.events {
        let Some(replica) = e.event.replica else {
            continue;
        };
        match e.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => {
                rejected.remove(&replica);
            }
            EventKind::Answered {
                op: OpKind::Renew,
                answer: Answer::Failed(Failure::Rejected),
                ..
            } => {
                rejected.insert(replica);
            }
            EventKind::Note(Note::TermEnded {
                end: EndKind::LostByError,
                ..
            }) if rejected.contains(&replica) => return true,
            _ => {}
        }
    }
    false
}

/// renewal-reorder: a renewal is still in flight when the next one falls due (its answer
/// takes longer than the renewal interval), and a renewal answer lands while a delete of the
/// same replica is in flight.
fn a_slow_renewal_and_a_renewal_answer_mid_delete(
    scenario: &Scenario,
    report: &RunReport<Retention>,
) -> bool {
    let interval_ms = scenario.settings.worker.renew_every_ms;
    let mut open = OpenCalls::default();
    let mut slow = false;
    for e in &report.events {
        if let (
            Some(replica),
            EventKind::Answered {
                call,
                op: OpKind::Renew,
                ..
            },
        ) = (e.event.replica, e.event.kind)
        {
            slow |= open
                .sent_at_ms(replica, call)
                .is_some_and(|sent_ms| e.at_ms > sent_ms + interval_ms);
        }
        open.see(e);
    }
    slow && report.coverage.contains(Situation::RenewReplyDuringDelete)
}

/// reply-lost: a request is applied, its reply lost, and its caller answered with a timeout.
fn an_applied_request_answers_a_timeout(_: &Scenario, report: &RunReport<Retention>) -> bool {
    let (mut applied, mut lost) = (BTreeSet::new(), BTreeSet::new());
    kinds(report).any(|kind| match kind {
        EventKind::Applied { call, .. } => {
            applied.insert(call);
            false
        }
        EventKind::ReplyLost { call } => {
            lost.insert(call);
            false
        }
        EventKind::Answered {
            call,
            answer: Answer::Failed(Failure::Timeout),
            ..
        } => applied.contains(&call) && lost.contains(&call),
        _ => false,
    })
}

/// slow-deletes: at least 200 ms pass between two consecutive batches of one term.
fn time_passes_between_batches_of_a_term(_: &Scenario, report: &RunReport<Retention>) -> bool {
    let mut sent = BTreeMap::new();
    report
        .events
        .iter()
        .any(|e| match (e.event.replica, e.event.kind) {
            (Some(replica), EventKind::Note(Note::TermStarted { .. })) => {
                sent.remove(&replica);
                false
            }
            (
                Some(replica),
                EventKind::Call {
                    request: Request::Delete { .. },
                    ..
                },
            ) => sent
                .insert(replica, e.at_ms)
                .is_some_and(|before| e.at_ms >= before + 200),
            _ => false,
        })
}

/// steady: no fault of any kind, no stop before shutdown, no term lost or failed, clocks
/// true, and rows get deleted.
fn nothing_goes_wrong_and_rows_go(_: &Scenario, report: &RunReport<Retention>) -> bool {
    let safety = &report.events[..liveness_index(report)];
    let fault = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Rejected { .. }
                | EventKind::ReplyLost { .. }
                | EventKind::Paused { .. }
                | EventKind::ClockJumped { .. }
                | EventKind::Note(Note::Revoked { .. })
                | EventKind::Note(Note::TermEnded {
                    end: EndKind::LostByNone
                        | EndKind::LostByError
                        | EndKind::FailedAcquire
                        | EndKind::FailedDelete,
                    ..
                })
        )
    });
    let early_stop = safety.iter().any(|e| e.event.kind == EventKind::StopCalled);
    let deleted = kinds(report).any(|k| {
        matches!(
            k,
            EventKind::Applied {
                applied: Applied::Deleted { rows: 1.., .. },
                ..
            }
        )
    });
    !fault && !early_stop && !clock_is_skewed(report) && deleted
}

/// stop-anywhere: a safety stop lands as the run's drawn stop mode says: while a call of the
/// named operation is open, while no term is open (between terms), or anywhere in the safety
/// phase (time).
fn a_safety_stop_lands_as_its_mode_says(_: &Scenario, report: &RunReport<Retention>) -> bool {
    let mode = report.profile.stop.at;
    let mut open = OpenCalls::default();
    let mut in_term = BTreeSet::new();
    for e in &report.events[..liveness_index(report)] {
        let Some(replica) = e.event.replica else {
            continue;
        };
        match e.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => {
                in_term.insert(replica);
            }
            EventKind::Note(Note::TermEnded { .. }) => {
                in_term.remove(&replica);
            }
            EventKind::StopCalled => {
                let landed = match mode {
                    StopAt::During(op) => open.has(replica, op),
                    StopAt::BetweenTerms => !in_term.contains(&replica),
                    StopAt::Time => true,
                    StopAt::None | StopAt::Anywhere => false,
                };
                if landed {
                    return true;
                }
            }
            _ => {}
        }
        open.see(e);
    }
    false
}

/// stop-during-acquire: a safety stop lands while the replica's acquire is open, and that
/// acquire then answers with a lease (which the stopped worker must release).
fn a_stopped_acquire_is_granted(_: &Scenario, report: &RunReport<Retention>) -> bool {
    let safety_end = liveness_index(report);
    let mut open = OpenCalls::default();
    let mut stopped_acquires = BTreeSet::new();
    for (index, e) in report.events.iter().enumerate() {
        let Some(replica) = e.event.replica else {
            continue;
        };
        match e.event.kind {
            EventKind::StopCalled if index < safety_end => {
                stopped_acquires.extend(
                    open.0
                        .iter()
                        .filter(|((of, _), (op, _))| *of == replica && *op == OpKind::Acquire)
                        .map(|((_, call), _)| *call),
                );
            }
            EventKind::Answered {
                call,
                answer: Answer::Lease(Some(_)),
                ..
            } if stopped_acquires.contains(&call) => return true,
            _ => {}
        }
        open.see(e);
    }
    false
}

/// One fault dimension of a run: (name, switched on in the drawn profile, seen in the run).
fn fault_dimensions(report: &RunReport<Retention>) -> Vec<(String, bool, bool)> {
    let profile = &report.profile;
    let seen = |wanted: fn(&EventKind) -> bool| kinds(report).any(|k| wanted(&k));
    let mut dimensions: Vec<(String, bool, bool)> = OpKind::ALL
        .iter()
        .map(|&op| {
            let rejected =
                kinds(report).any(|k| matches!(k, EventKind::Rejected { op: of, .. } if of == op));
            let name = format!("reject {}", op.name());
            (name, profile.reject.get(op) > 0.0, rejected)
        })
        .collect();
    let reply_lost_on = OpKind::ALL
        .iter()
        .any(|&op| profile.reply_lost.get(op) > 0.0);
    dimensions.extend([
        (
            "reply-lost".to_string(),
            reply_lost_on,
            seen(|k| matches!(k, EventKind::ReplyLost { .. })),
        ),
        (
            "revoke".to_string(),
            profile.system.revoke.probability > 0.0,
            seen(|k| matches!(k, EventKind::Note(Note::Revoked { .. }))),
        ),
        (
            "pause".to_string(),
            profile.pause.probability > 0.0,
            seen(|k| matches!(k, EventKind::Paused { .. })),
        ),
        (
            "clock-jump".to_string(),
            profile.jump.probability > 0.0,
            seen(|k| matches!(k, EventKind::ClockJumped { .. })),
        ),
        (
            "clock-skew".to_string(),
            clock_is_skewed(report),
            a_clock_reads_off_before_it_jumps(report),
        ),
    ]);
    dimensions
}

/// A replica reads its clock off true time before any jump of its clock.
fn a_clock_reads_off_before_it_jumps(report: &RunReport<Retention>) -> bool {
    let mut jumped = BTreeSet::new();
    report
        .events
        .iter()
        .any(|e| match (e.event.replica, e.event.kind) {
            (Some(replica), EventKind::ClockJumped { .. }) => {
                jumped.insert(replica);
                false
            }
            (Some(replica), EventKind::ClockRead { now_ms }) => {
                !jumped.contains(&replica) && now_ms != EPOCH_MS + e.at_ms
            }
            _ => false,
        })
}

/// Of the fault dimensions, how many swarm must switch between seeds.
const SWARM_MIN_VARYING: usize = 7;

/// swarm: across the seeds, fault dimensions are switched: each of at least
/// `SWARM_MIN_VARYING` dimensions is off in one seed's profile (and absent from its run) and
/// on in another's (and present in its run).
fn swarm_switches_faults_between_seeds(scenario: &Scenario, runs: &[RunReport<Retention>]) -> bool {
    let per_run: Vec<Vec<(String, bool, bool)>> = runs.iter().map(fault_dimensions).collect();
    let varying: Vec<&str> = (0..per_run[0].len())
        .filter(|&d| {
            let off = per_run.iter().any(|dims| !dims[d].1 && !dims[d].2);
            let on = per_run.iter().any(|dims| dims[d].1 && dims[d].2);
            off && on
        })
        .map(|d| per_run[0][d].0.as_str())
        .collect();
    println!("{}: switched between seeds: {varying:?}", scenario.name);
    varying.len() >= SWARM_MIN_VARYING
}
