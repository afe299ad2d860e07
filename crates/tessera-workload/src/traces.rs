//! Where the shared real traces live, for tests, benchmarks and examples.
//!
//! The project reads the Parallel Workloads Archive traces from outside the
//! repository: `$TESSERA_TRACES` if set, else `../shared/traces` next to the
//! checkout. They are never copied into the repository. When they are absent,
//! tests that need them say so and pass, unless `TESSERA_REQUIRE_TRACES=1` (set by
//! `.ci/run`), which turns absence into a failure.

use std::path::{Path, PathBuf};

/// The directory holding the shared `.swf.gz` traces, if present.
pub fn shared_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TESSERA_TRACES") {
        let dir = PathBuf::from(dir);
        return dir.is_dir().then_some(dir);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    root.is_dir().then(|| root.canonicalize().unwrap_or(root))
}

/// The shared traces directory, or `None` after printing why the caller is
/// skipped. Panics when `TESSERA_REQUIRE_TRACES=1` and the traces are missing.
pub fn shared_dir_or_skip(what: &str) -> Option<PathBuf> {
    let dir = shared_dir();
    if dir.is_none() {
        if std::env::var("TESSERA_REQUIRE_TRACES").is_ok_and(|v| v == "1") {
            panic!("{what}: shared traces not found (set TESSERA_TRACES or check out ../shared/traces) and TESSERA_REQUIRE_TRACES=1");
        }
        eprintln!("SKIPPED {what}: shared traces not found (set TESSERA_TRACES or provide ../shared/traces)");
    }
    dir
}

/// A named shared trace (file name inside the shared directory), if present.
pub fn shared_trace(file: &str) -> Option<PathBuf> {
    shared_dir().map(|d| d.join(file)).filter(|p| p.is_file())
}

/// Every `.swf` / `.swf.gz` file in the shared directory, sorted by name.
pub fn all_shared(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        n.ends_with(".swf") || n.ends_with(".swf.gz")
    });
    v.sort();
    v
}
