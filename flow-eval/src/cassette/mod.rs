//! Record and replay: a [`Cassette`] turns runs on real models and tools into deterministic,
//! offline tests.
//!
//! - `handle.rs`: [`Cassette`], the shared handle on one file; [`Mode`] (record or replay,
//!   [`RECORD_ENV`]); [`ReplayError`], a replayed call it has no answer for.
//! - `file.rs`: the file's format ([`CassetteFile`], readable JSON) and [`CassetteError`]
//!   (a missing file, a malformed one with its line, column and field, another flow's).
//! - `matching.rs`: [`MatchPolicy`] (exact, or ignoring named fields) and [`Diff`].
//! - `model.rs`: [`RecordingModel`] and [`ReplayModel`].
//! - `tool.rs`: [`RecordingTool`] and [`ReplayTool`].
//!
//! A test opens its cassette with [`Cassette::open`]: it replays the committed file, or, when
//! run as `AGENTFLOW_RECORD=1 cargo test`, calls the real models and tools and writes the file
//! anew.

mod file;
mod handle;
mod matching;
mod model;
mod tool;

#[allow(unused_imports)]
pub(crate) use file::parse_json;
pub use file::{
    CassetteError, CassetteFile, FlowStamp, Interaction, ModelInteraction, RecordedError,
    RecordedRequest, RecordedResponse, RecordedSchema, ToolInteraction, ToolResult,
    CASSETTE_FORMAT,
};
pub use handle::{Cassette, Mode, ReplayError, RECORD_ENV};
pub use matching::{Diff, Difference, MatchPolicy};
pub use model::{RecordingModel, ReplayModel};
pub use tool::{RecordingTool, ReplayTool};
