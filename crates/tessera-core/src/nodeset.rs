//! Node sets, with the semantics of Moab's NODESET parameters: a parallel job runs
//! at the pace of its slowest node, so it may ask for a homogeneous set of nodes.
//!
//! A request names a policy (ONEOF, ANYOF, FIRSTOF), an attribute along which sets
//! are built (FEATURE, PROCSPEED, MEMORY, NETWORK) and optionally the list of
//! attribute values to build sets from, in priority order. Site and partition
//! defaults add ISOPTIONAL, TOLERANCE, PRIORITYTYPE and NODESETPLUS.
//!
//! Per-job syntaxes accepted by [`NodeSetSpec::parse_job`]:
//! * `ONEOF:FEATURE:switchA,switchB` (Moab `--nodeset`, also `:`-separated lists);
//! * `nodeset=ONEOF:FEATURE:switchA:switchB` (TORQUE resource-manager extension);
//! * `[rack1|rack2]` (Slurm `--constraint` matching OR: all nodes must share one of
//!   the features, i.e. ONEOF:FEATURE:rack1,rack2); `rack1|rack2` without brackets
//!   lets each node have either (ANYOF:FEATURE:rack1,rack2).

use std::fmt;
use std::str::FromStr;

/// How sets are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SetPolicy {
    /// All nodes from a single set.
    OneOf,
    /// Nodes from any of the listed sets (their union).
    AnyOf,
    /// All nodes from the first set, in list order, that can hold the job.
    FirstOf,
}

/// The node attribute sets are built along.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SetAttribute {
    Feature,
    ProcSpeed,
    Memory,
    Network,
}

/// How the best of several usable sets is chosen (Moab NODESETPRIORITYTYPE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SetPriority {
    /// The first usable set in list order.
    FirstFit,
    /// The usable set with the fewest free resources (keeps large sets whole).
    BestFit,
    /// The usable set with the most free resources.
    WorstFit,
    /// The set whose slowest allocated node is fastest (PROCSPEED sets).
    BestResource,
    /// The set that wastes least capacity, given that the job runs at the pace of
    /// its slowest node: Σ cores × (1/f_min − 1/f_node) per reference second.
    MinLoss,
    /// Avoid sets holding a node with negative affinity (see `docs/heterogeneity.md`).
    Affinity,
}

/// NODESETPLUS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SetPlus {
    None,
    /// When no single set can hold the job, span sets evenly.
    SpanEvenly,
    /// Wait for a single set up to the site's NODESETDELAY, then span evenly.
    Delay,
}

/// A complete node-set request.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeSetSpec {
    pub policy: SetPolicy,
    pub attribute: SetAttribute,
    /// Attribute values to build sets from, in order; empty: every value present.
    pub list: Vec<String>,
    /// ISOPTIONAL: run outside a set rather than wait for one.
    pub optional: bool,
    /// TOLERANCE (PROCSPEED only): (max speed - min speed) / min speed <= tolerance.
    pub tolerance: Option<f64>,
    pub priority: SetPriority,
    pub plus: SetPlus,
}

/// A node-set string or option that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node set {}: {message}", crate::quote::bounded(input))]
pub struct NodeSetError {
    pub input: String,
    pub message: String,
}

fn err(input: &str, message: impl Into<String>) -> NodeSetError {
    NodeSetError { input: input.to_string(), message: message.into() }
}

macro_rules! keyword_enum {
    ($t:ty, $what:literal, $( $name:literal => $v:expr ),+ $(,)?) => {
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s.trim().to_ascii_uppercase().as_str() {
                    $( $name => Ok($v), )+
                    _ => Err(format!("unknown {} {}; expected one of {}", $what, crate::quote::bounded(s.trim()), [$($name),+].join(", "))),
                }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                $( if *self == $v { return f.write_str($name); } )+
                Ok(())
            }
        }
    };
}

