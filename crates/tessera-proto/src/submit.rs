//! `tessera job submit`'s options in Slurm's syntax (sbatch(1)): time limits,
//! memory sizes, job arrays, dependencies, and the `#SBATCH` lines of a script.

use serde::{Deserialize, Serialize};

/// A value an option cannot take: which option (and script line, when it came
/// from an `#SBATCH` line), the value given, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{} {}: expected {}", line.map(|l| format!("line {l}: ")).unwrap_or_default(), tessera_core::quote::clip(option, tessera_core::quote::LIMIT), tessera_core::quote::debug_bounded(value), tessera_core::quote::clip(expected, tessera_core::quote::MESSAGE_LIMIT))]
pub struct OptionError {
    pub option: String,
    pub value: String,
    pub expected: String,
    /// The script line (1-based) of an `#SBATCH` directive.
    pub line: Option<usize>,
}

fn err(option: &str, value: &str, expected: &str) -> OptionError {
    OptionError {
        option: option.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
        line: None,
    }
}

/// The longest limit accepted: 365 days, in seconds (a year of wall time is
/// beyond any partition's limit; larger values are typing errors).
pub const MAX_LIMIT_S: i64 = tessera_core::duration::MAX_DURATION_S;

/// A time limit (`-t`, `--time`) in seconds; None for no limit (`0`,
/// `UNLIMITED`, `INFINITE`), in Slurm's time syntax
/// ([`tessera_core::duration::parse_duration`]).
pub fn parse_time_limit(option: &str, s: &str) -> Result<Option<i64>, OptionError> {
    tessera_core::duration::parse_duration(s).map_err(|()| err(option, s, tessera_core::duration::DURATION_FORMS))
}

/// A memory size (`--mem`, `--mem-per-cpu`) in MiB: an integer with an optional
/// unit K, M, G or T (binary; no unit means M, as in Slurm). At least 1 MiB, at
/// most 1 PiB.
pub fn parse_mem_mib(option: &str, s: &str) -> Result<u64, OptionError> {
    let expected = "a size such as 512, 512M, 4G or 1T (K, M, G, T; no unit: M), from 1M to 1024T";
    let t = s.trim();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    if digits.is_empty() || digits.len() > 12 {
        return Err(err(option, s, expected));
    }
    let v: u64 = digits.parse().map_err(|_| err(option, s, expected))?;
    let scale: u64 = match unit.to_ascii_uppercase().trim_end_matches('B') {
        "K" => 1,
        "" | "M" => 1024,
        "G" => 1024 * 1024,
        "T" => 1024 * 1024 * 1024,
        _ => return Err(err(option, s, expected)),
    };
    let kib = v.checked_mul(scale).ok_or_else(|| err(option, s, expected))?;
    let mib = kib.div_ceil(1024);
    if mib == 0 || mib > 1024 * 1024 * 1024 {
        return Err(err(option, s, expected));
    }
    Ok(mib)
}

/// A job array (`--array`): indices and an optional limit on how many run at
/// once (`%N`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArraySpec {
    /// Every index, sorted, without repeats.
    pub indices: Vec<u32>,
    pub max_running: Option<u32>,
}

/// The most tasks one array may have (Slurm's default MaxArraySize is 1001).
pub const MAX_ARRAY_TASKS: usize = 10_001;

