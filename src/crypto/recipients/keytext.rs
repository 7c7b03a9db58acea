//! The text form of age keys: Bech32 (BIP 173, not Bech32m) "without length limits on the
//! data part" (C2SP age §"Conventions"), all lowercase or all uppercase.
//!
//! The `bech32` crate caps a Bech32 string at the checksum's code length, 1023 characters. A
//! post-quantum recipient (`age1pq1...`, 1216 bytes) is 1959 characters long, so keys are
//! checked with [`Bech32Unlimited`]: Bech32's checksum (same generator, same residue) without
//! a length cap, as age's own Bech32 does.

use super::super::Error;
use bech32::primitives::decode::CheckedHrpstring;
use bech32::{Checksum, Hrp};
use zeroize::Zeroizing;

/// Bech32's checksum with no code length limit (C2SP age §"Conventions").
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Bech32Unlimited {}

impl Checksum for Bech32Unlimited {
    type MidstateRepr = u32;
    const CODE_LENGTH: usize = usize::MAX;
    const CHECKSUM_LENGTH: usize = 6;
    // BIP 173's generator and residue (the `bech32` crate's `Bech32`).
    const GENERATOR_SH: [u32; 5] = [
        0x3b6a_57b2,
        0x2650_8e6d,
        0x1ea1_19fa,
        0x3d42_33dd,
        0x2a14_62b3,
    ];
    const TARGET_RESIDUE: u32 = 1;
}

/// Decodes `s` with the human-readable part `hrp` (given in lowercase) into its data bytes.
/// `upper` selects the required case (age: recipients lowercase, identities uppercase).
/// Every failure is [`Error::InvalidKey`], and none of them repeats the string (it may be a
/// secret key); the bytes are wiped on drop.
pub(crate) fn decode(s: &str, hrp: &str, upper: bool) -> Result<Zeroizing<Vec<u8>>, Error> {
    let same_case = if upper {
        s.to_ascii_uppercase() == s
    } else {
        s.to_ascii_lowercase() == s
    };
    if !same_case {
        return Err(Error::InvalidKey(format!(
            "{hrp}... key must be {} case",
            if upper { "upper" } else { "lower" }
        )));
    }
    let parsed = CheckedHrpstring::new::<Bech32Unlimited>(s)
        .map_err(|e| Error::InvalidKey(format!("bad Bech32 encoding: {e}")))?;
    if parsed.hrp().to_lowercase() != hrp {
        return Err(Error::InvalidKey(format!(
            "expected a key starting with \"{hrp}1\""
        )));
    }
    Ok(Zeroizing::new(parsed.byte_iter().collect()))
}

/// Encodes `data` under `hrp` (a valid lowercase human-readable part), uppercased if `upper`.
pub(crate) fn encode(hrp: &str, data: &[u8], upper: bool) -> String {
    // ok: every caller passes one of the constant HRPs of age's key types, all valid
    let hrp = Hrp::parse(hrp).unwrap_or_else(|_| unreachable!("valid hrp"));
    // ok: Bech32Unlimited has no length limit, the only way encoding can fail
    let s = bech32::encode::<Bech32Unlimited>(hrp, data)
        .unwrap_or_else(|_| unreachable!("bech32 length"));
    if upper {
        s.to_ascii_uppercase()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_keys_round_trip_and_checksum_is_checked() {
        let data: Vec<u8> = (0..1216u32).map(|i| (i * 7) as u8).collect();
        let s = encode("age1pq", &data, false);
        assert!(
            s.len() > 1023,
            "longer than Bech32's code length: {}",
            s.len()
        );
        assert_eq!(*decode(&s, "age1pq", false).expect("decode"), data);
        // One changed character of the data part breaks the checksum.
        let mut bad = s.clone().into_bytes();
        let i = s.len() / 2;
        bad[i] = if bad[i] == b'q' { b'p' } else { b'q' };
        let bad = String::from_utf8(bad).expect("ascii");
        assert!(matches!(
            decode(&bad, "age1pq", false),
            Err(Error::InvalidKey(_))
        ));
        // Case: identities are upper case, recipients lower case; mixed case never.
        let up = encode("age-secret-key-pq-", &[7; 32], true);
        assert!(up.starts_with("AGE-SECRET-KEY-PQ-1"));
        assert_eq!(
            *decode(&up, "age-secret-key-pq-", true).expect("up"),
            [7; 32]
        );
        assert!(decode(&up.to_lowercase(), "age-secret-key-pq-", true).is_err());
        assert!(decode(&s.to_uppercase(), "age1pq", false).is_err());
        // The wrong human-readable part.
        assert!(decode(&s, "age", false).is_err());
    }
}
