//! The parser: RocketMQ's `SelectorParser.jj` grammar by recursive descent, building the
//! expression as it goes and checking each node when it is built, as RocketMQ's
//! `create*` factories do, so the first error RocketMQ would report is the one we
//! report.
//!
//! Precedence, loosest first: OR; AND; `=`, `<>`, IS [NOT] NULL; `>`, `>=`, `<`, `<=`,
//! [NOT] CONTAINS / STARTSWITH / ENDSWITH, [NOT] BETWEEN, [NOT] IN; unary `+`, `-`,
//! NOT; literals, properties, parentheses. Each level is a left-associative loop. The
//! grammar has no end-of-input rule: parsing stops where the expression can no longer
//! continue and whatever follows is never read.
//!
//! Syntax errors carry JavaCC's own "Encountered ... Was expecting one of" text, so the
//! parser keeps JavaCC's bookkeeping: a generation counter bumped by every consumed
//! token, the generation at which each choice point last fell through (`la1`), and the
//! two-token lookaheads (`NOT CONTAINS`, `IS NULL`, ...) and the `+` lookahead, which
//! are replayed when an error is built. The `+` lookahead is a full syntactic scan of
//! what follows (JavaCC's `LOOKAHEAD("+" unaryExpr())`), done by a backtracking
//! recognizer that tries alternatives in the grammar's order.

use std::cmp::Ordering;

use crate::MAX_DEPTH;
use crate::ast::{CmpOp, Const, Expr, InList, TextOp};
use crate::error::{
    BOOLEAN_TO_STRING_CAST, ErrorKind, NUMBER_FORMAT_EXCEPTION, PARSE_EXCEPTION, ParseError,
    RUNTIME_EXCEPTION, TOKEN_MGR_ERROR,
};
use crate::eval::{CompareError, Value, compare};
use crate::java::{add_escapes, double_to_string, parse_double};
use crate::lexer::{Kind, LexError, Lexer, Token};

/// The tokens each JavaCC choice point (`jj_la1[i]`) would have taken.
const LA1_FIRST: [&[Kind]; 16] = {
    use Kind::*;
    [
        &[Or],
        &[And],
        &[Is, Eq, Ne],
        &[Eq, Ne],
        &[Is],
        &[
            Not, Between, In, Contains, StartsWith, EndsWith, Gt, Ge, Lt, Le,
        ],
        &[Comma],
        &[Comma],
        &[Contains, Gt, Ge, Lt, Le],
        &[StartsWith],
        &[EndsWith],
        &[Between],
        &[In],
        &[
            Not, True, False, Null, Decimal, Float, Str, Id, LParen, Minus,
        ],
        &[True, False, Null, Decimal, Float, Str, Id, LParen],
        &[True, False, Null, Decimal, Float, Str],
    ]
};

/// The lookaheads, numbered as JavaCC's `jj_2_1` .. `jj_2_7`.
#[derive(Debug, Clone, Copy)]
enum Look {
    IsNull = 0,
    NotContains = 1,
    NotStartsWith = 2,
    NotEndsWith = 3,
    NotBetween = 4,
    NotIn = 5,
    Plus = 6,
}

/// A lookahead as JavaCC remembers it (`JJCalls`), for replaying it in an error.
#[derive(Debug, Clone, Copy, Default)]
struct Call {
    generation: u64,
    first: usize,
    arg: i64,
}

/// A syntactic scan in progress (JavaCC's `jj_scanpos`, `jj_lastpos`, `jj_la`).
#[derive(Debug)]
struct Scan {
    pos: usize,
    last: usize,
    la: i64,
    depth: usize,
    record: bool,
}

/// How a scan ends early: the lookahead has seen enough, or the lexer failed.
enum Stop {
    Success,
    Fail(ParseError),
}

impl From<ParseError> for Stop {
    fn from(e: ParseError) -> Self {
        Stop::Fail(e)
    }
}

/// The token sequences an error lists (JavaCC's `jj_expentries` and
/// `jj_add_error_token`, including its quirk of dropping a sequence whose length
/// differs from the last one listed).
#[derive(Debug)]
struct Expected {
    entries: Vec<Vec<Kind>>,
    last: [Kind; 100],
    end: usize,
}

impl Default for Expected {
    fn default() -> Self {
        Expected {
            entries: Vec::new(),
            last: [Kind::Eof; 100],
            end: 0,
        }
    }
}

