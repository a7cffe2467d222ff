//! Built-in feature sets and derived inputs.
//!
//! A model input is either a base column of a table (`SP`, `core_mhz`, `inst_executed`, …) or a
//! **derived input**: a product / quotient of base columns and constants, written in the input's own name,
//! e.g. `SP*core_mhz`, `core_mhz^3`, `inst_executed/time_ms`. The name *is* the transform, so an artifact
//! that lists `DRAM*mem_mhz` among its inputs says exactly how `predict` recomputes that input from a
//! kernel's base values, and nothing else has to be stored or kept in sync.
//!
//! Grammar of an input name: `factor (('*' | '/') factor)*`, where `factor` is `column`, `column^k`
//! (k an integer, may be negative) or a decimal constant. A name without `*`, `/` or `^` is a base column.
//!
//! Why derived inputs: on the Guerreiro Titan X data the eight utilizations were measured once, at the
//! default clocks (975 / 3505 MHz), while power was measured at every clock pair. Dynamic power grows
//! with activity · V² · f, and V rises with f on a DVFS curve, so the activity a unit shows at another
//! clock is its utilization times the clock, and the physics is closer to `util · f · V(f)²` than to
//! `util` and `f` as separate inputs (Guerreiro et al., HPCA 2018, §III: per-component power scales with
//! utilization · V² · f). With `V ∝ f` roughly over the DVFS range, `core_mhz^3` stands in for V²·f.
//!
//! [`input_vector`] turns a kernel's base values into an artifact's input vector; [`derive_columns`] adds
//! the derived columns to a table before training.

use crate::artifact::ModelArtifact;
use crate::error::{Error, Result};
use crate::featureset::FeatureSet;
use crate::table::Table;
use ndarray::Array1;

/// One factor of a derived input.
#[derive(Debug, Clone, PartialEq)]
pub enum Factor {
    /// A base column raised to an integer power (negative for division).
    Column { name: String, power: i32 },
    /// A constant multiplier (or divisor, stored as its reciprocal).
    Constant(f64),
}

/// A parsed input name: the product of its factors.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The input name as written.
    pub name: String,
    pub factors: Vec<Factor>,
}

impl Input {
    /// Parses an input name (see the module docs for the grammar).
    pub fn parse(name: &str) -> Result<Input> {
        let bad = |why: &str| {
            Error::Invalid(format!(
                "input '{name}': {why}; write a column name, or a product like 'SP*core_mhz', 'core_mhz^3', \
                 'inst_executed/time_ms'"
            ))
        };
        let mut factors = Vec::new();
        let mut rest = name.trim();
        let mut sign = 1;
        if rest.is_empty() {
            return Err(bad("empty name"));
        }
        loop {
            let end = rest.find(['*', '/']).unwrap_or(rest.len());
            let token = rest[..end].trim();
            if token.is_empty() {
                return Err(bad("empty factor"));
            }
            let (base, power) = match token.split_once('^') {
                Some((b, p)) => {
                    let p: i32 =
                        p.trim().parse().map_err(|_| bad("the power after '^' must be an integer"))?;
                    (b.trim(), p)
                }
                None => (token, 1),
            };
            if base.is_empty() {
                return Err(bad("empty factor"));
            }
            match base.parse::<f64>() {
                Ok(c) if c.is_finite() && c != 0.0 => {
                    factors.push(Factor::Constant(c.powi(power * sign)));
                }
                Ok(_) => return Err(bad("a constant must be finite and non-zero")),
                Err(_) => factors.push(Factor::Column { name: base.to_string(), power: power * sign }),
            }
            if end == rest.len() {
                break;
            }
            sign = if rest.as_bytes()[end] == b'/' { -1 } else { 1 };
            rest = &rest[end + 1..];
        }
        Ok(Input { name: name.to_string(), factors })
    }

    /// Whether this input is a plain base column.
    pub fn is_base(&self) -> bool {
        matches!(self.factors.as_slice(), [Factor::Column { power: 1, .. }])
    }

    /// The base columns this input reads, in order of first use.
    pub fn columns(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for f in &self.factors {
            if let Factor::Column { name, .. } = f
                && !out.contains(&name.as_str())
            {
                out.push(name);
            }
        }
        out
    }

