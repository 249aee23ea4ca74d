//! The ProofJob and ProverPool API types (filled in by the operator issue).
