//! Choice files: a recorded choice sequence that `replay --choices` takes.
//!
//! Format (v2): UTF-8 text, one choice a line, `KIND VALUE/MAX` (e.g. `schedule 1/2`), or just
//! `VALUE`. Lines starting with `#` are comments (the writer puts the format version, the
//! scenario, worker, strategy and verdict there), except `# set KEY = VALUE`: a scenario
//! override (see [`crate::overrides`]) that replay applies to the scenario before the run, so
//! a shrink that changed the scenario replays from its file alone. Replay uses the values and
//! the overrides only; kinds and bounds are for reading.
//!
//! v1 files (no overrides; written before shrinking could change a scenario) load unchanged.
//! A version line other than v1 or v2, or an override that does not parse, is an error naming
//! `file:line:column`.

use std::fmt::Write as _;

use leasesim_rt::{Choice, ChoiceKind};
use std::sync::Arc;

use crate::error::UsageError;
use crate::overrides::{self, Overrides};
use crate::systems::AnyScenario;

/// The format version this module writes.
pub const VERSION: u32 = 2;

/// Renders choices with a comment header and the scenario overrides they need.
pub fn render(header: &[String], overrides: &Overrides, choices: &[Choice]) -> String {
    let mut out = format!("# leasesim choices v{VERSION}\n");
    for line in header {
        let _ = writeln!(out, "# {line}");
    }
    for line in overrides.lines() {
        let _ = writeln!(out, "# set {line}");
    }
    for choice in choices {
        let _ = writeln!(
            out,
            "{} {}/{}",
            choice.kind.name(),
            choice.value,
            choice.max
        );
    }
    out
}

/// A choice file: the values, the overrides, and what its header says it was recorded for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChoiceFile {
    pub values: Vec<u64>,
    /// `key: value` pairs of the `#` header (scenario, worker, strategy, ...).
    pub header: Vec<(String, String)>,
    /// The `# set` lines.
    pub overrides: Overrides,
    /// Where each override was written: `(key, file:line:column of the key, ... of the
    /// value)`.
    pub override_at: Vec<(String, String, String)>,
}

impl ChoiceFile {
    /// A header value by key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `scenario` with this file's overrides applied; an override that makes it invalid is
    /// an error at that override's line.
    pub fn apply(
        &self,
        scenario: &Arc<dyn AnyScenario>,
    ) -> Result<Arc<dyn AnyScenario>, UsageError> {
        if self.overrides.is_empty() {
            return Ok(scenario.clone());
        }
        scenario
            .with_overrides(&self.overrides)
            .map_err(|(key, why)| {
                // An unknown key, or a key through a value, is the key's fault; anything else
                // (a wrong type, a value out of range) is the value's.
                let key_fault = why.contains("unknown key") || why.contains("is not a table");
                let path = self
                    .override_at
                    .iter()
                    .find(|(k, _, _)| *k == key)
                    .map(|(_, key_at, value_at)| match key_fault {
                        true => key_at.clone(),
                        false => value_at.clone(),
                    })
                    .unwrap_or_default();
                UsageError::File { path, why }
            })
    }
}

/// Parses a choice file; errors name `file:line:column`.
pub fn parse(path: &str, text: &str) -> Result<Vec<u64>, UsageError> {
    parse_file(path, text).map(|file| file.values)
}

/// Parses a choice file with its header; errors name `file:line:column`.
pub fn parse_file(path: &str, text: &str) -> Result<ChoiceFile, UsageError> {
    let mut file = ChoiceFile::default();
    for (number, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let column = raw.len() - raw.trim_start().len() + 1;
        let at = |offset: usize| format!("{path}:{}:{}", number + 1, column + offset);
        let bad = |offset: usize, why: String| UsageError::File {
            path: at(offset),
            why,
        };
        if let Some(comment) = line.strip_prefix('#') {
            comment_line(&mut file, comment, line.len() - comment.len(), &at, &bad)?;
            continue;
        }
        if line.is_empty() {
            continue;
        }
        file.values
            .push(choice_line(line).map_err(|why| bad(0, why))?);
    }
    Ok(file)
}

/// One `#` line: the version, an override, or a `key: value` comment. `offset` is where
/// `comment` starts within the trimmed line.
fn comment_line(
    file: &mut ChoiceFile,
    comment: &str,
    offset: usize,
    at: &dyn Fn(usize) -> String,
    bad: &dyn Fn(usize, String) -> UsageError,
) -> Result<(), UsageError> {
    let body = comment.trim_start();
    let body_offset = offset + comment.len() - body.len();
    if let Some(version) = body.strip_prefix("leasesim choices v") {
        return match version.trim() {
            "1" | "2" => Ok(()),
            other => Err(bad(
                body_offset,
                format!("unknown choices format version `v{other}` (this build reads v1 and v2)"),
            )),
        };
    }
    if let Some(rest) = body.strip_prefix("set")
        && rest.starts_with(char::is_whitespace)
    {
        let rest_offset = body_offset + 3;
        let parsed =
            overrides::parse(rest).map_err(|err| bad(rest_offset + err.column, err.why))?;
        if file.overrides.get(&parsed.key).is_some() {
            let why = format!("`{}` is set twice", parsed.key);
            return Err(bad(body_offset, why));
        }
        let key_offset = rest_offset + rest.len() - rest.trim_start().len();
        let (_, value) = rest.split_once('=').expect("a parsed override has `=`");
        let value_offset = rest_offset + rest.len() - value.trim_start().len();
        file.override_at
            .push((parsed.key.clone(), at(key_offset), at(value_offset)));
        file.overrides.set(&parsed.key, parsed.value);
        return Ok(());
    }
    if let Some((key, value)) = body.split_once(':') {
        file.header
            .push((key.trim().to_string(), value.trim().to_string()));
    }
    Ok(())
}

