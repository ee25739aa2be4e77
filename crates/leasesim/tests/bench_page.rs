//! The benchmarks page's formatting (`benches/report/page.rs`) and the report's readers of
//! `/proc` text (`benches/report/machine.rs`), on fixed numbers and fixed text: the structure
//! of the page and the lines it must carry, never a timing. The bench itself
//! (`cargo bench -p leasesim --bench report -- --quick`) is the end-to-end test.
//!
//! Terminology:
//! - *fixture*: a `Measured` of made-up numbers, two of each kind of row.

#[path = "../benches/report/machine.rs"]
#[allow(dead_code)]
mod machine;
#[path = "../benches/report/page.rs"]
mod page;

use page::{
    EnvelopeFigure, Estimate, ExecutorFigure, Header, Measured, MemoryFigure, ModeFigure,
    ScalingDimension, ScalingRow, ScenarioFigure,
};

fn estimate(of_totals: f64) -> Estimate {
    Estimate {
        of_totals,
        median_block: of_totals + 0.01,
        lowest: of_totals - 0.2,
        highest: of_totals + 0.3,
        blocks: 7,
    }
}

fn header(quick: bool) -> Header {
    Header {
        command: "cargo bench -p leasesim --bench report -- --markdown docs/benchmarks.md"
            .to_string(),
        commit: "abc1234-dirty".to_string(),
        started_unix_s: 1_796_469_052,
        cores: 2,
        cpu_model: "Test CPU @ 1.00GHz".to_string(),
        memory_kb: Some(24_683_520),
        load_before: Some(1.25),
        load_after: Some(2.5),
        profile: "`bench` (optimised, debug assertions off)".to_string(),
        run_s: 432.4,
        quick,
    }
}

fn scenario(name: &str, system: &str, checked: f64) -> ScenarioFigure {
    let mode = |ratio: f64, leasesim: f64| ModeFigure {
        leasesim_per_s: leasesim,
        tokio_per_s: leasesim / ratio,
        tokio_driver: "tokio paused, shared runtime".to_string(),
        ratio: estimate(ratio),
    };
    ScenarioFigure {
        scenario: name.to_string(),
        system: system.to_string(),
        checked: mode(checked, 1_400.0),
        counted: mode(3.6, 2_300.0),
        events_per_seed: (3_120.0, 3_101.0),
        tokio_reached_end: (80, 80),
        failing: 0,
    }
}

fn scaling_row(value: &str, us: f64) -> ScalingRow {
    ScalingRow {
        value: value.to_string(),
        seeds: 9_000,
        seeds_per_s: 4_500.0,
        events_per_seed: 730.0,
        us_per_event: estimate(us),
        failing: 0,
    }
}

fn fixture(quick: bool) -> Measured {
    let executor = |operation: &str, ratio: f64, target: f64| ExecutorFigure {
        operation: operation.to_string(),
        ops_per_block: 2_000_000,
        leasesim_ns: 24.3,
        tokio_ns: 24.3 * ratio,
        ratio: estimate(ratio),
        target,
    };
    let dimension = |system: &str, name: &str| ScalingDimension {
        system: system.to_string(),
        name: name.to_string(),
        rows: vec![
            scaling_row("1 replicas", 0.30),
            scaling_row("2 replicas", 0.33),
        ],
    };
    Measured {
        header: header(quick),
        executor: vec![
            executor("poll, 1 task yielding", 9.03, page::POLL_TARGET),
            executor("timer fire, 1 task sleeping 1 ms", 3.5, page::TIMER_TARGET),
        ],
        versus: vec![
            scenario("steady", "retention", 2.66),
            scenario("holder-steady", "holder-lock", 2.45),
        ],
        versus_block_s: 0.3,
        scaling: vec![
            dimension("retention", "replicas"),
            dimension("holder-lock", "replicas"),
        ],
        scaling_block_s: 0.25,
        memory: vec![MemoryFigure {
            scenario: "steady".to_string(),
            seeds: 10_000,
            peak_kb: 8_344,
        }],
        envelopes: vec![EnvelopeFigure {
            scenario: "holder-steady".to_string(),
            worker: "correct".to_string(),
            axes: "claim.lifetime_ms=500..5000, claim.renew_every_ms=0..3000".to_string(),
            resolution: 10,
            seeds: 200,
            points: 27,
            runs: 3_200,
            grid_runs: 13_400,
            searched_s: 0.84,
            grid_s: 3.5,
            agrees: true,
            unsafe_points: 0,
        }],
        peers: Some(
            "| row | leasesim | madsim |\n|---|---:|---:|\n| runs/s | 1 | 1 |\n".to_string(),
        ),
    }
}

/// The lines of `page` that start with `prefix`.
fn lines_starting<'a>(page: &'a str, prefix: &str) -> Vec<&'a str> {
    page.lines().filter(|l| l.starts_with(prefix)).collect()
}

#[test]
fn the_page_states_command_commit_date_machine_load_profile_and_run_time() {
    let text = page::render(&fixture(false));
    assert!(text.starts_with("# Benchmarks\n"));
    let command = "cargo bench -p leasesim --bench report -- --markdown docs/benchmarks.md";
    assert!(text.contains(&format!("```sh\n{command}\n```")), "{text}");
    for line in [
        format!("| command | `{command}` |"),
        "| commit | `abc1234-dirty` |".to_string(),
        "| date | 2026-12-05 11:10 UTC |".to_string(),
        "| machine | 2 cores, Test CPU @ 1.00GHz, 23.5 GiB memory |".to_string(),
        "| load (1-minute average) | 1.25 before, 2.50 after |".to_string(),
        "| build profile | `bench` (optimised, debug assertions off) |".to_string(),
        "| run time | 7 min 12 s (wall clock) |".to_string(),
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in\n{text}"
        );
    }
    assert!(!text.contains("Quick mode"));
    assert!(page::render(&fixture(true)).contains("**Quick mode"));
}

