//! The Filecoin proof kinds a ProofJob may ask for: their registered proofs with partition
//! counts (held to filecoin-proofs-api 19.1 by the prover's tests), the fields of
//! `spec.filecoin` each kind needs or refuses (the CRD's CEL rules are generated from them),
//! and whose verifier decides a job. A new kind is a row here and one implementation in the
//! prover.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The registered seal proofs a ProofJob may name, with their partition counts, as
/// filecoin-proofs-api 19.1 defines them (the prover holds this table to that crate in a test).
pub const SEAL_PROOFS: &[(&str, i32)] = &[
    ("StackedDrg2KiBV1_1", 1),
    ("StackedDrg8MiBV1_1", 1),
    ("StackedDrg512MiBV1_1", 1),
    ("StackedDrg32GiBV1_1", 10),
    ("StackedDrg64GiBV1_1", 10),
    ("StackedDrg2KiBV1_1_Feat_SyntheticPoRep", 1),
    ("StackedDrg8MiBV1_1_Feat_SyntheticPoRep", 1),
    ("StackedDrg512MiBV1_1_Feat_SyntheticPoRep", 1),
    ("StackedDrg32GiBV1_1_Feat_SyntheticPoRep", 10),
    ("StackedDrg64GiBV1_1_Feat_SyntheticPoRep", 10),
];

/// Partitions of a registered seal proof, if it is one a ProofJob may name.
pub fn seal_proof_partitions(name: &str) -> Option<i32> {
    partitions_in(SEAL_PROOFS, name)
}

/// The registered update proofs (SnapDeals) a ProofJob may name, with their partition counts,
/// as storage-proofs-update 19.1 counts them (the prover holds this table to that crate in a
/// test).
pub const UPDATE_PROOFS: &[(&str, i32)] = &[
    ("StackedDrg2KiBV1", 1),
    ("StackedDrg8MiBV1", 4),
    ("StackedDrg512MiBV1", 16),
    ("StackedDrg32GiBV1", 16),
    ("StackedDrg64GiBV1", 16),
];

/// Partitions of a registered update proof, if it is one a ProofJob may name.
pub fn update_proof_partitions(name: &str) -> Option<i32> {
    partitions_in(UPDATE_PROOFS, name)
}

/// The registered PoSt proofs a ProofJob may name, as filecoin-proofs-api 19.1 names them, with
/// the partitions a job proves: one. A WindowPoStPartition job is one partition of a deadline's proof
/// (curio's `WINDOW_POST_PARTITION` request; curio merges the partitions), a WinningPoSt has
/// one. The WindowPoSt proofs are `V1_2` (filecoin-ffi's and the chain's `V1_1`).
pub const POST_PROOFS: &[(&str, i32)] = &[
    ("StackedDrgWinning2KiBV1", 1),
    ("StackedDrgWinning8MiBV1", 1),
    ("StackedDrgWinning512MiBV1", 1),
    ("StackedDrgWinning32GiBV1", 1),
    ("StackedDrgWinning64GiBV1", 1),
    ("StackedDrgWindow2KiBV1_2", 1),
    ("StackedDrgWindow8MiBV1_2", 1),
    ("StackedDrgWindow512MiBV1_2", 1),
    ("StackedDrgWindow32GiBV1_2", 1),
    ("StackedDrgWindow64GiBV1_2", 1),
];

/// Partitions of a job of a registered PoSt proof, if it is one a ProofJob may name.
pub fn post_proof_partitions(name: &str) -> Option<i32> {
    partitions_in(POST_PROOFS, name)
}

fn partitions_in(table: &[(&str, i32)], name: &str) -> Option<i32> {
    table
        .iter()
        .find(|(known, _)| *known == name)
        .map(|&(_, partitions)| partitions)
}

/// What kind of Filecoin proof a job makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub enum FilecoinProofKind {
    /// A sector's PoRep commit proof (C2), from the C1 output that lotus or curio produced.
    PoRepC2,
    /// A SnapDeals (EmptySectorUpdate) proof, from curio's vanilla partition proofs and the
    /// sector's three commitments.
    SnapDealsUpdate,
    /// One WindowPoSt partition, from its sectors' vanilla proofs and the deadline's
    /// randomness (curio's `WINDOW_POST_PARTITION`).
    WindowPoStPartition,
    /// A WinningPoSt, from the challenged sector's vanilla proof and the randomness (curio's
    /// `WINNING_POST`).
    WinningPoSt,
}

/// Fields of `spec.filecoin` that belong to one kind or another; `kind`, `input` and `output`
/// belong to every kind.
pub const KIND_FIELDS: &[&str] = &[
    "sealProof",
    "minerId",
    "proverId",
    "sectorNumber",
    "updateProof",
    "postProof",
];

