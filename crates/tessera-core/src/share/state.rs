//! The engine's sharing state: the accounts, each association's decayed
//! usage, the Fair Tree at the last calculation, and each queued job's
//! priority and factors.
//!
//! Calculations happen at multiples of the calculation period (Slurm's
//! PriorityCalcPeriod): at the first input at or after one, usage decays to
//! that instant, running jobs are charged up to it, Fair Tree runs and every
//! queued job's priority is computed again, as of that instant. A job's
//! priority is set at submission too; between calculations it does not change,
//! so the queue only has to be put in order again after a calculation or an
//! arrival that belongs before the tail. Usage is charged at each calculation
//! for the seconds a job ran since the last one, and at its end for the rest:
//! seconds × decay over them (Slurm's `run_delta × decay^run_delta`) × its
//! rate (cores, normalized cores or canonical units held) × its QOS's usage
//! factor, to its user association.

use super::accounts::{Accounts, Ticket};
use super::fairtree::{fair_tree, FsRow, Tree};
use super::priority::{Factors, PriorityConfig, PriorityKind};
use crate::cluster::{CanonicalUnit, Cluster};
use crate::job::JobIdx;
use crate::queue::Queue;
use crate::Time;
use serde::{Deserialize, Serialize};

/// What the priority of a job depends on besides its ticket and age: the
/// machine's size and each partition's job factor, tier and canonical unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct MachineFacts {
    pub cores: u64,
    pub nodes: u64,
    /// By partition: PriorityJobFactor over the largest.
    pub part_factor: Vec<f64>,
    pub tier: Vec<u32>,
    pub unit: Vec<CanonicalUnit>,
}

impl MachineFacts {
    pub fn of(c: &Cluster) -> MachineFacts {
        let max = c.partitions.iter().map(|p| p.priority_job_factor).max().unwrap_or(0);
        MachineFacts {
            cores: c.nodes.iter().map(|n| n.cores as u64).sum(),
            nodes: c.nodes.len() as u64,
            part_factor: c.partitions.iter().map(|p| if max == 0 { 0.0 } else { p.priority_job_factor as f64 / max as f64 }).collect(),
            tier: c.partitions.iter().map(|p| p.priority_tier).collect(),
            unit: c.partitions.iter().map(|p| p.canonical_unit).collect(),
        }
    }
}

/// A job's place in a priority-ordered queue: higher tier, then higher
/// priority, then earlier submission, then lower id.
pub(crate) type Key = (std::cmp::Reverse<u32>, std::cmp::Reverse<u32>, Time, u64);

fn nan() -> f64 {
    f64::NAN
}

fn is_nan(x: &f64) -> bool {
    x.is_nan()
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobShare {
    /// Its place in the order (tier, priority, submission, id), as of the last
    /// calculation or its submission, whichever is later.
    #[serde(default)]
    pub key: Key,
    /// What its priority is made of besides age and fair share (weighted job
    /// size, partition and QOS factors less nice), its association (None: no
    /// ticket) and when it became eligible: all a calculation reads.
    #[serde(default)]
    pub fixed: f64,
    #[serde(default)]
    pub assoc: Option<u32>,
    #[serde(default)]
    pub since: Time,
    /// Its charge per second while it runs (NaN: not worked out yet; an
    /// allocation does not change while a job holds it).
    #[serde(default = "nan", skip_serializing_if = "is_nan")]
    pub rate: f64,
    /// Seconds of its run already charged.
    pub charged: Time,
    /// The Fair Tree its key was set under ([`Sharing::epoch`]): a key set
    /// under an earlier one is as [`Sharing::key_now`] works it out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub epoch: u32,
    /// While it runs, charged with its association's flow ([`Flows`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined: Option<Joined>,
}

/// A running job charged with its association's flow: since the
/// calculation at `at` (its `charged` is as of then, and it has run
/// throughout since), into association and flow `to` (None: it charges no
/// association).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Joined {
    pub at: Time,
    pub to: Option<(u32, f64)>,
}

