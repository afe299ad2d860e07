//! The Lublin & Feitelson workload model of rigid parallel jobs.
//!
//! U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling
//! the characteristics of rigid jobs", J. Parallel Distrib. Comput. 63(11):1105-1122,
//! 2003. The model has two job classes, batch and interactive, each with:
//!
//! * **size**: serial with probability `serial_prob`; otherwise log2(size) is drawn
//!   from a two-stage uniform distribution (`u_low..u_med` with probability `u_prob`,
//!   else `u_med..u_hi`) and rounded to an integer (a power-of-two size) with
//!   probability `pow2_prob`; size = round(2^x);
//! * **runtime**: ln(runtime) follows a hyper-gamma distribution, a mixture of
//!   Gamma(a1, b1) and Gamma(a2, b2) whose first weight depends on the size,
//!   p = pa * size + pb (clamped to [0, 1]); values above e^12 s are redrawn;
//! * **arrivals**: ln(inter-arrival time) at peak hours follows Gamma(a_arr, b_arr)
//!   (values above 13 redrawn), and a daily cycle spreads arrivals over 48 half-hour
//!   buckets weighted by a Gamma(a_num, b_num) density: an inter-arrival "budget"
//!   is spent bucket by bucket, a quiet bucket costing more of it than a busy one.
//!   The next job belongs to the class whose next arrival comes first.
//!
//! The parameter values are those published with the model (the paper's fitted
//! values for the batch and interactive classes, for a 128-node machine). For a
//! machine of P processors the size ranges scale as in the paper's guidance:
//! batch u_hi = log2 P and u_med = u_hi - 2; interactive u_hi = log2 P - 1.5 and
//! u_med = u_hi - 2.5. Sizes are capped at P. The model has no user estimates, so
//! generated jobs carry none (SWF field 9 = -1) and simulators plan with the runtime.

use crate::bounds::{whole_seconds, MAX_TIME};
use crate::special::gamma_cdf;
use crate::swf::{SwfHeader, SwfRecord};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma};

const BUCKETS: usize = 48;
const SECONDS_PER_BUCKET: f64 = 1800.0;
/// The daily-cycle fit counts hours from 11:00 (the model's "cyclic day start").
const CYCLIC_DAY_START: usize = 11;
const MAX_LN_RUNTIME: f64 = 12.0;
const MAX_LN_INTERARRIVAL: f64 = 13.0;

/// Parameters of one job class.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ClassParams {
    pub serial_prob: f64,
    pub pow2_prob: f64,
    pub u_low: f64,
    pub u_med: f64,
    pub u_hi: f64,
    pub u_prob: f64,
    pub a1: f64,
    pub b1: f64,
    pub a2: f64,
    pub b2: f64,
    pub pa: f64,
    pub pb: f64,
    pub a_arr: f64,
    pub b_arr: f64,
    pub a_num: f64,
    pub b_num: f64,
}

impl ClassParams {
    /// Batch jobs on a machine of `procs` processors.
    pub fn batch(procs: u32) -> Self {
        let u_hi = (procs.max(2) as f64).log2();
        ClassParams {
            serial_prob: 0.2927,
            pow2_prob: 0.6686,
            u_low: 1.2,
            u_med: (u_hi - 2.0).max(1.2),
            u_hi,
            u_prob: 0.875,
            a1: 6.57,
            b1: 0.823,
            a2: 639.1,
            b2: 0.0156,
            pa: -0.003,
            pb: 0.6986,
            a_arr: 6.0415 * 1.0519,
            b_arr: 0.8531,
            a_num: 6.1271,
            b_num: 5.2740,
        }
    }

    /// Interactive jobs on a machine of `procs` processors.
    pub fn interactive(procs: u32) -> Self {
        let u_hi = ((procs.max(2) as f64).log2() - 1.5).max(1.0);
        ClassParams {
            serial_prob: 0.1541,
            pow2_prob: 0.625,
            u_low: 1.0,
            u_med: (u_hi - 2.5).max(1.0),
            u_hi,
            u_prob: 0.705,
            a1: 3.8351,
            b1: 0.6605,
            a2: 7.073,
            b2: 0.6856,
            pa: -0.0118,
            pb: 0.9156,
            a_arr: 6.5510 * 0.9797,
            b_arr: 0.6621,
            a_num: 8.9186,
            b_num: 3.6680,
        }
    }
}

/// A whole model instance.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LublinParams {
    pub procs: u32,
    pub jobs: usize,
    pub seed: u64,
    /// Multiplies every inter-arrival time (below 1 raises the load).
    pub arrival_factor: f64,
    pub batch: ClassParams,
    pub interactive: ClassParams,
}

