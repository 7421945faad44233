//! The arithmetic of a `metric` rule's `formula` and `condition`: Vale
//! runs them as Tengo expressions; this reads the part of that language
//! formulas use (numbers, variables, `+ - * / %`, comparisons, `&&`,
//! `||`, `!`, parentheses and `math.sqrt(…)`-style calls), checked when
//! the rule is read so that running it cannot fail.

use std::collections::HashMap;

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Number(f64),
    Variable(String),
    Negate(Box<Expr>),
    Not(Box<Expr>),
    Binary(Op, Box<Expr>, Box<Expr>),
    Call(Function, Vec<Expr>),
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

/// A function of Tengo's `math` module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Function {
    Sqrt,
    Cbrt,
    Pow,
    Abs,
    Log,
    Log10,
    Log2,
    Exp,
    Floor,
    Ceil,
    Round,
    Trunc,
    Min,
    Max,
}

impl Function {
    fn named(name: &str) -> Option<(Function, usize)> {
        Some(match name {
            "sqrt" => (Function::Sqrt, 1),
            "cbrt" => (Function::Cbrt, 1),
            "pow" => (Function::Pow, 2),
            "abs" => (Function::Abs, 1),
            "log" => (Function::Log, 1),
            "log10" => (Function::Log10, 1),
            "log2" => (Function::Log2, 1),
            "exp" => (Function::Exp, 1),
            "floor" => (Function::Floor, 1),
            "ceil" => (Function::Ceil, 1),
            "round" => (Function::Round, 1),
            "trunc" => (Function::Trunc, 1),
            "min" => (Function::Min, 2),
            "max" => (Function::Max, 2),
            _ => return None,
        })
    }
}

/// What an expression gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    Number(f64),
    Bool(bool),
}

/// The deepest nesting a formula may have (a bound on the reader's
/// recursion, which a hostile rule file could otherwise exhaust).
const MAX_DEPTH: usize = 64;

/// The longest formula read.
const MAX_LEN: usize = 4096;

/// Reads `text`; `known` tells whether a variable name may be used.
pub(crate) fn parse(text: &str, known: &dyn Fn(&str) -> bool) -> Result<Expr, String> {
    if text.len() > MAX_LEN {
        return Err(format!("is longer than {MAX_LEN} bytes"));
    }
    let tokens = lex(text)?;
    if tokens.is_empty() {
        return Err("is empty".to_owned());
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
        known,
    };
    let expr = parser.or()?;
    match parser.tokens.get(parser.at) {
        None => Ok(expr),
        Some(token) => Err(format!("does not expect `{}` there", token.text())),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Name(String),
    Symbol(&'static str),
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Number(n) => n.to_string(),
            Token::Name(n) => n.clone(),
            Token::Symbol(s) => (*s).to_owned(),
        }
    }
}

const SYMBOLS: [&str; 18] = [
    "&&", "||", "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ",", ".", "!",
];

fn lex(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
        } else if c.is_ascii_digit()
            || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            let mut len = rest
                .find(|d: char| !(d.is_ascii_digit() || d == '.'))
                .unwrap_or(rest.len());
            // An exponent: `1e3`, `2.5E-2`.
            if let Some(after) = rest[len..].strip_prefix(['e', 'E']) {
                let sign = usize::from(after.starts_with(['+', '-']));
                let digits = after[sign..]
                    .find(|d: char| !d.is_ascii_digit())
                    .unwrap_or(after.len() - sign);
                if digits > 0 {
                    len += 1 + sign + digits;
                }
            }
            let number = rest[..len]
                .parse::<f64>()
                .map_err(|_| format!("`{}` is not a number", &rest[..len]))?;
            tokens.push(Token::Number(number));
            rest = &rest[len..];
        } else if c.is_alphabetic() || c == '_' {
            let len = rest
                .find(|d: char| !(d.is_alphanumeric() || d == '_'))
                .unwrap_or(rest.len());
            tokens.push(Token::Name(rest[..len].to_owned()));
            rest = &rest[len..];
        } else if let Some(symbol) = SYMBOLS.iter().find(|s| rest.starts_with(**s)) {
            tokens.push(Token::Symbol(symbol));
            rest = &rest[symbol.len()..];
        } else {
            return Err(format!("does not know `{c}`"));
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
    known: &'a dyn Fn(&str) -> bool,
}