/// Usage charged by association rather than by job: each calculation
/// charges the jobs that ran throughout the period since the last one as
/// one flow per association (the sum of their rates × QOS usage factors), so
/// its cost follows the associations with running jobs, not the jobs. A job
/// joins its flow at the first calculation it runs through, charged on its
/// own up to it, and leaves it when it ends, stops or its running changes
/// (the running list logs those), charged on its own from then. The sum is
/// the jobs' charges added in another order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Flows {
    /// By association: the flow of its members (units per second), and how
    /// many they are (none: a flow of exactly 0).
    pub rate: Vec<f64>,
    pub count: Vec<u32>,
    /// The associations with members, in the order they got a first one
    /// (some may have none since).
    pub active: Vec<u32>,
    /// The calculation members are charged up to.
    pub upto: Time,
    /// Whether the flows are kept: false until the first calculation, in a
    /// state written without them and once the accounts changed; the next
    /// calculation then looks at every running job, and has the running list
    /// log its changes.
    pub on: bool,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

/// Below this, `scale` is folded into the usage.
const SMALLEST_SCALE: f64 = 1e-150;

impl JobShare {
    /// Out of its flow, if in one, whose members are charged up to `upto`:
    /// its `charged` brought up to theirs; what it added to which flow.
    pub fn quit(&mut self, upto: Time) -> Option<Option<(u32, f64)>> {
        let jn = self.joined.take()?;
        self.charged += upto - jn.at;
        Some(jn.to)
    }

