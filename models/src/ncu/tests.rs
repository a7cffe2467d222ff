//! Unit tests of the profiler importers on hand-written layouts (the real exports are tested in
//! `tests/import_profilers.rs`).

use super::common::{count_scale, value};
use super::*;
use crate::profile::Launch;
use std::collections::BTreeMap;

#[test]
fn profile_file_names_are_portable_and_numbered() {
    assert_eq!(profile_file_name(0, "void f<int, 2>(float*, int)"), "f-001.json");
    assert_eq!(profile_file_name(1, "void ns::k2<float>(float*)"), "k2-002.json");
    assert_eq!(profile_file_name(41, &"k".repeat(100)), format!("{}-042.json", "k".repeat(60)));
    assert_eq!(
        short_kernel_name("void matrixMulCUDA<int=32>(float*, float*, float*, int, int)"),
        "matrixMulCUDA"
    );
}

// Shape of `ncu --csv --page raw` (Nsight Compute 2023+): header, units row, one row per launch.
const NCU: &str = r#"==PROF== Connected to process 1234
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","launch__registers_per_thread","launch__shared_mem_per_block_static","launch__shared_mem_per_block_dynamic","smsp__inst_executed.sum","smsp__inst_executed_op_global_ld.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
"","","","","","","","","","","","usecond","register/thread","byte/block","byte/block","inst","inst","sector","sector","",""
"0","1234","vecadd","node1","vecAdd(float*, float*, float*, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","8.6","12.5","16","1,024","0","1,310,720","65,536","1,000","131,072","3","4"
"#;

#[test]
fn ncu_raw_csv_becomes_a_profile() {
    let k = read_ncu(NCU, "t.csv").unwrap().0;
    assert_eq!(k.len(), 1);
    let p = k[0].to_profile("t.csv", None).unwrap();
    assert_eq!(p.launch.grid, [4096, 1, 1]);
    assert_eq!(p.launch.block, [256, 1, 1]);
    assert_eq!(p.launch.registers_per_thread, 16);
    assert_eq!(p.launch.shared_mem_per_block, 1024);
    assert!((p.measured.time_s.unwrap() - 12.5e-6).abs() < 1e-15);
    assert_eq!(p.counter("inst_executed"), Some(1_310_720.0));
    assert_eq!(p.counter("l1_shared_bank_conflict"), Some(7.0));
    // G_load = gld_request + hits + misses = 65536 + 1000 + 131072.
    assert_eq!(p.model_input_totals()[0], ("G_load", Some(197_608.0)));
}

#[test]
fn ncu_details_page_is_refused_with_the_fix() {
    let e = read_ncu("\"ID\",\"Section Name\",\"Metric Name\"\n", "d.csv").unwrap_err().to_string();
    assert!(e.contains("--page raw"), "{e}");
}

const NVPROF: &str = r#"==1234== NVPROF is profiling process 1234, command: ./k
==1234== Profiling result:
==1234== Event result:
"Device","Kernel","Invocations","Event Name","Min","Max","Avg","Total"
"GeForce GTX 580 (0)","kern(float*)",2,"gld_request",100,120,110,220
"GeForce GTX 580 (0)","kern(float*)",2,"divergent_branch",4,4,4,8
"GeForce GTX 580 (0)","kern(float*)",2,"warps_launched",64,64,64,128
"#;

#[test]
fn nvprof_events_map_to_canonical_counters() {
    let (k, used) = read_nvprof(NVPROF, "n.csv").unwrap();
    assert_eq!(k.len(), 1);
    assert_eq!(k[0].counters.get("gld_request"), Some(&110.0));
    assert_eq!(k[0].counters.get("divergent_branch"), Some(&4.0));
    assert_eq!(used.dropped.iter().collect::<Vec<_>>(), ["warps_launched"]);
    // Without a shape the profile has an unknown launch (the roofline fallback reads it).
    assert!(!k[0].to_profile("n.csv", None).unwrap().launch.is_known());
    let launch =
        Launch { grid: [10, 1, 1], block: [128, 1, 1], registers_per_thread: 0, shared_mem_per_block: 0 };
    assert_eq!(k[0].to_profile("n.csv", Some(launch)).unwrap().launch.blocks(), 10);
}

// HAND-WRITTEN (not a capture): nvprof's metric-table layout, with the thread-level instruction
// metrics (values chosen to divide by 32 exactly).
const NVPROF_THREAD_METRICS: &str = r#"==9== Metric result:
"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"
"GeForce GTX 1080 Ti (0)","k(float*)",1,"inst_bit_convert","Bit-Convert Instructions",3200,3200,3200
"GeForce GTX 1080 Ti (0)","k(float*)",1,"inst_fp_64","FP Instructions(Double)",6400,6400,6400
"GeForce GTX 1080 Ti (0)","k(float*)",1,"inst_executed","Instructions Executed",500,500,500
"#;

