//! What the cluster tests of every crate share (the operator's tests and `tests/e2e`):
//!
//! - [`cluster`]: a test's own namespace on the API server named by `KUBECONFIG`, with
//!   proofpipe's CRDs installed, and the rule for a missing `KUBECONFIG` (skip, but fail
//!   under CI);
//! - [`wait`]: polling for a state with a deadline.

pub mod cluster;
pub mod wait;
