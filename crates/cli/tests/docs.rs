//! The documentation's command examples, run: every ```` ```console ```` block of `README.md`
//! and of `docs/**/*.md` is a [`trycmd`] case. Each `$ leasesim ...` line runs the binary this
//! package builds, and its output (stdout and stderr, merged) must match the lines below it;
//! a `? N` line after the command gives its exit code (0 when absent). A changed message fails
//! here until the page that shows it is updated (`TRYCMD=overwrite cargo test -p leasesim-cli
//! --test docs` rewrites the pages' expected output in place; read the diff).
//!
//! Each page runs in a fresh temporary directory holding a copy of `scenarios/` and of
//! `tests/docs-files/` (the example files the pages name), so paths in the pages read as from the
//! repository's root, and no failure database, shrunk choices file or timeline ever lands in
//! the repository. The commands of one page run in order, in that one directory: a page may
//! shrink a seed and then replay the saved choices. Pages run one after another (the working
//! directory is the process's), so they cannot see each other's files.
//!
//! Redactions, for what legitimately varies from run to run: `[..]` inside a line (rates,
//! durations, candidate counts bound by time), `...` on a line of its own (lines left out).
//! Blocks of other languages (`sh`, `text`, `toml`, `rust`) are not run; a fence without a
//! language would be read as a case, so every block of these pages names its language.

use std::path::{Path, PathBuf};

/// The repository's root (this package is `crates/cli`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's root")
}

/// `README.md` and every Markdown page under `docs/`, in name order.
fn pages(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                found.push(path);
            }
        }
    }
    let mut found = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut found);
    found
}

/// Copies the files under `from` into `to`, keeping their relative paths.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory in the sandbox");
    for entry in std::fs::read_dir(from).unwrap_or_else(|err| panic!("{}: {err}", from.display())) {
        let path = entry.expect("a directory entry").path();
        let target = to.join(path.file_name().expect("a file name"));
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("a copy into the sandbox");
        }
    }
}

#[test]
fn every_documented_command_prints_what_its_page_shows() {
    let root = root();
    let pages = pages(&root);
    let home = std::env::current_dir().expect("the working directory");
    let mut failed = Vec::new();
    for page in &pages {
        let sandbox = tempfile::tempdir().expect("a temporary directory");
        copy_tree(&root.join("scenarios"), &sandbox.path().join("scenarios"));
        copy_tree(&root.join("crates/cli/tests/docs-files"), sandbox.path());
        std::env::set_current_dir(sandbox.path()).expect("into the sandbox");
        // trycmd reports a failing case by panicking once the page's commands have run.
        let outcome = std::panic::catch_unwind(|| {
            trycmd::TestCases::new()
                .register_bin("leasesim", trycmd::cargo::cargo_bin!("leasesim"))
                .case(page)
                .run();
        });
        std::env::set_current_dir(&home).expect("back to the working directory");
        if outcome.is_err() {
            failed.push(
                page.strip_prefix(&root)
                    .unwrap_or(page)
                    .display()
                    .to_string(),
            );
        }
    }
    assert!(
        failed.is_empty(),
        "documented commands print something else than their pages show (diffs above): {}",
        failed.join(", ")
    );
}