/// One choice line: `KIND VALUE/MAX`, `VALUE/MAX` or `VALUE`.
fn choice_line(line: &str) -> Result<u64, String> {
    let (kind, value) = match line.split_once(char::is_whitespace) {
        Some((kind, value)) => (Some(kind), value.trim()),
        None => (None, line),
    };
    if let Some(kind) = kind
        && ChoiceKind::from_name(kind).is_none()
    {
        return Err(format!("unknown choice kind `{kind}`"));
    }
    let (value, max) = match value.split_once('/') {
        Some((value, max)) => (value, Some(max)),
        None => (value, None),
    };
    let value: u64 = value
        .parse()
        .map_err(|_| format!("`{value}` is not a choice value"))?;
    if let Some(max) = max {
        let max: u64 = max.parse().map_err(|_| format!("`{max}` is not a bound"))?;
        if value > max {
            return Err(format!("value {value} exceeds its bound {max}"));
        }
    }
    Ok(value)
}

/// Reads a choice file.
pub fn read(path: &str) -> Result<ChoiceFile, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|err| UsageError::File {
        path: path.to_string(),
        why: format!("cannot read choices file: {err}"),
    })?;
    parse_file(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bare_values() {
        let choices = [
            Choice {
                kind: ChoiceKind::Schedule,
                value: 1,
                max: 2,
            },
            Choice {
                kind: ChoiceKind::Coin,
                value: 0,
                max: 1,
            },
        ];
        let text = render(
            &["scenario: steady".into()],
            &Overrides::default(),
            &choices,
        );
        assert!(
            text.starts_with("# leasesim choices v2\n# scenario: steady\n"),
            "{text}"
        );
        assert_eq!(parse("f", &text).unwrap(), vec![1, 0]);
        assert_eq!(parse("f", "# c\n7\n\n  3\n").unwrap(), vec![7, 3]);
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let err = parse("c.txt", "# x\nrange 3/2\n").unwrap_err().to_string();
        assert_eq!(err, "c.txt:2:1: value 3 exceeds its bound 2");
        let err = parse("c.txt", "  dice 1/2\n").unwrap_err().to_string();
        assert_eq!(err, "c.txt:1:3: unknown choice kind `dice`");
        let err = parse("c.txt", "coin x/1\n").unwrap_err().to_string();
        assert!(
            err.starts_with("c.txt:1:1: `x` is not a choice value"),
            "{err}"
        );
    }

    #[test]
    fn overrides_round_trip_and_v1_files_still_load() {
        let mut set = Overrides::default();
        set.set("faults.pause.probability", toml::Value::Integer(0));
        set.set("replicas", toml::Value::Integer(1));
        let text = render(&["worker: naive".into()], &set, &[]);
        assert_eq!(
            text,
            "# leasesim choices v2\n# worker: naive\n# set replicas = 1\n\
             # set faults.pause.probability = 0\n"
        );
        let file = parse_file("f", &text).unwrap();
        assert_eq!(file.overrides, set);
        assert_eq!(file.get("worker"), Some("naive"));
        let at = |text: &str| text.to_string();
        assert_eq!(
            file.override_at[0],
            (at("replicas"), at("f:3:7"), at("f:3:18"))
        );

        let v1 = "# leasesim choices v1\n# scenario: steady\n# verdict: x: y\nschedule 1/2\n";
        let file = parse_file("old", v1).unwrap();
        assert_eq!(file.values, vec![1]);
        assert!(file.overrides.is_empty());
    }

    #[test]
    fn bad_override_lines_name_the_line_and_column() {
        let err = |text: &str| parse_file("c.txt", text).unwrap_err().to_string();
        assert_eq!(
            err("# leasesim choices v2\n# set replicas = [1,\n"),
            "c.txt:2:18: replicas: `[1,` is not a value (a number, true, false, [min, max] or a word)"
        );
        assert!(
            err("  #  set  repl..ics = 1\n")
                .starts_with("c.txt:1:11: `repl..ics` is not a scenario key"),
            "{}",
            err("  #  set  repl..ics = 1\n")
        );
        assert_eq!(
            err("# set drain\n"),
            "c.txt:1:6: `drain` is not `KEY = VALUE`"
        );
        assert_eq!(
            err("# set replicas = 1\n# set replicas = 2\n"),
            "c.txt:2:3: `replicas` is set twice"
        );
        assert_eq!(
            err("# leasesim choices v3\n"),
            "c.txt:1:3: unknown choices format version `v3` (this build reads v1 and v2)"
        );
        // A comment that merely starts with "set" is a comment.
        assert!(parse_file("c.txt", "# settings: none\n").is_ok());
    }

    #[test]
    fn an_override_that_breaks_the_scenario_is_refused_at_its_line() {
        let scenario = crate::catalog::builtin("steady").unwrap().unwrap();
        let refused = |text: &str| {
            let file = parse_file("c.txt", text).unwrap();
            file.apply(&scenario).unwrap_err().to_string()
        };
        assert_eq!(
            refused("# leasesim choices v2\n# set replicas = 99\n"),
            "c.txt:2:18: override `replicas`: must be a whole number from 1 to 64, got 99"
        );
        let unknown = refused("# leasesim choices v2\n# set replics = 1\n");
        let wanted = "c.txt:2:7: override `replics`: unknown key `replics`";
        assert!(unknown.starts_with(wanted), "{unknown}");
        let many = refused("# leasesim choices v2\n# set replicas = many\n");
        let wanted = "c.txt:2:18: override `replicas`: invalid type";
        assert!(many.starts_with(wanted), "{many}");
    }
}
