//! A tool call's result as text.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// A tool call's result as text: its content blocks one per line, or its structured content as
/// JSON if it has no content blocks (see the [module docs](super#calls-and-results)).
pub fn result_text(result: &CallToolResult) -> String {
    if result.content.is_empty() {
        if let Some(structured) = &result.structured_content {
            return structured.to_string();
        }
    }
    result
        .content
        .iter()
        .map(block_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!(
                "[image: {}, {} bytes]",
                image.mime_type,
                base64_len(&image.data)
            )
        }
        ContentBlock::Audio(audio) => {
            format!(
                "[audio: {}, {} bytes]",
                audio.mime_type,
                base64_len(&audio.data)
            )
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}: {}, {} bytes]",
                mime_type.as_deref().unwrap_or("binary"),
                base64_len(blob)
            ),
            #[allow(unreachable_patterns)]
            _ => "[resource]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        #[allow(unreachable_patterns)]
        _ => "[content of a kind this client does not know]".to_owned(),
    }
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_sizes() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("TWFu"), 3);
        assert_eq!(base64_len("TWE="), 2);
        assert_eq!(base64_len("TQ=="), 1);
    }

    #[test]
    fn results_map_to_text() {
        let text: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "TWFu", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"}
            ]
        }))
        .unwrap();
        assert_eq!(
            result_text(&text),
            "hello\n[image: image/png, 3 bytes]\ninside\n[resource link: file:///b]"
        );
        let both: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "{\"t\": 1}"}],
            "structuredContent": {"t": 1}
        }))
        .unwrap();
        assert_eq!(result_text(&both), r#"{"t": 1}"#);
        let structured: CallToolResult = serde_json::from_value(serde_json::json!({
            "structuredContent": {"t": 1}
        }))
        .unwrap();
        assert_eq!(result_text(&structured), r#"{"t":1}"#);
    }
}
