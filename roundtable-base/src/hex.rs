//! Lowercase hexadecimal, for digests, state hashes and git object ids.

/// `bytes` as lowercase hex.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Exactly 64 lowercase hex digits as 32 bytes.
pub fn decode_32(hex: &str) -> Option<[u8; 32]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
        out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip_and_refusals() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 9) as u8);
        let hex = super::encode(&bytes);
        assert_eq!(super::decode_32(&hex), Some(bytes));
        assert_eq!(super::decode_32(&hex.to_uppercase()), None);
        assert_eq!(super::decode_32(&hex[1..]), None);
        assert_eq!(super::decode_32(&format!("{}g", &hex[1..])), None);
    }
}
