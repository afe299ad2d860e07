//! Streaming SWF reader: one line at a time, plain or gzip (detected by content).
//!
//! Strict by default: the first malformed data line is an error naming the file,
//! line, field and value. A number outside the range the simulator can replay
//! (times beyond ±2^42 s, processor counts beyond `u32`; see [`crate::bounds`]) is
//! malformed too: it is rejected here, where the file and line are known, rather
//! than wrapping later. In lenient mode malformed lines are skipped and counted by
//! reason ([`LenientReport`]).
//!
//! The reader never holds more than [`MAX_LINE_BYTES`] of a line, and never reads
//! a line to its end to refuse it: the input may be endless (`/dev/zero`, a pipe,
//! a gzip stream that inflates to one endless line). Lenient mode, which must
//! find the next line to go on, reads through at most [`MAX_SKIPPED_LINE_BYTES`].

use super::header::{HeaderError, SwfHeader};
use super::record::{SwfRecord, FIELD_NAMES};
use crate::bounds::{is_time, MAX_MEMORY_KB, MAX_PROCS, MAX_TIME};
use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum SwfError {
    #[error("reading {file}")]
    Io {
        file: String,
        #[source]
        source: io::Error,
    },
    #[error("{file}:{line}: expected 18 fields, found {found}")]
    FieldCount { file: String, line: u64, found: usize },
    #[error("{file}:{line}: field {field} ({name}) is {value}: expected {expected}")]
    Field { file: String, line: u64, field: usize, name: &'static str, value: String, expected: &'static str },
    #[error("{file}:{line}: field 1 (job number) is {job}, the number of the job at line {first}: expected each job once (only partial executions, status 2-4, repeat a number)")]
    DuplicateJob { file: String, line: u64, job: i64, first: u64 },
    /// A line longer than `limit` bytes (a binary file, `/dev/zero`, a file
    /// without newlines): refused once `limit` bytes of it are read.
    #[error("{file}:{line}: line longer than {limit} bytes: expected an SWF line (18 numbers) or a `;` comment")]
    LineTooLong { file: String, line: u64, limit: u64 },
    /// `value` is quoted and bounded ([`crate::quote::bounded`]).
    #[error("{file}:{line}: header {key} is {value}: expected {expected}")]
    Header { file: String, line: u64, key: &'static str, value: String, expected: &'static str },
}

/// What a header's `UnixStartTime` must be: it is added to every simulated time.
const START_TIME_EXPECTED: &str = "Unix seconds from -2^42 to 2^42 = 4398046511104";

/// What lenient mode skipped: how many lines, and for each reason how many and
/// the first line that had it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LenientReport {
    pub skipped: u64,
    pub by_reason: BTreeMap<String, (u64, u64)>,
}

impl fmt::Display for LenientReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} malformed line(s) skipped", self.skipped)?;
        for (reason, (count, first)) in &self.by_reason {
            write!(f, "\n  {count} x {reason} (first at line {first})")?;
        }
        Ok(())
    }
}

enum LineError {
    Count(usize),
    /// Field (0-based), its text, what was expected.
    Field(usize, String, &'static str),
}

impl LineError {
    fn reason(&self) -> String {
        match self {
            LineError::Count(n) => format!("expected 18 fields, found {n}"),
            LineError::Field(i, _, expected) => format!("field {} ({}) {expected}", i + 1, FIELD_NAMES[*i]),
        }
    }
}

fn expected(field: usize) -> &'static str {
    if SwfRecord::is_decimal_field(field) {
        "a number (-1 if unknown)"
    } else {
        "an integer (-1 if unknown)"
    }
}

