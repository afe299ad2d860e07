//! The Power Aware Strong Scaling (PASS) model of Sarood, Langer, Gupta & Kalé,
//! "Maximizing Throughput of Overprovisioned HPC Data Centers Under a Strict Power
//! Budget" (SC 2014), §V: how long a job takes on n nodes under a CPU power cap p.
//!
//! * Strong scaling (Downey 1997, low-variance model as adjusted in the paper,
//!   Eqs. 9–11): with average parallelism A and variance σ ∈ [0, 1],
//!   t(n) = (T1 − T1σ/2A)/n + T1σ/2A for n ≤ A;
//!   t(n) = (T1σ − T1σ/2A)/n + T1/A − T1σ/2A for A ≤ n ≤ 2A − 1; t(n) = T1/A beyond.
//! * CPU power (Eq. 18): package power p = a f³ + b f + c; f = F⁻¹(p) by Cardano's
//!   formula (Eq. 19).
//! * Frequency (Eqs. 12–16): t(f) = W_cpu/f + T_mem below the saturation
//!   frequency f_h, T_h above it; β = (T_l − T_h)/T_l at the lowest power p_l.
//!   Hence t(n, p) = t(n) · g(p) with g(p) = K f_h / f + 1 − K,
//!   K = β f_l / ((1 − β)(f_h − f_l)), g(p_h) = 1 and g(p_l) = 1/(1 − β).

/// An application's CPU-power response (the paper's Table IV) and the constant the
/// paper leaves out: the base package power `c` ("in the range [13−14] W"), which
/// Tessera sets to 13.5 W.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AppProfile {
    pub name: &'static str,
    /// Package power = a f³ + b f + c (W, f in GHz).
    pub a: f64,
    pub b: f64,
    pub c: f64,
    /// Lowest package power reachable by DVFS (W).
    pub p_l: f64,
    /// Power above which the application runs no faster (W).
    pub p_h: f64,
    /// Frequency sensitivity: (T_l − T_h) / T_l.
    pub beta: f64,
}

/// The base package power the paper measured in [13, 14] W.
pub const BASE_PACKAGE_POWER_W: f64 = 13.5;

/// The five applications of the paper (Table IV).
pub const PRESETS: [AppProfile; 5] = [
    AppProfile { name: "LeanMD", a: 1.65, b: 7.74, c: BASE_PACKAGE_POWER_W, p_l: 30.0, p_h: 52.0, beta: 0.40 },
    AppProfile { name: "Wave2D", a: 3.00, b: 10.23, c: BASE_PACKAGE_POWER_W, p_l: 32.0, p_h: 40.0, beta: 0.16 },
    AppProfile { name: "Lulesh", a: 2.63, b: 8.36, c: BASE_PACKAGE_POWER_W, p_l: 32.0, p_h: 54.0, beta: 0.30 },
    AppProfile { name: "AMR", a: 2.45, b: 6.57, c: BASE_PACKAGE_POWER_W, p_l: 32.0, p_h: 54.0, beta: 0.33 },
    AppProfile { name: "Jacobi2D", a: 1.54, b: 10.13, c: BASE_PACKAGE_POWER_W, p_l: 32.0, p_h: 37.0, beta: 0.08 },
];

