//! Where a witness computed natively goes: values written in the allocation order of a
//! circuit's gadgets (instead of running the gadgets against a witness-only constraint
//! system), into slots the two-pass synthesis multiplies by the R1CS matrices. The Filecoin
//! crate's `witness` writes its kinds' witnesses through these sinks.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};

/// Where a gadget's bits go, in its order.
pub trait BitSink {
    /// The `count` low bits of `value`, least significant first.
    fn bits(&mut self, value: u64, count: u32);

    /// The bits of `value` where `mask` is set, least significant first.
    fn bits_masked(&mut self, value: u32, mask: u32) {
        if mask & mask.wrapping_add(1) == 0 {
            // The low `n` bits (all 32 included): one call.
            self.bits(u64::from(value), mask.count_ones());
        } else {
            for i in (0..32).filter(|i| (mask >> i) & 1 == 1) {
                self.bits(u64::from((value >> i) & 1), 1);
            }
        }
    }
}

/// Where a whole circuit's witness goes: its auxiliary bits and field elements, and the public
/// inputs it allocates among them.
pub trait WitnessSink: BitSink {
    /// An auxiliary value.
    fn scalar(&mut self, value: Fr);
    /// A public input.
    fn input(&mut self, value: Fr);
}

/// Pushes each bit as a field element (0 or 1).
impl BitSink for Vec<Fr> {
    fn bits(&mut self, value: u64, count: u32) {
        self.extend((0..count).map(|i| {
            if (value >> i) & 1 == 1 {
                Fr::ONE
            } else {
                Fr::ZERO
            }
        }));
    }
}

/// A circuit's assignment (or a part of it) as the native witness writes it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub inputs: Vec<Fr>,
    pub aux: Vec<Fr>,
}

impl Assignment {
    pub fn with_capacity(inputs: usize, aux: usize) -> Self {
        Self {
            inputs: Vec::with_capacity(inputs),
            aux: Vec::with_capacity(aux),
        }
    }
}

impl BitSink for Assignment {
    fn bits(&mut self, value: u64, count: u32) {
        self.aux.bits(value, count);
    }
}

impl WitnessSink for Assignment {
    fn scalar(&mut self, value: Fr) {
        self.aux.push(value);
    }

    fn input(&mut self, value: Fr) {
        self.inputs.push(value);
    }
}

/// bellperson's `multipack::pack_into_inputs`: `bits` (least significant first) in chunks of
/// the field's capacity, each a public input.
pub fn pack_into_inputs<S: WitnessSink>(out: &mut S, bits: &[bool]) {
    for chunk in bits.chunks(Fr::CAPACITY as usize) {
        let mut value = Fr::ZERO;
        for &bit in chunk.iter().rev() {
            value = value.double();
            if bit {
                value += Fr::ONE;
            }
        }
        out.input(value);
    }
}

/// An allocated number's `to_bits_le`: its 255 bits, least significant first, each allocated.
pub fn to_bits_le<S: BitSink>(out: &mut S, value: Fr) {
    let repr = value.to_repr();
    for (i, limb) in repr.chunks_exact(8).enumerate() {
        let limb = u64::from_le_bytes(limb.try_into().expect("8 bytes"));
        out.bits(limb, if i == 3 { 63 } else { 64 });
    }
}

/// A circuit whose witness is computed natively: a common prefix, then `parts` independent
/// parts (PoRep's challenges, PoSt's sectors, SnapDeals' hashes and challenges), in the
/// circuit's allocation order. Every piece is written from values known up front, so the
/// prefix and the parts are written at once.
pub trait NativeWitness: Sync {
    /// The independent parts.
    fn parts(&self) -> usize;
    /// Whether every part writes as many inputs and aux as every other (then the parts' size
    /// follows from the circuit's and the prefix's; else each part is counted first).
    fn alike_parts(&self) -> bool {
        true
    }
    /// The prefix's values (after input 0, the constant one).
    fn prefix<S: WitnessSink>(&self, out: &mut S);
    /// Part `i`'s values.
    fn part<S: WitnessSink>(&self, i: usize, out: &mut S);
}

/// The whole assignment of `witness` into `out` (cleared first, its capacity kept): input 0 (the
/// constant one), the prefix, every part in order. On this thread.
pub fn write_whole<W: NativeWitness>(witness: &W, out: &mut Assignment) {
    out.inputs.clear();
    out.aux.clear();
    out.inputs.push(Fr::ONE);
    witness.prefix(out);
    for i in 0..witness.parts() {
        witness.part(i, out);
    }
}

/// Asserts a native assignment equals a circuit's own, naming the first aux value that differs.
/// For tests, here and in the crates whose witnesses write through these sinks.
#[doc(hidden)]
pub fn assert_same_assignment(what: &str, native: &Assignment, inputs: &[Fr], aux: &[Fr]) {
    assert_eq!(
        (native.inputs.len(), native.aux.len()),
        (inputs.len(), aux.len()),
        "{what}: (inputs, aux) counts"
    );
    if let Some(i) = (0..aux.len()).find(|&i| native.aux[i] != aux[i]) {
        panic!("{what}: aux {i} differs");
    }
    assert_eq!(native.inputs, inputs, "{what}: inputs");
}

/// Writes a part's witness into its slots of the whole assignment, counting what did not fit
/// instead of writing past them (a witness that is not of the circuit's shape is an error to
/// report, not a panic).
pub struct SlotSink<'a> {
    inputs: &'a mut [std::mem::MaybeUninit<Fr>],
    aux: &'a mut [std::mem::MaybeUninit<Fr>],
    inputs_written: usize,
    aux_written: usize,
}

impl<'a> SlotSink<'a> {
    pub fn new(
        inputs: &'a mut [std::mem::MaybeUninit<Fr>],
        aux: &'a mut [std::mem::MaybeUninit<Fr>],
    ) -> Self {
        Self {
            inputs,
            aux,
            inputs_written: 0,
            aux_written: 0,
        }
    }

    /// (inputs, aux) the witness wrote, whether or not they fit.
    pub fn written(&self) -> (usize, usize) {
        (self.inputs_written, self.aux_written)
    }

    /// Whether the witness filled its slots exactly.
    pub fn filled(&self) -> bool {
        self.written() == (self.inputs.len(), self.aux.len())
    }

    fn push_aux(&mut self, value: Fr) {
        if let Some(slot) = self.aux.get_mut(self.aux_written) {
            slot.write(value);
        }
        self.aux_written += 1;
    }
}

impl BitSink for SlotSink<'_> {
    fn bits(&mut self, value: u64, count: u32) {
        for i in 0..count {
            self.push_aux(if (value >> i) & 1 == 1 {
                Fr::ONE
            } else {
                Fr::ZERO
            });
        }
    }
}

impl WitnessSink for SlotSink<'_> {
    fn scalar(&mut self, value: Fr) {
        self.push_aux(value);
    }

    fn input(&mut self, value: Fr) {
        if let Some(slot) = self.inputs.get_mut(self.inputs_written) {
            slot.write(value);
        }
        self.inputs_written += 1;
    }
}

/// Counts what a witness writes, keeping nothing.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    pub inputs: usize,
    pub aux: usize,
}

impl BitSink for Counter {
    fn bits(&mut self, _: u64, count: u32) {
        self.aux += count as usize;
    }
}

impl WitnessSink for Counter {
    fn scalar(&mut self, _: Fr) {
        self.aux += 1;
    }

    fn input(&mut self, _: Fr) {
        self.inputs += 1;
    }
}
