//! Tools that need this process's services: tools from MCP servers (`mcp`, cargo feature
//! `mcp`: child processes and HTTP) and the memory tools `remember`, `recall` and `forget`
//! over a long-term memory store (`memory_tools`), recall before a model call
//! (`memory_recall`), extraction after a turn (`memory_extract`), and the agent kit (`kit`: skills, the plan
//! tool, the file tools). The ReAct agent, the tool contract and the
//! rest of the LLM layer are the engine's (`agentweave-core`, re-exported at this crate's root).

pub mod kit;
#[cfg(feature = "mcp")]
pub mod mcp;
pub(crate) mod memory_extract;
pub(crate) mod memory_recall;
pub(crate) mod memory_tools;
