//! The numeric range a workload must stay in before it reaches the engine.
//!
//! The engine (`tessera-core`) takes times and estimates only in [-2^42, 2^42]
//! seconds, so that its own sums never overflow, and rejects the rest. Everything
//! that makes times (the SWF reader, trace transforms, the generators) checks
//! against the same bound here, and says which record broke it, instead of letting
//! a value wrap or saturate on its way in. This crate does not depend on the
//! engine; `tessera-sim` asserts at compile time that the two bounds agree.

/// The largest time or duration, in seconds, a workload may carry: 2^42 s (about
/// 139,000 years), the engine's `tessera_core::MAX_TIME`.
pub const MAX_TIME: i64 = 1 << 42;

/// The largest processor count of a job: processor counts are `u32` downstream.
pub const MAX_PROCS: i64 = u32::MAX as i64;

/// The largest requested memory per processor (SWF field 10, KB): 2^41 KB, so that
/// the MiB a whole job asks for (at most 2^31 MiB per processor times 2^32 - 1
/// processors) fits an `i64`.
pub const MAX_MEMORY_KB: i64 = 1 << 41;

/// Whether `t` seconds is a time (or duration) the engine accepts.
pub fn is_time(t: i64) -> bool {
    (-MAX_TIME..=MAX_TIME).contains(&t)
}

/// `x` seconds rounded to a whole second, if it is finite and within the engine's
/// range (a float that would saturate or wrap when cast gives `None`).
pub fn whole_seconds(x: f64) -> Option<i64> {
    let r = x.round();
    (r.is_finite() && r.abs() <= MAX_TIME as f64).then_some(r as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_stay_within_two_to_the_42() {
        assert!(is_time(MAX_TIME) && is_time(-MAX_TIME) && is_time(-1));
        assert!(!is_time(MAX_TIME + 1) && !is_time(i64::MIN) && !is_time(i64::MAX));
        assert_eq!(whole_seconds(2.5), Some(3));
        assert_eq!(whole_seconds(MAX_TIME as f64), Some(MAX_TIME));
        assert_eq!(whole_seconds(MAX_TIME as f64 + 1.0), None);
        assert_eq!(whole_seconds(1e300), None);
        assert_eq!(whole_seconds(f64::NAN), None);
        assert_eq!(whole_seconds(f64::NEG_INFINITY), None);
    }
}
