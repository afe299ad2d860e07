//! What a queued job waits for besides resources: its user's hold, its
//! dependencies (Slurm's `afterany`, `afterok`, `afternotok`, `singleton`; a
//! trace's preceding job and think time), its array's throttle and its begin
//! time. A job is `Held` in the table exactly while one of these is closed;
//! it keeps its place in the queue meanwhile. The simulator and the controller
//! get the same decisions because both submit through the engine.

use crate::job::{After, FinalState, JobId, JobIdx, JobSpec};
use crate::pending::PendingReason;
use crate::table::JobTable;
use crate::Time;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One queued job's gates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Gate {
    /// Held by its user or an operator (`Input::Hold`, `spec.hold`).
    pub user: bool,
    /// Dependencies not met yet.
    pub after: Vec<After>,
    /// Not before this instant (its begin time, or a met dependency's delay).
    pub until: Option<Time>,
    /// Waiting for a task of its array to end.
    pub throttled: bool,
    /// A job of its singleton key submitted before it is still live.
    pub second: bool,
}

impl Gate {
    fn closed(&self) -> bool {
        self.user || !self.after.is_empty() || self.until.is_some() || self.throttled || self.second
    }
}

/// An array's throttle: tasks let through (not ended) and tasks waiting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Array {
    limit: u32,
    through: u32,
    waiting: VecDeque<(JobIdx, JobId)>,
}

/// The gates of every queued job, and what opens them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Gates {
    /// By job slot.
    slots: Vec<Gate>,
    /// A live job's id → the jobs waiting for its end (slot and id: an entry
    /// whose job has left since is skipped).
    dependents: BTreeMap<JobId, Vec<(JobIdx, JobId)>>,
    arrays: BTreeMap<u64, Array>,
    /// Live jobs of each singleton key, in submission order.
    singletons: BTreeMap<u64, VecDeque<JobId>>,
    /// (instant, slot) at which a gate's `until` runs out.
    timers: BTreeSet<(Time, JobIdx)>,
    /// Jobs that ended at `ended_at`, and how: a submission at that instant may
    /// still name them.
    ended: Vec<(JobId, FinalState)>,
    ended_at: Time,
}

/// What a submission's dependencies say.
pub(crate) enum Admission {
    /// It waits (or not) as its gate says.
    Queued,
    /// A job it depends on ended as it did not ask: it can never start.
    Never,
}

impl Gates {
    /// How job `job` ended, if it ended at instant `now`.
    fn ended_now(&self, now: Time, job: JobId) -> Option<FinalState> {
        (self.ended_at == now).then(|| self.ended.iter().find(|e| e.0 == job).map(|e| e.1)).flatten()
    }

    /// Whether `after` may name jobs for job `id` submitted at `now`: each is
    /// live, or ended at this instant (the driver resolves those that ended
    /// before), and none is the job itself.
    pub fn check(&self, t: &JobTable, now: Time, id: JobId, after: &[After]) -> Result<(), JobId> {
        match after.iter().find(|a| a.job == id || (t.lookup(a.job).is_none() && self.ended_now(now, a.job).is_none())) {
            Some(a) => Err(a.job),
            None => Ok(()),
        }
    }

    /// A job entered slot `j` at `now`: set up its gates. The caller holds it
    /// in the table while [`Gates::closed`].
    pub fn attach(&mut self, t: &JobTable, now: Time, j: JobIdx, spec: &JobSpec, after: Vec<After>) -> Admission {
        let i = j.index();
        if i >= self.slots.len() {
            self.slots.resize(i + 1, Gate::default());
        }
        let mut g = Gate { user: spec.hold, ..Gate::default() };
        let mut never = false;
        for a in after {
            if t.lookup(a.job).is_some() {
                self.dependents.entry(a.job).or_default().push((j, spec.id));
                g.after.push(a);
            } else if let Some(state) = self.ended_now(now, a.job) {
                never |= !a.met_by(state);
                if a.delay > 0 {
                    g.until = g.until.max(Some(now.saturating_add(a.delay)));
                }
            }
        }
        if let Some(b) = spec.begin.filter(|&b| b > now) {
            g.until = g.until.max(Some(b));
        }
        if let Some(u) = g.until {
            self.timers.insert((u, j));
        }
        if let Some(th) = spec.throttle {
            let a = self.arrays.entry(th.array).or_default();
            a.limit = th.limit;
            if a.through < th.limit {
                a.through += 1;
            } else {
                g.throttled = true;
                a.waiting.push_back((j, spec.id));
            }
        }
        if let Some(k) = spec.singleton {
            let live = self.singletons.entry(k).or_default();
            g.second = !live.is_empty();
            live.push_back(spec.id);
        }
        self.slots[i] = g;
        if never {
            Admission::Never
        } else {
            Admission::Queued
        }
    }

