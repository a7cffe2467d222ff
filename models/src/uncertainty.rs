//! How precise a held-out figure is: a bootstrap over the test set's applications (kernels), for the
//! power models' held-out figures (`train`) and the timing model's errors beside a peer's (`validate`).
//!
//! A held-out MAPE is measured on a sample of applications (35 on the Titan X test file). Another 35
//! applications would give another figure, and two models' figures differ by less than that spread more
//! often than not. Resampling whole applications with replacement, and recomputing the reported statistic
//! (the median over a network's seeds of the MAPE over rows) on each resample, gives a percentile interval
//! for the figure and, for two models scored on the same resample, for their difference. Rows of one
//! application are not independent (the same code at 64 clock pairs), so the application is the unit
//! that is resampled, never the row.

use crate::error::{Error, Result};
use crate::stats::median;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// One model's held-out predictions: one vector per seed (one for models without a seed), each with a
/// prediction for every test row.
#[derive(Debug, Clone)]
pub struct SeedPredictions {
    pub model: String,
    pub per_seed: Vec<Vec<f64>>,
}

/// A 95% percentile interval, in percentage points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

/// One model against the reference model, on the same resamples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Paired {
    pub reference: String,
    /// This model's figure minus the reference's, percentage points (negative: this model is better).
    pub difference_pct: f64,
    pub ci95_pct: Interval,
    /// The share of resamples in which this model's figure is below the reference's.
    pub share_better: f64,
}

/// One model's held-out figure with its interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelInterval {
    pub model: String,
    pub seeds: usize,
    /// The figure on the test set as it is: the median over seeds of the MAPE over rows, %.
    pub mape_pct: f64,
    pub ci95_pct: Interval,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_reference: Option<Paired>,
}

/// The bootstrap of every model's held-out figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Uncertainty {
    pub method: &'static str,
    pub applications: usize,
    pub resamples: usize,
    pub seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    pub models: Vec<ModelInterval>,
}

/// Per application: its row count and, per seed, the sum over its rows of |predicted − measured| / measured.
struct Sums {
    rows: Vec<f64>,
    /// `err[seed][application]`.
    err: Vec<Vec<f64>>,
}

fn sums(per_seed: &[Vec<f64>], actual: &[f64], apps: &[Vec<usize>]) -> Result<Sums> {
    let mut err = Vec::with_capacity(per_seed.len());
    for p in per_seed {
        if p.len() != actual.len() {
            return Err(Error::Invalid(format!("{} predictions for {} test rows", p.len(), actual.len())));
        }
        err.push(
            apps.iter()
                .map(|idx| idx.iter().map(|&r| ((p[r] - actual[r]) / actual[r]).abs()).sum())
                .collect(),
        );
    }
    Ok(Sums { rows: apps.iter().map(|idx| idx.len() as f64).collect(), err })
}

/// The reported statistic on one resample (`count[k]` copies of application k): the median over seeds
/// of the MAPE over the resample's rows, %.
fn statistic(s: &Sums, count: &[f64]) -> f64 {
    let n: f64 = s.rows.iter().zip(count).map(|(r, c)| r * c).sum();
    median(s.err.iter().map(|e| 100.0 * e.iter().zip(count).map(|(x, c)| x * c).sum::<f64>() / n).collect())
}

/// The 2.5th and 97.5th percentiles of `v` (linear interpolation between order statistics).
fn interval(mut v: Vec<f64>) -> Interval {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let x = q * (v.len() - 1) as f64;
        let (i, f) = (x.floor() as usize, x - x.floor());
        if i + 1 < v.len() { v[i] * (1.0 - f) + v[i + 1] * f } else { v[i] }
    };
    Interval { lo: at(0.025), hi: at(0.975) }
}

/// A 95% percentile interval of `statistic` over `values`, one per application (kernel): `resamples`
/// draws of as many values as there are, with replacement (seeded). `None` for fewer than two values.
pub fn interval_of(
    values: &[f64],
    statistic: &dyn Fn(Vec<f64>) -> f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    if values.len() < 2 || resamples == 0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let draws = (0..resamples)
        .map(|_| statistic((0..values.len()).map(|_| values[rng.random_range(0..values.len())]).collect()))
        .collect();
    Some(interval(draws))
}

/// The number of applications (distinct groups) in `groups`: the bootstrap needs at least two.
pub fn applications(groups: &[String]) -> usize {
    groups.iter().collect::<std::collections::BTreeSet<_>>().len()
}

