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
