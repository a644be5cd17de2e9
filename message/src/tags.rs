//! The tags hash: a consume-queue unit stores `tagsCode`, Java's `String.hashCode()` of
//! the message's `TAGS`, and a subscription lists the same hash of each tag it wants, so
//! the broker filters pulls by comparing numbers. Both sides must hash exactly as Java
//! does (over UTF-16 code units, wrapping), whoever wrote the message or subscription.

/// Java's `String.hashCode()` of `s`, computed over its UTF-16 code units.
#[must_use]
pub fn hash_code(s: &str) -> i32 {
    hash_code_extend(0, s)
}

/// The hash code of the concatenation of a string whose hash code is `h` and `s`,
/// without building it (the index hashes `topic#key` this way).
#[must_use]
pub fn hash_code_extend(h: i32, s: &str) -> i32 {
    s.encode_utf16().fold(h, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The tagsCode of a message's `TAGS` (`MessageExtBrokerInner.tagsString2tagsCode`):
/// its hash code sign-extended, 0 when there are none or they are empty.
#[must_use]
pub fn tags_code(tags: Option<&str>) -> i64 {
    tags.filter(|t| !t.is_empty())
        .map_or(0, |t| i64::from(hash_code(t)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hash_code_matches_java() {
        // Values of Java's "TagA".hashCode() etc.
        assert_eq!(hash_code(""), 0);
        assert_eq!(hash_code("hello"), 99_162_322);
        assert_eq!(hash_code("TagA"), 2_598_919);
        assert_eq!(hash_code("ééé"), 231_369);
        assert_eq!(hash_code("中"), 20_013);
        // A non-BMP char is two UTF-16 units: "😀" = \ud83d\ude00.
        assert_eq!(hash_code("😀"), 0xd83d * 31 + 0xde00);
        assert_eq!(hash_code("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn tags_codes_follow_rocketmq() {
        assert_eq!(tags_code(None), 0);
        assert_eq!(tags_code(Some("")), 0);
        assert_eq!(tags_code(Some("TagA")), 2_598_919);
        // Negative hashes are sign-extended.
        assert_eq!(tags_code(Some("polygenelubricants")), i64::from(i32::MIN));
    }

    proptest! {
        #[test]
        fn extend_is_concatenation(a in "\\PC{0,20}", b in "\\PC{0,20}") {
            prop_assert_eq!(hash_code_extend(hash_code(&a), &b), hash_code(&format!("{a}{b}")));
        }
    }
}
