//! The power model's counter inputs: one vocabulary that every source gives on every supported chip.
//!
//! The paper's ten inputs (Table 5.2, [`crate::profile::MODEL_INPUTS`]) are Fermi events; several have no
//! equivalent that every source can give on recent chips: PM sampling has no per-opcode counts
//! (`divergent_branch`, `gld_request`), ncu and nvprof exports carry what the user asked for, and the
//! NV-DVFS rows and the built-in examples have no local-memory, texture or divergence counts. A power model
//! trained on inputs that one source lacks predicts nothing from that source.
//!
//! The vocabulary below is the set of **rates** (events or bytes per second of kernel time) that each of
//! these sources provides: the collector's per-kernel totals (range profiler) and PM-sampling traces, the
//! suite's rows, ncu and nvprof imports, NV-DVFS rows and the built-in examples. Each input is a sum of
//! canonical counters, with alternatives where sources name the same quantity differently (shared-memory
//! wavefronts, or requests plus bank-conflict replays; DRAM bytes split by direction, or not). The
//! instruction mix (FP32, FP64, integer, SFU) is what drives the SM's dynamic power; global loads and
//! stores, shared wavefronts and DRAM bytes the memory system's. L2 traffic is left out: the collector's
//! per-chip counter maps (`models/counters/*.toml`) do not collect it.
//!
//! Names end in `_per_s` so that they never collide with a canonical counter (a total) or a utilization.

/// One power input: its name, what it counts, and alternatives — each a list of canonical counters that
/// are summed. The first alternative of which at least one counter is present gives the value (absent
/// counters of that alternative count as zero: an export may hold only the L1 misses of global loads).
#[derive(Debug, Clone, Copy)]
pub struct PowerInput {
    pub name: &'static str,
    pub counts: &'static str,
    pub alternatives: &'static [&'static [&'static str]],
}

/// The power model's counter inputs, in order.
pub const POWER_INPUTS: &[PowerInput] = &[
    PowerInput { name: "inst_per_s", counts: "warp instructions", alternatives: &[&["inst_executed"]] },
    PowerInput { name: "fp32_per_s", counts: "FP32 warp instructions", alternatives: &[&["inst_fp_32"]] },
    PowerInput { name: "fp64_per_s", counts: "FP64 warp instructions", alternatives: &[&["inst_fp_64"]] },
    PowerInput { name: "int_per_s", counts: "integer warp instructions", alternatives: &[&["inst_integer"]] },
    PowerInput {
        name: "sfu_per_s",
        counts: "special-function warp instructions",
        alternatives: &[&["inst_special"]],
    },
    PowerInput { name: "branch_per_s", counts: "branch instructions", alternatives: &[&["branch"]] },
    PowerInput {
        name: "gld_per_s",
        counts: "global load sectors / transactions (L1 hits + misses, or uncached)",
        alternatives: &[&["l1_global_load_hit", "l1_global_load_miss", "uncached_global_load_transaction"]],
    },
    PowerInput {
        name: "gst_per_s",
        counts: "global store transactions",
        alternatives: &[&["global_store_transaction"]],
    },
    PowerInput {
        name: "shared_per_s",
        counts: "shared-memory wavefronts (requests + bank-conflict replays)",
        alternatives: &[&["shared_wavefronts"], &["shared_load", "shared_store", "l1_shared_bank_conflict"]],
    },
    PowerInput {
        name: "dram_bytes_per_s",
        counts: "DRAM bytes read and written",
        alternatives: &[&["dram_read_bytes", "dram_write_bytes"], &["dram_bytes"]],
    },
];

/// Whether `name` is one of the power inputs.
pub fn is_power_input(name: &str) -> bool {
    POWER_INPUTS.iter().any(|p| p.name == name)
}

/// The power input's sum over canonical counters (totals or rates alike: the sum is linear), from the first
/// alternative with a counter present; `None` when no alternative has one.
pub fn sum_of(input: &PowerInput, get: &impl Fn(&str) -> Option<f64>) -> Option<f64> {
    input.alternatives.iter().find_map(|alt| {
        let present: Vec<f64> = alt.iter().filter_map(|c| get(c)).collect();
        (!present.is_empty()).then(|| present.iter().sum())
    })
}

/// Every power input from canonical counters (`get`), `None` where the source lacks it.
pub fn values(get: impl Fn(&str) -> Option<f64>) -> Vec<(&'static str, Option<f64>)> {
    POWER_INPUTS.iter().map(|p| (p.name, sum_of(p, &get))).collect()
}

/// The counters that would give `input`, for a message: `inst_fp_64`, or `shared_wavefronts (or …)`.
pub fn needs(input: &PowerInput) -> String {
    input.alternatives.iter().map(|alt| alt.join(" + ")).collect::<Vec<_>>().join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn every_counter_is_canonical_and_names_are_unique() {
        let known = |c: &str| {
            crate::profile::CANONICAL_COUNTERS
                .iter()
                .chain(crate::profile::EXPORT_COUNTERS)
                .any(|(k, _)| *k == c)
        };
        for p in POWER_INPUTS {
            assert!(p.name.ends_with("_per_s"), "{}", p.name);
            for alt in p.alternatives {
                for c in *alt {
                    assert!(known(c), "{} reads {c}, which is not a canonical or export counter", p.name);
                }
            }
            assert_eq!(POWER_INPUTS.iter().filter(|q| q.name == p.name).count(), 1);
        }
    }

    #[test]
    fn first_present_alternative_wins_and_absent_parts_are_zero() {
        let m: BTreeMap<&str, f64> =
            [("shared_load", 10.0), ("l1_shared_bank_conflict", 4.0), ("l1_global_load_miss", 7.0)].into();
        let v = values(|c| m.get(c).copied());
        let get = |n: &str| v.iter().find(|(k, _)| *k == n).unwrap().1;
        assert_eq!(get("shared_per_s"), Some(14.0));
        assert_eq!(get("gld_per_s"), Some(7.0));
        assert_eq!(get("fp64_per_s"), None);
        let w: BTreeMap<&str, f64> = [("shared_wavefronts", 20.0), ("shared_load", 10.0)].into();
        let v = values(|c| w.get(c).copied());
        assert_eq!(v.iter().find(|(k, _)| *k == "shared_per_s").unwrap().1, Some(20.0));
    }
}
