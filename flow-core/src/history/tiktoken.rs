//! [`TiktokenCounter`]: a [`TokenCounter`] over OpenAI's tokenizers (feature `tiktoken`), for
//! budgets that must count exactly before the model has reported any usage.

use tiktoken_rs::CoreBPE;

use super::budget::TokenCounter;
use crate::message::Message;

/// Tokens OpenAI's chat format adds around each message (its role and separators).
const PER_MESSAGE: usize = 3;

/// Counts a message's tokens with one of OpenAI's tokenizers (the `tiktoken-rs` crate, which
/// embeds their tables): its text, tool calls (name, arguments, id), tool name and call id,
/// plus 3 tokens a message for the chat format and 85 per part beyond the text (an image's
/// low-detail cost).
///
/// Exact for OpenAI models' text; other providers' tokenizers differ, and a budget corrects
/// the count with the usage the model reports anyway
/// ([`UsageCalibration`](super::UsageCalibration)). Give it to a budget with
/// [`ContextBudget::counter`](super::ContextBudget::counter).
///
/// ```
/// use agentweave_runtime::history::{TiktokenCounter, TokenCounter};
/// use agentweave_runtime::Message;
/// let counter = TiktokenCounter::for_model("gpt-4o").unwrap();
/// assert_eq!(counter.encoding(), "o200k_base");
/// // "hello world" is two tokens, and the chat format adds three.
/// assert_eq!(counter.count(&Message::user("hello world")), 5);
/// ```
#[derive(Clone, Copy)]
pub struct TiktokenCounter {
    bpe: &'static CoreBPE,
    encoding: &'static str,
}

/// A model [`TiktokenCounter::for_model`] knows no tokenizer for.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "no OpenAI tokenizer is known for the model '{model}'; use TiktokenCounter::o200k() (GPT-4o, \
     GPT-4.1, o-series) or TiktokenCounter::cl100k() (GPT-4, GPT-3.5), or count with the \
     default estimate (the budget is calibrated by the model's reported usage)"
)]
pub struct UnknownTokenizer {
    /// The model asked for.
    pub model: String,
}

impl TiktokenCounter {
    /// The `o200k_base` tokenizer (GPT-4o, GPT-4.1, the o-series). Loads its table on first
    /// use, once per process.
    pub fn o200k() -> Self {
        TiktokenCounter {
            bpe: tiktoken_rs::o200k_base_singleton(),
            encoding: "o200k_base",
        }
    }

    /// The `cl100k_base` tokenizer (GPT-4, GPT-3.5).
    pub fn cl100k() -> Self {
        TiktokenCounter {
            bpe: tiktoken_rs::cl100k_base_singleton(),
            encoding: "cl100k_base",
        }
    }

    /// The tokenizer of an OpenAI model, by its name (`gpt-4o-mini`, `gpt-4`, ...).
    pub fn for_model(model: &str) -> Result<Self, UnknownTokenizer> {
        let unknown = || UnknownTokenizer {
            model: model.to_owned(),
        };
        match tiktoken_rs::tokenizer::get_tokenizer(model).ok_or_else(unknown)? {
            tiktoken_rs::tokenizer::Tokenizer::O200kBase => Ok(Self::o200k()),
            tiktoken_rs::tokenizer::Tokenizer::Cl100kBase => Ok(Self::cl100k()),
            _ => Err(unknown()),
        }
    }

    /// The encoding's name (`o200k_base`, `cl100k_base`).
    pub fn encoding(&self) -> &'static str {
        self.encoding
    }

    /// The tokens of `text`, special-token names counted as text.
    pub fn tokens(&self, text: &str) -> usize {
        if text.is_empty() {
            0
        } else {
            self.bpe.encode_ordinary(text).len()
        }
    }
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, message: &Message) -> usize {
        let mut tokens = PER_MESSAGE + self.tokens(&message.content);
        for call in &message.tool_calls {
            tokens +=
                self.tokens(&call.name) + self.tokens(&call.arguments) + self.tokens(&call.id);
        }
        tokens += message.tool_name.as_deref().map_or(0, |t| self.tokens(t));
        tokens += message
            .tool_call_id
            .as_deref()
            .map_or(0, |t| self.tokens(t));
        tokens + 85 * message.parts.len()
    }
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}