impl LublinParams {
    pub fn new(procs: u32, jobs: usize, seed: u64) -> Self {
        LublinParams {
            procs,
            jobs,
            seed,
            arrival_factor: 1.0,
            batch: ClassParams::batch(procs),
            interactive: ClassParams::interactive(procs),
        }
    }
}

/// The arrival process of one class.
struct Arrivals {
    weights: [f64; BUCKETS],
    gamma: Gamma<f64>,
    bucket: usize,
    points: f64,
    remainder: f64,
    next: f64,
}

impl Arrivals {
    fn new(c: &ClassParams) -> Self {
        let mut weights = [0.0; BUCKETS];
        for i in CYCLIC_DAY_START..BUCKETS + CYCLIC_DAY_START {
            let x = i as f64;
            weights[(i - 1) % BUCKETS] = gamma_cdf(x + 0.5, c.a_num, c.b_num) - gamma_cdf(x - 0.5, c.a_num, c.b_num);
        }
        let mean = weights.iter().sum::<f64>() / BUCKETS as f64;
        for w in &mut weights {
            *w /= mean;
        }
        let gamma = Gamma::new(c.a_arr, c.b_arr).expect("valid arrival gamma");
        Arrivals { weights, gamma, bucket: 0, points: 0.0, remainder: 0.0, next: 0.0 }
    }

    /// Draw the next inter-arrival time and move `next` forward by it.
    fn advance(&mut self, rng: &mut ChaCha8Rng, factor: f64) {
        let g = loop {
            let g = self.gamma.sample(rng);
            if g <= MAX_LN_INTERARRIVAL {
                break g;
            }
        };
        self.points += g.exp() / SECONDS_PER_BUCKET;
        let mut dt = 0.0;
        while self.points > self.weights[self.bucket] {
            self.points -= self.weights[self.bucket];
            self.bucket = (self.bucket + 1) % BUCKETS;
            dt += SECONDS_PER_BUCKET;
        }
        let remainder = self.points / self.weights[self.bucket];
        dt += SECONDS_PER_BUCKET * (remainder - self.remainder);
        self.remainder = remainder;
        self.next += dt * factor;
    }
}

fn size(c: &ClassParams, procs: u32, rng: &mut ChaCha8Rng) -> u32 {
    let u: f64 = rng.gen();
    if u <= c.serial_prob {
        return 1;
    }
    let v: f64 = rng.gen();
    let w: f64 = rng.gen();
    let mut x = if v <= c.u_prob { c.u_low + w * (c.u_med - c.u_low) } else { c.u_med + w * (c.u_hi - c.u_med) };
    if u <= c.serial_prob + c.pow2_prob {
        x = x.round();
    }
    (2f64.powf(x).round() as u32).clamp(1, procs)
}

fn runtime(c: &ClassParams, nodes: u32, g1: &Gamma<f64>, g2: &Gamma<f64>, rng: &mut ChaCha8Rng) -> i64 {
    let p = (c.pa * nodes as f64 + c.pb).clamp(0.0, 1.0);
    let hg = loop {
        let u: f64 = rng.gen();
        let hg = if u <= p { g1.sample(rng) } else { g2.sample(rng) };
        if hg <= MAX_LN_RUNTIME {
            break hg;
        }
    };
    hg.exp() as i64
}

/// Why a workload could not be generated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GenerateError {
    #[error("{0} jobs: expected at most 4294967295")]
    TooManyJobs(usize),
    #[error("job {job} would be submitted at {submit:e} s: expected at most 2^42 = {MAX_TIME} s (fewer jobs or a smaller arrival factor)")]
    BeyondRange { job: usize, submit: f64 },
}

