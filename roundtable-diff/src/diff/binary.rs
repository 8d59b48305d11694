//! `GIT binary patch` payloads: git's base85 line encoding, zlib, the
//! copy/insert delta format, and git blob ids.

use sha1::Digest as _;
use std::io::{Read as _, Write as _};

const ALPHABET: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Reverse lookup: byte → digit + 1 (0 = not in the alphabet).
const DECODE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 85 {
        table[ALPHABET[i] as usize] = i as u8 + 1;
        i += 1;
    }
    table
};

/// Bytes encoded per base85 line (git's limit).
pub(crate) const LINE_BYTES: usize = 52;

/// Decode one base85 data line (without its newline), appending to `out`.
pub(crate) fn decode_line(line: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let (&len_char, digits) = line.split_first().ok_or("empty base85 line")?;
    let len = match len_char {
        b'A'..=b'Z' => (len_char - b'A') as usize + 1,
        b'a'..=b'z' => (len_char - b'a') as usize + 27,
        _ => return Err("a base85 line must start with its length (A-Z, a-z)"),
    };
    if digits.len() != len.div_ceil(4) * 5 {
        return Err("base85 line length does not match its length character");
    }
    let mut remaining = len;
    for group in digits.chunks_exact(5) {
        let mut acc: u32 = 0;
        for &c in group {
            let d = DECODE[c as usize];
            if d == 0 {
                return Err("invalid base85 character");
            }
            acc = acc
                .checked_mul(85)
                .and_then(|a| a.checked_add(u32::from(d - 1)))
                .ok_or("base85 group overflows")?;
        }
        let bytes = acc.to_be_bytes();
        let take = remaining.min(4);
        out.extend_from_slice(&bytes[..take]);
        remaining -= take;
    }
    Ok(())
}

/// Encode `data` as base85 lines (each ending in `\n`), appending to `out`.
pub fn encode_lines(data: &[u8], out: &mut Vec<u8>) {
    for chunk in data.chunks(LINE_BYTES) {
        let n = chunk.len();
        out.push(if n <= 26 {
            b'A' + (n as u8 - 1)
        } else {
            b'a' + (n as u8 - 27)
        });
        for group in chunk.chunks(4) {
            let mut word = [0u8; 4];
            word[..group.len()].copy_from_slice(group);
            let mut acc = u32::from_be_bytes(word);
            let mut digits = [0u8; 5];
            for d in digits.iter_mut().rev() {
                *d = ALPHABET[(acc % 85) as usize];
                acc /= 85;
            }
            out.extend_from_slice(&digits);
        }
        out.push(b'\n');
    }
}

/// Inflate a zlib stream that must produce exactly `size` bytes.
pub(crate) fn inflate(deflated: &[u8], size: u64) -> Result<Vec<u8>, &'static str> {
    let cap = usize::try_from(size).map_err(|_| "binary hunk too large")?;
    let mut out = Vec::with_capacity(cap.min(1 << 26));
    let mut decoder = flate2::read::ZlibDecoder::new(deflated);
    // Read one byte past the declared size so an overlong stream is caught.
    decoder
        .by_ref()
        .take(size.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|_| NOT_ZLIB)?;
    if out.len() as u64 != size {
        return Err(WRONG_SIZE);
    }
    Ok(out)
}

/// The zlib state a patch's binary hunks are checked with: made once, at
/// the first binary hunk, and reset for each one after, so a hunk costs its
/// own inflation and not a fresh zlib state and window (allocated and
/// zeroed: more than the inflation of a small hunk).
pub(crate) struct Inflater {
    zlib: flate2::Decompress,
    /// Where checked output goes (and is dropped).
    scratch: Box<[u8]>,
}

/// Why a stream does not check out.
const NOT_ZLIB: &str = "binary hunk is not a valid zlib stream";

/// Why a stream that checks out is not the hunk it says.
const WRONG_SIZE: &str = "binary hunk inflates to a different size than declared";

/// Bytes of a delta's header: two varints of at most 10 bytes each.
const DELTA_HEAD: usize = 20;

impl Inflater {
    pub(crate) fn new() -> Self {
        Inflater {
            zlib: flate2::Decompress::new(true),
            scratch: vec![0; 1 << 15].into_boxed_slice(),
        }
    }

