//! The justification table: lines of a core that no run executes, each with the reason.
//!
//! Terminology:
//! - *justification*: one row of the table in `docs/core-coverage.md` headed
//!   `| core | file | line or function | why |`. It names a core (`holder-lock-worker`, or
//!   `*`), a file under the core's `src/` (`worker.rs`, or `*`), and either a line by its
//!   text (`` `return Err(ConfigError::EmptyKey);` ``, compared with the trimmed source
//!   line) or functions by a pattern (`` fn `<* as core::fmt::Display>::fmt` ``, `*` matching
//!   any text): a line is covered by a function row when every function it is in matches.
//! - *stale*: a row that justifies no line any more (the line ran, or its text changed). A
//!   stale row is reported like a gap, so the table never speaks of code that is gone.
//!
//! A `|` inside a cell is written `\|`, as Markdown tables require.

/// What a justification matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A source line, by its trimmed text.
    Line(String),
    /// Every function of the line matches this pattern.
    Functions(String),
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Justification {
    /// The row's line number in the document, for messages.
    pub at_line: usize,
    pub core: String,
    pub file: String,
    pub target: Target,
    pub why: String,
}

/// The header the table is found by.
const HEADER: [&str; 4] = ["core", "file", "line or function", "why"];

/// The cells of a table row, `\|` unescaped; `None` for a line that is not a row.
fn cells(line: &str) -> Option<Vec<String>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cells.last_mut()?.push('|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut()?.push(c),
        }
    }
    Some(cells.iter().map(|cell| cell.trim().to_string()).collect())
}

/// The text between the first and the last backtick of `cell`.
fn code(cell: &str) -> Option<String> {
    let start = cell.find('`')?;
    let end = cell.rfind('`')?;
    (end > start).then(|| cell[start + 1..end].to_string())
}

fn target(cell: &str) -> Result<Target, String> {
    let text = code(cell).ok_or("the third cell needs its line or pattern in backticks")?;
    match cell.trim_start().starts_with("fn ") {
        true => Ok(Target::Functions(text)),
        false => Ok(Target::Line(text.trim().to_string())),
    }
}

/// Every justification of `document` (the Markdown text of `docs/core-coverage.md`).
pub fn parse(document: &str) -> Result<Vec<Justification>, String> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for (index, line) in document.lines().enumerate() {
        let Some(cells) = cells(line) else {
            in_table = false;
            continue;
        };
        if cells == HEADER {
            in_table = true;
            continue;
        }
        if !in_table || cells.iter().all(|c| c.chars().all(|c| "-: ".contains(c))) {
            continue;
        }
        let at_line = index + 1;
        let [core, file, what, why] = <[String; 4]>::try_from(cells)
            .map_err(|c| format!("line {at_line}: {} cells, the table has 4", c.len()))?;
        if why.is_empty() {
            return Err(format!("line {at_line}: the row gives no reason"));
        }
        let target = target(&what).map_err(|e| format!("line {at_line}: {e}"))?;
        let (core, file) = (core.replace('`', ""), file.replace('`', ""));
        rows.push(Justification {
            at_line,
            core,
            file,
            target,
            why,
        });
    }
    Ok(rows)
}

/// Does `text` match `pattern`, where `*` stands for any text?
pub fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

impl Justification {
    /// Does this row justify the line `text` of `file` in `core`, compiled into `functions`?
    pub fn covers<'a>(
        &self,
        core: &str,
        file: &str,
        text: &str,
        mut functions: impl Iterator<Item = &'a str>,
    ) -> bool {
        let place = (self.core == "*" || self.core == core) && glob(&self.file, file);
        place
            && match &self.target {
                Target::Line(line) => line == text,
                Target::Functions(pattern) => functions.all(|f| glob(pattern, f)),
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
# Core coverage

| core | file | line or function | why |
|---|---|---|---|
| holder-lock-worker | config.rs | `return Err(ConfigError::EmptyKey);` | refused at load |
| * | * | fn `<* as core::fmt::Display>::fmt` | rendering |
| work-items-worker | worker.rs | `.filter(\\|x\\| x)` | a pipe |

| other | table |
|---|---|
| not | ours |
";

    #[test]
    fn rows_of_the_table_are_read_and_others_are_not() {
        let rows = parse(DOC).expect("a valid table");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].at_line, 5);
        assert_eq!(
            rows[0].target,
            Target::Line("return Err(ConfigError::EmptyKey);".into())
        );
        assert_eq!(
            rows[1].target,
            Target::Functions("<* as core::fmt::Display>::fmt".into())
        );
        assert_eq!(rows[2].target, Target::Line(".filter(|x| x)".into()));
        let bad = "| core | file | line or function | why |\n|---|---|---|---|\n| a | b | c | |\n";
        assert!(parse(bad).expect_err("no reason").contains("line 3"));
    }

    #[test]
    fn a_function_row_covers_a_line_only_when_every_function_matches() {
        let rows = parse(DOC).expect("a valid table");
        let display = "<x::E as core::fmt::Display>::fmt";
        let debug = "<x::E as core::fmt::Debug>::fmt";
        assert!(rows[1].covers("a-worker", "ports.rs", "any", [display].into_iter()));
        assert!(!rows[1].covers("a-worker", "ports.rs", "any", [display, debug].into_iter()));
        let line = "return Err(ConfigError::EmptyKey);";
        assert!(rows[0].covers("holder-lock-worker", "config.rs", line, [debug].into_iter()));
        assert!(!rows[0].covers("work-items-worker", "config.rs", line, [debug].into_iter()));
    }

    #[test]
    fn glob_stars_match_any_text_and_nothing_else_does() {
        assert!(glob("a*c", "abbbc"));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "a-b-c"));
        assert!(!glob("a*c", "abcd"));
        assert!(!glob("abc", "abcd"));
        assert!(!glob("a*bc*bc", "abc"));
    }
}
