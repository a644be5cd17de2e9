//! Tokens and the lexer of the selector language (the token section of RocketMQ's
//! `SelectorParser.jj`): keywords in any case, longest match with the earlier token
//! winning a tie, `--` and `/* */` comments, and JavaCC's positions and lexical error
//! text (columns count UTF-16 code units, a tab advances to the next multiple of 8).
//!
//! The lexer is lazy, as JavaCC's token manager is: the parser asks for one token at a
//! time, so a bad character after the last token the grammar needs is never looked at
//! (`a = 1 b #` is accepted, `a = 1 #` is not), exactly as in RocketMQ.

use crate::java::add_escapes;

/// Token kinds, numbered as JavaCC numbers them (`SelectorParserConstants`): the
/// numbers order the "Was expecting" lists of syntax errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub(crate) enum Kind {
    Eof = 0,
    Not = 8,
    And = 9,
    Or = 10,
    Between = 11,
    In = 12,
    True = 13,
    False = 14,
    Null = 15,
    Is = 16,
    Contains = 17,
    StartsWith = 18,
    EndsWith = 19,
    Decimal = 20,
    Float = 21,
    Str = 23,
    Id = 24,
    Eq = 25,
    Ne = 26,
    Gt = 27,
    Ge = 28,
    Lt = 29,
    Le = 30,
    LParen = 31,
    Comma = 32,
    RParen = 33,
    Plus = 34,
    Minus = 35,
}

impl Kind {
    /// Every kind, in number order.
    pub(crate) const ALL: [Kind; 28] = [
        Kind::Eof,
        Kind::Not,
        Kind::And,
        Kind::Or,
        Kind::Between,
        Kind::In,
        Kind::True,
        Kind::False,
        Kind::Null,
        Kind::Is,
        Kind::Contains,
        Kind::StartsWith,
        Kind::EndsWith,
        Kind::Decimal,
        Kind::Float,
        Kind::Str,
        Kind::Id,
        Kind::Eq,
        Kind::Ne,
        Kind::Gt,
        Kind::Ge,
        Kind::Lt,
        Kind::Le,
        Kind::LParen,
        Kind::Comma,
        Kind::RParen,
        Kind::Plus,
        Kind::Minus,
    ];

    /// JavaCC's `tokenImage` of the kind.
    pub(crate) fn image(self) -> &'static str {
        match self {
            Kind::Eof => "<EOF>",
            Kind::Not => "\"NOT\"",
            Kind::And => "\"AND\"",
            Kind::Or => "\"OR\"",
            Kind::Between => "\"BETWEEN\"",
            Kind::In => "\"IN\"",
            Kind::True => "\"TRUE\"",
            Kind::False => "\"FALSE\"",
            Kind::Null => "\"NULL\"",
            Kind::Is => "\"IS\"",
            Kind::Contains => "\"CONTAINS\"",
            Kind::StartsWith => "\"STARTSWITH\"",
            Kind::EndsWith => "\"ENDSWITH\"",
            Kind::Decimal => "<DECIMAL_LITERAL>",
            Kind::Float => "<FLOATING_POINT_LITERAL>",
            Kind::Str => "<STRING_LITERAL>",
            Kind::Id => "<ID>",
            Kind::Eq => "\"=\"",
            Kind::Ne => "\"<>\"",
            Kind::Gt => "\">\"",
            Kind::Ge => "\">=\"",
            Kind::Lt => "\"<\"",
            Kind::Le => "\"<=\"",
            Kind::LParen => "\"(\"",
            Kind::Comma => "\",\"",
            Kind::RParen => "\")\"",
            Kind::Plus => "\"+\"",
            Kind::Minus => "\"-\"",
        }
    }
}

/// Reserved words (matched in any case; a longer identifier is an identifier).
const KEYWORDS: [(&str, Kind); 12] = [
    ("NOT", Kind::Not),
    ("AND", Kind::And),
    ("OR", Kind::Or),
    ("BETWEEN", Kind::Between),
    ("IN", Kind::In),
    ("TRUE", Kind::True),
    ("FALSE", Kind::False),
    ("NULL", Kind::Null),
    ("IS", Kind::Is),
    ("CONTAINS", Kind::Contains),
    ("STARTSWITH", Kind::StartsWith),
    ("ENDSWITH", Kind::EndsWith),
];

/// One token: its kind and where its text is (UTF-16 code unit indexes) and begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    pub line: u32,
    pub column: u32,
}

