#!/usr/bin/env bash
# The holder-lock side-by-side in one command: builds and measures the leasesim side, turmoil
# and madsim (each in its own workspace and target directory), then writes figures.md.
#
#   crates/peers/run.sh                 # the figures (a few minutes on 2 cores)
#   PEERS_QUICK=1 crates/peers/run.sh   # a smoke run: tiny plan (CI)
#
# A peer whose crate does not exist is skipped, and the page says so.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$here/out"
mkdir -p "$out"

# --correct-s: CPU seconds (and at least --correct-runs runs) of the correct worker's rate;
# --budget-s: CPU seconds one defective worker's search may take before its remaining ranges
# are left out (what matters for a worker no side finds in this workload).
# plan2: the second workload (holder-slow-release with lost replies and pauses: the three
# defective workers the first cannot catch, and the correct worker under those faults).
# plan3: the third (holder-volatile with store restarts only: the two workers a restart
# catches there, and the correct worker across restarts).
second="holder-slow-release+lost-replies"
third="holder-volatile+restarts-only"
if [[ "${PEERS_QUICK:-0}" == 1 ]]; then
    plan=(--ranges 3 --cap 20 --correct-runs 3 --correct-s 0.5 --budget-s 2)
    plan2=(--ranges 2 --cap 5 --correct-runs 2 --correct-s 0.3 --budget-s 1)
    plan3=(--ranges 2 --cap 5 --correct-runs 2 --correct-s 0.3 --budget-s 1)
else
    plan=(--ranges "${PEERS_RANGES:-30}" --cap "${PEERS_CAP:-2000}" --correct-runs 3 \
          --correct-s "${PEERS_CORRECT_S:-8}" --budget-s "${PEERS_BUDGET_S:-15}")
    plan2=(--ranges "${PEERS_RANGES2:-30}" --cap "${PEERS_CAP2:-500}" --correct-runs 3 \
           --correct-s "${PEERS_CORRECT2_S:-8}" --budget-s "${PEERS_BUDGET2_S:-12}")
    plan3=(--ranges "${PEERS_RANGES3:-30}" --cap "${PEERS_CAP3:-500}" --correct-runs 3 \
           --correct-s "${PEERS_CORRECT3_S:-8}" --budget-s "${PEERS_BUDGET3_S:-12}")
fi

jsons=()
jsons2=()
jsons3=()
skipped=()

# build_and_measure NAME DIR BINARY [extra env...]
build_and_measure() {
    local name="$1" dir="$2" binary="$3"
    shift 3
    if [[ ! -f "$dir/Cargo.toml" ]]; then
        echo "run.sh: skipping $name: $dir/Cargo.toml does not exist" >&2
        skipped+=("$name (no crate at ${dir#"$root"/})")
        return
    fi
    echo "run.sh: building $name" >&2
    (cd "$dir" && env "$@" CARGO_TARGET_DIR="$dir/target" cargo build --release -q)
    echo "run.sh: measuring $name" >&2
    "$dir/target/release/$binary" measure --out "$out/$name.json" "${plan[@]}"
    jsons+=("$out/$name.json")
    echo "run.sh: measuring $name on $second" >&2
    "$dir/target/release/$binary" measure --workload "$second" --out "$out/$name-2.json" \
        "${plan2[@]}"
    jsons2+=("$out/$name-2.json")
    echo "run.sh: measuring $name on $third" >&2
    "$dir/target/release/$binary" measure --workload "$third" --out "$out/$name-3.json" \
        "${plan3[@]}"
    jsons3+=("$out/$name-3.json")
}

build_and_measure leasesim "$here/leasesim" peers-leasesim
build_and_measure turmoil "$here/turmoil" peers-turmoil
build_and_measure madsim "$here/madsim" peer-madsim RUSTFLAGS="--cfg madsim"

# The page written by the last run is no change to what is measured.
commit="$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . \
    ':!crates/peers/figures.md' || echo ' (with uncommitted changes)')"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
{
    echo "## Side by side: leasesim, madsim, turmoil (holder-lock)"
    echo
    echo "Measured by \`crates/peers/run.sh\` (plan: \`${plan[*]}\`; second workload:"
    echo "\`${plan2[*]}\`; third: \`${plan3[*]}\`) at commit $commit on"
    echo "$(date -u +%Y-%m-%d), one machine: $(nproc) cores, $cpu; every side's release profile."
    echo "Every side runs the workload of \`holder-long-jobs\` (three replicas, a 3 s claim never"
    echo "renewed, jobs of 0.8-1.6 s or, 30 %, 3.6-6 s in 500 ms steps, attempts every 50-1000 ms,"
    echo "store calls 1-5 ms each way, 30 s of safety then 20 s of liveness, then every replica"
    echo "stopped) with the production core \`holder-lock-worker\` unchanged and the system's"
    echo "defective workers, judged by the system's own checkers; a run ends at its first violation."
    echo "CPU seconds are the process's (\`CLOCK_PROCESS_CPUTIME_ID\`); medians and p90s are over"
    echo "the seed ranges where the worker was found (range r = seeds r*1,000,000..). The advantage"
    echo "is leasesim's rate over the peer's, or the peer's cost over leasesim's: above 1, leasesim"
    echo "is ahead."
    echo
    if ((${#skipped[@]})); then
        echo "Not measured: ${skipped[*]}."
        echo
    fi
    "$here/leasesim/target/release/peers-leasesim" figures "${jsons[@]}"
    echo
    "$here/leasesim/target/release/peers-leasesim" figures "${jsons2[@]}"
    echo
    echo "The second workload is the builtin \`holder-slow-release\` with"
    echo "\`faults.reply_lost.OP = 0.02\` for every operation, run by leasesim as it runs the file;"
    echo "the peers mirror it: slow legs as waits of the shared store port on top of the peer's"
    echo "1-5 ms (1-6 ms on madsim), the store's reply withheld (turmoil: by the store host;"
    echo "madsim: \`hook_rpc_rsp\`), pauses by per-replica tickers (madsim: \`Handle::pause\`;"
    echo "turmoil cannot pause and runs without them). Only the three workers the first workload"
    echo "cannot catch are measured."
    echo
    "$here/leasesim/target/release/peers-leasesim" figures "${jsons3[@]}"
    echo
    echo "The third workload is the builtin \`holder-volatile\` with its evictions and failovers"
    echo "off and 30 s of safety (\`duration_ms = 30000\`, \`faults.evict.probability = 0\`,"
    echo "\`faults.failover.probability = 0\`): the store restarts without persistence, every 3-8 s"
    echo "with probability 0.2. leasesim's store forgets every key at an instant; the peers crash"
    echo "and restart the store's process (madsim: \`Handle::kill\` and \`Handle::restart\` of the"
    echo "store node; turmoil: \`Sim::bounce\` of the store host), whose keys lived in its memory."
    echo "A peer's restart can also lose a request arriving while the store comes back, or (madsim)"
    echo "a reply not yet sent; in 25 seeds of the correct worker no call on either peer lost its"
    echo "answer."
    echo "Measured: the two workers only a restart catches in this setting (with restarts off,"
    echo "leasesim finds neither in 300 seeds). No side crashes a replica: leasesim's holder-lock"
    echo "has none to mirror (see README.md)."
} > "$here/figures.md"
echo "run.sh: wrote $here/figures.md" >&2
