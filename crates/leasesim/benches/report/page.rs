//! The benchmarks page (`docs/benchmarks.md`): a pure function from measured numbers to
//! Markdown. Nothing here reads a clock, a file or the machine; `main.rs` measures and
//! `crates/leasesim/tests/bench_page.rs` renders fixed numbers.
//!
//! Terminology:
//! - *figure*: one row of a table: a comparison (leasesim against tokio) or a cost (µs per
//!   event), measured as several blocks.
//! - *block*: the unit a figure repeats and times as one; each table says what its block is.
//!   Where two drivers are compared, both run every block back to back.
//! - *ratio of totals*: the figure over the whole measurement (sum of one side's times over
//!   the sum of the other's).
//! - *median block*: the median of the blocks' own ratios; one slow block on either side
//!   moves the ratio of totals and barely moves this.
//! - *spread*: the lowest and the highest block's ratio.
//! - *target*: the project's goal for a ratio; *met* when both estimators reach it.

use std::fmt::Write as _;

/// Leasesim's goal per poll (tokio's ns over leasesim's).
pub const POLL_TARGET: f64 = 3.0;
/// Leasesim's goal per timer fire.
pub const TIMER_TARGET: f64 = 4.0;
/// Leasesim's goal in seeds per second against tokio, with equal work (checked mode).
pub const CHECKED_TARGET: f64 = 2.5;

/// The estimators of one figure over its blocks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub of_totals: f64,
    pub median_block: f64,
    pub lowest: f64,
    pub highest: f64,
    pub blocks: usize,
}

impl Estimate {
    /// From each block's (numerator, denominator); `None` without a block.
    pub fn of_pairs(pairs: &[(f64, f64)]) -> Option<Estimate> {
        if pairs.is_empty() {
            return None;
        }
        let (top, bottom) = pairs
            .iter()
            .fold((0.0, 0.0), |(t, b), (n, d)| (t + n, b + d));
        let mut ratios: Vec<f64> = pairs.iter().map(|(n, d)| n / d).collect();
        ratios.sort_by(f64::total_cmp);
        let mid = ratios.len() / 2;
        let median_block = if ratios.len() % 2 == 1 {
            ratios[mid]
        } else {
            (ratios[mid - 1] + ratios[mid]) / 2.0
        };
        Some(Estimate {
            of_totals: top / bottom,
            median_block,
            lowest: ratios[0],
            highest: ratios[ratios.len() - 1],
            blocks: ratios.len(),
        })
    }
}

/// What ran, where and when.
#[derive(Clone, Debug)]
pub struct Header {
    pub command: String,
    /// `git rev-parse --short HEAD`, `-dirty` appended when tracked files differ.
    pub commit: String,
    /// Seconds since the Unix epoch at the start of the run.
    pub started_unix_s: u64,
    pub cores: usize,
    pub cpu_model: String,
    pub memory_kb: Option<u64>,
    /// 1-minute load average before and after the measurements.
    pub load_before: Option<f64>,
    pub load_after: Option<f64>,
    pub profile: String,
    /// Wall-clock seconds the measurements took.
    pub run_s: f64,
    pub quick: bool,
}

/// One executor operation on both runtimes.
#[derive(Clone, Debug)]
pub struct ExecutorFigure {
    pub operation: String,
    pub ops_per_block: u64,
    pub leasesim_ns: f64,
    pub tokio_ns: f64,
    /// tokio's time over leasesim's.
    pub ratio: Estimate,
    pub target: f64,
}

/// One mode of one scenario on both drivers.
#[derive(Clone, Debug)]
pub struct ModeFigure {
    pub leasesim_per_s: f64,
    pub tokio_per_s: f64,
    /// The tokio driver compared (the faster one).
    pub tokio_driver: String,
    /// Leasesim's seeds per second over tokio's.
    pub ratio: Estimate,
}

