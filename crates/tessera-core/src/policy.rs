//! The registry of scheduling policies, looked up by name.

use std::fmt;
use std::str::FromStr;

/// A scheduling policy. Closed: adding one must break every `match` that decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PolicyKind {
    /// First come, first served: start jobs from the head of the queue while they fit.
    Fcfs,
    /// EASY backfilling: one reservation, for the head of the queue.
    Easy,
    /// Conservative backfilling: a reservation for every queued job, recomputed at
    /// every pass.
    Conservative,
    /// PARM: power-aware choice of node count and CPU cap for every job, under a
    /// power budget (needs a power-aware machine).
    Parm,
}

/// The one registry: name, policy, one-line description.
pub const POLICIES: &[(&str, PolicyKind, &str)] = &[
    ("fcfs", PolicyKind::Fcfs, "first come, first served; no backfilling"),
    ("easy", PolicyKind::Easy, "EASY backfilling: a reservation for the head job only"),
    (
        "conservative",
        PolicyKind::Conservative,
        "conservative backfilling: a reservation for every queued job",
    ),
    ("parm", PolicyKind::Parm, "PARM: node counts and CPU power caps chosen under a power budget"),
];

impl PolicyKind {
    pub fn name(self) -> &'static str {
        POLICIES.iter().find(|p| p.1 == self).map(|p| p.0).unwrap_or("?")
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy name that is not in the registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy `{name}`; known policies: {known}")]
pub struct UnknownPolicy {
    pub name: String,
    pub known: String,
}

impl FromStr for PolicyKind {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        POLICIES.iter().find(|p| p.0 == lower).map(|p| p.1).ok_or_else(|| UnknownPolicy {
            name: s.to_string(),
            known: POLICIES.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_lists_known() {
        for (name, kind, _) in POLICIES {
            assert_eq!(name.parse::<PolicyKind>().unwrap(), *kind);
            assert_eq!(kind.name(), *name);
        }
        let err = "sjf".parse::<PolicyKind>().unwrap_err();
        assert_eq!(err.to_string(), "unknown policy `sjf`; known policies: fcfs, easy, conservative, parm");
    }
}
