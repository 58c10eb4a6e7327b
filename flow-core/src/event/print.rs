//! [`EventPrinter`]: events as readable lines, one format for examples, apps and logs.

use std::io::{self, Write};

use futures::StreamExt;

use super::{Action, AgentEvent, EventOutput};
use crate::message::Message;

/// Writes events as readable lines, each labelled with its run path: whole messages (role,
/// content, the tool calls they make), streamed messages chunk by chunk as they arrive (their
/// tool calls once whole), tool results, custom data, transfers, exits, interrupts (id and
/// info), loop breaks, errors and, if asked, token usage.
///
/// ```text
///   [triage] assistant:  -> transfer_to_agent({"agent_name":"refund"})
///   [triage] tool: successfully transferred to agent [refund]
///   [triage] => transfer to refund
///   [triage/refund] assistant (streamed): Done: 39 EUR are on their way back to you.
///   [triage/refund] usage: 120 in, 14 out
///   [triage/refund] => interrupt triage/refund: {"question":"Approve?"}
/// ```
///
/// A streamed message is read through a fork of its stream, so the event stays whole for
/// whoever reads it next (and the run's record is not affected).
///
/// ```
/// use agentweave_runtime::{AgentEvent, EventPrinter, Message};
/// # futures::executor::block_on(async {
/// let mut printer = EventPrinter::new(Vec::new()).indent("");
/// printer.print(&AgentEvent::message(Message::assistant("Hello."))).await.unwrap();
/// assert_eq!(String::from_utf8(printer.into_inner()).unwrap(), "[] assistant: Hello.\n");
/// # });
/// ```
#[derive(Debug)]
pub struct EventPrinter<W = io::Stdout> {
    out: W,
    indent: String,
    usage: bool,
}

impl EventPrinter<io::Stdout> {
    /// A printer to standard output, lines indented by two spaces, usage not shown.
    pub fn stdout() -> Self {
        EventPrinter::new(io::stdout())
    }
}

impl<W: Write> EventPrinter<W> {
    /// A printer to `out`, lines indented by two spaces, usage not shown.
    pub fn new(out: W) -> Self {
        EventPrinter {
            out,
            indent: "  ".to_owned(),
            usage: false,
        }
    }

    /// What each line starts with (two spaces by default).
    pub fn indent(mut self, indent: impl Into<String>) -> Self {
        self.indent = indent.into();
        self
    }

    /// Whether to print a model reply's token usage, when the model reported it (a line
    /// `usage: N in, M out` after the message).
    pub fn usage(mut self, on: bool) -> Self {
        self.usage = on;
        self
    }

    /// The writer, back.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Writes `event`; a streamed message is written chunk by chunk as its chunks arrive.
    pub async fn print(&mut self, event: &AgentEvent) -> io::Result<()> {
        let path = event.run_path().to_string();
        let lead = format!("{}[{path}]", self.indent);
        match &event.output {
            Some(EventOutput::Message(m)) => {
                writeln!(self.out, "{lead} {}", describe(m))?;
                self.write_usage(&lead, m)?;
            }
            Some(EventOutput::Stream(stream)) => {
                write!(self.out, "{lead} assistant (streamed): ")?;
                self.out.flush()?;
                let mut reader = stream.fork();
                let mut chunks = Vec::new();
                while let Some(chunk) = reader.next().await {
                    match chunk {
                        Ok(c) => {
                            write!(self.out, "{}", c.content)?;
                            self.out.flush()?;
                            chunks.push(c);
                        }
                        Err(e) => write!(self.out, " <{e}>")?,
                    }
                }
                let whole = Message::concat(chunks.iter().map(|c| &**c));
                for call in &whole.tool_calls {
                    write!(self.out, " -> {}({})", call.name, call.arguments)?;
                }
                writeln!(self.out)?;
                self.write_usage(&lead, &whole)?;
            }
            Some(EventOutput::Custom(v)) => writeln!(self.out, "{lead} custom: {v}")?,
            None => {}
        }
        match &event.action {
            Some(Action::TransferToAgent(to)) => writeln!(self.out, "{lead} => transfer to {to}")?,
            Some(Action::Exit) => writeln!(self.out, "{lead} => exit")?,
            Some(Action::Interrupted(i)) => {
                writeln!(self.out, "{lead} => interrupt {}: {}", i.id, i.info)?;
            }
            Some(Action::BreakLoop(by)) => writeln!(self.out, "{lead} => loop broken by {by}")?,
            Some(Action::Custom(v)) => writeln!(self.out, "{lead} => action: {v}")?,
            Some(Action::Finish(result)) => writeln!(self.out, "{lead} => finish: {result}")?,
            None => {}
        }
        if let Some(e) = &event.error {
            writeln!(self.out, "{lead} error: {e}")?;
        }
        Ok(())
    }

    fn write_usage(&mut self, lead: &str, m: &Message) -> io::Result<()> {
        if let (true, Some(u)) = (self.usage, m.usage.as_deref()) {
            writeln!(
                self.out,
                "{lead} usage: {} in, {} out",
                u.input_tokens, u.output_tokens
            )?;
        }
        Ok(())
    }
}

/// `role: content -> tool(args)...`
fn describe(m: &Message) -> String {
    let mut text = format!("{}: {}", m.role, m.content);
    for call in &m.tool_calls {
        text.push_str(&format!(" -> {}({})", call.name, call.arguments));
    }
    text
}
