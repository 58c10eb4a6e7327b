//! The example backend of `examples/custom_store.rs` (a `BTreeMap` behind a mutex, with a
//! simulated latency) passes the conformance suite under the `KeyValueStore` front.

#[allow(dead_code)]
#[path = "../../examples/custom_store.rs"]
mod example;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_example_backend_passes_the_conformance_suite() {
    example::check(std::time::Duration::from_micros(100)).await;
}