    /// Start checking one hunk's zlib stream.
    pub(crate) fn start<'a>(&'a mut self, deflated: &'a [u8]) -> Inflating<'a> {
        self.zlib.reset(true);
        Inflating {
            inflater: self,
            deflated,
            produced: 0,
            ended: false,
        }
    }
}

/// One hunk's stream being inflated (and dropped) by an [`Inflater`]:
/// read the way `flate2`'s reader reads it (a stream cut short ends where
/// it is cut; corrupt data or a bad checksum is an error), so it accepts
/// and refuses exactly what inflating it whole would.
pub(crate) struct Inflating<'a> {
    inflater: &'a mut Inflater,
    deflated: &'a [u8],
    /// Bytes inflated so far.
    produced: u64,
    /// The stream ended (or cannot go further).
    ended: bool,
}

impl Inflating<'_> {
    /// Inflate up to `want` more bytes (at most the scratch buffer) into the
    /// scratch buffer; how many came (0 once the stream has ended). As
    /// `flate2`'s reader: a stream whose input runs out before its end is
    /// an error.
    fn step(&mut self, want: usize) -> Result<usize, &'static str> {
        if self.ended || want == 0 {
            return Ok(0);
        }
        let Inflater { zlib, scratch } = &mut *self.inflater;
        let want = want.min(scratch.len());
        loop {
            let consumed = usize::try_from(zlib.total_in()).map_err(|_| NOT_ZLIB)?;
            let input = self.deflated.get(consumed..).unwrap_or_default();
            let eof = input.is_empty();
            let flush = if eof {
                flate2::FlushDecompress::Finish
            } else {
                flate2::FlushDecompress::None
            };
            let (in_before, out_before) = (zlib.total_in(), zlib.total_out());
            let status = zlib
                .decompress(input, &mut scratch[..want], flush)
                .map_err(|_| NOT_ZLIB)?;
            let read = zlib.total_out() - out_before;
            self.produced += read;
            if status == flate2::Status::StreamEnd {
                self.ended = true;
            } else if read == 0 && (eof || zlib.total_in() == in_before) {
                // Cut short (or, never seen from zlib, stuck).
                return Err(NOT_ZLIB);
            } else if read == 0 {
                continue;
            }
            // At most `want` bytes: fits a usize.
            return Ok(read as usize);
        }
    }

    /// The size of the content a delta builds, read from its header (the
    /// stream's first bytes) without inflating the rest; call it first.
    pub(crate) fn delta_result_size(&mut self) -> Result<u64, &'static str> {
        let mut head = [0u8; DELTA_HEAD];
        let mut have = 0;
        while have < DELTA_HEAD {
            let n = self.step(DELTA_HEAD - have)?;
            if n == 0 {
                break;
            }
            head[have..have + n].copy_from_slice(&self.inflater.scratch[..n]);
            have += n;
        }
        let mut pos = 0;
        read_varint(&head[..have], &mut pos)?;
        read_varint(&head[..have], &mut pos)
    }

    /// Inflate the rest of the stream, checking that it comes to exactly
    /// `size` bytes in all (it stops one byte past `size`).
    pub(crate) fn check_size(mut self, size: u64) -> Result<(), &'static str> {
        let limit = size.saturating_add(1);
        while self.produced < limit {
            let want = usize::try_from(limit - self.produced).unwrap_or(usize::MAX);
            if self.step(want)? == 0 {
                break;
            }
        }
        if self.produced != size {
            return Err(WRONG_SIZE);
        }
        Ok(())
    }
}

/// Deflate `data` with zlib (as git does for binary hunks).
pub fn deflate(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).expect("writing to a Vec cannot fail");
    enc.finish().expect("finishing a Vec cannot fail")
}

