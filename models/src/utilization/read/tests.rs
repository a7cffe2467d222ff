//! The utilization readers' tests.

use super::*;

const DMON: &str = "\
# Entity  GRACT  SMACT  SMOCC  TENSO  DRAMA  FP64A  FP32A  FP16A   POWER  SACLK
      Id                                                              W
     GPU 0  0.000  0.000  0.000  0.000  0.000  0.000  0.000  0.000  24.1   1380
     GPU 0  0.900  0.800  0.400  0.000  0.500  0.000  0.300  0.000  200.0  1380
     GPU 1  0.500  0.500  0.200  0.000  0.100  0.000  0.100  0.000  100.0  1230
     GPU 0  1.000  0.600  0.400  0.000  0.300  0.000  0.100  0.000  180.0  1380
#Entity   GRACT  SMACT  SMOCC  TENSO  DRAMA  FP64A  FP32A  FP16A   POWER  SACLK
ID                                                                    W
GPU 1     N/A    N/A    N/A    N/A    N/A    N/A    N/A    N/A     99.0   1230
";

#[test]
fn dmon_averages_active_samples_per_device_under_both_header_spellings() {
    let set = read_text(DMON, "d.txt", ProfileFormat::Dmon, &ReadOptions::default()).unwrap();
    assert_eq!(set.profiles.len(), 2);
    let g0 = &set.profiles[0];
    assert_eq!(g0.name, "GPU 0");
    assert_eq!(g0.samples, 2, "the idle first sample is not part of the job");
    assert!((g0.get(Field::Smact) - 0.7).abs() < 1e-12);
    assert!((g0.power_w.unwrap() - 190.0).abs() < 1e-12);
    assert_eq!(g0.core_mhz, 1380.0);
    assert_eq!(g0.time_s, Some(2.0));
    assert_eq!(set.profiles[1].core_mhz, 1230.0);
    assert_eq!(ProfileFormat::guess(DMON), Some(ProfileFormat::Dmon));
}

#[test]
fn dmon_without_a_clock_column_asks_for_one() {
    let text = "# Entity GRACT SMACT\n Id\n GPU 0 0.5 0.5\n";
    let msg = read_text(text, "d", ProfileFormat::Dmon, &ReadOptions::default()).unwrap_err().to_string();
    assert!(msg.contains("SMCLK") && msg.contains("--core-mhz"), "{msg}");
    let ok = ReadOptions { core_mhz: Some(1000.0), ..ReadOptions::default() };
    assert_eq!(read_text(text, "d", ProfileFormat::Dmon, &ok).unwrap().profiles[0].core_mhz, 1000.0);
}

#[test]
fn dmon_percentages_are_refused_with_the_line() {
    let text = "# Entity GRACT SMACT SMCLK\n GPU 0 50 45 1380\n";
    let msg = read_text(text, "d", ProfileFormat::Dmon, &ReadOptions::default()).unwrap_err().to_string();
    assert!(msg.contains("d:2") && msg.contains("outside [0, 1]"), "{msg}");
}

const PROM: &str = r#"# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-1",device="nvidia0",modelName="Tesla V100-SXM2-16GB",Hostname="n1"} 1380
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1",device="nvidia0",modelName="Tesla V100-SXM2-16GB",Hostname="n1"} 210.5
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-1",device="nvidia0",modelName="Tesla V100-SXM2-16GB",Hostname="n1"} 0.98
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-1",device="nvidia0",modelName="Tesla V100-SXM2-16GB",Hostname="n1"} 0.75
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-1",device="nvidia0",modelName="Tesla V100-SXM2-16GB",Hostname="n1"} 0.25
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-1",device="nvidia0",modelName="Tesla V100-SXM2-16GB",Hostname="n1"} 1380
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-1",device="nvidia0",modelName="Tesla V100-SXM2-16GB",Hostname="n1"} 0.96
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-1",device="nvidia0",modelName="Tesla V100-SXM2-16GB",Hostname="n1"} 0.65
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-1",device="nvidia0",modelName="Tesla V100-SXM2-16GB",Hostname="n1"} 0.35
"#;