/// One scenario on both drivers, both modes.
#[derive(Clone, Debug)]
pub struct ScenarioFigure {
    pub scenario: String,
    pub system: String,
    pub checked: ModeFigure,
    pub counted: ModeFigure,
    /// Events per seed (checked mode): leasesim, the compared tokio driver.
    pub events_per_seed: (f64, f64),
    /// Seeds that reached the end phase on tokio, of the seeds tokio ran (both modes).
    pub tokio_reached_end: (u64, u64),
    /// Failing seeds on any driver, any mode.
    pub failing: u64,
}

/// One value of a scaling dimension.
#[derive(Clone, Debug)]
pub struct ScalingRow {
    pub value: String,
    pub seeds: u64,
    pub seeds_per_s: f64,
    pub events_per_seed: f64,
    /// CPU µs over events.
    pub us_per_event: Estimate,
    pub failing: u64,
}

/// One dimension of one system's scaling.
#[derive(Clone, Debug)]
pub struct ScalingDimension {
    pub system: String,
    pub name: String,
    pub rows: Vec<ScalingRow>,
}

/// The peak memory of one process that ran `seeds` seeds of `scenario`.
#[derive(Clone, Debug)]
pub struct MemoryFigure {
    pub scenario: String,
    pub seeds: u64,
    pub peak_kb: u64,
}

/// One envelope, searched and as a full grid.
#[derive(Clone, Debug)]
pub struct EnvelopeFigure {
    pub scenario: String,
    pub worker: String,
    pub axes: String,
    pub resolution: usize,
    pub seeds: u64,
    /// Points the search ran, and their runs.
    pub points: usize,
    pub runs: u64,
    /// Runs of the full grid (every point the loader accepts).
    pub grid_runs: u64,
    /// Wall-clock seconds of the search and of the grid.
    pub searched_s: f64,
    pub grid_s: f64,
    /// The search's map has the grid's class at every point.
    pub agrees: bool,
    /// Points of the grid with a marked seed (the correct worker: 0).
    pub unsafe_points: usize,
}

/// Everything one run measured.
#[derive(Clone, Debug)]
pub struct Measured {
    pub header: Header,
    pub executor: Vec<ExecutorFigure>,
    pub versus: Vec<ScenarioFigure>,
    /// Leasesim's CPU seconds per block of `versus`.
    pub versus_block_s: f64,
    pub scaling: Vec<ScalingDimension>,
    /// CPU seconds per block of `scaling`.
    pub scaling_block_s: f64,
    pub memory: Vec<MemoryFigure>,
    pub envelopes: Vec<EnvelopeFigure>,
    /// The side-by-side with madsim and turmoil, as `crates/peers/run.sh` wrote it (its own
    /// command, commit and machine), if it was run.
    pub peers: Option<String>,
}

/// The whole page.
pub fn render(measured: &Measured) -> String {
    let mut page = String::new();
    header(&mut page, &measured.header);
    reading(&mut page);
    executor(&mut page, &measured.executor);
    versus(&mut page, &measured.versus, measured.versus_block_s);
    scaling(&mut page, &measured.scaling, measured.scaling_block_s);
    memory(&mut page, &measured.memory);
    envelopes(&mut page, &measured.envelopes);
    peers(&mut page, measured.peers.as_deref());
    page
}

/// The peers' section: `crates/peers/figures.md` as the peers' script wrote it.
fn peers(page: &mut String, figures: Option<&str>) {
    page.push_str("\n## Side by side with madsim and turmoil\n\n");
    match figures {
        Some(text) => {
            page.push_str(
                "The same system (holder-lock) under leasesim, madsim and turmoil, measured by \
                 its own command (`crates/peers/run.sh`, which builds each peer in its own \
                 target directory) and copied here from `crates/peers/figures.md`, with the \
                 commit and machine it ran on.\n\n",
            );
            // The file's own heading is this section's.
            let text = text.trim_start();
            let body = match text.strip_prefix("## ") {
                Some(headed) => headed.split_once('\n').map_or("", |(_, body)| body),
                None => text,
            };
            page.push_str(body.trim());
            page.push('\n');
        }
        None => page.push_str(
            "Not measured yet: `crates/peers/run.sh` writes `crates/peers/figures.md`, which \
             this page copies.\n",
        ),
    }
}

