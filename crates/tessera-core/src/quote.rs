//! Quoting values for output: one function per format, so that a name from
//! outside (a job name, a user, a partition, a node type, a cluster) can never
//! forge a row, a column, a record or an attribute in what Tessera writes.
//!
//! * errors: [`bounded`], [`bounded_bytes`], [`debug_bounded`], [`clip`]: at most
//!   [`LIMIT`] characters of a bad value, control and non-UTF-8 bytes escaped, so
//!   that a 1 GiB line of garbage or a binary file gives a one-line error;
//! * text and tables: [`text`]: the characters of [`is_unsafe`] (C0, DEL, C1,
//!   line and paragraph separators, bidirectional controls) shown escaped
//!   (`\n`, `\r`, `\t`, `\x1b`, `\x85`, `\u{202e}`); everything else as is;
//! * delimited output (`acct -p/-P`): [`delimited`]: as [`text`], and the
//!   delimiter and `\` escaped too (`|` is `\x7c`, `\` is `\\`), so a value holds
//!   no delimiter at all and the escapes can be undone;
//! * CSV: [`csv`] (RFC 4180 quoting of [`text`]);
//! * LDIF (GLUE 2, GLUE 1.3): [`ldif`] (RFC 2849: base64 when the value is not
//!   a SAFE-STRING) and [`dn_value`] (RFC 4514 escaping of a DN's value);
//! * shell variables (YAIM `site-info.def`): [`shell_double`];
//! * APEL messages: [`apel`].

use std::borrow::Cow;
use std::fmt::Write as _;

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

/// Whether text output escapes `c`: control characters (C0, DEL, C1: what
/// `char::is_control` says), the line and paragraph separators U+2028 and U+2029
/// (line breaks to some readers, Python's `splitlines` among them) and the
/// bidirectional controls (which reorder what a terminal shows).
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `c` escaped: `\n`, `\r`, `\t`, `\xNN` below U+0100, `\u{NNNN}` above.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x100 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
}

/// `v` with every character `escape` picks replaced by `push_escaped`'s form, or
/// `v` itself (no allocation) when it has none.
fn escape_where(v: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    match v.find(&escape) {
        None => Cow::Borrowed(v),
        Some(at) => {
            let mut s = String::with_capacity(v.len() + 8);
            s.push_str(&v[..at]);
            for c in v[at..].chars() {
                if escape(c) {
                    push_escaped(&mut s, c);
                } else {
                    s.push(c);
                }
            }
            Cow::Owned(s)
        }
    }
}

/// A value for text output (a table cell, a line of `tessera queue`): the
/// [`is_unsafe`] characters escaped (`a\nb`, `\x1b[31m`), nothing else changed.
/// For reading: a literal backslash stays as it is, so the escape cannot always be
/// undone (use [`delimited`] where a program reads the value back).
pub fn text(v: &str) -> Cow<'_, str> {
    escape_where(v, is_unsafe)
}

/// A value for output whose fields are separated by `delimiter` (`acct -p/-P`):
/// as [`text`], and `\` and the delimiter escaped as well (`\\`, `|` as `\x7c`).
/// The value then holds no delimiter and no line break, so splitting a line on
/// the delimiter gives the columns whatever the values, and undoing the escapes
/// gives the value back.
pub fn delimited(v: &str, delimiter: char) -> Cow<'_, str> {
    let special = |c: char| c == '\\' || c == delimiter || is_unsafe(c);
    if !v.contains(special) {
        return Cow::Borrowed(v);
    }
    let mut s = String::with_capacity(v.len() + 8);
    for c in v.chars() {
        if c == '\\' {
            s.push_str("\\\\");
        } else if special(c) {
            push_escaped(&mut s, c);
        } else {
            s.push(c);
        }
    }
    Cow::Owned(s)
}

/// A CSV cell (RFC 4180): the value as [`text`] shows it, in double quotes (and
/// its quotes doubled) when it holds a comma or a double quote. A cell never holds
/// a line break, so a line of the file is a row even to a reader that knows no
/// quoting.
pub fn csv(v: &str) -> Cow<'_, str> {
    let t = text(v);
    if t.contains([',', '"']) {
        Cow::Owned(csv_quoted(&t))
    } else {
        t
    }
}