/// A lexical error (JavaCC's `TokenMgrError`), with what its message needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LexError {
    pub line: u32,
    pub column: u32,
    /// The input ended while a token could still have matched.
    pub eof: bool,
    /// The code unit the token manager gave up on (not shown at the end of input).
    pub cur: u16,
    /// The text of the failed token before that unit.
    pub after: Vec<u16>,
}

impl std::fmt::Display for LexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Lexical error at line {}, column {}.  Encountered: ",
            self.line, self.column
        )?;
        if self.eof {
            f.write_str("<EOF> ")?;
        } else {
            write!(f, "\"{}\" ({}), ", add_escapes(&[self.cur]), self.cur)?;
        }
        write!(f, "after : \"{}\"", add_escapes(&self.after))
    }
}

/// The lexer over the expression's UTF-16 code units.
#[derive(Debug)]
pub(crate) struct Lexer {
    units: Vec<u16>,
    /// (line, column) of each unit, as JavaCC's `SimpleCharStream` counts them.
    positions: Vec<(u32, u32)>,
    pos: usize,
}

/// What a token attempt at one place found.
enum Attempt {
    /// A token (or, for `None`, white space or a comment) of this many units.
    Match(Option<Kind>, usize),
    /// Nothing matched: the token manager read `read` units (the last one killed the
    /// match, or the input ended while one was still possible).
    Fail { read: usize },
}

const TAB_SIZE: u32 = 8;

impl Lexer {
    pub(crate) fn new(text: &str) -> Lexer {
        let units: Vec<u16> = text.encode_utf16().collect();
        let mut positions = Vec::with_capacity(units.len());
        let (mut line, mut column) = (1u32, 0u32);
        let (mut prev_cr, mut prev_lf) = (false, false);
        for &u in &units {
            column += 1;
            if prev_lf {
                prev_lf = false;
                column = 1;
                line += 1;
            } else if prev_cr {
                prev_cr = false;
                if u == u16::from(b'\n') {
                    prev_lf = true;
                } else {
                    column = 1;
                    line += 1;
                }
            }
            match u {
                0x0D => prev_cr = true,
                0x0A => prev_lf = true,
                0x09 => {
                    column -= 1;
                    column += TAB_SIZE - (column % TAB_SIZE);
                }
                _ => {}
            }
            positions.push((line, column));
        }
        Lexer {
            units,
            positions,
            pos: 0,
        }
    }

    /// The code units of `start..end`.
    pub(crate) fn units(&self, start: usize, end: usize) -> &[u16] {
        &self.units[start..end]
    }

    /// The text of a token.
    pub(crate) fn text(&self, t: &Token) -> String {
        String::from_utf16_lossy(&self.units[t.start..t.end])
    }

    /// The next token; at the end, an EOF token placed at the last unit (line 0,
    /// column 0 for an empty input), as JavaCC places it.
    pub(crate) fn next_token(&mut self) -> Result<Token, LexError> {
        loop {
            let start = self.pos;
            if start >= self.units.len() {
                let (line, column) = self.positions.last().copied().unwrap_or((0, 0));
                return Ok(Token {
                    kind: Kind::Eof,
                    start,
                    end: start,
                    line,
                    column,
                });
            }
            match self.attempt(start) {
                Attempt::Match(kind, len) => {
                    self.pos = start + len;
                    if let Some(kind) = kind {
                        let (line, column) = self.positions[start];
                        return Ok(Token {
                            kind,
                            start,
                            end: start + len,
                            line,
                            column,
                        });
                    }
                }
                Attempt::Fail { read } => return Err(self.error(start, read)),
            }
        }
    }

    fn error(&self, start: usize, read: usize) -> LexError {
        let last = start + read - 1;
        let (mut line, mut column) = self.positions[last];
        let cur = self.units[last];
        let eof = start + read >= self.units.len();
        let after = if eof {
            if cur == 0x0A || cur == 0x0D {
                line += 1;
                column = 0;
            } else {
                column += 1;
            }
            if read <= 1 {
                Vec::new()
            } else {
                self.units[start..=last].to_vec()
            }
        } else if read <= 1 {
            Vec::new()
        } else {
            self.units[start..last].to_vec()
        };
        LexError {
            line,
            column,
            eof,
            cur,
            after,
        }
    }

    fn unit(&self, i: usize) -> Option<u16> {
        self.units.get(i).copied()
    }

    fn is(&self, i: usize, c: u8) -> bool {
        self.unit(i) == Some(u16::from(c))
    }

    fn is_digit(&self, i: usize) -> bool {
        self.unit(i).is_some_and(|u| (0x30..=0x39).contains(&u))
    }

