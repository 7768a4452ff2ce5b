//! Fixed-bucket assignment (`bucket-function.type=default`), as Java `DefaultBucketFunction`.
//!
//! The bucket key's values are encoded as a BinaryRow of row kind 0 without arity prefix
//! ([`crate::binary_row::encode_row`]), hashed with MurmurHash3 x86 32-bit, seed 42, over
//! little-endian 4-byte words (Java `BinaryRow.hashCode` → `MurmurHashUtils.hashBytesByWords`),
//! and the bucket is `abs(hash % num_buckets)` with Java's truncating remainder.
//!
//! Invariants: a BinaryRow's length is a multiple of 8, so the word-wise Java hash and the
//! standard [`murmur3_32`] agree on every row; the same hash (as big-endian int32) is what the
//! dynamic-bucket `HASH` index files store.

use crate::binary_row::encode_row;
use crate::datum::Datum;
use crate::error::{Error, Result};
use crate::types::DataType;

/// The bucket of every file postpone-bucket tables (`bucket = -2`) write, in the
/// `bucket-postpone` directory, until compaction moves their rows to real buckets (Java
/// `BucketMode.POSTPONE_BUCKET`); it is also their `_TOTAL_BUCKETS`.
pub const POSTPONE_BUCKET: i32 = -2;

/// Seed of Paimon's row hash (Java `MurmurHashUtils.DEFAULT_SEED`).
pub const ROW_HASH_SEED: u32 = 42;

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

/// Standard MurmurHash3 x86 32-bit over `bytes`.
///
/// Tail bytes (length not a multiple of 4) follow the reference algorithm; Java's byte-wise
/// `hashBytes` mixes each tail byte separately instead, but Paimon never hashes such input.
pub fn murmur3_32(bytes: &[u8], seed: u32) -> u32 {
    let mut chunks = bytes.chunks_exact(4);
    let mut h = seed;
    for word in &mut chunks {
        let k = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        h = mix_h(h, mix_k(k));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let k = tail
            .iter()
            .rev()
            .fold(0u32, |acc, b| (acc << 8) | u32::from(*b));
        h ^= mix_k(k);
    }
    // The reference algorithm mixes in the length modulo 2^32.
    fmix(h ^ bytes.len() as u32)
}

/// Java `MurmurHashUtils.hashBytes` (seed 42): like [`murmur3_32`] over little-endian words,
/// but each tail byte (sign-extended) is mixed in as a word of its own, and the result is
/// Java's signed int. `BinaryString.hashCode()` of a string's UTF-8 bytes.
pub fn java_hash_bytes(bytes: &[u8]) -> i32 {
    let mut chunks = bytes.chunks_exact(4);
    let mut h = ROW_HASH_SEED;
    for word in &mut chunks {
        let k = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        h = mix_h(h, mix_k(k));
    }
    for b in chunks.remainder() {
        h = mix_h(h, mix_k(i32::from(*b as i8) as u32));
    }
    fmix(h ^ bytes.len() as u32) as i32
}

/// Java `BinaryRow.hashCode()` of raw row bytes (no arity prefix).
pub fn hash_row(row_bytes: &[u8]) -> i32 {
    // Reinterpreting the bits as Java's signed int is the intent.
    murmur3_32(row_bytes, ROW_HASH_SEED) as i32
}

/// `abs(hash % num_buckets)` with Java's truncating remainder.
///
/// `num_buckets` must be positive (Java asserts it); 0 yields bucket 0 instead of Java's
/// division error, and negative counts behave as their absolute value.
pub fn bucket_of_hash(hash: i32, num_buckets: i32) -> i32 {
    hash.checked_rem(num_buckets).map_or(0, i32::abs)
}

/// Bucket of a bucket-key row: encode, hash, reduce.
pub fn bucket_of(values: &[Datum], types: &[DataType], num_buckets: i32) -> Result<i32> {
    if num_buckets <= 0 {
        return Err(Error::Invalid(format!(
            "bucket count {num_buckets} must be positive"
        )));
    }
    let row = encode_row(values, types)?;
    Ok(bucket_of_hash(hash_row(&row), num_buckets))
}

