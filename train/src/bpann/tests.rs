//! The BP-ANN's tests: fits of smooth functions, the native path against burn's, restarts in parallel.

use super::native::PANICKING_SEED;
use super::*;
#[cfg(feature = "burn")]
use crate::lbfgs::Precision;
use ndarray::{Array1, Array2};
use std::sync::mpsc;

fn smooth(n: usize) -> Dataset {
    // power = 60 + 80·σ(3a − 1) + 20·b, a smooth function a 2-4-4-1 net can learn.
    let records = Array2::from_shape_fn((n, 2), |(i, j)| ((i * (3 + 4 * j)) % 17) as f64 / 17.0);
    let targets = Array1::from_shape_fn(n, |i| {
        let (a, b) = (records[[i, 0]], records[[i, 1]]);
        60.0 + 80.0 / (1.0 + (-(3.0 * a - 1.0)).exp()) + 20.0 * b
    });
    Dataset {
        records,
        targets,
        feature_names: vec!["a".into(), "b".into()],
        target_name: "power_w".into(),
        groups: (0..n).map(|i| format!("g{}", i % 10)).collect(),
    }
}

#[test]
fn averaged_network_is_the_mean_of_its_members() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let nets: Vec<Vec<Dense>> = (0..3).map(|_| init_layers(&[3, 4, 2, 1], &mut rng)).collect();
    let avg = average_networks(&nets);
    let z = Array2::from_shape_fn((7, 3), |(i, j)| (i as f64 - 3.0) * 0.4 + j as f64 * 0.3);
    let mean: Vec<f64> =
        (0..7).map(|r| nets.iter().map(|n| forward_std(n, &z)[r]).sum::<f64>() / 3.0).collect();
    for (a, b) in forward_std(&avg, &z).iter().zip(&mean) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn bad_params_are_rejected_before_work() {
    let p = BpannParams { hidden: vec![0], ..Default::default() };
    assert!(p.check().unwrap_err().to_string().contains("--hidden"));
    let p = BpannParams { restarts: 0, ..Default::default() };
    assert!(p.check().is_err());
    let p = BpannParams { learning_rate: f64::NAN, ..Default::default() };
    assert!(p.check().is_err());
}

/// The L-BFGS path fits the same network to the same function, reproducibly, within far fewer
/// iterations than Adam's epochs.
#[test]
fn lbfgs_learns_a_smooth_function_reproducibly() {
    let ds = smooth(200);
    let p = BpannParams { restarts: 2, max_epochs: 300, solver: Solver::Lbfgs, ..Default::default() }
        .check()
        .unwrap();
    let a = p.fit_report(&ds, &mut |_| {}).unwrap();
    assert_eq!(a.artifact, p.fit(&ds).unwrap(), "same seed, same model");
    let pred = a.artifact.predict(ds.records.view());
    let rmse = crate::metrics::rmse(pred.as_slice().unwrap(), ds.targets.as_slice().unwrap()).unwrap();
    assert!(rmse < 1.5, "rmse {rmse}");
    assert!(a.restarts.iter().all(|r| r.epochs_run <= 300));
    // The artifact says which arithmetic fitted it: this CPU's path, f32 on the 4×4 network.
    let arith = a.artifact.arithmetic.as_ref().expect("recorded");
    assert_eq!(
        (arith.instructions.as_str(), arith.precision.as_str()),
        (crate::lbfgs::instruction_path(), "f32")
    );
    let f64_net = BpannParams { hidden: vec![3], ..p.clone() }.arithmetic(&[2, 3, 1]);
    assert_eq!(f64_net.precision, "f64", "layouts without the fused kernel run in f64");
    #[cfg(feature = "burn")]
    for (x, y) in burn_forward(&a.artifact, &ds.records).iter().zip(pred.iter()) {
        assert!((x - y).abs() < 1e-9);
    }
}

