//! Where the shared real traces live, for tests, benchmarks and examples.
//!
//! The project reads the Parallel Workloads Archive traces from outside the
//! repository: `$TESSERA_TRACES` if set, else `../shared/traces` next to the
//! checkout. They are never copied into the repository. When they are absent,
//! tests that need them say so and pass, unless `TESSERA_REQUIRE_TRACES=1` (set by
//! `.ci/run`), which turns absence into a failure.
//!
//! Every command that takes `--trace` finds its file through [`resolve`]: a
//! path that exists is used as given; a bare file name (no `/`) that is not in
//! the current directory is looked up in that same directory, so that
//! `--trace SDSC-SP2-1998-4.2-cln.swf.gz` works from anywhere once
//! `TESSERA_TRACES` names the directory the traces were downloaded to.

use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The directory holding the shared `.swf.gz` traces, if present.
pub fn shared_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TESSERA_TRACES") {
        let dir = PathBuf::from(dir);
        return dir.is_dir().then_some(dir);
    }
    beside_source()
}

/// `../shared/traces` next to the checkout this binary was built from, if it
/// is there (a development workspace).
fn beside_source() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    root.is_dir().then(|| root.canonicalize().unwrap_or(root))
}

/// Where a bare trace name was looked up, for [`TraceNotFound`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookedIn {
    /// Not looked up: the name holds a `/`, so it is a path.
    Path,
    /// `$TESSERA_TRACES`, a directory.
    Env(PathBuf),
    /// `$TESSERA_TRACES` is set to something that is not a directory.
    EnvNotDir(OsString),
    /// `$TESSERA_TRACES` is not set; the shared traces beside the source tree.
    BesideSource(PathBuf),
    /// `$TESSERA_TRACES` is not set, and there is nowhere else to look.
    Unset,
}

/// A `--trace` that names no file: what was given, the paths tried, and where
/// a bare name was looked up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct TraceNotFound {
    pub given: PathBuf,
    pub tried: Vec<PathBuf>,
    pub looked_in: LookedIn,
}

impl fmt::Display for TraceNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tried: Vec<String> = self.tried.iter().map(|p| p.display().to_string()).collect();
        write!(f, "trace {}: no such file (tried {})", self.given.display(), tried.join(" and "))?;
        match &self.looked_in {
            LookedIn::Path => write!(f, "; only a bare file name, without a `/`, is looked up in $TESSERA_TRACES"),
            LookedIn::Env(dir) => write!(f, "; TESSERA_TRACES is {}", dir.display()),
            LookedIn::EnvNotDir(v) => write!(f, "; TESSERA_TRACES is {}, which is not a directory", Path::new(v).display()),
            LookedIn::BesideSource(_) => {
                write!(f, "; TESSERA_TRACES is not set (the directory a bare trace name is looked up in), so the shared traces beside the source tree were tried")
            }
            LookedIn::Unset => write!(f, "; TESSERA_TRACES is not set: set it to the directory holding the traces (the README says where to download them)"),
        }
    }
}

/// The file a command's `--trace` names: `given` if it exists (a file, a
/// device such as `/dev/stdin`, a pipe); else, when `given` is a bare file name
/// (no `/`), that name in `$TESSERA_TRACES` (or, when it is not set, in the
/// shared traces beside the source tree, as the tests use); else an error
/// naming every path tried and `TESSERA_TRACES`.
pub fn resolve(given: &Path) -> Result<PathBuf, TraceNotFound> {
    resolve_at(Path::new(""), given)
}

/// [`resolve`] for a name written in a file: a relative `given` is first taken
/// relative to `base` (the directory of the sweep file that names it).
pub fn resolve_at(base: &Path, given: &Path) -> Result<PathBuf, TraceNotFound> {
    resolve_with(base, given, std::env::var_os("TESSERA_TRACES"), beside_source())
}

fn resolve_with(base: &Path, given: &Path, env: Option<OsString>, beside: Option<PathBuf>) -> Result<PathBuf, TraceNotFound> {
    let first = if given.is_absolute() { given.to_path_buf() } else { base.join(given) };
    // an error other than "not found" (permission) is the opening's to report
    match std::fs::metadata(&first) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        _ => return Ok(first),
    }
    let name = given.as_os_str();
    let bare = !name.is_empty() && !name.as_bytes().contains(&b'/') && name != "." && name != "..";
    let mut tried = vec![first];
    let looked_in = if !bare {
        LookedIn::Path
    } else {
        let dir = match env {
            Some(v) if Path::new(&v).is_dir() => Some((PathBuf::from(v), true)),
            Some(v) => return Err(TraceNotFound { given: given.to_path_buf(), tried, looked_in: LookedIn::EnvNotDir(v) }),
            None => beside.map(|d| (d, false)),
        };
        match dir {
            None => LookedIn::Unset,
            Some((d, from_env)) => {
                let p = d.join(given);
                if p.exists() {
                    return Ok(p);
                }
                tried.push(p);
                if from_env {
                    LookedIn::Env(d)
                } else {
                    LookedIn::BesideSource(d)
                }
            }
        }
    };
    Err(TraceNotFound { given: given.to_path_buf(), tried, looked_in })
}

