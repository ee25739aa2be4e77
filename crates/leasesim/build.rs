//! Embeds the default scenarios (`scenarios/*.toml` at the workspace root) in the binary, so
//! `leasesim` works from any directory. Files are listed in name order.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the scenarios directory exists")
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    let mut code = String::from(
        "/// Default scenarios: (name, text).\npub const BUILTIN: &[(&str, &str)] = &[\n",
    );
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_stem().expect("a file name").to_string_lossy();
        let absolute = path.canonicalize().expect("canonical path");
        writeln!(
            code,
            "    ({name:?}, include_str!({:?})),",
            absolute.display()
        )
        .unwrap();
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR is set")).join("builtin.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
