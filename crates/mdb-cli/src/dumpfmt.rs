//! The portable text format of `mdb_dump` / `mdb_load`: encoding of keys and
//! values as record lines, and decoding them back.
//!
//! * `bytevalue`: every byte as two lower-case hex digits. Decoding accepts
//!   upper case too, and rejects odd lengths and non-hex characters.
//! * `print`: bytes 0x20..=0x7e (C-locale `isprint`) as themselves, except the
//!   backslash which is doubled; every other byte as `\` plus two lower-case
//!   hex digits. Decoding turns `\\` into one backslash and `\xy` into a byte;
//!   any other `\` sequence is an error. (LMDB 0.9.25+ behaviour.)

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Append `data` in `bytevalue` form.
pub fn encode_hex(out: &mut Vec<u8>, data: &[u8]) {
    out.reserve(data.len() * 2);
    for &b in data {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

/// Append `data` in `print` form.
pub fn encode_print(out: &mut Vec<u8>, data: &[u8]) {
    for &b in data {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x20..=0x7e => out.push(b),
            _ => {
                out.push(b'\\');
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
        }
    }
}

fn unhex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The input could not be decoded (LMDB reports "unexpected end of input").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadInput;

/// Decode a `bytevalue` line (without its newline) into `out` (cleared first).
pub fn decode_hex(line: &[u8], out: &mut Vec<u8>) -> Result<(), BadInput> {
    out.clear();
    if line.len() & 1 != 0 {
        return Err(BadInput);
    }
    out.reserve(line.len() / 2);
    for pair in line.chunks_exact(2) {
        let hi = unhex(pair[0]).ok_or(BadInput)?;
        let lo = unhex(pair[1]).ok_or(BadInput)?;
        out.push(hi << 4 | lo);
    }
    Ok(())
}

/// Decode a `print` line (without its newline) into `out` (cleared first).
pub fn decode_print(line: &[u8], out: &mut Vec<u8>) -> Result<(), BadInput> {
    out.clear();
    out.reserve(line.len());
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        match line.get(i + 1) {
            Some(b'\\') => out.push(b'\\'),
            Some(&h) => {
                let l = *line.get(i + 2).ok_or(BadInput)?;
                let (h, l) = (unhex(h).ok_or(BadInput)?, unhex(l).ok_or(BadInput)?);
                out.push(h << 4 | l);
                i += 1;
            }
            None => return Err(BadInput),
        }
        i += 2;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(f: fn(&mut Vec<u8>, &[u8]), d: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        f(&mut v, d);
        v
    }

    #[test]
    fn encodes_like_mdb_dump() {
        assert_eq!(enc(encode_hex, b"back\\slash"), b"6261636b5c736c617368");
        assert_eq!(enc(encode_print, b"back\\slash"), b"back\\\\slash");
        assert_eq!(
            enc(encode_print, b"tab\there\nnewline"),
            b"tab\\09here\\0anewline"
        );
        assert_eq!(
            enc(encode_print, b"\x00\x01\x7f\x80\xffA ~"),
            b"\\00\\01\\7f\\80\\ffA ~"
        );
        assert_eq!(enc(encode_print, b""), b"");
    }

    #[test]
    fn decodes() {
        let mut o = Vec::new();
        decode_hex(b"4A6b", &mut o).unwrap();
        assert_eq!(o, b"Jk");
        assert_eq!(decode_hex(b"616", &mut o), Err(BadInput));
        assert_eq!(decode_hex(b"6x", &mut o), Err(BadInput));
        decode_print(b"val\\0aue\\\\x", &mut o).unwrap();
        assert_eq!(o, b"val\nue\\x");
        for bad in [&b"a\\"[..], b"a\\4", b"\\zz", b"\\g1", b"x\\4g"] {
            assert_eq!(decode_print(bad, &mut o), Err(BadInput), "{:?}", bad);
        }
    }

    #[test]
    fn round_trip_every_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        let mut o = Vec::new();
        decode_print(&enc(encode_print, &all), &mut o).unwrap();
        assert_eq!(o, all);
        decode_hex(&enc(encode_hex, &all), &mut o).unwrap();
        assert_eq!(o, all);
    }
}
