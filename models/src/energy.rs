//! Energy and the E^a·D^b objectives (paper eq. 5.14–5.16).
//!
//! E = P̄ · T for one kernel (eq. 5.14). For a cluster of `n` nodes (eq. 5.15/5.16 form): every node draws
//! its GPU's power while the GPU computes and its idle power for the whole run, so
//! `E(n) = n · (P_gpu(n) · T_gpu(n) + P_idle · T(n))`, and the delay is `T(n)`.

use crate::error::{Error, Result};
use serde::Serialize;

/// An objective E^a · D^b with real a, b ≥ 0: `e` (1,0), `ed` (1,1), `ed2` (1,2), `ed3` (1,3), or `a,b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Objective {
    pub a: f64,
    pub b: f64,
}

impl Objective {
    /// E, ED, ED², ED³: the objectives printed by default.
    pub const DEFAULTS: [Objective; 4] = [
        Objective { a: 1.0, b: 0.0 },
        Objective { a: 1.0, b: 1.0 },
        Objective { a: 1.0, b: 2.0 },
        Objective { a: 1.0, b: 3.0 },
    ];

    /// Parses `e|d|ed|ed2|ed3|edN|a,b`.
    pub fn parse(s: &str) -> Result<Objective> {
        let t = s.trim().to_ascii_lowercase();
        let bad = || {
            Error::Invalid(format!(
                "objective '{s}' is not one of e, d, ed, ed2, ed3 or 'a,b' with real a, b ≥ 0 (E^a·D^b)"
            ))
        };
        let o = match t.as_str() {
            "e" => Objective { a: 1.0, b: 0.0 },
            "d" | "t" => Objective { a: 0.0, b: 1.0 },
            "ed" => Objective { a: 1.0, b: 1.0 },
            _ if t.starts_with("ed") => {
                let n: f64 = t[2..].parse().map_err(|_| bad())?;
                Objective { a: 1.0, b: n }
            }
            _ => {
                let (a, b) = t.split_once(',').ok_or_else(bad)?;
                Objective { a: a.trim().parse().map_err(|_| bad())?, b: b.trim().parse().map_err(|_| bad())? }
            }
        };
        if !(o.a.is_finite() && o.b.is_finite() && o.a >= 0.0 && o.b >= 0.0) || (o.a == 0.0 && o.b == 0.0) {
            return Err(bad());
        }
        Ok(o)
    }

    /// E^a · D^b.
    pub fn value(self, energy_j: f64, delay_s: f64) -> f64 {
        energy_j.powf(self.a) * delay_s.powf(self.b)
    }

    /// A short label: `E`, `ED`, `ED^2`, `E^0.5·D^2`.
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
