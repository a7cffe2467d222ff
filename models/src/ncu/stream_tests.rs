//! Tests of the streaming ncu reader: what it keeps, the GPU it reads, launches without IDs, line numbers.

use super::metrics::{Mapped, from_ncu, ncu_reads};
use super::*;

/// The streaming reader keeps only the metrics `ncu_reads` names for `from_ncu`: every name `from_ncu`
/// looks up must be one of them (`Reader` asserts it under test), with no metric present and with all.
#[test]
fn from_ncu_reads_only_the_metrics_the_reader_keeps() {
    let mut all = BTreeMap::new();
    for unit in ["sm", "smsp"] {
        for p in ["f", "d", "h"] {
            for op in ["fma", "mul", "add"] {
                let n = format!("{unit}__sass_thread_inst_executed_op_{p}{op}_pred_on.sum");
                assert!(ncu_reads(&n), "{n}");
                all.insert(n, 32.0);
            }
        }
    }
    for n in ["dram__bytes.sum", "lts__t_bytes.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] {
        all.insert(n.to_string(), 64.0);
    }
    from_ncu(&BTreeMap::new(), &mut Mapped::default()).unwrap();
    let mut m = Mapped::default();
    from_ncu(&all, &mut m).unwrap();
    assert_eq!(m.counters["inst_fp_32"], 3.0);
    assert!(!ncu_reads("sm__sass_thread_inst_executed_op_ffma_pred_off.sum"));
    assert!(!ncu_reads("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
}

const WIDE_NAMED: &str = "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"CC\",\"device__attribute_display_name\",\"smsp__inst_executed.sum\"\n\
\"0\",\"k(int)\",\"(128, 1, 1)\",\"(8, 1, 1)\",\"8.6\",\"NVIDIA GeForce RTX 3090\",\"640\"\n";

/// The GPU comes from the export: its name first (a built-in architecture's name when it has one), else
/// the `CC` column's compute capability; the capability columns are neither mapped nor dropped metrics.
#[test]
fn the_gpu_is_read_from_the_device_columns() {
    let (k, use_) = read_ncu(WIDE_NAMED, "w.csv").unwrap();
    assert_eq!(k[0].gpu().as_deref(), Some("NVIDIA GeForce RTX 3090"));
    assert!(!use_.dropped.contains("CC") && !use_.mapped.contains("CC"), "{use_:?}");
    let cc_only = WIDE_NAMED.replace("NVIDIA GeForce RTX 3090", "");
    assert_eq!(read_ncu(&cc_only, "w.csv").unwrap().0[0].gpu().as_deref(), Some("sm_86"));
    let a100 = WIDE_NAMED.replace("NVIDIA GeForce RTX 3090", "NVIDIA A100-SXM4-40GB");
    assert_eq!(read_ncu(&a100, "w.csv").unwrap().0[0].gpu().as_deref(), Some("a100"));
}

/// The long layout's device attribute metrics give the compute capability, and count as mapped.
#[test]
fn the_long_layout_capability_attributes_give_the_gpu() {
    let rows = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
                \"0\",\"k\",\"device__attribute_compute_capability_major\",\"\",\"8\"\n\
                \"0\",\"k\",\"device__attribute_compute_capability_minor\",\"\",\"0\"\n\
                \"0\",\"k\",\"dram__bytes.sum\",\"Kbyte\",\"4\"\n";
    let (k, use_) = read_ncu(rows, "l.csv").unwrap();
    assert_eq!(k[0].gpu().as_deref(), Some("sm_80"));
    assert_eq!(k[0].counters["dram_bytes"], 4000.0);
    assert!(use_.mapped.contains("device__attribute_compute_capability_major"), "{use_:?}");
}

/// Without an ID column, a launch is the run of rows of one kernel until a metric repeats: two launches
/// of the same kernel one after the other stay two.
#[test]
fn the_long_layout_without_ids_splits_launches_where_a_metric_repeats() {
    let rows = "\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
                \"k\",\"smsp__inst_executed.sum\",\"inst\",\"100\"\n\
                \"k\",\"dram__bytes.sum\",\"byte\",\"64\"\n\
                \"k\",\"smsp__inst_executed.sum\",\"inst\",\"200\"\n\
                \"k\",\"dram__bytes.sum\",\"byte\",\"32\"\n\
                \"j\",\"smsp__inst_executed.sum\",\"inst\",\"300\"\n";
    let k = read_ncu(rows, "l.csv").unwrap().0;
    let got: Vec<(&str, f64)> = k.iter().map(|k| (k.name.as_str(), k.counters["inst_executed"])).collect();
    assert_eq!(got, [("k", 100.0), ("k", 200.0), ("j", 300.0)]);
    assert_eq!(k[1].counters["dram_bytes"], 32.0);
}

/// `==PROF==` lines inside the table and the program's output before it are skipped, and an error names
/// the line of the file.
#[test]
fn errors_name_the_file_line_past_skipped_lines() {
    let text = "program output\n==PROF== Connected\n\
                \"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
                ==PROF== Profiling \"k\"\n\
                \"0\",\"k\",\"dram__bytes.sum\",\"byte\",\"1e300\"\n";
    let e = read_ncu(text, "p.csv").unwrap_err().to_string();
    assert!(e.starts_with("p.csv:5:") && e.contains("dram__bytes.sum"), "{e}");
    let bom = format!("\u{feff}{}", WIDE_NAMED);
    assert_eq!(read_ncu(&bom, "b.csv").unwrap().0.len(), 1);
}
