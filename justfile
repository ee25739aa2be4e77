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

# Review snapshot changes (needs `cargo install cargo-insta`).
snap:
    cargo insta test --workspace --review

# fmt + clippy + tests + fuzz smoke, exactly as CI runs them.
ci:
    bash .ci/run

# Mutation testing of the production core (needs `cargo install cargo-mutants`): first with the
# fuzz campaign as the oracle, then with the core's own tests (README: mutation testing). Each
# run checks the unmutated tree first; reports land in target/mutants/{oracle,worker}. A run
# that misses mutants exits non-zero; the `-` lets the second run start anyway. The mutants
# build in a target directory of their own: sharing one with the tree lets the last mutant's
# build of retention-worker pass for fresh in the tree's next build.
mutants:
    mkdir -p target/mutants/oracle target/mutants/worker
    -CARGO_TARGET_DIR="{{justfile_directory()}}/target/mutants/build" cargo mutants -p retention-worker --test-package leasesim -C --test=mutation_oracle -j 1 --timeout 150 -o target/mutants/oracle -- -- --ignored
    CARGO_TARGET_DIR="{{justfile_directory()}}/target/mutants/build" cargo mutants -p retention-worker -j 1 --timeout 60 -o target/mutants/worker

# Lines of each production core the fuzz campaign executes, and the gaps (needs valgrind;
# docs/core-coverage.md). Pass flags after the recipe: `just core-coverage --system retention`.
core-coverage *ARGS:
    cargo run --release -p leasesim-core-coverage -- {{ARGS}}
