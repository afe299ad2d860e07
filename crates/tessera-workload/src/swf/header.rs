//! The SWF header: `; Key: value` comment lines at the top of a file.

/// Header fields defined by SWF 2.2, parsed; every comment line is also kept
/// verbatim in `lines` so a writer can reproduce it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwfHeader {
    /// Every comment line, verbatim (including the leading `;`).
    pub lines: Vec<String>,
    pub version: Option<String>,
    pub computer: Option<String>,
    pub installation: Option<String>,
    pub acknowledge: Option<String>,
    pub information: Option<String>,
    pub conversion: Option<String>,
    pub max_jobs: Option<u64>,
    pub max_records: Option<u64>,
    pub preemption: Option<String>,
    pub unix_start_time: Option<i64>,
    /// Seconds to add to UTC (SWF `TimeZone`, deprecated by `TimeZoneString`).
    pub time_zone: Option<i64>,
    pub time_zone_string: Option<String>,
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    /// `MaxNodes`; for values such as `338 (batch partition; 512 total)` the leading number.
    pub max_nodes: Option<u64>,
    pub max_procs: Option<u64>,
    pub max_runtime: Option<i64>,
    pub max_memory: Option<i64>,
    pub allow_overuse: Option<bool>,
    pub max_queues: Option<u64>,
    pub queues: Vec<String>,
    pub max_partitions: Option<u64>,
    pub partitions: Vec<String>,
    pub notes: Vec<String>,
    /// `Key: value` lines with keys SWF does not define, in file order.
    pub other: Vec<(String, String)>,
}

/// A header value that is not what its key needs: the key, the value (at most
/// [`crate::quote::LIMIT`] characters of it) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("header {key} is {value}: expected {expected}")]
pub struct HeaderError {
    pub key: &'static str,
    /// The value, quoted and cut to a bounded length.
    pub value: String,
    pub expected: &'static str,
}

/// What a numeric header value must look like.
pub const HEADER_INT_EXPECTED: &str = "an integer, optionally followed by a space and a comment (e.g. `338 (batch partition)`)";

/// A header's integer (a key given as `N/A`, `NA`, `unknown` or `-` is left
/// unset before this is asked): optional sign and digits, then the end of the value or
/// whitespace or `(` and free text (`338 (batch partition; 512 total)`, `70  (dual)`,
/// `3600\t # DEPRECATED`). `1e3`, `16,000`, `12.5`, `abc` and values beyond i64
/// are errors, never read by their leading digits.
pub fn header_int(v: &str) -> Result<i64, &'static str> {
    let v = v.trim();
    let digits_from = usize::from(v.starts_with(['-', '+']));
    let end = v[digits_from..].find(|c: char| !c.is_ascii_digit()).map_or(v.len(), |i| i + digits_from);
    let rest = &v[end..];
    if end == digits_from || !(rest.is_empty() || rest.starts_with(|c: char| c.is_whitespace() || c == '(')) {
        return Err(HEADER_INT_EXPECTED);
    }
    v[..end].parse().map_err(|_| "an integer from -2^63 to 2^63 - 1")
}

fn header_uint(v: &str) -> Result<u64, &'static str> {
    header_int(v).and_then(|x| u64::try_from(x).map_err(|_| "an integer >= 0"))
}

