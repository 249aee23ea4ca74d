//! The compression gadget's witness for blocks with constant bits: a hash's first block (its
//! state is the constant IV), a padding block (its message is constant) and a label's first
//! block (some message words are constants). bellperson folds constants away bit by bit, so
//! what is allocated, and what value is stored, depends on which bits are constants and on
//! which are `Not`s of allocated bits (`Boolean::xor` of an `Is` and a `Not` stores the
//! negated XOR). [`Word`] carries both masks beside the value; the rules below are the
//! gadget's (`Boolean::{xor, and, sha256_ch, sha256_maj}`, `UInt32::addmany`), arm for arm.

use super::{BitSink, ROUND_CONSTANTS, compress_general_block, sum};

/// A `UInt32` as the gadget holds it: its value, which bits are constants, and which of the
/// others are `Not`s of the allocated bit (whose stored value is then the negation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    pub value: u32,
    pub constant: u32,
    pub negated: u32,
}

/// One bit of a [`Word`]: a constant, or an allocated bit's stored value, used as it is or
/// negated.
#[derive(Clone, Copy)]
enum Bit {
    Const(bool),
    Is(bool),
    Not(bool),
}

impl Bit {
    fn value(self) -> bool {
        match self {
            Bit::Const(v) | Bit::Is(v) => v,
            Bit::Not(stored) => !stored,
        }
    }

    fn not(self) -> Self {
        match self {
            Bit::Const(v) => Bit::Const(!v),
            Bit::Is(s) => Bit::Not(s),
            Bit::Not(s) => Bit::Is(s),
        }
    }

    fn is_const(self, v: bool) -> bool {
        matches!(self, Bit::Const(c) if c == v)
    }

    /// `Boolean::and`: every allocating arm stores the AND of the operands' values.
    fn and<S: BitSink>(out: &mut S, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(false), _) | (_, Bit::Const(false)) => Bit::Const(false),
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x,
            _ => allocate(out, a.value() & b.value()),
        }
    }

    /// `Boolean::sha256_ch`: (a and b) xor ((not a) and c).
    fn ch<S: BitSink>(out: &mut S, a: Bit, b: Bit, c: Bit) -> Bit {
        let value = (a.value() & b.value()) ^ (!a.value() & c.value());
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(value),
            _ if a.is_const(false) => c,
            _ if b.is_const(false) => Bit::and(out, a.not(), c),
            _ if c.is_const(false) => Bit::and(out, a, b),
            _ if c.is_const(true) => Bit::and(out, a, b.not()).not(),
            _ if b.is_const(true) => Bit::and(out, a.not(), c.not()).not(),
            // a constant true, or no constant: allocated.
            _ => allocate(out, value),
        }
    }

    /// `Boolean::sha256_maj`: (a and b) xor (a and c) xor (b and c).
    fn maj<S: BitSink>(out: &mut S, a: Bit, b: Bit, c: Bit) -> Bit {
        let (va, vb, vc) = (a.value(), b.value(), c.value());
        let value = (va & vb) ^ (va & vc) ^ (vb & vc);
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(value),
            _ if a.is_const(false) => Bit::and(out, b, c),
            _ if b.is_const(false) => Bit::and(out, a, c),
            _ if c.is_const(false) => Bit::and(out, a, b),
            _ if c.is_const(true) => Bit::and(out, a.not(), b.not()).not(),
            _ if b.is_const(true) => Bit::and(out, a.not(), c.not()).not(),
            _ if a.is_const(true) => Bit::and(out, b.not(), c.not()).not(),
            _ => {
                // maj, then `b and c` for its constraint.
                let maj = allocate(out, value);
                Bit::and(out, b, c);
                maj
            }
        }
    }
}

fn allocate<S: BitSink>(out: &mut S, value: bool) -> Bit {
    out.bits(u64::from(value), 1);
    Bit::Is(value)
}