    fn attempt(&self, s: usize) -> Attempt {
        let Some(c) = self.unit(s) else {
            return Attempt::Fail { read: 0 };
        };
        let byte = u8::try_from(c).ok();
        let one = |k| Attempt::Match(Some(k), 1);
        match byte {
            Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0C) => Attempt::Match(None, 1),
            Some(b'=') => one(Kind::Eq),
            Some(b'(') => one(Kind::LParen),
            Some(b')') => one(Kind::RParen),
            Some(b',') => one(Kind::Comma),
            Some(b'+') => one(Kind::Plus),
            Some(b'<') if self.is(s + 1, b'>') => Attempt::Match(Some(Kind::Ne), 2),
            Some(b'<') if self.is(s + 1, b'=') => Attempt::Match(Some(Kind::Le), 2),
            Some(b'<') => one(Kind::Lt),
            Some(b'>') if self.is(s + 1, b'=') => Attempt::Match(Some(Kind::Ge), 2),
            Some(b'>') => one(Kind::Gt),
            Some(b'-') => self.minus(s),
            Some(b'/') => self.block_comment(s),
            Some(b'\'') => self.string(s),
            Some(b'.') => {
                if self.is_digit(s + 1) {
                    let end = self.exponent(self.digits(s + 1));
                    Attempt::Match(Some(Kind::Float), end - s)
                } else {
                    let read = if self.unit(s + 1).is_some() { 2 } else { 1 };
                    Attempt::Fail { read }
                }
            }
            Some(b'0'..=b'9') => self.number(s),
            Some(b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$') => self.word(s),
            _ => Attempt::Fail { read: 1 },
        }
    }

    /// `-`, or a `--` comment that ends at a line break (without one it is just `-`).
    fn minus(&self, s: usize) -> Attempt {
        if self.is(s + 1, b'-') {
            let mut i = s + 2;
            while let Some(u) = self.unit(i) {
                if u == 0x0A {
                    return Attempt::Match(None, i + 1 - s);
                }
                if u == 0x0D {
                    let end = if self.is(i + 1, b'\n') { i + 2 } else { i + 1 };
                    return Attempt::Match(None, end - s);
                }
                i += 1;
            }
        }
        Attempt::Match(Some(Kind::Minus), 1)
    }

    /// `/* ... */`, up to the first `*/` after the opening.
    fn block_comment(&self, s: usize) -> Attempt {
        if !self.is(s + 1, b'*') {
            let read = if self.unit(s + 1).is_some() { 2 } else { 1 };
            return Attempt::Fail { read };
        }
        let mut i = s + 2;
        let mut star = false;
        while let Some(u) = self.unit(i) {
            if star && u == u16::from(b'/') {
                return Attempt::Match(None, i + 1 - s);
            }
            star = u == u16::from(b'*');
            i += 1;
        }
        Attempt::Fail { read: i - s }
    }

    /// `'...'` with `''` for a quote: the longest match.
    fn string(&self, s: usize) -> Attempt {
        let mut i = s + 1;
        let mut longest = None;
        while let Some(u) = self.unit(i) {
            if u == u16::from(b'\'') {
                longest = Some(i + 1 - s);
                if self.is(i + 1, b'\'') {
                    i += 2;
                    continue;
                }
                break;
            }
            i += 1;
        }
        match longest {
            Some(len) => Attempt::Match(Some(Kind::Str), len),
            None => Attempt::Fail { read: i - s },
        }
    }

    fn digits(&self, mut i: usize) -> usize {
        while self.is_digit(i) {
            i += 1;
        }
        i
    }

    /// `[eE][+-]?[0-9]+` at `i` if there is a whole one: the end of it, else `i`.
    fn exponent(&self, i: usize) -> usize {
        if !(self.is(i, b'e') || self.is(i, b'E')) {
            return i;
        }
        let j = if self.is(i + 1, b'+') || self.is(i + 1, b'-') {
            i + 2
        } else {
            i + 1
        };
        if self.is_digit(j) { self.digits(j) } else { i }
    }

    /// `0 | [1-9][0-9]*[lL]?` or a floating-point literal, whichever is longer.
    fn number(&self, s: usize) -> Attempt {
        let int_end = self.digits(s);
        let decimal = if self.is(s, b'0') {
            s + 1
        } else if self.is(int_end, b'l') || self.is(int_end, b'L') {
            int_end + 1
        } else {
            int_end
        };
        let float = if self.is(int_end, b'.') {
            Some(self.exponent(self.digits(int_end + 1)))
        } else {
            let e = self.exponent(int_end);
            (e > int_end).then_some(e)
        };
        match float {
            Some(f) if f > decimal => Attempt::Match(Some(Kind::Float), f - s),
            _ => Attempt::Match(Some(Kind::Decimal), decimal - s),
        }
    }