/// Whether the shared traces must be there (`TESSERA_REQUIRE_TRACES=1`, set by
/// `.ci/run`): a test that would skip without them fails instead.
fn traces_required() -> bool {
    std::env::var("TESSERA_REQUIRE_TRACES").is_ok_and(|v| v == "1")
}

/// The shared traces directory, or `None` after printing why the caller is
/// skipped. Panics when `TESSERA_REQUIRE_TRACES=1` and the traces are missing.
pub fn shared_dir_or_skip(what: &str) -> Option<PathBuf> {
    let dir = shared_dir();
    if dir.is_none() {
        if traces_required() {
            panic!("{what}: shared traces not found (set TESSERA_TRACES or check out ../shared/traces) and TESSERA_REQUIRE_TRACES=1");
        }
        eprintln!("SKIPPED {what}: shared traces not found (set TESSERA_TRACES or provide ../shared/traces)");
    }
    dir
}

/// A named shared trace (file name inside the shared directory), for tests and
/// benchmarks, which skip without it. Panics when `TESSERA_REQUIRE_TRACES=1` and
/// the trace is missing, as [`shared_dir_or_skip`] does, so that a test that
/// returns early without it cannot pass unnoticed in CI. Commands use
/// [`find_shared`], which never panics.
pub fn shared_trace(file: &str) -> Option<PathBuf> {
    let found = find_shared(file);
    if found.is_none() && traces_required() {
        panic!("shared trace {file} not found (set TESSERA_TRACES or check out ../shared/traces) and TESSERA_REQUIRE_TRACES=1");
    }
    found
}

/// A named shared trace (file name inside the shared directory), if present.
pub fn find_shared(file: &str) -> Option<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_is_looked_up_in_tessera_traces() {
        let dir = tempfile::tempdir().unwrap();
        let (here, traces) = (dir.path().join("here"), dir.path().join("traces"));
        std::fs::create_dir_all(&here).unwrap();
        std::fs::create_dir_all(&traces).unwrap();
        std::fs::write(traces.join("t.swf"), "").unwrap();
        std::fs::write(here.join("local.swf"), "").unwrap();
        let env = Some(traces.clone().into_os_string());
        let r = |given: &str, env: Option<OsString>, beside: Option<PathBuf>| resolve_with(&here, Path::new(given), env, beside);
        assert_eq!(r("t.swf", env.clone(), None), Ok(traces.join("t.swf")));
        // a file in the current directory wins
        assert_eq!(r("local.swf", env.clone(), None), Ok(here.join("local.swf")));
        std::fs::write(here.join("t.swf"), "").unwrap();
        assert_eq!(r("t.swf", env.clone(), None), Ok(here.join("t.swf")));
        // what exists is used as given, devices too
        assert_eq!(r("/dev/null", None, None), Ok(PathBuf::from("/dev/null")));
        // without TESSERA_TRACES, the shared traces beside the source tree
        assert_eq!(r("t.swf", None, Some(traces.clone())).unwrap(), here.join("t.swf"));
        std::fs::remove_file(here.join("t.swf")).unwrap();
        assert_eq!(r("t.swf", None, Some(traces.clone())), Ok(traces.join("t.swf")));
    }

    #[test]
    fn a_missing_trace_names_the_paths_tried_and_tessera_traces() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        let traces = base.join("traces");
        std::fs::create_dir_all(&traces).unwrap();
        let r = |given: &str, env: Option<&Path>| resolve_with(base, Path::new(given), env.map(|p| p.as_os_str().to_owned()), None).unwrap_err();
        let e = r("x.swf.gz", Some(&traces));
        assert_eq!(e.tried, [base.join("x.swf.gz"), traces.join("x.swf.gz")]);
        assert_eq!(e.to_string(), format!("trace x.swf.gz: no such file (tried {0}/x.swf.gz and {0}/traces/x.swf.gz); TESSERA_TRACES is {0}/traces", base.display()));
        let e = r("x.swf.gz", None).to_string();
        assert!(e.contains(&format!("(tried {}/x.swf.gz); TESSERA_TRACES is not set: set it to the directory holding the traces", base.display())), "{e}");
        let e = r("x.swf.gz", Some(&base.join("nowhere"))).to_string();
        assert!(e.ends_with(&format!("; TESSERA_TRACES is {}/nowhere, which is not a directory", base.display())), "{e}");
        // a name with a slash is a path, not looked up
        let e = r("sub/x.swf", Some(&traces));
        assert_eq!((e.tried.len(), &e.looked_in), (1, &LookedIn::Path));
        assert!(e.to_string().ends_with("only a bare file name, without a `/`, is looked up in $TESSERA_TRACES"), "{e}");
    }
}
