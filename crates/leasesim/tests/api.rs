//! The library API a user calls from their own tests: `leasesim::retention::check(...)`.
//!
//! `LEASESIM_SEED` and `LEASESIM_SCENARIO` are process-wide, so the tests of those variables
//! run this test binary again as a child process (only the ignored test
//! `child_probe_for_the_env_variable_tests`, with the variables set) instead of setting them
//! here, where they would leak into the other tests. The other tests assume neither variable
//! is set when `cargo test` runs.

use std::path::Path;
use std::process::Command;

use futures::future::LocalBoxFuture;
use leasesim::retention::{SimWorker, WorkerPorts, WorkerUnderTest, correct_worker_of};
use retention_worker::{RunError, TermReport};

#[test]
fn a_check_of_the_correct_worker_passes_and_returns_its_seed_count() {
    let summary = leasesim::retention::check("steady", correct_worker_of).seeds(20);
    assert_eq!(
        summary,
        leasesim::CheckSummary {
            scenario: "steady".into(),
            seeds: 20,
            skipped: false,
        }
    );
}

#[test]
fn try_seeds_returns_a_defective_workers_failure_with_its_replay_line() {
    let failure = leasesim::retention::check_builtin("slow-deletes", "stale-release")
        .try_seeds(50)
        .expect_err("stale-release must fail slow-deletes")
        .into_failure()
        .expect("a seed failed, not the input");
    assert_eq!(failure.outcome.label(), "release-latest");
    assert_eq!(failure.scenario, "slow-deletes");
    assert_eq!(failure.worker, "stale-release");
    // stale-release fails every seed of slow-deletes: the first failure is the first seed.
    assert_eq!(failure.seed, 0);
    let message = failure.to_string();
    assert!(
        message.starts_with(
            "leasesim: release-latest in scenario slow-deletes at seed 0 (worker stale-release): "
        ),
        "{message}"
    );
    assert!(message.contains(&failure.outcome.sentence()), "{message}");
    let lines: Vec<&str> = message.lines().collect();
    assert!(
        lines.contains(&"leasesim replay --scenario slow-deletes --seed 0 --worker stale-release"),
        "no replay line of its own in\n{message}"
    );
    assert!(
        message.contains("LEASESIM_SEED=0 LEASESIM_SCENARIO=slow-deletes"),
        "{message}"
    );
}

#[test]
fn start_seed_moves_the_first_seed_checked() {
    let failure = leasesim::retention::check_builtin("slow-deletes", "stale-release")
        .start_seed(1_000)
        .try_seeds(5)
        .expect_err("stale-release must fail slow-deletes")
        .into_failure()
        .expect("a seed failed, not the input");
    assert_eq!(failure.seed, 1_000);
    assert!(
        failure
            .to_string()
            .contains("leasesim replay --scenario slow-deletes --seed 1000 --worker stale-release")
    );
}

#[test]
fn seeds_panics_with_the_invariant_and_the_replay_line() {
    let panic = std::panic::catch_unwind(|| {
        leasesim::retention::check_builtin("slow-deletes", "stale-release").seeds(50)
    })
    .expect_err("seeds(50) must panic for stale-release");
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .expect("a text panic");
    assert!(message.contains("release-latest"), "{message}");
    assert!(
        message.contains("leasesim replay --scenario slow-deletes --seed 0 --worker stale-release"),
        "{message}"
    );
}

/// A user's worker: the production core, with a `stop()` that only delegates when `joins`.
struct UserWorker {
    inner: SimWorker,
    joins: bool,
}

impl WorkerUnderTest for UserWorker {
    type Report = Result<TermReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<TermReport, RunError>> {
        WorkerUnderTest::run(&self.inner)
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        if self.joins {
            WorkerUnderTest::stop(&self.inner)
        } else {
            // The bug: returns at once, without stopping the term or waiting for it.
            Box::pin(std::future::ready(()))
        }
    }
}

fn user_worker(joins: bool) -> impl Fn(WorkerPorts) -> UserWorker {
    move |ports| UserWorker {
        inner: correct_worker_of(ports),
        joins,
    }
}

#[test]
fn a_user_worker_that_delegates_everything_passes() {
    let summary = leasesim::retention::check("stop-during-acquire", user_worker(true))
        .worker_name("my-worker")
        .seeds(10);
    assert_eq!(summary.seeds, 10);
}

