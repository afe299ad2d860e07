//! A PARM decision as a free-format MPS file, so that any MILP solver (HiGHS,
//! CBC, SCIP, Gurobi, …) can solve it and check Tessera's answer from outside.
//!
//! Why MPS: it is the one format every solver reads, and writing it is plain text
//! with no choices left to the reader. The model is the [`Problem`] exactly:
//!
//! * one binary column `x{g}_{i}` per item i of group g, in group then item order
//!   (a solver's column k is the k-th item, counting across groups);
//! * the objective row `value`, maximised (`OBJSENSE MAX`): Σ value · x;
//! * one row `g{g}` per group: Σ_i x ≤ 1, or = 1 for a forced group;
//! * the row `nodes`: Σ nodes · x ≤ N, and the row `power`: Σ power · x ≤ W.
//!
//! Numbers are written with Rust's shortest round-trip formatting, so a reader
//! that parses them as IEEE doubles gets exactly the problem's values. Zero
//! coefficients are left out. Pure: returns the text; the caller writes it.

use super::knapsack::Problem;
use std::fmt::Write;

impl Problem {
    /// The problem as free MPS; `name` goes on the NAME line (whitespace in it
    /// becomes `_`, since free MPS separates fields by whitespace).
    pub fn to_mps(&self, name: &str) -> String {
        let name: String = name.chars().map(|c| if c.is_whitespace() { '_' } else { c }).collect();
        let name = if name.is_empty() { "parm".to_string() } else { name };
        let items: usize = self.groups.iter().map(|g| g.items.len()).sum();
        let mut s = String::with_capacity(64 * items + 32 * self.groups.len() + 256);
        let _ = writeln!(s, "NAME {name}");
        s.push_str("OBJSENSE\n    MAX\n");
        s.push_str("ROWS\n N value\n");
        for (gi, g) in self.groups.iter().enumerate() {
            let _ = writeln!(s, " {} g{gi}", if g.forced { 'E' } else { 'L' });
        }
        s.push_str(" L nodes\n L power\n");
        s.push_str("COLUMNS\n");
        for (gi, g) in self.groups.iter().enumerate() {
            for (ii, it) in g.items.iter().enumerate() {
                if it.value != 0.0 {
                    let _ = writeln!(s, "    x{gi}_{ii} value {:?}", it.value);
                }
                let _ = writeln!(s, "    x{gi}_{ii} g{gi} 1");
                if it.nodes != 0 {
                    let _ = writeln!(s, "    x{gi}_{ii} nodes {}", it.nodes);
                }
                if it.power != 0.0 {
                    let _ = writeln!(s, "    x{gi}_{ii} power {:?}", it.power);
                }
            }
        }
        s.push_str("RHS\n");
        for gi in 0..self.groups.len() {
            let _ = writeln!(s, "    rhs g{gi} 1");
        }
        let _ = writeln!(s, "    rhs nodes {}", self.nodes);
        let _ = writeln!(s, "    rhs power {:?}", self.power);
        s.push_str("BOUNDS\n");
        for (gi, g) in self.groups.iter().enumerate() {
            for ii in 0..g.items.len() {
                let _ = writeln!(s, " BV bnd x{gi}_{ii}");
            }
        }
        s.push_str("ENDATA\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use crate::power::{Group, Item, Problem};

    #[test]
    fn a_tiny_problem_is_written_line_by_line() {
        let p = Problem {
            groups: vec![
                Group { forced: true, items: vec![Item { value: 1.5, nodes: 2, power: 100.25 }, Item { value: 0.1, nodes: 4, power: 0.0 }] },
                Group { forced: false, items: vec![Item { value: 0.0, nodes: 0, power: 1e-7 }] },
            ],
            nodes: 6,
            power: 505760.0,
        };
        let want = [
            "NAME tiny_decision",
            "OBJSENSE",
            "    MAX",
            "ROWS",
            " N value",
            " E g0",
            " L g1",
            " L nodes",
            " L power",
            "COLUMNS",
            "    x0_0 value 1.5",
            "    x0_0 g0 1",
            "    x0_0 nodes 2",
            "    x0_0 power 100.25",
            "    x0_1 value 0.1",
            "    x0_1 g0 1",
            "    x0_1 nodes 4",
            "    x1_0 g1 1",
            "    x1_0 power 1e-7",
            "RHS",
            "    rhs g0 1",
            "    rhs g1 1",
            "    rhs nodes 6",
            "    rhs power 505760.0",
            "BOUNDS",
            " BV bnd x0_0",
            " BV bnd x0_1",
            " BV bnd x1_0",
            "ENDATA",
        ];
        let mps = p.to_mps("tiny decision");
        let got: Vec<&str> = mps.lines().collect();
        for (k, (g, w)) in got.iter().zip(want.iter()).enumerate() {
            assert_eq!(g, w, "line {}", k + 1);
        }
        assert_eq!(got.len(), want.len(), "{mps}");
        assert!(mps.ends_with("ENDATA\n"));
        // the name's whitespace became `_` above; an empty name is never written
        assert!(p.to_mps("").starts_with("NAME parm\n"));
    }

    #[test]
    fn values_round_trip_exactly() {
        let v = [0.1 + 0.2, 1.0 / 3.0, 123456.789e10, 5e-324, f64::MAX];
        let p = Problem { groups: vec![Group { forced: false, items: v.iter().map(|&x| Item { value: x, nodes: 1, power: x }).collect() }], nodes: 1, power: 0.1 + 0.7 };
        let mps = p.to_mps("rt");
        let parsed: Vec<f64> = mps.lines().filter(|l| l.contains(" value ")).map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap()).collect();
        assert_eq!(parsed, v);
        let rhs: f64 = mps.lines().find(|l| l.starts_with("    rhs power")).unwrap().split_whitespace().nth(2).unwrap().parse().unwrap();
        assert_eq!(rhs.to_bits(), (0.1f64 + 0.7).to_bits());
    }
}
