//! W6: checkpoint save + resume round trip with the durable store.
//!
//! TODO(W6): not measured yet. The checkpoint API (`CheckpointStore`, the durable embedded
//! store, `Runner::resume`) is being written on `main` and is not on this branch. When it
//! lands, this bench runs: a W1 tree whose refund agent interrupts; the Runner saves the
//! checkpoint to the durable store; `Runner::resume(checkpoint_id, ..)` loads it and refund
//! answers; timed per round trip (save + load + resume to the end), for H = 0 and 1000 prior
//! messages. Until then it prints that it measured nothing; no figure is reported for W6.

fn main() {
    println!("W6 checkpoint round trip: TODO, the checkpoint API is not on this branch yet");
}
