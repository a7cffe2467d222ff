use super::merger::{Merger, derived_inputs};
use super::*;
use crate::counters::CounterInterval;
use crate::fake::{FakeCounters, FakePower, PerSample};
use crate::sampler::{Clock, PowerSample};
use gpumodel_models::Table;
use gpumodel_models::trace::RunStatus;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

fn opts(dir: &Path, program: &[&str]) -> RunOptions {
    RunOptions {
        program: program.iter().map(|s| s.to_string()).collect(),
        out: dir.join("t.csv"),
        rate_hz: 100.0,
        min_seconds: 0.0,
        idle_seconds: 0.15,
        device: 0,
        host: "h".into(),
        chip: None,
        program_stdout_to_stderr: false,
    }
}

/// Samples the counter source lost (a full KEEP_OLDEST buffer) are counted and end
/// up in the sidecar's warnings, read back from disk.
#[test]
fn lost_counter_samples_are_counted_and_reported_in_the_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::new();
    let counters = FakeCounters::new(&["inst_executed"], 0.01, |_| vec![4e9]).dropping_every(5);
    let power = FakePower::constant(clock, 100.0);
    let o = opts(dir.path(), &["/bin/sleep", "0.2"]);
    run(&o, power, Some(Box::new(counters)), Arc::new(AtomicBool::new(false))).unwrap();
    let meta = gpumodel_models::trace::read_meta(&o.out).unwrap();
    let w = meta.warnings.iter().find(|w| w.contains("PM samples lost")).expect("a lost-samples warning");
    let n: u64 = w.trim_start_matches("about ").split(' ').next().unwrap().parse().unwrap();
    // ~0.5 s of 10 ms intervals, one in five dropped.
    assert!((5..=25).contains(&n), "{w}");
    assert!(w.contains("hardware-buffer overflow"), "{w}");
}

/// The fake power source reads 30 W more while the fake counters run: the idle phases must
/// report 100 W idle and a 30 W profiler overhead.
#[test]
fn idle_power_and_profiler_overhead_are_accounted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::new();
    let counters = FakeCounters::new(&["inst_executed"], 0.01, |_| vec![4e9]);
    let running = counters.running_flag();
    let power =
        FakePower::from_fn(clock, move |_| if running.load(Ordering::SeqCst) { 130.0 } else { 100.0 });
    let o = opts(dir.path(), &["/bin/sleep", "0.1"]);
    let r = run(&o, power, Some(Box::new(counters)), Arc::new(AtomicBool::new(false))).unwrap();
    let s = r.meta.summary.unwrap();
    assert_eq!(s.idle_power_w, Some(100.0));
    // The flag flips between two power reads: allow one sample of the transition.
    let oh = s.profiler_overhead_w.unwrap();
    assert!((oh - 30.0).abs() < 3.1, "{oh}");
    assert_eq!(s.exit_code, Some(0));
    // Every row is in the program phase: power 130 W (counters running), rate 4e9/s.
    let t = Table::read_csv(&o.out, "kernel").unwrap();
    assert!(t.column("power_w").unwrap().iter().all(|&p| p == 130.0));
    assert!(t.column("inst_executed").unwrap().iter().all(|&c| (c - 4e9).abs() < 1.0));
    assert!(t.column("exec_inst").unwrap().iter().all(|&c| (c - 4e9).abs() < 1.0));
}

