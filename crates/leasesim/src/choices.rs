//! Choice files: a recorded choice sequence that `replay --choices` takes.
//!
//! Format: UTF-8 text, one choice a line, `KIND VALUE/MAX` (e.g. `schedule 1/2`), or just
//! `VALUE`. Lines starting with `#` are comments (the writer puts the scenario, worker,
//! strategy and verdict there). Replay uses the values only; kinds and bounds are for
//! reading.

use std::fmt::Write as _;

use leasesim_rt::{Choice, ChoiceKind};

use crate::error::UsageError;

/// Renders choices with a comment header.
pub fn render(header: &[String], choices: &[Choice]) -> String {
    let mut out = String::from("# leasesim choices v1\n");
    for line in header {
        let _ = writeln!(out, "# {line}");
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

/// A choice file: the values, and what its header says it was recorded for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChoiceFile {
    pub values: Vec<u64>,
    /// `key: value` pairs of the `#` header (scenario, worker, strategy, ...).
    pub header: Vec<(String, String)>,
}

impl ChoiceFile {
    /// A header value by key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a choice file; errors name `file:line:column`.
pub fn parse(path: &str, text: &str) -> Result<Vec<u64>, UsageError> {
    parse_file(path, text).map(|file| file.values)
}

/// Parses a choice file with its header; errors name `file:line:column`.
pub fn parse_file(path: &str, text: &str) -> Result<ChoiceFile, UsageError> {
    let mut file = ChoiceFile::default();
    let values = &mut file.values;
    for (number, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(comment) = line.strip_prefix('#') {
            if let Some((key, value)) = comment.split_once(':') {
                file.header
                    .push((key.trim().to_string(), value.trim().to_string()));
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let column = raw.len() - raw.trim_start().len() + 1;
        let bad = |why: String| UsageError::File {
            path: format!("{path}:{}:{column}", number + 1),
            why,
        };
        let (kind, value) = match line.split_once(char::is_whitespace) {
            Some((kind, value)) => (Some(kind), value.trim()),
            None => (None, line),
        };
        if let Some(kind) = kind
            && ChoiceKind::from_name(kind).is_none()
        {
            return Err(bad(format!("unknown choice kind `{kind}`")));
        }
        let (value, max) = match value.split_once('/') {
            Some((value, max)) => (value, Some(max)),
            None => (value, None),
        };
        let value: u64 = value
            .parse()
            .map_err(|_| bad(format!("`{value}` is not a choice value")))?;
        if let Some(max) = max {
            let max: u64 = max
                .parse()
                .map_err(|_| bad(format!("`{max}` is not a bound")))?;
            if value > max {
                return Err(bad(format!("value {value} exceeds its bound {max}")));
            }
        }
        values.push(value);
    }
    Ok(file)
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
        let text = render(&["scenario: steady".into()], &choices);
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
}