/// Bootstraps every model's held-out figure over the test set's applications: `resamples` draws of as
/// many applications as the test set has, with replacement (seeded: the same call gives the same
/// figures). With a `reference` among the models, each other model's difference to it is computed on
/// the same draws.
pub fn bootstrap(
    models: &[SeedPredictions],
    actual: &[f64],
    groups: &[String],
    reference: Option<&str>,
    resamples: usize,
    seed: u64,
) -> Result<Uncertainty> {
    if groups.len() != actual.len() {
        return Err(Error::Invalid(format!("{} group labels for {} test rows", groups.len(), actual.len())));
    }
    if let Some(i) = actual.iter().position(|a| *a == 0.0 || !a.is_finite()) {
        return Err(Error::Invalid(format!(
            "test row {}: the measured value is {}, so MAPE is undefined: remove that row",
            i + 1,
            actual[i]
        )));
    }
    if resamples < 100 {
        return Err(Error::Invalid(format!("{resamples} resamples: a 95% interval needs at least 100")));
    }
    let mut by_app: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for (r, g) in groups.iter().enumerate() {
        by_app.entry(g.as_str()).or_default().push(r);
    }
    let apps: Vec<Vec<usize>> = by_app.into_values().collect();
    if apps.len() < 2 {
        return Err(Error::Invalid(
            "the test set has one application: a bootstrap over applications needs at least two".into(),
        ));
    }
    let all: Vec<Sums> = models.iter().map(|m| sums(&m.per_seed, actual, &apps)).collect::<Result<_>>()?;
    let ref_index = reference.and_then(|r| models.iter().position(|m| m.model == r));
    let k = apps.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); models.len()];
    let mut count = vec![0.0; k];
    for _ in 0..resamples {
        count.iter_mut().for_each(|c| *c = 0.0);
        for _ in 0..k {
            count[rng.random_range(0..k)] += 1.0;
        }
        for (d, s) in draws.iter_mut().zip(&all) {
            d.push(statistic(s, &count));
        }
    }
    // Each model's figure on the test set as it is (every application once).
    let ones = vec![1.0; k];
    let point: Vec<f64> = all.iter().map(|s| statistic(s, &ones)).collect();
    let out = models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let vs_reference = ref_index.filter(|&r| r != i).map(|r| {
                let diff: Vec<f64> = draws[i].iter().zip(&draws[r]).map(|(a, b)| a - b).collect();
                let better = diff.iter().filter(|d| **d < 0.0).count() as f64 / resamples as f64;
                Paired {
                    reference: models[r].model.clone(),
                    difference_pct: point[i] - point[r],
                    ci95_pct: interval(diff),
                    share_better: better,
                }
            });
            ModelInterval {
                model: m.model.clone(),
                seeds: m.per_seed.len(),
                mape_pct: point[i],
                ci95_pct: interval(draws[i].clone()),
                vs_reference,
            }
        })
        .collect();
    Ok(Uncertainty {
        method: "percentile bootstrap over the test set's applications (whole applications drawn with replacement; the statistic is the reported one, the median over seeds of the MAPE over rows)",
        applications: k,
        resamples,
        seed,
        reference: ref_index.map(|r| models[r].model.clone()),
        models: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(spec: &[(&str, usize)]) -> Vec<String> {
        spec.iter().flat_map(|(g, n)| std::iter::repeat_n(g.to_string(), *n)).collect()
    }

    #[test]
    fn the_point_figure_is_the_mape_and_the_interval_covers_the_spread_of_applications() {
        // Three applications of two rows each; application errors 10%, 20%, 30% on every row.
        let actual = vec![100.0; 6];
        let pred = vec![110.0, 90.0, 120.0, 80.0, 130.0, 70.0];
        let g = groups(&[("a", 2), ("b", 2), ("c", 2)]);
        let m = [SeedPredictions { model: "m".into(), per_seed: vec![pred.clone()] }];
        let u = bootstrap(&m, &actual, &g, None, 4000, 7).unwrap();
        let x = &u.models[0];
        assert!((x.mape_pct - 20.0).abs() < 1e-12);
        assert_eq!(u.applications, 3);
        // Each of the 27 resamples has probability 1/27 > 2.5%, so all-a and all-c are the bounds.
        assert_eq!((x.ci95_pct.lo.round(), x.ci95_pct.hi.round()), (10.0, 30.0));
    }

    #[test]
    fn interval_of_a_statistic_over_applications() {
        // Two values: every resample is (a, a), (a, b), (b, a) or (b, b), each a quarter, so the 2.5th and
        // 97.5th percentiles of the median are the two values themselves.
        let i = interval_of(&[0.0, 10.0], &|v| median(v), 2000, 3).unwrap();
        assert_eq!((i.lo, i.hi), (0.0, 10.0));
        // Twenty equal values leave no spread; one value cannot be resampled.
        let i = interval_of(&[4.0; 20], &|v| median(v), 500, 3).unwrap();
        assert_eq!((i.lo, i.hi), (4.0, 4.0));
        assert!(interval_of(&[4.0], &|v| median(v), 500, 3).is_none());
        // Half the kernels at 0 and half at 6: the interval of the mean is inside (0, 6) and around 3.
        let v: Vec<f64> = (0..30).map(|k| if k % 2 == 0 { 0.0 } else { 6.0 }).collect();
        let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
        let i = interval_of(&v, &mean, 4000, 3).unwrap();
        assert!(i.lo > 1.0 && i.lo < 3.0 && i.hi > 3.0 && i.hi < 5.0, "{i:?}");
        assert_eq!(interval_of(&v, &mean, 4000, 3), Some(i));
    }

    #[test]
    fn seeded() {
        // Ten applications erring by 1%..10%: the same seed gives the same interval, another seed another.
        let actual = vec![100.0; 10];
        let pred: Vec<f64> = (1..=10).map(|e| 100.0 + e as f64).collect();
        let g: Vec<String> = (0..10).map(|i| format!("k{i}")).collect();
        let m = [SeedPredictions { model: "m".into(), per_seed: vec![pred] }];
        let u = bootstrap(&m, &actual, &g, None, 1000, 7).unwrap();
        assert_eq!(bootstrap(&m, &actual, &g, None, 1000, 7).unwrap(), u);
        assert_ne!(
            bootstrap(&m, &actual, &g, None, 1000, 8).unwrap().models[0].ci95_pct,
            u.models[0].ci95_pct
        );
    }

    #[test]
    fn whole_applications_are_resampled_not_rows() {
        // One application of 99 rows at 0% error and one of 1 row at 100%: the pooled MAPE is 1%. A
        // resample of applications is either both (1%), all-big (0%) or all-small (100%) — a row
        // bootstrap would give a narrow interval around 1% instead.
        let mut actual = vec![100.0; 100];
        actual[99] = 50.0;
        let mut pred = vec![100.0; 100];
        pred[99] = 100.0;
        let g = groups(&[("big", 99), ("small", 1)]);
        let m = [SeedPredictions { model: "m".into(), per_seed: vec![pred] }];
        let u = bootstrap(&m, &actual, &g, None, 2000, 1).unwrap();
        assert!((u.models[0].mape_pct - 1.0).abs() < 1e-12);
        assert_eq!(u.models[0].ci95_pct, Interval { lo: 0.0, hi: 100.0 });
    }

    #[test]
    fn the_median_over_seeds_and_the_paired_difference() {
        let actual = vec![100.0; 4];
        let g = groups(&[("a", 2), ("b", 2)]);
        let at = |e: f64| vec![100.0 + e; 4];
        // Seeds with 1%, 5% and 9% on every row: the median is 5%. The reference errs by 6% everywhere,
        // so on every resample the model is 1 point better.
        let m = [
            SeedPredictions { model: "net".into(), per_seed: vec![at(1.0), at(9.0), at(5.0)] },
            SeedPredictions { model: "ref".into(), per_seed: vec![at(-6.0)] },
        ];
        let u = bootstrap(&m, &actual, &g, Some("ref"), 500, 3).unwrap();
        assert_eq!(u.reference.as_deref(), Some("ref"));
        let net = &u.models[0];
        assert!((net.mape_pct - 5.0).abs() < 1e-12);
        let p = net.vs_reference.as_ref().unwrap();
        assert!((p.difference_pct + 1.0).abs() < 1e-12);
        assert!((p.ci95_pct.lo + 1.0).abs() < 1e-12 && (p.ci95_pct.hi + 1.0).abs() < 1e-12);
        assert_eq!(p.share_better, 1.0);
        assert!(u.models[1].vs_reference.is_none(), "the reference is not compared with itself");
    }

    #[test]
    fn bad_input_is_an_error() {
        let g = groups(&[("a", 1), ("b", 1)]);
        let m = [SeedPredictions { model: "m".into(), per_seed: vec![vec![1.0, 2.0]] }];
        assert!(
            bootstrap(&m, &[1.0, 0.0], &g, None, 200, 1)
                .unwrap_err()
                .to_string()
                .contains("MAPE is undefined")
        );
        assert!(
            bootstrap(&m, &[1.0, 2.0], &g, None, 10, 1).unwrap_err().to_string().contains("at least 100")
        );
        let one = groups(&[("a", 2)]);
        assert!(
            bootstrap(&m, &[1.0, 2.0], &one, None, 200, 1)
                .unwrap_err()
                .to_string()
                .contains("one application")
        );
        let short = [SeedPredictions { model: "m".into(), per_seed: vec![vec![1.0]] }];
        assert!(bootstrap(&short, &[1.0, 2.0], &g, None, 200, 1).is_err());
    }
}