/// The range an integer field must be in to be replayed, and how to say it: the
/// times, the processor counts and the requested memory. Other fields are labels.
fn bounds(field: usize) -> Option<(std::ops::RangeInclusive<i64>, &'static str)> {
    match field {
        1 | 2 | 3 | 8 | 17 => Some((-MAX_TIME..=MAX_TIME, "seconds from -2^42 to 2^42 = 4398046511104 (-1 if unknown)")),
        4 | 7 => Some((i64::MIN..=MAX_PROCS, "at most 4294967295 processors (-1 if unknown)")),
        9 => Some((i64::MIN..=MAX_MEMORY_KB, "at most 2^41 = 2199023255552 KB per processor (-1 if unknown)")),
        _ => None,
    }
}

pub struct SwfReader<R> {
    input: R,
    name: String,
    line: u64,
    buf: Vec<u8>,
    header: SwfHeader,
    /// A data line read while collecting the header.
    peeked: Option<Result<SwfRecord, SwfError>>,
    header_done: bool,
    lenient: bool,
    report: LenientReport,
    /// The line of each job number seen (a job's whole-run records; partial
    /// executions, status 2-4, may share their job's number).
    seen: JobLines,
    /// The current line was refused as too long and its rest is still unread.
    in_long_line: bool,
    /// A line went on beyond [`MAX_SKIPPED_LINE_BYTES`]: nothing more is read.
    ended: bool,
}

impl SwfReader<Box<dyn BufRead + Send>> {
    /// Open a trace file, plain or gzip-compressed (detected by its magic bytes).
    pub fn open(path: &Path) -> Result<Self, SwfError> {
        let name = path.display().to_string();
        let io_err = |source| SwfError::Io { file: name.clone(), source };
        let file = File::open(path).map_err(io_err)?;
        Self::sniff(BufReader::with_capacity(1 << 16, file), name)
    }

    /// Read SWF text, plain or gzip-compressed (detected by its magic bytes),
    /// from `input`; `name` labels errors.
    pub fn sniff(mut input: impl BufRead + Send + 'static, name: impl Into<String>) -> Result<Self, SwfError> {
        let name = name.into();
        let gz = input.fill_buf().map_err(|source| SwfError::Io { file: name.clone(), source })?.starts_with(&[0x1f, 0x8b]);
        let input: Box<dyn BufRead + Send> = if gz {
            Box::new(BufReader::with_capacity(1 << 16, flate2::bufread::MultiGzDecoder::new(input)))
        } else {
            Box::new(input)
        };
        Ok(SwfReader::new(input, name))
    }
}

impl<R: BufRead> SwfReader<R> {
    /// Read SWF text from `input`; `name` labels errors.
    pub fn new(input: R, name: impl Into<String>) -> Self {
        SwfReader {
            input,
            name: name.into(),
            line: 0,
            buf: Vec::with_capacity(256),
            header: SwfHeader::default(),
            peeked: None,
            header_done: false,
            lenient: false,
            report: LenientReport::default(),
            seen: JobLines::default(),
            in_long_line: false,
            ended: false,
        }
    }

