//! Advance reservations, as Slurm's `scontrol create reservation` makes them:
//! nodes kept over a window, for nobody (`maint`, a maintenance window) or for
//! named users and accounts, once or every day or week.
//!
//! Semantics (Slurm's `reservations.shtml` and `reservation.c`):
//! * a job outside a reservation never runs on its nodes during its window:
//!   a job starts on a reserved node only if it ends (its limit, on the nodes it
//!   gets) by the window's start, so no job still runs when a maintenance
//!   window begins;
//! * a job inside one (`--reservation`) runs only on its nodes and only within
//!   one of its windows, all of it (its limit must fit in the window, or it is
//!   refused at submission); before the window it waits (`Reservation`);
//! * a recurring reservation is the same nodes every period; a job as long as
//!   the period can never run outside it on those nodes;
//! * a reservation that ends is removed; pending jobs it held (one that never
//!   recurs, or one deleted) lose it and are held, as Slurm holds them.
//!
//! The engine keeps reservations by id and asks the machine's placement to
//! respect the windows it materializes ([`Blocks`]). Access (users,
//! accounts) is the driver's to check when it resolves `--reservation`.

use crate::Time;
use serde::{Deserialize, Serialize};

pub mod request;
pub use request::{ResvReqError, ResvRequest};

/// How a reservation recurs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Repeat {
    #[default]
    Once,
    Daily,
    Weekly,
}

impl Repeat {
    pub fn period(self) -> Option<Time> {
        match self {
            Repeat::Once => None,
            Repeat::Daily => Some(86_400),
            Repeat::Weekly => Some(7 * 86_400),
        }
    }
}

/// Which nodes a reservation asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResvNodes {
    /// These nodes (indices in the cluster).
    List(Vec<u32>),
    /// So many nodes with every one of these features (of this partition, if
    /// given), picked in cluster order among those free over the window.
    Count { count: u32, features: Vec<String>, partition: Option<u16> },
}

/// What an operator asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationSpec {
    pub name: String,
    /// The first window: [start, end).
    pub start: Time,
    pub end: Time,
    pub nodes: ResvNodes,
    /// A maintenance window: for nobody; it may overlap other reservations.
    #[serde(default)]
    pub maint: bool,
    /// Reserve nodes even if running jobs are expected to hold them into the
    /// window (Slurm's IGNORE_JOBS); they run on.
    #[serde(default)]
    pub ignore_jobs: bool,
    #[serde(default)]
    pub repeat: Repeat,
    /// Who may run inside it (a job of a listed user, or charged to a listed
    /// account).
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub accounts: Vec<String>,
}

/// A reservation the engine holds: its spec, and the nodes it got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    pub id: u32,
    pub spec: ReservationSpec,
    pub nodes: Vec<u32>,
}

impl Reservation {
    /// The window in force at `t` or the next one: the first occurrence that
    /// ends after `t` (None: a one-off that has ended).
    pub fn window_after(&self, t: Time) -> Option<(Time, Time)> {
        let (s, e) = (self.spec.start, self.spec.end);
        if e > t {
            return Some((s, e));
        }
        let p = self.spec.repeat.period()?;
        let k = (t - e) / p + 1;
        Some((s + k * p, e + k * p))
    }

    /// Whether a job of `user`, charged to `account`, may run inside it.
    pub fn admits(&self, user: &str, account: Option<&str>) -> bool {
        !self.spec.maint
            && (self.spec.users.iter().any(|u| u == user)
                || account.is_some_and(|a| self.spec.accounts.iter().any(|x| x == a)))
    }

    /// Its windows overlap those of `o` (within the next periods of either).
    pub(crate) fn overlaps(&self, o: &Reservation, now: Time) -> bool {
        let horizon = now + 2 * self.spec.repeat.period().max(o.spec.repeat.period()).unwrap_or(0);
        let a = self.windows(now, horizon.max(self.spec.end).max(o.spec.end));
        let b = o.windows(now, horizon.max(self.spec.end).max(o.spec.end));
        a.iter().any(|x| b.iter().any(|y| x.0 < y.1 && y.0 < x.1))
    }

