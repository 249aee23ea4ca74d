//! Bearer-token authentication of every call. The token is read from a file (a mounted
//! Secret) and re-read every 30 s, so rotating the Secret needs no restart.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tonic::metadata::MetadataMap;
use tonic::{Request, Status};

use crate::error::GatewayError;

const RELOAD_EVERY: Duration = Duration::from_secs(30);

/// Who may call.
#[derive(Clone)]
pub enum Auth {
    /// Callers must send `authorization: Bearer <token>`.
    Token(Arc<Token>),
    /// Anyone who can reach the port (chosen explicitly: `--allow-unauthenticated`).
    Anyone,
}

pub struct Token {
    path: PathBuf,
    /// SHA-256 of the token: compared in constant time, whatever the lengths.
    digest: RwLock<[u8; 32]>,
}

impl Token {
    /// Reads the token at `path` and keeps re-reading it in the background.
    pub fn watch(path: &Path) -> Result<Arc<Self>, GatewayError> {
        let token = Arc::new(Self {
            path: path.to_owned(),
            digest: RwLock::new(read_digest(path)?),
        });
        let reloading = Arc::downgrade(&token);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RELOAD_EVERY).await;
                let Some(token) = reloading.upgrade() else {
                    return;
                };
                match read_digest(&token.path) {
                    Ok(digest) => *token.digest.write().unwrap_or_else(|e| e.into_inner()) = digest,
                    // Keep the last good token: a Secret being updated may be briefly absent.
                    Err(error) => tracing::warn!(%error, "re-reading the bearer token failed"),
                }
            }
        });
        Ok(token)
    }

    fn digest(&self) -> [u8; 32] {
        *self.digest.read().unwrap_or_else(|e| e.into_inner())
    }
}

fn read_digest(path: &Path) -> Result<[u8; 32], GatewayError> {
    let text = std::fs::read_to_string(path).map_err(|source| GatewayError::TokenFile {
        path: path.to_owned(),
        source,
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(GatewayError::EmptyToken {
            path: path.to_owned(),
        });
    }
    Ok(Sha256::digest(token.as_bytes()).into())
}

impl Auth {
    /// Checks a call's metadata.
    pub fn check(&self, metadata: &MetadataMap) -> Result<(), Status> {
        match self {
            Auth::Anyone => Ok(()),
            Auth::Token(token) => {
                let header = metadata
                    .get("authorization")
                    .and_then(|value| value.to_str().ok());
                check_bearer(&token.digest(), header)
            }
        }
    }

    /// The tonic interceptor form of [`Auth::check`].
    pub fn intercept(&self, request: Request<()>) -> Result<Request<()>, Status> {
        self.check(request.metadata())?;
        Ok(request)
    }
}

/// Whether `header` is `Bearer <token>` for the token whose SHA-256 is `expected`.
pub fn check_bearer(expected: &[u8; 32], header: Option<&str>) -> Result<(), Status> {
    let Some(header) = header else {
        return Err(Status::unauthenticated(
            "no bearer token: send the metadata `authorization: Bearer <token>` with the token \
             from the gateway's Secret",
        ));
    };
    let given = header
        .strip_prefix("Bearer ")
        .or_else(|| header.strip_prefix("bearer "))
        .unwrap_or("")
        .trim();
    let digest: [u8; 32] = Sha256::digest(given.as_bytes()).into();
    if bool::from(digest.ct_eq(expected)) {
        Ok(())
    } else {
        Err(Status::unauthenticated(
            "wrong bearer token: send `authorization: Bearer <token>` with the token from the \
             gateway's Secret",
        ))
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;

    #[test]
    fn only_the_right_bearer_token_passes() {
        let expected: [u8; 32] = Sha256::digest(b"s3cret").into();
        assert!(check_bearer(&expected, Some("Bearer s3cret")).is_ok());
        for wrong in [
            None,
            Some("Bearer nope"),
            Some("s3cret"),
            Some("Basic s3cret"),
            Some("Bearer "),
        ] {
            let status = check_bearer(&expected, wrong).unwrap_err();
            assert_eq!(status.code(), Code::Unauthenticated, "{wrong:?}");
        }
    }

    #[tokio::test]
    async fn the_token_comes_from_its_file_trimmed_and_an_empty_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "s3cret\n").unwrap();
        let auth = Auth::Token(Token::watch(&path).unwrap());
        let mut metadata = MetadataMap::new();
        metadata.insert("authorization", "Bearer s3cret".parse().unwrap());
        assert!(auth.check(&metadata).is_ok());
        assert!(Auth::Anyone.check(&MetadataMap::new()).is_ok());

        std::fs::write(&path, "  \n").unwrap();
        let error = Token::watch(&path).err().unwrap();
        assert!(error.to_string().contains("is empty"), "{error}");
        let missing = Token::watch(&dir.path().join("absent")).err().unwrap();
        assert!(
            missing.to_string().contains("--allow-unauthenticated"),
            "{missing}"
        );
    }
}
