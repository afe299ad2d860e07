//! The job table: the jobs the engine holds (queued, running, suspended or
//! ending), in reused slots, with the pending queue in queue order.
//!
//! A job leaves the table when it ends; its slot is reused, so memory follows the
//! live jobs, not the history. Job ids map to slots through an ordered map (no
//! hash map: iteration order must never depend on a hash seed).

use crate::job::{JobId, JobIdx, JobSpec, JobState, SuspendedBy};
use crate::queue::Queue;
use crate::Time;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JobEntry {
    pub spec: JobSpec,
    pub state: JobState,
    pub submit: Time,
    /// What the job needs of the machine, in the queue index's unit (cores).
    pub need: u64,
    /// Real seconds it may run on its nodes (set at start; None: no limit).
    pub limit: Option<Time>,
    /// Seconds it ran before its current running period.
    pub ran: Time,
    /// Start of its current running period.
    pub period: Time,
    /// The expected end it is filed under in the running list.
    pub expected_end: Time,
    /// Seconds spent suspended since it started.
    pub suspended_s: Time,
    pub requeues: u32,
}

impl JobEntry {
    /// When its limit runs out, if it is running now.
    pub fn deadline(&self) -> Option<Time> {
        let limit = self.limit?;
        Some(self.period.saturating_add(limit - self.ran))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JobTable {
    slots: Vec<Option<JobEntry>>,
    free_slots: Vec<u32>,
    ids: BTreeMap<JobId, JobIdx>,
    pub queue: Queue,
    /// Association and QOS limits, where the accounts set any: the jobs'
    /// starts and ends count against them as the table sees them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) limits: Option<Box<crate::share::LimitBook>>,
}

impl JobTable {
    pub fn new() -> Self {
        JobTable { slots: Vec::new(), free_slots: Vec::new(), ids: BTreeMap::new(), queue: Queue::new(), limits: None }
    }

    /// Jobs held (queued, running, suspended, ending).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Slots allocated (the high-water mark of live jobs).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Every job the table holds, by id.
    pub fn live(&self) -> impl Iterator<Item = JobIdx> + '_ {
        self.ids.values().copied()
    }

    pub fn lookup(&self, id: JobId) -> Option<JobIdx> {
        self.ids.get(&id).copied()
    }

    #[inline]
    pub fn get(&self, job: JobIdx) -> &JobEntry {
        self.slots[job.index()].as_ref().expect("a live job")
    }

    /// A job's entry, if the slot holds a live job.
    #[inline]
    pub fn entry(&self, job: JobIdx) -> Option<&JobEntry> {
        self.slots.get(job.index())?.as_ref()
    }

    #[inline]
    pub fn get_mut(&mut self, job: JobIdx) -> &mut JobEntry {
        self.slots[job.index()].as_mut().expect("a live job")
    }

    pub fn spec(&self, job: JobIdx) -> &JobSpec {
        &self.get(job).spec
    }

    pub fn state(&self, job: JobIdx) -> JobState {
        self.get(job).state
    }

    /// Queued jobs (pending or held) in queue order.
    pub fn queued(&self) -> impl Iterator<Item = (u32, JobIdx)> + '_ {
        self.queue.iter()
    }

