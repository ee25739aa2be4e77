//! An envelope's axes: which scenario key varies, over which values, and how a value is written
//! into the scenario file.
//!
//! Terminology:
//! - *axis*: `KEY=LO..HI` as `--vary` takes it: a dotted scenario key and the range its values
//!   span, first and last included, at `resolution` evenly spaced values.
//! - *shape*: how a value is written: a plain number (`claim.lifetime_ms = 3000`), both ends of
//!   a range key (`job.duration_ms = [2000, 2000]`: a fixed length), or one end of one
//!   (`job.duration_ms.max` writes `[500, V]`; the other end follows when it would cross).
//! - *whole axis*: one whose values are whole numbers: `LO` and `HI` are written without a
//!   point and the file, if it has the key, holds whole numbers there. `0.0..1.0` is a
//!   fractional axis whatever the file holds (a key that takes only whole numbers then
//!   refuses it, as a mistake in `--vary`).

use std::fmt;

use crate::error::UsageError;

/// One `--vary KEY=LO..HI`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub key: String,
    pub lo: f64,
    pub hi: f64,
    /// `LO` and `HI` were both written as whole numbers.
    pub whole_text: bool,
}

impl Axis {
    /// Parses `KEY=LO..HI`; an error says what is wrong for the `--vary` flag.
    pub fn parse(text: &str) -> Result<Axis, UsageError> {
        let bad = |why: &str| UsageError::BadValue {
            flag: "--vary",
            given: text.to_string(),
            why: why.to_string(),
        };
        let (key, range) = text
            .split_once('=')
            .ok_or_else(|| bad("expected KEY=LO..HI (e.g. claim.lifetime_ms=500..5000)"))?;
        let key = key.trim();
        let key_ok = !key.is_empty()
            && key.split('.').all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
        if !key_ok {
            return Err(bad(
                "the key is not a dotted scenario key (e.g. claim.lifetime_ms)",
            ));
        }
        let (lo_text, hi_text) = range
            .split_once("..")
            .ok_or_else(|| bad("expected LO..HI after the key (e.g. 500..5000)"))?;
        let number = |t: &str| {
            let t = t.trim().replace('_', "");
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| (v, !t.contains(['.', 'e', 'E'])))
        };
        let ((lo, lo_whole), (hi, hi_whole)) = match (number(lo_text), number(hi_text)) {
            (Some(lo), Some(hi)) => (lo, hi),
            _ => return Err(bad("LO and HI must be numbers of at least 0")),
        };
        if lo >= hi {
            return Err(bad("LO must be below HI"));
        }
        Ok(Axis {
            key: key.to_string(),
            lo,
            hi,
            whole_text: lo_whole && hi_whole,
        })
    }
}

/// How an axis's value is written into the scenario (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    Number,
    /// Both ends of a range key.
    Range,
    /// One end of a range key (`max`: the upper one); `other` is the other end in the file.
    End {
        key: String,
        max: bool,
        other: f64,
    },
}

/// An axis with its values and the way they are written.
#[derive(Clone, Debug, PartialEq)]
pub struct AxisValues {
    /// The key as `--vary` named it.
    pub key: String,
    pub values: Vec<f64>,
    pub whole: bool,
    pub shape: Shape,
}

