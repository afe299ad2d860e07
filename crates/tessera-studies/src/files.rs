//! Files a study writes. Outputs never overwrite inputs: every command that
//! writes files checks, before it reads or runs anything, that no output names
//! one of its inputs (a trace, a cluster file, an accounting store) or another
//! output ([`check`]). HTML pages are written by [`write_report`].

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Where `p` leads: the file itself if it exists (links resolved), else its
/// directory resolved and the name joined (a file the run would create).
fn target(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = p.canonicalize() {
        return Some(c);
    }
    let name = p.file_name()?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.canonicalize().ok()?,
        _ => std::env::current_dir().ok()?,
    };
    Some(dir.join(name))
}

/// Refuse `outputs` (flag, path) that name an input (flag, path) or each other.
pub fn check(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<()> {
    let ins: Vec<(&str, &Path, PathBuf)> = inputs.iter().filter_map(|&(f, p)| p.canonicalize().ok().map(|c| (f, p, c))).collect();
    let mut seen: Vec<(&str, PathBuf)> = Vec::new();
    for &(flag, p) in outputs {
        let Some(t) = target(p) else { continue };
        if let Some((what, ip, _)) = ins.iter().find(|(_, _, c)| *c == t) {
            bail!("{flag} {}: that is this run's {what} {}, which it would overwrite; give another path", p.display(), ip.display());
        }
        if let Some((other, _)) = seen.iter().find(|(_, c)| *c == t) {
            bail!("{flag} {}: {other} writes the same file; give each output its own path", p.display());
        }
        seen.push((flag, t));
    }
    Ok(())
}

/// Write an HTML page, and say where (on standard error).
pub fn write_report(path: &Path, page: &tessera_report::Page) -> Result<()> {
    std::fs::write(path, page.render()).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("report: {} ({} charts; open it in a browser)", path.display(), page.charts().count());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_naming_an_input_or_another_output_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.swf");
        std::fs::write(&trace, "x").unwrap();
        let other = dir.path().join("sub").join("..").join("t.swf");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let e = check(&[("trace", &trace)], &[("--jobs-out", &other)]).unwrap_err().to_string();
        assert!(e.starts_with("--jobs-out ") && e.contains("that is this run's trace"), "{e}");
        let new = dir.path().join("new.csv");
        let e = check(&[("trace", &trace)], &[("--jobs-out", &new), ("--summary", &new)]).unwrap_err().to_string();
        assert!(e.contains("--jobs-out writes the same file"), "{e}");
        check(&[("trace", &trace)], &[("--jobs-out", &new), ("--summary", &dir.path().join("s.json"))]).unwrap();
        // an input that does not exist is not overwritten by anything
        check(&[("trace", &dir.path().join("missing"))], &[("--jobs-out", &dir.path().join("missing"))]).unwrap();
    }
}