/// The native Adam path is burn's Adam on our own gradient: the same trajectory up to rounding, so
/// the weights after a few hundred steps agree to many digits in f64 (a wrong step formula, a
/// missing bias correction or the loss off by the factor 2 would drift by far more), and to f32
/// rounding with the default single-precision gradient (measured 6e-7 here; bound 1e-5).
#[cfg(feature = "burn")]
#[test]
fn native_adam_follows_burns_adam() {
    let ds = smooth(120);
    let p = BpannParams {
        restarts: 1,
        max_epochs: 300,
        patience: usize::MAX,
        precision: Precision::F64,
        ..Default::default()
    };
    native_follows_burn(&ds, &p, "full batch");
}

/// An artifact's weights and biases, flattened.
#[cfg(feature = "burn")]
fn flat(a: &ModelArtifact) -> Vec<f64> {
    a.layers
        .iter()
        .flat_map(|d| d.weights.iter().flatten().chain(&d.bias).copied().collect::<Vec<_>>())
        .collect()
}

/// Fits `p` on our gradient (f64 and f32) and on burn's autodiff, checks that the fits agree (f64 to
/// 1e-7, f32 to 1e-5, relative to burn's weights) and that the weights moved away from their initial
/// values; returns the native f64 weights.
#[cfg(feature = "burn")]
fn native_follows_burn(ds: &Dataset, p: &BpannParams, what: &str) -> Vec<f64> {
    let fit = |q: BpannParams| flat(&q.check().unwrap().fit(ds).unwrap());
    let a = fit(p.clone());
    let single = fit(BpannParams { precision: Precision::F32, ..p.clone() });
    let b = fit(BpannParams { backend: Backend::Burn, ..p.clone() });
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-7 * x.abs().max(1.0), "{what}: native {x} vs burn {y}");
    }
    for (x, y) in single.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "{what}: native f32 {x} vs burn {y}");
    }
    let init = init_layers(&[2, 4, 4, 1], &mut ChaCha8Rng::seed_from_u64(p.seed));
    let moved = a.iter().zip(init.iter().flat_map(|d| d.weights.iter().flatten().chain(&d.bias)));
    assert!(moved.map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) > 0.1, "{what}: the weights did not move");
    a
}

/// The restart tests' data: 150 smooth rows standardized, the first 100 to train on and the last
/// 50 to validate on, and the rescaled targets of all 150.
fn restart_fixture() -> (Array2<f64>, Array2<f64>, Vec<f64>) {
    let ds = smooth(150);
    let z = standardize(&ds.records, &input_scaling(&ds.records));
    let y: Vec<f64> = ds.targets.iter().map(|v| (v - 100.0) / 30.0).collect();
    (z.slice(ndarray::s![..100, ..]).to_owned(), z.slice(ndarray::s![100.., ..]).to_owned(), y)
}

/// Restarts on several threads give exactly the outcomes of one thread (each restart depends only
/// on its seed, however its slices are scheduled), for both native solvers; 120 iterations are
/// several slices.
#[test]
fn parallel_restarts_equal_sequential_ones() {
    let (zt, zv, y) = restart_fixture();
    for solver in [Solver::Lbfgs, Solver::Adam] {
        let p = BpannParams { restarts: 3, max_epochs: 120, solver, ..Default::default() };
        let run = |threads| {
            let mut units = 0;
            let out = p.restarts_run(&[2, 4, 4, 1], (&zt, &y[..100]), (&zv, &y[100..]), threads, &mut |u| {
                units += u
            });
            (out, units)
        };
        let (one, units_one) = run(1);
        // Two threads for three restarts: the restarts are run in slices and change threads.
        let (two, units_two) = run(2);
        let (three, units_three) = run(3);
        assert_eq!(one, two, "{solver:?}");
        assert_eq!(one, three, "{solver:?}");
        assert_eq!(units_one, units_two, "{solver:?}: progress units");
        assert_eq!(units_one, units_three, "{solver:?}: progress units");
        assert_eq!(one.len(), 3);
    }
}