impl AxisValues {
    /// `resolution` evenly spaced values of `axis` (rounded on a whole axis).
    pub fn new(
        axis: &Axis,
        resolution: usize,
        whole: bool,
        shape: Shape,
    ) -> Result<AxisValues, UsageError> {
        assert!(resolution >= 2, "checked with the flag");
        if whole && (axis.hi - axis.lo) < (resolution - 1) as f64 {
            return Err(UsageError::BadValue {
                flag: "--vary",
                given: format!("{}={}..{}", axis.key, axis.lo, axis.hi),
                why: format!(
                    "whole numbers need at least {resolution} distinct values between LO and \
                     HI at --resolution {resolution} (for fractions, write LO or HI with a \
                     decimal point: 0.0..1.0)"
                ),
            });
        }
        let step = (axis.hi - axis.lo) / (resolution - 1) as f64;
        let values: Vec<f64> = (0..resolution)
            .map(|i| {
                let v = axis.lo + step * i as f64;
                if whole {
                    v.round()
                } else {
                    (v * 1e6).round() / 1e6
                }
            })
            .collect();
        // invariant: the values rise strictly from LO to HI.
        debug_assert!(values.windows(2).all(|w| w[0] < w[1]));
        Ok(AxisValues {
            key: axis.key.clone(),
            values,
            whole,
            shape,
        })
    }

    /// The `(key, value)` written into the scenario for the value at `index`.
    pub fn written(&self, index: usize) -> (String, toml::Value) {
        let v = self.values[index];
        let number = |v: f64| {
            if self.whole {
                toml::Value::Integer(v as i64)
            } else {
                toml::Value::Float(v)
            }
        };
        match &self.shape {
            Shape::Number => (self.key.clone(), number(v)),
            Shape::Range => (
                self.key.clone(),
                toml::Value::Array(vec![number(v), number(v)]),
            ),
            Shape::End { key, max, other } => {
                let (lo, hi) = if *max {
                    (other.min(v), v)
                } else {
                    (v, other.max(v))
                };
                (
                    key.clone(),
                    toml::Value::Array(vec![number(lo), number(hi)]),
                )
            }
        }
    }

    /// The value at `index` as the table prints it.
    pub fn text(&self, index: usize) -> String {
        number_text(self.values[index])
    }
}

/// A value as envelopes print it: a whole number without a point, others as short as exact.
pub fn number_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

impl fmt::Display for AxisValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = self.values.len() - 1;
        write!(
            f,
            "{} from {} to {} ({} values)",
            self.key,
            self.text(0),
            self.text(last),
            self.values.len()
        )
    }
}

/// The value at a dotted key of a TOML document, if it has one.
pub fn lookup<'a>(document: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let mut parts = key.split('.');
    let mut value = document.get(parts.next()?)?;
    for part in parts {
        value = value.as_table()?.get(part)?;
    }
    Some(value)
}

fn as_number(value: &toml::Value) -> Option<(f64, bool)> {
    match value {
        toml::Value::Integer(i) => Some((*i as f64, true)),
        toml::Value::Float(f) => Some((*f, false)),
        _ => None,
    }
}

