//! `params fetch`: Filecoin's parameter files for the proof kinds and sector sizes a pool
//! serves, from mirrors tried in order (`http(s)://`, or `s3://` and `file://` as job artifacts
//! are read), by file name or, for an IPFS gateway, by the manifest's CID, resumable. Each file is downloaded
//! into `<file>.partial`, resumed from where an interrupted download stopped (a range read),
//! and kept under its name only when its blake2b digest is the manifest's (filecoin-proofs'
//! parameters.json unless another is given). A file already there with the right digest is
//! not downloaded again; one with another digest is replaced. The last step writes
//! [`READY_FILE`], listing what was checked: a parameter volume is ready when it exists.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use storage_proofs_core::parameter_cache::{PARAMETERS, parameter_id, verifying_key_id};

use super::params::update_identifier;
use super::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use crate::artifacts;
use proofpipe_pipeline::error::ProverError;

/// Written last into the parameter directory: the files fetched and checked.
pub const READY_FILE: &str = "proofpipe-params-ready.json";

/// Where Filecoin's parameter files are served publicly, in the order `params fetch` tries
/// them when given no `--base-url`: ChainSafe's Cloudflare R2 bucket, by file name (Forest's
/// first source), then Filecoin's IPFS gateway by CID (lotus' `fetch-params` default, which
/// is being retired). Whichever serves a file, its digest is checked against the manifest.
pub const PUBLIC_MIRRORS: [&str; 2] = [
    "https://filecoin-proof-parameters.chainsafe.dev",
    "https://proofs.filecoin.io/ipfs/{cid}",
];

/// The proof kinds whose parameters a pool needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ParamKind {
    Porep,
    Snap,
    WindowPost,
    WinningPost,
}

impl ParamKind {
    pub const ALL: [ParamKind; 4] = [
        ParamKind::Porep,
        ParamKind::Snap,
        ParamKind::WindowPost,
        ParamKind::WinningPost,
    ];
}

/// One file of a manifest, as parameters.json lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub cid: String,
    pub digest: String,
    pub sector_size: u64,
}

/// File name -> its entry, as parameters.json has it.
pub type Manifest = BTreeMap<String, ManifestEntry>;

/// filecoin-proofs' own parameters.json (the files the [`PUBLIC_MIRRORS`] serve).
pub fn builtin_manifest() -> Manifest {
    PARAMETERS
        .iter()
        .map(|(name, data)| {
            (
                name.clone(),
                ManifestEntry {
                    cid: data.cid.clone(),
                    digest: data.digest.clone(),
                    sector_size: data.sector_size,
                },
            )
        })
        .collect()
}

/// Reads a manifest in parameters.json's format.
pub fn read_manifest(path: &Path) -> Result<Manifest, ProverError> {
    let text =
        std::fs::read_to_string(path).map_err(ProverError::io("reading the manifest", path))?;
    serde_json::from_str(&text).map_err(|err| ProverError::InvalidArgument {
        what: "manifest",
        reason: format!(
            "{}: not a parameters.json ({{\"<file>\": {{\"cid\", \"digest\", \"sector_size\"}}}}): {err}",
            path.display()
        ),
    })
}

/// A file to have, with the digest it must have and its CID (for IPFS gateways).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WantedFile {
    pub name: String,
    pub digest: String,
    pub cid: String,
}

/// Where mirror `base_url` serves `file`: `{cid}` or `{name}` in it replaced by the file's
/// CID or name (an IPFS gateway: `https://gateway/ipfs/{cid}`), else `<base_url>/<name>`.
pub fn mirror_url(base_url: &str, file: &WantedFile) -> String {
    if base_url.contains("{cid}") || base_url.contains("{name}") {
        base_url
            .replace("{cid}", &file.cid)
            .replace("{name}", &file.name)
    } else {
        format!("{}/{}", base_url.trim_end_matches('/'), file.name)
    }
}

/// Which of Filecoin's sector sizes `sector_size` bytes is (0: 2 KiB ... 4: 64 GiB).
fn size_index(sector_size: u64) -> Result<usize, ProverError> {
    [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30]
        .iter()
        .position(|&size| size == sector_size)
        .ok_or_else(|| ProverError::InvalidArgument {
            what: "sector size",
            reason: format!(
                "{sector_size} bytes is not a Filecoin sector size: use 2KiB, 8MiB, 512MiB, 32GiB or 64GiB"
            ),
        })
}

/// The PoRep (v1.1, interactive) of sectors of `sector_size` bytes.
pub fn seal_proof_of_size(sector_size: u64) -> Result<RegisteredSealProof, ProverError> {
    use RegisteredSealProof::*;
    Ok([
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
    ][size_index(sector_size)?])
}

