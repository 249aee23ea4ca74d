//! Kubernetes quantities (`512Mi`, `1.5Gi`, `1e9`, `1073741824`) as whole bytes, the way a
//! kubelet turns `limits.memory` into a cgroup limit: fractions round up.

use kube_quantity::ParsedQuantity;

/// The bytes `quantity` stands for; `None` for text that is no quantity, a negative one, or
/// one past `u64`.
pub fn quantity_bytes(quantity: &str) -> Option<u64> {
    // kube_quantity reads a bare suffix (`Mi`) as zero; the API server refuses it.
    let number = quantity.split(|c: char| c.is_ascii_alphabetic()).next()?;
    if !number.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let bytes = ParsedQuantity::try_from(quantity).ok()?.to_bytes_f64()?;
    // kube_quantity's integer conversions truncate the value before scaling it (1.5Gi would
    // be 1Gi); as f64 the scaling is exact for every limit below 2^53 bytes.
    (bytes.is_finite() && bytes >= 0.0 && bytes <= u64::MAX as f64).then(|| bytes.ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_decimal_suffixes() {
        assert_eq!(quantity_bytes("512Mi"), Some(512 << 20));
        assert_eq!(quantity_bytes("2Gi"), Some(2 << 30));
        assert_eq!(quantity_bytes("64Ki"), Some(64 << 10));
        assert_eq!(quantity_bytes("1G"), Some(1_000_000_000));
        assert_eq!(quantity_bytes("100M"), Some(100_000_000));
        assert_eq!(quantity_bytes("3k"), Some(3000));
    }

    #[test]
    fn plain_integers_are_bytes() {
        assert_eq!(quantity_bytes("1073741824"), Some(1 << 30));
        assert_eq!(quantity_bytes("0"), Some(0));
    }

    #[test]
    fn fractions_and_exponents_round_up_to_whole_bytes() {
        assert_eq!(quantity_bytes("1.5Gi"), Some(3 << 29));
        assert_eq!(quantity_bytes("0.5Ki"), Some(512));
        assert_eq!(quantity_bytes("1e9"), Some(1_000_000_000));
        assert_eq!(quantity_bytes("1E3"), Some(1000));
        assert_eq!(quantity_bytes("1500m"), Some(2));
        assert_eq!(quantity_bytes("15e-1"), Some(2));
        assert_eq!(quantity_bytes(".5k"), Some(500));
    }

    #[test]
    fn malformed_quantities_are_rejected() {
        for bad in [
            "",
            "Mi",
            "-1Gi",
            "1 Gi",
            "1gi",
            "1.2.3",
            "1Zi",
            "1e",
            "e3",
            "1x",
            "1Gib",
            ".",
            "99999999999999999999999999Ei",
        ] {
            assert_eq!(quantity_bytes(bad), None, "{bad:?}");
        }
    }
}