#[test]
fn a_user_worker_whose_stop_does_not_join_is_caught_and_told_how_to_rerun() {
    let failure = leasesim::retention::check("stop-during-acquire", user_worker(false))
        .worker_name("my-worker")
        .try_seeds(50)
        .expect_err("a stop() that returns at once must be caught")
        .into_failure()
        .expect("a seed failed, not the input");
    assert_eq!(failure.outcome.label(), "stop-joins", "{failure}");
    assert_eq!(failure.worker, "my-worker");
    let message = failure.to_string();
    assert!(
        message.contains(&format!(
            "LEASESIM_SEED={} LEASESIM_SCENARIO=stop-during-acquire",
            failure.seed
        )),
        "{message}"
    );
    assert!(
        !message.contains("leasesim replay"),
        "a user's worker cannot be replayed by the leasesim binary:\n{message}"
    );
}

// ---------------------------------------------------------------------------------------------
// LEASESIM_SEED and LEASESIM_SCENARIO, in a child process

/// Names what the child's probe test runs; unset, the probe test does nothing.
const PROBE: &str = "LEASESIM_API_TEST_PROBE";

/// Run by the tests below in a child process, with `PROBE` and the leasesim variables set
/// (ignored in the ordinary run, which has neither). Prints one `PROBE ...` line the parent
/// reads.
#[test]
#[ignore = "a probe the tests below run in a child process"]
fn child_probe_for_the_env_variable_tests() {
    let which =
        std::env::var(PROBE).expect("the parent test names the probe in LEASESIM_API_TEST_PROBE");
    let check = match which.as_str() {
        "correct" => leasesim::retention::check("steady", correct_worker_of),
        "stale-release" => leasesim::retention::check_builtin("slow-deletes", "stale-release"),
        // The same worker from seed 1,000 on: with a failure database, its recorded seed 0
        // runs first.
        "stale-release-late" => {
            leasesim::retention::check_builtin("slow-deletes", "stale-release").start_seed(1_000)
        }
        // `seeds` panics: the panic must point at this line, not inside leasesim.
        "panics" => {
            let check = leasesim::retention::check_builtin("slow-deletes", "stale-release");
            check.seeds(20); // PANIC-LINE
            unreachable!("stale-release passed 20 seeds");
        }
        // A user's worker that fails, shrunk: it saves its choices and timeline.
        "user-shrink" => leasesim::retention::check("stop-during-acquire", user_worker(false))
            .worker_name("my-worker")
            .shrink(),
        other => panic!("unknown probe {other}"),
    };
    match check.try_seeds(20) {
        Ok(summary) => println!(
            "PROBE pass seeds={} skipped={}",
            summary.seeds, summary.skipped
        ),
        Err(leasesim::CheckError::Failed(failure)) => {
            // The details (what was saved where) go to stderr; the probe line stays one line.
            eprintln!("{failure}");
            println!(
                "PROBE fail seed={} label={}",
                failure.seed,
                failure.outcome.label()
            )
        }
        Err(leasesim::CheckError::Input(err)) => println!("PROBE input {err}"),
        Err(other) => println!("PROBE other {other}"),
    }
}

struct Child {
    success: bool,
    stdout: String,
    stderr: String,
}

impl Child {
    /// The probe's report, without the `PROBE ` prefix (libtest may print it after
    /// `test NAME ... ` on the same line).
    fn probe(&self) -> &str {
        self.stdout
            .lines()
            .find_map(|line| line.split_once("PROBE ").map(|(_, report)| report.trim()))
            .unwrap_or_else(|| {
                panic!(
                    "the probe printed nothing\n--- stdout ---\n{}\n--- stderr ---\n{}",
                    self.stdout, self.stderr
                )
            })
    }
}

fn child(which: &str, env: &[(&str, &str)]) -> Child {
    child_in(Path::new("."), which, env)
}

