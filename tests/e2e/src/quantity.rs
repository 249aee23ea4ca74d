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
/// turns `limits.memory` into an integer): the API types' own parsing, with this error.
pub fn parse_bytes(value: &str) -> Result<u64, InvalidQuantity> {
    proofpipe_crds::quantity_bytes(value).ok_or_else(|| InvalidQuantity {
        value: value.to_owned(),
    })
}