    /// Whether `next`, right after this job in the queue, stays after it
    /// whatever the calculation: same tier, association and fixed factors,
    /// eligible no earlier and submitted after it. Its age factor is then
    /// never above this job's (both eligible no earlier than submitted, as
    /// of the later of the calculation and their submission), and the
    /// priority is monotone in it, rounding and truncation included; ties go
    /// to the earlier submission. Only where two such runs meet can a
    /// calculation change the order.
    pub fn stays_before(&self, next: &JobShare) -> bool {
        self.key.0 == next.key.0
            && self.assoc == next.assoc
            && self.fixed.to_bits() == next.fixed.to_bits()
            && self.since <= next.since
            && (self.key.2, self.key.3) < (next.key.2, next.key.3)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sharing {
    pub accounts: Accounts,
    pub cfg: PriorityConfig,
    pub facts: MachineFacts,
    /// By association: usage charged to it (user associations only), over
    /// `scale`: decayed to the last calculation, it is `usage × scale`.
    /// Decay scales every usage alike, so it is applied to `scale` alone
    /// (and folded into `usage` when `scale` gets small; a state written
    /// before `scale` existed holds the decayed usage, and `scale` 1).
    pub usage: Vec<f64>,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub scale: f64,
    /// Fair Tree at the last calculation whose tree was worked out.
    pub tree: Tree,
    /// The instant of the last calculation.
    pub last_calc: Option<Time>,
    /// By job slot.
    pub jobs: Vec<JobShare>,
    /// No queued job's key is after this one (None: empty so far).
    pub tail: Option<Key>,
    /// The queue must be put in priority order before the next pass.
    pub unsorted: bool,
    /// A calculation was made whose Fair Tree and priorities are not worked
    /// out yet (they are when a pass could start a job: until then the order
    /// changes nothing); `calc_usage` is its usage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    calc_usage: Vec<f64>,
    /// The associations charged since the last calculation, and those whose
    /// `calc_usage` changed since the tree was worked out (`tracked` false,
    /// as after a read back: not known, every one is looked at).
    #[serde(skip)]
    since_calc: Vec<u32>,
    #[serde(skip)]
    for_tree: Vec<u32>,
    #[serde(skip)]
    tracked: bool,
    /// The calculation the tree and the queued jobs' priorities are as of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_at: Option<Time>,
    /// The last charge's seconds and their decay (most are a whole period).
    #[serde(skip)]
    pow_cache: (Time, f64),
    /// Reused by each calculation's reordering.
    #[serde(skip)]
    pub scratch: Vec<(Key, u32)>,
    #[serde(skip)]
    pub runs: Vec<(u32, u32)>,
    /// The highest QOS priority.
    #[serde(default)]
    pub max_qos: u32,
    /// Bumped by each working out of the priorities ([`Sharing::refresh_tree`]):
    /// the keys set before are not kept up to date, but worked out when read.
    #[serde(default)]
    pub epoch: u32,
    #[serde(default)]
    pub flows: Flows,
    /// Reused by each calculation: the running list's log.
    #[serde(skip)]
    pub log: Vec<JobIdx>,
    /// By association: the last job put in order at its submission, where
    /// the next one's place is looked for first (a hint: it may have left
    /// the queue, or its slot hold another job).
    #[serde(skip)]
    pub last_in: Vec<Option<JobIdx>>,
}

impl Sharing {
    pub fn new(accounts: Accounts, cfg: PriorityConfig, facts: MachineFacts) -> Sharing {
        let usage = vec![0.0; accounts.assocs.len()];
        let tree = Tree::of(&accounts);
        let s = Sharing { accounts, cfg, facts, usage, scale: 1.0, tree, last_calc: None, jobs: Vec::new(), tail: None, unsorted: false, stale: false, calc_usage: Vec::new(), since_calc: Vec::new(), for_tree: Vec::new(), tracked: false, tree_at: None, pow_cache: (-1, 1.0), scratch: Vec::new(), runs: Vec::new(), max_qos: 0, epoch: 0, flows: Flows::default(), log: Vec::new(), last_in: Vec::new() };
        s.with_max_qos()
    }

    fn with_max_qos(mut self) -> Sharing {
        self.max_qos = self.accounts.qos.iter().map(|q| q.priority).max().unwrap_or(0);
        self
    }

    pub fn ordered(&self) -> bool {
        self.cfg.kind == PriorityKind::Multifactor
    }

    pub fn slot(&mut self, j: JobIdx) -> &mut JobShare {
        if self.jobs.len() <= j.index() {
            self.jobs.resize(j.index() + 1, JobShare::default());
        }
        &mut self.jobs[j.index()]
    }

    /// The calculation instant at or before `now`.
    pub fn boundary(&self, now: Time) -> Time {
        now.div_euclid(self.cfg.calc_period) * self.cfg.calc_period
    }

    /// The next calculation after `now`.
    pub fn next_calc(&self, now: Time) -> Time {
        self.boundary(now) + self.cfg.calc_period
    }

    /// Whether a calculation is due at `now`.
    pub fn due(&self, now: Time) -> bool {
        self.last_calc.is_none_or(|l| self.boundary(now) > l)
    }

    /// Decay every association's usage to `at` (from the last calculation).
    pub fn decay_to(&mut self, at: Time) {
        if let Some(last) = self.last_calc {
            self.scale *= self.cfg.decay(at - last);
            if self.scale < SMALLEST_SCALE {
                // folded in: every usage changes (a tree worked out from the
                // usage before stays as it was until the next calculation)
                for u in &mut self.usage {
                    *u *= self.scale;
                }
                self.scale = 1.0;
                self.tracked = false;
            }
        }
        self.last_calc = Some(at);
    }

    /// Each association's usage decayed to the last calculation.
    pub fn decayed(&self) -> impl Iterator<Item = f64> + '_ {
        self.usage.iter().map(|u| u * self.scale)
    }

    /// Charge `secs` more seconds of a job's run at `rate` (units per second),
    /// decayed over them and then by `later` (the decay since they ended; for
    /// as many such pieces, the sum of their decays).
    pub fn charge(&mut self, j: JobIdx, ticket: Option<Ticket>, secs: Time, rate: f64, later: f64) {
        let s = self.slot(j);
        s.charged += secs;
        let Some(t) = ticket else { return };
        if secs <= 0 || !self.accounts.valid(&t) {
            return;
        }
        let factor = self.accounts.qos(t.qos).usage_factor;
        let add = self.decayed_secs(secs) * rate * factor * later;
        self.add_usage(t.assoc.0, add);
    }

    /// `secs × decay^secs`: seconds decayed over them (the power last worked
    /// out is kept; most charges are a whole period).
    fn decayed_secs(&mut self, secs: Time) -> f64 {
        if self.pow_cache.0 != secs {
            self.pow_cache = (secs, self.cfg.decay_per_second().powf(secs as f64));
        }
        secs as f64 * self.pow_cache.1
    }

    /// Add a charge, decayed to now, to association `a`'s usage.
    fn add_usage(&mut self, a: u32, add: f64) {
        if add != 0.0 {
            self.usage[a as usize] += add / self.scale;
            if self.since_calc.last() != Some(&a) {
                self.since_calc.push(a);
            }
        }
    }

    /// Job `j`, running and charged up to the calculation at `at` (the last),
    /// is charged with its association's flow from now on, at `rate` (units
    /// per second) × its QOS's usage factor.
    pub fn join(&mut self, j: JobIdx, ticket: Option<Ticket>, rate: f64, at: Time) {
        let to = ticket.filter(|t| self.accounts.valid(t)).map(|t| (t.assoc.0, rate * self.accounts.qos(t.qos).usage_factor));
        if let Some((a, part)) = to {
            let f = &mut self.flows;
            let i = a as usize;
            if f.count[i] == 0 {
                f.rate[i] = part;
                f.active.push(a);
            } else {
                f.rate[i] += part;
            }
            f.count[i] += 1;
        }
        self.slot(j).joined = Some(Joined { at, to });
    }

    /// Job `j` leaves its association's flow, if in one.
    pub fn leave(&mut self, j: JobIdx) {
        let Some(to) = self.jobs.get_mut(j.index()).and_then(|s| s.quit(self.flows.upto)) else { return };
        if let Some((a, part)) = to {
            let f = &mut self.flows;
            let i = a as usize;
            f.count[i] -= 1;
            f.rate[i] = if f.count[i] == 0 { 0.0 } else { f.rate[i] - part };
        }
    }

    /// The flows are kept from now on, with no member yet.
    pub fn start_flows(&mut self, upto: Time) {
        let n = self.usage.len();
        self.flows = Flows { rate: vec![0.0; n], count: vec![0; n], active: Vec::new(), upto, on: true };
    }

    /// Charge each flow `secs` seconds, decayed over them and by `later` (as
    /// [`Sharing::charge`] charges a job); its members are then charged up
    /// to `upto`.
    pub fn charge_flows(&mut self, secs: Time, later: f64, upto: Time) {
        let over = self.decayed_secs(secs);
        let mut active = std::mem::take(&mut self.flows.active);
        active.retain(|&a| self.flows.count[a as usize] > 0);
        for &a in &active {
            self.add_usage(a, over * self.flows.rate[a as usize] * later);
        }
        self.flows.active = active;
        self.flows.upto = upto;
    }

    /// Add usage an earlier history charged to association `a` (decayed to now).
    pub fn seed(&mut self, a: u32, add: f64) {
        if add.is_finite() && add > 0.0 && (a as usize) < self.usage.len() {
            self.usage[a as usize] += add / self.scale;
            self.since_calc.push(a);
        }
    }

    /// The calculation at `last_calc` is made: its usage is kept for Fair
    /// Tree, which runs when the order is next needed ([`Sharing::refresh_tree`]).
    pub fn calculated(&mut self) {
        if self.tracked && self.calc_usage.len() == self.usage.len() {
            for &a in &self.since_calc {
                self.calc_usage[a as usize] = self.usage[a as usize];
            }
            self.for_tree.extend_from_slice(&self.since_calc);
            if self.for_tree.len() > self.usage.len() {
                // calculations with no tree worked out pile up repeats: past
                // one per association, the next tree looks at every one
                self.for_tree.clear();
                self.tracked = false;
            }
        } else {
            self.calc_usage.clone_from(&self.usage);
            self.for_tree.clear();
        }
        self.since_calc.clear();
        self.stale = true;
    }

    /// Fair Tree on the usage of the last calculation, if not run since.
    pub fn refresh_tree(&mut self) {
        if !self.stale {
            return;
        }
        if !self.tree.fits(&self.accounts) {
            self.tree.reshape(&self.accounts);
        }
        // decay alone scales every usage alike and changes no rank
        let changed = if self.tracked { Some(&self.for_tree[..]) } else { None };
        self.tree.update(&self.calc_usage, changed);
        self.for_tree.clear();
        self.tracked = true;
        self.stale = false;
        self.tree_at = self.last_calc;
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// A queued job's key as of the tree's calculation: the one it was given
    /// since (at its submission), or its priority at the later of the
    /// calculation and its submission.
    pub fn key_now(&self, j: &JobShare) -> Key {
        match self.tree_at {
            Some(at) if j.epoch != self.epoch => (j.key.0, std::cmp::Reverse(self.priority_at(j, at.max(j.key.2))), j.key.2, j.key.3),
            _ => j.key,
        }
    }

    /// [`Sharing::key_now`], kept as the job's key under this tree (a search
    /// of the queue reads the same jobs' keys again and again).
    pub fn key_fresh(&mut self, j: JobIdx) -> Key {
        let js = &self.jobs[j.index()];
        if js.epoch == self.epoch || self.tree_at.is_none() {
            return js.key;
        }
        let key = self.key_now(js);
        let js = &mut self.jobs[j.index()];
        (js.key, js.epoch) = (key, self.epoch);
        key
    }

    /// The queued jobs to move so that the queue is in order by key as of
    /// the tree's calculation, into `out` with their keys and positions in
    /// queue order; returns the highest key. They are the fewer of the jobs
    /// below a key before them and the jobs above a key after them (the
    /// first when as many): either way the jobs left are in order, and
    /// moving each to its place among them orders the queue (the same jobs
    /// [`crate::table::out_of_place`] finds from every key). Keys are worked
    /// out only where two runs of [`JobShare::stays_before`] meet
    /// ([`Queue::runs`], which looks only where the queue changed) and next
    /// to a job found out of place: inside a run, keys rise, so once one job
    /// of a run is in order, so is the rest of it on that side.
    pub fn out_of_order(&self, queue: &mut Queue, runs: &mut Vec<(u32, u32)>, out: &mut Vec<(Key, u32)>) -> Option<Key> {
        // a key set under this tree is its own: its job starts a run
        let stays = |a: JobIdx, b: JobIdx| {
            let (x, y) = (&self.jobs[a.index()], &self.jobs[b.index()]);
            x.epoch != self.epoch && y.epoch != self.epoch && x.stays_before(y)
        };
        queue.runs(stays, runs);
        let key_at = |pos: u32| self.key_now(&self.jobs[queue.job_at(pos).index()]);
        // from the head: the jobs below the highest key before them; `top` is
        // the last job in order (whose key is the highest), its key if worked
        // out
        let mut top: Option<(u32, Option<Key>)> = None;
        for &(first, last) in runs.iter() {
            let mut pos = first;
            loop {
                let k = key_at(pos);
                let below = match &mut top {
                    Some((t, tk)) => k < *tk.get_or_insert_with(|| key_at(*t)),
                    None => false,
                };
                if !below {
                    top = Some((last, (pos == last).then_some(k)));
                    break;
                }
                out.push((k, pos));
                match queue.next_after(pos) {
                    Some(next) if pos != last => pos = next,
                    _ => break,
                }
            }
        }
        let top = top.map(|(t, tk)| tk.unwrap_or_else(|| key_at(t)));
        if out.is_empty() {
            return top;
        }
        // from the tail: the jobs above the lowest key after them, given up
        // once as many as from the head
        let mut low: Option<(u32, Option<Key>)> = None;
        let mut back: Vec<(Key, u32)> = Vec::new();
        'runs: for &(first, last) in runs.iter().rev() {
            let mut pos = last;
            loop {
                let k = key_at(pos);
                let above = match &mut low {
                    Some((l, lk)) => k > *lk.get_or_insert_with(|| key_at(*l)),
                    None => false,
                };
                if !above {
                    low = Some((first, (pos == first).then_some(k)));
                    break;
                }
                back.push((k, pos));
                if back.len() >= out.len() {
                    return top;
                }
                match queue.prev_before(pos) {
                    Some(prev) if pos != first => pos = prev,
                    _ => continue 'runs,
                }
            }
        }
        back.reverse();
        *out = back;
        top
    }

    /// The tree as `sshare` shows it: Fair Tree as of the last calculation
    /// (worked out now if the engine has not needed it yet), each
    /// association's raw usage as it stands (subtrees added up).
    pub fn view(&self) -> Vec<FsRow> {
        let mut rows = fair_tree(&self.accounts, if self.stale { &self.calc_usage } else { self.tree.usage() });
        let mut raw: Vec<f64> = self.decayed().collect();
        for i in (1..raw.len()).rev() {
            if let Some(p) = self.accounts.assocs[i].parent {
                raw[p.0 as usize] += raw[i];
            }
        }
        for (r, u) in rows.iter_mut().zip(raw) {
            r.raw_usage = u;
        }
        rows
    }

    /// A job's factors at `at`: eligible since `since`, `procs` processors on
    /// at least `nodes` nodes, in partition `part`.
    pub fn factors_of(&self, ticket: Option<Ticket>, at: Time, since: Time, procs: u32, nodes: u32, part: usize) -> Factors {
        let c = &self.cfg;
        let (fs, qos, nice) = match ticket.filter(|t| self.accounts.valid(t)) {
            Some(t) => {
                let q = if self.max_qos == 0 { 0.0 } else { self.accounts.qos(t.qos).priority as f64 / self.max_qos as f64 };
                (self.tree.fairshare(t.assoc.0 as usize), q, t.nice)
            }
            None => (0.0, 0.0, 0),
        };
        let part = self.facts.part_factor.get(part).copied().unwrap_or(0.0);
        c.combine(c.age_factor(at, since), fs, c.jobsize_factor(procs, nodes, self.facts.cores, self.facts.nodes), part, qos, nice)
    }

    /// The parts of a job's priority that do not change while it waits.
    pub fn fixed_of(&self, ticket: Option<Ticket>, procs: u32, nodes: u32, part: usize) -> (f64, Option<u32>) {
        let f = self.factors_of(ticket, 0, 0, procs, nodes, part);
        let w = &self.cfg.weights;
        let fixed = w.jobsize as f64 * f.jobsize + w.partition as f64 * f.partition + w.qos as f64 * f.qos - f.nice as f64;
        (fixed, ticket.filter(|t| self.accounts.valid(t)).map(|t| t.assoc.0))
    }

    /// A queued job's priority at `at` from what [`Sharing::fixed_of`] gave
    /// (the sum [`PriorityConfig::combine`] makes, in the same order).
    pub fn priority_at(&self, j: &JobShare, at: Time) -> u32 {
        let w = &self.cfg.weights;
        let fs = j.assoc.map_or(0.0, |a| self.tree.fairshare(a as usize));
        let sum = w.age as f64 * self.cfg.age_factor(at, j.since) + w.fairshare as f64 * fs + j.fixed;
        sum.clamp(1.0, u32::MAX as f64) as u32
    }

    /// A queued job's place in the order.
    pub fn key_of(&self, priority: u32, part: usize, submit: Time, id: u64) -> Key {
        let tier = self.facts.tier.get(part).copied().unwrap_or(0);
        (std::cmp::Reverse(tier), std::cmp::Reverse(priority), submit, id)
    }

    /// Whether a job with this key, put at the tail, is in order there; the
    /// tail's key follows it if so.
    pub fn at_tail(&mut self, key: Key) -> bool {
        if self.tail.is_some_and(|t| key < t) {
            return false;
        }
        self.tail = Some(key);
        true
    }

    /// Charge rate of an allocation: units per second.
    pub fn rate(&self, parts: impl Iterator<Item = (u32, u64, u32, f64)>, part: usize) -> f64 {
        use super::priority::UsageUnit;
        let unit = self.facts.unit.get(part).copied().unwrap_or(CanonicalUnit::CPU);
        parts
            .map(|(cores, mem, gpus, factor)| match self.cfg.usage {
                UsageUnit::Raw => cores as f64,
                UsageUnit::Normalized => cores as f64 * factor,
                UsageUnit::Canonical => unit.need(cores as u64, mem, gpus as u64) as f64 * factor,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::accounts::AssocId;
    use proptest::prelude::*;

    proptest! {
        /// Checking keys only where runs of one association meet finds the
        /// jobs out of place, and the highest key, that working out every
        /// key finds: for a queue in order at an earlier calculation (other
        /// fair shares, younger jobs), some jobs swapped, at any instant,
        /// with ages capped, priorities truncated and some keys set since;
        /// and again at a later calculation, after jobs left the queue and
        /// others were moved (the runs then looked at only where it changed).
        #[test]
        fn runs_find_the_jobs_out_of_place_that_every_key_finds(
            jobs in proptest::collection::vec((0u32..4, 0u32..2, 0i64..3, 0i64..2, 0u32..6, 0u32..2, 0u32..5000), 1..120),
            swaps in proptest::collection::vec((0usize..120, 0usize..120), 0..4),
            before in proptest::collection::vec(0u32..4, 3),
            after in proptest::collection::vec(0u32..4, 3),
            later in proptest::collection::vec(0u32..4, 3),
            (at0, dt, dt2) in (0i64..200, 0i64..150, 0i64..150),
            leave in proptest::collection::vec(0usize..120, 0..40),
            spread in any::<bool>(),
        ) {
            let acc = Accounts::from_groups([(1, 1), (1, 2), (2, 3)]);
            let cfg = PriorityConfig { kind: PriorityKind::Multifactor, max_age: 100, weights: super::super::priority::Weights { age: 7, fairshare: 3, jobsize: 0, partition: 0, qos: 0 }, ..PriorityConfig::default() };
            let facts = MachineFacts { cores: 64, nodes: 4, part_factor: vec![0.0, 0.0], tier: vec![0, 1], unit: vec![CanonicalUnit::CPU; 2] };
            let mut s = Sharing::new(acc, cfg, facts);
            let users: Vec<AssocId> = s.accounts.users().collect();
            let share = |s: &mut Sharing, of: &[u32]| for (u, sh) in users.iter().zip(of) {
                s.tree.set_fairshare(u.0 as usize, *sh as f64 / 3.0);
            };
            share(&mut s, &before);
            (s.tree_at, s.epoch) = (Some(at0), 1);
            let mut submit = 0;
            for (i, &(user, fixed, step, wait, own, tier, prio)) in jobs.iter().enumerate() {
                submit += step;
                let assoc = users.get(user as usize).map(|a| a.0);
                // one in six has its own key, set since the calculation
                let j = s.slot(JobIdx(i as u32));
                *j = JobShare { key: (std::cmp::Reverse(tier), std::cmp::Reverse(prio), submit, i as u64 + 1), fixed: fixed as f64 * 2.5, assoc, since: submit + wait * 7, rate: f64::NAN, charged: 0, epoch: u32::from(own == 0) * 2, joined: None };
            }
            let mut queue: Vec<JobIdx> = (0..jobs.len() as u32).map(JobIdx).collect();
            queue.sort_by_key(|j| s.key_now(&s.jobs[j.index()]));
            for &(a, b) in &swaps {
                let n = queue.len();
                queue.swap(a % n, b % n);
            }
            share(&mut s, &after);
            (s.tree_at, s.epoch) = (Some(at0 + dt), 2);
            let mut q = Queue::new();
            for &j in &queue {
                q.push(j, 1, 0);
            }
            if spread {
                let order: Vec<u32> = q.iter().map(|(p, _)| p).collect();
                q.permute(&order, true);
            }
            // every key worked out, in queue order
            let every = |s: &Sharing, q: &Queue| {
                let items: Vec<(Key, u32)> = q.iter().map(|(p, j)| (s.key_now(&s.jobs[j.index()]), p)).collect();
                crate::table::out_of_place(&items)
            };
            let (mut out, mut runs) = (Vec::new(), Vec::new());
            let top = s.out_of_order(&mut q, &mut runs, &mut out);
            let (want, want_top) = every(&s, &q);
            prop_assert_eq!(&out, &want);
            prop_assert_eq!(top, want_top);
            // the jobs out of place moved to their places, some jobs leave,
            // and a later calculation
            let key = |s: &Sharing, j: JobIdx| s.key_now(&s.jobs[j.index()]);
            let moving: Vec<(Key, JobIdx)> = out.iter().map(|&(k, p)| (k, q.job_at(p))).collect();
            for &(_, p) in &out {
                q.remove(p);
            }
            for (k, j) in moving {
                q.insert_sorted(j, 1, 0, |o| key(&s, o) < k);
            }
            let mut left = Vec::new();
            for &l in &leave {
                let n = q.len();
                if n > 1 {
                    let (p, j) = q.iter().nth(l % n).expect("a queued job");
                    q.remove(p);
                    left.push(j);
                }
            }
            // half of them come back at the tail
            for &j in left.iter().step_by(2) {
                q.push(j, 1, 0);
            }
            share(&mut s, &later);
            (s.tree_at, s.epoch) = (Some(at0 + dt + dt2), 3);
            out.clear();
            let top = s.out_of_order(&mut q, &mut runs, &mut out);
            let (want, want_top) = every(&s, &q);
            prop_assert_eq!(&out, &want);
            prop_assert_eq!(top, want_top);
        }
    }
}
