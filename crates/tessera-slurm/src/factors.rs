//! The side file `tessera import slurm-conf --factors` reads: slurm.conf has
//! no benchmarks, so a site names them by feature or node name.
//!
//! ```toml
//! [benchmarks]                 # HEP-SPEC06 per core
//! skylake = 16.0               # a feature: every node that has it
//! "gpu[01-04]" = 20.0          # a NodeName as written, or one node's name
//!
//! [reference]                  # optional: what scaling factor 1 means
//! hs06_per_core = 10.0         # (default: the first node type, as in any cluster file)
//! ```

use crate::conf::{ImportError, Place};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Benchmarks by feature, NodeName or node name, with the line of each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Factors {
    pub file: String,
    pub benchmarks: BTreeMap<String, (f64, usize)>,
    pub reference: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFactors {
    #[serde(default)]
    benchmarks: BTreeMap<String, toml::Spanned<f64>>,
    reference: Option<toml::Spanned<RawReference>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReference {
    hs06_per_core: f64,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// The largest benchmark a cluster file takes.
const MAX_BENCHMARK: f64 = 1e12;

impl Factors {
    /// Read a factors file's text; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<Factors, ImportError> {
        let at = |line: usize| Place { file: file.to_string(), line };
        let raw: RawFactors = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| line_of(text, s.start));
            ImportError::new(&at(line), "", e.message().trim().to_string())
        })?;
        let check = |v: f64, line: usize, key: &str| {
            if v.is_finite() && v > 0.0 && v <= MAX_BENCHMARK {
                Ok(())
            } else {
                Err(ImportError::new(&at(line), key, format!("expected HEP-SPEC06 per core, > 0 and at most 1e12, found {v}")))
            }
        };
        let mut benchmarks = BTreeMap::new();
        for (k, v) in raw.benchmarks {
            let line = line_of(text, v.span().start);
            check(*v.get_ref(), line, &format!("benchmarks.{k}"))?;
            benchmarks.insert(k, (*v.get_ref(), line));
        }
        let reference = match raw.reference {
            None => None,
            Some(r) => {
                let line = line_of(text, r.span().start);
                check(r.get_ref().hs06_per_core, line, "reference.hs06_per_core")?;
                Some(r.get_ref().hs06_per_core)
            }
        };
        Ok(Factors { file: file.to_string(), benchmarks, reference })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_factors_file_is_read_and_its_bad_values_named() {
        let f = Factors::from_toml("[benchmarks]\nskylake = 16.0\n\"gpu[01-04]\" = 20\n\n[reference]\nhs06_per_core = 10.0\n", "f.toml").unwrap();
        assert_eq!(f.benchmarks["skylake"], (16.0, 2));
        assert_eq!(f.benchmarks["gpu[01-04]"], (20.0, 3));
        assert_eq!(f.reference, Some(10.0));
        assert_eq!(Factors::from_toml("[benchmarks]\na = 1\nb = -2.0\n", "f.toml").unwrap_err().to_string(), "f.toml:3: `benchmarks.b`: expected HEP-SPEC06 per core, > 0 and at most 1e12, found -2");
        let e = Factors::from_toml("[benchmarks]\na = \"x\"\n", "f.toml").unwrap_err().to_string();
        assert!(e.starts_with("f.toml:2: "), "{e}");
        let e = Factors::from_toml("[bench]\na = 1\n", "f.toml").unwrap_err().to_string();
        assert!(e.starts_with("f.toml:1: unknown field `bench`"), "{e}");
    }
}
