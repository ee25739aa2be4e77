//! Files users edit by hand, mutated at random: a scenario file, a choices file, a failure
//! database. Whatever the bytes, the reader answers instead of panicking, and a refusal names
//! the file it read (and, for a syntax error, the line and column), which the command prints
//! before exiting with code 2.
//!
//! Terminology:
//! - *base*: a valid file of the kind (every built-in scenario; a choices file as `shrink`
//!   writes it; a failure database as `fuzz` writes it).
//! - *edit*: one random change of the text: a span deleted, a snippet inserted (TOML
//!   punctuation, huge and negative numbers, section headers, non-ASCII), a line duplicated or
//!   dropped, a character replaced.

use leasesim::Registry;
use leasesim::catalog;
use leasesim::choices;
use leasesim::faildb::FailureDb;
use proptest::prelude::*;

/// Snippets an edit inserts: what a hand edit or a truncated copy tends to leave.
const SNIPPETS: &[&str] = &[
    "[",
    "]",
    "=",
    "\"",
    "'",
    ",",
    "{",
    "}",
    "#",
    "\n",
    " ",
    ".",
    "0",
    "-1",
    "1e400",
    "-0.5",
    "18446744073709551616",
    "99999999999999999999",
    "nan",
    "inf",
    "true",
    "\"x\"",
    "[faults]\n",
    "[[failure]]\n",
    "replicas = ",
    "seed = ",
    "# set ",
    "range ",
    "/",
    "é",
    "\u{0}",
    "\t",
];

/// One change of a text (positions are taken modulo its length).
#[derive(Clone, Debug)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, &'static str),
    DuplicateLine(usize),
    DropLine(usize),
    Replace(usize, char),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Edit::Delete(at, len)),
        (any::<usize>(), prop::sample::select(SNIPPETS)).prop_map(|(at, s)| Edit::Insert(at, s)),
        any::<usize>().prop_map(Edit::DuplicateLine),
        any::<usize>().prop_map(Edit::DropLine),
        (any::<usize>(), any::<char>()).prop_map(|(at, c)| Edit::Replace(at, c)),
    ]
}

/// `text` with `edits` applied in order, on characters (never splitting one).
fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for edit in edits {
        let len = chars.len().max(1);
        match *edit {
            Edit::Delete(at, n) => {
                let start = at % len;
                let end = (start + n).min(chars.len());
                chars.drain(start.min(chars.len())..end);
            }
            Edit::Insert(at, snippet) => {
                let at = at % (chars.len() + 1);
                chars.splice(at..at, snippet.chars());
            }
            Edit::Replace(at, c) => {
                if !chars.is_empty() {
                    let at = at % chars.len();
                    chars[at] = c;
                }
            }
            Edit::DuplicateLine(at) | Edit::DropLine(at) => {
                let text: String = chars.iter().collect();
                let mut lines: Vec<&str> = text.split('\n').collect();
                let at = at % lines.len();
                match edit {
                    Edit::DuplicateLine(_) => lines.insert(at, lines[at]),
                    _ => {
                        lines.remove(at);
                    }
                }
                chars = lines.join("\n").chars().collect();
            }
        }
    }
    chars.into_iter().collect()
}

/// A choices file as `leasesim shrink` writes it.
const CHOICES: &str = "# leasesim choices v2\n# scenario: steady\n# worker: stale-release\n\
    # strategy: random\n# set faults.pause.probability = 0\n# set replicas = 2\n\
    schedule 1/2\nrange 350/800\ncoin 0/1\nrange 12/40\n";

/// A failure database as `leasesim fuzz` writes it.
const FAILURES: &str = "# leasesim failure database\n\n[[failure]]\nscenario = \"steady\"\n\
    worker = \"stale-release\"\nstrategy = \"random\"\nseed = 3\noutcome = \"release-latest\"\n\
    sentence = \"r1 released token 1\"\ncheckers = \"28 (all)\"\n\n[[failure]]\n\
    scenario = \"slow-deletes\"\nworker = \"uncapped\"\nstrategy = \"pct:3\"\nseed = 0\n\
    outcome = \"term-cap\"\nsentence = \"s\"\n";

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_mutated_scenario_file_is_read_or_refused_at_its_place(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let registry = Registry::builtin();
        let base = which.get(registry.scenarios());
        let text = mutate(base.text, &edits);
        if let Err(err) = catalog::parse("mutated", "mutated.toml", &text) {
            let message = err.to_string();
            prop_assert!(message.starts_with("mutated.toml"), "{}", message);
        }
    }

    #[test]
    fn a_mutated_choices_file_is_read_or_refused_at_its_line(
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let text = mutate(CHOICES, &edits);
        if let Err(err) = choices::parse_file("mutated.choices", &text) {
            let message = err.to_string();
            prop_assert!(message.starts_with("mutated.choices:"), "{}", message);
        }
    }

    #[test]
    fn a_mutated_failure_database_is_read_or_refused_at_its_place(
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("failures.toml");
        std::fs::write(&path, mutate(FAILURES, &edits)).unwrap();
        if let Err(err) = FailureDb::open(&path) {
            let message = err.to_string();
            let shown = path.display().to_string();
            prop_assert!(message.starts_with(&shown), "{}", message);
        }
    }
}

#[test]
fn the_bases_are_valid_so_the_mutations_start_from_a_file_that_reads() {
    for base in Registry::builtin().scenarios() {
        let parsed = catalog::parse(base.name, &base.source(), base.text);
        assert!(parsed.is_ok(), "{}: {:?}", base.name, parsed.err());
    }
    let file = choices::parse_file("base.choices", CHOICES).expect("the choices base reads");
    assert_eq!(file.values, vec![1, 350, 0, 12]);
    assert_eq!(file.get("worker"), Some("stale-release"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("failures.toml");
    std::fs::write(&path, FAILURES).unwrap();
    let db = FailureDb::open(&path).expect("the failure database base reads");
    assert_eq!(db.entries().len(), 2);
}