/// A CSV cell always in double quotes (for a column whose values usually hold
/// commas, such as a hostlist): as [`csv`] otherwise.
pub fn csv_quoted(v: &str) -> String {
    format!("\"{}\"", text(v).replace('"', "\"\""))
}

/// Whether an LDIF value may be written as it is (RFC 2849 SAFE-STRING): ASCII
/// without NUL, LF or CR, not starting with a space, `:` or `<`. Stricter than the
/// RFC in two ways it recommends or allows: no value ending with a space, and no
/// control character at all (a tab or an ESC is written in base64 too).
pub fn ldif_safe(v: &str) -> bool {
    let b = v.as_bytes();
    !matches!(b.first(), Some(b' ' | b':' | b'<')) && !b.ends_with(b" ") && b.iter().all(|&c| (0x20..0x7f).contains(&c))
}

/// One LDIF line: `attr: value`, or `attr:: base64(value)` when the value is not
/// [`ldif_safe`] (RFC 2849), so a value cannot end its line and start another
/// attribute, and a reader gets its bytes back exactly. Also for the `dn` line
/// (whose value's parts are escaped with [`dn_value`] first).
pub fn ldif(attr: &str, value: &str) -> String {
    if ldif_safe(value) {
        format!("{attr}: {value}")
    } else {
        format!("{attr}:: {}", base64(value.as_bytes()))
    }
}

/// An attribute value inside a distinguished name (RFC 4514 section 2.4):
/// `\` before `"`, `+`, `,`, `;`, `<`, `=`, `>` and `\`, before a leading `#`
/// or space and before a trailing space; NUL and the [`is_unsafe`] characters as
/// `\XX` for each of their UTF-8 bytes. An RDN built as `attr=` + `dn_value(v)`
/// is then one RDN whatever `v` holds.
pub fn dn_value(v: &str) -> String {
    let n = v.chars().count();
    let mut s = String::with_capacity(v.len() + 8);
    for (i, c) in v.chars().enumerate() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '=' | '>' | '\\' => {
                s.push('\\');
                s.push(c);
            }
            '#' if i == 0 => s.push_str("\\#"),
            ' ' if i == 0 || i + 1 == n => s.push_str("\\ "),
            c if c == '\0' || is_unsafe(c) => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(s, "\\{b:02X}");
                }
            }
            c => s.push(c),
        }
    }
    s
}