/// A restart that panics (a bug; forced here by the test-only hook at its 60th iteration) ends
/// alone: the restart threads do not hang, the other restarts run to their end with the outcomes
/// they have when run by themselves, and the fit returns an error naming the failed restart — with
/// one thread and with the restarts sliced across two, for both native solvers.
#[test]
fn a_panicking_restart_fails_the_fit_alone_and_the_others_finish() {
    let (zt, zv, y) = restart_fixture();
    for solver in [Solver::Lbfgs, Solver::Adam] {
        // Restart 2 of 3 has the panicking seed.
        let p = BpannParams {
            restarts: 3,
            max_epochs: 120,
            seed: PANICKING_SEED - 1,
            solver,
            ..Default::default()
        };
        for threads in [1, 2] {
            // The deadlock guard: the restarts run on their own thread and this one gives up
            // waiting after a generous time (a hang, not a speed check: the fits take milliseconds).
            let (tx, rx) = mpsc::channel();
            let (p2, zt2, zv2, y2) = (p.clone(), zt.clone(), zv.clone(), y.clone());
            std::thread::spawn(move || {
                let out = p2.restarts_run(
                    &[2, 4, 4, 1],
                    (&zt2, &y2[..100]),
                    (&zv2, &y2[100..]),
                    threads,
                    &mut |_| {},
                );
                let _ = tx.send(out);
            });
            let out = rx.recv_timeout(std::time::Duration::from_secs(300)).unwrap_or_else(|e| match e {
                std::sync::mpsc::RecvTimeoutError::Timeout => {
                    panic!("{solver:?}, {threads} threads: the restarts hung after a panic")
                }
                std::sync::mpsc::RecvTimeoutError::Disconnected => {
                    panic!("{solver:?}, {threads} threads: the panic crossed the restart threads")
                }
            });
            assert_eq!(out.len(), 3);
            let failed = out[1].as_ref().expect_err("restart 2 panicked");
            assert!(failed.contains("forced panic"), "{failed}");
            for r in [0, 2] {
                let alone = BpannParams { restarts: 1, seed: p.seed + r as u64, ..p.clone() }.restarts_run(
                    &[2, 4, 4, 1],
                    (&zt, &y[..100]),
                    (&zv, &y[100..]),
                    1,
                    &mut |_| {},
                );
                assert_eq!(
                    out[r],
                    alone[0],
                    "{solver:?}, {threads} threads: restart {} finished as alone",
                    r + 1
                );
                assert_eq!(out[r].as_ref().map(|o| o.1), Ok(120), "{solver:?}: ran to its end");
            }
        }
    }
    let p = BpannParams { restarts: 3, max_epochs: 120, seed: PANICKING_SEED - 1, ..Default::default() };
    let err = p.fit_report(&smooth(150), &mut |_| {}).expect_err("a restart panicked");
    let msg = err.to_string();
    assert!(msg.contains("restart 2 of 3") && msg.contains("forced panic"), "{msg}");
}

#[test]
fn learns_a_smooth_function_reproducibly_and_burn_agrees() {
    let ds = smooth(200);
    let p = BpannParams { restarts: 2, max_epochs: 600, learning_rate: 0.03, ..Default::default() }
        .check()
        .unwrap();
    let a = p.fit(&ds).unwrap();
    let b = p.fit(&ds).unwrap();
    assert_eq!(a, b, "same seed, same model");
    let pred = a.predict(ds.records.view());
    let rmse = crate::metrics::rmse(pred.as_slice().unwrap(), ds.targets.as_slice().unwrap()).unwrap();
    // The target spans ~60-160 W; the mean predictor would have an RMSE of ~25 W.
    assert!(rmse < 3.0, "rmse {rmse}");
    #[cfg(feature = "burn")]
    for (x, y) in burn_forward(&a, &ds.records).iter().zip(pred.iter()) {
        assert!((x - y).abs() < 1e-9);
    }
}
