//! Many simulations at once: a worker per core, with a progress bar.

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` on every item, a worker per core (at most `threads`), the heaviest
/// first as given; a progress bar on standard error while it runs.
pub fn parallel<T: Sync, R: Send>(items: &[T], threads: usize, what: &str, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let bar = ProgressBar::new(items.len() as u64);
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}").expect("template").progress_chars("=> "));
    let workers = threads.max(1).min(items.len().max(1));
    bar.set_message(format!("{what} on {workers} threads"));
    let next = AtomicUsize::new(0);
    let done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let (next, bar, f) = (&next, &bar, &f);
                s.spawn(move || {
                    let mut out = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(k) else { break };
                        out.push((k, f(item)));
                        bar.inc(1);
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("a simulation thread panicked")).collect()
    });
    bar.finish_and_clear();
    eprintln!("{} {what} on {workers} threads in {:.1} s", items.len(), bar.elapsed().as_secs_f64());
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    for (k, r) in done {
        slots[k] = Some(r);
    }
    slots.into_iter().map(|r| r.expect("every item ran")).collect()
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

