//! Accounts files (TOML): accounts, QOS and priority settings, or an error
//! naming file, line and key; never a panic. What parses resolves tickets and
//! runs Fair Tree without one either.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match tessera_core::share::SharingConfig::from_toml(text, "fuzz.toml") {
        Ok(Some(c)) => {
            let a = &c.accounts;
            let rows = tessera_core::share::fair_tree(a, &vec![1.0; a.assocs.len()]);
            assert_eq!(rows.len(), a.assocs.len());
            for u in a.users() {
                let fs = rows[u.0 as usize].fairshare;
                assert!(fs > 0.0 && fs <= 1.0, "a fair-share factor out of (0, 1]: {fs}");
                let user = a.get(u).user.clone().unwrap_or_default();
                let _ = a.ticket(&user, Some(&a.get(u).account), None, 0);
            }
        }
        Ok(None) => {}
        Err(e) => tessera_fuzz::bounded_error(&e),
    }
});