/// A loaded host can deliver power samples after the phase they were read in has ended: each is
/// accounted by the time it was read, so queued idle samples never lower the profiler's overhead and
/// queued profiler samples never become trace rows.
#[test]
fn queued_samples_are_accounted_to_the_phase_they_were_read_in() {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut c = phases::Consumer::new(rx, false, 0, vec![]);
    let sample = |t_s: f64, w: f64| {
        let reading = crate::power::PowerReading { power: gpumodel_models::Watts(w), core: None, mem: None };
        crate::sampler::Event::Power(PowerSample { t_s, reading, late_s: 0.0 })
    };
    // Phase 1 ends with nothing consumed; the profiler starts at 1 s, the program at 2 s.
    c.profiler_from = 1.0;
    c.phase = phases::Phase::Profiler;
    for t in [0.2, 0.5, 0.8] {
        tx.send(sample(t, 100.0)).unwrap();
    }
    tx.send(sample(1.2, 130.0)).unwrap();
    c.drain(Duration::ZERO);
    c.phase = phases::Phase::Run;
    c.merger.run_start = 2.0;
    for t in [1.5, 1.8, 2.1, 2.4] {
        tx.send(sample(t, 130.0)).unwrap();
    }
    c.drain(Duration::ZERO);
    assert_eq!(c.idle.mean(), Some(100.0));
    assert_eq!(c.with_profiler.mean(), Some(130.0));
    // Rows start at the program: (2.0, 2.1] and (2.1, 2.4].
    let rows = c.merger.ready(true);
    assert_eq!(rows.len(), 2, "{}", rows.len());
}

#[test]
fn counter_rates_are_time_weighted_over_each_row() {
    let mut m = Merger {
        pending: vec![],
        intervals: vec![],
        covered_until: f64::NEG_INFINITY,
        have_counters: true,
        n_counters: 1,
        inputs: vec![],
        last_t: None,
        run_start: 0.0,
        written: vec![],
    };
    let reading = crate::power::PowerReading { power: gpumodel_models::Watts(1.0), core: None, mem: None };
    m.push_power(PowerSample { t_s: 0.0, reading, late_s: 0.0 });
    m.push_power(PowerSample { t_s: 1.0, reading, late_s: 0.0 });
    // Not covered yet: nothing is ready.
    assert!(m.ready(false).is_empty());
    m.push_counters(vec![
        CounterInterval { start_s: 0.0, end_s: 0.25, rates: vec![100.0] },
        CounterInterval { start_s: 0.25, end_s: 1.0, rates: vec![20.0] },
    ]);
    let rows = m.ready(false);
    assert_eq!(rows.len(), 1);
    // (100·0.25 + 20·0.75) / 1 = 40 events/s.
    assert!((rows[0].counters[0] - 40.0).abs() < 1e-9);
    assert_eq!(rows[0].dt_s, 1.0);
}

#[test]
fn energy_counter_matches_the_power_integral_with_the_fake() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::new();
    let mut o = opts(dir.path(), &["/bin/sleep", "0.3"]);
    o.idle_seconds = 0.0;
    let r = run(&o, FakePower::constant(clock, 50.0), None, Arc::new(AtomicBool::new(false))).unwrap();
    let s = r.meta.summary.unwrap();
    assert_eq!(s.energy_source, "energy_counter");
    // 50 W over ~0.3 s. The counter is read at sampler ticks near each end of the run, which a busy
    // host may delay by a few periods, so the bounds are wide: they catch a unit or scale error (mJ read
    // as J, a missing or doubled interval), not the host's scheduling.
    let ratio = s.energy_j / (50.0 * s.duration_s);
    assert!((0.5..=1.5).contains(&ratio), "{} J over {} s", s.energy_j, s.duration_s);
    let ratio = s.power_integral_j / s.energy_j;
    assert!((0.5..=1.5).contains(&ratio), "{} vs {}", s.power_integral_j, s.energy_j);
}

#[test]
fn restricted_counters_fail_before_the_program_runs_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::new();
    let marker = dir.path().join("ran");
    let o = opts(dir.path(), &["/bin/touch", marker.to_str().unwrap()]);
    let e = run(
        &o,
        FakePower::constant(clock, 1.0),
        Some(Box::new(FakeCounters::new(&["a"], 0.01, |_| vec![0.0]).restricted())),
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap_err();
    assert!(e.to_string().contains("NVreg_RestrictProfilingToAdminUsers=0"), "{e}");
    assert!(!marker.exists());
    let meta = gpumodel_models::trace::read_meta(&o.out).unwrap();
    assert!(matches!(meta.status, RunStatus::Failed(ref m) if m.contains("admin")));
}

