//! The tools a skill's `allowed-tools` may name: the agent's own and the skill tools, which
//! every agent with skills has ([`SKILL_TOOLS`]); [`unknown_tools`] says which entries name
//! neither.

/// The tools the skills themselves give an agent (`load_skill`, `read_skill_resource`,
/// `run_skill_script`): always callable, so `allowed-tools` may name them whatever the agent's
/// other tools are.
pub const SKILL_TOOLS: [&str; 3] = ["load_skill", "read_skill_resource", "run_skill_script"];

/// The entries of `allowed` (a skill's `allowed-tools`) that name neither one of `available`
/// (the agent's tools) nor one of the [`SKILL_TOOLS`], in the order written. Such an entry
/// would allow nothing, so both the runtime (`Skills::check_tools`) and the macros refuse it.
///
/// ```
/// let allowed = ["read_file".to_owned(), "load_skill".to_owned(), "fetch_url".to_owned()];
/// assert_eq!(agentweave_skill::unknown_tools(&allowed, &["read_file"]), ["fetch_url"]);
/// ```
pub fn unknown_tools<'a>(allowed: &'a [String], available: &[&str]) -> Vec<&'a str> {
    allowed
        .iter()
        .map(String::as_str)
        .filter(|t| !available.contains(t) && !SKILL_TOOLS.contains(t))
        .collect()
}