/// `child`, with `dir` as the working directory.
fn child_in(dir: &Path, which: &str, env: &[(&str, &str)]) -> Child {
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = Command::new(exe)
        .current_dir(dir)
        .args([
            "--ignored",
            "--exact",
            "child_probe_for_the_env_variable_tests",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env_remove("LEASESIM_SEED")
        .env_remove("LEASESIM_SCENARIO")
        .env_remove("LEASESIM_FAILURES")
        .env_remove("LEASESIM_CHOICES")
        .env(PROBE, which)
        .envs(env.iter().copied())
        .output()
        .expect("the test binary runs");
    Child {
        success: output.status.success(),
        stdout: String::from_utf8(output.stdout).expect("UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8"),
    }
}

#[test]
fn leasesim_seed_runs_only_that_seed_and_prints_its_trace() {
    let passing = child("correct", &[("LEASESIM_SEED", "7")]);
    assert!(passing.success, "{}", passing.stderr);
    assert_eq!(passing.probe(), "pass seeds=1 skipped=false");
    assert!(
        passing.stderr.contains("scenario: steady"),
        "{}",
        passing.stderr
    );
    assert!(
        passing.stderr.contains("feed:     seed 7"),
        "{}",
        passing.stderr
    );

    let failing = child("stale-release", &[("LEASESIM_SEED", "0x3")]);
    assert!(failing.success, "{}", failing.stderr);
    assert_eq!(failing.probe(), "fail seed=3 label=release-latest");
    assert!(
        failing.stderr.contains("feed:     seed 3"),
        "{}",
        failing.stderr
    );
    assert!(
        failing.stderr.contains("!! release-latest violated: "),
        "the failing seed's trace is not printed:\n{}",
        failing.stderr
    );

    let unset = child("correct", &[]);
    assert!(unset.success, "{}", unset.stderr);
    assert_eq!(unset.probe(), "pass seeds=20 skipped=false");
    assert!(
        !unset.stderr.contains("feed:"),
        "a trace without LEASESIM_SEED"
    );
}

#[test]
fn a_malformed_leasesim_seed_is_an_input_error_naming_the_variable() {
    let bad = child("correct", &[("LEASESIM_SEED", "12x")]);
    assert!(bad.success, "try_seeds panicked:\n{}", bad.stderr);
    assert!(
        bad.probe()
            .starts_with("input LEASESIM_SEED: `12x` is not a seed"),
        "{}",
        bad.probe()
    );
    let huge = child("correct", &[("LEASESIM_SEED", "18446744073709551616")]);
    assert!(
        huge.probe().starts_with("input LEASESIM_SEED: "),
        "{}",
        huge.probe()
    );
}

#[test]
fn an_unreadable_failure_database_is_an_input_error_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("failures.toml");
    std::fs::write(&db, "failures = 3\n").unwrap();
    let bad = child("correct", &[("LEASESIM_FAILURES", db.to_str().unwrap())]);
    assert!(bad.success, "try_seeds panicked:\n{}", bad.stderr);
    assert!(
        bad.probe().starts_with("input LEASESIM_FAILURES: "),
        "{}",
        bad.probe()
    );
    assert!(bad.probe().contains("failures.toml:1:"), "{}", bad.probe());
}

#[test]
fn leasesim_scenario_skips_checks_of_other_scenarios() {
    let other = child("correct", &[("LEASESIM_SCENARIO", "backlog-cap")]);
    assert!(other.success, "{}", other.stderr);
    assert_eq!(other.probe(), "pass seeds=0 skipped=true");

    let same = child("correct", &[("LEASESIM_SCENARIO", "steady")]);
    assert_eq!(same.probe(), "pass seeds=20 skipped=false");

    let both = child(
        "stale-release",
        &[
            ("LEASESIM_SCENARIO", "slow-deletes"),
            ("LEASESIM_SEED", "2"),
        ],
    );
    assert_eq!(both.probe(), "fail seed=2 label=release-latest");
}

#[test]

fn the_replay_line_of_a_pct_check_names_its_strategy() {
    let failure = leasesim::retention::check_builtin("slow-deletes", "stale-release")
        .strategy(leasesim::Strategy::Pct { depth: 3 })
        .try_seeds(20)
        .expect_err("stale-release must fail slow-deletes under PCT too")
        .into_failure()
        .expect("a seed failed, not the input");
    let message = failure.to_string();
    let line = format!(
        "leasesim replay --scenario slow-deletes --seed {} --worker stale-release --strategy pct:3",
        failure.seed
    );
    assert!(
        message.lines().any(|l| l == line),
        "without `--strategy pct:3` the printed command replays another run:\n{message}"
    );
}

#[test]

fn a_user_worker_named_like_a_builtin_gets_no_replay_line() {
    let failure = leasesim::retention::check("stop-during-acquire", user_worker(false))
        .worker_name("correct")
        .try_seeds(50)
        .expect_err("a stop() that returns at once must be caught")
        .into_failure()
        .expect("a seed failed, not the input");
    let message = failure.to_string();
    assert!(
        !message.contains("leasesim replay"),
        "this command replays the production worker, which passes, not this one:\n{message}"
    );
}

#[test]

fn the_replay_line_of_a_scenario_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("my-slow-deletes.toml");
    let builtin = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/retention/slow-deletes.toml"
    );
    std::fs::copy(builtin, &path).unwrap();
    let failure = leasesim::retention::check_builtin(path.as_path(), "stale-release")
        .try_seeds(5)
        .expect_err("stale-release must fail a copy of slow-deletes")
        .into_failure()
        .expect("a seed failed, not the input");
    let message = failure.to_string();
    let line = format!(
        "leasesim replay --scenario {} --seed {} --worker stale-release",
        path.display(),
        failure.seed
    );
    assert!(
        message.lines().any(|l| l == line),
        "the printed command names no scenario `leasesim replay` can load:\n{message}"
    );
}

