//! slurm.conf read as Slurm 22.05 reads it (slurm.conf(5), and its parser
//! where the page is silent): `Key=Value` pairs separated by white space
//! (white space around `=` allowed), keys in any case, a value in double
//! quotes where it holds white space; `#` to the end of a physical line a
//! comment unless escaped (`\#`); a line ending in `\` joined to the next
//! with nothing between; then `\x` read as `x`. `Include FILE` at the start
//! of a line reads another file in its place: `%c` in its name is the
//! ClusterName set before, lowercased, and a relative name is found in the
//! directory of the file that includes it (Slurm's code; the page says
//! slurm.conf's, which is the same for includes of slurm.conf itself).
//! Reading is pure: the caller hands in how a file is loaded, so tests need
//! no files.

use std::fmt;

/// Where a setting was written: a file and its line (the first line of a
/// continued one).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    pub file: String,
    pub line: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", tessera_core::quote::clip(&self.file, 256), self.line)
    }
}

/// One `Key=Value` of a line, the key as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    pub key: String,
    pub value: String,
}

/// A logical line: its pairs in order (a line of settings holds one or more).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub at: Place,
    pub pairs: Vec<Pair>,
}

impl Line {
    /// The first key, lowercased: what the line is (`nodename`,
    /// `partitionname`, or a global setting).
    pub fn kind(&self) -> String {
        self.pairs.first().map(|p| p.key.to_ascii_lowercase()).unwrap_or_default()
    }
}

/// A file, a line (0: the file itself) and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ImportError {
    pub at: Place,
    /// The setting at fault (empty: the line or the file).
    pub field: String,
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = tessera_core::quote::clip(&self.at.file, 256);
        let at = if self.at.line == 0 { file.to_string() } else { format!("{file}:{}", self.at.line) };
        if self.field.is_empty() {
            write!(f, "{at}: {}", self.message)
        } else {
            write!(f, "{at}: {}: {}", q(&self.field), self.message)
        }
    }
}

/// A value from the input as an error quotes it: in backquotes, at most
/// [`tessera_core::quote::LIMIT`] characters, control characters escaped.
pub(crate) fn q(v: &str) -> String {
    tessera_core::quote::bounded(v)
}

impl ImportError {
    pub fn new(at: &Place, field: &str, message: impl Into<String>) -> ImportError {
        ImportError { at: at.clone(), field: field.to_string(), message: message.into() }
    }
}

/// Deepest chain of includes (a file that includes itself is an error, and
/// so is a chain deeper than this).
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// Read `name`'s lines, and those of the files it includes, in order.
/// `load(path)` gives a file's text or says why it cannot.
pub fn read(name: &str, load: &dyn Fn(&str) -> Result<String, String>) -> Result<Vec<Line>, ImportError> {
    let mut out = Vec::new();
    let mut chain = Vec::new();
    read_into(name, &Place { file: name.to_string(), line: 0 }, load, &mut chain, &mut out)?;
    Ok(out)
}

fn read_into(name: &str, from: &Place, load: &dyn Fn(&str) -> Result<String, String>, chain: &mut Vec<String>, out: &mut Vec<Line>) -> Result<(), ImportError> {
    if chain.iter().any(|c| c == name) {
        return Err(ImportError::new(from, "Include", format!("{} includes itself (through {})", q(name), tessera_core::quote::clip(&chain.join(" → "), 512))));
    }
    if chain.len() >= MAX_INCLUDE_DEPTH {
        return Err(ImportError::new(from, "Include", format!("includes nested deeper than {MAX_INCLUDE_DEPTH} files")));
    }
    let text = load(name).map_err(|e| ImportError::new(from, if chain.is_empty() { "" } else { "Include" }, format!("cannot read {}: {}", q(name), tessera_core::quote::clip(&e, 256))))?;
    chain.push(name.to_string());
    let mut lines = text.split('\n').enumerate();
    while let Some((i, raw)) = lines.next() {
        let at = Place { file: name.to_string(), line: i + 1 };
        let (mut logical, mut more) = strip_comment(raw);
        while more {
            match lines.next() {
                Some((_, next)) => {
                    let (rest, again) = strip_comment(next);
                    logical.push_str(&rest);
                    more = again;
                }
                None => return Err(ImportError::new(&at, "", "the last line ends in `\\`: expected a line to continue it")),
            }
        }
        let logical = unescape(&logical);
        if is_include(&logical) {
            let words: Vec<&str> = logical.split_whitespace().collect();
            if words.len() != 2 {
                return Err(ImportError::new(&at, "Include", "expected one file name after Include"));
            }
            let mut target = words[1].to_string();
            if target.contains("%c") {
                let Some(cluster) = cluster_name(out) else {
                    return Err(ImportError::new(&at, "Include", "`%c` in the file name needs ClusterName set before this line"));
                };
                target = target.replace("%c", &cluster.to_ascii_lowercase());
            }
            let target = resolve(name, &target);
            read_into(&target, &at, load, chain, out)?;
            continue;
        }
        let pairs = split_pairs(&logical).map_err(|(w, m)| ImportError::new(&at, &w, m))?;
        if !pairs.is_empty() {
            out.push(Line { at, pairs });
        }
    }
    chain.pop();
    Ok(())
}

