//! The job table shared by both engines: every submitted job's spec and state, and
//! the pending queue in queue order.

use crate::job::{JobIdx, JobSpec, JobState};
use crate::queue::Queue;
use crate::Time;

#[derive(Debug, Clone)]
pub(crate) struct JobEntry {
    pub spec: JobSpec,
    pub state: JobState,
    /// Queue position while pending.
    pub queue_pos: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct JobTable {
    pub jobs: Vec<JobEntry>,
    pub queue: Queue,
}

impl JobTable {
    pub fn new() -> Self {
        JobTable { jobs: Vec::new(), queue: Queue::new() }
    }

    /// A job's spec and state.
    pub fn job(&self, job: JobIdx) -> (&JobSpec, JobState) {
        let e = &self.jobs[job.index()];
        (&e.spec, e.state)
    }

    /// Pending jobs in queue order.
    pub fn pending(&self) -> impl Iterator<Item = JobIdx> + '_ {
        self.queue.iter().map(|(_, j)| j)
    }

    /// Queue a job now; the n-th submitted job gets `JobIdx(n)`.
    pub fn submit(&mut self, now: Time, spec: JobSpec) -> JobIdx {
        assert!(spec.procs >= 1, "job {:?} asks for no processor", spec.id);
        assert!(spec.estimate >= 0, "job {:?} has a negative estimate", spec.id);
        let idx = JobIdx(self.jobs.len() as u32);
        let queue_pos = self.queue.push(idx, spec.procs, spec.estimate);
        self.jobs.push(JobEntry { spec, state: JobState::Pending { submit: now }, queue_pos });
        idx
    }

    /// Move a pending job to running; returns its spec.
    pub fn begin(&mut self, now: Time, pos: u32, job: JobIdx) -> JobSpec {
        let e = &mut self.jobs[job.index()];
        let JobState::Pending { submit } = e.state else { unreachable!("starting a job that is not pending") };
        debug_assert_eq!(e.queue_pos, pos);
        e.state = JobState::Running { submit, start: now };
        self.queue.remove(pos);
        e.spec
    }

    /// Move a running job to done; returns its start time.
    pub fn finish(&mut self, now: Time, job: JobIdx) -> Time {
        let e = &mut self.jobs[job.index()];
        let JobState::Running { submit, start } = e.state else {
            panic!("completion of job {:?}, which is not running", e.spec.id);
        };
        e.state = JobState::Done { submit, start, end: now };
        start
    }

    pub fn spec(&self, job: JobIdx) -> &JobSpec {
        &self.jobs[job.index()].spec
    }

    pub fn is_head(&self, job: JobIdx) -> bool {
        self.queue.head().is_some_and(|(_, h)| h == job)
    }

    /// The queue and the job states agree.
    pub fn sanity_check(&self) {
        let mut queued = 0;
        for (pos, j) in self.queue.iter() {
            let e = &self.jobs[j.index()];
            assert!(matches!(e.state, JobState::Pending { .. }), "queued job {:?} is not pending", e.spec.id);
            assert_eq!(e.queue_pos, pos);
            queued += 1;
        }
        assert_eq!(queued, self.queue.len());
    }
}
