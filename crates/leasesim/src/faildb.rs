//! The failure database: every failure a campaign finds, replayed first by the next one.
//!
//! Terminology:
//! - *entry*: scenario, worker, strategy, seed, and the outcome label seen (plus the
//!   sentence, for humans). Entries are deduplicated on (scenario, worker, strategy, seed),
//!   and at most [`PER_SIGNATURE`] seeds are kept per (scenario, worker, strategy, label),
//!   the smallest ones, so a broken worker does not flood the file.
//! - *regression set*: the file committed to the repository (`.leasesim/failures.toml`);
//!   every `fuzz` replays its entries for the campaign's scenarios and worker before new
//!   seeds, as Hypothesis and proptest do with their example databases.
//!
//! Writes are atomic: the whole file is written next to the target and renamed over it.
//! Saves merge: a save reads the file again under a lock and writes the union, so processes
//! that record failures at once each keep theirs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// Seeds kept per failure signature.
pub const PER_SIGNATURE: usize = 5;

/// The default location, relative to the working directory.
pub const DEFAULT_PATH: &str = ".leasesim/failures.toml";

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub scenario: String,
    pub worker: String,
    pub strategy: String,
    #[serde(deserialize_with = "seed_value")]
    pub seed: u64,
    pub outcome: String,
    pub sentence: String,
    /// The checker set the run had (halting checkers shape the event stream); absent in
    /// files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkers: Option<String>,
}

/// A seed as the file holds it, with what is expected said in words (not `expected u64`).
fn seed_value<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    struct Seed;
    impl serde::de::Visitor<'_> for Seed {
        type Value = u64;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a seed: a whole number from 0 to {}", u64::MAX)
        }

        fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<u64, E> {
            Ok(value)
        }

        fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<u64, E> {
            u64::try_from(value)
                .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(value), &self))
        }
    }
    deserializer.deserialize_u64(Seed)
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default, rename = "failure")]
    failures: Vec<Entry>,
}

/// The database file and its entries.
#[derive(Debug)]
pub struct FailureDb {
    path: PathBuf,
    entries: Vec<Entry>,
}