impl Expected {
    fn add(&mut self, kind: Kind, pos: usize) {
        if pos >= 100 {
            return;
        }
        if pos == self.end + 1 {
            self.last[self.end] = kind;
            self.end += 1;
        } else if self.end != 0 {
            let entry = self.last[..self.end].to_vec();
            let mut exists = false;
            for old in &self.entries {
                exists = true;
                if old.len() == entry.len() {
                    if old.iter().zip(&entry).any(|(a, b)| a != b) {
                        exists = false;
                    }
                    if exists {
                        break;
                    }
                }
            }
            if !exists {
                self.entries.push(entry);
            }
            if pos != 0 {
                self.end = pos;
                self.last[pos - 1] = kind;
            }
        }
    }
}

/// One alternative of a scanned choice or loop body.
type ScanFn<'a> = &'a dyn Fn(&mut Parser, &mut Scan) -> Result<bool, Stop>;

/// A node with its depth (nodes deeper than [`MAX_DEPTH`] are refused).
struct N {
    e: Expr,
    d: usize,
}

fn too_deep() -> ParseError {
    ParseError::new(
        ErrorKind::TooDeep,
        format!("the expression is nested deeper than {MAX_DEPTH} levels"),
    )
}

fn invalid(message: String) -> ParseError {
    ParseError::new(ErrorKind::Invalid, message)
}

fn runtime(message: &str) -> ParseError {
    invalid(format!("{RUNTIME_EXCEPTION}: {message}"))
}

fn lexical(e: &LexError) -> ParseError {
    ParseError::new(ErrorKind::Lexical, format!("{TOKEN_MGR_ERROR}: {e}"))
}

fn node(e: Expr, d: usize) -> Result<N, ParseError> {
    if d > MAX_DEPTH {
        return Err(too_deep());
    }
    Ok(N { e, d })
}

/// A parse in progress.
pub(crate) struct Parser {
    lx: Lexer,
    /// Tokens read so far; `toks[0]` stands for JavaCC's empty start token.
    toks: Vec<Token>,
    cur: usize,
    generation: u64,
    la1: [Option<u64>; 16],
    expected_kind: Option<Kind>,
    calls: [Vec<Call>; 7],
    names: Vec<Box<str>>,
    depth: usize,
    expected: Option<Expected>,
}

impl Parser {
    pub(crate) fn new(text: &str) -> Self {
        let start = Token {
            kind: Kind::Eof,
            start: 0,
            end: 0,
            line: 0,
            column: 0,
        };
        Parser {
            lx: Lexer::new(text),
            toks: vec![start],
            cur: 0,
            generation: 0,
            la1: [None; 16],
            expected_kind: None,
            calls: Default::default(),
            names: Vec::new(),
            depth: 0,
            expected: None,
        }
    }

    /// `JmsSelector`: the whole expression, which must be boolean (or a property).
    pub(crate) fn parse(mut self) -> Result<(Expr, Vec<Box<str>>), ParseError> {
        let e = self.or_expr()?;
        let e = self.as_boolean(e)?;
        Ok((e.e, self.names))
    }

    // ---- tokens -------------------------------------------------------------------

    fn token(&mut self, i: usize) -> Result<Token, ParseError> {
        while self.toks.len() <= i {
            let t = self.lx.next_token().map_err(|e| lexical(&e))?;
            self.toks.push(t);
        }
        Ok(self.toks[i])
    }

    fn ntk(&mut self) -> Result<Kind, ParseError> {
        Ok(self.token(self.cur + 1)?.kind)
    }

    fn consume(&mut self, kind: Kind) -> Result<Token, ParseError> {
        let t = self.token(self.cur + 1)?;
        if t.kind == kind {
            self.cur += 1;
            self.generation += 1;
            Ok(t)
        } else {
            self.expected_kind = Some(kind);
            Err(self.syntax_error())
        }
    }

    /// JavaCC's `jj_consume_token(-1)`: nothing fits here.
    #[cold]
    #[inline(never)]
    fn fail(&mut self) -> ParseError {
        self.expected_kind = None;
        self.syntax_error()
    }

    fn fell_through(&mut self, choice: usize) {
        self.la1[choice] = Some(self.generation);
    }

    // ---- grammar ------------------------------------------------------------------

    fn or_expr(&mut self) -> Result<N, ParseError> {
        let mut left = self.and_expr()?;
        loop {
            if self.ntk()? != Kind::Or {
                self.fell_through(0);
                return Ok(left);
            }
            self.consume(Kind::Or)?;
            let right = self.and_expr()?;
            let l = self.as_boolean(left)?;
            let r = self.as_boolean(right)?;
            left = logic(l, r, true)?;
        }
    }

    fn and_expr(&mut self) -> Result<N, ParseError> {
        let mut left = self.equality_expr()?;
        loop {
            if self.ntk()? != Kind::And {
                self.fell_through(1);
                return Ok(left);
            }
            self.consume(Kind::And)?;
            let right = self.equality_expr()?;
            let l = self.as_boolean(left)?;
            let r = self.as_boolean(right)?;
            left = logic(l, r, false)?;
        }
    }