    /// Evaluates the input from base values; `None` names the first missing column. A division by zero
    /// gives an infinite or NaN value, which callers reject as non-finite.
    pub fn eval(&self, get: &impl Fn(&str) -> Option<f64>) -> std::result::Result<f64, String> {
        let mut v = 1.0;
        for f in &self.factors {
            match f {
                Factor::Constant(c) => v *= c,
                Factor::Column { name, power } => {
                    let x = get(name).ok_or_else(|| name.clone())?;
                    v *= x.powi(*power);
                }
            }
        }
        Ok(v)
    }
}

/// The base columns a list of inputs needs, in order of first use.
pub fn base_columns(inputs: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for i in inputs {
        for c in Input::parse(i)?.columns() {
            if !out.iter().any(|o| o == c) {
                out.push(c.to_string());
            }
        }
    }
    Ok(out)
}

/// Turns a kernel's base values (`get(column)`) into the artifact's input vector, in the order of
/// `artifact.inputs`. Errors name every missing base column, and any input that is not finite.
pub fn input_vector(artifact: &ModelArtifact, get: impl Fn(&str) -> Option<f64>) -> Result<Vec<f64>> {
    let parsed = artifact.inputs.iter().map(|n| Input::parse(n)).collect::<Result<Vec<_>>>()?;
    let mut missing: Vec<String> = Vec::new();
    for p in &parsed {
        for c in p.columns() {
            if get(c).is_none() && !missing.iter().any(|m| m == c) {
                missing.push(c.to_string());
            }
        }
    }
    if !missing.is_empty() {
        return Err(Error::Mismatch(format!(
            "the {} model (feature set '{}') needs base value(s) {} that were not given",
            artifact.kind.name(),
            artifact.feature_set,
            missing.join(", ")
        )));
    }
    let mut out = Vec::with_capacity(parsed.len());
    for p in &parsed {
        let v = p.eval(&get).map_err(|c| Error::Mismatch(format!("missing base value {c}")))?;
        if !v.is_finite() {
            return Err(Error::Invalid(format!(
                "input '{}' is {v} for these base values (a zero divisor?): check the kernel's values",
                p.name
            )));
        }
        out.push(v);
    }
    Ok(out)
}

