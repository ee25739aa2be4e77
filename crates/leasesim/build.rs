//! Embeds the default scenarios (`scenarios/SYSTEM/*.toml` at the workspace root) in the
//! binary, so `leasesim` works from any directory. Systems and files are listed in name order.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The `.toml` files of `dir`, in name order.
fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a readable scenarios directory")
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

fn main() {
    // Read at run time, not baked in with `env!`: two checkouts that share a target directory
    // (worktrees, `cargo mutants`' scratch copies) share this script's binary, and each must
    // embed its own scenarios.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest_dir).join("../../scenarios");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut systems: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("the scenarios directory exists")
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.is_dir())
        .collect();
    systems.sort();
    let mut code = String::from(
        "/// Default scenarios: (system folder, name, text).\n\
         pub const BUILTIN: &[(&str, &str, &str)] = &[\n",
    );
    for dir in &systems {
        println!("cargo:rerun-if-changed={}", dir.display());
        let system = dir.file_name().expect("a folder name").to_string_lossy();
        for path in toml_files(dir) {
            println!("cargo:rerun-if-changed={}", path.display());
            let name = path.file_stem().expect("a file name").to_string_lossy();
            let absolute = path.canonicalize().expect("canonical path");
            writeln!(
                code,
                "    ({system:?}, {name:?}, include_str!({:?})),",
                absolute.display()
            )
            .unwrap();
        }
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR is set")).join("builtin.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
