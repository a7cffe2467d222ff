//! The exact bi-objective front of (time, energy) over discrete per-device profiles, the problem of
//! Khaleghzadeh, Fahad, Manumachu, Lastovetsky (HEPOPTA / HTPOPTA): n units of work go to p devices;
//! device i given x units takes t_i(x) and spends dynamic energy e_i(x) (both measured, so neither need
//! be monotone or convex); the run takes T = max_i t_i(x_i) and spends E_d = Σ_i e_i(x_i), or
//! E_total = E_d + P_static·T.
//!
//! The algorithm here is our own dynamic programme over devices, not the papers' branch and bound: for
//! every partial sum s of units handed out so far it keeps the Pareto set of (max time, energy sum).
//! That is exact because (max, +) is monotone in both arguments: if partial A is no worse than B in both
//! objectives, every completion of A is no worse than the same completion of B, so dropping B loses no
//! point of the final front. The total-energy front is the dynamic-energy front re-filtered after adding
//! P_static·T, because a point dominated in (T, E_d) stays dominated in (T, E_d + P·T). Tests check both
//! against brute force on random instances. Cost: O(p · S · G · F) for S partial sums, G sizes per
//! device and F points per partial front.

use super::{Error, Objective, Result, non_negative, positive};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One device's measured profile: time and dynamic energy for each workload size it was run at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    /// Device name, for the output.
    pub name: String,
    /// Workload sizes in units of work, strictly increasing, > 0. Size 0 (idle) is always allowed.
    pub sizes: Vec<u64>,
    /// Time at each size, s.
    pub time_s: Vec<f64>,
    /// Dynamic energy at each size, J.
    pub dynamic_energy_j: Vec<f64>,
}

/// n units over p devices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// The devices.
    pub devices: Vec<DeviceProfile>,
    /// n, the units of work to distribute.
    pub units: u64,
    /// Static power of the whole platform, W (for total energy).
    pub static_power_w: f64,
}

/// One distribution and its objectives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParetoPoint {
    /// T = max_i t_i(x_i), s.
    pub time_s: f64,
    /// Dynamic or total energy (per the front), J.
    pub energy_j: f64,
    /// x_i, units per device, in device order.
    pub distribution: Vec<u64>,
}

/// Distributions larger than this many are refused by [`brute_force`].
pub const BRUTE_FORCE_LIMIT: u128 = 50_000_000;

impl Problem {
    /// Checks devices, tables and grids: at least one device, units > 0, every table non-empty with one
    /// time and one energy per size, sizes strictly increasing and > 0, times > 0, energies >= 0, and
    /// the same size grid on every device.
    pub fn check(&self) -> Result<()> {
        if self.devices.is_empty() {
            return Err(Error::EmptyTable { what: "device list".into() });
        }
        positive("units of work", self.units as f64)?;
        non_negative("static power", self.static_power_w)?;
        for d in &self.devices {
            let what = |s: &str| format!("device `{}` {s}", d.name);
            if d.sizes.is_empty() {
                return Err(Error::EmptyTable { what: what("size table") });
            }
            for (name, len) in [("time_s", d.time_s.len()), ("dynamic_energy_j", d.dynamic_energy_j.len())] {
                if len != d.sizes.len() {
                    return Err(Error::Misaligned {
                        what: what(name),
                        detail: format!("{len} values for {} sizes: give one per size", d.sizes.len()),
                    });
                }
            }
            if d.sizes[0] == 0 || d.sizes.windows(2).any(|w| w[0] >= w[1]) {
                return Err(Error::Misaligned {
                    what: what("sizes"),
                    detail: "sizes must be > 0 and strictly increasing (size 0, idle, is implied)".into(),
                });
            }
            for (i, s) in d.sizes.iter().enumerate() {
                positive(&what(&format!("time at size {s}")), d.time_s[i])?;
                non_negative(&what(&format!("dynamic energy at size {s}")), d.dynamic_energy_j[i])?;
            }
        }
        let first = &self.devices[0];
        if let Some(d) = self.devices.iter().find(|d| d.sizes != first.sizes) {
            return Err(Error::Misaligned {
                what: format!("devices `{}` and `{}`", first.name, d.name),
                detail: "the size grids differ: profile every device at the same workload sizes".into(),
            });
        }
        Ok(())
    }