    fn equality_expr(&mut self) -> Result<N, ParseError> {
        let mut left = self.comparison_expr()?;
        loop {
            let k = self.ntk()?;
            if !matches!(k, Kind::Is | Kind::Eq | Kind::Ne) {
                self.fell_through(2);
                return Ok(left);
            }
            match k {
                Kind::Eq => {
                    self.consume(k)?;
                    let right = self.comparison_expr()?;
                    left = self.create_equal(left, right)?;
                }
                Kind::Ne => {
                    self.consume(k)?;
                    let right = self.comparison_expr()?;
                    let eq = self.create_equal(left, right)?;
                    left = not(eq)?;
                }
                _ => {
                    self.fell_through(3);
                    if self.lookahead(Look::IsNull)? {
                        self.consume(Kind::Is)?;
                        self.consume(Kind::Null)?;
                        left = is_null(left)?;
                    } else if self.ntk()? == Kind::Is {
                        self.consume(Kind::Is)?;
                        self.consume(Kind::Not)?;
                        self.consume(Kind::Null)?;
                        left = not(is_null(left)?)?;
                    } else {
                        self.fell_through(4);
                        return Err(self.fail());
                    }
                }
            }
        }
    }

    fn comparison_expr(&mut self) -> Result<N, ParseError> {
        use Kind as K;
        let mut left = self.unary_expr()?;
        loop {
            let k = self.ntk()?;
            let continues = matches!(
                k,
                K::Not
                    | K::Between
                    | K::In
                    | K::Contains
                    | K::StartsWith
                    | K::EndsWith
                    | K::Gt
                    | K::Ge
                    | K::Lt
                    | K::Le
            );
            if !continues {
                self.fell_through(5);
                return Ok(left);
            }
            left = match k {
                K::Gt | K::Ge | K::Lt | K::Le => {
                    let op = match k {
                        K::Gt => CmpOp::Gt,
                        K::Ge => CmpOp::Ge,
                        K::Lt => CmpOp::Lt,
                        _ => CmpOp::Le,
                    };
                    self.consume(k)?;
                    let right = self.unary_expr()?;
                    self.create_cmp(op, left, right)?
                }
                K::Contains => {
                    self.consume(k)?;
                    let s = self.string_literal()?;
                    text(TextOp::Contains, false, left, s)?
                }
                _ => self.comparison_tail(left)?,
            };
        }
    }

    /// The rest of the comparison choice, in JavaCC's order: each plain keyword is
    /// tried before its NOT form's two-token lookahead.
    #[inline(never)]
    fn comparison_tail(&mut self, left: N) -> Result<N, ParseError> {
        use Kind as K;
        self.fell_through(8);
        if self.lookahead(Look::NotContains)? {
            return self.not_text(TextOp::Contains, left);
        }
        if self.ntk()? == K::StartsWith {
            self.consume(K::StartsWith)?;
            let s = self.string_literal()?;
            return text(TextOp::StartsWith, false, left, s);
        }
        self.fell_through(9);
        if self.lookahead(Look::NotStartsWith)? {
            return self.not_text(TextOp::StartsWith, left);
        }
        if self.ntk()? == K::EndsWith {
            self.consume(K::EndsWith)?;
            let s = self.string_literal()?;
            return text(TextOp::EndsWith, false, left, s);
        }
        self.fell_through(10);
        if self.lookahead(Look::NotEndsWith)? {
            return self.not_text(TextOp::EndsWith, left);
        }
        if self.ntk()? == K::Between {
            self.consume(K::Between)?;
            let low = self.unary_expr()?;
            self.consume(K::And)?;
            let high = self.unary_expr()?;
            return self.create_between(left, low, high);
        }
        self.fell_through(11);
        if self.lookahead(Look::NotBetween)? {
            self.consume(K::Not)?;
            self.consume(K::Between)?;
            let low = self.unary_expr()?;
            self.consume(K::And)?;
            let high = self.unary_expr()?;
            let lt = self.create_cmp(CmpOp::Lt, clone(&left), low)?;
            let gt = self.create_cmp(CmpOp::Gt, left, high)?;
            return logic(lt, gt, true);
        }
        if self.ntk()? == K::In {
            self.consume(K::In)?;
            let list = self.in_list(6)?;
            return self.create_in(left, list, false);
        }
        self.fell_through(12);
        if self.lookahead(Look::NotIn)? {
            self.consume(K::Not)?;
            self.consume(K::In)?;
            let list = self.in_list(7)?;
            return self.create_in(left, list, true);
        }
        Err(self.fail())
    }

