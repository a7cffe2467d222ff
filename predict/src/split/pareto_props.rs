//! Property tests of the exact Pareto front (HEPOPTA invariants) on random small instances, checked
//! against a plain enumeration of every distribution. Fixed seed and a bounded number of cases, so CI
//! time stays flat and a failure reproduces.

use super::Objective;
use super::pareto::{DeviceProfile, ParetoPoint, Problem, best_on_front};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// Every distribution of `pr.units` over the devices: (time, dynamic energy).
fn all_distributions(pr: &Problem) -> Vec<(f64, f64)> {
    fn go(pr: &Problem, k: usize, left: u64, t: f64, e: f64, out: &mut Vec<(f64, f64)>) {
        if k == pr.devices.len() {
            if left == 0 {
                out.push((t, e));
            }
            return;
        }
        go(pr, k + 1, left, t, e, out); // device k idle
        let d = &pr.devices[k];
        for (i, &x) in d.sizes.iter().enumerate() {
            if x <= left {
                go(pr, k + 1, left - x, t.max(d.time_s[i]), e + d.dynamic_energy_j[i], out);
            }
        }
    }
    let mut out = Vec::new();
    go(pr, 0, pr.units, 0.0, 0.0, &mut out);
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn problem() -> impl Strategy<Value = Problem> {
    (2usize..=3, 1u64..=5)
        .prop_flat_map(|(p, g)| {
            (
                prop::collection::vec(prop::collection::vec((0.1f64..10.0, 0.0f64..100.0), g as usize), p),
                1..=(p as u64 * g),
                0.0f64..200.0,
            )
        })
        .prop_map(|(devs, units, static_power_w)| Problem {
            devices: devs
                .into_iter()
                .enumerate()
                .map(|(i, rows)| DeviceProfile {
                    name: format!("d{i}"),
                    sizes: (1..=rows.len() as u64).collect(),
                    time_s: rows.iter().map(|r| r.0).collect(),
                    dynamic_energy_j: rows.iter().map(|r| r.1).collect(),
                })
                .collect(),
            units,
            static_power_w,
        })
}

fn sorted(front: &[ParetoPoint]) -> bool {
    front.windows(2).all(|w| w[0].time_s < w[1].time_s && w[0].energy_j > w[1].energy_j)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        rng_seed: RngSeed::Fixed(20140901),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn front_invariants_hold_on_random_instances(pr in problem(), n in 0u32..=3) {
        let all = all_distributions(&pr);
        prop_assume!(!all.is_empty());
        let dynamic = pr.front_dynamic().unwrap();
        let total = pr.front_total().unwrap();
        // Sorted: time strictly up, energy strictly down.
        prop_assert!(sorted(&dynamic), "{dynamic:?}");
        prop_assert!(sorted(&total), "{total:?}");
        // The ends are the single-objective optima over every distribution.
        let t_min = all.iter().map(|a| a.0).fold(f64::INFINITY, f64::min);
        let e_min = all.iter().map(|a| a.1).fold(f64::INFINITY, f64::min);
        prop_assert!(close(dynamic[0].time_s, t_min));
        prop_assert!(close(dynamic.last().unwrap().energy_j, e_min));
        let et_min = all.iter().map(|a| a.1 + pr.static_power_w * a.0).fold(f64::INFINITY, f64::min);
        prop_assert!(close(total[0].time_s, t_min));
        prop_assert!(close(total.last().unwrap().energy_j, et_min));
        // E·T^n: the best point on the front is the best distribution of all.
        let o = Objective { a: 1.0, b: n as f64 };
        let best_all = all.iter().map(|a| o.value(a.1, a.0)).fold(f64::INFINITY, f64::min);
        let on_front = best_on_front(&dynamic, o).unwrap();
        prop_assert!(close(o.value(on_front.energy_j, on_front.time_s), best_all));
        // Total-energy front ⊆ dynamic-energy front (as (time, dynamic energy) points).
        for q in &total {
            let e_dyn = q.energy_j - pr.static_power_w * q.time_s;
            prop_assert!(
                dynamic.iter().any(|d| close(d.time_s, q.time_s) && close(d.energy_j, e_dyn)),
                "total point {q:?} not on the dynamic front {dynamic:?}"
            );
        }
        // Every point is a real distribution of all the units with the objectives it claims.
        for q in &dynamic {
            prop_assert_eq!(q.distribution.iter().sum::<u64>(), pr.units);
            let (mut t, mut e) = (0.0f64, 0.0);
            for (d, &x) in pr.devices.iter().zip(&q.distribution) {
                if x > 0 {
                    let i = d.sizes.iter().position(|&s| s == x).unwrap();
                    t = t.max(d.time_s[i]);
                    e += d.dynamic_energy_j[i];
                }
            }
            prop_assert!(close(t, q.time_s) && close(e, q.energy_j));
        }
    }
}