    /// The exact Pareto front of (time, dynamic energy), sorted by time; errors when no distribution
    /// sums to exactly `units`.
    pub fn front_dynamic(&self) -> Result<Vec<ParetoPoint>> {
        self.check()?;
        let n = self.units;
        // stages[k][s]: Pareto set of the partial distributions over devices 0..=k handing out s units,
        // each node pointing at its parent in stage k − 1 (no per-node vectors to copy). Only reachable
        // sums are stored, so sizes may be large numbers (bytes, rows) without a table of n entries.
        let mut stages: Vec<BTreeMap<u64, Vec<Node>>> = Vec::with_capacity(self.devices.len());
        let root = BTreeMap::from([(0u64, vec![Node { t: 0.0, e: 0.0, parent: 0, x: 0 }])]);
        let p = self.devices.len();
        for (k, d) in self.devices.iter().enumerate() {
            let prev = stages.last().unwrap_or(&root);
            let last = k + 1 == p;
            let mut next: BTreeMap<u64, Vec<Node>> = BTreeMap::new();
            let choices: Vec<(u64, f64, f64)> = std::iter::once((0u64, 0.0, 0.0))
                .chain(d.sizes.iter().enumerate().map(|(i, &x)| (x, d.time_s[i], d.dynamic_energy_j[i])))
                .collect();
            for (&s, front) in prev {
                for (j, part) in front.iter().enumerate() {
                    for &(x, t, e) in &choices {
                        let Some(total) = s.checked_add(x).filter(|&v| v <= n) else {
                            break;
                        };
                        if last && total != n {
                            continue;
                        }
                        next.entry(total).or_default().push(Node {
                            t: part.t.max(t),
                            e: part.e + e,
                            parent: j,
                            x,
                        });
                    }
                }
            }
            for f in next.values_mut() {
                prune_nodes(f);
            }
            stages.push(next);
        }
        let front: Vec<ParetoPoint> = stages[p - 1]
            .get(&n)
            .map(|f| f.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|node| {
                let mut dist = vec![0u64; p];
                let (mut s, mut cur) = (n, node);
                for k in (0..p).rev() {
                    dist[k] = cur.x;
                    s -= cur.x;
                    if k > 0 {
                        cur = &stages[k - 1][&s][cur.parent];
                    }
                }
                ParetoPoint { time_s: node.t, energy_j: node.e, distribution: dist }
            })
            .collect();
        if front.is_empty() {
            return Err(Error::Misaligned {
                what: format!("{} units of work", self.units),
                detail: "no distribution over the measured sizes adds up to it: change `units` or \
                         add sizes"
                    .into(),
            });
        }
        Ok(front)
    }

    /// The exact Pareto front of (time, total energy = dynamic + static power × time).
    pub fn front_total(&self) -> Result<Vec<ParetoPoint>> {
        let mut f = self.front_dynamic()?;
        for p in &mut f {
            p.energy_j += self.static_power_w * p.time_s;
        }
        prune(&mut f);
        Ok(f)
    }
}

/// A partial distribution in the dynamic programme: objectives so far, the units given to this
/// stage's device, and the index of its parent in the previous stage's front for sum − x.
#[derive(Debug, Clone, Copy)]
struct Node {
    t: f64,
    e: f64,
    parent: usize,
    x: u64,
}

fn prune_nodes(nodes: &mut Vec<Node>) {
    gpumodel_models::energy::pareto_retain(nodes, |n| (n.t, n.e));
}

/// Keeps the points no other point dominates (≤ in both, < in one), one per objective pair, sorted by
/// time.
pub fn prune(points: &mut Vec<ParetoPoint>) {
    gpumodel_models::energy::pareto_retain(points, |p| (p.time_s, p.energy_j));
}

