//! Skill folders named in `#[agent(skills = [...])]` and on a `flow!` node compile; the agent
//! type and the node carry them, embedded, and they become the agent's skills.
use agentweave::kit::Skills;
use agentweave::prelude::*;

/// Writes release notes.
#[agent(skills = ["skills/release-notes"], tools = [read_file, write_file])]
async fn writer(_cx: &AgentContext) {}

flow! { Desk: dyn notes(skills = ["skills/release-notes/"], tools = ["read_file", write_file]) }

fn main() {
    assert_eq!(<writer as AgentSpec>::SKILLS.len(), 1);
    let skills = Skills::of::<writer>().unwrap();
    assert!(skills
        .catalog()
        .contains("- release-notes: Writes release notes from a changelog."));
    let skill = skills.get("release-notes").unwrap();
    assert_eq!(skill.resources, ["references/style.md", "scripts/count.py"]);
    assert!(skill.instructions.starts_with("# Release notes"));

    let desk = Desk::builder()
        .notes(|node| {
            let embedded = node.skills();
            assert_eq!(embedded.len(), 1);
            assert_eq!(embedded[0].folder, "skills/release-notes");
            assert!(embedded[0]
                .resource("references/style.md")
                .unwrap()
                .starts_with(b"Sentences in the present tense."));
            let skills = Skills::from_embedded(embedded).unwrap();
            assert!(skills.get("release-notes").is_some());
            FnAgent::new(node, |_, _| async move { Ok(()) })
        })
        .build()
        .unwrap();
    assert_eq!(desk.flow().shape(), "notes");
}
