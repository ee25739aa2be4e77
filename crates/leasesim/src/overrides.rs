//! Scenario overrides: the changes a shrink makes to a scenario, recorded as `KEY = VALUE`.
//!
//! Terminology:
//! - *override*: a dotted scenario key (as written in a scenario file: `replicas`,
//!   `faults.reject.renew`, `clocks.offset_ms`, `store.rows`) and a TOML value (`1`, `0`,
//!   `false`, `[0, 0]`, `none`). Any key of any system's scenario files can be overridden.
//! - *apply*: the overrides are written into the scenario's file text (creating tables as
//!   needed) and the file is checked again by its system's loader, so an override can never
//!   make a scenario that a file could not: an invalid one is an error naming the override.
//! - *canonical order*: the shape first (replicas, phases), then stops, faults and clocks, in
//!   a fixed order; keys it does not list follow in name order. Choices files list overrides
//!   in this order, so one shrink always writes the same file.

use std::fmt;

use leasesim_sim::scenario::parse_scenario;
use leasesim_sim::{Scenario, System};

/// One override.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    pub key: String,
    pub value: toml::Value,
}

/// A value as an override line writes it: TOML, except that a plain word is written bare
/// (`stop.at = none`).
fn value_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(word) if is_bare_word(word) => word.clone(),
        other => other.to_string(),
    }
}

fn is_bare_word(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !matches!(text, "true" | "false")
        && text.parse::<f64>().is_err()
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", self.key, value_text(&self.value))
    }
}

/// Why an override's text does not parse: the message and its 0-based byte column in the
/// text that was parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub column: usize,
    pub why: String,
}

