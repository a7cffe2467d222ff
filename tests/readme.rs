//! The README's commands: every `gpumodel …` line of its code blocks either runs here, as written, and
//! succeeds, or is named below with the reason it cannot run on a machine without a GPU in a test's time.
//! A command added to the README fails this test until it is one or the other.

mod common;

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README's `gpumodel` command lines, without their trailing comments, in order.
fn readme_commands() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            inside = !inside;
            continue;
        }
        if inside && line.starts_with("gpumodel ") {
            let command = line.split("   #").next().unwrap_or(line);
            let command = command.split("  # ").next().unwrap_or(command);
            out.push(command.trim_end().to_string());
        }
    }
    out
}

/// Commands that do not run here, by what they start with, and why.
const NOT_RUN: &[(&str, &str)] = &[
    ("gpumodel collect", "needs a GPU (the scripted GPU's journeys are in tests/journeys.rs)"),
    ("gpumodel calibrate", "needs a GPU (tests/calibrate.rs runs it on the scripted GPU)"),
    ("gpumodel doctor", "reports on this machine's GPU stack (tests/doctor.rs)"),
    ("gpumodel serve", "a server (tests/serve.rs and tests/serve_prometheus.rs run it on the scripted node)"),
    ("gpumodel train", "fits every model for minutes (tests/train.rs runs it with fewer epochs)"),
    ("gpumodel predict --warps 32 [", "a synopsis of the flags, not a command"),
    (
        "gpumodel import ncu|nvprof FILE",
        "a synopsis (FILE, DIR): tests/import_profilers.rs runs it on real exports",
    ),
    ("gpumodel import ncu k.csv", "an export the reader has (tests/import_profilers.rs)"),
    ("gpumodel import nvprof metrics.csv", "an export the reader has (tests/import_profilers.rs)"),
    ("gpumodel import dcgm FILE", "a synopsis (tests/dataset_profiles.rs imports the real dcgmi logs)"),
    ("gpumodel import guerreiro FILE", "a synopsis (tests/dataset.rs)"),
    ("gpumodel predict --kernel DIR/", "a profile `import` writes (tests/predict_exports.rs)"),
    ("gpumodel predict --kernel k.csv", "an export the reader has (tests/predict_exports.rs)"),
    (
        "gpumodel predict --kernel app.kernels.json",
        "what `collect --kernel-totals` writes (tests/journeys.rs)",
    ),
    (
        "gpumodel predict --kernel k.toml",
        "the suite-trained model of the journey above it (tests/journeys.rs)",
    ),
    ("gpumodel predict --profile FILE", "a synopsis (tests/clocks.rs runs it on the real dcgmi logs)"),
    ("gpumodel report sweep.json validate.json split.json train.json", "needs train.json (train, above)"),
];

fn not_run(command: &str) -> Option<&'static str> {
    NOT_RUN.iter().find(|(start, _)| command.starts_with(start)).map(|(_, why)| *why)
}

/// Runs `command` (split at spaces, quotes kept together) in `dir`; a `> FILE` at its end writes stdout
/// there, as a shell would.
fn run(command: &str, dir: &Path) -> Result<(), String> {
    let (command, to) = match command.split_once(" > ") {
        Some((c, f)) => (c, Some(f.trim())),
        None => (command, None),
    };
    let mut words: Vec<String> = Vec::new();
    let mut quoted = false;
    for part in command.split(' ') {
        if quoted {
            let last = words.last_mut().expect("a quote opens a word");
            last.push(' ');
            last.push_str(part.trim_end_matches('"'));
            quoted = !part.ends_with('"');
        } else if let Some(rest) = part.strip_prefix('"') {
            words.push(rest.trim_end_matches('"').to_string());
            quoted = !part.ends_with('"') || part.len() == 1;
        } else if !part.is_empty() {
            words.push(part.to_string());
        }
    }
    let out = common::gpumodel().current_dir(dir).args(&words[1..]).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr)));
    }
    if let Some(f) = to {
        std::fs::write(dir.join(f), &out.stdout).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[test]
fn every_readme_command_runs_or_says_why_not() {
    let commands = readme_commands();
    assert!(commands.len() > 30, "the README's commands were not found: {commands:?}");
    // The commands run from a folder of their own that sees the repository's examples, in README order, so
    // a command that reads a file an earlier one wrote (sweep.json → report) finds it.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("datasets"), dir.path().join("datasets")).unwrap();
    let mut failed = Vec::new();
    let mut ran = 0;
    for c in &commands {
        if not_run(c).is_some() {
            continue;
        }
        ran += 1;
        if let Err(e) = run(c, dir.path()) {
            failed.push(format!("{c}\n    {e}"));
        }
    }
    assert!(failed.is_empty(), "README commands that fail as written:\n{}", failed.join("\n"));
    assert!(ran >= 20, "only {ran} of the README's commands ran");
    // Every reason given is used: a command removed from the README leaves no stale entry here.
    for (start, _) in NOT_RUN {
        assert!(commands.iter().any(|c| c.starts_with(start)), "no README command starts with {start:?}");
    }
}

/// The README's DCGM example (`cargo run -- predict --profile datasets/examples/dcgm/v100-job.dmon.txt …`):
/// its lines agree with each other. The clock the table marks as the energy optimum is the one the
/// `model optima` line names, and an `advice` line that recommends a fixed clock names that same model
/// pick as the one it replaces, or says that the two agree.
#[test]
fn the_dcgm_example_s_advice_agrees_across_its_lines() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("cargo run -- predict --profile datasets/examples/dcgm/"))
        .expect("the README's DCGM example");
    let args: Vec<&str> = vec![
        "predict",
        "--profile",
        line.split_whitespace().nth(5).unwrap(),
        "--gpu",
        "Tesla V100",
        "--max-slowdown",
        "5%",
    ];
    assert!(line.contains("--gpu \"Tesla V100\" --max-slowdown 5%"), "the example changed: {line}");
    let out = common::gpumodel().current_dir(root()).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines = common::logical_lines(&text);
    // The table row whose "optimum of" column lists E.
    let marked = lines
        .iter()
        .find(|l| l.split_whitespace().nth(5).is_some_and(|w| w.trim_end_matches(',') == "E"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no row marked E:\n{text}"));
    let optima = lines.iter().find(|l| l.starts_with("model optima: energy ")).expect("a model optima line");
    assert!(optima.starts_with(&format!("model optima: energy {marked} MHz")), "{optima} vs row {marked}");
    for advice in lines.iter().filter(|l| l.starts_with("advice for least energy: run at ")) {
        let agrees =
            advice.starts_with(&format!("advice for least energy: run at {marked} MHz, the model's pick"));
        assert!(
            agrees || advice.contains(&format!("not the model's {marked} MHz")),
            "{advice} vs row {marked}"
        );
        assert!(!advice.contains(&format!("run at {marked} MHz, not the model's {marked} MHz")), "{advice}");
    }
}
