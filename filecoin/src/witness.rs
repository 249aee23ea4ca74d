//! Filecoin's witnesses computed natively, in the allocation order of the circuits' gadgets,
//! instead of by running the gadgets against a witness-only constraint system: the witness at
//! memory speed. Each piece is held value for value to its gadget by a test, and a whole PoRep
//! challenge to `StackedCircuit`'s own synthesis. The sinks they write into are the pipeline's.

pub use proofpipe_pipeline::witness::*;

pub mod merkle;
pub mod porep;
pub mod poseidon;
pub mod post;
pub mod sha256;
pub mod snap;