#[test]
fn exporter_text_gives_the_mean_of_its_scrapes_and_the_model_name() {
    let set = read_text(PROM, "m.prom", ProfileFormat::Prometheus, &ReadOptions::default()).unwrap();
    let p = &set.profiles[0];
    assert_eq!(p.gpu.as_deref(), Some("Tesla V100-SXM2-16GB"));
    assert_eq!(p.samples, 2);
    assert!((p.get(Field::Smact) - 0.70).abs() < 1e-12 && (p.get(Field::Drama) - 0.30).abs() < 1e-12);
    assert_eq!(p.power_w, Some(210.5));
    assert_eq!(ProfileFormat::guess(PROM), Some(ProfileFormat::Prometheus));
}

#[test]
fn exporter_text_of_two_gpu_models_is_refused() {
    let other = PROM.replace("gpu=\"0\"", "gpu=\"1\"").replace("V100-SXM2-16GB", "H100 80GB HBM3");
    let msg = read_text(&format!("{PROM}{other}"), "m", ProfileFormat::Prometheus, &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("different GPU models"), "{msg}");
}

#[test]
fn ncu_raw_export_maps_the_documented_metrics_and_weights_by_duration() {
    let text = "==PROF== Connected\n\
\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"sm__cycles_active.avg\",\"sm__cycles_elapsed.avg\",\"dram__cycles_active.avg.pct_of_peak_sustained_elapsed\",\"sm__cycles_elapsed.avg.per_second\"\n\
\"\",\"\",\"usecond\",\"cycle\",\"cycle\",\"%\",\"cycle/nsecond\"\n\
\"0\",\"k1\",\"30\",\"900\",\"1000\",\"20\",\"1.38\"\n\
\"1\",\"k2\",\"10\",\"500\",\"1000\",\"60\",\"1.38\"\n";
    let set = read_text(text, "run.csv", ProfileFormat::Ncu, &ReadOptions::default()).unwrap();
    let p = &set.profiles[0];
    assert!((p.get(Field::Smact) - 0.8).abs() < 1e-12, "{p:?}");
    assert!((p.get(Field::Drama) - 0.3).abs() < 1e-12);
    assert!((p.core_mhz - 1380.0).abs() < 1e-9);
    assert!((p.time_s.unwrap() - 40e-6).abs() < 1e-15);
    assert_eq!(p.get(Field::Gract), 1.0);
}

#[test]
fn collector_trace_weights_rows_by_their_interval() {
    let text = "t_s,dt_s,power_w,core_mhz,mem_mhz,GRACT,SMACT,SMOCC,TENSO,DRAMA,FP64A,FP32A,FP16A\n\
0.1,0.1,100,1380,877,1,0.9,0.5,0,0.2,0,0.4,0\n\
0.4,0.3,200,1380,877,1,0.5,0.5,0,0.6,0,0.4,0\n";
    let set = read_text(text, "t.csv", ProfileFormat::Collector, &ReadOptions::default()).unwrap();
    let p = &set.profiles[0];
    assert!((p.get(Field::Smact) - 0.6).abs() < 1e-12);
    assert!((p.power_w.unwrap() - 175.0).abs() < 1e-9);
    assert!((p.time_s.unwrap() - 0.4).abs() < 1e-12);
}

#[test]
fn nvdvfs_rows_become_one_profile_each_and_an_empty_row_names_its_line() {
    let text = "DRAMA,FP16A,FP32A,FP64A,SMACT,SMOCC,TENSO,argNo,average_power,benchmark,core_frequency,kernel,memory_frequency,time\n\
0.5,0,0.3,0,0.9,0.8,0,input000,150,app,1380,k,877,1.5\n\
,,,,,,,input001,90,app,1380,k,877,2.0\n";
    let msg =
        read_text(text, "v.csv", ProfileFormat::NvdvfsCsv, &ReadOptions::default()).unwrap_err().to_string();
    assert!(msg.contains("v.csv:3"), "{msg}");
    let skip = ReadOptions { skip_bad_rows: true, gpu: Some("V100".into()), ..ReadOptions::default() };
    let set = read_text(text, "v.csv", ProfileFormat::NvdvfsCsv, &skip).unwrap();
    assert_eq!(set.profiles.len(), 1);
    assert_eq!(set.skipped.len(), 1);
    let p = &set.profiles[0];
    assert_eq!((p.name.as_str(), p.program.as_deref()), ("app_input000", Some("app")));
    assert_eq!((p.power_w, p.time_s, p.mem_mhz), (Some(150.0), Some(1.5), Some(877.0)));
}