/// The point of a front that minimizes E^a·T^b (the optimum of any such objective lies on the front).
pub fn best_on_front(front: &[ParetoPoint], objective: Objective) -> Option<&ParetoPoint> {
    front.iter().min_by(|a, b| {
        objective.log_value(a.energy_j, a.time_s).total_cmp(&objective.log_value(b.energy_j, b.time_s))
    })
}

/// Every distribution, then the front: the reference the dynamic programme is tested against.
/// `total` adds static power × time. Refuses more than [`BRUTE_FORCE_LIMIT`] distributions.
pub fn brute_force(problem: &Problem, total: bool) -> Result<Vec<ParetoPoint>> {
    problem.check()?;
    let g = problem.devices[0].sizes.len() as u128 + 1;
    let count = (0..problem.devices.len()).try_fold(1u128, |acc, _| acc.checked_mul(g));
    if count.is_none_or(|c| c > BRUTE_FORCE_LIMIT) {
        return Err(Error::TooLarge(format!(
            "brute force over {} devices × {} sizes is too large: use the exact front instead",
            problem.devices.len(),
            g - 1
        )));
    }
    let mut all = Vec::new();
    let mut dist = Vec::with_capacity(problem.devices.len());
    enumerate(problem, 0, 0, &mut dist, &mut all, total);
    prune(&mut all);
    Ok(all)
}

fn enumerate(
    pr: &Problem,
    k: usize,
    used: u64,
    dist: &mut Vec<usize>,
    out: &mut Vec<ParetoPoint>,
    total: bool,
) {
    if k == pr.devices.len() {
        if used != pr.units {
            return;
        }
        let mut t: f64 = 0.0;
        let mut e = 0.0;
        let mut x = Vec::with_capacity(dist.len());
        for (d, &i) in pr.devices.iter().zip(dist.iter()) {
            if i > 0 {
                t = t.max(d.time_s[i - 1]);
                e += d.dynamic_energy_j[i - 1];
                x.push(d.sizes[i - 1]);
            } else {
                x.push(0);
            }
        }
        if total {
            e += pr.static_power_w * t;
        }
        out.push(ParetoPoint { time_s: t, energy_j: e, distribution: x });
        return;
    }
    for i in 0..=pr.devices[k].sizes.len() {
        let x = if i == 0 { 0 } else { pr.devices[k].sizes[i - 1] };
        if used + x > pr.units {
            break;
        }
        dist.push(i);
        enumerate(pr, k + 1, used + x, dist, out, total);
        dist.pop();
    }
}

