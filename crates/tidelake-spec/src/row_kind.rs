//! Paimon's `RowKind` (Java `org.apache.paimon.types.RowKind`): the change a record carries.
//! Stored as the `_VALUE_KIND` TINYINT of primary-key data files (its code) and shown as
//! `+I`, `-U`, `+U`, `-D` (its short string, as in `$audit_log`'s `rowkind` column).

/// The kind of a record; the discriminant is the stored `_VALUE_KIND` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum RowKind {
    /// `+I`, code 0.
    Insert = 0,
    /// `-U`, code 1.
    UpdateBefore = 1,
    /// `+U`, code 2.
    UpdateAfter = 2,
    /// `-D`, code 3.
    Delete = 3,
}

impl RowKind {
    /// Every kind, in code order.
    pub const ALL: [RowKind; 4] = [
        RowKind::Insert,
        RowKind::UpdateBefore,
        RowKind::UpdateAfter,
        RowKind::Delete,
    ];

    /// The kind stored as `code` in `_VALUE_KIND`, if valid.
    pub fn from_code(code: i8) -> Option<RowKind> {
        RowKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The `_VALUE_KIND` code of this kind.
    pub const fn code(self) -> i8 {
        self as i8
    }

    /// `-U` or `-D` (Java `RowKind.isRetract`).
    pub fn is_retract(self) -> bool {
        matches!(self, RowKind::UpdateBefore | RowKind::Delete)
    }

    /// `+I` or `+U`.
    pub fn is_add(self) -> bool {
        !self.is_retract()
    }

    /// `+I`, `-U`, `+U` or `-D` (Java `RowKind.shortString`).
    pub fn short_string(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }

    /// The kind whose short string is `s` (Java `RowKind.fromShortString`).
    pub fn from_short_string(s: &str) -> Option<RowKind> {
        RowKind::ALL.into_iter().find(|k| k.short_string() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_short_strings_are_javas() {
        let expected = [
            (RowKind::Insert, 0, "+I"),
            (RowKind::UpdateBefore, 1, "-U"),
            (RowKind::UpdateAfter, 2, "+U"),
            (RowKind::Delete, 3, "-D"),
        ];
        for (kind, code, short) in expected {
            assert_eq!((kind.code(), kind.short_string()), (code, short));
            assert_eq!(RowKind::from_code(code), Some(kind));
            assert_eq!(RowKind::from_short_string(short), Some(kind));
        }
        assert_eq!(RowKind::from_code(4), None);
        assert_eq!(RowKind::from_code(-1), None);
        assert_eq!(RowKind::from_short_string("+X"), None);
        assert!(RowKind::Delete.is_retract() && RowKind::UpdateBefore.is_retract());
        assert!(RowKind::Insert.is_add() && RowKind::UpdateAfter.is_add());
    }
}