/// `--array`: comma-separated indices and ranges `a-b` with an optional step
/// `a-b:s`, then an optional `%N` (sbatch(1)); e.g. `0-15%4`, `1,3,5-9:2`.
pub fn parse_array(option: &str, s: &str) -> Result<ArraySpec, OptionError> {
    let expected = "indices and ranges such as 0-15, 1,3,5-9:2 or 0-99%10 (indices 0 to 4000000, at most 10001 tasks, %N at least 1)";
    let bad = || err(option, s, expected);
    let num = |x: &str| -> Result<u32, OptionError> {
        if x.is_empty() || x.len() > 7 || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let v: u32 = x.parse().map_err(|_| bad())?;
        if v > 4_000_000 {
            return Err(bad());
        }
        Ok(v)
    };
    let (list, max_running) = match s.trim().split_once('%') {
        Some((l, m)) => {
            let m = num(m)?;
            if m == 0 {
                return Err(bad());
            }
            (l, Some(m))
        }
        None => (s.trim(), None),
    };
    let mut indices = Vec::new();
    for item in list.split(',') {
        let (range, step) = match item.split_once(':') {
            Some((r, st)) => (r, num(st)?),
            None => (item, 1),
        };
        if step == 0 {
            return Err(bad());
        }
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None if item.contains(':') => return Err(bad()),
            None => {
                let v = num(range)?;
                (v, v)
            }
        };
        if a > b {
            return Err(bad());
        }
        let mut i = a;
        while i <= b {
            indices.push(i);
            if indices.len() > MAX_ARRAY_TASKS {
                return Err(bad());
            }
            i = match i.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
    }
    indices.sort_unstable();
    indices.dedup();
    Ok(ArraySpec {
        indices,
        max_running,
    })
}

/// What a job waits for (`--dependency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DependencyKind {
    /// Start after the job ended, whatever its outcome.
    AfterAny,
    /// Start after the job ended successfully (exit code 0).
    AfterOk,
    /// Start after the job failed (non-zero exit, signal, node failure, limit).
    AfterNotOk,
}

/// `--dependency=afterok:ID[:ID...][,afterany:ID...][,singleton]`: every
/// condition must hold. An ID is a job (an array job: every one of its tasks)
/// or an array task (`7_3`), as with Slurm; `singleton` waits for every
/// earlier job of the same name and user to end.
pub fn parse_dependency(option: &str, s: &str) -> Result<Dependencies, OptionError> {
    let expected = "afterok:ID[:ID...], afterany:ID..., afternotok:ID... or singleton, joined by commas (an ID is a job id, a positive integer, or an array task, 7_3)";
    let bad = || err(option, s, expected);
    let mut out = Dependencies::default();
    for cond in s.trim().split(',') {
        let mut parts = cond.split(':');
        let kind = match parts.next().map(str::to_ascii_lowercase).as_deref() {
            Some("afterok") => DependencyKind::AfterOk,
            Some("afterany") => DependencyKind::AfterAny,
            Some("afternotok") => DependencyKind::AfterNotOk,
            Some("singleton") if cond.trim().eq_ignore_ascii_case("singleton") => {
                out.singleton = true;
                continue;
            }
            _ => return Err(bad()),
        };
        let mut any = false;
        for id in parts {
            let v: crate::api::JobRef = id.parse().ok().filter(|r| !matches!(r, crate::api::JobRef::Id(0) | crate::api::JobRef::Task(0, _))).ok_or_else(bad)?;
            out.after.push((kind, v));
            any = true;
        }
        if !any {
            return Err(bad());
        }
    }
    Ok(out)
}

/// A `--dependency` value: conditions on jobs, and `singleton`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dependencies {
    pub after: Vec<(DependencyKind, crate::api::JobRef)>,
    pub singleton: bool,
}

/// The submission options understood, as `(short, long, takes a value)`.
pub const OPTIONS: &[(&str, &str, bool)] = &[
    ("-N", "--nodes", true),
    ("", "--ntasks-per-node", true),
    ("", "--exclusive", false),
    ("-w", "--nodelist", true),
    ("-x", "--exclude", true),
    ("-n", "--ntasks", true),
    ("-c", "--cpus-per-task", true),
    ("", "--mem", true),
    ("", "--mem-per-cpu", true),
    ("-G", "--gpus", true),
    ("", "--gpus-per-node", true),
    ("-t", "--time", true),
    ("-p", "--partition", true),
    ("-J", "--job-name", true),
    ("-o", "--output", true),
    ("-e", "--error", true),
    ("-C", "--constraint", true),
    ("", "--nodeset", true),
    ("", "--requeue", false),
    ("", "--no-requeue", false),
    ("-d", "--dependency", true),
    ("-a", "--array", true),
    ("-H", "--hold", false),
    ("-D", "--chdir", true),
    ("", "--moldable", true),
    ("", "--malleable", false),
    ("", "--power-profile", true),
    ("", "--parallelism", true),
    ("", "--sigma", true),
    ("", "--suspend-tstp", false),
    ("", "--no-shell", false),
    ("-A", "--account", true),
    ("-q", "--qos", true),
    ("", "--reservation", true),
    ("", "--nice", true),
];

