//! Which ProverPool proves each kind of proof: pure, from the gateway's `--pool` values.
//!
//! A WinningPoSt must be answered within its epoch and a WindowPoSt within its deadline, while
//! a PoRep can wait for a node to start. So a provider keeps a small warm pool for PoSt and
//! lets the PoRep pool scale from zero: `--pool gpu-big --pool winning-post=gpu-warm
//! --pool window-post=gpu-warm` sends the PoSt kinds to `gpu-warm` and the rest to `gpu-big`.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::GatewayError;
use crate::proto::ProofKind;
use crate::submission::{Work, kind_name};

/// The kinds the gateway routes, in the order messages list them.
pub const ROUTED_KINDS: [ProofKind; 4] = [
    ProofKind::PorepSealCommit,
    ProofKind::SnapDealsUpdate,
    ProofKind::WindowPostPartition,
    ProofKind::WinningPost,
];

/// The pool of every kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolRoutes {
    /// By the seed engine's kind name (`porep-c2`, `snap-update`, `window-post`,
    /// `winning-post`): every routed kind has one.
    by_kind: BTreeMap<&'static str, String>,
}

impl PoolRoutes {
    /// Every kind to `pool`.
    pub fn single(pool: impl Into<String>) -> Self {
        let pool = pool.into();
        Self {
            by_kind: ROUTED_KINDS
                .iter()
                .map(|&kind| (kind_name(kind), pool.clone()))
                .collect(),
        }
    }