#[test]
fn a_failure_database_replays_its_recorded_seeds_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("failures.toml");
    let db_text = db.to_str().unwrap();
    let first = child("stale-release", &[("LEASESIM_FAILURES", db_text)]);
    let recorded = first.probe().to_string();
    assert!(recorded.starts_with("fail seed="), "{recorded}");
    let text = std::fs::read_to_string(&db).expect("the check recorded its failure");
    assert!(text.contains("worker = \"stale-release\""), "{text}");
    // From seed 1,000 on, the recorded seed still comes first.
    let late = child("stale-release-late", &[("LEASESIM_FAILURES", db_text)]);
    assert_eq!(
        late.probe(),
        recorded,
        "the recorded seed did not run first"
    );
    // Without the database, the check starts at seed 1,000.
    let fresh = child("stale-release-late", &[]);
    let seed: u64 = fresh
        .probe()
        .strip_prefix("fail seed=")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|seed| seed.parse().ok())
        .expect("a failing seed");
    assert!(seed >= 1_000, "{}", fresh.probe());
}

#[test]
fn a_failing_check_points_at_the_callers_line() {
    let panicked = child("panics", &[]);
    assert!(!panicked.success);
    let source = include_str!("api.rs");
    let line = source
        .lines()
        .position(|l| l.contains("// PANIC-LINE") && !l.contains("contains"))
        .expect("the probe's marked line")
        + 1;
    let wanted = format!("tests/api.rs:{line}:");
    let at = panicked
        .stderr
        .lines()
        .find(|l| l.contains("panicked at"))
        .expect("a panic message");
    assert!(
        at.contains(&wanted),
        "the panic does not point at {wanted}: {at}\n{}",
        panicked.stderr
    );
}

#[test]
fn the_toolbox_shows_the_trace_the_shrunk_counterexample_and_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("failure.html");
    let failure = leasesim::retention::check_builtin("slow-deletes", "stale-release")
        .trace()
        .shrink()
        .html(&html)
        .try_seeds(10)
        .expect_err("stale-release fails slow-deletes")
        .into_failure()
        .expect("a seed failed, not the input");
    let message = failure.to_string();
    for piece in [
        "the failing run:",
        "system:   retention",
        "the shrunk counterexample:",
        &format!("seed {}, shrunk from", failure.seed),
        "!! release-latest violated",
        &format!("timeline written to {}", html.display()),
    ] {
        assert!(message.contains(piece), "`{piece}` missing:\n{message}");
    }
    let shrunk = message
        .split("the shrunk counterexample:")
        .nth(1)
        .expect("a shrunk trace");
    let events = |text: &str| text.lines().filter(|l| l.starts_with("t=")).count();
    let original = message
        .split("the shrunk counterexample:")
        .next()
        .expect("the failing run");
    assert!(events(shrunk) < events(original), "{message}");
    let document = std::fs::read_to_string(&html).expect("the timeline was written");
    assert!(
        document.starts_with("<!DOCTYPE html>"),
        "{}",
        &document[..40]
    );
    assert!(document.contains("release-latest"));
}

