//! Words and vectors: how a query is cut into terms (the same for every backend), the full
//! text ranking of the in-memory store (BM25, as SQLite's FTS5 ranks), and vectors (their
//! stored bytes and their cosine similarity).

use std::collections::{HashMap, HashSet};

/// The most terms of a query a search uses.
pub const MAX_QUERY_TERMS: usize = 32;
/// The longest term a search uses (longer words are cut).
const MAX_TERM_CHARS: usize = 64;

/// The words of `text`, lowercased: runs of letters and digits.
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            w.chars()
                .take(MAX_TERM_CHARS)
                .flat_map(char::to_lowercase)
                .collect()
        })
}

/// The distinct terms of a query, in order, at most [`MAX_QUERY_TERMS`]. Terms are made of
/// letters and digits only, so they can be written into FTS5 and `tsquery` syntax with no
/// operator slipping through.
pub(crate) fn query_terms(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    words(query)
        .filter(|w| seen.insert(w.clone()))
        .take(MAX_QUERY_TERMS)
        .collect()
}

/// The terms as an FTS5 query matching any of them: `"a" OR "b"`.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn fts5_query(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// The terms as a PostgreSQL `tsquery` matching any of them: `a | b`.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn tsquery(terms: &[String]) -> String {
    terms.join(" | ")
}

/// BM25 scores (k1 = 1.2, b = 0.75) of `docs` for `terms`: one score per document, 0 for a
/// document that holds none of the terms.
pub(crate) fn bm25(docs: &[Vec<String>], terms: &[String]) -> Vec<f32> {
    let n = docs.len() as f32;
    if docs.is_empty() {
        return Vec::new();
    }
    let avg = docs.iter().map(Vec::len).sum::<usize>() as f32 / n;
    let df: HashMap<&str, f32> = terms
        .iter()
        .map(|t| {
            let count = docs.iter().filter(|d| d.iter().any(|w| w == t)).count();
            (t.as_str(), count as f32)
        })
        .collect();
    docs.iter()
        .map(|doc| {
            let len = doc.len() as f32;
            terms
                .iter()
                .map(|t| {
                    let tf = doc.iter().filter(|w| *w == t).count() as f32;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let d = df[t.as_str()];
                    let idf = (1.0 + (n - d + 0.5) / (d + 0.5)).ln();
                    let norm = 1.2 * (1.0 - 0.75 + 0.75 * len / avg.max(1.0));
                    idf * tf * 2.2 / (tf + norm)
                })
                .sum()
        })
        .collect()
}

/// A vector as stored: its numbers as little-endian `f32`s.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn vector_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector read back (`None` if the bytes are not a whole number of `f32`s).
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn vector_from_bytes(bytes: &[u8]) -> Option<Vec<f32>> {
    if bytes.len() % 4 != 0 {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// The cosine similarity of `a` and `b` (0 when either is zero).
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_terms_keep_letters_and_digits_only() {
        assert_eq!(
            query_terms("Printer\" OR x:* | jam!! printer"),
            ["printer", "or", "x", "jam"]
        );
        assert_eq!(fts5_query(&query_terms("a b")), "\"a\" OR \"b\"");
        assert_eq!(tsquery(&query_terms("a (b)")), "a | b");
    }

    #[test]
    fn bm25_ranks_more_matching_terms_first() {
        let docs: Vec<Vec<String>> = ["printer jam in tray", "printer toner", "coffee"]
            .iter()
            .map(|d| words(d).collect())
            .collect();
        let s = bm25(&docs, &query_terms("printer jam"));
        assert!(s[0] > s[1] && s[1] > 0.0 && s[2] == 0.0, "{s:?}");
    }

    #[test]
    fn vectors_round_trip_and_compare() {
        let v = vec![1.0, -2.5, 0.0];
        assert_eq!(vector_from_bytes(&vector_bytes(&v)).unwrap(), v);
        assert!(vector_from_bytes(&[0, 1, 2]).is_none());
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&v, &[0.0; 3]), 0.0);
    }
}
