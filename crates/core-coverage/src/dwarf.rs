//! Reads a binary's line tables: which source lines have machine code, and in which function.
//!
//! Terminology:
//! - *line table*: DWARF's map from instruction addresses to (file, line), one per compile
//!   unit. A source line with at least one row has code: it can run. Built without
//!   optimisation, every statement keeps rows of its own, so a branch never folds into its
//!   neighbour's line and an unexecuted row really is a path no run took.
//! - *coverable line*: a (file, line) with a row, line 0 (code the compiler made up) aside.
//! - *functions*: the demangled names of the symbols whose address ranges hold the line's
//!   rows (without optimisation nothing is inlined, so these are the functions the line is
//!   in: one per instantiation, or several for a `#[derive]` line). A line whose code the
//!   linker left out (nothing in the binary calls it) keeps its rows, at an address outside
//!   every code section: its function reads [`NOT_LINKED`].

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};

/// Every coverable line of the kept files, with the functions its rows are in.
pub type Coverable = BTreeMap<(String, u32), BTreeSet<String>>;

/// The function name of code the linker left out of the binary.
pub const NOT_LINKED: &str = "(not linked: nothing in the binary calls it)";

/// The binary's text symbols (start address, size, demangled name) and code sections.
struct Symbols {
    symbols: Vec<(u64, u64, String)>,
    code: Vec<(u64, u64)>,
}

impl Symbols {
    fn of(file: &object::File<'_>) -> Symbols {
        let mut symbols: Vec<(u64, u64, String)> = file
            .symbols()
            .filter(|symbol| symbol.kind() == SymbolKind::Text && symbol.size() > 0)
            .filter_map(|symbol| {
                let name = symbol.name().ok()?;
                let demangled = format!("{:#}", rustc_demangle::demangle(name));
                Some((symbol.address(), symbol.size(), demangled))
            })
            .collect();
        symbols.sort();
        let code = file
            .sections()
            .filter(|section| section.kind() == SectionKind::Text)
            .map(|section| (section.address(), section.size()))
            .collect();
        Symbols { symbols, code }
    }

    /// The function whose code holds `address`: [`NOT_LINKED`] outside every code section,
    /// `?` where no symbol covers it.
    fn at(&self, address: u64) -> &str {
        let linked = self
            .code
            .iter()
            .any(|&(start, size)| (start..start + size).contains(&address));
        if !linked {
            return NOT_LINKED;
        }
        let after = self
            .symbols
            .partition_point(|(start, _, _)| *start <= address);
        match after.checked_sub(1).map(|index| &self.symbols[index]) {
            Some((start, size, name)) if address < start + size => name,
            _ => "?",
        }
    }
}

type Reader<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// The path of `row`'s file: the compile unit's directory, the file's directory, its name.
fn row_path<'a>(
    unit: &gimli::UnitRef<'_, Reader<'a>>,
    header: &gimli::LineProgramHeader<Reader<'a>>,
    row: &gimli::LineRow,
    comp_dir: &Path,
) -> Result<Option<PathBuf>, gimli::Error> {
    let Some(file) = row.file(header) else {
        return Ok(None);
    };
    let mut path = comp_dir.to_path_buf();
    if file.directory_index() != 0
        && let Some(directory) = file.directory(header)
    {
        path.push(unit.attr_string(directory)?.to_string_lossy().as_ref());
    }
    path.push(
        unit.attr_string(file.path_name())?
            .to_string_lossy()
            .as_ref(),
    );
    Ok(Some(path))
}

/// Adds the coverable lines of one compile unit whose file `keep` accepts.
fn unit_lines(
    unit: gimli::UnitRef<'_, Reader<'_>>,
    keep: &dyn Fn(&str) -> bool,
    addresses: &mut BTreeMap<(String, u32), BTreeSet<u64>>,
) -> Result<(), gimli::Error> {
    let Some(program) = unit.line_program.clone() else {
        return Ok(());
    };
    let comp_dir = match unit.comp_dir {
        Some(dir) => PathBuf::from(dir.to_string_lossy().into_owned()),
        None => PathBuf::new(),
    };
    let mut rows = program.rows();
    while let Some((header, row)) = rows.next_row()? {
        let line = row.line().map_or(0, |line| line.get());
        if row.end_sequence() || line == 0 {
            continue;
        }
        let Some(path) = row_path(&unit, header, row, &comp_dir)? else {
            continue;
        };
        let path = path.to_string_lossy().into_owned();
        if keep(&path) {
            let line = u32::try_from(line).unwrap_or(u32::MAX);
            addresses
                .entry((path, line))
                .or_default()
                .insert(row.address());
        }
    }
    Ok(())
}

/// Every coverable line of the binary at `path` whose file `keep` accepts.
pub fn coverable_lines(path: &Path, keep: &dyn Fn(&str) -> bool) -> Result<Coverable, String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = object::File::parse(&*data).map_err(|e| format!("{}: {e}", path.display()))?;
    let endian = match file.is_little_endian() {
        true => gimli::RunTimeEndian::Little,
        false => gimli::RunTimeEndian::Big,
    };
    let load = |id: gimli::SectionId| -> Result<Cow<'_, [u8]>, gimli::Error> {
        let section = file.section_by_name(id.name());
        Ok(section
            .and_then(|section| section.uncompressed_data().ok())
            .unwrap_or(Cow::Borrowed(&[])))
    };
    let sections = gimli::DwarfSections::load(load).map_err(|e| e.to_string())?;
    let dwarf = sections.borrow(|section| gimli::EndianSlice::new(section, endian));
    let mut addresses = BTreeMap::new();
    let mut units = dwarf.units();
    let broken = |e: gimli::Error| format!("{}: line tables: {e}", path.display());
    while let Some(header) = units.next().map_err(broken)? {
        let unit = dwarf.unit(header).map_err(broken)?;
        unit_lines(unit.unit_ref(&dwarf), keep, &mut addresses).map_err(broken)?;
    }
    if addresses.is_empty() {
        return Err(format!(
            "{}: no line of the cores in its line tables (built without debug info?)",
            path.display()
        ));
    }
    let symbols = Symbols::of(&file);
    let coverable = addresses
        .into_iter()
        .map(|(key, rows)| {
            let functions = rows.iter().map(|&a| symbols.at(a).to_string()).collect();
            (key, functions)
        })
        .collect();
    Ok(coverable)
}
