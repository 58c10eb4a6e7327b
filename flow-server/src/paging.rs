//! Pages of a list: every list the server answers is cut to at most [`MAX_PAGE`] items, the
//! caller asking for the next with `offset` (`?limit=N&offset=M`; the native lists answer
//! `next_offset` while more follow).

use axum::extract::rejection::QueryRejection;
use axum::extract::Query;
use serde::Deserialize;

use crate::error::ApiError;

/// The most items one page holds (and the default).
pub(crate) const MAX_PAGE: usize = 100;

/// `?limit=N&offset=M` of a list request.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub(crate) struct PageQuery {
    /// Items wanted (1 to [`MAX_PAGE`]; more is cut to it).
    #[serde(default)]
    pub(crate) limit: Option<usize>,
    /// Items skipped.
    #[serde(default)]
    pub(crate) offset: Option<usize>,
}

impl PageQuery {
    /// The query of a request, or a clear 400.
    pub(crate) fn of(query: Result<Query<PageQuery>, QueryRejection>) -> Result<Self, ApiError> {
        query.map(|Query(q)| q).map_err(|e| {
            ApiError::BadRequest(format!(
                "the page is given as ?limit=N&offset=M with whole numbers ({e})"
            ))
        })
    }

    /// The page's size: `limit`, at most `max`.
    pub(crate) fn size(&self, max: usize) -> usize {
        self.limit.unwrap_or(max).clamp(1, max)
    }

    /// The page of `items` (at most `max` of them), and the offset of the next page if more
    /// follow.
    pub(crate) fn cut<T>(&self, items: Vec<T>, max: usize) -> (Vec<T>, Option<usize>) {
        let from = self.offset.unwrap_or(0);
        let total = items.len();
        let page: Vec<T> = items.into_iter().skip(from).take(self.size(max)).collect();
        let next = from.saturating_add(page.len());
        (page, (next < total).then_some(next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_at_most_the_maximum_and_says_where_the_next_starts() {
        let all: Vec<u32> = (0..250).collect();
        let huge = PageQuery {
            limit: Some(100_000),
            offset: None,
        };
        let (page, next) = huge.cut(all.clone(), MAX_PAGE);
        assert_eq!((page.len(), next), (MAX_PAGE, Some(100)));
        let last = PageQuery {
            limit: Some(100),
            offset: Some(200),
        };
        let (page, next) = last.cut(all, MAX_PAGE);
        assert_eq!((page.len(), next), (50, None));
    }
}