fn read_varint(data: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut value: u64 = 0;
    let mut shift = 0;
    loop {
        let &b = data.get(*pos).ok_or("delta header is truncated")?;
        *pos += 1;
        if shift > 56 {
            return Err("delta size overflows");
        }
        value |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// Apply a git delta (`patch-delta.c` format) to `base`.
pub(crate) fn apply_delta(base: &[u8], delta: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut pos = 0;
    let src_size = read_varint(delta, &mut pos)?;
    if src_size != base.len() as u64 {
        return Err("delta was made against a different base size");
    }
    let dst_size = read_varint(delta, &mut pos)?;
    let cap = usize::try_from(dst_size).map_err(|_| "delta result too large")?;
    let mut out = Vec::with_capacity(cap.min(1 << 26));
    while pos < delta.len() {
        let cmd = delta[pos];
        pos += 1;
        if cmd & 0x80 != 0 {
            let mut offset: u64 = 0;
            let mut size: u64 = 0;
            for bit in 0..4 {
                if cmd & (1 << bit) != 0 {
                    let &b = delta.get(pos).ok_or("delta copy is truncated")?;
                    pos += 1;
                    offset |= u64::from(b) << (8 * bit);
                }
            }
            for bit in 0..3 {
                if cmd & (0x10 << bit) != 0 {
                    let &b = delta.get(pos).ok_or("delta copy is truncated")?;
                    pos += 1;
                    size |= u64::from(b) << (8 * bit);
                }
            }
            if size == 0 {
                size = 0x10000;
            }
            let end = offset.checked_add(size).ok_or("delta copy out of range")?;
            if end > base.len() as u64 || (out.len() as u64).saturating_add(size) > dst_size {
                return Err("delta copy out of range");
            }
            out.extend_from_slice(&base[offset as usize..end as usize]);
        } else if cmd != 0 {
            let n = usize::from(cmd);
            let bytes = delta.get(pos..pos + n).ok_or("delta insert is truncated")?;
            if (out.len() + n) as u64 > dst_size {
                return Err("delta insert out of range");
            }
            out.extend_from_slice(bytes);
            pos += n;
        } else {
            return Err("delta has a reserved zero opcode");
        }
    }
    if out.len() as u64 != dst_size {
        return Err("delta result has a different size than declared");
    }
    Ok(out)
}

/// The git blob id of `data` in lowercase hex, for the object format whose
/// ids have `hex_len` digits (40: SHA-1, 64: SHA-256).
pub(crate) fn blob_id(data: &[u8], hex_len: usize) -> Option<String> {
    let header = format!("blob {}\0", data.len());
    let digest: Vec<u8> = match hex_len {
        40 => {
            let mut h = sha1::Sha1::new();
            h.update(header.as_bytes());
            h.update(data);
            h.finalize().to_vec()
        }
        64 => {
            let mut h = sha2::Sha256::new();
            h.update(header.as_bytes());
            h.update(data);
            h.finalize().to_vec()
        }
        _ => return None,
    };
    Some(crate::hex::encode(&digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base85_round_trip_all_lengths() {
        for n in 0..200usize {
            let data: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            let mut text = Vec::new();
            encode_lines(&data, &mut text);
            let mut back = Vec::new();
            for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                decode_line(line, &mut back).expect("decodes");
            }
            assert_eq!(back, data, "length {n}");
        }
    }

    #[test]
    fn base85_refuses_bad_lines() {
        let mut out = Vec::new();
        assert!(decode_line(b"", &mut out).is_err());
        assert!(decode_line(b"0abcde", &mut out).is_err());
        assert!(decode_line(b"Aabcd", &mut out).is_err());
        assert!(decode_line(b"A\"bcde", &mut out).is_err());
        assert!(decode_line(b"A~~~~~", &mut out).is_err(), "overflow");
    }

    #[test]
    fn empty_blob_id_matches_git() {
        assert_eq!(
            blob_id(b"", 40).as_deref(),
            Some("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
        );
        assert_eq!(
            blob_id(b"hello\n", 40).as_deref(),
            Some("ce013625030ba8dba906f756967f9e9ca394464a")
        );
    }

    #[test]
    fn delta_copy_and_insert() {
        let base = b"0123456789";
        // src 10, dst 7; copy offset 2 size 3; insert "abcd"
        let delta = [10u8, 7, 0x80 | 0x01 | 0x10, 2, 3, 4, b'a', b'b', b'c', b'd'];
        assert_eq!(apply_delta(base, &delta).expect("applies"), b"234abcd");
        assert!(apply_delta(b"short", &delta).is_err());
        let bad = [10u8, 7, 0x80 | 0x01 | 0x10, 9, 3];
        assert!(apply_delta(base, &bad).is_err());
        assert!(apply_delta(base, &[10u8, 1, 0]).is_err());
    }

    #[test]
    fn inflate_checks_size() {
        let z = deflate(b"hello world");
        assert_eq!(inflate(&z, 11).expect("ok"), b"hello world");
        assert!(inflate(&z, 10).is_err());
        assert!(inflate(&z, 12).is_err());
        assert!(inflate(b"not zlib", 3).is_err());
        let mut inflater = Inflater::new();
        let mut check = |z: &[u8], size| inflater.start(z).check_size(size);
        assert!(check(&z, 11).is_ok());
        assert!(check(&z, 10).is_err());
        assert!(check(&z, 12).is_err());
        assert!(check(b"not zlib", 3).is_err());
        // A bad checksum is refused.
        let mut bad_sum = z.clone();
        let last = bad_sum.len() - 1;
        bad_sum[last] ^= 1;
        assert!(check(&bad_sum, 11).is_err());
    }

    /// What the parser accepted when each check made a fresh `flate2`
    /// reader: the reference the reused [`Inflater`] must agree with.
    fn reader_check(deflated: &[u8], size: u64) -> Result<(), &'static str> {
        let decoder = flate2::read::ZlibDecoder::new(deflated);
        let produced = std::io::copy(
            &mut decoder.take(size.saturating_add(1)),
            &mut std::io::sink(),
        )
        .map_err(|_| NOT_ZLIB)?;
        if produced != size {
            return Err("binary hunk inflates to a different size than declared");
        }
        Ok(())
    }

    fn reader_delta_result_size(deflated: &[u8]) -> Result<u64, &'static str> {
        let mut head = Vec::new();
        flate2::read::ZlibDecoder::new(deflated)
            .take(DELTA_HEAD as u64)
            .read_to_end(&mut head)
            .map_err(|_| NOT_ZLIB)?;
        let mut pos = 0;
        read_varint(&head, &mut pos)?;
        read_varint(&head, &mut pos)
    }

    /// One reused inflater, over streams cut at every length and with every
    /// byte flipped (small and multi-block, 100 KB, streams; a delta
    /// header), accepts and refuses exactly what a fresh reader per stream
    /// did, with the same message, and reads the same delta sizes.
    #[test]
    fn issue33_perf_reused_inflater_agrees_with_a_fresh_reader() {
        let small = deflate(b"hello world, hello world, hello world");
        let big_data: Vec<u8> = (0..100_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 & 0x3f)
            .collect();
        let big = deflate(&big_data);
        // A delta's header: source size 300, result size 70,000 (varints).
        let mut delta = vec![0xac, 0x02, 0xf0, 0xa2, 0x04];
        delta.extend_from_slice(&[0x7f; 40]);
        let delta = deflate(&delta);
        let mut inflater = Inflater::new();
        let mut cases: Vec<(Vec<u8>, u64)> = Vec::new();
        for (z, size) in [(&small, 37u64), (&big, 100_000), (&delta, 45)] {
            for cut in 0..=z.len() {
                if z.len() < 200 || cut % 97 == 0 || cut + 8 > z.len() {
                    cases.push((z[..cut].to_vec(), size));
                }
            }
            for at in 0..z.len() {
                if z.len() < 200 || at % 89 == 0 || at + 8 > z.len() {
                    let mut flipped = z.clone();
                    flipped[at] ^= 0x21;
                    cases.push((flipped, size));
                }
            }
            let mut trailing = z.clone();
            trailing.extend_from_slice(b"junk");
            cases.push((trailing, size));
            for other in [0, size - 1, size + 1] {
                cases.push((z.clone(), other));
            }
        }
        let mut accepted = 0;
        for (z, size) in &cases {
            let want = reader_check(z, *size);
            assert_eq!(
                inflater.start(z).check_size(*size),
                want,
                "{} bytes",
                z.len()
            );
            accepted += usize::from(want.is_ok());
            let mut stream = inflater.start(z);
            let head = stream.delta_result_size();
            assert_eq!(head, reader_delta_result_size(z));
            // Reading the header first leaves the same answer for the rest.
            if head.is_ok() {
                assert_eq!(stream.check_size(*size), want);
            }
        }
        assert!(accepted >= 3, "the unchanged streams are accepted");
        assert_eq!(
            inflater.start(&delta).delta_result_size(),
            Ok(70_000),
            "the delta's result size"
        );
    }
}