impl FailureDb {
    /// Loads the file (a missing file is an empty database).
    pub fn open(path: &Path) -> Result<FailureDb, UsageError> {
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(err) => {
                return Err(UsageError::File {
                    path: shown,
                    why: format!("cannot read: {err}"),
                });
            }
        };
        let file: File = toml::from_str(&text).map_err(|err| {
            let offset = err.span().map_or(0, |span| span.start);
            let location = leasesim_sim::scenario::Location::at(&shown, &text, offset);
            UsageError::File {
                path: location.to_string(),
                why: err.message().trim().to_string(),
            }
        })?;
        Ok(FailureDb {
            path: path.to_path_buf(),
            entries: file.failures,
        })
    }

    /// Fails early when the file cannot be written (before any seed runs).
    pub fn check_writable(&self) -> Result<(), UsageError> {
        let dir = self.dir();
        std::fs::create_dir_all(&dir).map_err(|err| self.unwritable(err))?;
        let probe = dir.join(".leasesim-write-probe");
        std::fs::write(&probe, b"").map_err(|err| self.unwritable(err))?;
        let _ = std::fs::remove_file(probe);
        if self.path.exists() {
            std::fs::OpenOptions::new()
                .append(true)
                .open(&self.path)
                .map_err(|err| self.unwritable(err))?;
        }
        Ok(())
    }

    fn dir(&self) -> PathBuf {
        match self.path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    fn unwritable(&self, err: std::io::Error) -> UsageError {
        UsageError::File {
            path: self.path.display().to_string(),
            why: format!("failure database is not writable: {err}"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Adds entries (deduplicated, capped per signature); returns how many of the kept entries
    /// were not in the database before (0: nothing changed).
    pub fn add(&mut self, found: impl IntoIterator<Item = Entry>) -> usize {
        let before = self.entries.clone();
        let mut by_key: BTreeMap<(String, String, String, u64), Entry> = BTreeMap::new();
        for entry in self.entries.drain(..).chain(found) {
            let key = (
                entry.scenario.clone(),
                entry.worker.clone(),
                entry.strategy.clone(),
                entry.seed,
            );
            by_key.entry(key).or_insert(entry);
        }
        let mut per_signature: BTreeMap<(String, String, String, String), usize> = BTreeMap::new();
        self.entries = by_key
            .into_values()
            .filter(|e| {
                let signature = (
                    e.scenario.clone(),
                    e.worker.clone(),
                    e.strategy.clone(),
                    e.outcome.clone(),
                );
                let kept = per_signature.entry(signature).or_insert(0);
                *kept += 1;
                *kept <= PER_SIGNATURE
            })
            .collect();
        self.entries.iter().filter(|e| !before.contains(e)).count()
    }

    /// Records `found`: merges the file as it is now into this database, adds `found`
    /// (deduplicated, capped per signature) and, if that kept any entry the file did not
    /// hold, writes the union atomically (temporary file, then rename). Answers how many of
    /// `found` the file now holds that it did not before. A lock file beside it
    /// (`NAME.toml.lock`) makes processes that record at once — test binaries sharing
    /// `LEASESIM_FAILURES`, two campaigns — take turns: each reads what the others wrote
    /// before it writes, so no process's failures are lost. A file that no longer parses is
    /// reported, not overwritten.
    pub fn record(&mut self, found: impl IntoIterator<Item = Entry>) -> Result<usize, UsageError> {
        let found: Vec<Entry> = found.into_iter().collect();
        if found.is_empty() {
            return Ok(0);
        }
        std::fs::create_dir_all(self.dir()).map_err(|err| self.unwritable(err))?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.path.with_extension("toml.lock"))
            .map_err(|err| self.unwritable(err))?;
        // Released when `lock` is dropped, after the rename.
        lock.lock().map_err(|err| self.unwritable(err))?;
        let on_disk = FailureDb::open(&self.path)?;
        self.add(on_disk.entries);
        let added = self.add(found);
        if added > 0 {
            self.write()?;
        }
        Ok(added)
    }

    /// Writes the whole file through a temporary file and a rename (callers hold the lock).
    fn write(&self) -> Result<(), UsageError> {
        let text = toml::to_string(&File {
            failures: self.entries.clone(),
        })
        .expect("entries serialise to TOML");
        let header = "# leasesim failure database: failures found by `leasesim fuzz`, \
                      replayed first\n# by the next fuzz. Commit it to keep them as a \
                      regression set.\n\n";
        let temporary = self.path.with_extension("toml.tmp");
        std::fs::write(&temporary, format!("{header}{text}"))
            .map_err(|err| self.unwritable(err))?;
        std::fs::rename(&temporary, &self.path).map_err(|err| self.unwritable(err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seed: u64, outcome: &str) -> Entry {
        Entry {
            scenario: "steady".into(),
            worker: "uncapped".into(),
            strategy: "random".into(),
            seed,
            outcome: outcome.into(),
            sentence: "s".into(),
            checkers: Some("15 halting (all)".into()),
        }
    }

    #[test]
    fn a_save_that_cannot_finish_leaves_the_database_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("failures.toml");
        let temporary = path.with_extension("toml.tmp");
        let mut db = FailureDb::open(&path).unwrap();
        assert_eq!(db.record([entry(1, "term-cap")]).unwrap(), 1);
        let saved = std::fs::read_to_string(&path).unwrap();
        // A write that fails (the temporary's name is taken) keeps the old file whole.
        std::fs::create_dir(&temporary).unwrap();
        let mut db = FailureDb::open(&path).unwrap();
        assert!(
            db.record([entry(2, "term-cap")]).is_err(),
            "the save went around its temporary file"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), saved);
    }

    #[test]
    fn files_without_a_checker_set_still_load_and_new_ones_keep_it() {
        let old = "[[failure]]\nscenario = \"steady\"\nworker = \"uncapped\"\n\
                   strategy = \"random\"\nseed = 3\noutcome = \"term-cap\"\nsentence = \"s\"\n";
        let file: File = toml::from_str(old).expect("a file written before checker sets loads");
        assert_eq!(file.failures[0].checkers, None);
        let new = toml::to_string(&File {
            failures: vec![entry(4, "term-cap")],
        })
        .unwrap();
        assert!(new.contains("checkers = \"15 halting (all)\""), "{new}");
    }

    #[test]
    fn a_malformed_seed_is_refused_with_the_range_in_words() {
        let text = |seed: &str| {
            format!(
                "[[failure]]\nscenario = \"steady\"\nworker = \"correct\"\n\
                 strategy = \"random\"\nseed = {seed}\noutcome = \"a\"\nsentence = \"b\"\n"
            )
        };
        for seed in ["\"x\"", "-1"] {
            let err = toml::from_str::<File>(&text(seed)).unwrap_err().to_string();
            assert!(err.contains("a seed: a whole number from 0 to"), "{err}");
            assert!(!err.contains("u64"), "{err}");
        }
        let last = toml::from_str::<File>(&text("18446744073709551615")).expect("the last seed");
        assert_eq!(last.failures[0].seed, u64::MAX);
    }

    #[test]
    fn entries_are_deduplicated_and_capped_per_signature() {
        let mut db = FailureDb {
            path: PathBuf::from("x.toml"),
            entries: vec![],
        };
        assert_eq!(db.add([entry(3, "term-cap"), entry(3, "term-cap")]), 1);
        let more: Vec<Entry> = (10..20).map(|s| entry(s, "term-cap")).collect();
        db.add(more);
        assert_eq!(db.entries().len(), PER_SIGNATURE);
        assert_eq!(db.entries()[0].seed, 3, "the smallest seeds are kept");
        assert_eq!(db.add([entry(99, "batch-limit")]), 1);
        assert_eq!(db.entries().len(), PER_SIGNATURE + 1);
        assert_eq!(
            db.add([entry(2, "term-cap")]),
            1,
            "a smaller seed displaces the largest"
        );
        assert_eq!(
            db.add([entry(50, "term-cap")]),
            0,
            "a larger seed is not kept"
        );
    }

    #[test]
    fn record_and_open_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/failures.toml");
        let mut db = FailureDb::open(&path).unwrap();
        db.check_writable().unwrap();
        assert_eq!(db.record([entry(1, "term-cap")]).unwrap(), 1);
        let again = FailureDb::open(&path).unwrap();
        assert_eq!(again.entries(), db.entries());
        // Recording what the file holds changes nothing and counts nothing.
        assert_eq!(db.record([entry(1, "term-cap")]).unwrap(), 0);
    }

    /// Another process filled a signature with smaller seeds: a larger one is not kept, and
    /// the count says so.
    #[test]
    fn a_failure_the_merge_drops_is_not_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("failures.toml");
        let (mut mine, mut theirs) = (
            FailureDb::open(&path).unwrap(),
            FailureDb::open(&path).unwrap(),
        );
        let smaller: Vec<Entry> = (0..PER_SIGNATURE as u64)
            .map(|s| entry(s, "term-cap"))
            .collect();
        assert_eq!(theirs.record(smaller).unwrap(), PER_SIGNATURE);
        assert_eq!(mine.record([entry(99, "term-cap")]).unwrap(), 0);
        assert_eq!(
            FailureDb::open(&path).unwrap().entries().len(),
            PER_SIGNATURE
        );
    }

    #[test]
    fn a_malformed_file_is_reported_with_its_location() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("failures.toml");
        std::fs::write(&path, "[[failure]]\nscenario = 3\n").unwrap();
        let err = FailureDb::open(&path).unwrap_err().to_string();
        assert!(err.contains("failures.toml:2:12"), "{err}");
    }

    /// Eight recorders on one file, each adding its own failures one at a time (as test
    /// binaries sharing `LEASESIM_FAILURES` do): the file ends with every one of them.
    #[test]
    fn recorders_at_once_keep_every_failure() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("failures.toml");
        let savers: Vec<_> = (0..8)
            .map(|saver| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut db = FailureDb::open(&path).unwrap();
                    for seed in 0..20 {
                        let mut found = entry(seed, "term-cap");
                        found.worker = format!("worker-{saver}-{seed}");
                        assert_eq!(db.record([found]).unwrap(), 1);
                    }
                })
            })
            .collect();
        for saver in savers {
            saver.join().unwrap();
        }
        let saved = FailureDb::open(&path).unwrap();
        assert_eq!(
            saved.entries().len(),
            8 * 20,
            "failures lost between recorders"
        );
    }
}