fn mix_k(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

fn mix_h(h: u32, k: u32) -> u32 {
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TypeKind;

    fn int() -> DataType {
        DataType::new(TypeKind::Int)
    }

    fn s(v: &str) -> Datum {
        Datum::String(v.to_string())
    }

    /// One row of the format doc's §7.3 table: values, hash as u32, buckets for N=4 and N=10.
    fn check(values: &[Datum], types: &[DataType], hash: u32, n4: i32, n10: i32) {
        let row = encode_row(values, types).unwrap();
        assert_eq!(hash_row(&row) as u32, hash, "{values:?}");
        assert_eq!(bucket_of(values, types, 4).unwrap(), n4, "{values:?} N=4");
        assert_eq!(
            bucket_of(values, types, 10).unwrap(),
            n10,
            "{values:?} N=10"
        );
    }

    #[test]
    fn doc_table_7_3() {
        check(&[Datum::Int(1)], &[int()], 0x5759_F99E, 2, 8);
        check(&[Datum::Int(2)], &[int()], 0x4FE4_BBF0, 0, 4);
        check(&[Datum::Int(3)], &[int()], 0xD206_E547, 1, 5);
        check(&[Datum::Int(7)], &[int()], 0xEB3F_5E0D, 3, 1);
        check(&[Datum::Int(42)], &[int()], 0x361C_40B5, 1, 7);
        check(&[Datum::Int(-1)], &[int()], 0x4392_B1E3, 3, 7);
        check(&[Datum::Null], &[int()], 0x97CA_AC20, 0, 4);
        check(
            &[Datum::BigInt(1)],
            &[DataType::new(TypeKind::BigInt)],
            0x5759_F99E,
            2,
            8,
        );
        let string = [DataType::string()];
        check(&[s("a")], &string, 0x3839_545E, 2, 6);
        check(&[s("hello")], &string, 0x0E86_E932, 2, 6);
        check(&[s("paimon")], &string, 0x59B2_C508, 0, 2);
        check(&[s("hello world!")], &string, 0x2458_F823, 3, 7);
        check(&[s("abcdefgh")], &string, 0xCDB5_3DCE, 2, 8);
        check(
            &[Datum::Int(1), s("hello")],
            &[int(), DataType::string()],
            0xB5D6_BE46,
            2,
            6,
        );
    }

    #[test]
    fn signed_hash_values_from_the_doc() {
        let row = encode_row(&[Datum::Int(3)], &[int()]).unwrap();
        assert_eq!(hash_row(&row), -771_300_025);
        assert_eq!(bucket_of_hash(-771_300_025, 4), 1);
        assert_eq!(bucket_of_hash(-1_748_325_344, 10), 4);
    }

    #[test]
    fn murmur3_reference_vectors() {
        assert_eq!(murmur3_32(b"", 0), 0);
        assert_eq!(murmur3_32(b"", 1), 0x514E_28B7);
        assert_eq!(murmur3_32(b"", 0xffff_ffff), 0x81F1_6F39);
        assert_eq!(murmur3_32(&[0xff, 0xff, 0xff, 0xff], 0), 0x7629_3B50);
        assert_eq!(murmur3_32(&[0x21, 0x43, 0x65, 0x87], 0), 0xF55B_516B);
        assert_eq!(murmur3_32(&[0x21, 0x43, 0x65], 0), 0x7E4A_8634);
        assert_eq!(murmur3_32(&[0x21, 0x43], 0), 0xA0F7_B07A);
        assert_eq!(murmur3_32(&[0x21], 0), 0x7266_1CF4);
        assert_eq!(murmur3_32(b"Hello, world!", 1234), 0xFAF6_CDB3);
        assert_eq!(
            murmur3_32(b"The quick brown fox jumps over the lazy dog", 0x9747_b28c),
            0x2FA8_26CD
        );
    }

    #[test]
    fn bucket_edge_cases() {
        assert_eq!(bucket_of_hash(i32::MIN, 4), 0);
        assert_eq!(bucket_of_hash(i32::MIN, 3), 2);
        assert_eq!(bucket_of_hash(i32::MIN, i32::MAX), 1);
        assert_eq!(bucket_of_hash(i32::MIN, -1), 0);
        assert_eq!(bucket_of_hash(5, 0), 0);
        assert!(matches!(
            bucket_of(&[Datum::Int(1)], &[int()], 0),
            Err(Error::Invalid(_))
        ));
    }
}
