//! Special functions the workload models need: ln Γ and the regularized lower
//! incomplete gamma function P(a, x), i.e. the CDF of a gamma distribution.
//! Standard numerical methods (Lanczos approximation; series and continued
//! fraction, as in Press et al., Numerical Recipes, ch. 6).

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // reflection
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// P(a, x) = γ(a, x) / Γ(a), for a > 0, x >= 0.
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let gln = ln_gamma(a);
    if x < a + 1.0 {
        // series
        let mut ap = a;
        let mut sum = 1.0 / a;
        let mut del = sum;
        for _ in 0..10_000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        (sum * (-x + a * x.ln() - gln).exp()).clamp(0.0, 1.0)
    } else {
        // continued fraction for Q = 1 - P (modified Lentz)
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-15 {
                break;
            }
        }
        (1.0 - (-x + a * x.ln() - gln).exp() * h).clamp(0.0, 1.0)
    }
}

/// CDF of a gamma distribution with shape `alpha` and scale `beta` at `x`.
pub fn gamma_cdf(x: f64, alpha: f64, beta: f64) -> f64 {
    gamma_p(alpha, x / beta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_matches_factorials() {
        for (n, fact) in [(1.0, 1.0), (2.0, 1.0), (5.0, 24.0), (11.0, 3628800.0f64)] {
            assert!((ln_gamma(n) - fact.ln()).abs() < 1e-10, "{n}");
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-10);
    }

    #[test]
    fn gamma_cdf_known_values() {
        // shape 1 is the exponential distribution
        for x in [0.1, 1.0, 3.0, 10.0] {
            assert!((gamma_cdf(x, 1.0, 2.0) - (1.0 - (-x / 2.0f64).exp())).abs() < 1e-12);
        }
        // shape 2, scale 1: 1 - e^-x (1 + x)
        for x in [0.5, 2.0, 8.0] {
            let want = 1.0 - (-x as f64).exp() * (1.0 + x);
            assert!((gamma_cdf(x, 2.0, 1.0) - want).abs() < 1e-12);
        }
        assert_eq!(gamma_cdf(0.0, 3.0, 1.0), 0.0);
    }
}
