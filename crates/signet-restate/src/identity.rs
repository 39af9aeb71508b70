//! Request identity: who may call a worker. Restate signs every request it sends a worker with
//! its private key (a JWT in `x-restate-jwt-v1`); a worker given the public key
//! (`publickeyv1_…`) refuses every request without a valid signature with `401`, so a forged
//! journal — one that approves a `#[tool(confirm)]` call with the sender's arguments — is never
//! replayed. [`serve`](crate::serve) requires a key wherever the worker binds beyond loopback.

use std::path::Path;

use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;

/// The prefix of a Restate public identity key.
const PUBLIC_PREFIX: &str = "publickeyv1_";

/// An Ed25519 key pair for Restate request identity: the private half for the server
/// (`[worker.invoker] request-identity-private-key-pem-file`), the public half for workers
/// ([`Worker::identity_key`](crate::Worker::identity_key)). [`RestateServer`](crate::RestateServer)
/// makes a fresh one each time it starts. `Debug` shows only the public key.
///
/// ```
/// let keys = signet_restate::IdentityKeys::generate().unwrap();
/// assert!(keys.public_key().starts_with("publickeyv1_"));
/// assert!(!format!("{keys:?}").contains("PRIVATE"));
/// ```
pub struct IdentityKeys {
    signing: SigningKey,
    public: String,
}

impl std::fmt::Debug for IdentityKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityKeys")
            .field("public_key", &self.public)
            .field("private_key", &"[redacted]")
            .finish()
    }
}

impl IdentityKeys {
    /// A new key pair from the operating system's random source.
    pub fn generate() -> std::io::Result<IdentityKeys> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|error| std::io::Error::other(format!("no random source: {error}")))?;
        let signing = SigningKey::from_bytes(&seed);
        let public = format!(
            "{PUBLIC_PREFIX}{}",
            bs58::encode(signing.verifying_key().to_bytes()).into_string()
        );
        Ok(IdentityKeys { signing, public })
    }

    /// The public key, `publickeyv1_` and the key in base58, as workers take it.
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// Writes the private key as PKCS#8 PEM to `path`, readable by its owner only (`0600`), for
    /// the server's `request-identity-private-key-pem-file`.
    pub fn write_private_key(&self, path: &Path) -> std::io::Result<()> {
        let pem = self
            .signing
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(std::io::Error::other)?;
        signet::fs_atomic::write_private(path, pem.as_bytes())
    }
}
