//! The problems written for the peer crates, each as its users would write it.
//!
//! - [`adtrait`]: `ad_trait`'s reverse mode (`adr`, an operator-overloading tape in a
//!   thread-local computation graph), on all three problems.
//! - [`candle`]: `candle-core` tensors with `Var` and `backward()` (Rosenbrock only).
//! - [`numdual`]: `num-dual` forward mode (Rosenbrock n = 1000): `gradient` with a
//!   dynamically sized `DualDVec64`, and n directional derivatives with `Dual64`.

pub mod adtrait;
pub mod candle;
pub mod numdual;