/// Parses `KEY = VALUE` (the value is TOML, or a bare word taken as a string).
pub fn parse(text: &str) -> Result<Override, ParseError> {
    let Some((key_text, value_text)) = text.split_once('=') else {
        return Err(ParseError {
            column: 0,
            why: format!("`{}` is not `KEY = VALUE`", text.trim()),
        });
    };
    let key = key_text.trim();
    let key_column = key_text.len() - key_text.trim_start().len();
    let key_ok = !key.is_empty()
        && key.split('.').all(|part| {
            !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if !key_ok {
        return Err(ParseError {
            column: key_column,
            why: format!("`{key}` is not a scenario key (e.g. `faults.reject.renew`)"),
        });
    }
    let value_column = key_text.len() + 1 + value_text.len() - value_text.trim_start().len();
    let value = parse_value(value_text.trim()).map_err(|why| ParseError {
        column: value_column,
        why: format!("{key}: {why}"),
    })?;
    Ok(Override {
        key: key.to_string(),
        value,
    })
}

fn parse_value(text: &str) -> Result<toml::Value, String> {
    if is_bare_word(text) {
        return Ok(toml::Value::String(text.to_string()));
    }
    let table: toml::Table = format!("v = {text}").parse().map_err(|_| {
        format!("`{text}` is not a value (a number, true, false, [min, max] or a word)")
    })?;
    table
        .get("v")
        .cloned()
        .ok_or_else(|| format!("`{text}` is not a value"))
}

/// The canonical position of a key (see the module docs).
fn rank(key: &str) -> (usize, &str) {
    const ORDER: &[&str] = &[
        "replicas",
        "duration_ms",
        "liveness_ms",
        "drain",
        "store.rows",
        "stop.at",
        "stop.replicas",
        "faults.reject.",
        "faults.request_lost.",
        "faults.reply_lost.",
        "faults.revoke.probability",
        "faults.pause.probability",
        "faults.short_delete",
        "clocks.jump.probability",
        "clocks.offset_ms",
        "clocks.drift_ppm",
    ];
    let position = ORDER
        .iter()
        .position(|known| key == *known || (known.ends_with('.') && key.starts_with(known)));
    (position.unwrap_or(ORDER.len()), key)
}

/// A set of overrides, one per key, in canonical order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides(Vec<Override>);

impl Overrides {
    /// Sets `key` (replacing an earlier value of it).
    pub fn set(&mut self, key: &str, value: toml::Value) {
        self.0.retain(|o| o.key != key);
        let at = self.0.partition_point(|o| rank(&o.key) < rank(key));
        self.0.insert(
            at,
            Override {
                key: key.to_string(),
                value,
            },
        );
        // invariant: canonical order, one override per key.
        debug_assert!(self.0.windows(2).all(|w| rank(&w[0].key) < rank(&w[1].key)));
    }

    pub fn get(&self, key: &str) -> Option<&toml::Value> {
        self.0.iter().find(|o| o.key == key).map(|o| &o.value)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Override> {
        self.0.iter()
    }

    /// `KEY = VALUE`, one per override.
    pub fn lines(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }

    /// `scenario` with every override written into its file and checked again. An error
    /// names the override that makes the scenario invalid (the first one whose addition
    /// does; overrides are checked together, so `replicas = 1` with `stop.replicas = 1` is
    /// valid even where `replicas = 1` alone is not), and why.
    pub fn apply<S: System>(
        &self,
        scenario: &Scenario<S>,
    ) -> Result<Scenario<S>, (String, String)> {
        if self.0.is_empty() {
            return Ok(scenario.clone());
        }
        let all = self.patched(scenario, self.0.len())?;
        match parse_scenario::<S>(&scenario.name, &scenario.source, &all) {
            // The changed scenario's text is the patched file (never mistaken for the builtin
            // it came from).
            Ok(changed) => Ok(changed),
            Err(last) => Err(self.blame(scenario, last)),
        }
    }

    /// The scenario's text with the first `count` overrides written in.
    fn patched<S: System>(
        &self,
        scenario: &Scenario<S>,
        count: usize,
    ) -> Result<String, (String, String)> {
        let mut document: toml::Table = scenario
            .text
            .parse()
            .map_err(|err| (String::new(), format!("the scenario's own text: {err}")))?;
        for o in &self.0[..count] {
            set_dotted(&mut document, &o.key, o.value.clone())
                .map_err(|why| (o.key.clone(), why))?;
        }
        Ok(toml::to_string(&document).expect("a TOML table serializes"))
    }

    /// The override to blame: the first one without which the rest are valid; when no one
    /// override is (several are wrong), the first one whose addition fails.
    fn blame<S: System>(
        &self,
        scenario: &Scenario<S>,
        last: leasesim_sim::ScenarioError,
    ) -> (String, String) {
        let check = |overrides: &Overrides| -> Result<(), (String, String)> {
            let text = overrides.patched(scenario, overrides.0.len())?;
            parse_scenario::<S>(&scenario.name, &scenario.source, &text)
                .map(|_| ())
                .map_err(|err| (String::new(), err.message))
        };
        let without = |index: usize| {
            let mut rest = self.clone();
            rest.0.remove(index);
            rest
        };
        let prefix = |count: usize| Overrides(self.0[..count].to_vec());
        // Without the culprit the rest is valid: the whole set's error is the culprit's.
        let (culprit, message) = match (0..self.0.len()).find(|&i| check(&without(i)).is_ok()) {
            Some(index) => (index, last.message),
            None => {
                let failing = (1..=self.0.len())
                    .map(|count| (count, check(&prefix(count))))
                    .find(|(_, checked)| checked.is_err());
                match failing {
                    Some((_, Err((key, why)))) if !key.is_empty() => return (key, why),
                    Some((count, Err((_, why)))) => (count - 1, why),
                    _ => (self.0.len() - 1, last.message),
                }
            }
        };
        let key = &self.0[culprit].key;
        // A message that already leads with this key (`` `replicas` must be ...``) says it once.
        let quoted = format!("`{key}`");
        let message = match message.strip_prefix(&quoted) {
            Some(rest) => rest.trim_start_matches(':').trim_start().to_string(),
            None => message,
        };
        (key.clone(), format!("override `{key}`: {message}"))
    }
}

/// Writes `value` at dotted `key` into `table`, creating tables on the way.
fn set_dotted(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().expect("a key has at least one part");
    let mut at = table;
    for part in parts {
        let next = at
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        at = next
            .as_table_mut()
            .ok_or_else(|| format!("`{part}` is not a table in this scenario"))?;
    }
    at.insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_back_to_the_same_override() {
        for line in [
            "replicas = 1",
            "faults.pause.probability = 0",
            "faults.pause.probability = 0.35",
            "clocks.offset_ms = [0, 0]",
            "stop.at = none",
            "drain = false",
        ] {
            let o = parse(line).unwrap_or_else(|err| panic!("{line}: {err:?}"));
            assert_eq!(o.to_string(), line);
        }
    }

    #[test]
    fn malformed_lines_name_their_column() {
        let err = parse("replicas 1").unwrap_err();
        assert_eq!(err.column, 0);
        let err = parse("faults..x = 1").unwrap_err();
        assert!(err.why.contains("not a scenario key"), "{}", err.why);
        let err = parse("replicas = [1,").unwrap_err();
        assert_eq!(err.column, 11);
    }

    #[test]
    fn the_order_is_canonical_whatever_the_order_of_setting() {
        let mut one = Overrides::default();
        one.set("faults.pause.probability", toml::Value::Integer(0));
        one.set("replicas", toml::Value::Integer(1));
        one.set("zz.unknown", toml::Value::Boolean(true));
        let mut two = Overrides::default();
        two.set("zz.unknown", toml::Value::Boolean(true));
        two.set("replicas", toml::Value::Integer(1));
        two.set("faults.pause.probability", toml::Value::Integer(0));
        assert_eq!(one, two);
        assert_eq!(
            one.lines(),
            [
                "replicas = 1",
                "faults.pause.probability = 0",
                "zz.unknown = true"
            ]
        );
    }

    #[test]
    fn overrides_are_checked_together_and_the_first_culprit_is_blamed() {
        let scenario =
            crate::catalog::resolve_typed::<leasesim_retention::Retention>("stop-during-acquire")
                .unwrap();
        let one = toml::Value::Integer(1);
        // Alone, one replica cannot have two of them stopped.
        let mut alone = Overrides::default();
        alone.set("replicas", one.clone());
        let (key, why) = alone.apply(&scenario).unwrap_err();
        assert_eq!(key, "replicas");
        assert!(why.starts_with("override `replicas`: "), "{why}");
        // Together with fewer replicas stopped, it is a valid scenario.
        let mut together = alone.clone();
        together.set("stop.replicas", one.clone());
        let changed = together.apply(&scenario).unwrap();
        assert_eq!((changed.replicas, changed.stop.replicas), (1, 1));
        // A bad value after a good one is the one named.
        together.set("store.rows", toml::Value::String("many".into()));
        let (key, why) = together.apply(&scenario).unwrap_err();
        assert_eq!(key, "store.rows");
        assert!(
            why.starts_with("override `store.rows`: invalid type"),
            "{why}"
        );
    }
}