#[test]
fn a_check_without_the_toolbox_adds_nothing() {
    let failure = leasesim::retention::check_builtin("slow-deletes", "stale-release")
        .try_seeds(10)
        .expect_err("stale-release fails slow-deletes")
        .into_failure()
        .expect("a seed failed, not the input");
    assert!(failure.details.is_empty(), "{}", failure.details);
}

/// The bad-input message of a check that must not run, or a panic naming what ran.
fn input_error<S: leasesim::System + leasesim::Render>(
    result: Result<leasesim::CheckSummary, leasesim::CheckError<S>>,
) -> String {
    match result {
        Err(leasesim::CheckError::Input(err)) => err.to_string(),
        Err(other) => panic!("a seed ran: {other}"),
        Ok(summary) => panic!("the check ran: {summary:?}"),
    }
}

#[test]
fn a_check_of_zero_seeds_returns_an_input_error() {
    let message = input_error(leasesim::retention::check("steady", correct_worker_of).try_seeds(0));
    assert!(
        message.contains("a check of 0 seeds would run nothing"),
        "{message}"
    );
}

#[test]
fn a_check_past_the_last_seed_returns_an_input_error() {
    let check = leasesim::retention::check("steady", correct_worker_of).start_seed(u64::MAX - 1);
    let message = input_error(check.try_seeds(3));
    assert!(message.contains("seeds never wrap"), "{message}");
    // The last seed itself is a valid start: two seeds from u64::MAX - 1 end on it.
    let last = leasesim::retention::check("steady", correct_worker_of)
        .start_seed(u64::MAX - 1)
        .try_seeds(2)
        .expect("seeds u64::MAX - 1 and u64::MAX pass");
    assert_eq!(last.seeds, 2);
}

#[test]
fn seeds_panics_with_the_input_error() {
    let panic = std::panic::catch_unwind(|| {
        leasesim::retention::check("steady", correct_worker_of).seeds(0)
    })
    .expect_err("seeds(0) must panic");
    let message = panic.downcast_ref::<String>().expect("a formatted panic");
    assert!(
        message.starts_with("leasesim: cannot run the check: ")
            && message.contains("0 seeds would run nothing"),
        "{message}"
    );
}

#[test]
fn an_unknown_scenario_returns_an_input_error_listing_the_valid_ones() {
    let message = input_error(leasesim::retention::check("stedy", correct_worker_of).try_seeds(5));
    assert!(message.starts_with("unknown scenario `stedy`"), "{message}");
    assert!(message.contains("steady"), "{message}");
}

#[test]
fn a_scenario_of_another_system_returns_an_input_error_naming_both() {
    let message =
        input_error(leasesim::retention::check("holder-steady", correct_worker_of).try_seeds(5));
    assert!(
        message.contains("a holder-lock scenario; this check is of the retention system"),
        "{message}"
    );
}

#[test]
fn an_unreadable_scenario_file_returns_an_input_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, "system = \"retention\"\nreplicas = \"three\"\n").unwrap();
    let message =
        input_error(leasesim::retention::check(path.clone(), correct_worker_of).try_seeds(5));
    assert!(message.contains("broken.toml"), "{message}");
}

#[test]
fn an_unknown_builtin_worker_returns_an_input_error_listing_the_valid_ones() {
    let message =
        input_error(leasesim::retention::check_builtin("steady", "stale-relase").try_seeds(5));
    assert!(
        message.starts_with("unknown worker `stale-relase`"),
        "{message}"
    );
    assert!(message.contains("stale-release"), "{message}");
    // A system's own names only: holder-lock's defect is not a retention worker.
    let other =
        input_error(leasesim::retention::check_builtin("steady", "plain-delete").try_seeds(5));
    assert!(
        other.starts_with("unknown worker `plain-delete`"),
        "{other}"
    );
}