    fn not_text(&mut self, op: TextOp, left: N) -> Result<N, ParseError> {
        self.consume(Kind::Not)?;
        self.consume(match op {
            TextOp::Contains => Kind::Contains,
            TextOp::StartsWith => Kind::StartsWith,
            TextOp::EndsWith => Kind::EndsWith,
        })?;
        let s = self.string_literal()?;
        text(op, true, left, s)
    }

    /// `( 'a' , 'b' ... )` after IN.
    #[inline(never)]
    fn in_list(&mut self, choice: usize) -> Result<Vec<Box<str>>, ParseError> {
        self.consume(Kind::LParen)?;
        let mut list = vec![self.string_literal()?];
        loop {
            if self.ntk()? != Kind::Comma {
                self.fell_through(choice);
                break;
            }
            self.consume(Kind::Comma)?;
            list.push(self.string_literal()?);
        }
        self.consume(Kind::RParen)?;
        Ok(list)
    }

    fn unary_expr(&mut self) -> Result<N, ParseError> {
        self.depth += 1;
        let r = if self.depth > MAX_DEPTH {
            Err(too_deep())
        } else {
            self.unary_inner()
        };
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> Result<N, ParseError> {
        use Kind as K;
        if self.lookahead(Look::Plus)? {
            self.consume(K::Plus)?;
            return self.unary_expr();
        }
        match self.ntk()? {
            K::Minus => {
                self.consume(K::Minus)?;
                let e = self.unary_expr()?;
                node(Expr::Negate(Box::new(e.e)), e.d + 1)
            }
            K::Not => {
                self.consume(K::Not)?;
                let e = self.unary_expr()?;
                let e = self.as_boolean(e)?;
                not(e)
            }
            K::True | K::False | K::Null | K::Decimal | K::Float | K::Str | K::Id | K::LParen => {
                self.primary_expr()
            }
            _ => {
                self.fell_through(13);
                Err(self.fail())
            }
        }
    }

    fn primary_expr(&mut self) -> Result<N, ParseError> {
        use Kind as K;
        match self.ntk()? {
            K::True | K::False | K::Null | K::Decimal | K::Float | K::Str => self.literal(),
            K::Id => {
                let t = self.consume(K::Id)?;
                let name = self.lx.text(&t);
                let slot = match self.names.iter().position(|n| **n == *name) {
                    Some(slot) => slot,
                    None => {
                        self.names.push(name.into_boxed_str());
                        self.names.len() - 1
                    }
                };
                node(Expr::Prop(slot), 1)
            }
            K::LParen => {
                self.consume(K::LParen)?;
                let e = self.or_expr()?;
                self.consume(K::RParen)?;
                Ok(e)
            }
            _ => {
                self.fell_through(14);
                Err(self.fail())
            }
        }
    }

    #[inline(never)]
    fn literal(&mut self) -> Result<N, ParseError> {
        use Kind as K;
        let c = match self.ntk()? {
            K::Str => Const::Str(self.string_literal()?),
            K::Decimal => {
                let t = self.consume(K::Decimal)?;
                create_from_decimal(&self.lx.text(&t))?
            }
            K::Float => {
                let t = self.consume(K::Float)?;
                create_float(&self.lx.text(&t))?
            }
            K::True => {
                self.consume(K::True)?;
                Const::Bool(true)
            }
            K::False => {
                self.consume(K::False)?;
                Const::Bool(false)
            }
            K::Null => {
                self.consume(K::Null)?;
                Const::Null
            }
            _ => {
                self.fell_through(15);
                return Err(self.fail());
            }
        };
        node(Expr::Const(c), 1)
    }

    /// A string literal's value: the text between the quotes, `''` read as `'`.
    #[inline(never)]
    fn string_literal(&mut self) -> Result<Box<str>, ParseError> {
        let t = self.consume(Kind::Str)?;
        let units = self.lx.units(t.start + 1, t.end - 1);
        let mut out = Vec::with_capacity(units.len());
        let mut i = 0;
        while i < units.len() {
            out.push(units[i]);
            i += if units[i] == u16::from(b'\'') { 2 } else { 1 };
        }
        Ok(String::from_utf16_lossy(&out).into_boxed_str())
    }

    // ---- RocketMQ's factories and their checks -------------------------------------

    fn show(&self, e: &Expr) -> String {
        e.show(&self.names).to_string()
    }

    /// `asBooleanExpression`: a boolean node as is, a property cast to one.
    #[inline(never)]
    fn as_boolean(&self, e: N) -> Result<N, ParseError> {
        if e.e.is_boolean() {
            return Ok(e);
        }
        if let Expr::Prop(slot) = e.e {
            return node(Expr::BoolCast(slot), e.d);
        }
        Err(ParseError::new(
            ErrorKind::Syntax,
            format!(
                "{PARSE_EXCEPTION}: Expression will not result in a boolean value: {}",
                self.show(&e.e)
            ),
        ))
    }

    /// `createEqual`: no NULL literal on either side, and a boolean literal on the left
    /// only against a boolean literal.
    #[inline(never)]
    fn create_equal(&self, left: N, right: N) -> Result<N, ParseError> {
        for side in [&left, &right] {
            if side.e == Expr::Const(Const::Null) {
                return Err(runtime(&format!(
                    "'{}' cannot be compared.",
                    self.show(&side.e)
                )));
            }
        }
        if let (Expr::Const(_), Expr::Const(_)) = (&left.e, &right.e) {
            if left.e.is_boolean() && !right.e.is_boolean() {
                return Err(runtime(&format!(
                    "'{}' cannot be compared with '{}'",
                    self.show(&left.e),
                    self.show(&right.e)
                )));
            }
        }
        let d = left.d.max(right.d) + 1;
        node(Expr::Eq(Box::new(left.e), Box::new(right.e)), d)
    }

    /// `checkLessThanOperand` on both sides: literals must be numbers, and boolean
    /// expressions cannot be ordered.
    #[inline(never)]
    fn create_cmp(&self, op: CmpOp, left: N, right: N) -> Result<N, ParseError> {
        for side in [&left, &right] {
            let bad = match &side.e {
                Expr::Const(c) => !c.is_number(),
                e => e.is_boolean(),
            };
            if bad {
                return Err(runtime(&format!(
                    "Value '{}' cannot be compared.",
                    self.show(&side.e)
                )));
            }
        }
        let d = left.d.max(right.d) + 1;
        node(Expr::Cmp(op, Box::new(left.e), Box::new(right.e)), d)
    }

    /// `createBetween`: two literal bounds must be non-null and in order; then
    /// `value >= low AND value <= high`.
    #[inline(never)]
    fn create_between(&self, value: N, low: N, high: N) -> Result<N, ParseError> {
        if let (Expr::Const(lv), Expr::Const(rv)) = (&low.e, &high.e) {
            if *lv == Const::Null || *rv == Const::Null {
                return Err(runtime(
                    "Illegal values of between, values can not be null!",
                ));
            }
            let order = compare(value_of(rv), value_of(lv)).map_err(|e| match e {
                CompareError::NumberFormat(m) => invalid(format!(
                    "{RUNTIME_EXCEPTION}: {NUMBER_FORMAT_EXCEPTION}: {m}"
                )),
                CompareError::ClassCast => invalid(BOOLEAN_TO_STRING_CAST.to_owned()),
            })?;
            if order == Ordering::Less {
                return Err(runtime(&format!(
                    "Illegal values of between, left value({}) must less than or equal to right value({})",
                    lv.java_value(),
                    rv.java_value()
                )));
            }
        }
        let ge = self.create_cmp(CmpOp::Ge, clone(&value), low)?;
        let le = self.create_cmp(CmpOp::Le, value, high)?;
        logic(ge, le, false)
    }

    /// `createInFilter`: the left side must be a property.
    #[inline(never)]
    fn create_in(&self, left: N, list: Vec<Box<str>>, not: bool) -> Result<N, ParseError> {
        let Expr::Prop(prop) = left.e else {
            return Err(runtime(&format!(
                "Expected a property for In expression, got: {}",
                self.show(&left.e)
            )));
        };
        node(
            Expr::In {
                prop,
                list: Box::new(InList::new(list)),
                not,
            },
            2,
        )
    }

    // ---- lookahead and syntax errors ----------------------------------------------

    /// JavaCC's `jj_2_*`: a syntactic scan that consumes nothing, remembered for the
    /// error text (`jj_save`).
    #[inline(never)]
    fn lookahead(&mut self, look: Look) -> Result<bool, ParseError> {
        let xla: i64 = if matches!(look, Look::Plus) {
            i64::from(i32::MAX)
        } else {
            2
        };
        let mut sc = Scan {
            pos: self.cur,
            last: self.cur,
            la: xla,
            depth: self.depth,
            record: false,
        };
        let matched = match self.scan_look(look, &mut sc) {
            Ok(m) => m,
            Err(Stop::Success) => true,
            Err(Stop::Fail(e)) => return Err(e),
        };
        let generation = self.generation + u64::try_from(xla - sc.la).unwrap_or(0);
        let calls = &mut self.calls[look as usize];
        if calls.is_empty() {
            calls.push(Call::default());
        }
        let mut i = 0;
        while calls[i].generation > self.generation {
            i += 1;
            if i == calls.len() {
                calls.push(Call::default());
                break;
            }
        }
        calls[i] = Call {
            generation,
            first: self.cur,
            arg: xla,
        };
        Ok(matched)
    }

    /// `jj_scan_token`.
    fn scan_token(&mut self, sc: &mut Scan, kind: Kind) -> Result<bool, Stop> {
        if sc.pos == sc.last {
            sc.la -= 1;
            sc.last += 1;
        }
        sc.pos += 1;
        let t = self.token(sc.pos)?;
        if sc.record && sc.pos >= self.cur {
            let rel = sc.pos - self.cur;
            if let Some(exp) = self.expected.as_mut() {
                exp.add(kind, rel);
            }
        }
        if t.kind != kind {
            return Ok(false);
        }
        if sc.la == 0 && sc.pos == sc.last {
            return Err(Stop::Success);
        }
        Ok(true)
    }

    fn scan_tokens(&mut self, sc: &mut Scan, kinds: &[Kind]) -> Result<bool, Stop> {
        for &k in kinds {
            if !self.scan_token(sc, k)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The scan of one lookahead (`jj_3_1` .. `jj_3_7`).
    fn scan_look(&mut self, look: Look, sc: &mut Scan) -> Result<bool, Stop> {
        use Kind as K;
        Ok(match look {
            Look::IsNull => self.scan_tokens(sc, &[K::Is, K::Null])?,
            Look::NotContains => self.scan_tokens(sc, &[K::Not, K::Contains, K::Str])?,
            Look::NotStartsWith => self.scan_tokens(sc, &[K::Not, K::StartsWith, K::Str])?,
            Look::NotEndsWith => self.scan_tokens(sc, &[K::Not, K::EndsWith, K::Str])?,
            Look::NotBetween => self.scan_between(sc, true)?,
            Look::NotIn => self.scan_in(sc, true)?,
            Look::Plus => self.scan_token(sc, K::Plus)? && self.scan_unary(sc)?,
        })
    }

    fn scan_between(&mut self, sc: &mut Scan, not: bool) -> Result<bool, Stop> {
        Ok((!not || self.scan_token(sc, Kind::Not)?)
            && self.scan_token(sc, Kind::Between)?
            && self.scan_unary(sc)?
            && self.scan_token(sc, Kind::And)?
            && self.scan_unary(sc)?)
    }

    fn scan_in(&mut self, sc: &mut Scan, not: bool) -> Result<bool, Stop> {
        use Kind as K;
        if !((!not || self.scan_token(sc, K::Not)?)
            && self.scan_tokens(sc, &[K::In, K::LParen, K::Str])?)
        {
            return Ok(false);
        }
        loop {
            let save = sc.pos;
            if !self.scan_tokens(sc, &[K::Comma, K::Str])? {
                sc.pos = save;
                break;
            }
        }
        self.scan_token(sc, K::RParen)
    }

    /// Tries `alternatives` in order from the same place, as JavaCC's scan of a choice.
    fn scan_choice(&mut self, sc: &mut Scan, alternatives: &[ScanFn<'_>]) -> Result<bool, Stop> {
        let save = sc.pos;
        for alt in alternatives {
            if alt(self, sc)? {
                return Ok(true);
            }
            sc.pos = save;
        }
        Ok(false)
    }

    /// `( body )*` in a scan.
    fn scan_loop(&mut self, sc: &mut Scan, body: ScanFn<'_>) -> Result<(), Stop> {
        loop {
            let save = sc.pos;
            if !body(self, sc)? {
                sc.pos = save;
                return Ok(());
            }
        }
    }

    fn scan_unary(&mut self, sc: &mut Scan) -> Result<bool, Stop> {
        use Kind as K;
        sc.depth += 1;
        if sc.depth > MAX_DEPTH {
            return Err(Stop::Fail(too_deep()));
        }
        let r = self.scan_choice(
            sc,
            &[
                &|p, sc| Ok(p.scan_token(sc, K::Plus)? && p.scan_unary(sc)?),
                &|p, sc| Ok(p.scan_token(sc, K::Minus)? && p.scan_unary(sc)?),
                &|p, sc| Ok(p.scan_token(sc, K::Not)? && p.scan_unary(sc)?),
                &|p, sc| p.scan_primary(sc),
            ],
        );
        sc.depth -= 1;
        r
    }

    fn scan_primary(&mut self, sc: &mut Scan) -> Result<bool, Stop> {
        use Kind as K;
        self.scan_choice(
            sc,
            &[
                &|p, sc| p.scan_token(sc, K::Str),
                &|p, sc| p.scan_token(sc, K::Decimal),
                &|p, sc| p.scan_token(sc, K::Float),
                &|p, sc| p.scan_token(sc, K::True),
                &|p, sc| p.scan_token(sc, K::False),
                &|p, sc| p.scan_token(sc, K::Null),
                &|p, sc| p.scan_token(sc, K::Id),
                &|p, sc| {
                    Ok(p.scan_token(sc, K::LParen)?
                        && p.scan_or(sc)?
                        && p.scan_token(sc, K::RParen)?)
                },
            ],
        )
    }

    fn scan_or(&mut self, sc: &mut Scan) -> Result<bool, Stop> {
        if !self.scan_and(sc)? {
            return Ok(false);
        }
        self.scan_loop(sc, &|p, sc| {
            Ok(p.scan_token(sc, Kind::Or)? && p.scan_and(sc)?)
        })?;
        Ok(true)
    }

    fn scan_and(&mut self, sc: &mut Scan) -> Result<bool, Stop> {
        if !self.scan_equality(sc)? {
            return Ok(false);
        }
        self.scan_loop(sc, &|p, sc| {
            Ok(p.scan_token(sc, Kind::And)? && p.scan_equality(sc)?)
        })?;
        Ok(true)
    }

    fn scan_equality(&mut self, sc: &mut Scan) -> Result<bool, Stop> {
        use Kind as K;
        if !self.scan_comparison(sc)? {
            return Ok(false);
        }
        self.scan_loop(sc, &|p, sc| {
            p.scan_choice(
                sc,
                &[
                    &|p, sc| Ok(p.scan_token(sc, K::Eq)? && p.scan_comparison(sc)?),
                    &|p, sc| Ok(p.scan_token(sc, K::Ne)? && p.scan_comparison(sc)?),
                    &|p, sc| p.scan_tokens(sc, &[K::Is, K::Null]),
                    &|p, sc| p.scan_tokens(sc, &[K::Is, K::Not, K::Null]),
                ],
            )
        })?;
        Ok(true)
    }

    fn scan_comparison(&mut self, sc: &mut Scan) -> Result<bool, Stop> {
        use Kind as K;
        if !self.scan_unary(sc)? {
            return Ok(false);
        }
        self.scan_loop(sc, &|p, sc| {
            p.scan_choice(
                sc,
                &[
                    &|p, sc| Ok(p.scan_token(sc, K::Gt)? && p.scan_unary(sc)?),
                    &|p, sc| Ok(p.scan_token(sc, K::Ge)? && p.scan_unary(sc)?),
                    &|p, sc| Ok(p.scan_token(sc, K::Lt)? && p.scan_unary(sc)?),
                    &|p, sc| Ok(p.scan_token(sc, K::Le)? && p.scan_unary(sc)?),
                    &|p, sc| p.scan_tokens(sc, &[K::Contains, K::Str]),
                    &|p, sc| p.scan_tokens(sc, &[K::Not, K::Contains, K::Str]),
                    &|p, sc| p.scan_tokens(sc, &[K::StartsWith, K::Str]),
                    &|p, sc| p.scan_tokens(sc, &[K::Not, K::StartsWith, K::Str]),
                    &|p, sc| p.scan_tokens(sc, &[K::EndsWith, K::Str]),
                    &|p, sc| p.scan_tokens(sc, &[K::Not, K::EndsWith, K::Str]),
                    &|p, sc| p.scan_between(sc, false),
                    &|p, sc| p.scan_between(sc, true),
                    &|p, sc| p.scan_in(sc, false),
                    &|p, sc| p.scan_in(sc, true),
                ],
            )
        })?;
        Ok(true)
    }

    /// `generateParseException` and `ParseException.initialise`.
    #[cold]
    #[inline(never)]
    fn syntax_error(&mut self) -> ParseError {
        let mut wanted = [false; 36];
        if let Some(k) = self.expected_kind.take() {
            wanted[k as usize] = true;
        }
        for (choice, first) in LA1_FIRST.iter().enumerate() {
            if self.la1[choice] == Some(self.generation) {
                for &k in *first {
                    wanted[k as usize] = true;
                }
            }
        }
        let mut expected = Expected::default();
        for k in Kind::ALL {
            if wanted[k as usize] {
                expected.entries.push(vec![k]);
            }
        }
        self.expected = Some(expected);
        let looks = [
            Look::IsNull,
            Look::NotContains,
            Look::NotStartsWith,
            Look::NotEndsWith,
            Look::NotBetween,
            Look::NotIn,
            Look::Plus,
        ];
        for look in looks {
            let calls = self.calls[look as usize].clone();
            for call in calls {
                if call.generation <= self.generation {
                    continue;
                }
                let mut sc = Scan {
                    pos: call.first,
                    last: call.first,
                    la: call.arg,
                    depth: 0,
                    record: true,
                };
                if let Err(Stop::Success) = self.scan_look(look, &mut sc) {
                    break;
                }
            }
        }
        let mut expected = self.expected.take().unwrap_or_default();
        expected.add(Kind::Eof, 0);
        self.render_syntax_error(&expected.entries)
    }

    #[cold]
    #[inline(never)]
    fn render_syntax_error(&self, entries: &[Vec<Kind>]) -> ParseError {
        let mut list = String::new();
        let mut max = 0;
        for seq in entries {
            max = max.max(seq.len());
            for k in seq {
                list.push_str(k.image());
                list.push(' ');
            }
            if seq.last() != Some(&Kind::Eof) {
                list.push_str("...");
            }
            list.push_str("\n    ");
        }
        let mut found = String::new();
        for i in 0..max {
            let Some(t) = self.toks.get(self.cur + 1 + i) else {
                break;
            };
            if i != 0 {
                found.push(' ');
            }
            if t.kind == Kind::Eof {
                found.push_str(Kind::Eof.image());
                break;
            }
            found.push(' ');
            found.push_str(t.kind.image());
            found.push_str(" \"");
            found.push_str(&add_escapes(self.lx.units(t.start, t.end)));
            found.push_str(" \"");
        }
        let at = self.toks.get(self.cur + 1).copied().unwrap_or(self.toks[0]);
        let header = if entries.len() == 1 {
            "Was expecting:"
        } else {
            "Was expecting one of:"
        };
        ParseError::new(
            ErrorKind::Syntax,
            format!(
                "{PARSE_EXCEPTION}: Encountered \"{found}\" at line {}, column {}.\n{header}\n    {list}",
                at.line, at.column
            ),
        )
    }
}

fn clone(n: &N) -> N {
    N {
        e: n.e.clone(),
        d: n.d,
    }
}

fn value_of(c: &Const) -> Value<'_> {
    match c {
        Const::Null => Value::Null,
        Const::Bool(b) => Value::Bool(*b),
        Const::Int(i) => Value::Int(*i),
        Const::Long(l) => Value::Long(*l),
        Const::Double(d) => Value::Double(*d),
        Const::Str(s) => Value::Str(s),
    }
}

/// `createAND` / `createOR`, extending a left operand of the same kind (the chain is
/// evaluated left to right either way).
fn logic(left: N, right: N, or: bool) -> Result<N, ParseError> {
    let wrap = |items| {
        if or {
            Expr::Or(items)
        } else {
            Expr::And(items)
        }
    };
    match left.e {
        Expr::Or(mut items) if or => {
            items.push(right.e);
            node(wrap(items), left.d.max(right.d + 1))
        }
        Expr::And(mut items) if !or => {
            items.push(right.e);
            node(wrap(items), left.d.max(right.d + 1))
        }
        e => node(wrap(vec![e, right.e]), left.d.max(right.d) + 1),
    }
}

fn not(e: N) -> Result<N, ParseError> {
    node(Expr::Not(Box::new(e.e)), e.d + 1)
}

/// IS NULL: `doCreateEqual(left, NULL)`, without `createEqual`'s checks.
fn is_null(left: N) -> Result<N, ParseError> {
    let d = left.d + 1;
    node(
        Expr::Eq(Box::new(left.e), Box::new(Expr::Const(Const::Null))),
        d,
    )
}

fn text(op: TextOp, not: bool, operand: N, search: Box<str>) -> Result<N, ParseError> {
    let d = operand.d + 1;
    node(
        Expr::Text {
            op,
            not,
            operand: Box::new(operand.e),
            search,
        },
        d,
    )
}

/// `ConstantExpression.createFromDecimal`: an `Integer` when it fits, else a `Long`;
/// beyond a long, `new Long(text)` throws.
fn create_from_decimal(text: &str) -> Result<Const, ParseError> {
    let digits = text.strip_suffix(['l', 'L']).unwrap_or(text);
    let value: i64 = digits.parse().map_err(|_| {
        invalid(format!(
            "{NUMBER_FORMAT_EXCEPTION}: For input string: \"{digits}\""
        ))
    })?;
    Ok(i32::try_from(value).map_or(Const::Long(value), Const::Int))
}

/// `ConstantExpression.createFloat`: finite and at least `Double.MIN_VALUE` (so
/// `0.0` is refused, as RocketMQ refuses it).
fn create_float(text: &str) -> Result<Const, ParseError> {
    let value =
        parse_double(text).map_err(|e| invalid(format!("{NUMBER_FORMAT_EXCEPTION}: {e}")))?;
    if value > f64::MAX {
        return Err(runtime(&format!(
            "{text} is greater than {}",
            double_to_string(f64::MAX)
        )));
    }
    if value < f64::from_bits(1) {
        return Err(runtime(&format!(
            "{text} is less than {}",
            double_to_string(f64::from_bits(1))
        )));
    }
    Ok(Const::Double(value))
}
