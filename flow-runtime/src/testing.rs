//! Support for tests that need an outside component: a PostgreSQL server, a browser and its
//! WebDriver, an MCP server, an OpenAI-compatible proxy.
//!
//! Such a test first looks for its component. When it is missing, the test calls
//! [`skip_missing_component`], which prints why the test is skipped and how to run it, and the
//! test returns early; `cargo test --workspace` thus passes on a bare machine. CI sets
//! [`REQUIRE_COMPONENTS_ENV`] (`AGENTFLOW_REQUIRE_COMPONENTS=1`), and there a missing component
//! fails the test instead: a skip in CI would prove nothing.
//!
//! ```
//! use flow_runtime::testing::skip_missing_component;
//!
//! fn postgres_url() -> Option<String> {
//!     std::env::var("AGENTFLOW_PG_URL").ok()
//! }
//!
//! # fn demo() {
//! let Some(url) = postgres_url() else {
//!     skip_missing_component("PostgreSQL", "set AGENTFLOW_PG_URL to a server's URL");
//!     return;
//! };
//! # let _ = url;
//! # }
//! ```

/// The environment variable that turns a skipped component test into a failure when set to `1`
/// (CI sets it).
pub const REQUIRE_COMPONENTS_ENV: &str = "AGENTFLOW_REQUIRE_COMPONENTS";

/// Whether missing components must fail tests ([`REQUIRE_COMPONENTS_ENV`] is `1`).
pub fn components_required() -> bool {
    std::env::var(REQUIRE_COMPONENTS_ENV).is_ok_and(|v| v == "1")
}

/// Reports that `component` is missing: prints a skip message naming it and saying how to
/// provide it (`how`), and returns so the caller can end the test early.
///
/// # Panics
///
/// When [`components_required`]: a test that needs a component must run in CI.
#[track_caller]
pub fn skip_missing_component(component: &str, how: &str) {
    if components_required() {
        panic!(
            "{component} is required ({REQUIRE_COMPONENTS_ENV}=1) but missing: {how}; \
             .ci/run installs and starts it"
        );
    }
    eprintln!(
        "SKIPPED at {}: {component} is not available here ({how}); CI runs this test with \
         {REQUIRE_COMPONENTS_ENV}=1",
        std::panic::Location::caller()
    );
}