/// The SnapDeals update proof at `sector_size` bytes.
pub fn update_proof_of_size(sector_size: u64) -> Result<RegisteredUpdateProof, ProverError> {
    use RegisteredUpdateProof::*;
    Ok([
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ][size_index(sector_size)?])
}

/// The PoSt proof of `kind` at `sector_size` bytes (the current WindowPoSt, V1_2), `None` for
/// PoRep and SnapDeals.
pub fn post_proof_of_size(
    kind: ParamKind,
    sector_size: u64,
) -> Result<Option<RegisteredPoStProof>, ProverError> {
    use RegisteredPoStProof::*;
    let index = size_index(sector_size)?;
    Ok(match kind {
        ParamKind::Porep | ParamKind::Snap => None,
        ParamKind::WindowPost => Some(
            [
                StackedDrgWindow2KiBV1_2,
                StackedDrgWindow8MiBV1_2,
                StackedDrgWindow512MiBV1_2,
                StackedDrgWindow32GiBV1_2,
                StackedDrgWindow64GiBV1_2,
            ][index],
        ),
        ParamKind::WinningPost => Some(
            [
                StackedDrgWinning2KiBV1,
                StackedDrgWinning8MiBV1,
                StackedDrgWinning512MiBV1,
                StackedDrgWinning32GiBV1,
                StackedDrgWinning64GiBV1,
            ][index],
        ),
    })
}

/// filecoin-proofs' circuit identifier of `kind` at `sector_size` bytes.
fn circuit_identifier(kind: ParamKind, sector_size: u64) -> Result<String, ProverError> {
    let index = size_index(sector_size)?;
    let named = |action: &'static str| ProverError::filecoin(action);
    match kind {
        ParamKind::Porep => seal_proof_of_size(sector_size)?
            .circuit_identifier()
            .map_err(named("naming the PoRep parameters")),
        ParamKind::Snap => {
            use RegisteredUpdateProof::*;
            Ok(update_identifier(
                [
                    StackedDrg2KiBV1,
                    StackedDrg8MiBV1,
                    StackedDrg512MiBV1,
                    StackedDrg32GiBV1,
                    StackedDrg64GiBV1,
                ][index],
            ))
        }
        ParamKind::WindowPost | ParamKind::WinningPost => {
            let proof = post_proof_of_size(kind, sector_size)?.expect("a PoSt kind");
            proof
                .circuit_identifier()
                .map_err(named("naming the PoSt parameters"))
        }
    }
}

/// The file names (`.params` and `.vk`) the kinds at the sizes need, each once.
pub fn required_names(
    kinds: &[ParamKind],
    sector_sizes: &[u64],
) -> Result<Vec<String>, ProverError> {
    let mut names = BTreeSet::new();
    for &kind in kinds {
        for &size in sector_sizes {
            let identifier = circuit_identifier(kind, size)?;
            names.insert(parameter_id(&identifier));
            names.insert(verifying_key_id(&identifier));
        }
    }
    Ok(names.into_iter().collect())
}

/// The files the kinds at the sizes need, with their digests from `manifest`.
pub fn wanted_files(
    kinds: &[ParamKind],
    sector_sizes: &[u64],
    manifest: &Manifest,
) -> Result<Vec<WantedFile>, ProverError> {
    required_names(kinds, sector_sizes)?
        .into_iter()
        .map(|name| match manifest.get(&name) {
            Some(entry) => Ok(WantedFile {
                digest: entry.digest.clone(),
                cid: entry.cid.clone(),
                name,
            }),
            None => Err(ProverError::InvalidArgument {
                what: "manifest",
                reason: format!(
                    "{name} is not in the manifest: give the parameters.json that lists it \
                     (--manifest), or leave --manifest out for filecoin-proofs' own"
                ),
            }),
        })
        .collect()
}

/// Only the verifying keys (`.vk`) of `files`: what a machine that verifies proofs, and
/// never proves, needs (megabytes instead of tens of GB).
pub fn verifying_keys_only(files: Vec<WantedFile>) -> Vec<WantedFile> {
    files
        .into_iter()
        .filter(|file| file.name.ends_with(".vk"))
        .collect()
}

/// parameters.json's digest of a file: the first 32 hex digits of its blake2b-512. Blocking.
pub fn file_digest(path: &Path) -> Result<String, ProverError> {
    let mut file = std::fs::File::open(path).map_err(ProverError::io("hashing", path))?;
    let mut state = blake2b_simd::Params::new().to_state();
    let mut buffer = vec![0u8; 1 << 22];
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(ProverError::io("hashing", path))?;
        if n == 0 {
            break;
        }
        state.update(&buffer[..n]);
    }
    Ok(state.finalize().to_hex()[..32].to_owned())
}

