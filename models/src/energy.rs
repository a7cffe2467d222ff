//! Energy and the E^a·D^b objectives (paper eq. 5.14–5.16).
//!
//! E = P̄ · T for one kernel (eq. 5.14). For a cluster of `n` nodes (eq. 5.15/5.16 form): every node draws
//! its GPU's power while the GPU computes and its idle power for the whole run, so
//! `E(n) = n · (P_gpu(n) · T_gpu(n) + P_idle · T(n))`, and the delay is `T(n)`.

use crate::error::{Error, Result};
use serde::Serialize;

/// What to minimize: E^a·D^b (energy to the power a times delay to the power b), real a, b ≥ 0, not both 0.
/// The one objective of every command (predict, cluster, validate, split), with one grammar:
/// `e` / `energy` / `efficiency` (1,0), `d` / `t` / `time` / `delay` / `performance` (0,1), `ed` (1,1),
/// `ed2`, `ed3`, `edN` (1,N), or `a,b`. Maximizing performance (work / time) is minimizing time;
/// maximizing efficiency (work / energy) is minimizing energy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Objective {
    /// Exponent of energy.
    pub a: f64,
    /// Exponent of delay (time).
    pub b: f64,
}

impl Objective {
    /// Shortest time (best performance).
    pub const TIME: Objective = Objective { a: 0.0, b: 1.0 };
    /// Least energy (best efficiency).
    pub const ENERGY: Objective = Objective { a: 1.0, b: 0.0 };
    /// Energy-delay product.
    pub const ED: Objective = Objective { a: 1.0, b: 1.0 };
    /// Energy-delay-squared product.
    pub const ED2: Objective = Objective { a: 1.0, b: 2.0 };
    /// Energy-delay-cubed product.
    pub const ED3: Objective = Objective { a: 1.0, b: 3.0 };

    /// E, ED, ED², ED³: the objectives of a sweep or a cluster printed by default.
    pub const DEFAULTS: [Objective; 4] = [Objective::ENERGY, Objective::ED, Objective::ED2, Objective::ED3];

    /// The objectives a work split lists: time, energy, ED, ED².
    pub fn standard() -> [Objective; 4] {
        [Objective::TIME, Objective::ENERGY, Objective::ED, Objective::ED2]
    }

    /// Checks a, b ≥ 0, finite, not both zero.
    pub fn new(a: f64, b: f64) -> Result<Objective> {
        if a.is_finite() && b.is_finite() && a >= 0.0 && b >= 0.0 && a + b > 0.0 {
            Ok(Objective { a, b })
        } else {
            Err(Objective::bad(&format!("{a},{b}")))
        }
    }

    fn bad(s: &str) -> Error {
        Error::Invalid(format!(
            "objective '{s}' is not one of e (energy), d (time), ed, ed2, ed3 or 'a,b' for E^a·D^b with real \
             a, b ≥ 0, not both 0"
        ))
    }

    /// Parses the one grammar (see [`Objective`]).
    pub fn parse(s: &str) -> Result<Objective> {
        let t = s.trim().to_ascii_lowercase();
        let bad = || Objective::bad(s);
        let o = match t.as_str() {
            "e" | "energy" | "efficiency" => Objective::ENERGY,
            "d" | "t" | "time" | "delay" | "performance" => Objective::TIME,
            "ed" => Objective::ED,
            _ if t.starts_with("ed") => Objective { a: 1.0, b: t[2..].parse().map_err(|_| bad())? },
            _ => {
                let (a, b) = t.split_once(',').ok_or_else(bad)?;
                Objective { a: a.trim().parse().map_err(|_| bad())?, b: b.trim().parse().map_err(|_| bad())? }
            }
        };
        Objective::new(o.a, o.b).map_err(|_| bad())
    }

    /// E^a · D^b.
    pub fn value(self, energy_j: f64, delay_s: f64) -> f64 {
        energy_j.powf(self.a) * delay_s.powf(self.b)
    }

    /// The value to minimize through logarithms, so that large exponents do not overflow; it orders
    /// points as E^a·D^b does.
    pub fn log_value(self, energy_j: f64, time_s: f64) -> f64 {
        let mut v = 0.0;
        if self.a > 0.0 {
            v += self.a * energy_j.ln();
        }
        if self.b > 0.0 {
            v += self.b * time_s.ln();
        }
        v
    }