    /// Its windows that end after `now` and start before `until`.
    pub(crate) fn windows(&self, now: Time, until: Time) -> Vec<(Time, Time)> {
        let mut out = Vec::new();
        let mut w = self.window_after(now);
        while let Some((s, e)) = w {
            if s >= until {
                break;
            }
            out.push((s, e));
            w = self.spec.repeat.period().map(|p| (s + p, e + p));
        }
        out
    }
}

/// Why a reservation could not be made or removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ResvError {
    #[error("a reservation {0} exists already")]
    Duplicate(String),
    #[error("no reservation {0}")]
    Unknown(String),
    #[error("its window is empty or inverted ({start} to {end})")]
    Window { start: Time, end: Time },
    #[error("its window ({len} s) must be shorter than its period ({period} s)")]
    TooLong { len: Time, period: Time },
    #[error("no node {0} in the cluster")]
    UnknownNode(u32),
    #[error("it names no nodes")]
    NoNodes,
    /// (node: its index in the cluster)
    #[error("node #{node} is busy: a running job holds it until {until} (flags=ignore_jobs reserves it anyway)")]
    Busy { node: u32, until: Time },
    #[error("node #{node} is in reservation {other} over the same window (only a maintenance reservation may overlap another)")]
    Overlap { node: u32, other: String },
    #[error("only {found} of the {wanted} nodes asked for are free over the window with the features asked")]
    NotEnough { wanted: u32, found: u32 },
    #[error("the window has ended")]
    Ended,
}

/// A window kept on a node: [from, to), for reservation `resv`; `window`
/// false for the tail of a recurring reservation beyond the windows
/// materialized (nothing outside may run into it, nothing inside may run in
/// it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub from: Time,
    pub to: Time,
    pub resv: u32,
    pub window: bool,
}

/// The windows of every reservation, node by node, from an instant on: what
/// placement asks. Recurring reservations are materialized two periods ahead
/// and then kept whole (a tail): exact for every job that starts at that
/// instant (a job running past the tail would cross a window anyway).
#[derive(Clone, Debug, Default)]
pub(crate) struct Blocks {
    pub per_node: Vec<Vec<Block>>,
    /// Every boundary, sorted and unique: candidate starts.
    pub bounds: Vec<Time>,
    /// Rebuild once time reaches this (a recurring window ended).
    pub refresh_at: Time,
    pub built: bool,
}

impl Blocks {
    pub fn build(resv: &[Reservation], n: usize, now: Time) -> Blocks {
        let mut b = Blocks { per_node: vec![Vec::new(); n], bounds: Vec::new(), refresh_at: Time::MAX, built: true };
        for r in resv {
            let until = match r.spec.repeat.period() {
                Some(p) => now + 2 * p,
                None => Time::MAX,
            };
            let ws = r.windows(now, until);
            let add = |from: Time, to: Time, window: bool, b: &mut Blocks| {
                for &node in &r.nodes {
                    if let Some(v) = b.per_node.get_mut(node as usize) {
                        v.push(Block { from, to, resv: r.id, window });
                    }
                }
                b.bounds.push(from);
                if to != Time::MAX {
                    b.bounds.push(to);
                }
            };
            for &(s, e) in &ws {
                add(s, e, true, &mut b);
            }
            if let Some(p) = r.spec.repeat.period() {
                if let Some(&(_, e)) = ws.first() {
                    b.refresh_at = b.refresh_at.min(e);
                }
                let next = ws.last().map_or(r.spec.start, |w| w.0 + p);
                add(next, Time::MAX, false, &mut b);
            }
        }
        b.bounds.sort_unstable();
        b.bounds.dedup();
        b
    }

    pub fn any(&self) -> bool {
        !self.bounds.is_empty()
    }

