//! Bad input: every message names what was wrong and where; the CLI exits with code 2.

use std::fmt;

use leasesim_sim::ScenarioError;

/// Something the user gave that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UsageError {
    /// A scenario file that cannot be read or is invalid (with file:line:column).
    Scenario(ScenarioError),
    /// An unknown scenario, worker, invariant or strategy name; lists the valid ones.
    UnknownName {
        what: &'static str,
        given: String,
        valid: Vec<String>,
    },
    /// A flag value that does not parse.
    BadValue {
        flag: &'static str,
        given: String,
        why: String,
    },
    /// A file the harness needs to read or write.
    File { path: String, why: String },
    /// An environment variable the harness reads (`LEASESIM_SEED`, ...) whose value cannot be
    /// used.
    Env { variable: &'static str, why: String },
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsageError::Scenario(err) => write!(f, "{err}"),
            UsageError::UnknownName { what, given, valid } => {
                write!(f, "unknown {what} `{given}`; valid: {}", valid.join(", "))
            }
            UsageError::BadValue { flag, given, why } => {
                write!(f, "invalid value `{given}` for {flag}: {why}")
            }
            UsageError::File { path, why } => write!(f, "{path}: {why}"),
            UsageError::Env { variable, why } => write!(f, "{variable}: {why}"),
        }
    }
}

impl std::error::Error for UsageError {}

/// Parses a seed: decimal or `0x`-prefixed hexadecimal.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let parsed = match trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => trimmed.replace('_', "").parse::<u64>(),
    };
    parsed.map_err(|_| {
        format!("`{text}` is not a seed (expected a decimal or 0x-hex number below 2^64)")
    })
}

/// Parses a count of seeds, ranges or runs: a whole number of at least 1 (a campaign of zero
/// seeds would pass without checking anything).
pub fn parse_count(text: &str) -> Result<u64, String> {
    match text.trim().replace('_', "").parse::<u64>() {
        Ok(0) => Err("a count of 0 would run nothing; give at least 1".into()),
        Ok(count) => Ok(count),
        Err(_) => Err(format!(
            "`{text}` is not a count (expected a whole number from 1 to {})",
            u64::MAX
        )),
    }
}

/// Parses a shard `K/N` (1 <= K <= N).
pub fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("`{text}` is not a shard (expected K/N with 1 <= K <= N)");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let k: u64 = k.trim().parse().map_err(|_| bad())?;
    let n: u64 = n.trim().parse().map_err(|_| bad())?;
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// Parses a duration such as `90s`, `10m`, `2h` or `500ms`.
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not a duration (expected e.g. 500ms, 90s, 10m, 2h)");
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(bad)?;
    let (number, unit) = trimmed.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let factor = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(bad()),
    };
    number
        .checked_mul(factor)
        .filter(|&ms| ms > 0)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse_in_decimal_and_hex() {
        assert_eq!(parse_seed("42"), Ok(42));
        assert_eq!(parse_seed("0x2A"), Ok(42));
        assert_eq!(parse_seed("1_000"), Ok(1000));
        assert_eq!(parse_seed("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_seed("18446744073709551616").is_err());
        assert!(parse_seed("-1").is_err());
        assert!(parse_seed("0xZZ").is_err());
        assert!(parse_seed("").is_err());
    }

    #[test]
    fn counts_are_whole_numbers_of_at_least_one() {
        assert_eq!(parse_count("3"), Ok(3));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert!(
            parse_count("0")
                .unwrap_err()
                .contains("a count of 0 would run nothing")
        );
        assert!(parse_count("-1").unwrap_err().contains("from 1 to"));
        assert!(
            parse_count("many")
                .unwrap_err()
                .contains("`many` is not a count")
        );
    }

    #[test]
    fn shards_must_have_k_within_n() {
        assert_eq!(parse_shard("1/4"), Ok((1, 4)));
        assert_eq!(parse_shard("4/4"), Ok((4, 4)));
        assert!(parse_shard("3/2").is_err());
        assert!(parse_shard("0/2").is_err());
        assert!(parse_shard("2").is_err());
    }

    #[test]
    fn durations_take_a_unit() {
        assert_eq!(parse_duration_ms("10m"), Ok(600_000));
        assert_eq!(parse_duration_ms("90s"), Ok(90_000));
        assert_eq!(parse_duration_ms("250ms"), Ok(250));
        assert!(parse_duration_ms("10").is_err());
        assert!(parse_duration_ms("0s").is_err());
        assert!(parse_duration_ms("fast").is_err());
    }
}