/// Adds every derived input of `inputs` that the table lacks as a numeric column (base columns must
/// exist; the error names the missing one and the columns the table has).
pub fn derive_columns(table: &mut Table, inputs: &[String]) -> Result<()> {
    for name in inputs {
        if table.column_index(name).is_some() {
            continue;
        }
        let input = Input::parse(name)?;
        if input.is_base() {
            continue; // FeatureSet::check_against reports missing base columns with the table's columns.
        }
        let cols = input
            .columns()
            .iter()
            .map(|c| {
                table.column(c).map(|v| v.to_owned()).ok_or_else(|| {
                    Error::Mismatch(format!(
                        "{}: derived input '{name}' needs column '{c}', which the table does not have (it has: {})",
                        table.source,
                        table.columns.join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<Array1<f64>>>>()?;
        let names = input.columns();
        let values = Array1::from_shape_fn(table.n_rows(), |r| {
            input.eval(&|c| names.iter().position(|n| *n == c).map(|k| cols[k][r])).unwrap_or(f64::NAN)
        });
        table.set_column(name, values)?;
    }
    Ok(())
}

/// A built-in feature set, embedded from `models/featuresets/*.toml`.
pub struct Builtin {
    pub name: &'static str,
    pub summary: &'static str,
    toml: &'static str,
}

impl Builtin {
    /// The parsed feature set.
    pub fn feature_set(&self) -> FeatureSet {
        FeatureSet::from_toml_str(self.toml, self.name).expect("built-in feature sets are checked by a test")
    }
}

/// Every built-in feature set.
pub const BUILTIN: &[Builtin] = &[
    Builtin {
        name: "titanx-utilizations",
        summary: "Titan X: the 8 utilizations + core and memory clocks (the paper's 10 inputs; default)",
        toml: include_str!("../featuresets/titanx-utilizations.toml"),
    },
    Builtin {
        name: "titanx-clock-physics",
        summary: "Titan X: utilizations scaled by their clock, V²·f proxy (core_mhz^3), and the clocks",
        toml: include_str!("../featuresets/titanx-clock-physics.toml"),
    },
    Builtin {
        name: "titanx-physics-19",
        summary: "Titan X: the paper's 10 inputs plus the clock-physics terms (19 inputs)",
        toml: include_str!("../featuresets/titanx-physics-19.toml"),
    },
    Builtin {
        name: "nvdvfs-rates",
        summary: "NV-DVFS: ten nvprof counters fixed a priori (the paper's event classes) as rates per ms + the two clocks",
        toml: include_str!("../featuresets/nvdvfs-rates.toml"),
    },
    Builtin {
        name: "nvdvfs-per-cycle",
        summary: "NV-DVFS: the same ten counters as events per cycle of their clock domain + the two clocks",
        toml: include_str!("../featuresets/nvdvfs-per-cycle.toml"),
    },
];

/// A built-in feature set by name.
pub fn builtin(name: &str) -> Result<FeatureSet> {
    BUILTIN.iter().find(|b| b.name == name).map(Builtin::feature_set).ok_or_else(|| {
        Error::Invalid(format!(
            "unknown feature set '{name}': use one of {} or the path of a TOML file",
            BUILTIN.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// The default feature set of a Guerreiro-format table, whatever its number of utilization columns:
/// the utilizations plus the clocks; the MLR base set is the utilizations alone.
pub fn guerreiro_default(table: &Table) -> Result<FeatureSet> {
    let clocks: Vec<String> =
        table.columns.iter().filter(|c| c.ends_with("_mhz") && !c.starts_with("default_")).cloned().collect();
    let utils: Vec<String> =
        table.columns.iter().filter(|c| *c != "power_w" && !c.ends_with("_mhz")).cloned().collect();
    if utils.is_empty() {
        return Err(Error::Invalid(format!("{}: no utilization columns to train on", table.source)));
    }
    let fs = FeatureSet {
        name: if utils.len() == 8 && clocks.len() == 2 {
            "titanx-utilizations".into()
        } else {
            format!("guerreiro-{}-utilizations", utils.len())
        },
        inputs: utils.iter().chain(&clocks).cloned().collect(),
        target: "power_w".into(),
        group: crate::table::GROUP_COLUMN.into(),
        mlr_base: utils,
    };
    fs.check()?;
    Ok(fs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_products_powers_and_quotients() {
        let i = Input::parse("SP*core_mhz^2/time_ms*0.001").unwrap();
        assert_eq!(i.columns(), vec!["SP", "core_mhz", "time_ms"]);
        let get = |c: &str| match c {
            "SP" => Some(0.5),
            "core_mhz" => Some(1000.0),
            "time_ms" => Some(4.0),
            _ => None,
        };
        // 0.5 · 1000² / 4 · 0.001 = 125
        assert!((i.eval(&get).unwrap() - 125.0).abs() < 1e-9);
        assert!(Input::parse("SP").unwrap().is_base());
        assert!(!Input::parse("core_mhz^3").unwrap().is_base());
    }

    #[test]
    fn bad_names_are_errors() {
        for bad in ["", "a**b", "a^x", "a*0", "*a"] {
            assert!(Input::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn builtins_parse_and_their_inputs_parse() {
        for b in BUILTIN {
            let fs = b.feature_set();
            assert_eq!(fs.name, b.name);
            base_columns(&fs.inputs).unwrap();
        }
        assert!(builtin("nope").unwrap_err().to_string().contains("titanx-utilizations"));
    }

    #[test]
    fn derive_columns_adds_products() {
        let mut t =
            Table::read_csv_bytes(b"kernel,power_w,SP,core_mhz\nk,1,0.5,1000\n", "t", "kernel").unwrap();
        derive_columns(&mut t, &["SP*core_mhz".into(), "SP".into()]).unwrap();
        assert_eq!(t.column("SP*core_mhz").unwrap()[0], 500.0);
        let err = derive_columns(&mut t, &["SP*mem_mhz".into()]).unwrap_err().to_string();
        assert!(err.contains("'mem_mhz'"), "{err}");
    }
}