/// The job options of `tessera job submit`, as sbatch names them; the
/// controller reads them after the script's `#SBATCH` lines.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct JobOptions {
    /// Nodes, as sbatch -N: exactly this many (a count); without -n, one
    /// task on each.
    #[arg(short = 'N', long)]
    pub nodes: Option<String>,
    /// At most this many tasks on a node; with -N and without -n, this many
    /// on each (sbatch --ntasks-per-node).
    #[arg(long)]
    pub ntasks_per_node: Option<String>,
    /// Whole nodes, shared with no other job (sbatch --exclusive).
    #[arg(long)]
    pub exclusive: bool,
    /// Nodes the job must run on (a hostlist, sbatch -w).
    #[arg(short = 'w', long)]
    pub nodelist: Option<String>,
    /// Nodes it may not run on (a hostlist, sbatch -x).
    #[arg(short = 'x', long)]
    pub exclude: Option<String>,
    /// Tasks, as sbatch -n.
    #[arg(short = 'n', long)]
    pub ntasks: Option<String>,
    /// CPUs per task, as sbatch -c.
    #[arg(short = 'c', long)]
    pub cpus_per_task: Option<String>,
    /// Memory per node (512M, 4G, ...).
    #[arg(long)]
    pub mem: Option<String>,
    /// Memory per CPU, as sbatch --mem-per-cpu (e.g. 2G).
    #[arg(long)]
    pub mem_per_cpu: Option<String>,
    /// GPUs in all (with -N).
    #[arg(short = 'G', long)]
    pub gpus: Option<String>,
    /// GPUs per node, as sbatch --gpus-per-node.
    #[arg(long)]
    pub gpus_per_node: Option<String>,
    /// Time limit (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]], UNLIMITED), in reference time.
    #[arg(short = 't', long)]
    pub time: Option<String>,
    /// Partition, as sbatch -p.
    #[arg(short = 'p', long)]
    pub partition: Option<String>,
    /// Job name, as sbatch -J.
    #[arg(short = 'J', long)]
    pub job_name: Option<String>,
    /// Output file pattern (%j %x %u %N %A %a); default tessera-%j.out.
    #[arg(short = 'o', long)]
    pub output: Option<String>,
    /// File for the job's standard error, as sbatch -e (%j: the job id).
    #[arg(short = 'e', long)]
    pub error: Option<String>,
    /// A node feature all nodes must have.
    #[arg(short = 'C', long)]
    pub constraint: Option<String>,
    /// A node-set request (ONEOF:FEATURE:a:b, ANYOF:..., FIRSTOF:...).
    #[arg(long)]
    pub nodeset: Option<String>,
    /// Requeue the job if a node it runs on fails, as sbatch --requeue.
    #[arg(long)]
    pub requeue: bool,
    /// Dependencies, as sbatch -d (afterok:ID, afterany:ID, ...).
    #[arg(short = 'd', long)]
    pub dependency: Option<String>,
    /// Job array indices, as sbatch -a (0-9, 1,3,5, 0-99%10).
    #[arg(short = 'a', long)]
    pub array: Option<String>,
    /// Submit the job held, as sbatch -H (release it with `tessera job release`).
    #[arg(short = 'H', long)]
    pub hold: bool,
    /// Power-aware policy: the job may run on MIN-MAX nodes, chosen at its start.
    #[arg(long)]
    pub moldable: Option<String>,
    /// Power-aware policy: the job may also be resized while it runs (with --moldable).
    #[arg(long)]
    pub malleable: bool,
    /// Power-aware policy: the job's application profile (LeanMD, Wave2D,
    /// Lulesh, AMR, Jacobi2D; none: run at full power).
    #[arg(long)]
    pub power_profile: Option<String>,
    /// Power-aware policy: the job's average parallelism A (Downey; default its largest size).
    #[arg(long)]
    pub parallelism: Option<String>,
    /// Power-aware policy: the variance of its parallelism σ in [0, 1] (default 0).
    #[arg(long)]
    pub sigma: Option<String>,
    /// The account the job charges (default: the user's default account).
    #[arg(short = 'A', long)]
    pub account: Option<String>,
    /// The job's quality of service (default: its association's).
    #[arg(short = 'q', long)]
    pub qos: Option<String>,
    /// Lower the job's priority by this much (a negative value, raising it,
    /// is an operator's).
    #[arg(long, allow_hyphen_values = true)]
    pub nice: Option<String>,
    /// Run inside this advance reservation (on its nodes, within its window).
    #[arg(long)]
    pub reservation: Option<String>,
}