async fn digest_of(path: &Path) -> Result<String, ProverError> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || file_digest(&path))
        .await
        .map_err(|err| ProverError::Filecoin {
            action: "hashing a parameter file".into(),
            message: err.to_string(),
        })?
}

/// What happened to one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum Fetched {
    /// There already, with the right digest.
    Present,
    /// Downloaded whole.
    Downloaded { bytes: u64 },
    /// Downloaded from `from`, after what an earlier download left.
    Resumed { from: u64, bytes: u64 },
}

/// The ready file's content.
#[derive(Serialize)]
struct Ready<'a> {
    /// The mirrors, in the order they were tried.
    base_urls: &'a [String],
    files: &'a [WantedFile],
}

/// Makes every file in `files` present in `dir` with its digest, from the first of
/// `base_urls` (mirrors, in order) that serves it whole and with that digest; then writes
/// [`READY_FILE`]. Stops at the first file that no mirror can give.
pub async fn fetch_all(
    base_urls: &[String],
    dir: &Path,
    files: &[WantedFile],
) -> Result<Vec<(String, Fetched)>, ProverError> {
    if base_urls.is_empty() {
        return Err(ProverError::InvalidArgument {
            what: "--base-url",
            reason: "no mirror given: name at least one place the parameter files are served from"
                .into(),
        });
    }
    std::fs::create_dir_all(dir)
        .map_err(ProverError::io("creating the parameter directory", dir))?;
    let mut done = Vec::new();
    for file in files {
        let outcome = fetch_one(base_urls, dir, file).await?;
        tracing::info!(file = %file.name, ?outcome, "parameter file checked");
        done.push((file.name.clone(), outcome));
    }
    let ready = dir.join(READY_FILE);
    let staged = dir.join(format!("{READY_FILE}.partial"));
    let text = serde_json::to_string_pretty(&Ready { base_urls, files }).unwrap_or_default();
    std::fs::write(&staged, text).map_err(ProverError::io("writing", &staged))?;
    std::fs::rename(&staged, &ready).map_err(ProverError::io("writing", &ready))?;
    Ok(done)
}

/// `file` in `dir`: kept when present with its digest, else downloaded from each mirror in
/// turn until one serves it with its digest. When every mirror fails, the last one's error
/// is returned; the others' are logged.
async fn fetch_one(
    base_urls: &[String],
    dir: &Path,
    file: &WantedFile,
) -> Result<Fetched, ProverError> {
    let path = dir.join(&file.name);
    if path.exists() {
        let digest = digest_of(&path).await?;
        if digest == file.digest {
            return Ok(Fetched::Present);
        }
        tracing::warn!(file = %path.display(), %digest, expected = %file.digest, "replacing a parameter file whose digest does not match");
        std::fs::remove_file(&path).map_err(ProverError::io("removing", &path))?;
    }
    let partial: PathBuf = dir.join(format!("{}.partial", file.name));
    let from = std::fs::metadata(&partial).map_or(0, |m| m.len());
    // A download that ended before its rename is complete already.
    if from > 0 && digest_of(&partial).await? == file.digest {
        std::fs::rename(&partial, &path).map_err(ProverError::io("renaming", &partial))?;
        return Ok(Fetched::Resumed { from, bytes: 0 });
    }
    let mut last = None;
    for (k, base_url) in base_urls.iter().enumerate() {
        match fetch_from(base_url, &path, &partial, file).await {
            Ok(fetched) => return Ok(fetched),
            Err(err) => {
                if k + 1 < base_urls.len() {
                    tracing::warn!(file = %file.name, mirror = %base_url, "this mirror failed ({err}); trying the next");
                }
                last = Some(err);
            }
        }
    }
    Err(last.expect("at least one mirror was tried"))
}