#[test]
fn every_table_says_what_it_measures_and_what_a_block_is() {
    let text = page::render(&fixture(false));
    let headings = lines_starting(&text, "## ");
    assert_eq!(
        headings,
        [
            "## Reading the figures",
            "## Executor: one task against tokio",
            "## Whole runs: the same world on tokio",
            "## Scaling: cost per event as a scenario grows",
            "## Peak memory",
            "## Envelopes",
            "## Side by side with madsim and turmoil",
        ]
    );
    // The peers' section is the peers' script's own page, copied as it is.
    let (ours, peers) = text
        .split_once("\n## Side by side with madsim and turmoil\n")
        .expect("the peers' section");
    assert!(peers.contains("| runs/s | 1 | 1 |"), "{peers}");
    // Each table (a header row followed by its separator) is preceded by a paragraph that
    // says what it measures and what its block is.
    let lines: Vec<&str> = ours.lines().collect();
    let tables: Vec<usize> = (1..lines.len())
        .filter(|&i| lines[i].starts_with("|---") && !lines[i - 1].starts_with("| run |"))
        .collect();
    // executor, checked, counted, sanity, two scaling systems, memory, envelopes
    assert_eq!(tables.len(), 8, "{text}");
    for i in tables {
        let before = lines[i - 3];
        assert!(
            before.contains("What it measures:"),
            "table at {i}: {before}"
        );
        assert!(before.contains("block"), "table at {i}: {before}");
    }
    // Every table row has as many cells as its header.
    for block in text.split("\n\n").filter(|b| b.starts_with('|')) {
        let cells: Vec<usize> = block.lines().map(|l| l.matches('|').count()).collect();
        assert!(cells.iter().all(|&c| c == cells[0]), "{block}");
    }
}

#[test]
fn every_figure_has_both_estimators_and_its_spread() {
    let text = page::render(&fixture(false));
    let estimator_headers = lines_starting(&text, "| ")
        .into_iter()
        .filter(|l| l.contains("ratio of totals") || l.contains("µs/event of totals"))
        .collect::<Vec<_>>();
    // executor, checked, counted, two scaling systems
    assert_eq!(estimator_headers.len(), 5, "{text}");
    for header in estimator_headers {
        for column in ["median block", "lowest block", "highest block", "blocks"] {
            assert!(header.contains(column), "`{column}` missing in {header}");
        }
    }
    // The figures themselves: of totals, median block, lowest, highest, blocks.
    assert!(text.contains("| **9.03** | **9.04** | 8.83 | 9.33 | 7 | 3x: met |"));
    assert!(text.contains("| **3.50** | **3.51** | 3.30 | 3.80 | 7 | 4x: not met |"));
    assert!(text.contains("| **2.45** | **2.46** | 2.25 | 2.75 | 7 |"));
    assert!(text.contains("| **0.300** | **0.310** | 0.100 | 0.600 | 7 |"));
    assert!(text.contains("replicas -5 % to +5 %"), "{text}");
    assert!(text.contains("| `steady` | 10,000 | 8,344 KiB |"));
}

#[test]
fn no_run_logs_by_commit_and_no_history() {
    let text = page::render(&fixture(false));
    assert_eq!(text.matches("abc1234").count(), 1, "{text}");
    assert!(!text.contains("| run | steady"), "{text}");
}

#[test]
fn estimates_of_blocks() {
    // Ratios 2, 3, 4 and 10: totals (2+3+4+10)/(1+1+1+1), median of the middle two.
    let pairs = [(2.0, 1.0), (3.0, 1.0), (10.0, 1.0), (4.0, 1.0)];
    let e = Estimate::of_pairs(&pairs).expect("blocks");
    assert_eq!(
        (e.of_totals, e.median_block, e.lowest, e.highest, e.blocks),
        (4.75, 3.5, 2.0, 10.0, 4)
    );
    // Unequal blocks weigh by size in the ratio of totals only.
    let e = Estimate::of_pairs(&[(1.0, 1.0), (30.0, 10.0), (2.0, 1.0)]).expect("blocks");
    assert_eq!((e.of_totals, e.median_block), (33.0 / 12.0, 2.0));
    assert_eq!(Estimate::of_pairs(&[]), None);
}

#[test]
fn numbers_dates_and_durations() {
    assert_eq!(page::thousands(1_436.6), "1,437");
    assert_eq!(page::thousands(999.4), "999");
    assert_eq!(page::thousands(1_234_567.0), "1,234,567");
    assert_eq!(page::thousands(f64::NAN), "-");
    assert_eq!(page::minutes(42.4), "42 s");
    assert_eq!(page::minutes(600.0), "10 min 0 s");
    assert_eq!(page::utc_date(0), "1970-01-01 00:00");
    assert_eq!(page::utc_date(951_782_400), "2000-02-29 00:00");
    assert_eq!(page::utc_date(1_796_469_052), "2026-12-05 11:10");
}

#[test]
fn proc_readers() {
    let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU @ 1.00GHz\n";
    assert_eq!(
        machine::cpu_model(cpuinfo).as_deref(),
        Some("Test CPU @ 1.00GHz")
    );
    assert_eq!(machine::cpu_model("processor : 0\n"), None);
    let meminfo = "MemTotal:       24683520 kB\nMemFree:         6673408 kB\n";
    assert_eq!(machine::mem_total_kb(meminfo), Some(24_683_520));
    assert_eq!(
        machine::load_1min("1.25 1.46 1.36 3/106 21708\n"),
        Some(1.25)
    );
    assert_eq!(machine::load_1min(""), None);
}
