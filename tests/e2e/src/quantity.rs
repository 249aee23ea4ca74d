//! Kubernetes resource quantities (`512Mi`, `2Gi`, `1G`, `1073741824`, `1.5Gi`, `1e9`) as the
//! whole bytes a kubelet would use for a memory limit.

/// A quantity the API server would not have accepted, or one too large for a byte count.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a memory quantity such as 512Mi, 2Gi, 1G or 1073741824")]
pub struct InvalidQuantity {
    /// The rejected text.
    pub value: String,
}

/// Parses a quantity into bytes, rounding a fractional result up (as Kubernetes does when it
/// turns `limits.memory` into an integer).
pub fn parse_bytes(value: &str) -> Result<u64, InvalidQuantity> {
    let invalid = || InvalidQuantity {
        value: value.to_owned(),
    };
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (number, suffix) = value.split_at(split);
    let (mantissa, decimals) = parse_decimal(number).ok_or_else(invalid)?;
    let (multiplier, divisor) = suffix_scale(suffix).ok_or_else(invalid)?;

    // Exact rational arithmetic: mantissa * multiplier / (10^decimals * divisor), rounded up.
    let numerator = mantissa.checked_mul(multiplier).ok_or_else(invalid)?;
    let denominator = 10u128
        .checked_pow(decimals)
        .and_then(|scale| scale.checked_mul(divisor))
        .ok_or_else(invalid)?;
    u64::try_from(numerator.div_ceil(denominator)).map_err(|_| invalid())
}

/// `"12.50"` as `(1250, 2)`; `None` unless it is digits with at most one dot and one digit.
fn parse_decimal(number: &str) -> Option<(u128, u32)> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mantissa = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    Some((mantissa, u32::try_from(fraction.len()).ok()?))
}

/// The suffix's value as `multiplier / divisor`.
fn suffix_scale(suffix: &str) -> Option<(u128, u128)> {
    const KI: u128 = 1024;
    let scale = match suffix {
        "" => (1, 1),
        "m" => (1, 1000),
        "k" => (1_000, 1),
        "M" => (1_000_000, 1),
        "G" => (1_000_000_000, 1),
        "T" => (1_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000, 1),
        "Ki" => (KI, 1),
        "Mi" => (KI.pow(2), 1),
        "Gi" => (KI.pow(3), 1),
        "Ti" => (KI.pow(4), 1),
        "Pi" => (KI.pow(5), 1),
        "Ei" => (KI.pow(6), 1),
        exponent => {
            let digits = exponent
                .strip_prefix('e')
                .or_else(|| exponent.strip_prefix('E'))?;
            let (negative, digits) = match digits.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, digits.strip_prefix('+').unwrap_or(digits)),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let power = 10u128.checked_pow(digits.parse().ok()?)?;
            if negative { (1, power) } else { (power, 1) }
        }
    };
    Some(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_decimal_suffixes() {
        assert_eq!(parse_bytes("512Mi"), Ok(512 << 20));
        assert_eq!(parse_bytes("2Gi"), Ok(2 << 30));
        assert_eq!(parse_bytes("64Ki"), Ok(64 << 10));
        assert_eq!(parse_bytes("1G"), Ok(1_000_000_000));
        assert_eq!(parse_bytes("100M"), Ok(100_000_000));
        assert_eq!(parse_bytes("3k"), Ok(3000));
    }

    #[test]
    fn plain_integers_are_bytes() {
        assert_eq!(parse_bytes("1073741824"), Ok(1 << 30));
        assert_eq!(parse_bytes("0"), Ok(0));
    }

    #[test]
    fn fractions_and_exponents_round_up_to_whole_bytes() {
        assert_eq!(parse_bytes("1.5Gi"), Ok(3 << 29));
        assert_eq!(parse_bytes("0.5Ki"), Ok(512));
        assert_eq!(parse_bytes("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_bytes("1E3"), Ok(1000));
        assert_eq!(parse_bytes("1500m"), Ok(2));
        assert_eq!(parse_bytes("15e-1"), Ok(2));
        assert_eq!(parse_bytes(".5k"), Ok(500));
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
            assert_eq!(
                parse_bytes(bad),
                Err(InvalidQuantity {
                    value: bad.to_owned()
                }),
                "{bad:?}"
            );
        }
    }
}
