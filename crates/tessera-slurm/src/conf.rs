//! slurm.conf read as Slurm reads it (slurm.conf(5)): `Key=Value` pairs
//! separated by white space, keys in any case, values optionally in double
//! quotes, `#` to the end of the line a comment (`\#` a literal `#`), a
//! trailing `\` continuing a line on the next, and `Include FILE` taking
//! another file's lines in its place (a relative name is found in
//! slurm.conf's directory, as slurm.conf(5) says, whichever file includes it). Reading is pure: the caller hands in how a
//! file is loaded, so tests need no files.

use std::fmt;

/// Where a setting was written: a file and its line (the first line of a
/// continued one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
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
        let at = if self.at.line == 0 { self.at.file.clone() } else { self.at.to_string() };
        if self.field.is_empty() {
            write!(f, "{at}: {}", self.message)
        } else {
            write!(f, "{at}: `{}`: {}", self.field, self.message)
        }
    }
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
        return Err(ImportError::new(from, "Include", format!("{name} includes itself (through {})", chain.join(" → "))));
    }
    if chain.len() >= MAX_INCLUDE_DEPTH {
        return Err(ImportError::new(from, "Include", format!("includes nested deeper than {MAX_INCLUDE_DEPTH} files")));
    }
    let text = load(name).map_err(|e| ImportError::new(from, if chain.is_empty() { "" } else { "Include" }, format!("cannot read {name}: {e}")))?;
    chain.push(name.to_string());
    let mut lines = text.split('\n').enumerate();
    while let Some((i, raw)) = lines.next() {
        let at = Place { file: name.to_string(), line: i + 1 };
        let mut logical = strip_comment(raw);
        while logical.ends_with('\\') {
            logical.pop();
            match lines.next() {
                Some((_, next)) => {
                    logical.push(' ');
                    logical.push_str(&strip_comment(next));
                }
                None => return Err(ImportError::new(&at, "", "the last line ends in `\\`: expected a line to continue it")),
            }
        }
        let words = split_words(&logical).map_err(|m| ImportError::new(&at, "", m))?;
        if words.is_empty() {
            continue;
        }
        if words[0].eq_ignore_ascii_case("include") {
            if words.len() != 2 {
                return Err(ImportError::new(&at, "Include", "expected one file name after Include"));
            }
            let target = resolve(&chain[0], &words[1]);
            read_into(&target, &at, load, chain, out)?;
            continue;
        }
        let mut pairs = Vec::with_capacity(words.len());
        for w in words {
            let Some((k, v)) = w.split_once('=') else {
                return Err(ImportError::new(&at, &w, "expected Key=Value"));
            };
            if k.is_empty() {
                return Err(ImportError::new(&at, &w, "expected a key before `=`"));
            }
            pairs.push(Pair { key: k.to_string(), value: unquote(v) });
        }
        out.push(Line { at, pairs });
    }
    chain.pop();
    Ok(())
}

/// An included file's name: absolute as given, else beside slurm.conf.
fn resolve(root: &str, target: &str) -> String {
    if target.starts_with('/') {
        return target.to_string();
    }
    match root.rfind('/') {
        Some(i) => format!("{}/{target}", &root[..i]),
        None => target.to_string(),
    }
}

/// The line up to its first `#` that is not escaped (`\#` is a `#`).
fn strip_comment(line: &str) -> String {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'#') => {
                out.push('#');
                chars.next();
            }
            '#' => break,
            c => out.push(c),
        }
    }
    out.trim_end().to_string()
}

/// White-space separated words; double quotes keep white space inside a word.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in line.chars() {
        if c == '"' {
            quoted = !quoted;
            cur.push(c);
            in_word = true;
        } else if c.is_whitespace() && !quoted {
            if in_word {
                words.push(std::mem::take(&mut cur));
                in_word = false;
            }
        } else {
            cur.push(c);
            in_word = true;
        }
    }
    if quoted {
        return Err("a double quote is not closed".into());
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

fn unquote(v: &str) -> String {
    v.replace('"', "")
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
            ("/etc/slurm/slurm.conf", "ClusterName=alpha # the name\nNodeName=n[1-2] \\\n  CPUs=4 # four\nInclude nodes.conf\nPartitionName=\"p 1\" Nodes=ALL\nFeature=a\\#b\n"),
            ("/etc/slurm/nodes.conf", "\n# nothing\nNodeName=g1 Gres=gpu:2\n"),
        ]);
        let lines = read("/etc/slurm/slurm.conf", &load).unwrap();
        let seen: Vec<(String, usize, Vec<(String, String)>)> = lines.iter().map(|l| (l.at.file.clone(), l.at.line, l.pairs.iter().map(|p| (p.key.clone(), p.value.clone())).collect())).collect();
        let s = |x: &str| x.to_string();
        assert_eq!(
            seen,
            vec![
                (s("/etc/slurm/slurm.conf"), 1, vec![(s("ClusterName"), s("alpha"))]),
                (s("/etc/slurm/slurm.conf"), 2, vec![(s("NodeName"), s("n[1-2]")), (s("CPUs"), s("4"))]),
                (s("/etc/slurm/nodes.conf"), 3, vec![(s("NodeName"), s("g1")), (s("Gres"), s("gpu:2"))]),
                (s("/etc/slurm/slurm.conf"), 5, vec![(s("PartitionName"), s("p 1")), (s("Nodes"), s("ALL"))]),
                (s("/etc/slurm/slurm.conf"), 6, vec![(s("Feature"), s("a#b"))]),
            ]
        );
    }

    #[test]
    fn bad_lines_name_their_file_line_and_field() {
        let load = files(&[("a.conf", "ClusterName=x\nNodeName=n1 CPUs\n"), ("b.conf", "Include b.conf\n"), ("c.conf", "Include missing.conf\n"), ("d.conf", "A=\"x\n"), ("e.conf", "A=1 \\")]);
        assert_eq!(read("a.conf", &load).unwrap_err().to_string(), "a.conf:2: `CPUs`: expected Key=Value");
        assert_eq!(read("b.conf", &load).unwrap_err().to_string(), "b.conf:1: `Include`: b.conf includes itself (through b.conf)");
        assert_eq!(read("c.conf", &load).unwrap_err().to_string(), "c.conf:1: `Include`: cannot read missing.conf: no such file");
        assert_eq!(read("d.conf", &load).unwrap_err().to_string(), "d.conf:1: a double quote is not closed");
        assert!(read("e.conf", &load).unwrap_err().to_string().starts_with("e.conf:1: the last line ends in"));
        assert_eq!(read("none.conf", &load).unwrap_err().to_string(), "none.conf: cannot read none.conf: no such file");
    }
}
