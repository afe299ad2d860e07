//! Slurm-style hostlists: `node[001-128]`, `gpu[1-4,7],login1`, `rack[1-2]-n[01-04]`.
//!
//! A range keeps the zero padding of its lower bound (`[001-128]` gives `001`…`128`),
//! as Slurm does. Several bracket groups in one name expand as a cartesian product.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct HostlistError {
    pub hostlist: String,
    pub message: String,
}

impl fmt::Display for HostlistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid hostlist {}: {}", crate::quote::bounded(&self.hostlist), self.message)
    }
}

/// Largest number of names one hostlist may expand to (a typo guard).
pub const MAX_HOSTS: usize = 1 << 22;

/// Largest total length, in bytes, of the names one hostlist may expand to.
/// [`MAX_HOSTS`] short names fit; a long name repeated by a big range does not
/// (`x[0-891891]` followed by a few hundred bytes would take gigabytes).
pub const MAX_NAME_BYTES: usize = 1 << 26;

/// Expand a hostlist into node names, in order.
pub fn expand(list: &str) -> Result<Vec<String>, HostlistError> {
    expand_at_most(list, MAX_HOSTS)
}

/// [`expand`], refusing a list of more than `max` names (at most
/// [`MAX_HOSTS`]) before it is built.
pub fn expand_at_most(list: &str, max: usize) -> Result<Vec<String>, HostlistError> {
    let max = max.min(MAX_HOSTS);
    let err = |m: &str| HostlistError { hostlist: list.to_string(), message: m.to_string() };
    let too_many = || err(&format!("expands to more than {max} names or {MAX_NAME_BYTES} bytes of names"));
    let mut out = Vec::new();
    let mut out_bytes = 0usize;
    for item in split_top_level(list).map_err(|m| err(&m))? {
        let item = item.trim();
        if item.is_empty() {
            return Err(err("empty host name"));
        }
        let mut names = vec![String::new()];
        // Total length of `names`, kept so a product is refused before it is built.
        let mut bytes = 0usize;
        let mut rest = item;
        while !rest.is_empty() {
            if let Some(open) = rest.find('[') {
                let close = rest[open..].find(']').map(|c| c + open).ok_or_else(|| err("`[` without `]`"))?;
                let prefix = &rest[..open];
                if prefix.contains(']') {
                    return Err(err("`]` without `[`"));
                }
                let values = expand_ranges(&rest[open + 1..close], max).map_err(|m| err(&m))?;
                let count = names.len().saturating_mul(values.len());
                let value_bytes: usize = values.iter().map(String::len).sum();
                let new_bytes = bytes
                    .saturating_mul(values.len())
                    .saturating_add(count.saturating_mul(prefix.len()))
                    .saturating_add(value_bytes.saturating_mul(names.len()));
                if count > max || out_bytes.saturating_add(new_bytes) > MAX_NAME_BYTES {
                    return Err(too_many());
                }
                bytes = new_bytes;
                names = names
                    .iter()
                    .flat_map(|n| values.iter().map(move |v| format!("{n}{prefix}{v}")))
                    .collect();
                rest = &rest[close + 1..];
            } else {
                if rest.contains(']') {
                    return Err(err("`]` without `[`"));
                }
                bytes = bytes.saturating_add(names.len().saturating_mul(rest.len()));
                if out_bytes.saturating_add(bytes) > MAX_NAME_BYTES {
                    return Err(too_many());
                }
                for n in &mut names {
                    n.push_str(rest);
                }
                rest = "";
            }
        }
        out.extend(names);
        out_bytes += bytes;
        if out.len() > max {
            return Err(too_many());
        }
    }
    Ok(out)
}

fn split_top_level(list: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' if depth == 0 => return Err("`]` without `[`".into()),
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth > 1 {
            return Err("nested brackets".into());
        }
    }
    if depth != 0 {
        return Err("`[` without `]`".into());
    }
    parts.push(&list[start..]);
    Ok(parts)
}

fn expand_ranges(inner: &str, max: usize) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for part in inner.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo.trim(), hi.trim()),
            None => (part, part),
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(lo) || !digits(hi) {
            return Err(format!("`{part}` is not a number or a range like 01-16"));
        }
        let (a, b): (u64, u64) = (lo.parse().map_err(|_| "number too large")?, hi.parse().map_err(|_| "number too large")?);
        if a > b {
            return Err(format!("range `{part}` goes backwards"));
        }
        if b - a >= max as u64 {
            return Err(format!("range `{part}` is larger than {max}"));
        }
        if out.len() as u64 + (b - a) >= max as u64 {
            return Err(format!("the ranges in `[{}]` give more than {max} values", crate::quote::clip(inner, 64)));
        }
        let width = lo.len();
        out.extend((a..=b).map(|v| format!("{v:0width$}")));
    }
    Ok(out)
}

/// What [`check_name`] expects.
pub const NAME_EXPECTED: &str = "expected a host name without `,`, `[`, `]`, whitespace or control characters (a hostlist could not hold it)";

