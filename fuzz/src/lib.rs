//! What every fuzz target checks besides "no panic": an error message is one
//! bounded line's worth, whatever the input's size (errors quote a bounded
//! prefix of a bad value, never the value whole).

/// The longest error message any parser may produce.
pub const MAX_ERROR: usize = 4096;

/// Panics (a finding) if `e`'s message is longer than [`MAX_ERROR`].
pub fn bounded_error(e: &dyn std::fmt::Display) {
    let m = e.to_string();
    assert!(m.len() <= MAX_ERROR, "an error message of {} bytes: {}…", m.len(), &m[..m.char_indices().nth(200).map_or(m.len(), |c| c.0)]);
}

/// The small cluster the request and protocol targets run against.
pub fn cluster() -> tessera_core::Cluster {
    tessera_core::Cluster::from_toml(include_str!("../../examples/clusters/default.toml"), "default.toml").expect("the default cluster")
}