keyword_enum!(SetPolicy, "node set policy", "ONEOF" => SetPolicy::OneOf, "ANYOF" => SetPolicy::AnyOf, "FIRSTOF" => SetPolicy::FirstOf);
keyword_enum!(SetAttribute, "node set attribute", "FEATURE" => SetAttribute::Feature, "PROCSPEED" => SetAttribute::ProcSpeed, "MEMORY" => SetAttribute::Memory, "NETWORK" => SetAttribute::Network);
keyword_enum!(SetPriority, "node set priority type", "FIRSTFIT" => SetPriority::FirstFit, "BESTFIT" => SetPriority::BestFit, "WORSTFIT" => SetPriority::WorstFit, "BESTRESOURCE" => SetPriority::BestResource, "MINLOSS" => SetPriority::MinLoss, "AFFINITY" => SetPriority::Affinity);
keyword_enum!(SetPlus, "NODESETPLUS value", "NONE" => SetPlus::None, "SPANEVENLY" => SetPlus::SpanEvenly, "DELAY" => SetPlus::Delay);

impl NodeSetSpec {
    /// A request with Moab's defaults for everything but policy, attribute and list.
    pub fn new(policy: SetPolicy, attribute: SetAttribute, list: Vec<String>) -> Self {
        NodeSetSpec {
            policy,
            attribute,
            list,
            optional: false,
            tolerance: None,
            priority: SetPriority::FirstFit,
            plus: SetPlus::None,
        }
    }

    /// Parse `POLICY:ATTRIBUTE[:v1,v2…]` (values separated by `,` or `:`).
    pub fn parse_moab(s: &str) -> Result<Self, NodeSetError> {
        let mut parts = s.trim().splitn(3, ':');
        let policy = parts.next().unwrap_or("").parse::<SetPolicy>().map_err(|m| err(s, m))?;
        let attribute = parts
            .next()
            .ok_or_else(|| err(s, "expected POLICY:ATTRIBUTE[:VALUES], e.g. ONEOF:FEATURE:switchA,switchB"))?
            .parse::<SetAttribute>()
            .map_err(|m| err(s, m))?;
        let list: Vec<String> = parts
            .next()
            .map(|v| v.split([',', ':']).map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect())
            .unwrap_or_default();
        if attribute == SetAttribute::ProcSpeed || attribute == SetAttribute::Memory {
            if let Some(bad) = list.iter().find(|v| v.parse::<f64>().is_err()) {
                return Err(err(s, format!("{} is not a number ({attribute} values are numbers)", crate::quote::bounded(bad))));
            }
        }
        Ok(NodeSetSpec::new(policy, attribute, list))
    }

    /// Parse a per-job request in any of the three syntaxes (see the module docs).
    pub fn parse_job(s: &str) -> Result<Self, NodeSetError> {
        let t = s.trim();
        if let Some(rest) = t.strip_prefix("nodeset=") {
            return Self::parse_moab(rest);
        }
        if t.contains(':') {
            return Self::parse_moab(t);
        }
        // Slurm constraint
        let (bracketed, body) = match t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            Some(inner) => (true, inner),
            None => (false, t),
        };
        if body.contains('&') || body.contains('*') || body.contains('(') {
            return Err(err(s, "only Slurm matching-OR constraints (`[a|b]`) and `a|b` are node sets"));
        }
        let list: Vec<String> = body.split('|').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
        if list.is_empty() {
            return Err(err(s, "no feature named"));
        }
        // a feature is a name (letters, digits, `_`, `-`, `.`): `a,b` is no feature
        if let Some(bad) = list.iter().find(|f| !f.chars().all(|c| c.is_alphanumeric() || "_-.".contains(c))) {
            return Err(err(s, format!("{} is not a feature name (letters, digits, `_`, `-` and `.`)", crate::quote::bounded(bad))));
        }
        let policy = if bracketed { SetPolicy::OneOf } else { SetPolicy::AnyOf };
        Ok(NodeSetSpec::new(policy, SetAttribute::Feature, list))
    }

    /// Take the site's options (ISOPTIONAL, TOLERANCE, PRIORITYTYPE, NODESETPLUS) for
    /// a request that named only policy, attribute and list.
    pub fn with_site_options(mut self, site: Option<&NodeSetSpec>) -> Self {
        if let Some(site) = site {
            self.optional = site.optional;
            self.priority = site.priority;
            self.plus = site.plus;
            if self.attribute == SetAttribute::ProcSpeed {
                self.tolerance = site.tolerance;
            }
        }
        self
    }

    /// Check the combinations Moab rejects.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(t) = self.tolerance {
            if self.attribute != SetAttribute::ProcSpeed {
                return Err("TOLERANCE applies to PROCSPEED node sets only".into());
            }
            if !(t.is_finite() && t >= 0.0) {
                return Err(format!("TOLERANCE must be a number >= 0, found {t}"));
            }
        }
        if self.priority == SetPriority::BestResource && self.attribute != SetAttribute::ProcSpeed {
            return Err("PRIORITYTYPE BESTRESOURCE applies to PROCSPEED node sets only".into());
        }
        Ok(())
    }
}

