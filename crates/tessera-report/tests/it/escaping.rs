//! A cell from outside (a job, user, account or partition name) cannot add a row
//! or a column to a table in any rendering, nor to `acct`'s listings.

use tessera_accounting::acct::AcctJob;
use tessera_report::acct::{listing, Listing};
use tessera_report::{Table, TableFormat};

/// Values that would add a row, a column or a terminal command if written as
/// they are.
const EVIL: [&str; 9] = ["x\n9999 fake row", "a|b", "a,b", "say \"hi\"", "cr\r\nlf", "\u{1b}[2J\u{7f}", "c1\u{85}\u{9b}", "sep\u{2028}\u{2029}", "back\\x7c|\\"];

/// Python's `str.splitlines` boundaries: the most line breaks any reader knows.
const BREAKS: [char; 10] = ['\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}', '\u{2029}'];

fn lines(s: &str) -> Vec<&str> {
    let v: Vec<&str> = s.split(BREAKS).collect();
    assert_eq!(v.last(), Some(&""), "ends with a line break");
    v[..v.len() - 1].to_vec()
}

/// An RFC 4180 reader: records of fields, quoted fields may hold anything.
fn read_csv(s: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut field, mut quoted, mut chars) = (Vec::new(), Vec::new(), String::new(), false, s.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(row.is_empty() && field.is_empty() && !quoted, "the last record is not ended");
    rows
}

fn table() -> Table {
    let mut t = Table::new(&["name", "user", "value"]);
    for (i, v) in EVIL.iter().enumerate() {
        t.row(vec![v.to_string(), EVIL[(i + 1) % EVIL.len()].to_string(), i.to_string()]);
    }
    t
}

#[test]
fn a_cell_cannot_add_a_row_or_a_column_to_a_table() {
    let t = table();
    let rows = t.rows.len();
    // text: a header, a rule and one line per row, control characters escaped
    let text = t.render(TableFormat::Text);
    assert_eq!(lines(&text).len(), rows + 2, "{text}");
    assert!(text.contains("x\\n9999 fake row") && text.contains("\\x1b[2J\\x7f") && text.contains("c1\\x85\\x9b") && text.contains("sep\\u{2028}\\u{2029}"), "{text}");
    assert!(!text.contains(['\u{1b}', '\u{7f}', '\u{9b}']));
    // CSV: an RFC 4180 reader and a line-by-line reader both see the rows
    let csv = t.render(TableFormat::Csv);
    assert_eq!(lines(&csv).len(), rows + 1, "{csv}");
    let read = read_csv(&csv);
    assert_eq!(read.len(), rows + 1);
    for (r, want) in read[1..].iter().zip(&t.rows) {
        let want: Vec<String> = want.iter().map(|c| tessera_core::quote::text(c).into_owned()).collect();
        assert_eq!(r, &want);
    }
    // Markdown: one line per row, every `|` but the separators escaped
    let md = t.render(TableFormat::Markdown);
    let md_lines = lines(&md);
    assert_eq!(md_lines.len(), rows + 2, "{md}");
    for l in md_lines {
        let separators = l.char_indices().filter(|&(i, c)| c == '|' && !l[..i].ends_with('\\')).count();
        assert_eq!(separators, 4, "{l}");
    }
    // HTML: one <tr> per row, no control characters
    let html = t.html();
    assert_eq!(html.matches("<tr>").count(), rows + 1);
    assert!(!html.contains(|c: char| c.is_control()), "{html}");
}

fn job(id: i64, name: &str, user: &str, account: &str, partition: &str) -> AcctJob {
    AcctJob {
        job_id: id,
        name: name.into(),
        user: user.into(),
        group: "g".into(),
        account: account.into(),
        partition: partition.into(),
        submit: 0,
        start: 0,
        end: 60,
        state: "COMPLETED".into(),
        exit_code: 0,
        signal: 0,
        reason: String::new(),
        array: None,
        req_procs: 1,
        req_mem_mb: 0,
        time_limit: 60,
        alloc_cores: 1,
        alloc_nodes: 1,
        node_list: "n1".into(),
        factor: 1.0,
        wall_raw_s: 60,
        suspended_s: 0,
        wall_norm_s: 60.0,
        cpu_raw_s: 60.0,
        cpu_norm_s: 60.0,
        core_hours: 60.0 / 3600.0,
        norm_core_hours: 60.0 / 3600.0,
        hs06_hours: None,
        hs06_per_core: None,
        energy_j: None,
        epoch_offset: 0,
        max_rss_kb: None,
        ntasks: 1,
        step: None,
        steps: Vec::new(),
    }
}

/// Undo [`tessera_core::quote::delimited`]: `\\`, `\xNN`, `\u{N}`, `\n`, `\r`, `\t`.
fn unescape(v: &str) -> String {
    let mut out = String::new();
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next().unwrap() {
            '\\' => out.push('\\'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'x' => out.push(char::from_u32(u32::from_str_radix(&chars.by_ref().take(2).collect::<String>(), 16).unwrap()).unwrap()),
            'u' => {
                let hex: String = chars.by_ref().skip(1).take_while(|&c| c != '}').collect();
                out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
            }
            e => panic!("unknown escape \\{e} in {v:?}"),
        }
    }
    out
}

#[test]
fn a_name_cannot_add_a_row_or_a_column_to_acct_listings() {
    let jobs: Vec<AcctJob> = EVIL.iter().enumerate().map(|(i, v)| job(i as i64 + 1, v, EVIL[(i + 1) % EVIL.len()], EVIL[(i + 2) % EVIL.len()], EVIL[(i + 3) % EVIL.len()])).collect();
    let fields = ["JobID", "JobName", "User", "Account", "Partition", "State"];
    for (how, end) in [(Listing::Parsable2, ""), (Listing::Parsable, "|")] {
        let out = listing(&jobs, &fields, how);
        let ls = lines(&out);
        assert_eq!(ls.len(), jobs.len() + 1, "{how:?}:\n{out}");
        assert_eq!(ls[0], format!("{}{end}", fields.join("|")));
        for (l, j) in ls[1..].iter().zip(&jobs) {
            let cells: Vec<&str> = l.strip_suffix(end).unwrap().split('|').collect();
            assert_eq!(cells.len(), fields.len(), "{how:?}: {l}");
            // undoing the escapes gives the values back
            let got: Vec<String> = cells.iter().map(|c| unescape(c)).collect();
            let want: Vec<String> = fields.iter().map(|f| j.field(f)).collect();
            assert_eq!(got, want);
        }
    }
    let columns = listing(&jobs, &fields, Listing::Columns);
    assert_eq!(lines(&columns).len(), jobs.len() + 2, "{columns}");
    assert!(!columns.contains(|c: char| c.is_control() && c != '\n'), "{columns}");
    assert!(columns.contains("x\\n9999 f+"), "{columns}");
}
