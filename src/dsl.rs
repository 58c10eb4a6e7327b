//! The documented front ends of the macros.

/// Turns an async fn, or a struct and its impl block, into an agent type.
///
/// TODO docs
pub use flow_macros::agent;

/// Declares a tree of agents checked at compile time.
///
/// TODO docs
#[macro_export]
macro_rules! flow {
    ($($flow:tt)*) => {
        $crate::__private::__flow! { $crate; $($flow)* }
    };
}