impl Word {
    pub const fn constant(value: u32) -> Self {
        Word {
            value,
            constant: u32::MAX,
            negated: 0,
        }
    }

    pub const fn allocated(value: u32) -> Self {
        Word {
            value,
            constant: 0,
            negated: 0,
        }
    }

    /// A word of 32 message bits, most significant first (`UInt32::from_bits_be`), each
    /// `(value, constant)`.
    pub fn from_bits_be(bits: &[(bool, bool)]) -> Self {
        assert_eq!(bits.len(), 32);
        bits.iter()
            .fold(Word::constant(0), |w, &(value, constant)| Word {
                value: (w.value << 1) | u32::from(value),
                constant: (w.constant << 1) | u32::from(constant),
                negated: 0,
            })
    }

    pub fn is_allocated(self) -> bool {
        self.constant == 0 && self.negated == 0
    }

    fn bit(self, i: u32) -> Bit {
        let value = (self.value >> i) & 1 == 1;
        if (self.constant >> i) & 1 == 1 {
            Bit::Const(value)
        } else if (self.negated >> i) & 1 == 1 {
            Bit::Not(!value)
        } else {
            Bit::Is(value)
        }
    }

    /// The word of 32 bits made one at a time, least significant first.
    fn from_fn(mut f: impl FnMut(u32) -> Bit) -> Self {
        let mut w = Word::constant(0);
        for i in 0..32 {
            let bit = f(i);
            w.value |= u32::from(bit.value()) << i;
            match bit {
                Bit::Const(_) => {}
                Bit::Is(_) => w.constant &= !(1 << i),
                Bit::Not(_) => {
                    w.constant &= !(1 << i);
                    w.negated |= 1 << i;
                }
            }
        }
        w
    }

    fn rotr(self, by: u32) -> Self {
        Word {
            value: self.value.rotate_right(by),
            constant: self.constant.rotate_right(by),
            negated: self.negated.rotate_right(by),
        }
    }

    /// The vacated high bits are constant zeros.
    fn shr(self, by: u32) -> Self {
        Word {
            value: self.value >> by,
            constant: (self.constant >> by) | !(u32::MAX >> by),
            negated: self.negated >> by,
        }
    }

    /// `UInt32::xor`: a constant operand allocates nothing (a constant 1 negates the other);
    /// two allocated ones store the XOR of their stored values, and the result is a `Not`
    /// when exactly one was.
    fn xor<S: BitSink>(out: &mut S, a: Word, b: Word) -> Word {
        let allocated = !a.constant & !b.constant;
        out.bits_masked((a.value ^ a.negated) ^ (b.value ^ b.negated), allocated);
        let constant = a.constant & b.constant;
        Word {
            value: a.value ^ b.value,
            constant,
            negated: (a.negated ^ b.negated ^ (a.constant & a.value) ^ (b.constant & b.value))
                & !constant,
        }
    }

    fn ch<S: BitSink>(out: &mut S, e: Word, f: Word, g: Word) -> Word {
        if e.is_allocated() && f.is_allocated() && g.is_allocated() {
            let ch = (e.value & f.value) ^ (!e.value & g.value);
            out.bits(u64::from(ch), 32);
            return Word::allocated(ch);
        }
        Word::from_fn(|i| Bit::ch(out, e.bit(i), f.bit(i), g.bit(i)))
    }

    fn maj<S: BitSink>(out: &mut S, a: Word, b: Word, c: Word) -> Word {
        Word::from_fn(|i| Bit::maj(out, a.bit(i), b.bit(i), c.bit(i)))
    }

    /// `UInt32::addmany`: constant only when every operand is; otherwise every bit of the
    /// whole sum is allocated (as many as `n * u32::MAX` needs), constants included.
    fn sum<S: BitSink>(out: &mut S, words: &[Word]) -> Word {
        if words.iter().all(|w| w.constant == u32::MAX) {
            return Word::constant(words.iter().fold(0u32, |acc, w| acc.wrapping_add(w.value)));
        }
        let values: Vec<u32> = words.iter().map(|w| w.value).collect();
        Word::allocated(sum(out, &values))
    }