    /// Skip malformed data lines instead of failing; see [`Self::lenient_report`].
    pub fn lenient(mut self, lenient: bool) -> Self {
        self.lenient = lenient;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header: every comment line up to the first data line (and, once the
    /// whole file has been read, every later comment line too).
    pub fn header(&mut self) -> Result<&SwfHeader, SwfError> {
        if !self.header_done {
            self.header_done = true;
            if let Some(r) = self.next_record() {
                self.peeked = Some(r);
            }
        }
        Ok(&self.header)
    }

    pub fn into_header(self) -> SwfHeader {
        self.header
    }

    pub fn lenient_report(&self) -> &LenientReport {
        &self.report
    }

    /// Lenient mode: count the current line as skipped for `reason`.
    fn skip(&mut self, reason: String) {
        self.report.skipped += 1;
        self.report.by_reason.entry(reason).or_insert((0, self.line)).0 += 1;
    }

    /// An over-long line at `self.line`, refused after `limit` bytes.
    fn too_long(&self, limit: u64) -> SwfError {
        SwfError::LineTooLong { file: self.name.clone(), line: self.line, limit }
    }

    /// Read and drop the rest of a line refused as too long, reading at most
    /// what is left of [`MAX_SKIPPED_LINE_BYTES`]; beyond that the reader ends.
    fn skip_long_line(&mut self) -> Result<(), SwfError> {
        self.in_long_line = false;
        match skip_line(&mut self.input, MAX_SKIPPED_LINE_BYTES - MAX_LINE_BYTES - 1) {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.ended = true;
                Err(self.too_long(MAX_SKIPPED_LINE_BYTES))
            }
            Err(source) => {
                self.ended = true;
                Err(SwfError::Io { file: self.name.clone(), source })
            }
        }
    }

    fn next_record(&mut self) -> Option<Result<SwfRecord, SwfError>> {
        if self.ended {
            return None;
        }
        if self.in_long_line {
            // a caller goes on after the error: find the next line (the error
            // was given; an endless line ends the input silently)
            if self.skip_long_line().is_err() {
                return None;
            }
        }
        loop {
            self.buf.clear();
            match (&mut self.input).take(MAX_LINE_BYTES + 1).read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => return Some(Err(SwfError::Io { file: self.name.clone(), source })),
            }
            self.line += 1;
            if self.buf.len() as u64 > MAX_LINE_BYTES {
                // never hold more of a line than this, and never read the rest
                // only to refuse it: it may never end (`/dev/zero`)
                self.in_long_line = true;
                if !self.lenient {
                    return Some(Err(self.too_long(MAX_LINE_BYTES)));
                }
                if let Err(e) = self.skip_long_line() {
                    return Some(Err(e));
                }
                self.skip(format!("line longer than {MAX_LINE_BYTES} bytes"));
                continue;
            }
            let line = self.buf.trim_ascii();
            if line.is_empty() {
                continue;
            }
            if line[0] == b';' {
                let text = String::from_utf8_lossy(line).into_owned();
                let before = self.header.unix_start_time;
                let checked = self.header.add_line(&text).and_then(|()| match self.header.unix_start_time.filter(|&t| !is_time(t)) {
                    Some(t) => {
                        self.header.unix_start_time = before;
                        Err(HeaderError { key: "UnixStartTime", value: format!("`{t}`"), expected: START_TIME_EXPECTED })
                    }
                    None => Ok(()),
                });
                if let Err(e) = checked {
                    if !self.lenient {
                        return Some(Err(SwfError::Header { file: self.name.clone(), line: self.line, key: e.key, value: e.value, expected: e.expected }));
                    }
                    self.skip(format!("header {} {}", e.key, e.expected));
                }
                continue;
            }
            match parse_line(line) {
                Ok(rec) if rec.job_number >= 0 && !(2..=4).contains(&rec.status) => match self.seen.insert(rec.job_number, self.line) {
                    None => return Some(Ok(rec)),
                    // the first record keeps the number
                    Some(first) => {
                        if !self.lenient {
                            return Some(Err(SwfError::DuplicateJob { file: self.name.clone(), line: self.line, job: rec.job_number, first }));
                        }
                        self.skip("field 1 (job number) repeats an earlier job's".to_string());
                    }
                },
                Ok(rec) => return Some(Ok(rec)),
                Err(e) if self.lenient => self.skip(e.reason()),
                Err(e) => {
                    let (file, line) = (self.name.clone(), self.line);
                    return Some(Err(match e {
                        LineError::Count(found) => SwfError::FieldCount { file, line, found },
                        LineError::Field(i, value, expected) => SwfError::Field {
                            file,
                            line,
                            field: i + 1,
                            name: FIELD_NAMES[i],
                            value,
                            expected,
                        },
                    }));
                }
            }
        }
    }
}

impl<R: BufRead> Iterator for SwfReader<R> {
    type Item = Result<SwfRecord, SwfError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.header_done = true;
        if let Some(r) = self.peeked.take() {
            return Some(r);
        }
        self.next_record()
    }
}