    /// Pending (eligible) jobs in queue order.
    pub fn pending(&self) -> impl Iterator<Item = (u32, JobIdx)> + '_ {
        self.queue.iter().filter(|&(_, j)| self.get(j).state == JobState::Pending)
    }

    /// Add a job, queued now (held if it asks to be). The caller checked that its
    /// id is new.
    pub fn insert(&mut self, now: Time, spec: JobSpec, need: u64) -> JobIdx {
        self.insert_keyed(now, spec, need, 0)
    }

    /// [`JobTable::insert`], the job filed in the queue under `key`
    /// ([`Queue::set_key`]).
    pub fn insert_keyed(&mut self, now: Time, spec: JobSpec, need: u64, key: u64) -> JobIdx {
        let idx = match self.free_slots.pop() {
            Some(s) => JobIdx(s),
            None => {
                self.slots.push(None);
                JobIdx(self.slots.len() as u32 - 1)
            }
        };
        let state = if spec.hold { JobState::Held } else { JobState::Pending };
        self.queue.set_key(idx, key);
        self.queue.push(idx, if spec.hold { Queue::HELD } else { need }, spec.estimate);
        self.slots[idx.index()] = Some(JobEntry {
            spec,
            state,
            submit: now,
            need,
            limit: None,
            ran: 0,
            period: now,
            expected_end: Time::MAX,
            suspended_s: 0,
            requeues: 0,
        });
        self.ids.insert(spec.id, idx);
        idx
    }

    /// Put a job that held resources back at the tail of the queue (requeue).
    pub fn requeue(&mut self, job: JobIdx) {
        let e = self.slots[job.index()].as_mut().unwrap();
        e.state = JobState::Pending;
        e.requeues += 1;
        e.limit = None;
        e.ran = 0;
        e.expected_end = Time::MAX;
        self.queue.push(job, e.need, e.spec.estimate);
        if let Some(l) = &mut self.limits {
            l.stopped(job);
        }
    }

    /// Hold or release a queued job; it keeps its place in the queue. (A
    /// job a limit holds stays held.)
    pub fn set_held(&mut self, job: JobIdx, held: bool) {
        let held = held || self.limits.as_ref().is_some_and(|l| l.held(job).is_some());
        let e = self.slots[job.index()].as_mut().unwrap();
        e.state = if held { JobState::Held } else { JobState::Pending };
        self.queue.set(self.queue.pos_of(job), if held { Queue::HELD } else { e.need }, e.spec.estimate);
    }

    /// Take a pending job out of the queue to run it now.
    pub fn begin(&mut self, now: Time, job: JobIdx, limit: Option<Time>) {
        let e = self.slots[job.index()].as_mut().unwrap();
        debug_assert_eq!(e.state, JobState::Pending, "starting a job that is not pending");
        e.state = JobState::Running { start: now };
        e.limit = limit;
        e.ran = 0;
        e.period = now;
        self.queue.remove(self.queue.pos_of(job));
        if let Some(l) = &mut self.limits {
            l.started(job);
        }
    }

    /// Whether a limit holds a pending job if it started now: if so it is
    /// held (it keeps its place; no search of the queue finds it) until a job
    /// it was held for ends. Every pass asks before it starts or reserves for
    /// a job.
    pub fn over_limit(&mut self, job: JobIdx) -> bool {
        let Some(l) = &mut self.limits else { return false };
        let Some(why) = l.blocks(job) else { return false };
        l.hold(job, why);
        self.set_held(job, true);
        true
    }

    /// A running job stops at `now`: its limit stops running.
    pub fn suspend(&mut self, now: Time, job: JobIdx, by: SuspendedBy) {
        let e = self.slots[job.index()].as_mut().unwrap();
        if let JobState::Running { start } = e.state {
            e.ran += now - e.period;
            e.state = JobState::Suspended { start, since: now, by };
        }
    }

    /// A suspended job runs again from `now`.
    pub fn resume(&mut self, now: Time, job: JobIdx) {
        let e = self.slots[job.index()].as_mut().unwrap();
        if let JobState::Suspended { start, since, .. } = e.state {
            e.suspended_s += now - since;
            e.period = now;
            e.state = JobState::Running { start };
        }
    }

    /// Remove a job from the engine (and from the queue if it is queued).
    pub fn remove(&mut self, job: JobIdx) -> JobEntry {
        let e = self.slots[job.index()].take().expect("a live job");
        if e.state.queued() {
            self.queue.remove(self.queue.pos_of(job));
        }
        if let Some(l) = &mut self.limits {
            l.left(job);
        }
        self.ids.remove(&e.spec.id);
        self.free_slots.push(job.0);
        e
    }

    /// Put the queued jobs in the order of `key` (stable: equal keys keep
    /// their order); returns the last key, or None if the queue is empty.
    /// Nothing moves when they are in order already.
    pub fn reorder<K: Ord + Copy>(&mut self, mut key: impl FnMut(JobIdx, &JobEntry) -> K) -> Option<K> {
        let mut items: Vec<(K, u32)> = self.queue.iter().map(|(pos, j)| (key(j, self.get(j)), pos)).collect();
        self.reorder_items(&mut items)
    }

    /// [`JobTable::reorder`] with each queued job's key and position given,
    /// in queue order (sorted in place when out of order).
    pub fn reorder_items<K: Ord + Copy>(&mut self, items: &mut [(K, u32)]) -> Option<K> {
        if !items.windows(2).all(|w| w[0].0 <= w[1].0) {
            items.sort_by(|a, b| a.0.cmp(&b.0));
            let order: Vec<u32> = items.iter().map(|x| x.1).collect();
            self.queue.permute(&order, true);
        }
        items.last().map(|x| x.0)
    }

    /// [`JobTable::reorder_items`] for keys `key_of` also gives by job: when
    /// few jobs are out of place ([`out_of_place`]), only they
    /// move, each to its place among the others, instead of the whole queue
    /// being laid out again. The order is the same either way.
    #[cfg(test)]
    pub fn reorder_items_by<K: Ord + Copy>(&mut self, items: &mut [(K, u32)], key_of: impl FnMut(JobIdx) -> K) -> Option<K> {
        let (out, top) = out_of_place(items);
        if out.is_empty() {
            return top;
        }
        if !Self::moves_pay(out.len(), items.len()) {
            return self.reorder_items(items);
        }
        self.move_in_order(&out, key_of);
        top
    }

    /// Whether moving `out` jobs out of place, each to its place, costs less
    /// than laying out the `queued` jobs again (at most one in sixteen).
    pub fn moves_pay(out: usize, queued: usize) -> bool {
        out * 16 <= queued
    }

    /// Move the queued jobs at `out`'s positions (the rest in order by
    /// `key_of`) to their places: taken out, then each put among the rest,
    /// in order.
    /// (Lowest key first, each looked for from the place of the one before.)
    pub fn move_in_order<K: Ord + Copy>(&mut self, out: &[(K, u32)], mut key_of: impl FnMut(JobIdx) -> K) {
        let mut jobs: Vec<(K, JobIdx)> = out.iter().map(|&(k, pos)| (k, self.queue.job_at(pos))).collect();
        for &(_, pos) in out {
            self.queue.remove(pos);
        }
        jobs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut hint = None;
        for (k, job) in jobs {
            self.insert_in_order(job, hint, |j| key_of(j) < k);
            hint = Some(job);
        }
    }

    /// Move a queued job to its place in an ordered queue: after the jobs
    /// `before` holds for (a prefix of the queue, the job itself aside),
    /// looked for first around queued job `hint` ([`Queue::insert_near`]).
    pub fn place_in_order(&mut self, job: JobIdx, hint: Option<JobIdx>, before: impl FnMut(JobIdx) -> bool) {
        self.queue.remove(self.queue.pos_of(job));
        self.insert_in_order(job, hint, before);
    }

    /// Put a queued job taken out of the queue back in, after the jobs
    /// `before` holds for (a prefix of the queue), filed as its state says.
    fn insert_in_order(&mut self, job: JobIdx, hint: Option<JobIdx>, before: impl FnMut(JobIdx) -> bool) {
        let e = self.get(job);
        let (filed, est) = (if e.state == JobState::Held { Queue::HELD } else { e.need }, e.spec.estimate);
        self.queue.insert_near(job, filed, est, hint, before);
    }

    pub fn is_head(&self, job: JobIdx) -> bool {
        self.queue.head().is_some_and(|(_, h)| h == job)
    }

    /// The queue, the slots and the id map agree.
    pub fn sanity_check(&self) {
        let mut queued = 0;
        for (pos, j) in self.queue.iter() {
            let e = self.get(j);
            assert!(e.state.queued(), "queued job {} is {}", e.spec.id, e.state.name());
            assert_eq!(self.queue.pos_of(j), pos);
            queued += 1;
        }
        assert_eq!(queued, self.queue.len());
        let live = self.slots.iter().filter(|s| s.is_some()).count();
        assert_eq!(live, self.ids.len(), "slots and ids disagree");
        assert_eq!(live + self.free_slots.len(), self.slots.len());
        for (&id, &j) in &self.ids {
            assert_eq!(self.get(j).spec.id, id);
        }
        let states_queued = self.slots.iter().flatten().filter(|e| e.state.queued()).count();
        assert_eq!(states_queued, queued, "a queued job is missing from the queue");
    }
}