/// The shape and wholeness of `axis` in the scenario file `document` (see the module docs);
/// `None` for the shape when the file does not hold the key (the caller tries a number, then a
/// range).
pub fn shape_in(document: &toml::Table, axis: &Axis) -> Result<(Option<Shape>, bool), UsageError> {
    let bad = |why: String| UsageError::BadValue {
        flag: "--vary",
        given: axis.key.clone(),
        why,
    };
    if let Some(value) = lookup(document, &axis.key) {
        return match value {
            toml::Value::Array(ends) if ends.len() == 2 => {
                let whole = axis.whole_text && ends.iter().all(|e| e.is_integer());
                Ok((Some(Shape::Range), whole))
            }
            other => match as_number(other) {
                Some((_, whole)) => Ok((Some(Shape::Number), whole && axis.whole_text)),
                None => Err(bad(format!(
                    "the scenario's value there, `{other}`, is not a number"
                ))),
            },
        };
    }
    let end = axis
        .key
        .rsplit_once('.')
        .filter(|(_, last)| matches!(*last, "min" | "max"));
    if let Some((base, last)) = end {
        let ends = lookup(document, base)
            .and_then(|v| v.as_array())
            .filter(|a| a.len() == 2);
        let Some(ends) = ends else {
            return Err(bad(format!(
                "`{base}` is not a range [min, max] in the scenario file; write it there, or vary \
                 `{base}` itself (both ends)"
            )));
        };
        let max = last == "max";
        let other_end = &ends[usize::from(!max)];
        let (other, whole) =
            as_number(other_end).ok_or_else(|| bad(format!("`{base}` holds no numbers")))?;
        let shape = Shape::End {
            key: base.to_string(),
            max,
            other,
        };
        let whole = whole && axis.whole_text && ends.iter().all(|e| e.is_integer());
        return Ok((Some(shape), whole));
    }
    Ok((None, axis.whole_text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_axis_parses_from_its_flag_and_refuses_what_is_not_one() {
        let axis = Axis::parse("claim.lifetime_ms=500..5_000").unwrap();
        assert_eq!(
            (axis.key.as_str(), axis.lo, axis.hi, axis.whole_text),
            ("claim.lifetime_ms", 500.0, 5000.0, true)
        );
        assert!(!Axis::parse("job.long_share=0..0.5").unwrap().whole_text);
        for bad in [
            "lifetime",
            "=1..2",
            "a..b=1..2",
            "k=1",
            "k=2..1",
            "k=x..3",
            "k=-1..3",
            "k=1..inf",
        ] {
            let err = Axis::parse(bad).unwrap_err().to_string();
            assert!(err.contains("--vary"), "{bad}: {err}");
        }
    }

    #[test]
    fn values_span_the_range_evenly_and_are_written_in_the_keys_shape() {
        let axis = Axis::parse("job.duration_ms.max=1000..2000").unwrap();
        let shape = Shape::End {
            key: "job.duration_ms".into(),
            max: true,
            other: 1200.0,
        };
        let values = AxisValues::new(&axis, 5, true, shape).unwrap();
        assert_eq!(values.values, [1000.0, 1250.0, 1500.0, 1750.0, 2000.0]);
        let (key, written) = values.written(0);
        assert_eq!(
            (key.as_str(), written.to_string()),
            ("job.duration_ms", "[1000, 1000]".to_string())
        );
        assert_eq!(values.written(4).1.to_string(), "[1200, 2000]");
        let share =
            AxisValues::new(&Axis::parse("s=0..0.3").unwrap(), 4, false, Shape::Number).unwrap();
        assert_eq!(share.values, [0.0, 0.1, 0.2, 0.3]);
        assert_eq!(share.written(1).1.to_string(), "0.1");
        assert!(AxisValues::new(&Axis::parse("k=0..3").unwrap(), 5, true, Shape::Number).is_err());
    }

    #[test]
    fn a_shape_is_read_from_the_scenario_file() {
        let document: toml::Table =
            "[job]\nduration_ms = [500, 2000]\nlong_share = 0.3\n[claim]\nlifetime_ms = 3000\n"
                .parse()
                .unwrap();
        let shape = |key: &str| shape_in(&document, &Axis::parse(&format!("{key}=1..9")).unwrap());
        assert_eq!(
            shape("claim.lifetime_ms").unwrap(),
            (Some(Shape::Number), true)
        );
        assert_eq!(
            shape("job.long_share").unwrap(),
            (Some(Shape::Number), false)
        );
        assert_eq!(
            shape("job.duration_ms").unwrap(),
            (Some(Shape::Range), true)
        );
        assert_eq!(
            shape("job.duration_ms.min").unwrap(),
            (
                Some(Shape::End {
                    key: "job.duration_ms".into(),
                    max: false,
                    other: 2000.0
                }),
                true
            )
        );
        assert_eq!(shape("claim.renew_every_ms").unwrap(), (None, true));
        // Fractions asked for are fractions, whatever the file holds.
        let fractional = Axis::parse("claim.lifetime_ms=0..0.5").unwrap();
        assert_eq!(
            shape_in(&document, &fractional).unwrap(),
            (Some(Shape::Number), false)
        );
        assert!(shape("job.step_ms.max").is_err());
    }
}