/// Read a whole trace into memory: header, records, and what lenient mode skipped.
pub fn read_all<R: BufRead>(mut reader: SwfReader<R>) -> Result<(SwfHeader, Vec<SwfRecord>, LenientReport), SwfError> {
    reader.header()?;
    let mut records = Vec::new();
    for r in reader.by_ref() {
        records.push(r?);
    }
    let report = reader.report.clone();
    Ok((reader.into_header(), records, report))
}

impl SwfReader<Box<dyn BufRead + Send>> {
    /// Open and read a whole trace file.
    pub fn read_file(path: &Path, lenient: bool) -> Result<(SwfHeader, Vec<SwfRecord>, LenientReport), SwfError> {
        read_all(SwfReader::open(path)?.lenient(lenient))
    }
}

/// Read from any `Read` (for tests and stdin).
pub fn from_reader<R: Read>(r: R, name: &str) -> SwfReader<BufReader<R>> {
    SwfReader::new(BufReader::new(r), name)
}

fn parse_line(line: &[u8]) -> Result<SwfRecord, LineError> {
    let mut rec = SwfRecord::unknown(-1);
    let mut field = 0usize;
    let mut p = 0usize;
    let n = line.len();
    while p < n {
        while p < n && line[p].is_ascii_whitespace() {
            p += 1;
        }
        if p == n {
            break;
        }
        let start = p;
        while p < n && !line[p].is_ascii_whitespace() {
            p += 1;
        }
        if field < 18 {
            let tok = &line[start..p];
            if SwfRecord::is_decimal_field(field) {
                let v = parse_decimal(tok).ok_or_else(|| LineError::Field(field, lossy(tok), expected(field)))?;
                rec.set_decimal(field, v);
            } else {
                let v = parse_int(tok).ok_or_else(|| LineError::Field(field, lossy(tok), expected(field)))?;
                if let Some((range, what)) = bounds(field) {
                    if !range.contains(&v) {
                        return Err(LineError::Field(field, lossy(tok), what));
                    }
                }
                rec.set_int(field, v);
            }
        }
        field += 1;
    }
    if field != 18 {
        return Err(LineError::Count(field));
    }
    Ok(rec)
}

/// The longest line the reader holds (an SWF line is about 100 bytes; a header
/// comment a few hundred).
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// The longest line lenient mode reads through to skip it: a line beyond this
/// is no trace's (`/dev/zero`, a binary file without newlines, a gzip stream
/// that inflates to one endless line), and lenient mode stops there too.
pub const MAX_SKIPPED_LINE_BYTES: u64 = 64 << 20;

/// Read and drop the rest of the current line, newline included, reading at
/// most `limit` bytes: true if the line (or the input) ended within them.
fn skip_line<R: BufRead>(r: &mut R, mut limit: u64) -> io::Result<bool> {
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(true);
        }
        if let Some(i) = chunk.iter().position(|&b| b == b'\n') {
            if i as u64 >= limit {
                return Ok(false);
            }
            r.consume(i + 1);
            return Ok(true);
        }
        let n = chunk.len();
        if n as u64 > limit {
            return Ok(false);
        }
        r.consume(n);
        limit -= n as u64;
    }
}

/// A field's text for an error: quoted, at most [`crate::quote::LIMIT`] characters.
fn lossy(tok: &[u8]) -> String {
    crate::quote::bounded_bytes(tok)
}

/// An integer, optionally signed; `12.0` and `12.` are accepted (some converters
/// print integers that way), `12.5` is not.
#[inline]
fn parse_int(tok: &[u8]) -> Option<i64> {
    let (neg, digits) = match tok.first()? {
        b'-' => (true, &tok[1..]),
        b'+' => (false, &tok[1..]),
        _ => (false, tok),
    };
    if digits.is_empty() || digits[0] == b'.' {
        return None;
    }
    let mut v: i64 = 0;
    for (k, &b) in digits.iter().enumerate() {
        match b {
            b'0'..=b'9' => v = v.checked_mul(10)?.checked_add((b - b'0') as i64)?,
            b'.' if digits[k + 1..].iter().all(|&z| z == b'0') => break,
            _ => return None,
        }
    }
    Some(if neg { -v } else { v })
}