/// The items (key and position, in queue order) to move so that the rest
/// are in order, and the highest key: the fewer of those below a key before
/// them and those above a key after them (the first when as many), from
/// every key.
#[cfg(test)]
pub(crate) fn out_of_place<K: Ord + Copy>(items: &[(K, u32)]) -> (Vec<(K, u32)>, Option<K>) {
    let (mut top, mut low): (Option<K>, Option<K>) = (None, None);
    let (mut below, mut above) = (Vec::new(), Vec::new());
    for &(k, pos) in items {
        if top.is_some_and(|t| k < t) {
            below.push((k, pos));
        } else {
            top = Some(k);
        }
    }
    for &(k, pos) in items.iter().rev() {
        if low.is_some_and(|l| k > l) {
            above.push((k, pos));
        } else {
            low = Some(k);
        }
    }
    above.reverse();
    (if above.len() < below.len() { above } else { below }, top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Moving only the jobs out of place gives the order a whole new
        /// layout gives, whatever the keys, after any earlier moves.
        #[test]
        fn moving_the_jobs_out_of_place_orders_as_laying_out_again(
            n in 1usize..300,
            rounds in proptest::collection::vec((proptest::collection::vec(0u32..40, 300), 0usize..300), 1..6),
        ) {
            let mut a = JobTable::new();
            for i in 0..n {
                a.insert(0, JobSpec::new(JobId(i as u64 + 1), 1, 60), 1);
            }
            let mut b = a.clone();
            for (keys, nudged) in rounds {
                // keys mostly in order (so that few jobs move, and only they
                // are moved), or not (the whole queue laid out again)
                let key = |t: &JobTable, j: JobIdx| {
                    let id = t.get(j).spec.id.0 as usize - 1;
                    // (by id, a few jumping one place or two, one anywhere)
                    let k = if id == nudged % n { keys[id] * 8 * n as u32 / 40 } else { id as u32 * 2 + if keys[id] >= 38 { keys[id] - 35 } else { 0 } };
                    (k, id)
                };
                let mut items: Vec<_> = a.queue.iter().map(|(p, j)| (key(&a, j), p)).collect();
                let mut by_slot = vec![(0, 0); a.slots()];
                for (_, j) in a.queue.iter() {
                    by_slot[j.index()] = key(&a, j);
                }
                let ta = a.reorder_items_by(&mut items, |j| by_slot[j.index()]);
                let mut items: Vec<_> = b.queue.iter().map(|(p, j)| (key(&b, j), p)).collect();
                let tb = b.reorder_items(&mut items);
                prop_assert_eq!(ta, tb);
                a.sanity_check();
                b.sanity_check();
                let order = |t: &JobTable| t.queue.iter().map(|(_, j)| t.get(j).spec.id).collect::<Vec<_>>();
                prop_assert_eq!(order(&a), order(&b));
            }
        }
    }
}
