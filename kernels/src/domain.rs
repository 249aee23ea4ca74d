//! The FFT evaluation domain.

/// The smallest power of two at or above `n`: the FFT domain size for `n` constraints.
pub fn domain_size(n: usize) -> usize {
    n.max(1).next_power_of_two()
}