impl JobOptions {
    /// The options given, as the submission carries them.
    pub fn options(&self) -> Vec<crate::api::OptionArg> {
        let mut out = Vec::new();
        let values = [
            ("--nodes", &self.nodes),
            ("--ntasks", &self.ntasks),
            ("--ntasks-per-node", &self.ntasks_per_node),
            ("--nodelist", &self.nodelist),
            ("--exclude", &self.exclude),
            ("--cpus-per-task", &self.cpus_per_task),
            ("--mem", &self.mem),
            ("--mem-per-cpu", &self.mem_per_cpu),
            ("--gpus", &self.gpus),
            ("--gpus-per-node", &self.gpus_per_node),
            ("--time", &self.time),
            ("--partition", &self.partition),
            ("--job-name", &self.job_name),
            ("--output", &self.output),
            ("--error", &self.error),
            ("--constraint", &self.constraint),
            ("--nodeset", &self.nodeset),
            ("--dependency", &self.dependency),
            ("--array", &self.array),
            ("--moldable", &self.moldable),
            ("--power-profile", &self.power_profile),
            ("--parallelism", &self.parallelism),
            ("--sigma", &self.sigma),
            ("--account", &self.account),
            ("--qos", &self.qos),
            ("--reservation", &self.reservation),
            ("--nice", &self.nice),
        ];
        for (name, v) in values {
            if let Some(v) = v {
                out.push(crate::api::OptionArg { option: name.into(), value: v.clone() });
            }
        }
        for (flag, given) in [("--malleable", self.malleable), ("--requeue", self.requeue), ("--hold", self.hold), ("--exclusive", self.exclusive)] {
            if given {
                out.push(crate::api::OptionArg { option: flag.into(), value: String::new() });
            }
        }
        out
    }
}

/// An option's long name and whether it takes a value, by its short or long
/// name.
pub fn option(name: &str) -> Option<(&'static str, bool)> {
    OPTIONS.iter().find(|(s, l, _)| (!s.is_empty() && *s == name) || *l == name).map(|(_, l, v)| (*l, *v))
}