#[test]
fn a_failure_is_a_std_error_and_travels_through_question_marks() {
    fn run() -> Result<leasesim::CheckSummary, Box<dyn std::error::Error>> {
        Ok(leasesim::retention::check_builtin("slow-deletes", "stale-release").try_seeds(20)?)
    }
    let err = run().expect_err("stale-release fails slow-deletes");
    assert!(err.to_string().contains("release-latest"), "{err}");
    let bad = leasesim::retention::check("steady", correct_worker_of)
        .try_seeds(0)
        .expect_err("0 seeds is bad input");
    let source = std::error::Error::source(&bad).expect("an input error has its cause as source");
    assert!(source.to_string().contains("0 seeds"), "{source}");
}

#[test]
fn a_failing_user_worker_saves_its_shrunk_choices_and_timeline_and_reruns_them_alone() {
    let dir = tempfile::tempdir().unwrap();
    let failed = child_in(dir.path(), "user-shrink", &[]);
    let seed: u64 = failed
        .probe()
        .strip_prefix("fail seed=")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| panic!("{}\n{}", failed.probe(), failed.stderr));
    let stem = format!(".leasesim/shrunk/stop-during-acquire-my-worker-{seed}");
    let choices = dir.path().join(format!("{stem}.choices"));
    let saved = std::fs::read_to_string(&choices).expect("the shrunk choices were saved");
    assert!(saved.contains("# worker: my-worker"), "{saved}");
    let html = std::fs::read_to_string(dir.path().join(format!("{stem}.html"))).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // The rerun line names this file and the one test that checks it.
    let rerun = format!(
        "rerun them: LEASESIM_CHOICES={stem}.choices cargo test -- --exact \
         child_probe_for_the_env_variable_tests"
    );
    assert!(
        failed.stderr.contains(&rerun),
        "`{rerun}` missing:\n{}",
        failed.stderr
    );

    let path = choices.to_str().unwrap();
    let again = child_in(dir.path(), "user-shrink", &[("LEASESIM_CHOICES", path)]);
    assert_eq!(again.probe(), format!("fail seed={seed} label=stop-joins"));
    assert!(
        again.stderr.contains("!! stop-joins violated"),
        "{}",
        again.stderr
    );
    // Another check of the same test binary skips the choices it did not save.
    let other = child_in(dir.path(), "correct", &[("LEASESIM_CHOICES", path)]);
    assert_eq!(other.probe(), "pass seeds=0 skipped=true");
}

/// Set by the first `run()` of an [`OnceIdle`] in this process: state kept between runs.
static IDLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The production core, except that the first `run()` in the process reports "not leader"
/// without a call: the first run of a seed differs from every later run of it.
struct OnceIdle(SimWorker);

impl WorkerUnderTest for OnceIdle {
    type Report = Result<TermReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<TermReport, RunError>> {
        if IDLED.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return WorkerUnderTest::run(&self.0);
        }
        let end = retention_worker::TermEnd::NotLeader;
        Box::pin(std::future::ready(Ok(TermReport::new(end))))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        WorkerUnderTest::stop(&self.0)
    }
}

#[test]
fn a_worker_that_keeps_state_between_runs_is_told_it_is_not_deterministic() {
    let error = leasesim::retention::check("steady", |ports| OnceIdle(correct_worker_of(ports)))
        .worker_name("once-idle")
        .try_seeds(10)
        .expect_err("two runs of seed 0 differ");
    let leasesim::CheckError::Nondeterministic(found) = error else {
        panic!("not reported as nondeterminism: {error}");
    };
    assert_eq!((found.seed, found.worker.as_str()), (0, "once-idle"));
    let (first, second) = (found.first.clone(), found.second.clone());
    assert_ne!(
        first, second,
        "the lines at the divergence are equal: {found}"
    );
    let message = found.to_string();
    assert!(
        message.starts_with(
            "leasesim: worker once-idle is not deterministic: two runs of seed 0 of scenario \
             steady differ at event #"
        ),
        "{message}"
    );
    assert!(message.contains("futures::select!"), "{message}");
}

#[test]
fn a_check_of_every_seed_there_is_runs_them_lazily() {
    // u64::MAX seeds from 0: valid, and no list of them is built first (that would not fit).
    let error = leasesim::retention::check_builtin("slow-deletes", "stale-release")
        .try_seeds(u64::MAX)
        .expect_err("stale-release fails its first seed");
    let failure = error.into_failure().expect("a seed failed, not the input");
    assert_eq!(failure.seed, 0);
}
