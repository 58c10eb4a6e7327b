//! [`check_response`]: the final answer's text against one [`ResponseExpectation`].

use super::Score;
use crate::set::ResponseExpectation;

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// ROUGE-L F-measure of `candidate` against `reference`: the longest common subsequence of
/// their words (lower-cased, split at anything that is not a letter or digit), as
/// `2PR / (P + R)` with P its share of the candidate and R of the reference. 1 for equal word
/// lists, 0 when nothing is shared.
///
/// ```
/// use agentweave_eval::criteria::rouge_l;
/// assert_eq!(rouge_l("The refund is on its way.", "the refund is on its way"), 1.0);
/// let f = rouge_l("Your refund of 39 EUR is on its way", "39 EUR are on their way back");
/// assert!(f > 0.4 && f < 0.6, "{f}");
/// ```
pub fn rouge_l(candidate: &str, reference: &str) -> f64 {
    let c = words(candidate);
    let r = words(reference);
    if c.is_empty() || r.is_empty() {
        return if c.is_empty() && r.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    // One row of the LCS table at a time.
    let mut prev = vec![0usize; r.len() + 1];
    let mut row = vec![0usize; r.len() + 1];
    for cw in &c {
        for (j, rw) in r.iter().enumerate() {
            row[j + 1] = if cw == rw {
                prev[j] + 1
            } else {
                row[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut row);
    }
    let lcs = prev[r.len()] as f64;
    if lcs == 0.0 {
        return 0.0;
    }
    let p = lcs / c.len() as f64;
    let rr = lcs / r.len() as f64;
    2.0 * p * rr / (p + rr)
}

fn excerpt(text: &str) -> String {
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

/// The answer as JSON: the text itself, or the inside of a fenced code block.
fn answer_json(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|t| t.strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str(inner.trim())
}

/// Checks the final answer (`None`: the turn gave none, which fails every check) against one
/// expectation.
///
/// ```
/// use agentweave_eval::criteria::check_response;
/// use agentweave_eval::set::ResponseExpectation;
/// let score = check_response(&ResponseExpectation::Contains("39 EUR".into()), Some("Done: 39 EUR back."));
/// assert!(score.passed);
/// let score = check_response(&ResponseExpectation::Regex(r"#\d{4}".into()), Some("logged"));
/// assert_eq!(score.reason, r#"the answer does not match /#\d{4}/: "logged""#);
/// ```
pub fn check_response(expect: &ResponseExpectation, answer: Option<&str>) -> Score {
    let name = match expect {
        ResponseExpectation::Exact(_) => "response exact",
        ResponseExpectation::Contains(_) => "response contains",
        ResponseExpectation::NotContains(_) => "response does not contain",
        ResponseExpectation::Regex(_) => "response regex",
        ResponseExpectation::RougeL { .. } => "response ROUGE-L",
        ResponseExpectation::JsonSchema(_) => "response JSON Schema",
    };
    let Some(answer) = answer else {
        return Score::fail(name, "the turn gave no final answer");
    };
    let verdict = |ok: bool, yes: String, no: String| {
        if ok {
            Score::new(name, 1.0, true, yes)
        } else {
            Score::fail(name, no)
        }
    };
    match expect {
        ResponseExpectation::Exact(want) => verdict(
            answer.trim() == want.trim(),
            "the answer is exactly as expected".into(),
            format!("expected {}, got {}", excerpt(want), excerpt(answer)),
        ),
        ResponseExpectation::Contains(want) => verdict(
            answer.contains(want.as_str()),
            format!("the answer contains {want:?}"),
            format!("the answer does not contain {want:?}: {}", excerpt(answer)),
        ),
        ResponseExpectation::NotContains(want) => verdict(
            !answer.contains(want.as_str()),
            format!("the answer does not contain {want:?}"),
            format!("the answer contains {want:?}: {}", excerpt(answer)),
        ),
        ResponseExpectation::Regex(pattern) => match regex::Regex::new(pattern) {
            Ok(re) => verdict(
                re.is_match(answer),
                format!("the answer matches /{pattern}/"),
                format!("the answer does not match /{pattern}/: {}", excerpt(answer)),
            ),
            Err(e) => Score::fail(
                name,
                format!("/{pattern}/ is not a regular expression: {e}"),
            ),
        },
        ResponseExpectation::RougeL { reference, min } => {
            let f = rouge_l(answer, reference);
            let passed = f >= *min;
            Score::new(
                name,
                f,
                passed,
                format!(
                    "ROUGE-L {f:.2} {} {min:.2} against {}",
                    if passed { ">=" } else { "<" },
                    excerpt(reference)
                ),
            )
        }
        ResponseExpectation::JsonSchema(schema) => {
            let validator = match jsonschema::validator_for(schema) {
                Ok(v) => v,
                Err(e) => return Score::fail(name, format!("the schema is not usable: {e}")),
            };
            let value = match answer_json(answer) {
                Ok(v) => v,
                Err(e) => {
                    return Score::fail(
                        name,
                        format!("the answer is not JSON ({e}): {}", excerpt(answer)),
                    )
                }
            };
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .take(5)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    format!(
                        "{}: {e}",
                        if at.is_empty() { "(root)" } else { at.as_str() }
                    )
                })
                .collect();
            verdict(
                errors.is_empty(),
                "the answer is JSON matching the schema".into(),
                format!(
                    "the answer does not match the schema: {}",
                    errors.join("; ")
                ),
            )
        }
    }
}