#[test]
fn a_power_source_that_dies_stops_the_run_but_keeps_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::new();
    let mut o = opts(dir.path(), &["/bin/sleep", "20"]);
    o.idle_seconds = 0.0;
    let r =
        run(&o, FakePower::constant(clock, 1.0).failing_after(10), None, Arc::new(AtomicBool::new(false)))
            .unwrap();
    assert!(
        matches!(r.meta.status, RunStatus::Failed(ref m) if m.contains("GPU is lost")),
        "{:?}",
        r.meta.status
    );
    assert_eq!(r.exit, ProgramExit::Killed);
    let rows = std::fs::read_to_string(&o.out).unwrap().lines().count() - 1;
    assert!((8..=10).contains(&rows), "{rows}");
}

fn replay_opts(dir: &Path, program: &[&str]) -> RunOptions {
    RunOptions { idle_seconds: 0.0, ..opts(dir, program) }
}

/// Pass 1 samples `gld_request` at 100 events/s, pass 2 the L1 hits and misses at 200 and 300, each
/// pass from its own program start. Merged on time since the program started, every row but the last
/// few (which may outlast the shorter pass) carries all three at those rates; had pass 2 been placed
/// after pass 1 on one clock, pass 1's rows would have no hits or misses. G_load is derived across the
/// passes. Nothing here depends on how fast the host runs the passes.
#[test]
fn replay_merges_every_group_on_time_since_the_program_started() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::new();
    let o = replay_opts(dir.path(), &["/bin/sleep", "0.5"]);
    let groups: Vec<Vec<&'static str>> =
        vec![vec!["gld_request"], vec!["l1_global_load_hit", "l1_global_load_miss"]];
    let r = run_replay(
        &o,
        FakePower::constant(clock, 70.0),
        2,
        |k| {
            let g = groups[k].clone();
            let base = 100.0 * (k as f64 + 1.0);
            let n = g.len();
            Ok(Box::new(FakeCounters::new(&g, 0.01, move |_| {
                (0..n).map(|j| base + 100.0 * j as f64).collect()
            })) as Box<dyn CounterSource>)
        },
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    assert_eq!(r.meta.status, RunStatus::Complete);
    assert_eq!(r.exit, ProgramExit::Code(0));
    let t = Table::read_csv(&o.out, "kernel").unwrap();
    let gld = t.column("gld_request").unwrap();
    let hit = t.column("l1_global_load_hit").unwrap();
    let miss = t.column("l1_global_load_miss").unwrap();
    let g_load = t.column("G_load").unwrap();
    assert!(t.n_rows() >= 10, "{}", t.n_rows());
    // Rows both passes cover: the program's first 0.45 s (each pass's program runs at least 0.5 s),
    // however slow a pass started. A loaded host may starve the sampler early on, so at least two.
    let t_s = t.column("t_s").unwrap();
    let covered: Vec<usize> = (1..t.n_rows()).filter(|&i| t_s[i] <= 0.45).collect();
    assert!(covered.len() >= 2, "{t_s:?}");
    for i in covered {
        assert!((gld[i] - 100.0).abs() < 1e-6, "row {i}: {}", gld[i]);
        assert!(
            (hit[i] - 200.0).abs() < 1e-6 && (miss[i] - 300.0).abs() < 1e-6,
            "row {i}: {} {}",
            hit[i],
            miss[i]
        );
        assert!((g_load[i] - 600.0).abs() < 1e-6, "row {i}");
    }
    let rp = r.meta.replay.unwrap();
    assert_eq!(rp.passes.len(), 2);
    assert_eq!(rp.passes[0].counters, ["gld_request"]);
    assert_eq!(rp.passes[1].counters, ["l1_global_load_hit", "l1_global_load_miss"]);
    assert_eq!(rp.passes[1].trace, "t.pass2.csv");
    for p in &rp.passes {
        let d = p.duration_s.unwrap();
        assert!(d >= 0.5, "{d}");
        assert_eq!(p.mean_power_w, Some(70.0));
    }
    let spread = rp.duration_spread.unwrap();
    assert!(spread.min >= 0.5 && spread.max >= spread.min);
    // Each pass keeps its own trace, with its power series.
    for k in 1..=2 {
        let m = gpumodel_models::trace::read_meta(&pass_path(&o.out, k)).unwrap();
        assert_eq!(m.status, RunStatus::Complete);
    }
}

