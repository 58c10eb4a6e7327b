//! Vectors of meaning: the [`Embedder`] contract, [`HashEmbedder`] (deterministic, offline:
//! for tests and benchmarks) and [`OpenAiEmbedder`] (any OpenAI-compatible `/embeddings`
//! endpoint, feature `http`).

use async_trait::async_trait;

use super::text::words;

/// A failure to embed a text.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A search by meaning was asked of a [`Memory`](super::Memory) without an embedder.
    #[error("this Memory has no embedder, so it cannot search by meaning; give it one with Memory::with_embedder or search by text")]
    NoEmbedder,
    /// The embedder answered with a number of vectors or dimensions it did not promise.
    #[error("embedder '{embedder}' answered {message}")]
    BadAnswer {
        /// The embedder's name.
        embedder: String,
        /// What was wrong.
        message: String,
    },
    /// A stored vector has another number of dimensions than the query's: the items were
    /// embedded by another model.
    #[error("a stored vector has {stored} dimensions, the query's {query}: the items were embedded by another model; write them again with this embedder")]
    Dimensions {
        /// The stored vector's.
        stored: usize,
        /// The query's.
        query: usize,
    },
    /// The embedding service failed.
    #[error("embedder '{embedder}' failed: {message}")]
    Failed {
        /// The embedder's name.
        embedder: String,
        /// What went wrong.
        message: String,
    },
}

/// Turns texts into vectors whose closeness (cosine) stands for closeness of meaning.
#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    /// A name for errors and logs (the model's).
    fn name(&self) -> &str;

    /// The vectors of `texts`, one per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// A deterministic embedder with no model: each word is hashed (FNV-1a) to one of
/// `dimensions` coordinates with a sign, and the vector is normalised. Texts that share words
/// are close; it knows no synonyms. For tests and benchmarks of search by meaning, offline.
///
/// ```
/// use agentweave_runtime::store::memory_items::{Embedder, HashEmbedder};
/// # futures::executor::block_on(async {
/// let e = HashEmbedder::new(64);
/// let v = e.embed(&["printer jam".into(), "printer jam".into()]).await.unwrap();
/// assert_eq!(v[0], v[1]);
/// assert_eq!(v[0].len(), 64);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dimensions: usize,
}

impl HashEmbedder {
    /// An embedder of `dimensions` coordinates (at least 1).
    pub fn new(dimensions: usize) -> Self {
        HashEmbedder {
            dimensions: dimensions.max(1),
        }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dimensions];
        for word in words(text) {
            let h = crate::ids::fnv1a_extend(crate::ids::FNV_OFFSET, word.as_bytes());
            let i = (h % self.dimensions as u64) as usize;
            v[i] += if (h >> 63) == 0 { 1.0 } else { -1.0 };
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

#[async_trait]
impl Embedder for HashEmbedder {
    fn name(&self) -> &str {
        "hash"
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

#[cfg(feature = "http")]
pub use openai::OpenAiEmbedder;

#[cfg(feature = "http")]
mod openai {
    use std::fmt;

    use async_trait::async_trait;
    use serde::Deserialize;

    use super::{EmbedError, Embedder};
    use crate::model::{HttpCall, HttpLimits};

    /// Embeddings from an OpenAI-compatible `POST {base_url}/embeddings` endpoint (OpenAI,
    /// vLLM, Ollama, LiteLLM, ...), with the bounded HTTP of the model clients
    /// ([`HttpLimits`]). Feature `http`.
    ///
    /// ```no_run
    /// use agentweave_runtime::store::memory_items::OpenAiEmbedder;
    /// let embedder = OpenAiEmbedder::new("https://api.openai.com/v1", "text-embedding-3-small")
    ///     .unwrap()
    ///     .api_key(std::env::var("OPENAI_API_KEY").unwrap());
    /// # let _ = embedder;
    /// ```
    #[derive(Clone)]
    pub struct OpenAiEmbedder {
        base_url: String,
        model: String,
        api_key: Option<String>,
        limits: HttpLimits,
        client: reqwest::Client,
    }

    impl fmt::Debug for OpenAiEmbedder {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("OpenAiEmbedder")
                .field("base_url", &self.base_url)
                .field("model", &self.model)
                .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
                .finish()
        }
    }

    #[derive(Deserialize)]
    struct Answer {
        data: Vec<Datum>,
    }

    #[derive(Deserialize)]
    struct Datum {
        index: usize,
        embedding: Vec<f32>,
    }

    impl OpenAiEmbedder {
        /// An embedder of `model` at `base_url` (ending before `/embeddings`), with the
        /// default [`HttpLimits`] and no API key.
        pub fn new(
            base_url: impl Into<String>,
            model: impl Into<String>,
        ) -> Result<Self, EmbedError> {
            let limits = HttpLimits::default();
            let model = model.into();
            let client = limits.client().map_err(|e| EmbedError::Failed {
                embedder: model.clone(),
                message: e.to_string(),
            })?;
            Ok(OpenAiEmbedder {
                base_url: base_url.into(),
                model,
                api_key: None,
                limits,
                client,
            })
        }

        /// Sends `key` as the bearer token.
        pub fn api_key(mut self, key: impl Into<String>) -> Self {
            self.api_key = Some(key.into());
            self
        }

        /// The endpoint called.
        pub fn endpoint(&self) -> String {
            format!("{}/embeddings", self.base_url.trim_end_matches('/'))
        }

        fn failed(&self, message: impl Into<String>) -> EmbedError {
            EmbedError::Failed {
                embedder: self.model.clone(),
                message: message.into(),
            }
        }
    }

    #[async_trait]
    impl Embedder for OpenAiEmbedder {
        fn name(&self) -> &str {
            &self.model
        }

        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            let call = HttpCall::start(&self.limits);
            let mut post = self
                .client
                .post(self.endpoint())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(serde_json::json!({"model": self.model, "input": texts}).to_string());
            if let Some(key) = &self.api_key {
                post = post.bearer_auth(key);
            }
            let response = call
                .send(post)
                .await
                .map_err(|e| self.failed(e.to_string()))?;
            if !response.status().is_success() {
                let status = response.status();
                let body = call.error_body(response).await;
                return Err(self.failed(format!("HTTP {status}: {body}")));
            }
            let body = call
                .body(response)
                .await
                .map_err(|e| self.failed(e.to_string()))?;
            let answer: Answer =
                serde_json::from_slice(&body).map_err(|e| EmbedError::BadAnswer {
                    embedder: self.model.clone(),
                    message: format!("JSON that is not an embeddings list: {e}"),
                })?;
            let mut out = vec![None; texts.len()];
            for d in answer.data {
                match out.get_mut(d.index) {
                    Some(slot @ None) => *slot = Some(d.embedding),
                    _ => {
                        return Err(EmbedError::BadAnswer {
                            embedder: self.model.clone(),
                            message: format!("an index {} out of range or twice", d.index),
                        })
                    }
                }
            }
            out.into_iter()
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| EmbedError::BadAnswer {
                    embedder: self.model.clone(),
                    message: format!("fewer vectors than the {} texts sent", texts.len()),
                })
        }
    }
}