    /// An identifier, or a keyword when the whole word is one.
    fn word(&self, s: usize) -> Attempt {
        let mut i = s + 1;
        while let Some(u) = self.unit(i) {
            let ok =
                u8::try_from(u).is_ok_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
            if !ok {
                break;
            }
            i += 1;
        }
        let word = &self.units[s..i];
        let kind = KEYWORDS
            .iter()
            .find(|(k, _)| {
                k.len() == word.len()
                    && k.bytes()
                        .zip(word)
                        .all(|(a, &b)| u16::from(a) == b || u16::from(a.to_ascii_lowercase()) == b)
            })
            .map_or(Kind::Id, |(_, kind)| *kind);
        Attempt::Match(Some(kind), i - s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Kind> {
        let mut lx = Lexer::new(text);
        let mut out = Vec::new();
        loop {
            let t = lx.next_token().unwrap();
            out.push(t.kind);
            if t.kind == Kind::Eof {
                return out;
            }
        }
    }

    fn error(text: &str) -> String {
        let mut lx = Lexer::new(text);
        loop {
            match lx.next_token() {
                Ok(t) if t.kind == Kind::Eof => panic!("no error in {text:?}"),
                Ok(_) => {}
                Err(e) => return e.to_string(),
            }
        }
    }

    #[test]
    fn tokens_by_longest_match() {
        use Kind::*;
        assert_eq!(kinds("a=1"), [Id, Eq, Decimal, Eof]);
        assert_eq!(kinds("not NOTE nOt"), [Not, Id, Not, Eof]);
        assert_eq!(kinds("0123"), [Decimal, Decimal, Eof]);
        assert_eq!(
            kinds("0L 1L 1.5 .5 5. 1e3 1E+3 1e 1e+ 01.5"),
            [
                Decimal, Id, Decimal, Float, Float, Float, Float, Float, Decimal, Id, Decimal, Id,
                Plus, Float, Eof
            ]
        );
        assert_eq!(
            kinds("<> <= < >= > ( ) , + -"),
            [Ne, Le, Lt, Ge, Gt, LParen, RParen, Comma, Plus, Minus, Eof]
        );
        assert_eq!(kinds("'it''s' ''"), [Str, Str, Eof]);
        assert_eq!(kinds("a -- c\n b /* x * / **/ c"), [Id, Id, Id, Eof]);
        // A line comment needs its line break; without one it is two minus signs.
        assert_eq!(kinds("a --b"), [Id, Minus, Minus, Id, Eof]);
        assert_eq!(kinds("$x _y z9"), [Id, Id, Id, Eof]);
    }

    #[test]
    fn positions_as_javacc_counts_them() {
        let mut lx = Lexer::new("a\tb\r\nc\rd\n\ne");
        let mut at = Vec::new();
        loop {
            let t = lx.next_token().unwrap();
            at.push((t.line, t.column));
            if t.kind == Kind::Eof {
                break;
            }
        }
        assert_eq!(at, [(1, 1), (1, 9), (2, 1), (3, 1), (5, 1), (5, 1)]);
        assert_eq!(Lexer::new("").next_token().unwrap().line, 0);
    }

    #[test]
    fn lexical_errors_read_like_javacc() {
        assert_eq!(
            error("a # b"),
            "Lexical error at line 1, column 3.  Encountered: \"#\" (35), after : \"\""
        );
        assert_eq!(
            error("a #"),
            "Lexical error at line 1, column 4.  Encountered: <EOF> after : \"\""
        );
        assert_eq!(
            error("a = 'abc"),
            "Lexical error at line 1, column 9.  Encountered: <EOF> after : \"\\'abc\""
        );
        assert_eq!(
            error("a.b "),
            "Lexical error at line 1, column 3.  Encountered: \"b\" (98), after : \".\""
        );
        assert_eq!(
            error("/x"),
            "Lexical error at line 1, column 3.  Encountered: <EOF> after : \"/x\""
        );
        assert_eq!(
            error("x /* open\n"),
            "Lexical error at line 2, column 0.  Encountered: <EOF> after : \"/* open\\n\""
        );
        assert_eq!(
            error("é"),
            "Lexical error at line 1, column 2.  Encountered: <EOF> after : \"\""
        );
        assert_eq!(
            error("é "),
            "Lexical error at line 1, column 1.  Encountered: \"\\u00e9\" (233), after : \"\""
        );
    }
}
