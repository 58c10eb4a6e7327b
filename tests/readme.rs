//! The README shows what the code does: its Mermaid diagram is the example flow's `mermaid()`.

#[allow(dead_code)]
#[path = "../examples/customer_service.rs"]
mod customer_service;

#[test]
fn readme_mermaid_block_is_the_example_flows_diagram() {
    let readme = include_str!("../README.md");
    let start = readme
        .find("```mermaid\n")
        .expect("the README has a mermaid block")
        + "```mermaid\n".len();
    let end = start + readme[start..].find("```").expect("the block is closed");
    assert_eq!(
        readme[start..end].trim_end(),
        customer_service::CustomerService::mermaid().trim_end(),
        "paste CustomerService::mermaid() into the README's mermaid block"
    );
}