    /// `s0`/`s1`/`S0`/`S1`: the XOR of two rotations and a third word.
    fn sigma<S: BitSink>(out: &mut S, x: Word, r1: u32, r2: u32, third: Word) -> Word {
        let first = Word::xor(out, x.rotr(r1), x.rotr(r2));
        Word::xor(out, first, third)
    }
}

/// One compression of `block` into `state` as the gadget allocates it, whatever bits of
/// either are constants; returns the new state. A block with no constant bit takes
/// [`compress_general_block`]'s faster path (same values).
pub fn compress_block<S: BitSink>(out: &mut S, state: [Word; 8], block: [Word; 16]) -> [Word; 8] {
    if state.iter().chain(&block).all(|w| w.is_allocated()) {
        let new = compress_general_block(out, state.map(|w| w.value), block.map(|w| w.value));
        return new.map(Word::allocated);
    }
    let mut w = [Word::constant(0); 64];
    w[..16].copy_from_slice(&block);
    for i in 16..64 {
        let x = w[i - 15];
        let s0 = Word::sigma(out, x, 7, 18, x.shr(3));
        let y = w[i - 2];
        let s1 = Word::sigma(out, y, 17, 19, y.shr(10));
        w[i] = Word::sum(out, &[w[i - 16], s0, w[i - 7], s1]);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = state;
    let mut deferred_e: Option<[Word; 6]> = None;
    let mut deferred_a: Option<[Word; 7]> = None;
    for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
        if let Some(words) = deferred_e.take() {
            e = Word::sum(out, &words);
        }
        let s1 = Word::sigma(out, e, 6, 11, e.rotr(25));
        let ch = Word::ch(out, e, f, g);
        if let Some(words) = deferred_a.take() {
            a = Word::sum(out, &words);
        }
        let s0 = Word::sigma(out, a, 2, 13, a.rotr(22));
        let maj = Word::maj(out, a, b, c);
        let k = Word::constant(k);
        deferred_e = Some([h, s1, ch, k, w[i], d]);
        deferred_a = Some([h, s1, ch, k, w[i], s0, maj]);
        h = g;
        g = f;
        f = e;
        d = c;
        c = b;
        b = a;
    }
    let [e0, e1, e2, e3, e4, e5] = deferred_e.expect("64 rounds");
    let [a0, a1, a2, a3, a4, a5, a6] = deferred_a.expect("64 rounds");
    [
        Word::sum(out, &[a0, a1, a2, a3, a4, a5, a6, state[0]]),
        Word::sum(out, &[state[1], b]),
        Word::sum(out, &[state[2], c]),
        Word::sum(out, &[state[3], d]),
        Word::sum(out, &[e0, e1, e2, e3, e4, e5, state[4]]),
        Word::sum(out, &[state[5], f]),
        Word::sum(out, &[state[6], g]),
        Word::sum(out, &[state[7], h]),
    ]
}

/// SHA-256's initial state, the gadget's constant IV.
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// bellperson's `sha256` gadget on a message of whole 32-bit words (each word's bits most
/// significant first, as the gadget's input bits come), computed natively: the constant
/// padding appended, the blocks compressed from the constant IV. Returns the digest's words.
pub fn hash<S: BitSink>(out: &mut S, message: &[Word]) -> [Word; 8] {
    let bits = message.len() as u64 * 32;
    let mut padded = message.to_vec();
    padded.push(Word::constant(0x8000_0000));
    while !(padded.len() + 2).is_multiple_of(16) {
        padded.push(Word::constant(0));
    }
    padded.push(Word::constant((bits >> 32) as u32));
    padded.push(Word::constant(bits as u32));
    padded
        .chunks_exact(16)
        .fold(IV.map(Word::constant), |state, block| {
            compress_block(out, state, block.try_into().expect("16 words"))
        })
}