/// Ctrl-C during pass 2 of 3: pass 1's trace is left exactly as it was written, the merged trace
/// holds pass 1's rows with what pass 2 measured, the sidecar says "interrupted", and pass 3 never
/// runs.
#[test]
fn interrupting_pass_2_keeps_pass_1() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::new();
    let dur = dir.path().join("dur");
    std::fs::write(&dur, "0.2").unwrap();
    let script = format!("sleep $(cat {})", dur.display());
    let o = replay_opts(dir.path(), &["/bin/sh", "-c", &script]);
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    let pass1 = pass_path(&o.out, 1);
    let mut pass1_text = String::new();
    let r = run_replay(
        &o,
        FakePower::constant(clock, 50.0),
        3,
        |k| {
            if k == 1 {
                pass1_text = std::fs::read_to_string(&pass1).unwrap();
                // Pass 2's program would run for 30 s: interrupt it after 0.3 s.
                std::fs::write(&dur, "30").unwrap();
                let flag = flag.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(300));
                    flag.store(true, Ordering::SeqCst);
                });
            }
            Ok(Box::new(FakeCounters::new(&[["a", "b", "c"][k]], 0.01, |_| vec![1.0]))
                as Box<dyn CounterSource>)
        },
        interrupted,
    )
    .unwrap();
    assert_eq!(r.meta.status, RunStatus::Interrupted);
    assert_eq!(std::fs::read_to_string(&pass1).unwrap(), pass1_text);
    assert!(!pass1_text.is_empty());
    assert!(!pass_path(&o.out, 3).exists());
    let rp = r.meta.replay.unwrap();
    assert_eq!(rp.passes.len(), 2);
    assert_eq!(rp.passes[0].status, RunStatus::Complete);
    assert_eq!(rp.passes[1].status, RunStatus::Interrupted);
    let t = Table::read_csv(&o.out, "kernel").unwrap();
    assert_eq!(t.n_rows(), pass1_text.lines().count() - 1);
    assert!(t.column("b").unwrap().iter().any(|v| *v == 1.0));
    assert!(t.column("c").is_none());
}

/// Counters that refuse to start in pass 2 end the replay with the reason; pass 1 is merged.
#[test]
fn a_pass_that_cannot_start_ends_the_replay_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::new();
    let o = replay_opts(dir.path(), &["/bin/sleep", "0.1"]);
    let r = run_replay(
        &o,
        FakePower::constant(clock, 50.0),
        2,
        |k| {
            let c = FakeCounters::new(&["a"], 0.01, |_| vec![1.0]);
            Ok(Box::new(if k == 1 { c.restricted() } else { c }) as Box<dyn CounterSource>)
        },
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    assert!(
        matches!(r.meta.status, RunStatus::Failed(ref m) if m.starts_with("pass 2 of 2 could not start") && m.contains("admin")),
        "{:?}",
        r.meta.status
    );
    assert_eq!(r.meta.replay.unwrap().passes.len(), 1);
    assert!(Table::read_csv(&o.out, "kernel").unwrap().n_rows() > 0);
}

