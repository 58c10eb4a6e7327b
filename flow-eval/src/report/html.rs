//! [`Report::html`]: one self-contained HTML page per eval run (no script, no network).

use std::collections::BTreeSet;

use super::junit::xml_escape;
use super::{CaseResult, Report, RunResult};
use crate::trajectory::Step;

const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:2rem;color:#1a202c;max-width:1100px}\
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2.5rem;border-bottom:1px solid #cbd5e0}\
.pass{color:#276749}.fail{color:#c53030}\
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #e2e8f0;padding:.25rem .5rem;\
text-align:left;vertical-align:top}\
.user{background:#ebf8ff;padding:.4rem .6rem;border-radius:6px;margin:.3rem 0}\
.answer{background:#f0fff4;padding:.4rem .6rem;border-radius:6px;margin:.3rem 0 .3rem 2rem}\
.error{background:#fff5f5;padding:.4rem .6rem;border-radius:6px;color:#c53030}\
ol.trajectory{font-family:ui-monospace,monospace;font-size:.85rem}\
.picture svg{max-width:100%;height:auto}";

/// CSS that marks, inside `#scope`, the agents a run reached and the links it crossed.
fn highlight(scope: &str, run: &RunResult) -> String {
    let mut agents = BTreeSet::new();
    let mut links = BTreeSet::new();
    for step in run.turns.iter().flat_map(|t| &t.trajectory.steps) {
        match step {
            Step::Agent { agent, .. } => {
                agents.insert(agent.clone());
            }
            Step::Transfer { from, to, .. } => {
                links.insert((from.clone(), to.clone()));
            }
            Step::Tool { .. } => {}
        }
    }
    let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut css = String::new();
    for agent in &agents {
        css.push_str(&format!(
            "#{scope} g.agent[data-name=\"{}\"] rect{{stroke:#2b6cb0;stroke-width:3px;fill:#ebf4ff}}",
            quote(agent)
        ));
    }
    for (from, to) in &links {
        for (a, b) in [(from, to), (to, from)] {
            css.push_str(&format!(
                "#{scope} path[data-from=\"{}\"][data-to=\"{}\"]{{stroke:#dd6b20;stroke-width:3px}}",
                quote(a),
                quote(b)
            ));
        }
    }
    css
}

fn verdict(passed: bool) -> &'static str {
    if passed {
        "<span class=\"pass\">PASS</span>"
    } else {
        "<span class=\"fail\">FAIL</span>"
    }
}

fn run_html(out: &mut String, scope: &str, run: &RunResult, svg: Option<&str>) {
    out.push_str(&format!("<div id=\"{scope}\">"));
    if let Some(svg) = svg {
        out.push_str(&format!(
            "<style>{}</style><div class=\"picture\">{svg}</div>",
            highlight(scope, run)
        ));
    }
    if let Some(e) = &run.error {
        out.push_str(&format!("<p class=\"error\">{}</p>", xml_escape(e)));
    }
    for (i, turn) in run.turns.iter().enumerate() {
        out.push_str(&format!("<h3>Turn {}</h3>", i + 1));
        out.push_str(&format!(
            "<div class=\"user\"><b>user</b>: {}</div>",
            xml_escape(&turn.user)
        ));
        match &turn.answer {
            Some(a) => out.push_str(&format!(
                "<div class=\"answer\"><b>flow</b>: {}</div>",
                xml_escape(a)
            )),
            None => out.push_str("<div class=\"answer\"><i>no answer</i></div>"),
        }
        if let Some(e) = &turn.error {
            out.push_str(&format!("<p class=\"error\">{}</p>", xml_escape(e)));
        }
        out.push_str("<ol class=\"trajectory\">");
        for step in &turn.trajectory.steps {
            out.push_str(&format!("<li>{}</li>", xml_escape(&step.describe())));
        }
        out.push_str("</ol>");
        let m = &turn.metrics;
        out.push_str(&format!(
            "<p>{} tokens, {} model calls, {} tool calls, {} transfers, {} ms</p>",
            m.usage.total_tokens(),
            m.model_calls,
            m.tool_calls,
            m.transfers,
            m.wall_ms
        ));
        scores_html(out, &turn.scores);
    }
    if !run.case_scores.is_empty() {
        out.push_str("<h3>Whole conversation</h3>");
        scores_html(out, &run.case_scores);
    }
    out.push_str("</div>");
}

fn scores_html(out: &mut String, scores: &[crate::criteria::Score]) {
    if scores.is_empty() {
        return;
    }
    out.push_str("<table><tr><th>criterion</th><th>score</th><th>result</th><th>reason</th></tr>");
    for s in scores {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
            xml_escape(&s.criterion),
            s.score,
            verdict(s.passed),
            xml_escape(&s.reason)
        ));
    }
    out.push_str("</table>");
}

fn case_html(out: &mut String, index: usize, case: &CaseResult, svg: Option<&str>) {
    out.push_str(&format!(
        "<h2 id=\"case-{}\">{} {}</h2>",
        xml_escape(&case.id),
        xml_escape(&case.id),
        verdict(case.passed)
    ));
    if !case.description.is_empty() {
        out.push_str(&format!("<p>{}</p>", xml_escape(&case.description)));
    }
    if case.runs.len() > 1 {
        out.push_str(&format!(
            "<p>{} of {} runs passed: pass rate {:.2}, 95% interval [{:.2}, {:.2}], threshold {:.2}</p>",
            case.passes,
            case.runs.len(),
            case.pass_rate,
            case.interval.0,
            case.interval.1,
            case.threshold
        ));
    }
    for (r, run) in case.runs.iter().enumerate() {
        if case.runs.len() > 1 {
            out.push_str(&format!("<h3>Run {} {}</h3>", r + 1, verdict(run.passed)));
        }
        run_html(out, &format!("c{index}r{r}"), run, svg);
    }
}

impl Report {
    /// The report as one self-contained HTML page: a summary table, then each case with its
    /// conversation, its trajectory (listed, and drawn on the flow's picture: the agents it
    /// reached and the transfers it made are marked) and its scores with their reasons.
    pub fn html(&self) -> String {
        let mut out =
            String::from("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
        out.push_str(&format!(
            "<title>eval: {}</title><style>{STYLE}</style></head><body>",
            xml_escape(&self.set)
        ));
        let passed = self.cases.iter().filter(|c| c.passed).count();
        out.push_str(&format!(
            "<h1>Eval set: {}</h1><p>{} passed, {} failed{}</p>",
            xml_escape(&self.set),
            passed,
            self.cases.len() - passed,
            self.flow
                .as_ref()
                .map(|f| format!("; flow <code>{}</code>", xml_escape(&f.shape)))
                .unwrap_or_default()
        ));
        out.push_str("<table><tr><th>case</th><th>runs</th><th>passed</th><th>result</th></tr>");
        for case in &self.cases {
            out.push_str(&format!(
                "<tr><td><a href=\"#case-{0}\">{0}</a></td><td>{1}</td><td>{2}</td><td>{3}</td></tr>",
                xml_escape(&case.id),
                case.runs.len(),
                case.passes,
                verdict(case.passed)
            ));
        }
        out.push_str("</table>");
        let svg = self.flow.as_ref().map(|f| f.svg.as_str());
        for (i, case) in self.cases.iter().enumerate() {
            case_html(&mut out, i, case, svg);
        }
        out.push_str("</body></html>\n");
        out
    }
}