impl FilecoinProofKind {
    /// Every kind, in the order the API lists them.
    pub const ALL: &[Self] = &[
        Self::PoRepC2,
        Self::SnapDealsUpdate,
        Self::WindowPoStPartition,
        Self::WinningPoSt,
    ];

    /// The kind's name, as it is serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PoRepC2 => "PoRepC2",
            Self::SnapDealsUpdate => "SnapDealsUpdate",
            Self::WindowPoStPartition => "WindowPoStPartition",
            Self::WinningPoSt => "WinningPoSt",
        }
    }

    /// The fields of [`KIND_FIELDS`] a job of this kind must set.
    pub fn required_fields(self) -> &'static [&'static str] {
        match self {
            Self::PoRepC2 => &["sealProof"],
            Self::SnapDealsUpdate => &["updateProof"],
            Self::WindowPoStPartition | Self::WinningPoSt => &["postProof"],
        }
    }

    /// The fields of [`KIND_FIELDS`] a job of this kind may set; it must leave the others
    /// unset.
    pub fn allowed_fields(self) -> &'static [&'static str] {
        match self {
            Self::PoRepC2 => &["sealProof", "minerId", "proverId", "sectorNumber"],
            Self::SnapDealsUpdate => &["updateProof"],
            Self::WindowPoStPartition | Self::WinningPoSt => &["postProof"],
        }
    }

    /// What the kind's required fields are, for the message of a job that lacks one.
    pub fn requirement(self) -> &'static str {
        match self {
            Self::PoRepC2 => {
                "a PoRepC2 job needs sealProof, the sector's registered seal proof (e.g. StackedDrg32GiBV1_1)"
            }
            Self::SnapDealsUpdate => {
                "a SnapDealsUpdate job needs updateProof, the sector's registered update proof (e.g. StackedDrg32GiBV1)"
            }
            Self::WindowPoStPartition => {
                "a WindowPoStPartition job needs postProof, the registered WindowPoSt proof (e.g. StackedDrgWindow32GiBV1_2)"
            }
            Self::WinningPoSt => {
                "a WinningPoSt job needs postProof, the registered WinningPoSt proof (e.g. StackedDrgWinning32GiBV1)"
            }
        }
    }

    /// Why a job of this kind has none of the other kinds' fields, for the message of one
    /// that sets some.
    pub fn forbidden_reason(self) -> &'static str {
        match self {
            Self::PoRepC2 => "a PoRepC2 job names its proof by sealProof",
            Self::SnapDealsUpdate => {
                "a SnapDealsUpdate job names its proof by updateProof, and its sector by the \
                 commitments in its input"
            }
            Self::WindowPoStPartition | Self::WinningPoSt => {
                "a PoSt job names its proof by postProof, and its miner and sectors in its input"
            }
        }
    }

    /// The name of Filecoin's verifier whose yes finishes a job of this kind.
    pub fn verifier(self) -> &'static str {
        match self {
            Self::PoRepC2 => "verify_seal",
            Self::SnapDealsUpdate => "verify_empty_sector_update_proof",
            Self::WindowPoStPartition => "verify_window_post",
            Self::WinningPoSt => "verify_winning_post",
        }
    }

    /// The prefix every registered proof of this kind has in `postProof` (PoSt kinds only).
    pub fn post_proof_prefix(self) -> Option<&'static str> {
        match self {
            Self::WindowPoStPartition => Some("StackedDrgWindow"),
            Self::WinningPoSt => Some("StackedDrgWinning"),
            Self::PoRepC2 | Self::SnapDealsUpdate => None,
        }
    }

    /// Urgent work: proved beside a prover's long job rather than after it (ADR 0026). PoSt is
    /// time-bound (a late WindowPoSt faults sectors, a late WinningPoSt loses the block) and
    /// one partition; PoRep and SnapDeals have hours of slack and many partitions.
    pub fn is_urgent(self) -> bool {
        matches!(self, Self::WindowPoStPartition | Self::WinningPoSt)
    }

    /// The field of `spec.filecoin` that names the registered proof of a job of this kind.
    pub fn proof_field(self) -> &'static str {
        match self {
            Self::PoRepC2 => "sealProof",
            Self::SnapDealsUpdate => "updateProof",
            Self::WindowPoStPartition | Self::WinningPoSt => "postProof",
        }
    }

    /// What the input at `spec.filecoin.input` is for this kind.
    pub fn input_name(self) -> &'static str {
        match self {
            Self::PoRepC2 => "C1 output",
            Self::SnapDealsUpdate => "SnapDeals input",
            Self::WindowPoStPartition | Self::WinningPoSt => "PoSt input",
        }
    }
}