impl AppProfile {
    pub fn preset(name: &str) -> Option<AppProfile> {
        PRESETS.iter().copied().find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// The profile of a job that names none: it runs at full power (`cpu_max_w`
    /// is its lowest and its saturation power), so it is never capped.
    pub fn unprofiled(cpu_max_w: f64) -> AppProfile {
        AppProfile { name: "none", a: 1.0, b: 1.0, c: BASE_PACKAGE_POWER_W, p_l: cpu_max_w, p_h: cpu_max_w, beta: 0.0 }
    }

    /// The frequency (GHz) at which the package draws `p` watts: the real root of
    /// a f³ + b f + (c − p) = 0 (a depressed cubic; Cardano).
    pub fn freq(&self, p: f64) -> f64 {
        let q = (p - self.c) / self.a; // f³ + (b/a) f − q = 0
        let r = self.b / self.a;
        let d = (q * q / 4.0 + r * r * r / 27.0).sqrt();
        (q / 2.0 + d).cbrt() + (q / 2.0 - d).cbrt()
    }

    /// t(n, p) / t(n, p_h): how much slower the job runs under cap `p` (>= 1).
    /// Caps below p_l are treated as p_l (the model is not defined below it).
    pub fn slowdown(&self, p: f64) -> f64 {
        if p >= self.p_h {
            return 1.0;
        }
        let p = p.max(self.p_l);
        let (f, fl, fh) = (self.freq(p), self.freq(self.p_l), self.freq(self.p_h));
        let k = self.beta * fl / ((1.0 - self.beta) * (fh - fl));
        k * fh / f + 1.0 - k
    }
}

/// Downey's strong-scaling model, low-variance form.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Downey {
    /// Average parallelism (>= 1).
    pub a: f64,
    /// Variance in parallelism, in [0, 1].
    pub sigma: f64,
}

impl Downey {
    /// t(n) / T1.
    pub fn fraction(&self, n: f64) -> f64 {
        let (a, s) = (self.a.max(1.0), self.sigma.clamp(0.0, 1.0));
        if n <= a {
            (1.0 - s / (2.0 * a)) / n + s / (2.0 * a)
        } else if n <= 2.0 * a - 1.0 {
            (s - s / (2.0 * a)) / n + 1.0 / a - s / (2.0 * a)
        } else {
            1.0 / a
        }
    }
}

/// What the power-aware scheduler knows about a moldable or malleable job.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PowerJob {
    pub app: AppProfile,
    pub scaling: Downey,
    /// Execution time on one node at full power (s).
    pub t1: f64,
    pub n_min: u32,
    pub n_max: u32,
    /// Memory the job holds (MB), for the cost of redistributing it on a resize.
    pub mem_mb: f64,
    /// Whether the job may be resized while it runs (a malleable job; under
    /// wSE). A job that is not keeps the size it started with.
    #[serde(default = "yes")]
    pub malleable: bool,
}

fn yes() -> bool {
    true
}

impl PowerJob {
    /// The job that takes `runtime` seconds on `n_max` nodes at full CPU power
    /// `cpu_max_w` (T1 follows; runtimes under 1 s count as 1 s): how a trace job
    /// (its recorded run) and a live submission (its time estimate) become PASS
    /// jobs. `mem_mb`: what a resize redistributes.
    #[allow(clippy::too_many_arguments)]
    pub fn sized(app: AppProfile, scaling: Downey, runtime: f64, n_min: u32, n_max: u32, cpu_max_w: f64, mem_mb: f64, malleable: bool) -> PowerJob {
        let t1 = runtime.max(1.0) / (scaling.fraction(n_max as f64) * app.slowdown(cpu_max_w));
        PowerJob { app, scaling, t1, n_min, n_max, mem_mb, malleable }
    }

    /// Execution time (s) on `n` nodes under CPU cap `p` W.
    pub fn time(&self, n: u32, p: f64) -> f64 {
        self.t1 * self.scaling.fraction(n as f64) * self.app.slowdown(p)
    }

