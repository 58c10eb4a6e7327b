//! [`Report::table`]: the report as a terminal table.

use super::{CaseResult, Report};

fn cut(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    match one_line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

/// The first failure of a case, or the count of its scores.
fn note(case: &CaseResult) -> String {
    for run in &case.runs {
        if let Some(e) = &run.error {
            return format!("error: {e}");
        }
        if let Some(s) = run.scores().find(|s| !s.passed) {
            return format!("{}: {}", s.criterion, s.reason);
        }
    }
    let scores: usize = case.runs.first().map_or(0, |r| r.scores().count());
    format!("{scores} checks passed")
}

impl Report {
    /// The report as a table: one row per case (runs, pass rate with its 95% interval when
    /// repeated, PASS or FAIL, and the first failure's criterion and reason), then a summary.
    ///
    /// ```text
    /// eval set: customer-service desk
    /// case        runs  pass rate          result  note
    /// refund         1  1/1                PASS    5 checks passed
    /// ```
    pub fn table(&self) -> String {
        let width = self
            .cases
            .iter()
            .map(|c| c.id.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = format!("eval set: {}\n", self.set);
        out.push_str(&format!(
            "{:<width$}  {:>4}  {:<17}  {:<6}  note\n",
            "case", "runs", "pass rate", "result"
        ));
        for case in &self.cases {
            let runs = case.runs.len() as u32;
            let rate = if runs > 1 {
                format!(
                    "{}/{} [{:.2}, {:.2}]",
                    case.passes, runs, case.interval.0, case.interval.1
                )
            } else {
                format!("{}/{}", case.passes, runs)
            };
            out.push_str(&format!(
                "{:<width$}  {:>4}  {:<17}  {:<6}  {}\n",
                case.id,
                runs,
                rate,
                if case.passed { "PASS" } else { "FAIL" },
                cut(&note(case), 100)
            ));
        }
        let passed = self.cases.iter().filter(|c| c.passed).count();
        out.push_str(&format!(
            "{} passed, {} failed\n",
            passed,
            self.cases.len() - passed
        ));
        out
    }
}
