# Common loops. Thin wrappers over cargo; README's commands never need `just`.

default:
    @just --list

# Run every test (README's test command).
test:
    cargo test --workspace

# Fuzz the default scenarios (README's main command); pass extra flags after the recipe.
fuzz *ARGS:
    cargo run --release -- fuzz {{ARGS}}

# Print the trace and verdict of one seed.
replay SEED SCENARIO="steady" WORKER="correct":
    cargo run --release -- replay --scenario {{SCENARIO}} --seed {{SEED}} --worker {{WORKER}}

# Minimise the choices of one failing seed.
shrink SEED SCENARIO="steady" WORKER="correct":
    cargo run --release -- shrink --scenario {{SCENARIO}} --seed {{SEED}} --worker {{WORKER}}

# Benchmarks (executor micro figures; side-by-side with tokio).
bench:
    cargo bench --workspace

# docs/benchmarks.md, measured and written by one command (its plain cargo form is on the page).
# `just bench-page target/bench-quick.md --quick` tests the generator in seconds.
bench-page OUT="docs/benchmarks.md" *ARGS:
    cargo bench -p leasesim --bench report -- --markdown {{OUT}} {{ARGS}}

# Review snapshot changes (needs `cargo install cargo-insta`).
snap:
    cargo insta test --workspace --review

# Verdicts of every worker, the correct one included, over its system's default scenarios
# under random and pct:3 (SEEDS seeds each), wall-clock rates left out: run it before and after
# a change that must keep verdicts, then `diff -r` the two folders (`just verdicts /tmp/before`).
verdicts OUT SEEDS="150":
    #!/usr/bin/env bash
    set -uo pipefail
    cargo build --release -q -p leasesim-cli --bin leasesim || exit 1
    mkdir -p "{{OUT}}"
    for system in retention work-items reservations holder-lock; do
      workers=$(./target/release/leasesim list --system "$system" \
        | sed -n "/^$system workers:/,/^$/p" | awk 'NR > 1 && NF { print $1 }')
      for worker in $workers; do
        for strategy in random pct:3; do
          ./target/release/leasesim fuzz --system "$system" --worker "$worker" \
            --strategy "$strategy" --seeds {{SEEDS}} --no-failure-db --json 2>/dev/null \
            | grep -v '_per_s"' > "{{OUT}}/$system-$worker-${strategy/:/}.json"
        done
      done
    done
    ls "{{OUT}}" | wc -l

# fmt + clippy + tests + fuzz smoke, exactly as CI runs them.
ci:
    bash .ci/run

# Mutation testing of one system's production core (needs `cargo install cargo-mutants`;
# docs/mutation-testing.md): `just mutants holder-lock`. First the unmutated tree must pass
# the oracle (cargo-mutants 27.1 would check only the core's own tests there, hence
# `--baseline=skip`); then every mutant against the fuzz campaign as the oracle, then against
# the core's own tests. Reports land in target/mutants/SYSTEM/{oracle,tests}; a run that
# misses mutants exits non-zero, and the `-` lets the second run start anyway. The mutants
# build in a target directory of their own: sharing one with the tree lets the last
# mutant's build pass for fresh in the tree's next build.
mutants SYSTEM:
    cargo test -p leasesim --test mutation_oracle -- --ignored --exact {{replace(SYSTEM, "-", "_")}}
    mkdir -p target/mutants/{{SYSTEM}}/oracle target/mutants/{{SYSTEM}}/tests
    -CARGO_TARGET_DIR="{{justfile_directory()}}/target/mutants/build" cargo mutants -p {{SYSTEM}}-worker --test-package leasesim --baseline=skip --build-timeout 900 -C --test=mutation_oracle -j 1 --timeout 300 -o target/mutants/{{SYSTEM}}/oracle -- -- --ignored --exact {{replace(SYSTEM, "-", "_")}}
    CARGO_TARGET_DIR="{{justfile_directory()}}/target/mutants/build" cargo mutants -p {{SYSTEM}}-worker -j 1 --timeout 60 -o target/mutants/{{SYSTEM}}/tests

# Lines of each production core the fuzz campaign executes, and the gaps (needs valgrind;
# docs/core-coverage.md). Pass flags after the recipe: `just core-coverage --system retention`.
core-coverage *ARGS:
    cargo run --release -p leasesim-core-coverage -- {{ARGS}}
