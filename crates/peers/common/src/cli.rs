//! The command line every side's binary shares.
//!
//! Terminology:
//! - `measure [--workload NAME] [--out FILE] [--ranges N] [--cap N] [--correct-runs N]
//!   [--correct-s S] [--budget-s S]`: the figures as JSON.
//! - `--workload NAME` (with `measure` and `run`): the workload (`workload::WORKLOADS`;
//!   `holder-long-jobs` unless given). [`workload_of`] reads it; a side calls it before it
//!   builds anything that depends on the workload.
//! - `figures LEASESIM.json PEER.json...`: the side-by-side table (markdown) on stdout.
//! - `run --worker NAME --seed N [--trace]`: one run, its verdict and trace hash (and every
//!   event with `--trace`): what a user of the side replays.

use crate::measure::{Figures, Plan, measure};
use crate::recorder::Verdict;

/// What a side tells the shared command line about itself.
pub struct Side<'a> {
    pub peer: &'a str,
    pub version: &'a str,
    pub cannot_express: Vec<String>,
    pub at_failure: String,
}

fn flag(args: &[String], name: &str) -> Option<String> {
    let at = args.iter().position(|arg| arg == name)?;
    args.get(at + 1).cloned()
}

fn number(args: &[String], name: &str, default: u64) -> u64 {
    flag(args, name).map_or(default, |value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} wants a number, not {value}"))
    })
}

/// A number of seconds (fractions allowed: `--correct-s 0.5`).
fn seconds(args: &[String], name: &str, default: f64) -> f64 {
    flag(args, name).map_or(default, |value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} wants seconds, not {value}"))
    })
}

/// Picks the workload `--workload` names in `std::env::args()` (exits 2 on an unknown one).
pub fn workload_of() -> &'static crate::workload::Workload {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(name) = flag(&args, "--workload")
        && let Err(why) = crate::workload::select(&name)
    {
        eprintln!("{why}");
        std::process::exit(2);
    }
    crate::workload::current()
}

/// Runs the command in `std::env::args()`; `run(worker, seed, keep_trace)` is one side run.
pub fn main(side: Side<'_>, run: &mut dyn FnMut(&str, u64, bool) -> Verdict) {
    workload_of();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("measure") => {
            let plan = Plan {
                ranges: number(&args, "--ranges", 30),
                budget_s: seconds(&args, "--budget-s", 60.0),
                cap: number(&args, "--cap", 2_000),
                correct_runs: number(&args, "--correct-runs", 3),
                correct_s: seconds(&args, "--correct-s", 5.0),
            };
            let mut each = |worker: &str, seed: u64| run(worker, seed, false);
            let figures = Figures {
                cannot_express: side.cannot_express,
                at_failure: side.at_failure,
                ..measure(&mut each, plan, side.peer, side.version)
            };
            let json = serde_json::to_string_pretty(&figures).expect("figures serialize");
            match flag(&args, "--out") {
                Some(path) => std::fs::write(&path, json + "\n").expect("write --out"),
                None => println!("{json}"),
            }
        }
        Some("figures") => {
            let sides: Vec<Figures> = args[1..]
                .iter()
                .map(|path| {
                    let text = std::fs::read_to_string(path).expect("read a figures file");
                    serde_json::from_str(&text).expect("a figures file")
                })
                .collect();
            print!("{}", crate::figures::markdown(&sides));
        }
        Some("run") => {
            let worker = flag(&args, "--worker").unwrap_or_else(|| "correct".into());
            let seed = number(&args, "--seed", 0);
            let verdict = run(&worker, seed, args.iter().any(|arg| arg == "--trace"));
            for line in &verdict.trace {
                println!("{line}");
            }
            let said = verdict
                .violation
                .as_deref()
                .unwrap_or("pass: every invariant held");
            println!("{} seed {seed} worker {worker}: {said}", side.peer);
            println!(
                "{} events, trace hash {:016x}",
                verdict.events, verdict.trace_hash
            );
        }
        _ => eprintln!(
            "usage: measure [--workload NAME] [--out FILE] [--ranges N] [--cap N] [--correct-runs N] [--correct-s S] [--budget-s S] | figures A.json B.json... | run [--workload NAME] --worker NAME --seed N [--trace]"
        ),
    }
}
