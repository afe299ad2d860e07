//! One SWF data line.

/// The 18 SWF fields, in file order (1-based in the SWF definition).
pub const FIELD_NAMES: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time used",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
];

/// One job record. Integer fields are `i64` (-1 when unknown); the average CPU
/// time and the used memory are decimal numbers in real logs, so they are `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwfRecord {
    pub job_number: i64,
    pub submit_time: i64,
    pub wait_time: i64,
    pub run_time: i64,
    pub allocated_procs: i64,
    pub avg_cpu_time: f64,
    pub used_memory: f64,
    pub requested_procs: i64,
    pub requested_time: i64,
    pub requested_memory: i64,
    pub status: i64,
    pub user_id: i64,
    pub group_id: i64,
    pub executable: i64,
    pub queue: i64,
    pub partition: i64,
    pub preceding_job: i64,
    pub think_time: i64,
}

impl SwfRecord {
    /// A record with every field unknown (-1) except the job number.
    pub fn unknown(job_number: i64) -> Self {
        SwfRecord {
            job_number,
            submit_time: -1,
            wait_time: -1,
            run_time: -1,
            allocated_procs: -1,
            avg_cpu_time: -1.0,
            used_memory: -1.0,
            requested_procs: -1,
            requested_time: -1,
            requested_memory: -1,
            status: -1,
            user_id: -1,
            group_id: -1,
            executable: -1,
            queue: -1,
            partition: -1,
            preceding_job: -1,
            think_time: -1,
        }
    }

    /// Whether field `i` (0-based) holds a decimal number rather than an integer.
    pub const fn is_decimal_field(i: usize) -> bool {
        i == 5 || i == 6
    }

    pub(crate) fn set_int(&mut self, i: usize, v: i64) {
        match i {
            0 => self.job_number = v,
            1 => self.submit_time = v,
            2 => self.wait_time = v,
            3 => self.run_time = v,
            4 => self.allocated_procs = v,
            7 => self.requested_procs = v,
            8 => self.requested_time = v,
            9 => self.requested_memory = v,
            10 => self.status = v,
            11 => self.user_id = v,
            12 => self.group_id = v,
            13 => self.executable = v,
            14 => self.queue = v,
            15 => self.partition = v,
            16 => self.preceding_job = v,
            17 => self.think_time = v,
            _ => unreachable!("field {i} is not an integer field"),
        }
    }

    pub(crate) fn set_decimal(&mut self, i: usize, v: f64) {
        match i {
            5 => self.avg_cpu_time = v,
            6 => self.used_memory = v,
            _ => unreachable!("field {i} is not a decimal field"),
        }
    }
}