    /// Whether node `n` may hold a job over [from, to) (`member`: the
    /// reservation it runs in).
    #[inline]
    pub fn ok(&self, n: u32, from: Time, to: Time, member: Option<u32>) -> bool {
        let Some(bs) = self.per_node.get(n as usize) else { return member.is_none() };
        let mut inside = member.is_none();
        for b in bs {
            if Some(b.resv) == member && b.window {
                inside |= b.from <= from && to <= b.to;
            } else if b.from < to && from < b.to {
                return false;
            }
        }
        inside
    }

    /// The first boundary after `t`.
    pub fn next_after(&self, t: Time) -> Option<Time> {
        let i = self.bounds.partition_point(|&b| b <= t);
        self.bounds.get(i).copied()
    }
}

mod engine {
    use super::*;
    use crate::contract::Rejection;
    use crate::engine::{Engine, Machine};
    use crate::job::{JobIdx, JobSpec, JobState};

    impl Engine {
        /// The reservations the engine holds (none on PARM).
        pub fn reservations(&self) -> &[Reservation] {
            match &self.m {
                Machine::Nodes(m) => m.reservations(),
                Machine::Parm(_) => &[],
            }
        }

        /// The reservation of this name.
        pub fn reservation(&self, name: &str) -> Option<&Reservation> {
            self.reservations().iter().find(|r| r.spec.name == name)
        }

        pub(crate) fn reserve(&mut self, now: Time, spec: ReservationSpec) -> Result<(), Rejection> {
            let name = spec.name.clone();
            let Machine::Nodes(m) = &mut self.m else {
                return Err(Rejection::Unsupported { input: "reserve", engine: "PARM" });
            };
            m.reserve(now, &self.t, spec).map(|_| ()).map_err(|why| Rejection::Reservation { name, why })
        }

        pub(crate) fn unreserve(&mut self, now: Time, name: &str) -> Result<(), Rejection> {
            let Machine::Nodes(m) = &mut self.m else {
                return Err(Rejection::Unsupported { input: "unreserve", engine: "PARM" });
            };
            let id = m.unreserve(now, name).map_err(|why| Rejection::Reservation { name: name.to_string(), why })?;
            self.orphan(&[id]);
            Ok(())
        }

        /// Before a pass: windows brought up to now; jobs waiting in a
        /// reservation that ended for good lose it and are held.
        pub(crate) fn resv_pass(&mut self, now: Time) {
            let Machine::Nodes(m) = &mut self.m else { return };
            let gone = m.refresh_blocks(now, &self.t);
            if !gone.is_empty() {
                self.orphan(&gone);
            }
        }

        /// Pending jobs of reservations `ids` lose them and are held (Slurm
        /// holds them so); a release lets them run outside.
        fn orphan(&mut self, ids: &[u32]) {
            let jobs: Vec<JobIdx> = self
                .t
                .live()
                .filter(|&j| self.t.state(j).queued() && self.t.spec(j).reservation.is_some_and(|r| ids.contains(&r)))
                .collect();
            for j in jobs {
                self.t.get_mut(j).spec.reservation = None;
                if let Machine::Nodes(m) = &mut self.m {
                    m.leave_reservation(&mut self.t, j);
                }
                if self.t.state(j) == JobState::Pending {
                    self.gates.set_user(j, true);
                    self.t.set_held(j, self.gates.closed(j));
                }
            }
        }

        /// A job that asks for a reservation: it exists and one of its
        /// windows can hold the job on its nodes.
        pub(crate) fn resv_vet(&self, spec: &JobSpec) -> Result<(), Rejection> {
            let Some(id) = spec.reservation else { return Ok(()) };
            let never = |why| Rejection::NeverFits { job: spec.id, why };
            let Machine::Nodes(m) = &self.m else { return Err(never("PARM has no reservations")) };
            let Some((r, fmax)) = m.resv_of(id) else { return Err(never("the reservation it asks for does not exist")) };
            if crate::job::scaled(spec.estimate, fmax) > r.spec.end - r.spec.start {
                return Err(never("its time limit is longer than its reservation's window"));
            }
            Ok(())
        }
    }
}
