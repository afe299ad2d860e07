//! Natural order for names: runs of digits compare as numbers, so user2 comes
//! before user10 and user100 (text order puts user10 and user100 first).

use std::cmp::Ordering;

/// `a` against `b` in natural order; names equal in it (`u01`, `u1`) fall back
/// to text order, so the order is total.
pub fn cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let n = x.iter().take_while(|b| b.is_ascii_digit()).count();
                let m = y.iter().take_while(|b| b.is_ascii_digit()).count();
                // compare the numbers without parsing (any length): drop leading
                // zeros, then the longer is larger, then digit by digit
                let (p, q) = (trim_zeros(&x[..n]), trim_zeros(&y[..m]));
                let o = p.len().cmp(&q.len()).then_with(|| p.cmp(q));
                if o != Ordering::Equal {
                    return o;
                }
                x = &x[n..];
                y = &y[m..];
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let z = d.iter().take_while(|&&b| b == b'0').count();
    &d[z..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_compare_as_numbers() {
        let mut v = vec!["user100", "user10", "user2", "user1", "alice", "user02", "user", "user10a", "user10b", "u99999999999999999999999", "u100000000000000000000000"];
        v.sort_by(|a, b| cmp(a, b));
        assert_eq!(v, vec!["alice", "u99999999999999999999999", "u100000000000000000000000", "user", "user1", "user02", "user2", "user10", "user10a", "user10b", "user100"]);
    }
}
