//! Quoting a bad value in an error message: at most [`LIMIT`] characters of it,
//! control and non-UTF-8 bytes escaped, so that a 1 GiB line of garbage or a binary
//! file gives a one-line error, not the garbage back.

/// The most characters of a value an error quotes.
pub const LIMIT: usize = 64;

/// `` `value` ``, or `` `first LIMIT characters…` (N bytes) `` for a longer one;
/// control characters escaped (`\n`, `\u{1b}`).
pub fn bounded(v: &str) -> String {
    let mut s = String::from("`");
    let mut shown = 0;
    for c in v.chars() {
        if shown == LIMIT {
            return format!("{s}…` ({} bytes)", v.len());
        }
        if c.is_control() {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
        shown += 1;
    }
    s.push('`');
    s
}

/// [`bounded`] for raw bytes (invalid UTF-8 shown as U+FFFD).
pub fn bounded_bytes(v: &[u8]) -> String {
    // decode no more than the prefix shown (a character is at most 4 bytes)
    let cut = v.len().min(4 * (LIMIT + 1));
    let s = bounded(&String::from_utf8_lossy(&v[..cut]));
    if cut < v.len() && !s.ends_with("bytes)") {
        format!("{}…` ({} bytes)", s.trim_end_matches('`'), v.len())
    } else if cut < v.len() {
        // replace the prefix's length by the whole value's
        let at = s.rfind("` (").expect("a cut value");
        format!("{}` ({} bytes)", &s[..at], v.len())
    } else {
        s
    }
}

/// `"value"` as Rust's `{:?}` quotes it, cut to the first [`LIMIT`] characters
/// (`"first LIMIT characters"… (N bytes)`) for a longer one.
pub fn debug_bounded(v: &str) -> String {
    match v.char_indices().nth(LIMIT) {
        Some((at, _)) => format!("{:?}… ({} bytes)", &v[..at], v.len()),
        None => format!("{v:?}"),
    }
}

/// A whole message cut to at most `max` characters (a guard for messages that
/// embed text from outside, such as a TOML parser's excerpt of a huge line).
pub fn clip(v: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match v.char_indices().nth(max) {
        Some((at, _)) => format!("{}… ({} bytes)", &v[..at], v.len()).into(),
        None => v.into(),
    }
}

/// The longest message [`clip`] leaves whole in the errors Tessera builds itself.
pub const MESSAGE_LIMIT: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole_and_long_ones_cut() {
        assert_eq!(bounded("abc"), "`abc`");
        assert_eq!(bounded("a\nb\u{1b}"), "`a\\nb\\u{1b}`");
        let long = "x".repeat(1 << 20);
        let q = bounded(&long);
        assert_eq!(q, format!("`{}…` (1048576 bytes)", "x".repeat(LIMIT)));
        assert_eq!(bounded(&"y".repeat(LIMIT)), format!("`{}`", "y".repeat(LIMIT)));
        assert_eq!(bounded_bytes(b"\xff\xfeok"), "`\u{fffd}\u{fffd}ok`");
        assert_eq!(bounded_bytes(&vec![b'z'; 10_000]), format!("`{}…` (10000 bytes)", "z".repeat(LIMIT)));
        assert_eq!(bounded_bytes(&vec![b'z'; LIMIT + 1]), format!("`{}…` ({} bytes)", "z".repeat(LIMIT), LIMIT + 1));
    }
}
