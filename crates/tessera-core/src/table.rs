//! The job table: the jobs the engine holds (queued, running, suspended or
//! ending), in reused slots, with the pending queue in queue order.
//!
//! A job leaves the table when it ends; its slot is reused, so memory follows the
//! live jobs, not the history. Job ids map to slots through a table with a
//! fixed hash (no seed) that is read only by id: whatever visits every job goes
//! in id order ([`JobTable::live`]), and a saved table lists the map in id
//! order.

use crate::job::{JobId, JobIdx, JobSpec, JobState, SuspendedBy};
use crate::queue::Queue;
use crate::Time;
use serde::{Deserialize, Serialize};

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
    #[serde(with = "in_id_order")]
    ids: IdMap,
    pub queue: Queue,
    /// Association and QOS limits, where the accounts set any: the jobs'
    /// starts and ends count against them as the table sees them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) limits: Option<Box<crate::share::LimitBook>>,
}

impl JobTable {
    pub fn new() -> Self {
        JobTable { slots: Vec::new(), free_slots: Vec::new(), ids: IdMap::default(), queue: Queue::new(), limits: None }
    }

    /// Jobs held (queued, running, suspended, ending).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Slots allocated (the high-water mark of live jobs).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Every job the table holds, in id order.
    pub fn live(&self) -> impl Iterator<Item = JobIdx> {
        self.ids.sorted().into_iter().map(|(_, j)| j)
    }

    pub fn lookup(&self, id: JobId) -> Option<JobIdx> {
        self.ids.get(id)
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
        let state = if held { JobState::Held } else { JobState::Pending };
        if e.state == state {
            // filed as it is already: no edit of the queue
            return;
        }
        e.state = state;
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
        self.ids.remove(e.spec.id);
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
        for (id, j) in self.ids.iter() {
            assert_eq!(self.get(j).spec.id, id);
        }
        let states_queued = self.slots.iter().flatten().filter(|e| e.state.queued()).count();
        assert_eq!(states_queued, queued, "a queued job is missing from the queue");
    }
}

/// Job ids to slots: an open-addressing table (linear probing, Fibonacci
/// hashing, deletion by shifting back), read only by id. Nothing visits it
/// in its own order: [`JobTable::live`] sorts, and a saved table lists it in
/// id order. It replaced an ordered map, whose lookups, insertions and
/// removals (one each per job) cost a replay more than its queue did.
#[derive(Debug, Clone, Default)]
struct IdMap {
    /// One (id, slot) per bucket, [`EMPTY_BUCKET`] where none; a power of two
    /// buckets, at most half of them full (none until the first insertion).
    buckets: Vec<(JobId, JobIdx)>,
    len: usize,
}

/// The slot of an empty bucket of an [`IdMap`].
const EMPTY_BUCKET: JobIdx = JobIdx(u32::MAX);

impl IdMap {
    fn len(&self) -> usize {
        self.len
    }