    /// Whether job `j` must wait.
    pub fn closed(&self, j: JobIdx) -> bool {
        self.slots.get(j.index()).is_some_and(Gate::closed)
    }

    pub fn gate(&self, j: JobIdx) -> Option<&Gate> {
        self.slots.get(j.index())
    }

    /// An operator or the user holds (`true`) or releases a queued job.
    pub fn set_user(&mut self, j: JobIdx, hold: bool) {
        self.slots[j.index()].user = hold;
    }

    /// Job `id` (slot `j`, which `spec` describes) ended at `now` in `state`
    /// and leaves: the jobs whose gates this opens (`open`) and those it makes
    /// impossible (`never`: a dependency can no longer be met).
    pub fn leave(&mut self, t: &JobTable, now: Time, j: JobIdx, spec: &JobSpec, state: FinalState, open: &mut Vec<JobIdx>, never: &mut Vec<JobId>) {
        let g = std::mem::take(&mut self.slots[j.index()]);
        let id = spec.id;
        if self.ended_at != now {
            self.ended.clear();
            self.ended_at = now;
        }
        self.ended.push((id, state));
        let live = |d: JobIdx, did: JobId| t.lookup(did) == Some(d);
        for (d, did) in self.dependents.remove(&id).unwrap_or_default() {
            if !live(d, did) {
                continue;
            }
            let dg = &mut self.slots[d.index()];
            let Some(k) = dg.after.iter().position(|a| a.job == id) else { continue };
            let a = dg.after.swap_remove(k);
            if !a.met_by(state) {
                never.push(did);
                continue;
            }
            if a.delay > 0 {
                let u = now.saturating_add(a.delay);
                if dg.until.is_none_or(|x| x < u) {
                    dg.until = Some(u);
                    self.timers.insert((u, d));
                }
            }
            if !dg.closed() {
                open.push(d);
            }
        }
        if let Some(th) = spec.throttle {
            if let Some(a) = self.arrays.get_mut(&th.array) {
                if !g.throttled {
                    a.through -= 1;
                    while let Some((w, wid)) = a.waiting.pop_front() {
                        if !live(w, wid) {
                            continue;
                        }
                        a.through += 1;
                        let wg = &mut self.slots[w.index()];
                        wg.throttled = false;
                        if !wg.closed() {
                            open.push(w);
                        }
                        break;
                    }
                }
                if a.through == 0 && a.waiting.iter().all(|&(w, wid)| !live(w, wid)) {
                    self.arrays.remove(&th.array);
                }
            }
        }
        if let Some(k) = spec.singleton {
            if let Some(q) = self.singletons.get_mut(&k) {
                let first = q.front() == Some(&id);
                q.retain(|&x| x != id);
                if first {
                    if let Some(&next) = q.front() {
                        if let Some(n) = t.lookup(next) {
                            let ng = &mut self.slots[n.index()];
                            ng.second = false;
                            if !ng.closed() {
                                open.push(n);
                            }
                        }
                    }
                }
                if q.is_empty() {
                    self.singletons.remove(&k);
                }
            }
        }
    }

    /// Gates whose instant has come by `now`: the jobs they open.
    pub fn due(&mut self, now: Time, open: &mut Vec<JobIdx>) {
        while let Some(&(at, j)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            if let Some(g) = self.slots.get_mut(j.index()) {
                if g.until == Some(at) {
                    g.until = None;
                    if !g.closed() {
                        open.push(j);
                    }
                }
            }
        }
    }

    /// The next instant a gate opens by itself.
    pub fn next_timer(&self) -> Option<Time> {
        self.timers.first().map(|t| t.0)
    }

    /// Why a held job waits (its gates, the user's hold first).
    pub fn reason(&self, j: JobIdx) -> Option<PendingReason> {
        let g = self.slots.get(j.index())?;
        Some(if g.user {
            PendingReason::Held
        } else if !g.after.is_empty() || g.second {
            PendingReason::Dependency
        } else if g.throttled {
            PendingReason::ArrayLimit
        } else if let Some(at) = g.until {
            PendingReason::BeginTime { at }
        } else {
            return None;
        })
    }

    /// Unmet dependencies of a queued job.
    pub fn waits_for(&self, j: JobIdx) -> &[After] {
        self.slots.get(j.index()).map_or(&[], |g| &g.after)
    }

    /// Every queued job is held exactly while one of its gates is closed or
    /// a limit holds it.
    pub fn sanity_check(&self, t: &JobTable) {
        for j in t.live() {
            let st = t.state(j);
            if st.queued() {
                let limit = t.limits.as_ref().and_then(|l| l.held(j));
                assert_eq!(st == crate::job::JobState::Held, self.closed(j) || limit.is_some(), "job {} is {} but its gates are {:?} and limit {limit:?}", t.spec(j).id, st.name(), self.slots.get(j.index()));
            }
        }
    }
}