/// An included file's name: absolute as given, else beside the including file.
fn resolve(including: &str, target: &str) -> String {
    if target.starts_with('/') {
        return target.to_string();
    }
    match including.rfind('/') {
        Some(i) => format!("{}/{target}", &including[..i]),
        None => target.to_string(),
    }
}

/// The last ClusterName read so far.
fn cluster_name(lines: &[Line]) -> Option<String> {
    lines.iter().rev().flat_map(|l| l.pairs.iter().rev()).find(|p| p.key.eq_ignore_ascii_case("clustername")).map(|p| p.value.clone())
}

/// `Include` at the start of the line, then white space.
fn is_include(line: &str) -> bool {
    line.len() > 7 && line.as_bytes()[..7].eq_ignore_ascii_case(b"include") && line[7..].starts_with(|c: char| c.is_whitespace())
}

/// A physical line up to its first `#` not escaped by an odd number of
/// backslashes, and whether it then ends in an odd number of backslashes (the
/// last one dropped: the next line goes on from there).
fn strip_comment(line: &str) -> (String, bool) {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let b = line.as_bytes();
    let mut end = b.len();
    for (i, &c) in b.iter().enumerate() {
        if c == b'#' && b[..i].iter().rev().take_while(|&&x| x == b'\\').count() % 2 == 0 {
            end = i;
            break;
        }
    }
    let kept = line[..end].trim_end();
    let slashes = kept.bytes().rev().take_while(|&x| x == b'\\').count();
    if slashes % 2 == 1 {
        (kept[..kept.len() - 1].to_string(), true)
    } else {
        (kept.to_string(), false)
    }
}