/// A pass trace left from an earlier run stops the replay before the program runs at all.
#[test]
fn an_existing_pass_trace_stops_the_replay_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::new();
    let marker = dir.path().join("ran");
    let o = replay_opts(dir.path(), &["/bin/touch", marker.to_str().unwrap()]);
    std::fs::write(pass_path(&o.out, 2), "precious").unwrap();
    let e = run_replay(
        &o,
        FakePower::constant(clock, 1.0),
        2,
        |_| Ok(Box::new(FakeCounters::new(&["a"], 0.01, |_| vec![0.0])) as Box<dyn CounterSource>),
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap_err();
    assert!(e.to_string().contains("t.pass2.csv: already exists"), "{e}");
    assert!(!marker.exists() && !o.out.exists() && !pass_path(&o.out, 1).exists());
    assert_eq!(std::fs::read_to_string(pass_path(&o.out, 2)).unwrap(), "precious");
}

/// `branch` is both a counter and a model input: the trace must not name the column twice.
#[test]
fn an_input_named_like_its_counter_is_not_repeated() {
    let names: Vec<String> = ["branch", "inst_executed"].iter().map(|s| s.to_string()).collect();
    let d: Vec<String> = derived_inputs(&names).into_iter().map(|(n, _)| n).collect();
    assert_eq!(d, ["exec_inst"]);
}

/// A power sample of `w` watts at `t_s` (no clocks read).
fn power_event(t_s: f64, w: f64) -> crate::sampler::Event {
    crate::sampler::Event::Power(PowerSample {
        t_s,
        reading: crate::power::PowerReading { power: gpumodel_models::Watts(w), core: None, mem: None },
        late_s: 0.0,
    })
}

/// A loaded host can starve the sampler through a short idle window: the idle phase waits for its
/// first sample (bounded) instead of reporting no idle power (an "idle power -" that came and went with the load).
#[test]
fn idle_phase_waits_for_its_first_power_sample_beyond_a_short_window() {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut c = phases::Consumer::new(rx, false, 0, vec![]);
    let late = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        tx.send(power_event(0.2, 61.5)).unwrap();
        tx // kept alive until joined: the wait must end on the sample, not on a closed channel
    });
    c.drain_phase(std::time::Duration::from_millis(5));
    assert_eq!(c.idle.mean(), Some(61.5), "the sample that came after the window is the idle power");
    drop(late.join().unwrap());

    // Samples inside the window: nothing more is waited for, all of them count.
    let (tx, rx) = std::sync::mpsc::channel();
    let mut c = phases::Consumer::new(rx, false, 0, vec![]);
    tx.send(power_event(0.0, 50.0)).unwrap();
    tx.send(power_event(0.01, 52.0)).unwrap();
    c.drain_phase(std::time::Duration::from_millis(5));
    assert_eq!(c.idle.mean(), Some(51.0));

    // A sampler that has stopped (channel closed) ends the wait at once, with no idle power.
    let (tx, rx) = std::sync::mpsc::channel::<crate::sampler::Event>();
    drop(tx);
    let mut c = phases::Consumer::new(rx, false, 0, vec![]);
    let t0 = std::time::Instant::now();
    c.drain_phase(std::time::Duration::from_millis(5));
    assert_eq!(c.idle.mean(), None);
    assert!(t0.elapsed() < phases::FIRST_SAMPLE_GRACE, "a closed channel must not wait out the grace");
}

/// Per 10 ms sample of 14.1e6 SM cycles: SM active 0.5, occupancy 20 of 64 warps (0.3125), DRAM 0.25.
const DCGM_WANT: [(gpumodel_models::utilization::Field, f64); 3] = [
    (gpumodel_models::utilization::Field::Smact, 0.5),
    (gpumodel_models::utilization::Field::Smocc, 0.3125),
    (gpumodel_models::utilization::Field::Drama, 0.25),
];