#[inline]
fn parse_decimal(tok: &[u8]) -> Option<f64> {
    if let Some(v) = parse_int(tok) {
        return Some(v as f64);
    }
    let v: f64 = std::str::from_utf8(tok).ok()?.parse().ok()?;
    v.is_finite().then_some(v)
}

/// The line of each job number seen, as runs of consecutive numbers on
/// consecutive lines: a trace numbered 1, 2, 3... line after line is one run,
/// so millions of jobs cost a few entries and no hashing.
#[derive(Debug, Default)]
struct JobLines {
    /// Runs by first number: (its line, how many numbers).
    runs: std::collections::BTreeMap<i64, (u64, i64)>,
    /// The run being extended: (first number, its line, how many numbers).
    last: Option<(i64, u64, i64)>,
    /// Past every number seen.
    end: i128,
}

impl JobLines {
    /// Record `job` (>= 0) at `line`, unless it was seen: then the line it was
    /// first seen on.
    fn insert(&mut self, job: i64, line: u64) -> Option<u64> {
        if (job as i128) < self.end {
            if let Some(first) = self.find(job) {
                return Some(first);
            }
        }
        self.end = self.end.max(job as i128 + 1);
        match self.last {
            Some((s, l, n)) if s.checked_add(n) == Some(job) && l.checked_add(n as u64) == Some(line) => self.last = Some((s, l, n + 1)),
            _ => {
                if let Some((s, l, n)) = self.last.take() {
                    self.runs.insert(s, (l, n));
                }
                self.last = Some((job, line, 1));
            }
        }
        None
    }

