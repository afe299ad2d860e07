//! The node engine's invariants, asserted after every call in debug builds.

use super::*;

impl NodeEngine {
    /// Resources are conserved node by node, the running list is ordered, and
    /// every job holding resources is running, suspended or ending.
    pub fn sanity_check(&self, t: &JobTable) {
        self.check_kept();
        // set lists and own node-set requests belong to live jobs only
        let mut users = vec![0u32; self.board.sets.len()];
        let (mut own, mut binding) = (0, 0);
        for j in t.live() {
            if let Some(si) = self.demand[j.index()].sets {
                users[si as usize] += 1;
            }
            own += self.own[j.index()].is_some() as usize;
            binding += self.binds(&self.demand[j.index()]) as usize;
        }
        for (l, &u) in self.board.sets.iter().zip(&users) {
            assert_eq!(l.users, u, "set list {:?} counts {} users, live jobs {u}", l.spec, l.users);
        }
        assert_eq!(self.own_sets, own, "live jobs with their own node set");
        assert_eq!(self.mem_binding, binding, "live jobs whose memory can bind");
        let mut used = self.board.full();
        let mut in_running = 0;
        for (i, a) in self.alloc.iter().enumerate() {
            let Some(a) = a else { continue };
            let st = t.state(JobIdx(i as u32));
            assert!(
                st.start().is_some(),
                "job in slot {i} holds resources while {}",
                st.name()
            );
            used.take(a);
            if !matches!(st, JobState::Suspended { .. }) {
                in_running += 1;
            }
        }
        assert_eq!(used, self.free, "node resources are not conserved");
        let usable_free: u64 = self
            .free
            .cores
            .iter()
            .zip(&self.usable)
            .filter(|(_, &u)| u)
            .map(|(&c, _)| c as u64)
            .sum();
        assert_eq!(
            self.free_cores, usable_free,
            "free cores of the nodes that take jobs"
        );
        if self.index.built() {
            for (n, &c) in self.free.cores.iter().enumerate() {
                let set = |bits: &[u64]| bits[n / 64] >> (n % 64) & 1 == 1;
                assert!(c == 0 || set(self.index.bits()), "node {n} has a free core but is not in the index");
                for (p, ps) in self.board.parts.iter().enumerate() {
                    let want = ps.member[n] && self.usable[n];
                    assert_eq!(set(self.index.eligible(p as u32)), want, "node {n} in partition {p}'s eligible bits");
                }
            }
        }
        // every queued job is filed under its memory key, but in a state read
        // back before its first pass (keys are not saved)
        for (_, j) in t.queue.iter() {
            let (key, want) = (t.queue.key_of(j), self.filed_key(&self.demand[j.index()]));
            assert!(key == want || (key == 0 && !self.index.built()), "job {j:?} is filed under {key}, its demand under {want}");
        }
        let rs = self.running.as_slice();
        assert_eq!(
            rs.len(),
            in_running,
            "the running list and the allocations disagree"
        );
        assert!(rs
            .windows(2)
            .all(|w| (w[0].expected_end, w[0].job) < (w[1].expected_end, w[1].job)));
        for r in rs {
            let e = t.get(r.job);
            assert!(matches!(
                e.state,
                JobState::Running { .. } | JobState::Ending { .. }
            ));
            assert_eq!(e.expected_end, r.expected_end);
            let a = self.alloc[r.job.index()]
                .as_ref()
                .expect("a running job holds its allocation");
            assert_eq!(
                r.procs as u64,
                self.usable_cores(a).min(u32::MAX as u64),
                "cores a running job gives back to the queue"
            );
        }
        for (n, s) in self.status.iter().enumerate() {
            let on = self.budget.as_ref().is_none_or(|b| b.on[n]);
            assert_eq!(self.usable[n], s.up && !s.drain && on);
        }
        if let Some(b) = self.budget.as_ref().filter(|b| !b.due) {
            for n in 0..self.booked.len() {
                assert!(self.booked[n] == 0 || b.on[n], "node {n} holds a job but is not powered");
            }
            // (over it only when the nodes that hold jobs or failed already are:
            // no other node is powered then)
            let needed = |i: usize| self.booked[i] > 0 || self.status[i].power_fault;
            assert!(b.committed_w <= b.budget_w + 1e-6 || (0..b.on.len()).all(|i| !b.on[i] || needed(i)), "{} W committed over a {} W budget", b.committed_w, b.budget_w);
        }
        let mut booked = vec![0u32; self.booked.len()];
        for (i, a) in self.alloc.iter().enumerate() {
            let Some(a) = a else { continue };
            let j = JobIdx(i as u32);
            let whole = match &self.home[i] {
                Some(h) => {
                    assert!(
                        matches!(
                            t.state(j),
                            JobState::Suspended {
                                by: SuspendedBy::Preemption | SuspendedBy::Gang,
                                ..
                            }
                        ),
                        "slot {i} is parked while {}",
                        t.state(j).name()
                    );
                    assert!(
                        self.parked.contains(&j),
                        "slot {i} is parked but not listed"
                    );
                    assert!(
                        h.parts.len() == a.parts.len()
                            && h.parts.iter().zip(&a.parts).all(|(h, a)| h.node == a.node
                                && h.cores >= a.cores
                                && h.mem == a.mem
                                && h.gpus == a.gpus)
                    );
                    h
                }
                None => a,
            };
            for p in &whole.parts {
                booked[p.node as usize] += p.cores;
            }
        }
        assert_eq!(
            booked, self.booked,
            "booked cores disagree with the allocations"
        );
        assert!(
            self.parked.iter().all(|j| self.home[j.index()].is_some()),
            "a listed parked job has no allocation"
        );
        for (n, &b) in booked.iter().enumerate() {
            if self.gang_over[n] > 0 {
                assert!(
                    b <= self.board.nodes[n].cores * self.gang_over[n],
                    "node {n} is allocated beyond its gang limit"
                );
            }
        }
    }
}