/// nvprof counts conversions and FP64 per thread; the canonical counters are warp instructions.
#[test]
fn nvprof_thread_level_metrics_become_warp_instructions() {
    let (k, used) = read_nvprof(NVPROF_THREAD_METRICS, "n.csv").unwrap();
    assert!(used.dropped.is_empty(), "{used:?}");
    assert_eq!(k[0].counters.get("inst_bit_convert"), Some(&100.0));
    assert_eq!(k[0].counters.get("inst_fp_64"), Some(&200.0));
    assert_eq!(k[0].counters.get("inst_executed"), Some(&500.0));
}

#[test]
fn ncu_units_are_scaled_back_to_base_units() {
    assert_eq!(count_scale("Kbyte"), 1e3);
    assert_eq!(count_scale("Mbyte"), 1e6);
    assert_eq!(count_scale("Gbyte"), 1e9);
    assert_eq!(count_scale("Ksector"), 1e3);
    assert_eq!(count_scale("Minst"), 1e6);
    assert_eq!(count_scale("Kbyte/block"), 1e3);
    for base in ["", "byte", "inst", "sector", "byte/block", "register/thread", "%", "cycle", "K"] {
        assert_eq!(count_scale(base), 1.0, "{base}");
    }
}

/// With --events and --metrics, nvprof prints two tables whose Avg columns differ by one.
#[test]
fn nvprof_reads_each_table_with_its_own_header() {
    let text = "==1== Event result:\n\
\"Device\",\"Kernel\",\"Invocations\",\"Event Name\",\"Min\",\"Max\",\"Avg\",\"Total\"\n\
\"D (0)\",\"k\",2,\"gld_request\",10,30,20,40\n\
==1== Metric result:\n\
\"Device\",\"Kernel\",\"Invocations\",\"Metric Name\",\"Metric Description\",\"Min\",\"Max\",\"Avg\"\n\
\"D (0)\",\"k\",2,\"gst_transactions\",\"Global Store Transactions\",5,9,7\n";
    let (k, used) = read_nvprof(text, "n.csv").unwrap();
    assert_eq!(k[0].counters.get("gld_request"), Some(&20.0));
    assert_eq!(k[0].counters.get("global_store_transaction"), Some(&7.0));
    assert!(used.dropped.is_empty(), "{used:?}");
}

// HAND-WRITTEN (not a capture): the long layout of an older `ncu --csv` export (the details page, one
// row per launch and metric) without Block Size / Grid Size columns; the shape is in the Launch
// Statistics metrics.
const NCU_LONG_OLD: &str = "==PROF== Disconnected from process 99\n\
\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel Time\",\"Context\",\"Stream\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"usecond\",\"3.50\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__block_size\",\"\",\"256\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__grid_size\",\"\",\"1,024\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__registers_per_thread\",\"register/thread\",\"32\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"smsp__inst_executed.sum\",\"Minst\",\"1.50\"\n\
\"1\",\"99\",\"app\",\"n\",\"k2(int)\",\"2020-Mar-02 10:00:01\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__block_size\",\"\",\"128\"\n\
\"1\",\"99\",\"app\",\"n\",\"k2(int)\",\"2020-Mar-02 10:00:01\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__grid_size\",\"\",\"10\"\n\
\"1\",\"99\",\"app\",\"n\",\"k2(int)\",\"2020-Mar-02 10:00:01\",\"1\",\"7\",\"Command line profiler metrics\",\"smsp__inst_executed.sum\",\"inst\",\"640\"\n";

#[test]
fn old_ncu_long_layout_takes_the_shape_from_launch_metrics() {
    let k = read_ncu(NCU_LONG_OLD, "old.csv").unwrap().0;
    assert_eq!(k.len(), 2);
    let p = k[0].to_profile("old.csv", None).unwrap();
    assert_eq!(p.name, "k1(float*)");
    assert_eq!((p.launch.blocks(), p.launch.threads_per_block()), (1024, 256));
    assert_eq!(p.launch.registers_per_thread, 32);
    assert_eq!(p.counter("inst_executed"), Some(1_500_000.0));
    assert!((p.measured.time_s.unwrap() - 3.5e-6).abs() < 1e-15);
    let q = k[1].to_profile("old.csv", None).unwrap();
    assert_eq!((q.launch.blocks(), q.launch.threads_per_block()), (10, 128));
    assert_eq!(q.counter("inst_executed"), Some(640.0));
}