    /// From `--pool` values: `NAME` is the pool of every kind not named otherwise, `KIND=NAME`
    /// the pool of one kind (`porep-c2` or `porep`, `snap-update` or `snap`, `window-post`,
    /// `winning-post`). Every kind must end up with a pool.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<Self, GatewayError> {
        let mut default: Option<&str> = None;
        let mut by_kind: BTreeMap<&'static str, String> = BTreeMap::new();
        for value in values.iter().map(AsRef::as_ref).map(str::trim) {
            match value.split_once('=') {
                None => {
                    check_pool_name(value, value)?;
                    if let Some(first) = default {
                        return Err(GatewayError::invalid(format!(
                            "--pool: two default pools, {first} and {value}: give one NAME, and \
                             KIND=NAME for the kinds that go elsewhere"
                        )));
                    }
                    default = Some(value);
                }
                Some((kind, pool)) => {
                    let (kind, pool) = (kind.trim(), pool.trim());
                    let kind = kind_named(kind).ok_or_else(|| {
                        GatewayError::invalid(format!(
                            "--pool {value}: {kind:?} is not a proof kind; use porep-c2 (or \
                             porep), snap-update (or snap), window-post or winning-post"
                        ))
                    })?;
                    check_pool_name(pool, value)?;
                    if let Some(first) = by_kind.insert(kind, pool.to_owned()) {
                        return Err(GatewayError::invalid(format!(
                            "--pool: {kind} is routed twice, to {first} and to {pool}"
                        )));
                    }
                }
            }
        }
        let mut missing = Vec::new();
        for kind in ROUTED_KINDS.map(kind_name) {
            if by_kind.contains_key(kind) {
                continue;
            }
            match default {
                Some(pool) => {
                    by_kind.insert(kind, pool.to_owned());
                }
                None => missing.push(kind),
            }
        }
        if !missing.is_empty() {
            return Err(GatewayError::invalid(format!(
                "--pool: no ProverPool proves {}: give a default pool (--pool NAME) or one for \
                 each kind (--pool KIND=NAME)",
                missing.join(", ")
            )));
        }
        Ok(Self { by_kind })
    }

    /// The pool that proves `kind` (the seed engine's kind name).
    pub fn pool_for(&self, kind: &str) -> Option<&str> {
        self.by_kind.get(kind).map(String::as_str)
    }

    /// The pool that proves `work`.
    pub fn pool_of(&self, work: &Work) -> &str {
        self.pool_for(work.kind_name())
            .expect("parse and single route every kind the gateway accepts")
    }

    /// Every pool, once, in name order.
    pub fn pools(&self) -> BTreeSet<&str> {
        self.by_kind.values().map(String::as_str).collect()
    }

    /// `kind=pool` for each kind, for logs.
    pub fn describe(&self) -> String {
        self.by_kind
            .iter()
            .map(|(kind, pool)| format!("{kind}={pool}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The routed kind a `--pool` value names.
fn kind_named(name: &str) -> Option<&'static str> {
    let kind = match name.to_ascii_lowercase().as_str() {
        "porep" | "porep-c2" | "porep_seal_commit" => ProofKind::PorepSealCommit,
        "snap" | "snap-update" | "snap-deals" | "snap_deals_update" => ProofKind::SnapDealsUpdate,
        "window-post" | "wdpost" | "window_post_partition" => ProofKind::WindowPostPartition,
        "winning-post" | "winning" | "winning_post" => ProofKind::WinningPost,
        _ => return None,
    };
    Some(kind_name(kind))
}

/// A pool name must be a ProverPool's: a DNS subdomain name, lowercase.
fn check_pool_name(pool: &str, value: &str) -> Result<(), GatewayError> {
    let valid = !pool.is_empty()
        && pool.len() <= 253
        && pool
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !pool.starts_with(['-', '.'])
        && !pool.ends_with(['-', '.']);
    if valid {
        Ok(())
    } else {
        Err(GatewayError::invalid(format!(
            "--pool {value}: {pool:?} is not a ProverPool name (lowercase letters, digits, '-' \
             and '.')"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_name_routes_every_kind_to_it() {
        let routes = PoolRoutes::parse(&["gpu"]).unwrap();
        assert_eq!(routes, PoolRoutes::single("gpu"));
        for kind in ROUTED_KINDS.map(kind_name) {
            assert_eq!(routes.pool_for(kind), Some("gpu"));
        }
        assert_eq!(routes.pools(), BTreeSet::from(["gpu"]));
    }

    #[test]
    fn kinds_named_go_to_their_pool_the_rest_to_the_default() {
        let routes =
            PoolRoutes::parse(&["gpu-big", "winning-post=gpu-warm", " wdpost = gpu-warm "])
                .unwrap();
        assert_eq!(routes.pool_for("porep-c2"), Some("gpu-big"));
        assert_eq!(routes.pool_for("snap-update"), Some("gpu-big"));
        assert_eq!(routes.pool_for("window-post"), Some("gpu-warm"));
        assert_eq!(routes.pool_for("winning-post"), Some("gpu-warm"));
        assert_eq!(routes.pools(), BTreeSet::from(["gpu-big", "gpu-warm"]));
        assert_eq!(
            routes.describe(),
            "porep-c2=gpu-big,snap-update=gpu-big,window-post=gpu-warm,winning-post=gpu-warm"
        );
        // Every kind named: no default needed.
        let all = PoolRoutes::parse(&["porep=a", "snap=a", "window-post=b", "winning-post=c"]);
        assert_eq!(all.unwrap().pools(), BTreeSet::from(["a", "b", "c"]));
    }

    #[test]
    fn bad_routes_say_what_to_give() {
        let err = |values: &[&str]| PoolRoutes::parse(values).unwrap_err().to_string();
        assert!(
            err(&["winning-post=warm"])
                .contains("no ProverPool proves porep-c2, snap-update, window-post"),
            "{}",
            err(&["winning-post=warm"])
        );
        assert!(err(&[]).contains("give a default pool (--pool NAME)"));
        assert!(err(&["a", "b"]).contains("two default pools, a and b"));
        assert!(err(&["a", "porep=b", "porep-c2=c"]).contains("porep-c2 is routed twice"));
        assert!(err(&["a", "seal=b"]).contains("\"seal\" is not a proof kind"));
        assert!(err(&["Gpu"]).contains("not a ProverPool name"));
        assert!(err(&["a", "porep="]).contains("not a ProverPool name"));
    }
}
