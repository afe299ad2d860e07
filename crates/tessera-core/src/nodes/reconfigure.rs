//! The engine on a changed cluster ([`crate::Input::Reconfigure`]): the same jobs,
//! queued in the same order and running where they run, on the nodes and
//! partitions of the new cluster, matched by name. It refuses, leaving the
//! engine as it was, whenever a job would lose its place: a job holding a
//! node that goes away or no longer has room for it, a job whose partition
//! goes away, a job that could never run on the new cluster.

use super::{Allocation, NodeEngine};
use crate::cluster::Reconfiguration;
use crate::job::JobState;
use crate::queue::Queue;
use crate::running::{Running, RunningJob};
use crate::table::JobTable;

impl NodeEngine {
    /// This engine's jobs on `r`'s cluster, or why they cannot move there.
    pub(crate) fn reconfigured(
        &self,
        old_t: &JobTable,
        r: &Reconfiguration,
    ) -> Result<(JobTable, NodeEngine), String> {
        let mut m = NodeEngine::new(self.policy, &r.cluster);
        m.shortcuts = self.shortcuts;
        m.dropped_nodesets = self.dropped_nodesets;
        let mut t = old_t.clone();
        let slots = t.slots();
        m.demand = vec![Default::default(); slots];
        m.own = vec![None; slots];
        m.alloc = vec![None; slots];
        m.home = vec![None; slots];
        let moved = |a: &Allocation, id| -> Result<Allocation, String> {
            let mut a = a.clone();
            for p in &mut a.parts {
                p.node = r.nodes[p.node as usize].ok_or_else(|| {
                    format!(
                        "job {id} holds node {}, which the new cluster does not have (drain the node and let its jobs end, or cancel them, first)",
                        r.old_nodes[p.node as usize]
                    )
                })?;
            }
            Ok(a)
        };
        let jobs: Vec<_> = t.live().collect();
        for j in jobs {
            let i = j.index();
            let e = t.get_mut(j);
            let id = e.spec.id;
            if let Some(p) = e.spec.partition {
                let q = r.partitions[p as usize].ok_or_else(|| {
                    format!(
                        "job {id} is in partition {}, which the new cluster does not have",
                        r.old_partitions[p as usize]
                    )
                })?;
                e.spec.partition = Some(q as u16);
            }
            let own = self.own[i].as_ref();
            // the nodes it names, by their new indices (one the new cluster
            // lacks: it can no longer run as asked)
            let old = &self.demand[i];
            let include: Option<Vec<u32>> = old.include().iter().map(|&n| r.nodes[n as usize]).collect();
            let Some(include) = include else {
                return Err(format!("job {id} asks for a node (-w) the new cluster does not have"));
            };
            let choice = crate::NodeChoice { include, exclude: old.exclude().iter().filter_map(|&n| r.nodes[n as usize]).collect() };
            let (d, need, _) = m.admit(&e.spec, own, &choice, self.demand[i].submit).map_err(|w| {
                format!(
                    "job {id} could never run on the new cluster: {}",
                    w.why()
                )
            })?;
            e.need = need;
            if e.state.queued() {
                let q = if e.state == JobState::Held { Queue::HELD } else { need };
                let est = e.spec.estimate;
                t.queue.set(t.queue.pos_of(j), q, est);
            }
            let d_shaped = d.shaped();
            m.mem_binding += m.binds(&d) as usize;
            t.queue.set_key(j, m.filed_key(&d));
            m.demand[i] = d;
            m.own[i] = own.cloned();
            m.own_sets += own.is_some() as usize;
            m.shaped += d_shaped as usize;
            m.alloc[i] = self.alloc[i].as_ref().map(|a| moved(a, id)).transpose()?;
            m.home[i] = self.home[i].as_ref().map(|a| moved(a, id)).transpose()?;
        }
        // every node has room for what its jobs hold
        let mut used = vec![(0u64, 0u64, 0u64); m.board.nodes.len()];
        let mut booked = vec![0u32; m.board.nodes.len()];
        for (i, a) in m.alloc.iter().enumerate() {
            let Some(a) = a else { continue };
            for p in &a.parts {
                let u = &mut used[p.node as usize];
                *u = (u.0 + p.cores as u64, u.1 + p.mem, u.2 + p.gpus as u64);
            }
            for p in &m.home[i].as_ref().unwrap_or(a).parts {
                booked[p.node as usize] += p.cores;
            }
        }
        for (n, (u, &b)) in used.iter().zip(&booked).enumerate() {
            let ns = &m.board.nodes[n];
            // a gang node books up to `gang_over` times its cores (a parked job's
            // claim on a suspend node is not bounded so)
            let over_booked = m.gang_over[n] > 0 && b as u64 > ns.cores as u64 * m.gang_over[n] as u64;
            if u.0 > ns.cores as u64 || u.1 > ns.mem || u.2 > ns.gpus as u64 || over_booked {
                return Err(format!(
                    "node {} would have {} cores, {} MB and {} GPUs, but its jobs hold {} cores, {} MB and {} GPUs",
                    r.cluster.nodes[n].name, ns.cores, ns.mem, ns.gpus, u.0.max(b as u64), u.1, u.2
                ));
            }
        }
        for a in m.alloc.iter().flatten() {
            m.free.take(a);
        }
        m.booked = booked;
        // nodes keep their state; an added node takes jobs (its driver says otherwise)
        for (n, o) in r.old_index().into_iter().enumerate() {
            if let Some(o) = o {
                m.status[n] = self.status[o as usize].clone();
            }
            m.usable[n] = m.status[n].up && !m.status[n].drain;
        }
        m.usable_nodes = m.usable.iter().filter(|&&u| u).count();
        m.index = super::index::FreeIndex::build(&m.board, &m.free, &m.usable, &m.index);
        m.free_cores = m.free.cores.iter().zip(&m.usable).filter(|(_, &u)| u).map(|(&c, _)| c as u64).sum();
        m.parked = self.parked.clone();
        m.gang_next = if m.gang { self.gang_next } else { None };
        m.last_backfill = m.backfill_every.and(self.last_backfill);
        let mut running = Running::default();
        for rj in self.running.as_slice() {
            let a = m.alloc[rj.job.index()].as_ref().expect("a running job holds its allocation");
            let procs = m.usable_cores(a).min(u32::MAX as u64) as u32;
            running.insert(RunningJob { procs, ..*rj });
        }
        running.carry_log(&self.running);
        m.running = running;
        // reservations keep their nodes, by their new indices
        for resv in &self.resvs {
            let mut resv = resv.clone();
            for n in &mut resv.nodes {
                *n = r.nodes[*n as usize].ok_or_else(|| {
                    format!("node {} is in reservation {}; the new cluster does not have it (delete the reservation first)", r.old_nodes[*n as usize], resv.spec.name)
                })?;
            }
            resv.spec.nodes = crate::resv::ResvNodes::List(resv.nodes.clone());
            m.resvs.push(resv);
        }
        m.next_resv = self.next_resv;
        Ok((t, m))
    }
}
