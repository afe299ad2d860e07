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

/// The leading integer of a header value: `338 (batch partition; 512 total)` → 338.
fn leading_int(v: &str) -> Option<i64> {
    let v = v.trim();
    let end = v
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map(|(i, _)| i)
        .unwrap_or(v.len());
    v[..end].parse().ok()
}

fn leading_uint(v: &str) -> Option<u64> {
    leading_int(v).and_then(|x| u64::try_from(x).ok())
}

impl SwfHeader {
    /// Record one comment line (with its leading `;`).
    pub fn add_line(&mut self, line: &str) {
        self.lines.push(line.to_string());
        let body = line.trim_start_matches(';').trim();
        let Some((key, value)) = body.split_once(':') else { return };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return; // free text, not a header field
        }
        let value = value.trim();
        let text = || Some(value.to_string());
        let first = |slot: &mut Option<String>| {
            if slot.is_none() {
                *slot = text();
            }
        };
        match key.to_ascii_lowercase().as_str() {
            "version" => first(&mut self.version),
            "computer" => first(&mut self.computer),
            "installation" => first(&mut self.installation),
            "acknowledge" => first(&mut self.acknowledge),
            "information" => first(&mut self.information),
            "conversion" => first(&mut self.conversion),
            "maxjobs" => self.max_jobs = self.max_jobs.or(leading_uint(value)),
            "maxrecords" => self.max_records = self.max_records.or(leading_uint(value)),
            "preemption" => first(&mut self.preemption),
            "unixstarttime" => self.unix_start_time = self.unix_start_time.or(leading_int(value)),
            "timezone" => self.time_zone = self.time_zone.or(leading_int(value)),
            "timezonestring" => first(&mut self.time_zone_string),
            "starttime" => first(&mut self.start_time),
            "endtime" => first(&mut self.end_time),
            "maxnodes" => self.max_nodes = self.max_nodes.or(leading_uint(value)),
            "maxprocs" => self.max_procs = self.max_procs.or(leading_uint(value)),
            "maxruntime" => self.max_runtime = self.max_runtime.or(leading_int(value)),
            "maxmemory" => self.max_memory = self.max_memory.or(leading_int(value)),
            "allowoveruse" => {
                self.allow_overuse = self.allow_overuse.or(match value.to_ascii_lowercase().as_str() {
                    "yes" | "true" | "1" => Some(true),
                    "no" | "false" | "0" => Some(false),
                    _ => None,
                })
            }
            "maxqueues" => self.max_queues = self.max_queues.or(leading_uint(value)),
            "queue" | "queues" => self.queues.push(value.to_string()),
            "maxpartitions" => self.max_partitions = self.max_partitions.or(leading_uint(value)),
            "partition" | "partitions" => self.partitions.push(value.to_string()),
            "note" => self.notes.push(value.to_string()),
            _ => self.other.push((key.to_string(), value.to_string())),
        }
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
            h.add_line(l);
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
        h.add_line("; MaxNodes: 256");
        assert_eq!(h.machine_size(), Some(256));
        assert_eq!(SwfHeader::default().machine_size(), None);
    }
}