/// Without any shape the hint names ncu's own remedy, not nvprof's.
#[test]
fn ncu_without_a_shape_says_what_to_profile_again() {
    let no_shape: String =
        NCU_LONG_OLD.lines().filter(|l| !l.contains("launch__")).collect::<Vec<_>>().join("\n");
    let k = read_ncu(&no_shape, "old.csv").unwrap().0;
    assert!(!k[0].to_profile("old.csv", None).unwrap().launch.is_known());
    let e = k[0].origin.missing_launch_hint();
    assert!(e.contains("launch__grid_size") && e.contains("--grid"), "{e}");
    assert!(!e.contains("nvprof"), "{e}");
}

// HAND-WRITTEN (not a capture): the layout of `nvprof --print-gpu-trace --csv` — log lines, header,
// units row, copies without a grid, kernels with the correlation id after the name.
const GPU_TRACE: &str = "==7== NVPROF is profiling process 7, command: ./k\n\
==7== Profiling result:\n\
\"Start\",\"Duration\",\"Grid X\",\"Grid Y\",\"Grid Z\",\"Block X\",\"Block Y\",\"Block Z\",\"Registers Per Thread\",\"Static SMem\",\"Dynamic SMem\",\"Size\",\"Throughput\",\"SrcMemType\",\"DstMemType\",\"Device\",\"Context\",\"Stream\",\"Name\",\"Correlation_ID\"\n\
s,us,,,,,,,,KB,KB,MB,GB/s,,,,,,,\n\
0.10,1.5,,,,,,,,,,3.81,2.47,Pageable,Device,\"GeForce GTX 1080 (0)\",1,7,\"[CUDA memcpy HtoD]\",2\n\
0.20,3.0,80,2,1,256,1,1,16,1,0.5,,,,,\"GeForce GTX 1080 (0)\",1,7,\"kern(float*) [116]\",116\n\
0.30,5.0,80,2,1,256,1,1,16,1,0.5,,,,,\"GeForce GTX 1080 (0)\",1,7,\"kern(float*) [120]\",120\n\
0.40,2.0,4,1,1,32,1,1,8,0,0,,,,,\"GeForce GTX 1080 (0)\",1,7,\"other(int)\",124\n";

#[test]
fn gpu_trace_gives_shapes_and_times_joined_by_kernel_name() {
    let trace = read_nvprof_gpu_trace(GPU_TRACE, "trace.csv").unwrap();
    assert_eq!(trace.len(), 3, "the copy is skipped");
    assert_eq!(trace[0].name, "kern(float*)");
    assert_eq!(trace[0].launch.shared_mem_per_block, 1536);
    let (mut k, _) = read_nvprof(NVPROF, "n.csv").unwrap();
    let notes = join_gpu_trace(&mut k, &trace);
    assert!(notes.is_empty(), "{notes:?}");
    let p = k[0].to_profile("n.csv", None).unwrap();
    assert_eq!(p.launch.grid, [80, 2, 1]);
    assert_eq!(p.launch.registers_per_thread, 16);
    assert!((p.measured.time_s.unwrap() - 4e-6).abs() < 1e-15, "mean of 3 us and 5 us");
    // Alone, the trace gives per-kernel times and shapes.
    let alone = gpu_trace_kernels(&trace);
    assert_eq!(alone.len(), 2);
    assert_eq!(alone[1].name, "other(int)");
    assert!((alone[1].time_s.unwrap() - 2e-6).abs() < 1e-15);
    // A metric table refuses to be read as a gpu trace, and the other way round, with the fix.
    let e = read_nvprof(GPU_TRACE, "trace.csv").unwrap_err().to_string();
    assert!(e.contains("--gpu-trace"), "{e}");
    let e = read_nvprof_gpu_trace(NVPROF, "n.csv").unwrap_err().to_string();
    assert!(e.contains("--print-gpu-trace"), "{e}");
}

#[test]
fn a_kernel_missing_from_the_gpu_trace_is_noted() {
    let trace = read_nvprof_gpu_trace(GPU_TRACE, "trace.csv").unwrap();
    let mut k = vec![ImportedKernel {
        origin: Origin::Nvprof,
        name: "absent".into(),
        launch: None,
        time_s: None,
        counters: BTreeMap::new(),
        code: BTreeMap::new(),
        device: None,
        capability: None,
        core_mhz: None,
    }];
    let notes = join_gpu_trace(&mut k, &trace);
    assert!(notes[0].contains("not in the gpu trace"), "{notes:?}");
    assert!(k[0].launch.is_none() && k[0].origin.missing_launch_hint().contains("--gpu-trace"));
}

