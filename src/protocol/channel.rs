//! Channel keys (`docs/PROTOCOL.md` §5.1): a channel is a capability, and URLs get logged,
//! so the `channel=ID` in a URL is derived from a secret key that travels in the
//! [`KEY_HEADER`] header only. Shared by the relay (which checks) and the clients (which
//! derive): one derivation.

use super::base64::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::control::Rejection;
use super::query::is_valid_channel;

/// The request header carrying a channel's key (§5.1); never logged, never forwarded to a peer.
pub const KEY_HEADER: &str = "X-Httpipe-Channel-Key";

/// The domain of the derivation (§5.1).
const CONTEXT: &[u8] = b"httpipe channel v1\n";

/// Characters of a derived channel id: 22 base64url characters, 132 bits.
const ID_CHARS: usize = 22;

/// The `channel=ID` of the channel whose key is `key` (§5.1).
pub fn channel_id(key: &str) -> String {
    let digest = Sha256::new()
        .chain_update(CONTEXT)
        .chain_update(key.as_bytes())
        .finalize();
    let mut id = URL_SAFE_NO_PAD.encode(digest);
    id.truncate(ID_CHARS);
    id
}

/// The header proving a request may use the channel whose key is `key` (§5.1; a transfer's
/// channel: its transfer id): a header, so no log of URLs holds it.
pub fn key_header(key: &str) -> (&'static str, String) {
    (KEY_HEADER, key.to_string())
}

/// The relay's check of a request on channel `id` (§5.1): `keys` are the values of its
/// [`KEY_HEADER`] headers; exactly one, of the channel syntax, deriving `id`.
pub fn check_key<'a>(id: &str, mut keys: impl Iterator<Item = &'a [u8]>) -> Result<(), Rejection> {
    let refused = Rejection::InvalidHeader("x-httpipe-channel-key");
    let (Some(key), None) = (keys.next(), keys.next()) else {
        return Err(refused);
    };
    match std::str::from_utf8(key) {
        Ok(k) if is_valid_channel(k) && channel_id(k) == id => Ok(()),
        _ => Err(refused),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_derive_from_keys_and_only_the_key_opens_its_channel() {
        let id = channel_id("T0pSecretTransferId_-x");
        assert_eq!(id.len(), ID_CHARS);
        assert!(is_valid_channel(&id));
        assert_ne!(id, channel_id("T0pSecretTransferId_-y"));
        assert_eq!(id, channel_id("T0pSecretTransferId_-x"));
        let key = b"T0pSecretTransferId_-x".as_slice();
        assert_eq!(check_key(&id, [key].into_iter()), Ok(()));
        for keys in [
            vec![],
            vec![b"T0pSecretTransferId_-y".as_slice()],
            vec![key, key],
            vec![id.as_bytes()],
            vec![b"bad key!".as_slice()],
        ] {
            assert!(check_key(&id, keys.into_iter()).is_err());
        }
    }
}
