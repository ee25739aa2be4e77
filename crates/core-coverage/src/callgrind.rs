//! Reads a callgrind output file: which source lines executed at least one instruction.
//!
//! Terminology:
//! - *cost line*: a position (a source line, given absolutely, relative to the previous one
//!   as `+N` / `-N`, or `*` for the same) followed by event counts; the first count is `Ir`,
//!   instructions executed. A line that ran has a cost line with `Ir > 0` somewhere.
//! - *current file*: `fl=` names the file of the function that follows, `fi=` / `fe=` the
//!   file of inlined code until the next `fi=`, `fe=` or `fn=` (which returns to `fl=`).
//!   Names are compressed: `(7) /path` defines id 7, a later `(7)` refers to it.
//! - A `calls=` line is followed by the cost line of the call site, with the callee's
//!   inclusive cost: the call site ran, so it counts like any other cost line.
//!
//! Only the line positions of `--dump-line=yes` (callgrind's default) are understood; an
//! instruction-level dump (`positions: instr line`) is refused.

use std::collections::{BTreeMap, BTreeSet};

/// A source line that executed: the file's path as callgrind names it, and the line.
pub type Executed = BTreeSet<(String, u32)>;

/// Why a callgrind file could not be read.
#[derive(Debug)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The reading state: the file table and where cost lines go.
#[derive(Default)]
struct Reader {
    files: BTreeMap<u32, String>,
    /// The file of the function (`fl=`).
    function_file: Option<String>,
    /// The file cost lines belong to now (`fl=`, then `fi=` / `fe=`).
    current: Option<String>,
    /// The previous cost line's position (for `+N`, `-N`, `*`).
    last_position: u32,
}

impl Reader {
    /// Resolves a compressed name: `(id) name` defines, `(id)` refers; a bare name stands.
    fn file(&mut self, spec: &str) -> Result<String, String> {
        let Some(rest) = spec.strip_prefix('(') else {
            return Ok(spec.to_string());
        };
        let (id, name) = rest
            .split_once(')')
            .ok_or_else(|| format!("unclosed name id in `{spec}`"))?;
        let id: u32 = id.parse().map_err(|_| format!("bad name id in `{spec}`"))?;
        let name = name.trim();
        if !name.is_empty() {
            self.files.insert(id, name.to_string());
            return Ok(name.to_string());
        }
        self.files
            .get(&id)
            .cloned()
            .ok_or_else(|| format!("file id {id} used before it was named"))
    }

    fn position(&mut self, token: &str) -> Result<u32, String> {
        let position = match token.as_bytes().first() {
            Some(b'*') => self.last_position,
            Some(b'+') => self.last_position + parse_u32(&token[1..])?,
            Some(b'-') => self.last_position.saturating_sub(parse_u32(&token[1..])?),
            _ => parse_u32(token)?,
        };
        self.last_position = position;
        Ok(position)
    }

    /// Reads one line of the file; adds what it shows executed to `executed`.
    fn line(&mut self, text: &str, executed: &mut Executed) -> Result<(), String> {
        if let Some(spec) = text.strip_prefix("fl=") {
            let file = self.file(spec)?;
            self.function_file = Some(file.clone());
            self.current = Some(file);
        } else if let Some(spec) = text.strip_prefix("fi=").or(text.strip_prefix("fe=")) {
            self.current = Some(self.file(spec)?);
        } else if text.starts_with("fn=") {
            self.current = self.function_file.clone();
        } else if let Some(spec) = text.strip_prefix("cfi=").or(text.strip_prefix("cfl=")) {
            // Names the callee's file; it may define an id that later lines use.
            self.file(spec)?;
        } else if text.starts_with("positions:") && text.trim() != "positions: line" {
            return Err(format!(
                "only `positions: line` is understood, not `{text}`"
            ));
        } else if text.starts_with(|c: char| c.is_ascii_digit() || "+-*".contains(c)) {
            self.cost(text, executed)?;
        }
        Ok(())
    }

    fn cost(&mut self, text: &str, executed: &mut Executed) -> Result<(), String> {
        let mut tokens = text.split_ascii_whitespace();
        let position = self.position(tokens.next().unwrap_or_default())?;
        let instructions = tokens.next().map(parse_u64).transpose()?.unwrap_or(0);
        if let (Some(file), true) = (&self.current, instructions > 0) {
            executed.insert((file.clone(), position));
        }
        Ok(())
    }
}

fn parse_u32(text: &str) -> Result<u32, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not a line number"))
}

fn parse_u64(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not an event count"))
}

/// Every (file, line) of `text` (a whole callgrind file) that executed an instruction, kept
/// only where `keep(file)` holds.
pub fn executed_lines(text: &str, keep: impl Fn(&str) -> bool) -> Result<Executed, ParseError> {
    let mut reader = Reader::default();
    let mut executed = Executed::new();
    for (index, line) in text.lines().enumerate() {
        reader
            .line(line, &mut executed)
            .map_err(|message| ParseError {
                line: index + 1,
                message,
            })?;
    }
    executed.retain(|(file, _)| keep(file));
    Ok(executed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# callgrind format
version: 1
positions: line
events: Ir

ob=(1) /bin/x
fl=(1) /src/a.rs
fn=(1) main
10 5
+2 3
* 1
fi=(2) /src/b.rs
40 0
-1 7
fn=(2) helper
20 2
cfi=(3) /src/c.rs
cfn=(3) callee
calls=1 50
21 100
fl=(3)
fn=(3)
50 9
";

    #[test]
    fn positions_compression_and_inlined_files_are_followed() {
        let executed = executed_lines(SAMPLE, |_| true).expect("a valid file");
        let lines: Vec<(&str, u32)> = executed.iter().map(|(f, l)| (f.as_str(), *l)).collect();
        // b.rs:40 has no instruction; `fn=` returns from b.rs to a.rs; the call site at
        // a.rs:21 ran; c.rs was named by `cfi=` and then referred to by id alone.
        assert_eq!(
            lines,
            [
                ("/src/a.rs", 10),
                ("/src/a.rs", 12),
                ("/src/a.rs", 20),
                ("/src/a.rs", 21),
                ("/src/b.rs", 39),
                ("/src/c.rs", 50),
            ]
        );
    }

    #[test]
    fn a_file_filter_keeps_only_its_files_and_bad_input_names_its_line() {
        let executed = executed_lines(SAMPLE, |file| file.ends_with("c.rs")).expect("valid");
        assert_eq!(executed.len(), 1);
        let error = executed_lines("fl=(4)\n", |_| true).expect_err("an unnamed id");
        assert_eq!(error.line, 1);
        assert!(error.message.contains("file id 4"), "{error}");
        let error = executed_lines("positions: instr line\n", |_| true).expect_err("instr");
        assert!(error.message.contains("positions: line"), "{error}");
    }
}
