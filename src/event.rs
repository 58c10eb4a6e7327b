//! What an [`AgentEvent`](crate::AgentEvent) carries beyond its message and
//! [`Action`](crate::Action): its [`EventOutput`], the address of an interrupt
//! ([`InterruptInfo`], [`InterruptFrame`], [`ToolFrame`]), the steps of a
//! [`RunPath`](crate::RunPath) ([`RunStep`]), what a resumed agent is given ([`ResumeInfo`]),
//! the session's record ([`SessionEvent`], [`RecordedEvent`]), an event's documented JSON form
//! ([`EventJson`]), and a printer for the terminal ([`EventPrinter`]).

pub use agentweave_runtime::store::RecordedEvent;
pub use agentweave_runtime::{
    ErrorJson, EventJson, EventJsonError, EventOutput, EventPrinter, InterruptFrame, InterruptInfo,
    ResumeInfo, RunStep, SessionEvent, ToolFrame,
};
