//! A campaign interrupted keeps what it found: SIGINT (Ctrl-C) or SIGTERM stops it taking
//! seeds, the failures found so far are printed and recorded in the failure database, and the
//! command exits with 128 + the signal's number. An envelope interrupted prints the points it
//! ran and infers none of the others.
//!
//! Terminology:
//! - *caught*: the process has installed its handler for the signal (its bit is set in
//!   `SigCgt` of /proc/PID/status); a signal sent before that would kill it outright.
//! - *kept*: printed with its replay line, and recorded in the failure database.

use std::process::{Command, Stdio};
use std::time::Duration;

/// A campaign where nearly every seed fails; a hundred million seeds take hours.
const CAMPAIGN: [&str; 9] = [
    "fuzz",
    "--worker",
    "read-then-delete",
    "--scenario",
    "holder-slow-release",
    "--seeds",
    "100000000",
    "--jobs",
    "2",
];

/// Starts a campaign where nearly every seed fails, in `dir`, sends `signal` after it has run
/// for a while, and returns (exit code, stdout, stderr).
fn interrupted(dir: &std::path::Path, signal: libc::c_int) -> (Option<i32>, String, String) {
    interrupted_run(dir, signal, &CAMPAIGN)
}

/// Starts `leasesim ARGS` in `dir`, sends `signal` once it catches it and has run for a while,
/// and returns (exit code, stdout, stderr).
fn interrupted_run(
    dir: &std::path::Path,
    signal: libc::c_int,
    args: &[&str],
) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("leasesim starts");
    // Once the campaign catches the signal (a hundred million seeds take hours), let it find
    // some failures first.
    wait_until_caught(child.id(), signal);
    std::thread::sleep(Duration::from_millis(500));
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: kill(2) with a child's pid and a valid signal number.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "the signal was sent");
    // The pipes are drained while waiting (a campaign prints a line per failing seed), and a
    // campaign that ignores the signal is killed after a minute instead of running for hours.
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).expect("UTF-8 output");
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let mut status = None;
    for _ in 0..6_000 {
        status = child.try_wait().expect("the child can be waited for");
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if status.is_none() {
        let _ = child.kill();
        panic!("leasesim was still running a minute after the signal");
    }
    let join = |reader: std::thread::JoinHandle<String>| reader.join().expect("read");
    (status.and_then(|s| s.code()), join(stdout), join(stderr))
}

/// Waits (at most 60 s) until process `pid` catches `signal`: its bit is set in the `SigCgt`
/// mask of /proc/PID/status.
fn wait_until_caught(pid: u32, signal: libc::c_int) {
    let bit = 1u64 << (signal - 1);
    for _ in 0..6_000 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|line| line.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| mask & bit != 0);
        if caught {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("leasesim never caught signal {signal}");
}

/// What every interrupted campaign must show: the failures so far, printed and recorded.
fn assert_kept(dir: &std::path::Path, stdout: &str, stderr: &str, name: &str) {
    let replay = "leasesim replay --scenario holder-slow-release --seed ";
    assert!(
        stdout.lines().any(|l| l.starts_with(replay)),
        "no failure printed:\n{stdout}"
    );
    assert!(
        stderr.contains(&format!("interrupted by {name}: ")),
        "no word of the interrupt:\n{stderr}"
    );
    let db = std::fs::read_to_string(dir.join(".leasesim/failures.toml"))
        .expect("the failures found so far were recorded");
    assert!(db.contains("worker = \"read-then-delete\""), "{db}");
}

#[test]
fn ctrl_c_ends_a_campaign_with_130_keeping_what_it_found() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = interrupted(dir.path(), libc::SIGINT);
    assert_eq!(code, Some(130), "{stderr}");
    assert_kept(dir.path(), &stdout, &stderr, "SIGINT");
}

#[test]
fn sigterm_ends_a_campaign_with_143_keeping_what_it_found() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = interrupted(dir.path(), libc::SIGTERM);
    assert_eq!(code, Some(143), "{stderr}");
    assert_kept(dir.path(), &stdout, &stderr, "SIGTERM");
}

#[test]
fn ctrl_c_ends_an_envelope_with_130_reporting_the_points_run() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // Ten million seeds a point: the first point is still running when the signal comes.
    let args = [
        "envelope",
        "--scenario",
        "holder-long-jobs",
        "--vary",
        "claim.lifetime_ms=2000..8000",
        "--seeds",
        "10000000",
        "--jobs",
        "2",
    ];
    let (code, stdout, stderr) = interrupted_run(dir.path(), libc::SIGINT, &args);
    assert_eq!(code, Some(130), "{stdout}{stderr}");
    assert!(stdout.contains("points run (1):"), "{stdout}");
    assert!(
        stdout.contains("interrupted: the map shows the points run (`?`: not run)"),
        "{stdout}"
    );
    // One point ran: the other six are not inferred from it.
    assert!(
        stdout.contains(" | o ? ? ? ? ? ?")
            || stdout.contains(" | # ? ? ? ? ? ?")
            || stdout.contains(" | A ? ? ? ? ? ?"),
        "{stdout}"
    );
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
}