impl Parser<'_> {
    fn peek_symbol(&self) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some(Token::Symbol(s)) => Some(s),
            _ => None,
        }
    }

    fn expect(&mut self, symbol: &str) -> Result<(), String> {
        if self.peek_symbol() == Some(symbol) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expects `{symbol}`"))
        }
    }

    /// One level of binary operators, tighter levels below it.
    fn binary(
        &mut self,
        ops: &[(&str, Op)],
        next: fn(&mut Self) -> Result<Expr, String>,
        chain: bool,
    ) -> Result<Expr, String> {
        let mut left = next(self)?;
        while let Some(&(_, op)) = self
            .peek_symbol()
            .and_then(|s| ops.iter().find(|(o, _)| *o == s))
        {
            self.at += 1;
            let right = next(self)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
            if !chain {
                break;
            }
        }
        Ok(left)
    }

    fn or(&mut self) -> Result<Expr, String> {
        self.binary(&[("||", Op::Or)], Self::and, true)
    }

    fn and(&mut self) -> Result<Expr, String> {
        self.binary(&[("&&", Op::And)], Self::compare, true)
    }

    fn compare(&mut self) -> Result<Expr, String> {
        let ops = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<", Op::Lt),
            (">", Op::Gt),
        ];
        self.binary(&ops, Self::sum, false)
    }

    fn sum(&mut self) -> Result<Expr, String> {
        self.binary(&[("+", Op::Add), ("-", Op::Sub)], Self::product, true)
    }

    fn product(&mut self) -> Result<Expr, String> {
        self.binary(
            &[("*", Op::Mul), ("/", Op::Div), ("%", Op::Rem)],
            Self::unary,
            true,
        )
    }

    fn unary(&mut self) -> Result<Expr, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("is nested more than {MAX_DEPTH} deep"));
        }
        let expr = match self.peek_symbol() {
            Some("-") => {
                self.at += 1;
                Expr::Negate(Box::new(self.unary()?))
            }
            Some("+") => {
                self.at += 1;
                self.unary()?
            }
            Some("!") => {
                self.at += 1;
                Expr::Not(Box::new(self.unary()?))
            }
            _ => self.primary()?,
        };
        self.depth -= 1;
        Ok(expr)
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        match token {
            Some(Token::Number(n)) => Ok(Expr::Number(n)),
            Some(Token::Symbol("(")) => {
                let inner = self.or()?;
                self.expect(")")?;
                Ok(inner)
            }
            Some(Token::Name(name)) if name == "math" => {
                self.expect(".")?;
                let Some(Token::Name(member)) = self.tokens.get(self.at).cloned() else {
                    return Err("expects a name after `math.`".to_owned());
                };
                self.at += 1;
                match member.as_str() {
                    "pi" => return Ok(Expr::Number(std::f64::consts::PI)),
                    "e" => return Ok(Expr::Number(std::f64::consts::E)),
                    _ => {}
                }
                let (function, arity) = Function::named(&member)
                    .ok_or_else(|| format!("does not know `math.{member}`"))?;
                self.expect("(")?;
                let mut args = Vec::new();
                if self.peek_symbol() != Some(")") {
                    args.push(self.or()?);
                    while self.peek_symbol() == Some(",") {
                        self.at += 1;
                        args.push(self.or()?);
                    }
                }
                self.expect(")")?;
                if args.len() != arity {
                    return Err(format!("`math.{member}` takes {arity} argument(s)"));
                }
                Ok(Expr::Call(function, args))
            }
            Some(Token::Name(name)) => {
                if (self.known)(&name) {
                    Ok(Expr::Variable(name))
                } else {
                    Err(format!("does not know the variable `{name}`"))
                }
            }
            Some(other) => Err(format!("does not expect `{}` there", other.text())),
            None => Err("ends too soon".to_owned()),
        }
    }
}

impl Expr {
    /// Whether the expression gives a number (`Some(true)`), a yes-or-no
    /// (`Some(false)`), or mixes them wrongly (`None`).
    pub(crate) fn numeric(&self) -> Option<bool> {
        let both = |a: &Expr, b: &Expr, want: bool| {
            (a.numeric()? == want && b.numeric()? == want).then_some(())
        };
        match self {
            Expr::Number(_) | Expr::Variable(_) => Some(true),
            Expr::Negate(e) => e.numeric().filter(|n| *n),
            Expr::Not(e) => e.numeric().filter(|n| !n).map(|_| false),
            Expr::Call(_, args) => args
                .iter()
                .all(|a| a.numeric() == Some(true))
                .then_some(true),
            Expr::Binary(op, a, b) => match op {
                Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Rem => both(a, b, true).map(|_| true),
                Op::Lt | Op::Le | Op::Gt | Op::Ge => both(a, b, true).map(|_| false),
                Op::Eq | Op::Ne => (a.numeric()? == b.numeric()?).then_some(false),
                Op::And | Op::Or => both(a, b, false).map(|_| false),
            },
        }
    }

