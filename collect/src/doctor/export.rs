//! How `gpumodel doctor` prints: the checklist table, the verdict table, and one line on readiness.

use super::{DoctorReport, Status};
use gpumodel_models::export::{Cell, Column, Export, Section};

impl Export for DoctorReport {
    const COMMAND: &'static str = "doctor";

    fn sections(&self) -> Vec<Section> {
        let mut checks = Section::new(vec![
            Column::new("part", "part"),
            Column::new("check", "check"),
            Column::new("status", "status"),
            Column::new("found", "found"),
            Column::new("fix", "fix"),
        ]);
        for c in &self.checks {
            checks.push(vec![
                Cell::text(c.part),
                Cell::text(c.id),
                Cell::text(c.status.word()),
                Cell::text(&c.found),
                c.fix.as_ref().map_or(Cell::text(""), Cell::text),
            ]);
        }
        let mut verdict = Section::titled(
            "which gpumodel commands work here",
            vec![
                Column::new("command", "command"),
                Column::new("status", "status"),
                Column::new("because", "because of"),
            ],
        );
        for v in &self.verdict {
            verdict.push(vec![
                Cell::text(v.command),
                Cell::text(v.status.word()),
                Cell::Text(v.because.join(", ")),
            ]);
        }
        vec![checks, verdict]
    }

    fn notes(&self) -> Vec<String> {
        let missing = self.checks.iter().filter(|c| c.status == Status::Missing).count();
        let degraded = self.checks.iter().filter(|c| c.status == Status::Degraded).count();
        vec![if self.ready {
            format!(
                "ready: `gpumodel collect` and `collect --suite` work on device {} ({degraded} check(s) degraded)",
                self.device
            )
        } else {
            format!(
                "not ready: {missing} check(s) missing on device {}; apply the fixes above, then run `gpumodel doctor` again",
                self.device
            )
        }]
    }
}
