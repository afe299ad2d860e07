//! Streaming SWF reader: one line at a time, plain or gzip (detected by content).
//!
//! Strict by default: the first malformed data line is an error naming the file,
//! line, field and value. In lenient mode malformed lines are skipped and counted
//! by reason ([`LenientReport`]).

use super::header::SwfHeader;
use super::record::{SwfRecord, FIELD_NAMES};
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
    #[error("{file}:{line}: field {field} ({name}) is `{value}`: expected {expected}")]
    Field { file: String, line: u64, field: usize, name: &'static str, value: String, expected: &'static str },
}

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
    Field(usize, String),
}

impl LineError {
    fn reason(&self) -> String {
        match self {
            LineError::Count(n) => format!("expected 18 fields, found {n}"),
            LineError::Field(i, _) => format!("field {} ({}) {}", i + 1, FIELD_NAMES[*i], expected(*i)),
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
}

impl SwfReader<Box<dyn BufRead + Send>> {
    /// Open a trace file, plain or gzip-compressed (detected by its magic bytes).
    pub fn open(path: &Path) -> Result<Self, SwfError> {
        let name = path.display().to_string();
        let io_err = |source| SwfError::Io { file: name.clone(), source };
        let file = File::open(path).map_err(io_err)?;
        let mut buffered = BufReader::with_capacity(1 << 16, file);
        let gz = buffered.fill_buf().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
        let input: Box<dyn BufRead + Send> = if gz {
            Box::new(BufReader::with_capacity(1 << 16, flate2::bufread::MultiGzDecoder::new(buffered)))
        } else {
            Box::new(buffered)
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

    fn next_record(&mut self) -> Option<Result<SwfRecord, SwfError>> {
        loop {
            self.buf.clear();
            match self.input.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => return Some(Err(SwfError::Io { file: self.name.clone(), source })),
            }
            self.line += 1;
            let line = self.buf.trim_ascii();
            if line.is_empty() {
                continue;
            }
            if line[0] == b';' {
                let text = String::from_utf8_lossy(line).into_owned();
                self.header.add_line(&text);
                continue;
            }
            match parse_line(line) {
                Ok(rec) => return Some(Ok(rec)),
                Err(e) if self.lenient => {
                    self.report.skipped += 1;
                    let entry = self.report.by_reason.entry(e.reason()).or_insert((0, self.line));
                    entry.0 += 1;
                }
                Err(e) => {
                    let (file, line) = (self.name.clone(), self.line);
                    return Some(Err(match e {
                        LineError::Count(found) => SwfError::FieldCount { file, line, found },
                        LineError::Field(i, value) => SwfError::Field {
                            file,
                            line,
                            field: i + 1,
                            name: FIELD_NAMES[i],
                            value,
                            expected: expected(i),
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
                let v = parse_decimal(tok).ok_or_else(|| LineError::Field(field, lossy(tok)))?;
                rec.set_decimal(field, v);
            } else {
                let v = parse_int(tok).ok_or_else(|| LineError::Field(field, lossy(tok)))?;
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

fn lossy(tok: &[u8]) -> String {
    String::from_utf8_lossy(tok).into_owned()
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