    /// The node counts the job may run on: `levels` counts spread evenly between
    /// n_min and n_max (fewer when the range is narrow).
    pub fn node_levels(&self, levels: u32) -> Vec<u32> {
        let mut v: Vec<u32> = (0..levels.max(1))
            .map(|k| {
                if levels <= 1 {
                    self.n_max
                } else {
                    let x = self.n_min as f64 + (self.n_max - self.n_min) as f64 * k as f64 / (levels - 1) as f64;
                    x.round() as u32
                }
            })
            .collect();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downey_boundaries() {
        let d = Downey { a: 8.0, sigma: 0.5 };
        assert!((d.fraction(1.0) - 1.0).abs() < 1e-12, "t(1) = T1");
        assert!((d.fraction(16.0) - 1.0 / 8.0).abs() < 1e-12, "t(n >= 2A) = T1/A");
        assert!((d.fraction(15.0) - 1.0 / 8.0).abs() < 1e-12, "continuous at 2A - 1");
        let left = d.fraction(8.0);
        let right = (0.5 - 0.5 / 16.0) / 8.0 + 1.0 / 8.0 - 0.5 / 16.0;
        assert!((left - right).abs() < 1e-12, "continuous at A");
        // perfectly parallel up to A when sigma = 0
        let p = Downey { a: 8.0, sigma: 0.0 };
        assert!((p.fraction(4.0) - 0.25).abs() < 1e-12);
        // monotone
        let mut last = f64::INFINITY;
        for n in 1..40 {
            let t = d.fraction(n as f64);
            assert!(t <= last + 1e-12);
            last = t;
        }
    }

    #[test]
    fn power_response() {
        for app in PRESETS {
            // F⁻¹ inverts F
            for p in [app.p_l, (app.p_l + app.p_h) / 2.0, app.p_h] {
                let f = app.freq(p);
                assert!((app.a * f * f * f + app.b * f + app.c - p).abs() < 1e-9, "{}", app.name);
            }
            assert!((app.slowdown(app.p_h) - 1.0).abs() < 1e-12);
            assert!((app.slowdown(60.0) - 1.0).abs() < 1e-12);
            // at p_l the job takes T_l = T_h / (1 - beta)
            assert!((app.slowdown(app.p_l) - 1.0 / (1.0 - app.beta)).abs() < 1e-9, "{}", app.name);
            assert!(app.slowdown(app.p_l + 1.0) < app.slowdown(app.p_l));
        }
        // LeanMD is the most power-sensitive, Jacobi2D the least (the paper's Fig. 3)
        let at = |name: &str| AppProfile::preset(name).unwrap().slowdown(32.0);
        assert!(at("LeanMD") > at("Lulesh") && at("Lulesh") > at("Jacobi2D"));
    }

    #[test]
    fn job_time_and_levels() {
        let j = PowerJob { app: PRESETS[0], scaling: Downey { a: 100.0, sigma: 0.2 }, t1: 1e6, n_min: 20, n_max: 90, mem_mb: 0.0, malleable: true };
        assert_eq!(j.node_levels(8), vec![20, 30, 40, 50, 60, 70, 80, 90]);
        assert!(j.time(90, 60.0) < j.time(20, 60.0));
        assert!(j.time(90, 30.0) > j.time(90, 60.0));
        let narrow = PowerJob { n_min: 3, n_max: 5, ..j };
        assert_eq!(narrow.node_levels(8), vec![3, 4, 5]);
    }
}

/// An application profile as stored in a snapshot (its name as text).
#[derive(Clone, serde::Deserialize)]
struct AppProfileData {
    // owned, unlike AppProfile's name
    name: String,
    a: f64,
    b: f64,
    c: f64,
    p_l: f64,
    p_h: f64,
    beta: f64,
}

impl<'de> serde::Deserialize<'de> for AppProfile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        AppProfileData::deserialize(d).map(AppProfile::from)
    }
}

impl From<AppProfileData> for AppProfile {
    /// The preset's own name, or (for a profile that is not a preset) the text
    /// kept for the process's life.
    fn from(d: AppProfileData) -> Self {
        let name = PRESETS.iter().find(|p| p.name == d.name).map(|p| p.name).unwrap_or_else(|| Box::leak(d.name.into_boxed_str()));
        AppProfile { name, a: d.a, b: d.b, c: d.c, p_l: d.p_l, p_h: d.p_h, beta: d.beta }
    }
}