/// A random instance: `p` devices measured at sizes 1..=`g`·`step` in steps of `step`, with
/// non-monotone times and energies (as real measurements are), n = `units`. Deterministic in `seed`;
/// used by tests and benches.
pub fn random_problem(p: usize, g: u64, step: u64, units: u64, seed: u64) -> Problem {
    let mut st = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut r = move || {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        (st >> 11) as f64 / (1u64 << 53) as f64
    };
    let sizes: Vec<u64> = (1..=g).map(|k| k * step).collect();
    let devices = (0..p)
        .map(|i| {
            let speed = 0.5 + 2.0 * r();
            let power = 20.0 + 200.0 * r();
            let time_s: Vec<f64> =
                sizes.iter().map(|&x| x as f64 / speed * (0.8 + 0.4 * r()) + 0.01).collect();
            let dynamic_energy_j = time_s.iter().map(|t| t * power * (0.7 + 0.6 * r())).collect();
            DeviceProfile { name: format!("d{i}"), sizes: sizes.clone(), time_s, dynamic_energy_j }
        })
        .collect();
    Problem { devices, units, static_power_w: 50.0 + 100.0 * r() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_objectives(a: &[ParetoPoint], b: &[ParetoPoint]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(p, q)| {
                (p.time_s - q.time_s).abs() <= 1e-9 * q.time_s.max(1.0)
                    && (p.energy_j - q.energy_j).abs() <= 1e-9 * q.energy_j.max(1.0)
            })
    }

    #[test]
    fn hand_solved_two_device_instance() {
        // 2 units; a: 1 unit 1 s 10 J, 2 units 2 s 20 J; b: 1 unit 3 s 1 J, 2 units 6 s 2 J.
        // Distributions (a, b): (2,0) T 2 E 20; (1,1) T 3 E 11; (0,2) T 6 E 2 — all three Pareto-optimal.
        let pr = Problem {
            devices: vec![
                DeviceProfile {
                    name: "a".into(),
                    sizes: vec![1, 2],
                    time_s: vec![1.0, 2.0],
                    dynamic_energy_j: vec![10.0, 20.0],
                },
                DeviceProfile {
                    name: "b".into(),
                    sizes: vec![1, 2],
                    time_s: vec![3.0, 6.0],
                    dynamic_energy_j: vec![1.0, 2.0],
                },
            ],
            units: 2,
            static_power_w: 5.0,
        };
        let f = pr.front_dynamic().unwrap();
        let got: Vec<(f64, f64, Vec<u64>)> =
            f.iter().map(|p| (p.time_s, p.energy_j, p.distribution.clone())).collect();
        assert_eq!(got, vec![(2.0, 20.0, vec![2, 0]), (3.0, 11.0, vec![1, 1]), (6.0, 2.0, vec![0, 2])]);
        // Total energy with 5 W static: 30, 26, 32 → (6 s, 32 J) is now dominated by (3 s, 26 J).
        let t = pr.front_total().unwrap();
        let got: Vec<(f64, f64)> = t.iter().map(|p| (p.time_s, p.energy_j)).collect();
        assert_eq!(got, vec![(2.0, 30.0), (3.0, 26.0)]);
        assert_eq!(best_on_front(&t, Objective::ENERGY).unwrap().distribution, vec![1, 1]);
    }

    #[test]
    fn exact_front_equals_brute_force_on_random_instances() {
        for seed in 0..60u64 {
            let p = 2 + (seed % 3) as usize;
            let g = 3 + seed % 5;
            let units = 1 + seed % (g * p as u64);
            let pr = random_problem(p, g, 1, units, seed);
            for total in [false, true] {
                let dp = if total { pr.front_total() } else { pr.front_dynamic() }.unwrap();
                let bf = brute_force(&pr, total).unwrap();
                assert!(same_objectives(&dp, &bf), "seed {seed} total {total}:\n{dp:?}\n{bf:?}");
                for q in &dp {
                    assert_eq!(q.distribution.iter().sum::<u64>(), units);
                }
            }
        }
    }

    #[test]
    fn bad_tables_are_refused_with_a_reason() {
        let good = random_problem(2, 3, 1, 3, 1);
        let mut p = good.clone();
        p.devices[1].sizes = vec![1, 2, 4];
        assert!(matches!(p.check(), Err(Error::Misaligned { .. })));
        let mut p = good.clone();
        p.devices[0].time_s.pop();
        assert!(matches!(p.check(), Err(Error::Misaligned { .. })));
        let mut p = good.clone();
        p.devices[0].sizes.clear();
        assert!(matches!(p.check(), Err(Error::EmptyTable { .. })));
        let mut p = good.clone();
        p.devices[0].time_s[0] = -1.0;
        assert!(matches!(p.check(), Err(Error::BadValue { .. })));
        let mut p = good.clone();
        p.units = 100; // more than 2 devices × 3 units can take
        assert!(p.front_dynamic().is_err());
        // Huge sizes are fine: only reachable sums are stored.
        let mut p = good.clone();
        for d in &mut p.devices {
            d.sizes = vec![1 << 40, 1 << 41, 3 << 40];
        }
        p.units = 3 << 41;
        let f = p.front_dynamic().unwrap();
        assert!(f.iter().all(|q| q.distribution.iter().sum::<u64>() == 3 << 41));
        let mut p = good.clone();
        p.units = u64::MAX; // unreachable: an error, no allocation
        assert!(p.front_dynamic().is_err());
        let p = Problem { devices: vec![], ..good };
        assert!(matches!(p.check(), Err(Error::EmptyTable { .. })));
    }
}