/// `file` downloaded from `base_url` into `partial` (resumed where it ends), checked, and
/// renamed to `path`.
async fn fetch_from(
    base_url: &str,
    path: &Path,
    partial: &Path,
    file: &WantedFile,
) -> Result<Fetched, ProverError> {
    let mut from = std::fs::metadata(partial).map_or(0, |m| m.len());
    let url = mirror_url(base_url, file);
    let written = match artifacts::download(&url, partial, from).await {
        Ok(written) => written,
        // The server would not resume (no range support, or the partial file is longer than
        // its file): start over.
        Err(err) if from > 0 => {
            tracing::warn!(%url, from, "resuming failed ({err}); downloading the whole file");
            from = 0;
            artifacts::download(&url, partial, 0).await?
        }
        Err(err) => return Err(err),
    };
    let digest = digest_of(partial).await?;
    if digest != file.digest {
        std::fs::remove_file(partial).map_err(ProverError::io("removing", partial))?;
        return Err(ProverError::FilecoinParamsMismatch {
            path: path.to_owned(),
            reason: format!(
                "{url} served a file whose blake2b digest is {digest}; it was not kept"
            ),
            digest: file.digest.clone(),
        });
    }
    std::fs::rename(partial, path).map_err(ProverError::io("renaming", partial))?;
    Ok(if from > 0 {
        Fetched::Resumed {
            from,
            bytes: written,
        }
    } else {
        Fetched::Downloaded { bytes: written }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verifier_needs_only_the_verifying_keys() {
        let all = wanted_files(&ParamKind::ALL, &[32 << 30], &builtin_manifest()).unwrap();
        let keys = verifying_keys_only(all.clone());
        assert_eq!(keys.len() * 2, all.len(), "one .vk per .params: {all:?}");
        assert!(keys.iter().all(|f| f.name.ends_with(".vk")));
    }

    #[test]
    fn a_32gib_pool_needs_each_kind_s_params_and_vk_and_the_builtin_manifest_lists_them() {
        let files = wanted_files(&ParamKind::ALL, &[32 << 30], &builtin_manifest()).unwrap();
        assert_eq!(files.len(), 8, "{files:?}");
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        for prefix in [
            "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-",
            "v28-empty-sector-update-merkletree-poseidon_hasher-8-8-0-",
            "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-0-",
        ] {
            assert!(
                names.iter().any(|n| n.starts_with(prefix)),
                "{prefix}: {names:?}"
            );
        }
        assert!(files.iter().all(|f| f.digest.len() == 32));
        // WindowPoSt and WinningPoSt differ in their challenge counts: two circuits.
        let post = names
            .iter()
            .filter(|n| n.starts_with("v28-proof-of-spacetime") && n.ends_with(".params"))
            .count();
        assert_eq!(post, 2, "{names:?}");
    }

    #[test]
    fn mirrors_serve_by_name_or_by_cid() {
        let file = WantedFile {
            name: "v28-x.vk".into(),
            digest: "d".into(),
            cid: "bafyx".into(),
        };
        assert_eq!(
            mirror_url("https://m.example/params/", &file),
            "https://m.example/params/v28-x.vk"
        );
        assert_eq!(
            mirror_url("https://gw.example/ipfs/{cid}", &file),
            "https://gw.example/ipfs/bafyx"
        );
        assert_eq!(
            mirror_url("s3://b/{name}.bin", &file),
            "s3://b/v28-x.vk.bin"
        );
        // Every public mirror names a file one way or the other, and the manifest has a CID
        // for every file (the IPFS gateway's only name for it).
        let files = wanted_files(&ParamKind::ALL, &[32 << 30], &builtin_manifest()).unwrap();
        assert!(
            files
                .iter()
                .all(|f| f.cid.starts_with("Qm") || f.cid.starts_with("baf"))
        );
        assert!(PUBLIC_MIRRORS[1].contains("{cid}"));
    }

    /// The first mirror lacks the file, the second serves it by CID: fetched from the second,
    /// digest checked; a mirror serving other bytes is passed over for the next.
    #[test]
    fn each_file_comes_from_the_first_mirror_that_serves_it_with_its_digest() {
        let root = tempfile::tempdir().unwrap();
        let (empty, wrong, by_cid, dir) = (
            root.path().join("empty"),
            root.path().join("wrong"),
            root.path().join("by-cid"),
            root.path().join("params"),
        );
        for d in [&empty, &wrong, &by_cid] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(by_cid.join("bafyfile"), b"the parameters").unwrap();
        std::fs::write(wrong.join("bafyfile"), b"other bytes").unwrap();
        let file = WantedFile {
            name: "v28-test.params".into(),
            digest: file_digest(&by_cid.join("bafyfile")).unwrap(),
            cid: "bafyfile".into(),
        };
        let mirrors = [
            format!("file://{}", empty.display()),
            format!("file://{}/{{cid}}", wrong.display()),
            format!("file://{}/{{cid}}", by_cid.display()),
        ];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let done = runtime
            .block_on(fetch_all(&mirrors, &dir, std::slice::from_ref(&file)))
            .unwrap();
        assert_eq!(done[0].1, Fetched::Downloaded { bytes: 14 });
        assert_eq!(
            std::fs::read(dir.join("v28-test.params")).unwrap(),
            b"the parameters"
        );
        assert!(dir.join(READY_FILE).exists());
    }

    #[test]
    fn an_unknown_size_or_a_manifest_without_the_file_is_refused_with_what_to_do() {
        let err = required_names(&[ParamKind::Porep], &[4 << 30]).unwrap_err();
        assert!(
            err.to_string()
                .contains("2KiB, 8MiB, 512MiB, 32GiB or 64GiB"),
            "{err}"
        );
        let err = wanted_files(&[ParamKind::Snap], &[2 << 10], &Manifest::new()).unwrap_err();
        assert!(err.to_string().contains("--manifest"), "{err}");
    }
}