/// `\x` read as `x`.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `Key=Value` pairs: a key of letters, digits, `_` and `.`, white space
/// allowed around `=`, a value in double quotes or up to white space. On an
/// error, the text at fault and what was expected.
fn split_pairs(line: &str) -> Result<Vec<Pair>, (String, &'static str)> {
    let b = line.as_bytes();
    let mut i = 0;
    let mut pairs = Vec::new();
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_ws(i);
        if i >= b.len() {
            return Ok(pairs);
        }
        let k0 = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
            i += 1;
        }
        let word_end = line[k0..].find(char::is_whitespace).map_or(line.len(), |e| k0 + e);
        let key = &line[k0..i];
        let j = skip_ws(i);
        if key.is_empty() || j >= b.len() || b[j] != b'=' {
            return Err((line[k0..word_end].to_string(), "expected Key=Value"));
        }
        let mut v = skip_ws(j + 1);
        let value = if v < b.len() && b[v] == b'"' {
            let Some(close) = line[v + 1..].find('"') else {
                return Err((line[k0..].to_string(), "a double quote is not closed"));
            };
            let val = &line[v + 1..v + 1 + close];
            v += close + 2;
            val
        } else {
            let v0 = v;
            while v < b.len() && !b[v].is_ascii_whitespace() {
                v += 1;
            }
            &line[v0..v]
        };
        pairs.push(Pair { key: key.to_string(), value: value.to_string() });
        i = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Result<String, String> {
        move |n: &str| list.iter().find(|(f, _)| *f == n).map(|(_, t)| t.to_string()).ok_or_else(|| "no such file".to_string())
    }

    #[test]
    fn comments_continuations_quotes_and_includes_are_read_as_slurm_reads_them() {
        let load = files(&[
            ("/etc/slurm/slurm.conf", "ClusterName=Alpha # the name\nNodeName=n[1-2] \\\n  CPUs=4 # four\nInclude conf.d/%c-nodes.conf\nPartitionName = \"p 1\" Nodes=ALL\nFeature=a\\#b\n"),
            ("/etc/slurm/conf.d/alpha-nodes.conf", "\n# nothing\nNodeName=g1 Gres=gpu:2\nInclude more.conf\n"),
            ("/etc/slurm/conf.d/more.conf", "NodeName=g2 Gres=gpu:4\n"),
        ]);
        let lines = read("/etc/slurm/slurm.conf", &load).unwrap();
        let seen: Vec<(String, usize, Vec<(String, String)>)> = lines.iter().map(|l| (l.at.file.clone(), l.at.line, l.pairs.iter().map(|p| (p.key.clone(), p.value.clone())).collect())).collect();
        let s = |x: &str| x.to_string();
        assert_eq!(
            seen,
            vec![
                (s("/etc/slurm/slurm.conf"), 1, vec![(s("ClusterName"), s("Alpha"))]),
                (s("/etc/slurm/slurm.conf"), 2, vec![(s("NodeName"), s("n[1-2]")), (s("CPUs"), s("4"))]),
                (s("/etc/slurm/conf.d/alpha-nodes.conf"), 3, vec![(s("NodeName"), s("g1")), (s("Gres"), s("gpu:2"))]),
                (s("/etc/slurm/conf.d/more.conf"), 1, vec![(s("NodeName"), s("g2")), (s("Gres"), s("gpu:4"))]),
                (s("/etc/slurm/slurm.conf"), 5, vec![(s("PartitionName"), s("p 1")), (s("Nodes"), s("ALL"))]),
                (s("/etc/slurm/slurm.conf"), 6, vec![(s("Feature"), s("a#b"))]),
            ]
        );
    }

    #[test]
    fn bad_lines_name_their_file_line_and_field() {
        let load = files(&[("a.conf", "ClusterName=x\nNodeName=n1 CPUs\n"), ("b.conf", "Include b.conf\n"), ("c.conf", "Include missing.conf\n"), ("d.conf", "A=\"x\n"), ("e.conf", "A=1 \\"), ("f.conf", "Include x-%c.conf\n"), ("g.conf", "NodeName=a\\\nb CPUs=2\n"), ("h.conf", "Core=2\u{738}r =gpu\n")]);
        assert_eq!(read("a.conf", &load).unwrap_err().to_string(), "a.conf:2: `CPUs`: expected Key=Value");
        assert_eq!(read("b.conf", &load).unwrap_err().to_string(), "b.conf:1: `Include`: `b.conf` includes itself (through b.conf)");
        assert_eq!(read("c.conf", &load).unwrap_err().to_string(), "c.conf:1: `Include`: cannot read `missing.conf`: no such file");
        assert_eq!(read("d.conf", &load).unwrap_err().to_string(), "d.conf:1: `A=\"x`: a double quote is not closed");
        assert_eq!(read("f.conf", &load).unwrap_err().to_string(), "f.conf:1: `Include`: `%c` in the file name needs ClusterName set before this line");
        // a line whose seventh byte is inside a character is not an Include (fuzz finding)
        assert_eq!(read("h.conf", &load).unwrap_err().to_string(), "h.conf:1: `=gpu`: expected Key=Value");
        // a continuation joins with nothing between, as Slurm's parser does
        assert_eq!(read("g.conf", &load).unwrap()[0].pairs[0].value, "ab");
        assert!(read("e.conf", &load).unwrap_err().to_string().starts_with("e.conf:1: the last line ends in"));
        assert_eq!(read("none.conf", &load).unwrap_err().to_string(), "none.conf: cannot read `none.conf`: no such file");
    }
}