impl SwfHeader {
    /// Record one comment line (with its leading `;`). A numeric key whose value is
    /// not a number is an error (the line is kept, the field left unset); the first
    /// value of a key wins.
    pub fn add_line(&mut self, line: &str) -> Result<(), HeaderError> {
        self.lines.push(line.to_string());
        let body = line.trim_start_matches(';').trim();
        let Some((key, value)) = body.split_once(':') else { return Ok(()) };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Ok(()); // free text, not a header field
        }
        let value = value.trim();
        let text = || Some(value.to_string());
        let first = |slot: &mut Option<String>| {
            if slot.is_none() {
                *slot = text();
            }
        };
        fn num<T>(slot: &mut Option<T>, key: &'static str, value: &str, parse: fn(&str) -> Result<T, &'static str>) -> Result<(), HeaderError> {
            // "not known" as archive logs write it (Sandia-Ross: `MaxRuntime: N/A`)
            if ["n/a", "na", "unknown", "-"].contains(&value.to_ascii_lowercase().as_str()) {
                return Ok(());
            }
            let x = parse(value).map_err(|expected| HeaderError { key, value: crate::quote::bounded(value), expected })?;
            if slot.is_none() {
                *slot = Some(x);
            }
            Ok(())
        }
        match key.to_ascii_lowercase().as_str() {
            "version" => first(&mut self.version),
            "computer" => first(&mut self.computer),
            "installation" => first(&mut self.installation),
            "acknowledge" => first(&mut self.acknowledge),
            "information" => first(&mut self.information),
            "conversion" => first(&mut self.conversion),
            "maxjobs" => num(&mut self.max_jobs, "MaxJobs", value, header_uint)?,
            "maxrecords" => num(&mut self.max_records, "MaxRecords", value, header_uint)?,
            "preemption" => first(&mut self.preemption),
            "unixstarttime" => num(&mut self.unix_start_time, "UnixStartTime", value, header_int)?,
            "timezone" => num(&mut self.time_zone, "TimeZone", value, header_int)?,
            "timezonestring" => first(&mut self.time_zone_string),
            "starttime" => first(&mut self.start_time),
            "endtime" => first(&mut self.end_time),
            "maxnodes" => num(&mut self.max_nodes, "MaxNodes", value, header_uint)?,
            "maxprocs" => num(&mut self.max_procs, "MaxProcs", value, header_uint)?,
            "maxruntime" => num(&mut self.max_runtime, "MaxRuntime", value, header_int)?,
            "maxmemory" => num(&mut self.max_memory, "MaxMemory", value, header_int)?,
            "allowoveruse" => {
                self.allow_overuse = self.allow_overuse.or(match value.to_ascii_lowercase().as_str() {
                    "yes" | "true" | "1" => Some(true),
                    "no" | "false" | "0" => Some(false),
                    _ => None,
                })
            }
            "maxqueues" => num(&mut self.max_queues, "MaxQueues", value, header_uint)?,
            "queue" | "queues" => self.queues.push(value.to_string()),
            "maxpartitions" => num(&mut self.max_partitions, "MaxPartitions", value, header_uint)?,
            "partition" | "partitions" => self.partitions.push(value.to_string()),
            "note" => self.notes.push(value.to_string()),
            _ => self.other.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }

    /// The machine size to simulate by default: `MaxProcs`, else `MaxNodes`.
    pub fn machine_size(&self) -> Option<u64> {
        self.max_procs.filter(|&p| p > 0).or(self.max_nodes.filter(|&n| n > 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keys_and_keeps_lines() {
        let mut h = SwfHeader::default();
        for l in [
            "; Version: 2.2",
            "; MaxNodes: 338 (batch partition; 512 total)",
            "; MaxProcs: 1664 (72, 1368, 224)",
            "; UnixStartTime: 1027839845",
            "; TimeZoneString: Europe/Stockholm",
            "; Note: uses MAUI scheduler",
            "; Partition:  1  DEFAULT",
            ";       The filters used to produce it were",
            ";",
            "; Custom: 42",
        ] {
            h.add_line(l).unwrap();
        }
        assert_eq!(h.version.as_deref(), Some("2.2"));
        assert_eq!(h.max_nodes, Some(338));
        assert_eq!(h.max_procs, Some(1664));
        assert_eq!(h.machine_size(), Some(1664));
        assert_eq!(h.unix_start_time, Some(1027839845));
        assert_eq!(h.time_zone_string.as_deref(), Some("Europe/Stockholm"));
        assert_eq!(h.notes, vec!["uses MAUI scheduler"]);
        assert_eq!(h.partitions, vec!["1  DEFAULT"]);
        assert_eq!(h.other, vec![("Custom".to_string(), "42".to_string())]);
        assert_eq!(h.lines.len(), 10);
    }

    #[test]
    fn machine_size_falls_back_to_max_nodes() {
        let mut h = SwfHeader::default();
        h.add_line("; MaxNodes: 256").unwrap();
        assert_eq!(h.machine_size(), Some(256));
        assert_eq!(SwfHeader::default().machine_size(), None);
    }

    #[test]
    fn numbers_are_read_whole_or_refused() {
        for (v, want) in [("1664", Ok(1664)), ("338 (batch partition; 512 total)", Ok(338)), ("70  (dual)", Ok(70)), ("3600\t # DEPRECATED", Ok(3600)), ("-18000", Ok(-18000)), ("+5", Ok(5)), ("64(x)", Ok(64))] {
            assert_eq!(header_int(v), want, "{v}");
        }
        for v in ["1e3", "16,000", "12.5", "abc", "", "-", "0x10", "99999999999999999999"] {
            assert!(header_int(v).is_err(), "{v} was read as {:?}", header_int(v));
        }
        let mut h = SwfHeader::default();
        let e = h.add_line("; MaxProcs: 1e3").unwrap_err();
        assert_eq!(e.to_string(), format!("header MaxProcs is `1e3`: expected {HEADER_INT_EXPECTED}"));
        assert_eq!(h.max_procs, None);
        assert_eq!(h.add_line("; MaxNodes: -4").unwrap_err().expected, "an integer >= 0");
        // a bad value of a text key is no error; N/A is "not given"
        h.add_line("; Computer: 1e3").unwrap();
        h.add_line(";MaxRuntime: N/A").unwrap();
        assert_eq!(h.max_runtime, None);
    }
}