#[test]
fn table_has_inputs_and_rates() {
    let k = read_ncu(NCU, "t.csv").unwrap().0;
    let t = kernels_table(&k, "t.csv");
    assert_eq!(t.column("G_load").unwrap()[0], 197_608.0);
    assert!((t.column("exec_inst_per_s").unwrap()[0] - 1_310_720.0 / 12.5e-6).abs() < 1.0);
    assert!(t.column("T_hits").unwrap()[0].is_nan());
    // Every column once: the inputs `branch` and `divergent_branch` are the counters of those names.
    let mut names = t.columns.clone();
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "a column name appears twice");
    for input in ["branch", "divergent_branch"] {
        assert!(t.columns.iter().any(|c| c == input) && t.column(&format!("{input}_per_s")).is_some());
    }
}

/// nvprof's value spellings: `%` as a fraction, throughputs with binary prefixes, utilization levels.
#[test]
fn nvprof_values_with_units_are_read_in_base_units() {
    assert_eq!(value("100.000000%"), Some(1.0));
    assert_eq!(value("976.562500KB/s"), Some(1e6));
    assert_eq!(value("2.000000GB/s"), Some(2.0 * 1024.0 * 1024.0 * 1024.0));
    assert_eq!(value("0.000000B/s"), Some(0.0));
    assert_eq!(value("Low (1)"), Some(1.0));
    assert_eq!(value("1,024"), Some(1024.0));
    assert_eq!(value("n/a"), None);
}

/// Kepler's texture cache is separate (all its transactions are texture); from Maxwell on, the unified
/// cache's transactions include the global loads; from Volta on, shared loads and store requests too.
#[test]
fn texture_queries_follow_the_capability() {
    use super::metrics::{Capability, from_nvprof};
    let m: BTreeMap<String, f64> =
        [("tex_cache_transactions", 500.0), ("gld_transactions", 200.0), ("tex_cache_hit_rate", 0.5)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    let kepler = from_nvprof(&m, Some(Capability { major: 3, minor: 5 })).unwrap();
    let pascal = from_nvprof(&m, Some(Capability { major: 6, minor: 1 })).unwrap();
    assert_eq!(kepler.counters["tex0_cache_sector_queries"], 500.0);
    assert_eq!(pascal.counters["tex0_cache_sector_queries"], 300.0);
    assert_eq!(pascal.counters["tex0_cache_sector_misses"], 150.0);
    // Volta: the unified cache also serves shared loads and counts store requests. The V100's
    // matrixMulShared row of NV-DVFS (all but its texture-free remainder is loads, stores and shared),
    // then its convolutionTexture row (no global loads, no shared memory: the rest is texture).
    let volta = Some(Capability { major: 7, minor: 0 });
    let row =
        |v: &[(&str, f64)]| -> BTreeMap<String, f64> { v.iter().map(|(k, v)| (k.to_string(), *v)).collect() };
    let mm = from_nvprof(
        &row(&[
            ("tex_cache_transactions", 419954688.0),
            ("tex_cache_hit_rate", 0.001),
            ("gld_transactions", 67108864.0),
            ("gld_transactions_per_request", 4.0),
            ("gst_transactions", 524288.0),
            ("gst_transactions_per_request", 4.0),
            ("shared_load_transactions", 402788963.0),
        ]),
        volta,
    )
    .unwrap();
    let q = mm.counters["tex0_cache_sector_queries"];
    assert!(q < 0.001 * 419954688.0, "{q}");
    let conv = from_nvprof(
        &row(&[
            ("tex_cache_transactions", 452203520.0),
            ("tex_cache_hit_rate", 0.9496),
            ("gld_transactions", 0.0),
            ("gst_transactions", 13107200.0),
            ("gst_transactions_per_request", 4.0),
        ]),
        volta,
    )
    .unwrap();
    assert_eq!(conv.counters["tex0_cache_sector_queries"], 452203520.0 - 13107200.0 / 4.0);
    // Without a per-request figure a request is 4 sectors.
    let v =
        from_nvprof(&row(&[("tex_cache_transactions", 500.0), ("gld_transactions", 200.0)]), volta).unwrap();
    assert_eq!(v.counters["tex0_cache_sector_queries"], 450.0);
    assert_eq!(Capability::of_device("GeForce GTX 980 (0)"), Some(Capability { major: 5, minor: 2 }));
    assert_eq!(Capability::of_device("Tesla P100-PCIE-16GB (0)"), Some(Capability { major: 6, minor: 0 }));
    assert_eq!(Capability::of_device("GeForce GTX 1080 Ti (0)"), Some(Capability { major: 6, minor: 1 }));
}