/// A source of the fields of [`DCGM_WANT`] from their metrics' per-sample values.
fn dcgm_source() -> Box<dyn CounterSource> {
    use crate::cupti::dcgm::{DcgmFields, FIELD_COUNTERS, FieldMetrics};
    let fields: Vec<FieldMetrics> = FIELD_COUNTERS
        .iter()
        .filter(|(f, _, _)| DCGM_WANT.iter().any(|(w, _)| w == f))
        .map(|(f, c, e)| FieldMetrics::of(*f, c, e))
        .collect();
    let value = |m: &str| match m {
        "sm__cycles_active.avg" => 7.05e6,
        "sm__cycles_elapsed.avg" => 14.1e6,
        "sm__cycles_active.avg.peak_sustained" => 1.0,
        "sm__warps_active.avg" => 20.0 * 14.1e6,
        "sm__warps_active.avg.peak_sustained" => 64.0,
        "dram__cycles_active.avg" => 2.5e6,
        "dram__cycles_elapsed.avg" => 10e6,
        "dram__cycles_active.avg.peak_sustained" => 1.0,
        other => panic!("{other}"),
    };
    let mut names: Vec<String> =
        fields.iter().flat_map(|f| [f.counter.clone(), f.elapsed.clone(), f.peak.clone()]).collect();
    names.sort();
    names.dedup();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let inner =
        PerSample::new(FakeCounters::new(&refs, 0.01, |_| vec![]), names.iter().map(|m| value(m)).collect());
    Box::new(DcgmFields::new(inner, fields))
}

/// The trace at `path` read by the utilization reader: the fields of [`DCGM_WANT`], 1410 MHz, 180 W.
fn reads_back_as_dcgm(path: &Path) {
    use gpumodel_models::utilization::read::{ReadOptions, read_file};
    let header = std::fs::read_to_string(path).unwrap().lines().next().unwrap().to_string();
    assert!(header.contains(",SMACT,SMOCC,DRAMA,"), "{header}");
    let set = read_file(path, None, &ReadOptions::default()).unwrap();
    assert_eq!(set.profiles.len(), 1);
    let p = &set.profiles[0];
    for (f, v) in DCGM_WANT {
        assert!((p.get(f) - v).abs() < 1e-9, "{}: {} for {v}", f.name(), p.get(f));
    }
    assert!((p.core_mhz - 1410.0).abs() < 1e-9 && (p.power_w.unwrap() - 180.0).abs() < 1e-9, "{p:?}");
    assert!(p.time_s.unwrap() > 0.15, "{p:?}");
}

/// The DCGM fields go through a real run into the trace and come back out of the utilization reader.
#[test]
fn dcgm_fields_in_a_trace_read_back_as_a_utilization_profile() {
    let dir = tempfile::tempdir().unwrap();
    let power = FakePower::constant(Clock::new(), 180.0);
    let o = opts(dir.path(), &["/bin/sleep", "0.2"]);
    run(&o, power, Some(dcgm_source()), Arc::new(AtomicBool::new(false))).unwrap();
    reads_back_as_dcgm(&o.out);
}

/// Under application replay the fields are a run of their own, merged into the one trace beside the
/// counters of the first run.
#[test]
fn dcgm_fields_as_a_replay_run_are_merged_into_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let power = FakePower::constant(Clock::new(), 180.0);
    let o = opts(dir.path(), &["/bin/sleep", "0.2"]);
    let counters_for = |k: usize| -> crate::Result<Box<dyn CounterSource>> {
        Ok(match k {
            0 => Box::new(FakeCounters::new(&["inst_executed"], 0.01, |_| vec![4e9])),
            _ => dcgm_source(),
        })
    };
    replay::run_replay(&o, power, 2, counters_for, Arc::new(AtomicBool::new(false))).unwrap();
    let header = std::fs::read_to_string(&o.out).unwrap().lines().next().unwrap().to_string();
    assert!(header.contains("inst_executed"), "{header}");
    reads_back_as_dcgm(&o.out);
}
