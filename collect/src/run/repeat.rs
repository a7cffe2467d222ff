//! Phase 3: the program, started again and again while the run is shorter than `min_seconds`, until it
//! fails, the power source dies or the user interrupts; rows are written as the counters reach them.

use super::ProgramExit;
use super::phases::Consumer;
use crate::error::Result;
use crate::sampler::Clock;
use gpumodel_models::trace::{RunStatus, TraceWriter};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `program args…`, its standard output sent to our standard error when asked (so that a result printed
/// on our standard output is not mixed with the program's).
pub(crate) fn program_command(program: &Path, args: &[String], stdout_to_stderr: bool) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args);
    if stdout_to_stderr {
        use std::os::fd::AsFd;
        // If stderr cannot be duplicated the program keeps our stdout: its output is not lost.
        if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
            cmd.stdout(std::process::Stdio::from(fd));
        }
    }
    cmd
}

/// How the repetitions ended.
pub(super) struct Repeats {
    /// Times the program was started.
    pub(super) count: u32,
    /// How the last one ended.
    pub(super) exit: ProgramExit,
    /// The run's status so far.
    pub(super) status: RunStatus,
}

/// Runs `program args…` until the run lasts `min_seconds` (measured from `c.merger.run_start`) or
/// something stops it, draining `c` and writing ready rows to `writer` meanwhile. With `stdout_to_stderr`
/// the program's standard output goes to our standard error.
#[allow(clippy::too_many_arguments)]
pub(super) fn repeat_program(
    program: &Path,
    args: &[String],
    stdout_to_stderr: bool,
    min_seconds: f64,
    clock: Clock,
    c: &mut Consumer,
    writer: &mut TraceWriter,
    interrupted: &AtomicBool,
) -> Result<Repeats> {
    let mut reps = 0u32;
    let mut exit;
    let mut status = RunStatus::Complete;
    'runs: loop {
        if interrupted.load(Ordering::SeqCst) {
            // Interrupted during the idle phases: the program is not started at all.
            status = RunStatus::Interrupted;
            exit = ProgramExit::Killed;
            break;
        }
        let mut child: Child = match program_command(program, args, stdout_to_stderr).spawn() {
            Ok(ch) => ch,
            Err(e) => {
                status = RunStatus::Failed(format!("cannot start {}: {e}", program.display()));
                exit = ProgramExit::Killed;
                break;
            }
        };
        reps += 1;
        let mut stop_seen: Option<std::time::Instant> = None;
        let st = loop {
            c.drain(Duration::from_millis(20));
            writer.write(&c.merger.ready(false))?;
            match child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) => {}
                Err(e) => {
                    c.warnings.push(format!("waiting for the program: {e}"));
                    break None;
                }
            }
            if interrupted.load(Ordering::SeqCst) || c.power_failed {
                // A terminal's Ctrl-C reaches the program too: give it a second to exit on its own.
                let since = *stop_seen.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > Duration::from_secs(1) {
                    let _ = child.kill();
                    let _ = child.wait();
                    exit = ProgramExit::Killed;
                    status = if c.power_failed {
                        RunStatus::Failed(c.warnings.join("; "))
                    } else {
                        RunStatus::Interrupted
                    };
                    break 'runs;
                }
            }
        };
        match st.map(|s| (s.code(), s.success())) {
            Some((Some(code), true)) => exit = ProgramExit::Code(code),
            Some((Some(code), false)) => {
                exit = ProgramExit::Code(code);
                status = RunStatus::Failed(format!("the program exited with code {code}"));
                break;
            }
            Some((None, _)) => {
                exit = ProgramExit::Signal;
                status = if interrupted.load(Ordering::SeqCst) {
                    RunStatus::Interrupted
                } else {
                    RunStatus::Failed("the program was killed by a signal".into())
                };
                break;
            }
            None => {
                exit = ProgramExit::Killed;
                status = RunStatus::Failed(c.warnings.join("; "));
                break;
            }
        }
        if interrupted.load(Ordering::SeqCst) {
            status = RunStatus::Interrupted;
            break;
        }
        if c.power_failed {
            status = RunStatus::Failed(c.warnings.join("; "));
            break;
        }
        if clock.now_s() - c.merger.run_start >= min_seconds {
            break;
        }
    }
    Ok(Repeats { count: reps, exit, status })
}