    fn find(&self, job: i64) -> Option<u64> {
        let last = self.last.iter().map(|&(s, l, n)| (s, (l, n)));
        let before = self.runs.range(..=job).next_back().map(|(&s, &r)| (s, r));
        before.into_iter().chain(last).find(|&(s, (_, n))| s <= job && job - s < n).map(|(s, (l, _))| l + (job - s) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_lines_find_every_repeat_and_its_first_line() {
        // numbers in order with gaps, skipped lines, numbers going back, and
        // repeats inside, at the edges of and between runs, against a map
        let mut seed = 0x2545f4914f6cdd1du64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..50 {
            let mut runs = JobLines::default();
            let mut map = std::collections::BTreeMap::new();
            let (mut job, mut line) = (rnd(5) as i64, 1u64);
            for _ in 0..400 {
                match rnd(10) {
                    0 => job = rnd(300) as i64,
                    1 => job += 1 + rnd(3) as i64,
                    2 => line += 1 + rnd(2),
                    _ => {}
                }
                let want = map.get(&job).copied();
                assert_eq!(runs.insert(job, line), want, "round {round}: job {job} at line {line}");
                map.entry(job).or_insert(line);
                job += 1;
                line += 1;
            }
        }
        let mut runs = JobLines::default();
        assert_eq!(runs.insert(i64::MAX, 1), None);
        assert_eq!(runs.insert(i64::MAX, 2), Some(1));
        assert_eq!(runs.insert(0, 3), None);
    }

    #[test]
    fn integers() {
        assert_eq!(parse_int(b"-1"), Some(-1));
        assert_eq!(parse_int(b"+7"), Some(7));
        assert_eq!(parse_int(b"5094.0"), Some(5094));
        assert_eq!(parse_int(b"12."), Some(12));
        assert_eq!(parse_int(b"12.5"), None);
        assert_eq!(parse_int(b"1e3"), None);
        assert_eq!(parse_int(b"-"), None);
        assert_eq!(parse_int(b".5"), None);
        assert_eq!(parse_int(b"99999999999999999999"), None);
        assert_eq!(parse_decimal(b"552.21"), Some(552.21));
        assert_eq!(parse_decimal(b"nan"), None);
    }

    const LINE: &str = "1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1";

    /// `LINE` with field `field` (1-based) set to `value`.
    fn with(field: usize, value: &str) -> String {
        let mut f: Vec<&str> = LINE.split(' ').collect();
        f[field - 1] = value;
        f.join(" ")
    }

    fn read(text: &str, lenient: bool) -> Result<(Vec<SwfRecord>, LenientReport), SwfError> {
        let (_, records, report) = read_all(from_reader(text.as_bytes(), "t.swf").lenient(lenient))?;
        Ok((records, report))
    }

    #[test]
    fn values_beyond_what_can_be_replayed_name_file_line_and_field() {
        let big = "9223372036854775000";
        let cases = [
            (2, big, "field 2 (submit time) is `9223372036854775000`: expected seconds from -2^42 to 2^42 = 4398046511104 (-1 if unknown)"),
            (3, "-4398046511105", "field 3 (wait time) is `-4398046511105`: expected seconds from -2^42"),
            (4, big, "field 4 (run time)"),
            (9, "4398046511105", "field 9 (requested time) is `4398046511105`"),
            (18, big, "field 18 (think time)"),
            (5, "4294967296", "field 5 (allocated processors) is `4294967296`: expected at most 4294967295 processors (-1 if unknown)"),
            (8, big, "field 8 (requested processors)"),
            (10, "2199023255553", "field 10 (requested memory) is `2199023255553`: expected at most 2^41 = 2199023255552 KB per processor"),
        ];
        for (field, value, want) in cases {
            let text = format!("; MaxProcs: 8\n{LINE}\n{}\n", with(field, value));
            let e = read(&text, false).unwrap_err().to_string();
            assert!(e.starts_with("t.swf:3: ") && e.contains(want), "field {field}:\n got  {e}\n want {want}");
            let (records, report) = read(&text, true).unwrap();
            assert_eq!((records.len(), report.skipped), (1, 1), "lenient mode skips and counts field {field}");
            assert_eq!(report.by_reason.values().next(), Some(&(1, 3)));
        }
        // the bounds themselves are accepted
        let edge = [(2, "4398046511104"), (4, "-4398046511104"), (5, "4294967295"), (10, "2199023255552"), (1, big)];
        for (field, value) in edge {
            assert_eq!(read(&with(field, value), false).unwrap().0.len(), 1, "field {field} = {value}");
        }
    }

    /// Zeros without end (as `/dev/zero` or `yes ''|tr -d '\n'`), counting the
    /// bytes read; past `cap` an I/O error, so that a reader that does not stop
    /// fails the test instead of hanging it.
    struct Endless {
        read: std::sync::Arc<std::sync::atomic::AtomicU64>,
        cap: u64,
    }

    impl Endless {
        fn new(cap: u64) -> (Endless, std::sync::Arc<std::sync::atomic::AtomicU64>) {
            let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            (Endless { read: read.clone(), cap }, read)
        }
    }

    impl Read for Endless {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            let n = self.read.fetch_add(b.len() as u64, std::sync::atomic::Ordering::Relaxed);
            if n > self.cap {
                return Err(io::Error::other(format!("read past {} bytes of an endless input", self.cap)));
            }
            b.fill(0);
            Ok(b.len())
        }
    }

    fn read_of(r: &std::sync::Arc<std::sync::atomic::AtomicU64>) -> u64 {
        r.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `tessera sim run --trace /dev/zero` never stopped: the line was refused
    /// at 1 MiB, but only after reading the rest of it to its newline.
    #[test]
    fn an_endless_line_is_refused_at_the_limit_not_read_to_its_end() {
        let (input, read) = Endless::new(1 << 30);
        let e = read_all(from_reader(input, "/dev/zero")).unwrap_err();
        assert!(matches!(e, SwfError::LineTooLong { line: 1, limit: MAX_LINE_BYTES, .. }), "{e}");
        assert_eq!(e.to_string(), "/dev/zero:1: line longer than 1048576 bytes: expected an SWF line (18 numbers) or a `;` comment");
        assert!(read_of(&read) < 2 * MAX_LINE_BYTES, "read {} bytes", read_of(&read));
        // std::io::repeat, as the kernel's /dev/zero
        let e = read_all(from_reader(io::repeat(0).take(1 << 40), "zeros")).unwrap_err();
        assert!(matches!(e, SwfError::LineTooLong { line: 1, .. }), "{e}");
        // after the refusal the reader goes on at the next line, if there is one
        let text = format!("{LINE}\n{}\n{}\n", "x".repeat(3 << 20), with(1, "2"));
        let mut r = from_reader(text.as_bytes(), "t.swf");
        assert!(r.next().unwrap().is_ok());
        assert!(matches!(r.next().unwrap(), Err(SwfError::LineTooLong { line: 2, .. })));
        assert_eq!(r.next().unwrap().unwrap().job_number, 2);
        assert!(r.next().is_none());
    }

    /// Lenient mode skips an over-long line, reading through at most 64 MiB of
    /// it: an endless one is an error there too.
    #[test]
    fn lenient_mode_skips_a_long_line_but_stops_on_an_endless_one() {
        let text = format!("{LINE}\n{}\n{}\n", "\0".repeat(3 << 20), with(1, "2"));
        let (records, report) = read(&text, true).unwrap();
        assert_eq!((records.len(), report.skipped), (2, 1));
        assert_eq!(report.by_reason.get("line longer than 1048576 bytes"), Some(&(1, 2)));
        let (input, read) = Endless::new(1 << 30);
        let e = read_all(from_reader(input, "/dev/zero").lenient(true)).unwrap_err();
        assert!(matches!(e, SwfError::LineTooLong { line: 1, limit: MAX_SKIPPED_LINE_BYTES, .. }), "{e}");
        assert!(e.to_string().starts_with("/dev/zero:1: line longer than 67108864 bytes: expected"), "{e}");
        assert!(read_of(&read) < MAX_SKIPPED_LINE_BYTES + MAX_LINE_BYTES, "read {} bytes", read_of(&read));
    }

    /// A gzip stream that inflates to one endless line (a gzip bomb of zeros):
    /// refused after 1 MiB inflated, in lenient mode after 64 MiB.
    #[test]
    fn a_gzip_stream_of_one_endless_line_is_refused() {
        for (lenient, limit) in [(false, MAX_LINE_BYTES), (true, MAX_SKIPPED_LINE_BYTES)] {
            let (zeros, read) = Endless::new(4 << 30);
            let gz = flate2::read::GzEncoder::new(zeros, flate2::Compression::fast());
            let r = SwfReader::sniff(io::BufReader::new(gz), "bomb.swf.gz").unwrap().lenient(lenient);
            let e = read_all(r).unwrap_err();
            assert!(matches!(e, SwfError::LineTooLong { line: 1, limit: l, .. } if l == limit), "lenient {lenient}: {e}");
            assert!(e.to_string().starts_with("bomb.swf.gz:1: line longer than"), "{e}");
            assert!(read_of(&read) < 2 * limit, "lenient {lenient}: inflated {} bytes", read_of(&read));
        }
    }

    #[test]
    fn a_start_time_beyond_two_to_the_42_is_a_header_error() {
        let text = format!("; Version: 2.2\n; UnixStartTime: 9223372036854775807\n{LINE}\n");
        let e = read(&text, false).unwrap_err().to_string();
        assert_eq!(e, "t.swf:2: header UnixStartTime is `9223372036854775807`: expected Unix seconds from -2^42 to 2^42 = 4398046511104");
        let (h, records, report) = read_all(from_reader(text.as_bytes(), "t.swf").lenient(true)).unwrap();
        assert_eq!((h.unix_start_time, records.len(), report.skipped), (None, 1, 1));
    }
}
