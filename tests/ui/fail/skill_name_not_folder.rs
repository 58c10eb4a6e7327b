//! A skill whose `name` is not its folder's name does not compile.
use agentweave::prelude::*;

flow! { Desk: dyn writer(skills = ["skills/wrong-name"]) }

fn main() {}