/// A value for a shell variable assignment (YAIM's `site-info.def`, which bash
/// sources): in double quotes, with `\`, `"`, `$` and `` ` `` escaped by a
/// backslash, so the shell reads it as one word and expands nothing; the
/// [`is_unsafe`] characters, which a line of the file cannot hold, written as
/// [`text`] writes them (the shell then reads `\n` as those two characters).
pub fn shell_double(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        match c {
            '\\' | '"' | '$' | '`' => {
                s.push('\\');
                s.push(c);
            }
            c if is_unsafe(c) => push_escaped(&mut s, c),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// A value of an APEL message's `Key: value` line: as [`text`], and `%` as
/// `\x25`. The APEL loader splits a message into records at every `%%`, even
/// inside a line, and into lines with Python's `splitlines`, so a value holds
/// neither a line break nor a `%`.
pub fn apel(v: &str) -> Cow<'_, str> {
    escape_where(v, |c| c == '%' || is_unsafe(c))
}

/// Standard base64 (RFC 4648, with padding).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

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

    #[test]
    fn text_escapes_control_separator_and_bidi_characters_only() {
        assert!(matches!(text("plain name-1 ü 名"), Cow::Borrowed(_)));
        assert_eq!(text("a\nb\r\tc"), "a\\nb\\r\\tc");
        assert_eq!(text("\u{1b}[31mred\u{7f}\u{0}"), "\\x1b[31mred\\x7f\\x00");
        assert_eq!(text("c1\u{85}\u{9b}"), "c1\\x85\\x9b");
        assert_eq!(text("x\u{2028}y\u{202e}z"), "x\\u{2028}y\\u{202e}z");
        assert_eq!(text("back\\slash|pipe"), "back\\slash|pipe");
    }

    #[test]
    fn delimited_values_hold_no_delimiter_and_can_be_undone() {
        assert!(matches!(delimited("job-1", '|'), Cow::Borrowed(_)));
        assert_eq!(delimited("a|b", '|'), "a\\x7cb");
        assert_eq!(delimited("x\n9999|fake|row", '|'), "x\\n9999\\x7cfake\\x7crow");
        assert_eq!(delimited("c:\\x7c", '|'), "c:\\\\x7c");
        for v in ["a|b", "a\\x7cb", "\\\\|\n", "tab\there"] {
            let d = delimited(v, '|');
            assert!(!d.contains(['|', '\n', '\r', '\t']), "{d}");
        }
    }

    #[test]
    fn csv_cells_are_quoted_per_rfc_4180_and_never_break_a_line() {
        assert_eq!(csv("plain"), "plain");
        assert_eq!(csv("a,b"), "\"a,b\"");
        assert_eq!(csv("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv("x\n9999,fake"), "\"x\\n9999,fake\"");
        assert_eq!(csv("\r\n"), "\\r\\n");
        assert_eq!(csv_quoted("n[1-2],m1"), "\"n[1-2],m1\"");
    }

    #[test]
    fn ldif_values_that_are_not_safe_strings_are_base64() {
        assert_eq!(ldif("GLUE2EntityName", "typeA"), "GLUE2EntityName: typeA");
        assert_eq!(ldif("a", ""), "a: ");
        for v in ["x\nobjectClass: evil", " lead", ":colon", "<url", "trail ", "nul\0", "tab\t", "ünï", "cr\r"] {
            let line = ldif("a", v);
            assert_eq!(line, format!("a:: {}", base64(v.as_bytes())), "{v:?}");
            assert!(!line.contains(['\n', '\r']));
        }
        assert_eq!(ldif("a", "in:side <ok>"), "a: in:side <ok>");
    }

    #[test]
    fn base64_matches_rfc_4648() {
        for (v, b) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")] {
            assert_eq!(base64(v.as_bytes()), b);
        }
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn dn_values_are_escaped_per_rfc_4514() {
        assert_eq!(dn_value("liverpool-2010"), "liverpool-2010");
        assert_eq!(dn_value("a,b+c=d"), "a\\,b\\+c\\=d");
        assert_eq!(dn_value("\"<x>;\\"), "\\\"\\<x\\>\\;\\\\");
        assert_eq!(dn_value("#lead"), "\\#lead");
        assert_eq!(dn_value("mid#"), "mid#");
        assert_eq!(dn_value(" both "), "\\ both\\ ");
        assert_eq!(dn_value("x\nobjectClass: evil"), "x\\0AobjectClass: evil");
        assert_eq!(dn_value("\0\u{85}"), "\\00\\C2\\85");
        assert_eq!(dn_value("ü"), "ü");
    }

    #[test]
    fn shell_values_expand_nothing_and_stay_on_their_line() {
        assert_eq!(shell_double("Cores=1.5,Benchmark=6.85-HEP-SPEC06"), "\"Cores=1.5,Benchmark=6.85-HEP-SPEC06\"");
        assert_eq!(shell_double("a\"; rm -rf / #"), "\"a\\\"; rm -rf / #\"");
        assert_eq!(shell_double("$(id)`id`\\"), "\"\\$(id)\\`id\\`\\\\\"");
        assert_eq!(shell_double("x\nCE_EVIL=1"), "\"x\\nCE_EVIL=1\"");
    }

    #[test]
    fn apel_values_hold_no_line_break_and_no_record_separator() {
        assert_eq!(apel("user95"), "user95");
        assert_eq!(apel("x%%Site: evil"), "x\\x25\\x25Site: evil");
        assert_eq!(apel("x\nSite: evil\u{2028}"), "x\\nSite: evil\\u{2028}");
        assert_eq!(apel("fs\u{1c}gs\u{1d}"), "fs\\x1cgs\\x1d");
    }
}