fn header(page: &mut String, h: &Header) {
    let load = |l: Option<f64>| l.map_or_else(|| "unknown".to_string(), |l| format!("{l:.2}"));
    let memory = h.memory_kb.map_or_else(
        || "memory unknown".to_string(),
        |kb| format!("{:.1} GiB memory", kb as f64 / (1024.0 * 1024.0)),
    );
    let _ = writeln!(page, "# Benchmarks\n");
    let _ = writeln!(
        page,
        "<!-- Written by the command below; change the generator \
         (crates/leasesim/benches/report/), not this file. -->\n"
    );
    if h.quick {
        let _ = writeln!(
            page,
            "**Quick mode: tiny samples that test the generator. These figures mean \
             nothing.**\n"
        );
    }
    let _ = writeln!(
        page,
        "Every figure below comes from one run of one command, from the workspace root:\n"
    );
    let _ = writeln!(page, "```sh\n{}\n```\n", h.command);
    let _ = writeln!(page, "| run | |\n|---|---|");
    let _ = writeln!(page, "| command | `{}` |", h.command);
    let _ = writeln!(page, "| commit | `{}` |", h.commit);
    let _ = writeln!(page, "| date | {} UTC |", utc_date(h.started_unix_s));
    let _ = writeln!(
        page,
        "| machine | {} cores, {}, {memory} |",
        h.cores, h.cpu_model
    );
    let _ = writeln!(
        page,
        "| load (1-minute average) | {} before, {} after |",
        load(h.load_before),
        load(h.load_after)
    );
    let _ = writeln!(page, "| build profile | {} |", h.profile);
    let _ = writeln!(page, "| run time | {} (wall clock) |\n", minutes(h.run_s));
}

fn reading(page: &mut String) {
    page.push_str(
        "## Reading the figures\n\n\
         - Times are CPU time of the measuring thread. Other work on the machine steals wall \
         time more than CPU time, but it still shares caches and memory bandwidth: read the \
         load above before comparing two pages.\n\
         - Each figure is measured as several *blocks* (each table says what its block is). \
         Where leasesim is compared with tokio, both run every block back to back, so a change \
         of the machine's load hits both alike.\n\
         - Two estimators for every figure: the *ratio of totals* (over the whole measurement) \
         and the *median block* (the median of the blocks' own ratios, which one slow block \
         barely moves), with their *spread*: the lowest and the highest block.\n\
         - A *target* is met when both estimators reach it.\n\
         - No test asserts a timing. To compare two commits, run the command on both, back to \
         back, on the same machine; for a small change, count instructions instead \
         (`valgrind --tool=callgrind target/release/leasesim fuzz --scenario steady --seeds 10 \
         --jobs 1 --no-failure-db`, divided by the run's `events:` line).\n\n",
    );
}

