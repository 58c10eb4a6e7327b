//! [`Report::junit_xml`]: the report as JUnit XML, which CI systems read.

use super::Report;

/// Escapes text for XML content and attribute values.
pub(crate) fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot hold.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

impl Report {
    /// The report as JUnit XML: one `<testsuite>` named after the set, one `<testcase>` per
    /// case, with a `<failure>` listing every failed score (or the run's error) of a case that
    /// did not pass, and each score in `<system-out>`.
    pub fn junit_xml(&self) -> String {
        let failures = self.cases.iter().filter(|c| !c.passed).count();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!(
            "<testsuites name=\"{}\" tests=\"{}\" failures=\"{failures}\">\n",
            xml_escape(&self.set),
            self.cases.len()
        ));
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">\n",
            xml_escape(&self.set),
            self.cases.len()
        ));
        for case in &self.cases {
            let seconds: u64 = case
                .runs
                .iter()
                .flat_map(|r| &r.turns)
                .map(|t| t.metrics.wall_ms)
                .sum();
            out.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">\n",
                xml_escape(&self.set),
                xml_escape(&case.id),
                seconds as f64 / 1000.0
            ));
            let mut log = String::new();
            let mut failed = Vec::new();
            for (i, run) in case.runs.iter().enumerate() {
                if let Some(e) = &run.error {
                    failed.push(format!("run {}: error: {e}", i + 1));
                }
                for s in run.scores() {
                    let line = format!(
                        "run {}: {} {:.2} {}: {}",
                        i + 1,
                        s.criterion,
                        s.score,
                        if s.passed { "passed" } else { "FAILED" },
                        s.reason
                    );
                    if !s.passed {
                        failed.push(line.clone());
                    }
                    log.push_str(&line);
                    log.push('\n');
                }
            }
            if !case.passed {
                out.push_str(&format!(
                    "      <failure message=\"pass rate {:.2} under {:.2}\">{}</failure>\n",
                    case.pass_rate,
                    case.threshold,
                    xml_escape(&failed.join("\n"))
                ));
            }
            out.push_str(&format!(
                "      <system-out>{}</system-out>\n    </testcase>\n",
                xml_escape(&log)
            ));
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}
