//! `gpumodel` — model GPU power and performance from hardware performance counters.
//!
//! This binary parses arguments and dispatches; the work lives in the member crates.

use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    match cli::run() {
        Ok(code) => code,
        Err(err) => {
            // One line: the error and its causes, as hyperfine and ripgrep print them.
            let mut line = format!("gpumodel: error: {err}");
            // Library errors often print their source in their own message ("path: cause", or "cannot
            // read path: cause; check the path"); a cause the line already holds is not repeated.
            for cause in err.chain().skip(1) {
                let cause = cause.to_string();
                if !line.contains(&cause) {
                    line.push_str(&format!(": {cause}"));
                }
            }
            eprintln!("{line}");
            ExitCode::from(2)
        }
    }
}