    /// A short label in the papers' notation: `E`, `ED`, `ED^2`, `E^0.5·D^2`.
    pub fn label(self) -> String {
        let pow = |x: f64| if x == 1.0 { String::new() } else { format!("^{x}") };
        let (a, b) = (self.a, self.b);
        if b == 0.0 {
            format!("E{}", pow(a))
        } else if a == 0.0 {
            format!("D{}", pow(b))
        } else if a == 1.0 {
            format!("ED{}", pow(b))
        } else {
            format!("E{}·D{}", pow(a), pow(b))
        }
    }

    /// Index of the point that minimizes the objective; `None` for an empty list.
    pub fn argmin(self, points: &[(f64, f64)]) -> Option<usize> {
        points
            .iter()
            .enumerate()
            .map(|(i, &(e, d))| (i, self.value(e, d)))
            .filter(|(_, v)| v.is_finite())
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .map(|(i, _)| i)
    }
}

/// The name a user types: `time`, `energy`, `ed`, `ed2`, else `E^a·D^b` (what the split reports name).
/// Keeps the (time, energy) points no other point dominates (≤ in both, < in one), one per objective pair,
/// sorted by time: the Pareto front of `items`, each read through `key` as (time, energy). The one front
/// filter of the workspace (the split's dynamic programme, its exact fronts, the report's drawn fronts).
///
/// ```
/// let mut p = vec![(1.0, 5.0), (2.0, 3.0), (2.5, 4.0), (3.0, 1.0), (1.5, 6.0)];
/// gpumodel_models::energy::pareto_retain(&mut p, |q| *q);
/// assert_eq!(p, vec![(1.0, 5.0), (2.0, 3.0), (3.0, 1.0)]);
/// ```
pub fn pareto_retain<T>(items: &mut Vec<T>, key: impl Fn(&T) -> (f64, f64)) {
    items.sort_by(|a, b| {
        let (a, b) = (key(a), key(b));
        a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
    });
    let mut best_e = f64::INFINITY;
    items.retain(|p| {
        let e = key(p).1;
        if e < best_e {
            best_e = e;
            true
        } else {
            false
        }
    });
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match *self {
            Objective::TIME => "time".to_string(),
            Objective::ENERGY => "energy".to_string(),
            Objective::ED => "ed".to_string(),
            Objective::ED2 => "ed2".to_string(),
            o => format!("E^{}·D^{}", o.a, o.b),
        };
        f.write_str(&name)
    }
}

impl std::str::FromStr for Objective {
    type Err = Error;
    fn from_str(s: &str) -> Result<Objective> {
        Objective::parse(s)
    }
}

/// One measured (or predicted) cluster configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NodePoint {
    pub nodes: f64,
    /// Run time (the delay), seconds.
    pub time_s: f64,
    /// GPU busy time per node, seconds (≤ time).
    pub gpu_time_s: f64,
    /// Average GPU power per node while busy, W.
    pub gpu_power_w: f64,
    /// Idle (rest-of-node) power per node, W.
    pub idle_power_w: f64,
}

impl NodePoint {
    /// Cluster energy, J (eq. 5.15/5.16 form).
    pub fn energy_j(&self) -> f64 {
        self.nodes * (self.gpu_power_w * self.gpu_time_s + self.idle_power_w * self.time_s)
    }
}

/// A cluster model fitted to a few measured node counts: `T(n) = s + p/n` (Amdahl, least squares),
/// GPU busy time by the same law, powers linear in n (least squares; constant with one point).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterModel {
    pub serial_s: f64,
    pub parallel_s: f64,
    /// GPU busy time per node, the same law: `s_gpu + p_gpu / n`.
    pub gpu_serial_s: f64,
    pub gpu_parallel_s: f64,
    pub gpu_power: (f64, f64),
    pub idle_power: (f64, f64),
}

fn line_fit(x: &[f64], y: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let sxx: f64 = x.iter().map(|v| (v - mx) * (v - mx)).sum();
    if n < 2.0 || sxx == 0.0 {
        return (my, 0.0);
    }
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let slope = sxy / sxx;
    (my - slope * mx, slope)
}

