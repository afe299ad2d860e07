//! The engine crate must stay pure: no I/O, no clock, no async runtime.

#[test]
fn core_does_no_io_and_reads_no_clock() {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let forbidden = [
        "std::fs", "std::net", "std::io", "std::process", "std::thread", "std::env", "Instant::now",
        "SystemTime", "tokio", "async fn", ".await", "HashMap", "HashSet", "rand::",
    ];
    let mut offences = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(src)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or("");
                    for f in forbidden {
                        if code.contains(f) {
                            offences.push(format!("{}:{}: {f}", path.display(), n + 1));
                        }
                    }
                }
            }
        }
    }
    assert!(offences.is_empty(), "tessera-core must stay pure (house style):\n{}", offences.join("\n"));
}