    /// The value with `vars` (a variable not there is 0).
    pub(crate) fn eval(&self, vars: &HashMap<String, f64>) -> Value {
        let num = |e: &Expr| match e.eval(vars) {
            Value::Number(n) => n,
            Value::Bool(b) => f64::from(u8::from(b)),
        };
        let truth = |e: &Expr| match e.eval(vars) {
            Value::Bool(b) => b,
            Value::Number(n) => n != 0.0,
        };
        match self {
            Expr::Number(n) => Value::Number(*n),
            Expr::Variable(name) => Value::Number(vars.get(name).copied().unwrap_or(0.0)),
            Expr::Negate(e) => Value::Number(-num(e)),
            Expr::Not(e) => Value::Bool(!truth(e)),
            Expr::Call(function, args) => {
                let x = args.first().map_or(0.0, num);
                let y = args.get(1).map_or(0.0, num);
                Value::Number(match function {
                    Function::Sqrt => x.sqrt(),
                    Function::Cbrt => x.cbrt(),
                    Function::Pow => x.powf(y),
                    Function::Abs => x.abs(),
                    Function::Log => x.ln(),
                    Function::Log10 => x.log10(),
                    Function::Log2 => x.log2(),
                    Function::Exp => x.exp(),
                    Function::Floor => x.floor(),
                    Function::Ceil => x.ceil(),
                    Function::Round => x.round(),
                    Function::Trunc => x.trunc(),
                    Function::Min => x.min(y),
                    Function::Max => x.max(y),
                })
            }
            Expr::Binary(op, a, b) => match op {
                Op::Add => Value::Number(num(a) + num(b)),
                Op::Sub => Value::Number(num(a) - num(b)),
                Op::Mul => Value::Number(num(a) * num(b)),
                // Division as floats: a zero count gives an infinity, as
                // Vale's does, not an error.
                Op::Div => Value::Number(num(a) / num(b)),
                Op::Rem => Value::Number(num(a) % num(b)),
                Op::Lt => Value::Bool(num(a) < num(b)),
                Op::Le => Value::Bool(num(a) <= num(b)),
                Op::Gt => Value::Bool(num(a) > num(b)),
                Op::Ge => Value::Bool(num(a) >= num(b)),
                Op::Eq => Value::Bool(a.eval(vars) == b.eval(vars)),
                Op::Ne => Value::Bool(a.eval(vars) != b.eval(vars)),
                Op::And => Value::Bool(truth(a) && truth(b)),
                Op::Or => Value::Bool(truth(a) || truth(b)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any(_: &str) -> bool {
        true
    }

    fn value(text: &str, vars: &[(&str, f64)]) -> Value {
        let vars = vars.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        parse(text, &any).expect("parses").eval(&vars)
    }

    #[test]
    fn formulas_compute_with_precedence_and_math_calls() {
        let fk = "(0.39 * (words / sentences)) + (11.8 * (syllables / words)) - 15.59";
        let Value::Number(n) = value(
            fk,
            &[("words", 100.0), ("sentences", 5.0), ("syllables", 150.0)],
        ) else {
            panic!("a number")
        };
        assert!((n - (0.39 * 20.0 + 11.8 * 1.5 - 15.59)).abs() < 1e-9);
        assert_eq!(value("1 + 2 * 3 - -1", &[]), Value::Number(8.0));
        assert_eq!(
            value("math.sqrt(16) + math.pow(2, 3)", &[]),
            Value::Number(12.0)
        );
        assert_eq!(value("7 % 4 == 3 && !(1 > 2)", &[]), Value::Bool(true));
        assert_eq!(value("1e2 / 0.5E1", &[]), Value::Number(20.0));
        assert_eq!(value("words / 0 > 8", &[("words", 1.0)]), Value::Bool(true));
    }

    #[test]
    fn bad_formulas_are_told_not_run() {
        let known = |n: &str| n == "words";
        assert!(parse("words +", &known).is_err());
        assert!(parse("words ** 2", &known).is_err());
        assert_eq!(
            parse("lines / 2", &known).expect_err("unknown"),
            "does not know the variable `lines`"
        );
        assert!(parse("math.nope(1)", &known).is_err());
        assert!(parse("math.pow(1)", &known).is_err());
        assert!(parse("(words", &known).is_err());
        assert!(parse("", &known).is_err());
        assert!(parse("words $ 2", &known).is_err());
        let deep = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert!(parse(&deep, &known).is_err(), "too deep, no stack overflow");
        let long = "1+".repeat(3000) + "1";
        assert!(parse(&long, &known).is_err());
    }

    #[test]
    fn types_are_checked_before_running() {
        assert_eq!(parse("1 + 2", &any).map(|e| e.numeric()), Ok(Some(true)));
        assert_eq!(parse("1 > 2", &any).map(|e| e.numeric()), Ok(Some(false)));
        assert_eq!(parse("(1 > 2) + 3", &any).map(|e| e.numeric()), Ok(None));
        assert_eq!(parse("1 && 2", &any).map(|e| e.numeric()), Ok(None));
    }
}