/// Whether `name` is a host name a hostlist holds: not empty, and no `,` (which
/// separates names), `[` or `]` (which enclose ranges), whitespace (which
/// [`expand`] trims, and which splits command lines and tables) or control
/// character. Names that pass come back from [`expand`]`(`[`compress`]`(names))`
/// as they went in. The cluster file's reader asks it of every node name and
/// node type name, so that whatever hands nodes on as a hostlist (`tessera up`
/// to its agents, job records, `tessera nodes`) can.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().any(|c| matches!(c, ',' | '[' | ']') || c.is_whitespace() || c.is_control()) {
        return Err(format!("{NAME_EXPECTED}, found {}", crate::quote::bounded(name)));
    }
    Ok(())
}

/// Compress node names into a hostlist (the inverse of [`expand`] for names that
/// end in a number): `n01,n02,n03,n05` gives `n[01-03,05]`. Order is kept.
pub fn compress<S: AsRef<str>>(names: &[S]) -> String {
    // group consecutive names with the same prefix and digit width
    let mut groups: Vec<(String, usize, Vec<u64>)> = Vec::new();
    let mut plain: Vec<(usize, String)> = Vec::new();
    let mut order: Vec<(bool, usize)> = Vec::new();
    for name in names {
        let name = name.as_ref();
        let digits = name.bytes().rev().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 18 {
            plain.push((order.len(), name.to_string()));
            order.push((false, plain.len() - 1));
            continue;
        }
        let (prefix, num) = name.split_at(name.len() - digits);
        let value: u64 = num.parse().unwrap_or(0);
        match groups.last_mut() {
            Some((p, w, vals)) if p == prefix && *w == digits && matches!(order.last(), Some((true, _))) => vals.push(value),
            _ => {
                groups.push((prefix.to_string(), digits, vec![value]));
                order.push((true, groups.len() - 1));
            }
        }
    }
    let mut out = Vec::new();
    for (is_group, i) in order {
        if !is_group {
            out.push(plain[i].1.clone());
            continue;
        }
        let (prefix, width, vals) = &groups[i];
        if vals.len() == 1 {
            out.push(format!("{prefix}{:0width$}", vals[0], width = *width));
            continue;
        }
        let mut ranges = Vec::new();
        let mut j = 0;
        while j < vals.len() {
            let mut k = j;
            while k + 1 < vals.len() && vals[k + 1] == vals[k] + 1 {
                k += 1;
            }
            if k == j {
                ranges.push(format!("{:0w$}", vals[j], w = *width));
            } else {
                ranges.push(format!("{:0w$}-{:0w$}", vals[j], vals[k], w = *width));
            }
            j = k + 1;
        }
        out.push(format!("{prefix}[{}]", ranges.join(",")));
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_ranges_with_padding_and_lists() {
        assert_eq!(expand("node[001-003]").unwrap(), ["node001", "node002", "node003"]);
        assert_eq!(expand("gpu[1-2,7],login1").unwrap(), ["gpu1", "gpu2", "gpu7", "login1"]);
        assert_eq!(expand("r[1-2]n[01-02]").unwrap(), ["r1n01", "r1n02", "r2n01", "r2n02"]);
        assert_eq!(expand("node[8-10]").unwrap(), ["node8", "node9", "node10"]);
        assert_eq!(expand("node[001-128]").unwrap().len(), 128);
    }

    #[test]
    fn rejects_malformed_lists_with_a_reason() {
        for (bad, why) in [
            ("node[1-", "`[` without `]`"),
            ("node[3-1]", "goes backwards"),
            ("node[a-b]", "is not a number"),
            ("node1]", "`]` without `[`"),
            ("a,,b", "empty host name"),
        ] {
            let e = expand(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn a_long_name_repeated_by_a_big_range_is_refused_before_it_is_built() {
        // Found by the hostlist fuzz target: under the name count limit, but
        // gigabytes of names.
        let long = format!("x[0-891891]{}y[1-2]y[1-2]", "z".repeat(150));
        let e = expand(&long).unwrap_err().to_string();
        assert!(e.contains("bytes of names"), "{e}");
        let suffix = format!("x[0-891891]{}", "z".repeat(100));
        assert!(expand(&suffix).unwrap_err().to_string().contains("bytes of names"));
        let many = vec!["n[0-499999]"; 200].join(",");
        assert!(expand(&many).unwrap_err().to_string().contains("more than"));
        // A big cluster's list of short names still expands.
        assert_eq!(expand("node[0000000-1048575]").unwrap().len(), 1 << 20);
    }

    #[test]
    fn a_bound_below_max_hosts_is_kept_for_each_range_and_the_whole_list() {
        assert_eq!(expand_at_most("n[1-5],m[1-5]", 10).unwrap().len(), 10);
        let e = |list: &str, max: usize| expand_at_most(list, max).unwrap_err().message;
        assert_eq!(e("n[1-11]", 10), "range `1-11` is larger than 10");
        assert_eq!(e("n[1-6,1-6]", 10), "the ranges in `[1-6,1-6]` give more than 10 values");
        assert_eq!(e("n[1-5],m[1-6]", 10), format!("expands to more than 10 names or {MAX_NAME_BYTES} bytes of names"));
        assert_eq!(e("r[1-4]n[1-3]", 10), format!("expands to more than 10 names or {MAX_NAME_BYTES} bytes of names"));
        assert!(expand_at_most("n1", 0).is_err(), "a bound of none refuses any name");
    }

    #[test]
    fn compress_inverts_expand() {
        for list in ["node[001-128]", "n[01-03,05],login", "gpu[1-2,7],login1", "a1"] {
            assert_eq!(compress(&expand(list).unwrap()), list);
        }
    }
}