/// The `#SBATCH` directives of a batch script, as (line, option, value) in
/// order: they are read from the lines after the interpreter line up to the
/// first line that is neither blank nor a comment (sbatch(1)). A line may hold
/// several options, split into words as sbatch does (whitespace; `"..."` and
/// `'...'` keep theirs; a word starting with `#` begins a comment).
/// `--opt=value`, `--opt value`, `-X value` and `-Xvalue` are split; a flag has
/// an empty value, and an option that needs one and ends the line too (the
/// submission check then names it).
/// A UTF-8 byte-order mark (EF BB BF) before the first line, as some Windows
/// editors write, does not hide the interpreter line or the directives.
pub fn directives(script: &str) -> Result<Vec<(usize, String, String)>, OptionError> {
    let mut out = Vec::new();
    for (k, raw) in without_bom(script).lines().enumerate() {
        let line = k + 1;
        let t = raw.trim();
        if line == 1 && t.starts_with("#!") {
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if !t.starts_with('#') {
            break;
        }
        let Some(rest) = t.strip_prefix("#SBATCH") else {
            continue;
        };
        let not_option = |w: &str| OptionError {
            option: "#SBATCH".into(),
            value: w.to_string(),
            expected: "an option such as -n 4, --time=1:00:00 or --mem 4G".into(),
            line: Some(line),
        };
        if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
            return Err(not_option(t));
        }
        let words = words(rest).map_err(|w| OptionError { expected: "a closing quote".into(), ..not_option(&w) })?;
        if words.is_empty() {
            return Err(not_option(""));
        }
        let mut words = words.into_iter();
        while let Some(w) = words.next() {
            if !w.starts_with('-') || w == "-" || w == "--" {
                return Err(not_option(&w));
            }
            let (opt, val) = match w.split_once('=') {
                Some((o, v)) if o.starts_with("--") => (o.to_string(), Some(v.to_string())),
                // `-Xvalue`: the option is the first two characters (not bytes: `-Ӝ…` is no option)
                _ if !w.starts_with("--") && w.is_char_boundary(2) && w.len() > 2 && option(&w[..2]).is_some_and(|(_, takes)| takes) => (w[..2].to_string(), Some(w[2..].to_string())),
                _ => (w, None),
            };
            let val = match val {
                Some(v) => v,
                None if option(&opt).is_some_and(|(_, takes)| takes) => words.next().unwrap_or_default(),
                None => String::new(),
            };
            out.push((line, opt, val));
        }
    }
    Ok(out)
}

/// The UTF-8 byte-order mark, U+FEFF (bytes EF BB BF).
pub const BOM: char = '\u{feff}';

/// `script` without a leading byte-order mark. The script a node runs must not
/// keep one: the kernel starts an interpreter only when the file's first two
/// bytes are `#!`, so a marked `#!/bin/bash` script would run under `/bin/sh`
/// (or fail with "Exec format error"), and a `#` line after the mark is a
/// command named `\u{feff}#...` to the shell.
pub fn without_bom(script: &str) -> &str {
    script.strip_prefix(BOM).unwrap_or(script)
}

/// A directive's words: split at whitespace outside quotes, the quotes
/// removed, up to a word that starts with `#`. An unclosed quote is an error
/// (the rest of the line).
fn words(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => out.extend(cur.take()),
            '#' if cur.is_none() => break,
            '"' | '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some((_, q)) if q == c => break,
                        Some((_, x)) => w.push(x),
                        None => return Err(s[i..].to_string()),
                    }
                }
            }
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(cur);
    Ok(out)
}


/// Inputs the fuzzer (fuzz/, target sbatch and time_spec) found.
#[cfg(test)]
mod fuzz_findings {
    use super::*;

    /// `--mem 111111111111T`: 12 digits times 2^30 KiB overflowed u64 (a panic
    /// with overflow checks, a wrapped size without).
    #[test]
    fn a_huge_memory_size_is_refused_not_wrapped() {
        let e = parse_mem_mib("--mem", "111111111111T").unwrap_err();
        assert!(e.to_string().contains("from 1M to 1024T"), "{e}");
        assert_eq!(parse_mem_mib("--mem", "1024T"), Ok(1024 * 1024 * 1024));
    }

    /// `-Ӝem`: splitting `-Xvalue` at byte 2 cut a character in two (a panic).
    #[test]
    fn a_multibyte_short_option_is_an_error_not_a_panic() {
        let e = directives("#!/bin/sh\n#SBATCH -\u{4dc}em 4G\n").unwrap_err();
        assert_eq!(e.line, Some(2));
    }

    /// A 5 KiB bad --time was quoted whole in its error.
    #[test]
    fn a_long_bad_value_is_quoted_bounded() {
        let v = format!("21-02{}", "\u{10}".repeat(5000));
        let e = parse_time_limit("--time", &v).unwrap_err().to_string();
        assert!(e.len() < 600 && e.contains("(5005 bytes)"), "{e}");
    }
}