fn executor(page: &mut String, figures: &[ExecutorFigure]) {
    let _ = writeln!(page, "## Executor: one task against tokio\n");
    let _ = writeln!(
        page,
        "What it measures: the CPU time of one poll of a task that yields, and of one timer \
         fire of a task that sleeps 1 ms of virtual time, on leasesim's executor and on tokio's \
         `current_thread` runtime with paused time (`crates/rt/benches/micro`); a block is one \
         run of the row's operations on each runtime, back to back. The ratio is tokio's time \
         over leasesim's: how many times faster leasesim is.\n"
    );
    let _ = writeln!(
        page,
        "| operation | per block | leasesim ns | tokio ns | ratio of totals | median block \
         | lowest block | highest block | blocks | target |"
    );
    let _ = writeln!(page, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for f in figures {
        let r = f.ratio;
        let _ = writeln!(
            page,
            "| {} | {} | {:.1} | {:.1} | **{:.2}** | **{:.2}** | {:.2} | {:.2} | {} | {}x: {} |",
            f.operation,
            thousands(f.ops_per_block as f64),
            f.leasesim_ns,
            f.tokio_ns,
            r.of_totals,
            r.median_block,
            r.lowest,
            r.highest,
            r.blocks,
            f.target,
            verdict(&r, f.target)
        );
    }
    page.push_str(
        "\nOne task on one thread is the most sensitive figure here: a busy neighbour moves it \
         by tens of percent between runs, more than most changes of the executor do.\n\n",
    );
}

fn versus(page: &mut String, figures: &[ScenarioFigure], block_s: f64) {
    page.push_str(
        "## Whole runs: the same world on tokio\n\n\
         The world and the worker core reach time, tasks and randomness only through one trait \
         (`Env`, in `crates/sim`). The benchmark implements it a second time on tokio's \
         `current_thread` runtime: tasks through `spawn_local`, sleeps on tokio's paused clock, \
         every latency and fault drawn from a choice source seeded like leasesim's. The same \
         world, the same production worker and the same seeds run on both; only the runtime \
         differs. Both do the same work per event, in two modes:\n\n\
         - *checked*: every event stamped, hashed and fed to the same checkers and coverage \
         `leasesim fuzz` runs (the cost of a real campaign);\n\
         - *counted*: every event stamped, hashed and counted, no checker (runtime, world and \
         worker alone).\n\n\
         Tokio runs in two ways, one runtime for every seed or a fresh runtime per seed (as \
         leasesim builds one per seed); each table compares leasesim with the faster of the two \
         over the whole measurement. (tokio is a dev-dependency of the benchmarks only.) The traces differ (the runtimes order ready tasks \
         differently), so the last table checks that tokio's runs are runs of the same size \
         that reach the end.\n\n",
    );
    let _ = writeln!(
        page,
        "**Checked.** What it measures: seeds per CPU second of one thread, leasesim over tokio; \
         a block is a run of consecutive seeds (about {block_s} s of leasesim's CPU time) that \
         each driver runs in turn. Target: {CHECKED_TARGET}x with equal work.\n"
    );
    mode_table(page, figures, true);
    let _ = writeln!(
        page,
        "**Counted.** What it measures: the same, without the checkers; a block is as above. The \
         last column is the checkers' and coverage's share of a leasesim checked seed (one \
         minus its checked rate over its counted rate). Tokio pays for the same checkers, so \
         the checked ratio lies between 1 and the counted ratio, the nearer to 1 the larger \
         that share.\n"
    );
    mode_table(page, figures, false);
    sanity_table(page, figures);
}

fn mode_table(page: &mut String, figures: &[ScenarioFigure], checked: bool) {
    let last = if checked { "target" } else { "checkers' share" };
    let _ = writeln!(
        page,
        "| scenario | system | leasesim seeds/s | tokio seeds/s | ratio of totals | median block \
         | lowest block | highest block | blocks | tokio driver | {last} |"
    );
    let _ = writeln!(page, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
    for f in figures {
        let m = if checked { &f.checked } else { &f.counted };
        let r = m.ratio;
        let last = if checked {
            format!("{CHECKED_TARGET}x: {}", verdict(&r, CHECKED_TARGET))
        } else {
            let share = 1.0 - f.checked.leasesim_per_s / f.counted.leasesim_per_s;
            format!("{:.0} %", share * 100.0)
        };
        let _ = writeln!(
            page,
            "| `{}` | {} | {} | {} | **{:.2}** | **{:.2}** | {:.2} | {:.2} | {} | {} | {last} |",
            f.scenario,
            f.system,
            thousands(m.leasesim_per_s),
            thousands(m.tokio_per_s),
            r.of_totals,
            r.median_block,
            r.lowest,
            r.highest,
            r.blocks,
            m.tokio_driver,
        );
    }
    page.push('\n');
}

fn sanity_table(page: &mut String, figures: &[ScenarioFigure]) {
    page.push_str(
        "**Sanity of the tokio driver.** What it measures: events per seed on both drivers \
         (checked mode), tokio's seeds that reached the end phase (both modes) and failing \
         seeds on any driver; no blocks (totals over every block above). The correct worker \
         fails no seed on either.\n\n\
         | scenario | leasesim events/seed | tokio events/seed | tokio seeds reaching the end \
         | failing seeds |\n|---|---:|---:|---:|---:|\n",
    );
    for f in figures {
        let (reached, ran) = f.tokio_reached_end;
        let _ = writeln!(
            page,
            "| `{}` | {} | {} | {} of {} | {} |",
            f.scenario,
            thousands(f.events_per_seed.0),
            thousands(f.events_per_seed.1),
            thousands(reached as f64),
            thousands(ran as f64),
            f.failing
        );
    }
    page.push('\n');
}

fn scaling(page: &mut String, dimensions: &[ScalingDimension], block_s: f64) {
    page.push_str(
        "## Scaling: cost per event as a scenario grows\n\n\
         One dimension of a scenario moves at a time from a small baseline; every seed runs \
         the path `leasesim fuzz` runs (every checker, coverage, the trace hash) on one thread. \
         Retention's baseline is an inline scenario (2 replicas, 1 min safety and 10 s \
         liveness phases, 10,000 rows, no faults, terms capped at 4 rows so that every row \
         count does the same work per term); the other systems start from their no-fault \
         default scenario. Cost per seed should grow with events per seed, and cost per event \
         should stay flat. A longer safety phase adds no events to work-items: its replicas \
         stop once every item is settled.\n\n",
    );
    let mut systems: Vec<&str> = Vec::new();
    for d in dimensions {
        if !systems.contains(&d.system.as_str()) {
            systems.push(&d.system);
        }
    }
    for system in systems {
        let of_system: Vec<&ScalingDimension> =
            dimensions.iter().filter(|d| d.system == system).collect();
        scaling_table(page, system, &of_system, block_s);
    }
}

fn scaling_table(page: &mut String, system: &str, dimensions: &[&ScalingDimension], block_s: f64) {
    let _ = writeln!(
        page,
        "**{system}.** What it measures: CPU µs per event and seeds per CPU second of leasesim \
         for each value of each dimension; a block is a batch of consecutive seeds (about \
         {block_s} s of CPU time) timed as one.\n"
    );
    let _ = writeln!(
        page,
        "| dimension | value | seeds | seeds/s | events/seed | µs/event of totals | median \
         block | lowest block | highest block | blocks |"
    );
    let _ = writeln!(page, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut spreads = Vec::new();
    let mut failing = 0;
    for d in dimensions {
        for row in &d.rows {
            let e = row.us_per_event;
            failing += row.failing;
            let _ = writeln!(
                page,
                "| {} | {} | {} | {} | {} | **{:.3}** | **{:.3}** | {:.3} | {:.3} | {} |",
                d.name,
                row.value,
                thousands(row.seeds as f64),
                thousands(row.seeds_per_s),
                thousands(row.events_per_seed),
                e.of_totals,
                e.median_block,
                e.lowest,
                e.highest,
                e.blocks
            );
        }
        if let Some((low, high)) = spread(&d.rows) {
            spreads.push(format!("{} {:+.0} % to {:+.0} %", d.name, low, high));
        }
    }
    let _ = writeln!(
        page,
        "\nµs/event of totals across each dimension's values, against the dimension's median \
         value: {}. Failing seeds: {failing}.\n",
        spreads.join("; ")
    );
}

/// The lowest and highest µs/event of totals of `rows` against their median, in percent.
fn spread(rows: &[ScalingRow]) -> Option<(f64, f64)> {
    let pairs: Vec<(f64, f64)> = rows
        .iter()
        .map(|row| (row.us_per_event.of_totals, 1.0))
        .collect();
    let e = Estimate::of_pairs(&pairs)?;
    // `+ 0.0` turns a rounded -0 into 0, so it prints as "+0".
    let percent = |x: f64| ((x / e.median_block - 1.0) * 100.0).round() + 0.0;
    Some((percent(e.lowest), percent(e.highest)))
}

fn memory(page: &mut String, figures: &[MemoryFigure]) {
    page.push_str(
        "## Peak memory\n\n\
         What it measures: the peak resident set size (`getrusage`, `ru_maxrss`) of a fresh \
         process that runs the given number of seeds one after another on the path `leasesim \
         fuzz` runs, on one thread; no blocks: each row is one process. Fuzzing keeps no event \
         and records no choice, so memory should not grow with the number of seeds.\n\n\
         | scenario | seeds | peak resident memory |\n|---|---:|---:|\n",
    );
    for f in figures {
        let _ = writeln!(
            page,
            "| `{}` | {} | {} KiB |",
            f.scenario,
            thousands(f.seeds as f64),
            thousands(f.peak_kb as f64)
        );
    }
}

fn envelopes(page: &mut String, figures: &[EnvelopeFigure]) {
    page.push_str(
        "\n## Envelopes\n\n\
         What it measures: `leasesim envelope` on each system's steady scenario with the \
         correct worker (safe wherever the loader accepts the settings: only the lattice and the \
         refusal boundary are run), then with a defective worker of each system on keys where \
         its safe region ends inside the grid, over two keys, searched for the boundary and as a full grid (`--grid`), the \
         same resolution and seeds per point, with the wall-clock time of each on every core \
         (`--jobs` left to its default); no blocks: each row is one envelope of each kind. The \
         full grid runs every point the scenario loader accepts (refused points run nothing \
         in either). *agrees*: the search's map (measured and inferred) has the grid's class at \
         every point. *unsafe points*: of the grid. Target: a 10 x 10 envelope at 200 seeds within 10 minutes on 2 cores, \
         and at least 3x fewer runs than the grid.\n\n\
         | scenario | worker | keys | points | seeds per point | points run | runs | grid runs | fewer | searched | grid | agrees | unsafe points |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n",
    );
    for f in figures {
        let _ = writeln!(
            page,
            "| `{}` | `{}` | `{}` | {r} x {r} | {} | {} | {} | {} | {:.1}x | {:.1} s | {:.1} s | {} | {} |",
            f.scenario,
            f.worker,
            f.axes,
            thousands(f.seeds as f64),
            f.points,
            thousands(f.runs as f64),
            thousands(f.grid_runs as f64),
            f.grid_runs as f64 / f.runs.max(1) as f64,
            f.searched_s,
            f.grid_s,
            if f.agrees { "yes" } else { "no" },
            f.unsafe_points,
            r = f.resolution,
        );
    }
}

/// "met" when both estimators reach `target`, else which one does, or "not met".
fn verdict(e: &Estimate, target: f64) -> &'static str {
    match (e.of_totals >= target, e.median_block >= target) {
        (true, true) => "met",
        (false, true) => "met by the median block only",
        (true, false) => "met by the ratio of totals only",
        (false, false) => "not met",
    }
}

/// `x` rounded to a whole number, with thousands separated by commas.
pub fn thousands(x: f64) -> String {
    if !x.is_finite() {
        return "-".to_string();
    }
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 && out != "0" {
        out.insert(0, '-');
    }
    out
}

/// "7 min 12 s" (or "42 s").
pub fn minutes(seconds: f64) -> String {
    let whole = seconds.round() as u64;
    if whole < 60 {
        format!("{whole} s")
    } else {
        format!("{} min {} s", whole / 60, whole % 60)
    }
}

/// "YYYY-MM-DD HH:MM" in UTC from seconds since the Unix epoch (the civil-from-days algorithm
/// of the proleptic Gregorian calendar).
pub fn utc_date(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let (hour, minute) = ((unix_s % 86_400) / 3_600, (unix_s % 3_600) / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}