impl fmt::Display for NodeSetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.policy, self.attribute)?;
        if !self.list.is_empty() {
            write!(f, ":{}", self.list.join(","))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzzer (fuzz/, target nodeset): `ONEOF,FEATack2` was taken
    /// as one feature whose name holds a comma, and printed back as two.
    #[test]
    fn a_feature_name_is_a_name() {
        assert!(NodeSetSpec::parse_job("ONEOF,FEATack2").is_err());
        assert!(NodeSetSpec::parse_job("[ib-2|eth.1|x_3]").is_ok());
    }

    /// Found by the fuzzer (target nodeset): an unknown policy, attribute or a
    /// non-numeric value was quoted whole, so 4 KB of garbage came back in the error.
    #[test]
    fn a_bad_keyword_or_value_is_quoted_bounded() {
        let junk = "Ob|| ".repeat(1000);
        for spec in [format!("{junk}:FEATURE:a"), format!("ONEOF:{junk}:a"), format!("ONEOF:PROCSPEED:{junk}")] {
            let e = NodeSetSpec::parse_job(&spec).unwrap_err().to_string();
            assert!(e.len() < 400, "{} bytes: {e}", e.len());
            assert!(e.contains(" bytes)"), "the value is cut: {e}");
        }
    }

    #[test]
    fn three_syntaxes() {
        let moab = NodeSetSpec::parse_job("ONEOF:FEATURE:switchA,switchB").unwrap();
        let torque = NodeSetSpec::parse_job("nodeset=ONEOF:FEATURE:switchA:switchB").unwrap();
        let slurm = NodeSetSpec::parse_job("[switchA|switchB]").unwrap();
        assert_eq!(moab, torque);
        assert_eq!(moab, slurm);
        assert_eq!(moab.list, vec!["switchA", "switchB"]);
        let any = NodeSetSpec::parse_job("ib|opa").unwrap();
        assert_eq!((any.policy, any.attribute), (SetPolicy::AnyOf, SetAttribute::Feature));
        let p = NodeSetSpec::parse_job("oneof:procspeed").unwrap();
        assert_eq!((p.policy, p.attribute, p.list.len()), (SetPolicy::OneOf, SetAttribute::ProcSpeed, 0));
        assert_eq!(p.to_string(), "ONEOF:PROCSPEED");
    }

    #[test]
    fn errors_name_the_input_and_the_choices() {
        let e = NodeSetSpec::parse_job("SOMEOF:FEATURE:a").unwrap_err().to_string();
        assert_eq!(e, "node set `SOMEOF:FEATURE:a`: unknown node set policy `SOMEOF`; expected one of ONEOF, ANYOF, FIRSTOF");
        let e = NodeSetSpec::parse_job("ONEOF:COLOUR").unwrap_err().to_string();
        assert!(e.contains("expected one of FEATURE, PROCSPEED, MEMORY, NETWORK"), "{e}");
        let e = NodeSetSpec::parse_job("ANYOF:PROCSPEED:fast").unwrap_err().to_string();
        assert!(e.contains("`fast` is not a number"), "{e}");
        let e = NodeSetSpec::parse_job("a&b").unwrap_err().to_string();
        assert!(e.contains("matching-OR"), "{e}");
        let mut s = NodeSetSpec::parse_job("ONEOF:FEATURE").unwrap();
        s.tolerance = Some(0.5);
        assert!(s.validate().unwrap_err().contains("PROCSPEED"));
    }
}