impl ClusterModel {
    /// Fits the model; needs at least two distinct node counts for the time law.
    pub fn fit(points: &[NodePoint]) -> Result<ClusterModel> {
        let mut counts: Vec<f64> = points.iter().map(|p| p.nodes).collect();
        counts.sort_by(f64::total_cmp);
        counts.dedup();
        if counts.len() < 2 {
            return Err(Error::Invalid(
                "cluster energy needs measurements at two or more node counts to fit T(n) = s + p/n".into(),
            ));
        }
        for p in points {
            let vals = [p.nodes, p.time_s, p.gpu_time_s, p.gpu_power_w, p.idle_power_w];
            if vals.iter().any(|v| !v.is_finite() || *v < 0.0) || p.nodes < 1.0 || p.time_s <= 0.0 {
                return Err(Error::Invalid(format!(
                    "cluster point at {} nodes: nodes ≥ 1, time > 0 and powers ≥ 0 are required",
                    p.nodes
                )));
            }
        }
        let inv: Vec<f64> = points.iter().map(|p| 1.0 / p.nodes).collect();
        let t: Vec<f64> = points.iter().map(|p| p.time_s).collect();
        let (serial, parallel) = line_fit(&inv, &t);
        let g: Vec<f64> = points.iter().map(|p| p.gpu_time_s).collect();
        let (gpu_serial, gpu_parallel) = line_fit(&inv, &g);
        let n: Vec<f64> = points.iter().map(|p| p.nodes).collect();
        let gp: Vec<f64> = points.iter().map(|p| p.gpu_power_w).collect();
        let ip: Vec<f64> = points.iter().map(|p| p.idle_power_w).collect();
        Ok(ClusterModel {
            serial_s: serial,
            parallel_s: parallel,
            gpu_serial_s: gpu_serial,
            gpu_parallel_s: gpu_parallel,
            gpu_power: line_fit(&n, &gp),
            idle_power: line_fit(&n, &ip),
        })
    }

    /// The predicted point at `nodes`.
    pub fn at(&self, nodes: f64) -> NodePoint {
        let time_s = (self.serial_s + self.parallel_s / nodes).max(0.0);
        NodePoint {
            nodes,
            time_s,
            gpu_time_s: (self.gpu_serial_s + self.gpu_parallel_s / nodes).clamp(0.0, time_s),
            gpu_power_w: (self.gpu_power.0 + self.gpu_power.1 * nodes).max(0.0),
            idle_power_w: (self.idle_power.0 + self.idle_power.1 * nodes).max(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_and_evaluate() {
        assert_eq!(Objective::parse("ed2").unwrap(), Objective { a: 1.0, b: 2.0 });
        assert_eq!(Objective::parse("0.5, 2").unwrap(), Objective { a: 0.5, b: 2.0 });
        assert_eq!(Objective::parse("ED2").unwrap().label(), "ED^2");
        assert!(Objective::parse("ed-1").is_err() && Objective::parse("x").is_err());
        // One grammar: the split's names parse here too.
        assert_eq!(Objective::parse("time").unwrap(), Objective::TIME);
        assert_eq!(Objective::parse("Energy").unwrap(), Objective::ENERGY);
        assert_eq!(Objective::parse("ed3").unwrap(), Objective::ED3);
        assert!(Objective::parse("0,0").is_err() && Objective::parse("-1,2").is_err());
        assert_eq!(Objective::ED2.to_string(), "ed2");
        let (e1, t1, e2, t2) = (3.0, 2.0, 10.0, 1.2);
        let o = Objective::ED2;
        assert_eq!(o.log_value(e1, t1) < o.log_value(e2, t2), o.value(e1, t1) < o.value(e2, t2));
        // 10 J, 2 s: ED² = 40.
        assert_eq!(Objective::parse("ed2").unwrap().value(10.0, 2.0), 40.0);
        // E prefers the slow low-energy point, ED² the fast one.
        let pts = [(10.0, 2.0), (12.0, 1.0)];
        assert_eq!(Objective::parse("e").unwrap().argmin(&pts), Some(0));
        assert_eq!(Objective::parse("ed2").unwrap().argmin(&pts), Some(1));
    }

    #[test]
    fn cluster_fit_recovers_amdahl_by_hand() {
        // T(n) = 10 + 80/n: 1 → 90, 2 → 50, 4 → 30. GPU busy 80% of the time at 200 W, idle 100 W.
        let pts: Vec<NodePoint> = [(1.0, 90.0), (2.0, 50.0), (4.0, 30.0)]
            .iter()
            .map(|&(n, t)| NodePoint {
                nodes: n,
                time_s: t,
                gpu_time_s: 0.8 * t,
                gpu_power_w: 200.0,
                idle_power_w: 100.0,
            })
            .collect();
        let m = ClusterModel::fit(&pts).unwrap();
        assert!((m.serial_s - 10.0).abs() < 1e-9 && (m.parallel_s - 80.0).abs() < 1e-9);
        let p8 = m.at(8.0);
        assert!((p8.time_s - 20.0).abs() < 1e-9);
        // E(8) = 8 · (200 · 16 + 100 · 20) = 41600 J.
        assert!((p8.energy_j() - 41_600.0).abs() < 1e-6);
    }
}