    /// The bucket `id` probes from: the top bits of its product with 2^64
    /// over the golden ratio.
    fn home(&self, id: JobId) -> usize {
        let bits = self.buckets.len().trailing_zeros();
        (id.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }

    /// Where `id` is, or the empty bucket where it would go.
    fn bucket(&self, id: JobId) -> usize {
        let mask = self.buckets.len() - 1;
        let mut b = self.home(id);
        while self.buckets[b].1 != EMPTY_BUCKET && self.buckets[b].0 != id {
            b = (b + 1) & mask;
        }
        b
    }

    fn get(&self, id: JobId) -> Option<JobIdx> {
        if self.len == 0 {
            return None;
        }
        let (_, j) = self.buckets[self.bucket(id)];
        (j != EMPTY_BUCKET).then_some(j)
    }

    /// Map `id` to `j` (in place of what it mapped to).
    fn insert(&mut self, id: JobId, j: JobIdx) {
        debug_assert!(j != EMPTY_BUCKET);
        if (self.len + 1) * 2 > self.buckets.len() {
            let size = (self.buckets.len() * 2).max(16);
            let old = std::mem::replace(&mut self.buckets, vec![(JobId(0), EMPTY_BUCKET); size]);
            for (k, v) in old.into_iter().filter(|e| e.1 != EMPTY_BUCKET) {
                let b = self.bucket(k);
                self.buckets[b] = (k, v);
            }
        }
        let b = self.bucket(id);
        self.len += (self.buckets[b].1 == EMPTY_BUCKET) as usize;
        self.buckets[b] = (id, j);
    }

    fn remove(&mut self, id: JobId) -> Option<JobIdx> {
        if self.len == 0 {
            return None;
        }
        let mask = self.buckets.len() - 1;
        let mut hole = self.bucket(id);
        let j = self.buckets[hole].1;
        if j == EMPTY_BUCKET {
            return None;
        }
        self.len -= 1;
        // shift back the entries after the hole that probed past it
        let mut b = hole;
        loop {
            b = (b + 1) & mask;
            let (k, v) = self.buckets[b];
            if v == EMPTY_BUCKET {
                break;
            }
            let home = self.home(k);
            // the entry may fill the hole unless its home lies after the hole
            // and up to it (cyclically)
            if (b.wrapping_sub(home) & mask) >= (b.wrapping_sub(hole) & mask) {
                self.buckets[hole] = (k, v);
                hole = b;
            }
        }
        self.buckets[hole].1 = EMPTY_BUCKET;
        Some(j)
    }

    /// Every (id, slot), in no particular order.
    fn iter(&self) -> impl Iterator<Item = (JobId, JobIdx)> + '_ {
        self.buckets.iter().copied().filter(|e| e.1 != EMPTY_BUCKET)
    }

    /// Every (id, slot), in id order: how anything that visits every job
    /// sees them.
    fn sorted(&self) -> Vec<(JobId, JobIdx)> {
        let mut v: Vec<(JobId, JobIdx)> = self.iter().collect();
        v.sort_unstable();
        v
    }
}

/// The id map saved as a map in id order, as it always was (an ordered map
/// before), and read back from one.
mod in_id_order {
    use super::{IdMap, JobId, JobIdx};
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(ids: &IdMap, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(ids.sorted())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<IdMap, D::Error> {
        let mut ids = IdMap::default();
        for (id, j) in BTreeMap::<JobId, JobIdx>::deserialize(d)? {
            ids.insert(id, j);
        }
        Ok(ids)
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
    use std::collections::BTreeMap;

    proptest! {
        /// The id map holds what an ordered map holds through insertions
        /// and removals: ids in runs (as drivers number jobs), spread out,
        /// and colliding (multiples of a power of two), with growth and the
        /// probe sequences wrapping around the end of the table.
        #[test]
        fn the_id_map_agrees_with_an_ordered_map(
            ops in proptest::collection::vec((0u8..3, 0u64..200), 1..2000),
            stride in prop_oneof![Just(1u64), Just(1u64 << 20), Just(0x9e37_79b9u64), Just(1u64 << 63)],
        ) {
            let mut m = IdMap::default();
            let mut want = BTreeMap::new();
            for (i, (op, k)) in ops.into_iter().enumerate() {
                let id = JobId(k.wrapping_mul(stride));
                match op {
                    0 | 1 => {
                        m.insert(id, JobIdx(i as u32));
                        want.insert(id, JobIdx(i as u32));
                    }
                    _ => prop_assert_eq!(m.remove(id), want.remove(&id)),
                }
                prop_assert_eq!(m.len(), want.len());
                prop_assert_eq!(m.get(id), want.get(&id).copied());
            }
            for k in 0..200u64 {
                let id = JobId(k.wrapping_mul(stride));
                prop_assert_eq!(m.get(id), want.get(&id).copied());
            }
            let mut all: Vec<_> = m.iter().collect();
            all.sort();
            prop_assert_eq!(all, want.into_iter().collect::<Vec<_>>());
        }

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