/// A dmon log of GPU 0 with GRACT, SMACT, FP32A, POWER, TOTEC and SACLK columns, one line per row.
fn dmon_log(rows: &[String]) -> String {
    let mut s = String::from(
        "# Entity  GRACT  SMACT  FP32A  POWER  TOTEC  SACLK\n      Id                        W     mJ\n",
    );
    for r in rows {
        s.push_str(&format!("     GPU 0  {r}\n"));
    }
    s
}

/// Fourteen rows 0.1 s apart at 50 W: the counter rises 5000 mJ a row. Rows 0-1 idle, 2-13 active.
fn job_rows() -> Vec<String> {
    (0..14)
        .map(|k| {
            let a = if k >= 2 { "0.500" } else { "0.000" };
            format!("{a}  {a}  0.100  50.0  {}  1380", 1_000_000 + 5000 * k)
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[test]
fn dmon_takes_its_interval_and_energy_from_the_energy_counter() {
    let set = read_text(&dmon_log(&job_rows()), "d", ProfileFormat::Dmon, &ReadOptions::default()).unwrap();
    let p = &set.profiles[0];
    // 13 rises of 5000 mJ at 50 W: 65 J / 650 W = 0.1 s a row; 12 active rows are 1.2 s.
    assert_eq!(p.samples, 12);
    assert!(close(p.time_s.unwrap(), 1.2), "{p:?}");
    // The counter's rise over the active rows (rows 1→2 … 12→13): 12 × 5 J = 60 J in 1.2 s.
    assert!(close(p.power_w.unwrap(), 50.0), "{p:?}");
    assert!(set.assumptions.is_empty(), "{:?}", set.assumptions);
    assert!(
        set.notes.iter().any(|n| n.contains("100.0 ms") && n.contains("energy counter")),
        "{:?}",
        set.notes
    );
}

#[test]
fn dmon_rows_without_a_profiling_sample_count_toward_the_next_one() {
    // Every other row N/A, as dmon prints when a tick brings no new profiling sample: each value row
    // stands for two rows, 0.2 s.
    let rows: Vec<String> = (0..24)
        .map(|k| {
            let c = if k % 2 == 0 { "N/A" } else { "0.500" };
            format!("{c}  {c}  {c}  50.0  {}  1380", 1_000_000 + 5000 * k)
        })
        .collect();
    let set = read_text(&dmon_log(&rows), "d", ProfileFormat::Dmon, &ReadOptions::default()).unwrap();
    let p = &set.profiles[0];
    assert_eq!(p.samples, 12);
    assert!(close(p.time_s.unwrap(), 2.4), "{p:?}");
    assert!(close(p.power_w.unwrap(), 50.0), "{p:?}");
    assert_eq!(set.dropped.get("every profiling cell N/A"), Some(&12), "{:?}", set.dropped);
    assert!(set.notes.iter().any(|n| n.contains("12 of 24 rows left out")), "{:?}", set.notes);
}

#[test]
fn dmon_given_interval_is_checked_against_the_counter() {
    let text = dmon_log(&job_rows());
    let far = ReadOptions { interval_s: Some(1.0), ..ReadOptions::default() };
    let msg = read_text(&text, "d", ProfileFormat::Dmon, &far).unwrap_err().to_string();
    assert!(
        msg.contains("100.0 ms") && msg.contains("1000.0 ms") && msg.contains("drop --dmon-interval-ms"),
        "{msg}"
    );
    // 5% off is the counter's own scatter: the log's interval is used and the agreement said.
    let near = ReadOptions { interval_s: Some(0.105), ..ReadOptions::default() };
    let set = read_text(&text, "d", ProfileFormat::Dmon, &near).unwrap();
    assert!(close(set.profiles[0].time_s.unwrap(), 1.2));
    assert!(set.notes.iter().any(|n| n.contains("agrees")), "{:?}", set.notes);
}

#[test]
fn dmon_without_a_counter_assumes_one_second_and_says_so() {
    let set = read_text(DMON, "d.txt", ProfileFormat::Dmon, &ReadOptions::default()).unwrap();
    assert_eq!(set.assumptions.len(), 2, "one per device: {:?}", set.assumptions);
    assert!(set.assumptions[0].contains("assumes 1 s") && set.assumptions[0].contains("TOTEC"));
    let given = ReadOptions { interval_s: Some(0.5), ..ReadOptions::default() };
    let set = read_text(DMON, "d.txt", ProfileFormat::Dmon, &given).unwrap();
    assert!(set.assumptions.is_empty());
    assert_eq!(set.profiles[0].time_s, Some(1.0), "two samples of 0.5 s");
}

#[test]
fn dmon_counter_reset_is_left_out_and_counted() {
    let mut rows = job_rows();
    // From row 6 the counter starts again from 0 (a driver reload): the step 5→6 is left out.
    for (k, r) in rows.iter_mut().enumerate().skip(6) {
        *r = format!("0.500  0.500  0.100  50.0  {}  1380", 5000 * (k - 6));
    }
    let set = read_text(&dmon_log(&rows), "d", ProfileFormat::Dmon, &ReadOptions::default()).unwrap();
    let p = &set.profiles[0];
    // 12 rises of 5 J at 50 W: 0.1 s a row; the job's energy is 11 steps (55 J) over 1.1 s: 50 W.
    assert!(close(p.time_s.unwrap(), 1.2), "{p:?}");
    assert!(close(p.power_w.unwrap(), 50.0), "{p:?}");
    assert!(set.notes.iter().any(|n| n.contains("fell 1 time")), "{:?}", set.notes);
}

#[test]
fn dmon_counts_every_row_it_leaves_out_by_reason() {
    let mut rows = job_rows();
    rows[3] = "nan  0.500  0.100  50.0  1015000  1380".into();
    rows[4] = "0.500  N/A  0.100  50.0  1020000  1380".into();
    rows[5] = "0.500  0.500  0.100  -3.0  1025000  1380".into();
    rows[6] = "0.500  1.500  0.100  50.0  1030000  1380".into();
    rows[7] = "0.500  0.500".into();
    let text = dmon_log(&rows);
    let msg = read_text(&text, "d", ProfileFormat::Dmon, &ReadOptions::default()).unwrap_err().to_string();
    assert!(msg.contains("d:9") && msg.contains("outside [0, 1]"), "{msg}");
    let skip = ReadOptions { skip_bad_rows: true, ..ReadOptions::default() };
    let set = read_text(&text, "d", ProfileFormat::Dmon, &skip).unwrap();
    let want: BTreeMap<String, usize> = [
        ("a profiling cell NaN or infinite", 1),
        ("some profiling cells N/A", 1),
        ("POWER negative (the reading alone left out)", 1),
        ("a ratio outside [0, 1]", 1),
        ("a truncated line", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(set.dropped, want);
    assert_eq!(set.skipped.len(), 2, "{:?}", set.skipped);
    let p = &set.profiles[0];
    assert_eq!(p.samples, 8, "rows 2, 5 and 8-13");
    assert!(set.notes.iter().any(|n| n.contains("4 of 14 rows left out")), "{:?}", set.notes);
}

#[test]
fn dmon_names_fields_that_contradict_each_other() {
    let rows: Vec<String> = (0..12)
        .map(|k| match k % 3 {
            0 => format!("0.000  0.400  0.100  50.0  {}  1380", 5000 * k),
            1 => format!("0.500  0.000  0.200  50.0  {}  1380", 5000 * k),
            _ => format!("0.500  0.400  0.100  50.0  {}  1380", 5000 * k),
        })
        .collect();
    let set = read_text(&dmon_log(&rows), "d", ProfileFormat::Dmon, &ReadOptions::default()).unwrap();
    let note = set.notes.iter().find(|n| n.contains("contradictory")).expect("a note");
    assert!(note.contains("4 of 12 active samples read GRACT 0 with SMACT above 0.001"), "{note}");
    assert!(
        note.contains("4 of 12 active samples read SMACT 0 with occupancy or a pipe above 0.001"),
        "{note}"
    );
}

/// A real `dcgmi dmon` log of ../profiles/dcgm beside the datasets, when GPUMODEL_DATA_DIR names them.
fn real_log(name: &str) -> Option<(String, String)> {
    let Some(dir) = std::env::var_os("GPUMODEL_DATA_DIR") else {
        eprintln!("skipped: GPUMODEL_DATA_DIR is not set");
        return None;
    };
    let path = std::path::Path::new(&dir).join("../profiles/dcgm").join(name);
    match std::fs::read_to_string(&path) {
        Ok(t) => Some((t, path.display().to_string())),
        Err(_) => {
            eprintln!("skipped: {} is not there", path.display());
            None
        }
    }
}

/// What the energy counter implies for the job, from the raw text alone: the GPU rows split on whitespace
/// (GRACT, SMACT … FP16A are cells 2-9, POWER 16, TOTEC 17); a row whose eight profiling cells are numbers
/// and GRACT or SMACT above 0 is active and stands for the rows since the one before it with numbers.
/// Returns the counter's rise over those rows (J) and the time it implies at their mean POWER (s).
fn counter_implies(text: &str) -> (f64, f64) {
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|t| t.first() == Some(&"GPU") && t.len() == 19)
        .collect();
    let num = |s: &str| s.parse::<f64>().ok();
    let (mut joules, mut power_sum, mut n, mut prev): (f64, f64, usize, Option<usize>) = (0.0, 0.0, 0, None);
    for (k, t) in rows.iter().enumerate() {
        if t[2..10].iter().any(|c| num(c).is_none()) {
            continue;
        }
        if let Some(j) = prev
            && (num(t[2]).unwrap() > 0.0 || num(t[3]).unwrap() > 0.0)
        {
            joules += (num(t[17]).unwrap() - num(rows[j][17]).unwrap()) / 1000.0;
            for r in &rows[j + 1..=k] {
                power_sum += num(r[16]).unwrap();
                n += 1;
            }
        }
        prev = Some(k);
    }
    (joules, joules / (power_sum / n as f64))
}

fn agrees_with_its_counter(name: &str) {
    let Some((text, path)) = real_log(name) else { return };
    let set = read_text(&text, &path, ProfileFormat::Dmon, &ReadOptions::default()).unwrap();
    let p = &set.profiles[0];
    let (joules, seconds) = counter_implies(&text);
    let (t, e) = (p.time_s.unwrap(), p.time_s.unwrap() * p.power_w.unwrap());
    assert!((t / seconds - 1.0).abs() < 0.02, "{name}: time {t} s, the counter implies {seconds} s");
    assert!((e / joules - 1.0).abs() < 0.02, "{name}: energy {e} J, the counter implies {joules} J");
    assert!(set.assumptions.is_empty(), "{:?}", set.assumptions);
}

#[test]
fn the_real_h100_log_agrees_with_its_energy_counter() {
    agrees_with_its_counter("dcgmi-dmon_GH100-baseline-LSTM-1785-0.txt");
}

#[test]
fn the_real_v100_log_agrees_with_its_energy_counter() {
    agrees_with_its_counter("dcgmi-dmon_GV100-baseline-LSTM-1380-0.txt");
}

/// What `import dcgm --out FILE.csv` writes, gpumodel reads back: the table is told from its header and
/// gives the same profiles, value for value (names with commas and quotes included).
#[test]
fn the_profile_table_gpumodel_writes_reads_back_unchanged() {
    let mut set = read_text(DMON, "d.txt", ProfileFormat::Dmon, &ReadOptions::default()).unwrap();
    set.profiles[1].name = "GPU 1, \"second\"".into();
    set.profiles[0].gpu = Some("Tesla V100-SXM2-16GB".into());
    let csv = set.to_csv();
    assert_eq!(ProfileFormat::guess(&csv), Some(ProfileFormat::Table));
    let back = read_text(&csv, "t.csv", ProfileFormat::Table, &ReadOptions::default()).unwrap();
    assert_eq!(back.profiles, set.profiles);
    assert_eq!(back.source, Source::DcgmiDmon);
    // A row whose source gpumodel never writes is named.
    let bad = csv.replacen("dcgmi-dmon", "spreadsheet", 1);
    let e = read_text(&bad, "t.csv", ProfileFormat::Table, &ReadOptions::default()).unwrap_err().to_string();
    assert!(e.contains("'spreadsheet' is not a source gpumodel writes"), "{e}");
}

/// Two rows of the GTX 1080 Ti nvprof file (NV-DVFS-Benchmark `csvs/raw/gtx1080ti-dvfs-real-Performance-
/// Power.csv`, lines 5 and one at 2000/5500 MHz), verbatim.
const NVPROF: &str = "\
,appName,coreF,memF,argNo,kernel,time/ms,blocks,warps,achieved_occupancy,warp_execution_efficiency,sm_activity,eligible_warps_per_cycle,branch_efficiency,cf_executed,gld_throughput,gld_transactions,gld_transactions_per_request,gst_throughput,gst_transactions,gst_transactions_per_request,global_hit_rate,dram_read_transactions,dram_read_throughput,dram_write_transactions,dram_write_throughput,l2_read_transactions,l2_read_throughput,l2_write_transactions,l2_write_throughput,shared_load_transactions,shared_load_throughput,shared_load_transactions_per_request,shared_store_transactions,shared_store_throughput,shared_store_transactions_per_request,l2_tex_read_throughput,l2_tex_read_transactions,l2_tex_write_throughput,l2_tex_write_throughput.1,tex_cache_hit_rate,tex_cache_throughput,tex_cache_transactions,flop_count_dp,flop_count_dp_fma,flop_count_sp,flop_count_sp_fma,flop_count_sp_special,inst_integer,inst_fp_32,inst_fp_64,inst_executed,inst_per_warp,executed_ipc,power/W
\
7,BlackScholes,1600,5500,input00,BlackScholesGPU,1.4294,(224000 1 1) (128 1 1),896000.0,0.876181,1.0,0.9974,4.030893,1.0,15232000,224.39,21504000,8.0,149.26,7168000,4.0,0.5,10752107,223.92,7165952,149.4,10752400,224.5,7168013,149.66,0,0.0,0.0,0,0.0,0.0,224.13,10752000,149.42,149.41,0.5,224.11,10752000,0,0,2907097257.0,974848000,258048000,688128000.0,2505689257,0,146048000,163.0,2.2725009999999997,257.28381
\
59,backpropBackward,2000,5500,input00,bpnn_adjust_weights_cuda,0.94314,(1 32768 1) (16 16 1),262144.0,0.968282,1.0,0.996,0.310485,1.0,262145,198.7,14811161,8.07142,84.561,2621446,4.999992,0.5841,2304243,74.07,2226424,71.813,6176780,154.12,2621467,65.248,0,0.0,0.0,0,0.0,0.0,153.38,6160399,65.268,65.291,0.5563,182.82,7340042,75497584,16777248,0.0,0,0,184549488.0,0,58720336,15204379,58.000103,0.290978,167.99686999999997
";

#[test]
fn nvprof_rows_become_dcgm_like_profiles_by_the_documented_metrics() {
    let opts = ReadOptions { gpu: Some("GTX 1080 Ti".into()), ..ReadOptions::default() };
    assert_eq!(ProfileFormat::guess(NVPROF), Some(ProfileFormat::NvdvfsNvprof));
    let set = read_text(NVPROF, "n.csv", ProfileFormat::NvdvfsNvprof, &opts).unwrap();
    let (bs, bp) = (&set.profiles[0], &set.profiles[1]);
    // By hand from the row: sm_activity 0.9974; achieved_occupancy 0.876181 × 0.9974; DRAM (223.92 +
    // 149.4) GB/s over 2 × 5500 MHz × 44 B = 484 GB/s; inst_fp_32 2505689257 over 3584 lanes × 1600 MHz ×
    // 1.4294 ms.
    assert_eq!((bs.name.as_str(), bs.program.as_deref()), ("BlackScholes", Some("BlackScholes")));
    assert_eq!((bs.core_mhz, bs.mem_mhz, bs.power_w), (1600.0, Some(5500.0), Some(257.28381)));
    assert!(close(bs.time_s.unwrap(), 1.4294e-3));
    assert!(close(bs.get(Field::Smact), 0.9974));
    assert!(close(bs.get(Field::Smocc), 0.873_902_929_4));
    assert!(close(bs.get(Field::Drama), 0.771_322_314_0));
    assert!(close(bs.get(Field::Fp32a), 0.305_692_968_7));
    assert_eq!(bs.get(Field::Fp64a), 0.0);
    // backpropBackward at 2000/5500: inst_fp_64 58720336 over 112 FP64 lanes × 2000 MHz × 0.94314 ms.
    assert_eq!((bp.core_mhz, bp.mem_mhz), (2000.0, Some(5500.0)));
    assert!(close(bp.get(Field::Fp64a), 0.277_948_509_4));
    assert!(close(bp.get(Field::Drama), 0.301_411_157_0));
    // The board must be known.
    let e = read_text(NVPROF, "n.csv", ProfileFormat::NvdvfsNvprof, &ReadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("--gpu"), "{e}");
}
