//! Witnesses computed natively, in the allocation order of the circuits' gadgets, instead of
//! by running the gadgets against a witness-only constraint system: the first step of the
//! witness at memory speed. Each piece is held bit for bit to its gadget by a test.

pub mod sha256;