/// Generate a workload: an SWF header and `params.jobs` records in submit order.
/// At most `u32::MAX` jobs, all submitted within 2^42 s ([`crate::bounds`]).
pub fn generate(params: &LublinParams) -> Result<(SwfHeader, Vec<SwfRecord>), GenerateError> {
    if u32::try_from(params.jobs).is_err() {
        return Err(GenerateError::TooManyJobs(params.jobs));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let classes = [params.interactive, params.batch];
    let mut arrivals = [Arrivals::new(&classes[0]), Arrivals::new(&classes[1])];
    let gammas: Vec<(Gamma<f64>, Gamma<f64>)> = classes
        .iter()
        .map(|c| (Gamma::new(c.a1, c.b1).expect("valid gamma"), Gamma::new(c.a2, c.b2).expect("valid gamma")))
        .collect();
    for a in &mut arrivals {
        a.advance(&mut rng, params.arrival_factor);
    }
    let mut records = Vec::with_capacity(params.jobs.min(1 << 20));
    for i in 0..params.jobs {
        // 0 = interactive, 1 = batch; the class whose next job arrives first
        let class = if arrivals[1].next < arrivals[0].next { 1 } else { 0 };
        let next = arrivals[class].next.floor();
        let submit = whole_seconds(next).ok_or(GenerateError::BeyondRange { job: i + 1, submit: next })?;
        arrivals[class].advance(&mut rng, params.arrival_factor);
        let c = &classes[class];
        let nodes = size(c, params.procs, &mut rng);
        let run = runtime(c, nodes, &gammas[class].0, &gammas[class].1, &mut rng);
        records.push(SwfRecord {
            job_number: i as i64 + 1,
            submit_time: submit,
            run_time: run,
            allocated_procs: nodes as i64,
            requested_procs: nodes as i64,
            status: 1,
            queue: class as i64,
            ..SwfRecord::unknown(i as i64 + 1)
        });
    }
    let mut header = SwfHeader::default();
    for line in [
        "; Version: 2.2".to_string(),
        "; Computer: synthetic".to_string(),
        "; Installation: Tessera workload generator".to_string(),
        "; Acknowledge: U. Lublin and D. G. Feitelson, JPDC 63(11):1105-1122, 2003".to_string(),
        format!("; Conversion: tessera workload generate --model lublin --procs {} --jobs {} --seed {}{}", params.procs, params.jobs, params.seed,
            if params.arrival_factor != 1.0 { format!(" --arrival-factor {}", params.arrival_factor) } else { String::new() }),
        format!("; MaxJobs: {}", params.jobs),
        format!("; MaxRecords: {}", params.jobs),
        format!("; MaxNodes: {}", params.procs),
        format!("; MaxProcs: {}", params.procs),
        format!("; MaxRuntime: {}", MAX_LN_RUNTIME.exp() as i64),
        "; UnixStartTime: 0".to_string(),
        "; Note: Lublin-Feitelson model of rigid jobs; queue 0 = interactive, 1 = batch; no user estimates".to_string(),
    ] {
        header.add_line(&line).expect("the generator writes a valid header");
    }
    Ok((header, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_workload_and_different_seed_differs() {
        let p = LublinParams::new(256, 500, 7);
        assert_eq!(generate(&p), generate(&p));
        let q = LublinParams { seed: 8, ..p.clone() };
        assert_ne!(generate(&p).unwrap().1, generate(&q).unwrap().1);
    }

    #[test]
    fn submit_times_beyond_two_to_the_42_are_an_error() {
        let p = LublinParams { arrival_factor: 1e300, ..LublinParams::new(64, 10, 1) };
        let e = generate(&p).unwrap_err();
        assert!(matches!(e, GenerateError::BeyondRange { job: 1 | 2, .. }), "{e:?}");
        assert!(e.to_string().contains("expected at most 2^42 = 4398046511104 s"), "{e}");
        let p = LublinParams { arrival_factor: 1e9, ..LublinParams::new(64, 10_000, 1) };
        assert!(matches!(generate(&p), Err(GenerateError::BeyondRange { job, .. }) if job > 1), "the clock passes 2^42 part way");
        assert_eq!(generate(&LublinParams::new(64, usize::MAX, 1)), Err(GenerateError::TooManyJobs(usize::MAX)));
    }

    #[test]
    fn statistics_follow_the_model() {
        let p = LublinParams::new(128, 20_000, 1);
        let (_, jobs) = generate(&p).unwrap();
        assert!(jobs.windows(2).all(|w| w[0].submit_time <= w[1].submit_time));
        assert!(jobs.iter().all(|j| (1..=128).contains(&j.allocated_procs)));
        assert!(jobs.iter().all(|j| (1..=162_754).contains(&j.run_time)));
        let n = jobs.len() as f64;
        // serial share: mixture of 0.1541 (interactive) and 0.2927 (batch)
        let serial = jobs.iter().filter(|j| j.allocated_procs == 1).count() as f64 / n;
        assert!((0.14..0.31).contains(&serial), "serial share {serial}");
        // most parallel jobs have power-of-two sizes
        let par: Vec<_> = jobs.iter().filter(|j| j.allocated_procs > 1).collect();
        let pow2 = par.iter().filter(|j| (j.allocated_procs as u64).is_power_of_two()).count() as f64 / par.len() as f64;
        assert!(pow2 > 0.7, "power-of-two share {pow2}");
        // the daily cycle: more arrivals in the busiest 12 hours than in the quietest
        let mut per_hour = [0u32; 24];
        for j in &jobs {
            per_hour[((j.submit_time / 3600) % 24) as usize] += 1;
        }
        let mut sorted = per_hour;
        sorted.sort();
        let quiet: u32 = sorted[..12].iter().sum();
        let busy: u32 = sorted[12..].iter().sum();
        assert!(busy as f64 > 1.5 * quiet as f64, "no daily cycle: {per_hour:?}");
        // both classes appear
        let batch = jobs.iter().filter(|j| j.queue == 1).count();
        assert!(batch > 1000 && batch < jobs.len() - 1000, "batch jobs: {batch}");
    }
}
