//! Reversible masks applied to a chunk before the model sees it, and
//! undone in the model's proposals afterwards.
//!
//! Math is always masked (`[MATH_N]`): LaTeX sends many local models into
//! degenerate loops. The content recipes (`[[QUOTE_BLOCK_N]]`,
//! `[[CODE_BLOCK_N]]`, `[[TABLE_BLOCK_N]]`, `[[EMOJI_N]]`,
//! `[[FORMULA_BLOCK_N]]`, `[[NUMERIC_TRUNCATED_N]]`, and the safety
//! vocabulary map) are applied only when a chunk stayed degenerate and its
//! fingerprint says why. A transform is skipped when the chunk already
//! holds text shaped like its placeholder, so unmasking can never turn the
//! document's own text into something else.
//!
//! The markdown strip (the last resort) is not reversible: it keeps the
//! line structure instead, so that a proposal made on the stripped text is
//! found again line by line (and only flagged, see the targeting).

use koas_review_schema::stage1::BlockKind;
use serde::{Deserialize, Serialize};
use unicode_properties::UnicodeEmoji;

use crate::estimate_tokens;

/// One placeholder and the text it stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placeholder {
    /// What the model sees (`[MATH_0]`, `[[TABLE_BLOCK_1]]`, or the
    /// substitute word of the safety vocabulary map).
    pub token: String,
    /// The document's text.
    pub original: String,
    /// The transform that made it (`math_mask`, `table_mask`, …).
    pub transform: String,
}

/// A chunk's text as the model sees it, and how to undo it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Masked {
    /// The masked text.
    pub text: String,
    /// The placeholders, in the order they were made.
    pub mapping: Vec<Placeholder>,
    /// The content recipe transforms that changed the text, in order.
    pub transforms: Vec<String>,
}

impl Masked {
    /// Undoes every placeholder in `text` (a model's `before_text` or
    /// `after_text`), latest first so that nested ones unfold.
    pub fn unmask(&self, text: &str) -> String {
        self.unmask_where(text, |_| true)
    }

    /// Placeholders (not substitute words) present in `text`.
    pub fn placeholders_in<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.mapping
            .iter()
            .filter(move |p| p.transform != SYNONYM && text.contains(&p.token))
            .map(|p| p.token.as_str())
    }

    /// Lines of the document a shown line stands for beyond itself: the
    /// line breaks inside the protected blocks it shows as placeholders (a
    /// code block of 30 lines shown as one placeholder hides 29). Other
    /// placeholders keep the numbering prompts always had.
    pub fn hidden_lines(&self, line: &str) -> usize {
        if !line.contains('[') || !self.mapping.iter().any(|p| p.transform == PROTECTED) {
            return 0;
        }
        // Unmasked with and without the blocks: a placeholder may hold
        // another (math around a block).
        let all = self.unmask_where(line, |_| true);
        let others = self.unmask_where(line, |p| p.transform != PROTECTED);
        all.matches('\n')
            .count()
            .saturating_sub(others.matches('\n').count())
    }

    /// [`Masked::unmask`] of the placeholders `undo` selects.
    fn unmask_where(&self, text: &str, undo: impl Fn(&Placeholder) -> bool) -> String {
        let mut out = text.to_owned();
        for p in self.mapping.iter().rev().filter(|p| undo(p)) {
            if p.transform == SYNONYM {
                out = replace_word(&out, &p.token, &p.original);
            } else {
                out = out.replace(&p.token, &p.original);
            }
        }
        out
    }

    fn push(&mut self, token: String, original: String, transform: &str) {
        self.mapping.push(Placeholder {
            token,
            original,
            transform: transform.to_owned(),
        });
    }

    fn count(&self, transform: &str) -> usize {
        self.mapping
            .iter()
            .filter(|p| p.transform == transform)
            .count()
    }
}

const SYNONYM: &str = "synonym_map";

/// One recipe transform: `true` when it changed the text.
type Transform = dyn Fn(&mut Masked, &RecipeOptions) -> bool;

/// `true` when `text` looks like it holds a placeholder of any kind, so
/// that an unmasked proposal still carrying one is refused.
pub fn has_placeholder_shape(text: &str) -> bool {
    text.contains("[MATH_") || (text.contains("[[") && text.contains("]]"))
}

/// The transform that shows protected blocks as placeholders.
pub const PROTECTED: &str = "protected_mask";

/// The placeholder name a protected block of `kind` is shown as in an
/// edit prompt; `None` for a kind shown as it is (a link reference
/// definition is one short line the prose around it may name).
pub fn block_prefix(kind: BlockKind) -> Option<&'static str> {
    match kind {
        BlockKind::CodeFence | BlockKind::IndentedCode => Some("CODE_BLOCK"),
        BlockKind::Table => Some("TABLE_BLOCK"),
        BlockKind::HtmlBlock => Some("HTML_BLOCK"),
        BlockKind::MathBlock => Some("MATH_BLOCK"),
        BlockKind::YamlFrontMatter | BlockKind::TomlFrontMatter => Some("FRONT_MATTER"),
        BlockKind::LinkRefDef => None,
    }
}

/// Shows each protected block of `text` as one placeholder line
/// `[[{prefix}_N]]`: `runs` are the blocks' first and last lines (0-based
/// in `text`, in order, disjoint) and names. No model may change a
/// protected block, so its lines would only cost prompt tokens. A name
/// whose placeholder shape the text already holds is left as it is, so
/// that unmasking never turns the document's own text into a block.
pub fn mask_protected(text: &str, runs: &[(usize, usize, &'static str)]) -> Masked {
    let mut m = Masked {
        text: text.to_owned(),
        ..Masked::default()
    };
    replace_line_runs(&mut m, PROTECTED, runs);
    m
}

/// Masks `$$…$$` and `$…$` math with `[MATH_N]`.
pub fn mask_math(text: &str) -> Masked {
    mask_math_in(Masked {
        text: text.to_owned(),
        ..Masked::default()
    })
}

/// Masks the math of an already masked text (see [`mask_math`]).
pub fn mask_math_in(mut m: Masked) -> Masked {
    if m.text.contains("[MATH_") {
        return m;
    }
    let text = std::mem::take(&mut m.text);
    let text = text.as_str();
    let mut made = m.count("math_mask");
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        let end = if b.get(i + 1) == Some(&b'$') {
            text[i + 2..].find("$$").map(|k| i + 2 + k + 2)
        } else {
            inline_math_end(text, i)
        };
        match end {
            Some(end) if end > i + 2 => {
                out.push_str(&text[copied..i]);
                let token = format!("[MATH_{made}]");
                made += 1;
                out.push_str(&token);
                m.push(token, text[i..end].to_owned(), "math_mask");
                i = end;
                copied = end;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    m.text = out;
    m
}

/// The end (exclusive) of inline math opened by the `$` at `at`: the next
/// `$` on the line, when the content is not blank at either edge and the
/// closing `$` is not followed by a digit ("$5 and $10" is money).
fn inline_math_end(text: &str, at: usize) -> Option<usize> {
    let rest = &text[at + 1..];
    let first = rest.chars().next()?;
    if first.is_whitespace() || first.is_ascii_digit() && !rest.contains('^') {
        return None;
    }
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let close = rest[..line_end].find('$')?;
    let content = &rest[..close];
    if content.is_empty() || content.ends_with(char::is_whitespace) {
        return None;
    }
    if rest[close + 1..]
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit())
    {
        return None;
    }
    Some(at + 1 + close + 1)
}

/// When the content recipes fire, and which.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecipeOptions {
    /// Master switch of policy C.
    pub enabled: bool,
    /// Contiguous blockquote lines that are flattened.
    pub blockquote_min_lines: usize,
    /// Data rows from which a table is masked.
    pub table_mask_min_rows: usize,
    /// Mask emoji.
    pub emoji_mask: bool,
    /// Digit density of a block that is truncated.
    pub digit_truncation_threshold: f64,
    /// Lines a block needs before it is truncated.
    pub digit_truncation_min_lines: usize,
    /// Replace security vocabulary that makes small models refuse.
    pub synonym_map: bool,
    /// `[MATH_N]` placeholders in one paragraph from which it becomes one
    /// `[[FORMULA_BLOCK_N]]`.
    pub formula_min_math: usize,
}

impl Default for RecipeOptions {
    fn default() -> Self {
        RecipeOptions {
            enabled: true,
            blockquote_min_lines: 5,
            table_mask_min_rows: 3,
            emoji_mask: true,
            digit_truncation_threshold: 0.25,
            digit_truncation_min_lines: 5,
            synonym_map: true,
            formula_min_math: 3,
        }
    }
}

/// Security words and the neutral words put in their place. Each
/// substitute is distinct, so the reverse map is unambiguous.
const SYNONYMS: &[(&str, &str)] = &[
    ("vulnerabilities", "weaknesses"),
    ("vulnerability", "weakness"),
    ("ransomware", "extortionware"),
    ("credentials", "logins"),
    ("attacker", "adversary"),
    ("exploits", "misuses"),
    ("exploit", "misuse"),
    ("attacks", "incidents"),
    ("attack", "incident"),
    ("malware", "badware"),
    ("injection", "insertion"),
    ("payload", "cargo"),
    ("bypass", "sidestep"),
    ("jailbreak", "unlock"),
    ("backdoor", "side door"),
    ("phishing", "lure mail"),
    ("password", "passphrase"),
    ("vulnérabilités", "faiblesses"),
    ("vulnérabilité", "faiblesse"),
    ("attaques", "agressions"),
    ("attaque", "agression"),
    ("piratage", "intrusion"),
    ("contournement", "évitement"),
    ("mot de passe", "phrase secrète"),
];

/// Applies the content recipe to an already math-masked chunk: each
/// transform in order, recording those that changed something.
pub fn apply_recipe(base: &Masked, options: &RecipeOptions) -> Masked {
    let mut m = base.clone();
    let steps: [(&str, &Transform); 7] = [
        ("blockquote_flatten", &blockquote_flatten),
        ("code_fence_mask", &code_fence_mask),
        ("table_mask", &table_mask),
        ("emoji_mask", &emoji_mask),
        ("formula_consolidate", &formula_consolidate),
        ("digit_truncation", &digit_truncation),
        (SYNONYM, &synonym_map),
    ];
    for (name, step) in steps {
        if step(&mut m, options) {
            m.transforms.push(name.to_owned());
        }
    }
    m
}

/// Replaces each run of lines (first, last; 0-based) with one
/// placeholder line `[[{prefix}_N]]`.
fn mask_line_runs(m: &mut Masked, prefix: &str, transform: &str, runs: &[(usize, usize)]) -> bool {
    let runs: Vec<(usize, usize, &str)> = runs.iter().map(|&(a, z)| (a, z, prefix)).collect();
    replace_line_runs(m, transform, &runs)
}

/// Replaces each run of lines (first, last, 0-based; in order, disjoint)
/// with one placeholder line `[[{prefix}_N]]`, N counting that prefix's
/// placeholders; `true` when it changed the text. A run whose prefix's
/// shape the text already holds, or out of order or range, is left as it
/// is: unmasking must never turn the document's own text into something
/// else.
fn replace_line_runs(m: &mut Masked, transform: &str, runs: &[(usize, usize, &str)]) -> bool {
    let lines: Vec<&str> = m.text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut made: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    for &(start, end, prefix) in runs {
        let shape = format!("[[{prefix}_");
        if start < i || end < start || end >= lines.len() || m.text.contains(&shape) {
            continue;
        }
        out.extend(lines[i..start].iter().map(|l| (*l).to_owned()));
        let n = made.iter().filter(|(t, _)| t.starts_with(&shape)).count();
        let token = format!("{shape}{n}]]");
        made.push((token.clone(), lines[start..=end].join("\n")));
        out.push(token);
        i = end + 1;
    }
    if made.is_empty() {
        return false;
    }
    out.extend(lines[i..].iter().map(|l| (*l).to_owned()));
    m.text = out.join("\n");
    for (token, original) in made {
        m.push(token, original, transform);
    }
    true
}

/// Runs of consecutive lines for which `pred` holds, `min` lines or more.
fn runs_of(lines: &[&str], min: usize, pred: impl Fn(&str) -> bool) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, line) in lines.iter().enumerate() {
        match (pred(line), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if i - s >= min.max(1) {
                    runs.push((s, i - 1));
                }
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        if lines.len() - s >= min.max(1) {
            runs.push((s, lines.len() - 1));
        }
    }
    runs
}

fn blockquote_flatten(m: &mut Masked, o: &RecipeOptions) -> bool {
    let lines: Vec<&str> = m.text.split('\n').collect();
    let runs = runs_of(&lines, o.blockquote_min_lines, |l| {
        l.trim_start().starts_with('>')
    });
    mask_line_runs(m, "QUOTE_BLOCK", "blockquote_flatten", &runs)
}

fn code_fence_mask(m: &mut Masked, _o: &RecipeOptions) -> bool {
    let lines: Vec<&str> = m.text.split('\n').collect();
    let mut runs = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let fence: String = t.chars().take_while(|c| *c == '`' || *c == '~').collect();
        match &open {
            None if fence.len() >= 3 => open = Some((i, fence)),
            Some((start, f)) if t.starts_with(f.as_str()) && t.trim_end() == fence => {
                runs.push((*start, i));
                open = None;
            }
            _ => {}
        }
    }
    // An unclosed fence runs to the end of the chunk.
    if let Some((start, _)) = open {
        runs.push((start, lines.len() - 1));
    }
    mask_line_runs(m, "CODE_BLOCK", "code_fence_mask", &runs)
}

fn table_mask(m: &mut Masked, o: &RecipeOptions) -> bool {
    let lines: Vec<&str> = m.text.split('\n').collect();
    let runs: Vec<(usize, usize)> = runs_of(&lines, 2, |l| l.trim_start().starts_with('|'))
        .into_iter()
        .filter(|&(s, e)| {
            let has_delimiter = lines[s..=e].iter().any(|l| {
                let t = l.trim();
                t.contains('-') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
            });
            has_delimiter && (e - s + 1).saturating_sub(2) >= o.table_mask_min_rows
        })
        .collect();
    mask_line_runs(m, "TABLE_BLOCK", "table_mask", &runs)
}

fn is_emoji(c: char) -> bool {
    !c.is_ascii() && c.is_emoji_char()
}

fn emoji_mask(m: &mut Masked, o: &RecipeOptions) -> bool {
    if !o.emoji_mask || m.text.contains("[[EMOJI_") || !m.text.chars().any(is_emoji) {
        return false;
    }
    let mut out = String::with_capacity(m.text.len());
    let mut made = Vec::new();
    let mut n = m.count("emoji_mask");
    let mut chars = m.text.chars().peekable();
    while let Some(c) = chars.next() {
        if is_emoji(c) {
            let mut original = c.to_string();
            // Keep a variation selector or joiner sequence with its emoji.
            while let Some(&next) = chars.peek() {
                if matches!(next, '\u{FE0F}' | '\u{200D}')
                    || (original.ends_with('\u{200D}') && is_emoji(next))
                {
                    original.push(next);
                    chars.next();
                } else {
                    break;
                }
            }
            let token = format!("[[EMOJI_{n}]]");
            n += 1;
            out.push_str(&token);
            made.push((token, original));
        } else {
            out.push(c);
        }
    }
    m.text = out;
    for (token, original) in made {
        m.push(token, original, "emoji_mask");
    }
    true
}

/// Paragraphs (blank-line separated) of the text as line ranges.
fn paragraphs(lines: &[&str]) -> Vec<(usize, usize)> {
    runs_of(lines, 1, |l| !l.trim().is_empty())
}

fn formula_consolidate(m: &mut Masked, o: &RecipeOptions) -> bool {
    let lines: Vec<&str> = m.text.split('\n').collect();
    let runs: Vec<(usize, usize)> = paragraphs(&lines)
        .into_iter()
        .filter(|&(s, e)| {
            let math: usize = lines[s..=e]
                .iter()
                .map(|l| l.matches("[MATH_").count())
                .sum();
            math >= o.formula_min_math.max(1)
        })
        .collect();
    mask_line_runs(m, "FORMULA_BLOCK", "formula_consolidate", &runs)
}

fn digit_truncation(m: &mut Masked, o: &RecipeOptions) -> bool {
    let lines: Vec<&str> = m.text.split('\n').collect();
    let runs: Vec<(usize, usize)> = paragraphs(&lines)
        .into_iter()
        .filter(|&(s, e)| {
            let block = &lines[s..=e];
            let visible = block
                .iter()
                .flat_map(|l| l.chars())
                .filter(|c| !c.is_whitespace())
                .count();
            let digits = block
                .iter()
                .flat_map(|l| l.chars())
                .filter(char::is_ascii_digit)
                .count();
            block.len() >= o.digit_truncation_min_lines
                && visible > 0
                && digits as f64 / visible as f64 >= o.digit_truncation_threshold
                && !block.iter().any(|l| l.contains("[["))
        })
        .collect();
    mask_line_runs(m, "NUMERIC_TRUNCATED", "digit_truncation", &runs)
}

/// Byte ranges of whole-word, case-insensitive matches of `word`.
fn word_matches(text: &str, word: &str) -> Vec<(usize, usize)> {
    let lower = text.to_lowercase();
    // Lowercasing may change byte lengths; only use it when it does not.
    if lower.len() != text.len() {
        return Vec::new();
    }
    let w = word.to_lowercase();
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    lower
        .match_indices(&w)
        .filter(|(at, _)| {
            !is_word(text[..*at].chars().next_back())
                && !is_word(text[at + w.len()..].chars().next())
        })
        .map(|(at, _)| (at, at + w.len()))
        .collect()
}

/// Replaces whole-word `from` (exact case) with `to`.
fn replace_word(text: &str, from: &str, to: &str) -> String {
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, _) in text.match_indices(from) {
        if at < copied
            || is_word(text[..at].chars().next_back())
            || is_word(text[at + from.len()..].chars().next())
        {
            continue;
        }
        out.push_str(&text[copied..at]);
        out.push_str(to);
        copied = at + from.len();
    }
    out.push_str(&text[copied..]);
    out
}

/// `word` with the case of its first letter set like `like`'s.
fn same_case(word: &str, like: &str) -> String {
    let upper = like.chars().next().is_some_and(char::is_uppercase);
    let mut chars = word.chars();
    match chars.next() {
        Some(first) if upper => first.to_uppercase().chain(chars).collect(),
        _ => word.to_owned(),
    }
}

fn synonym_map(m: &mut Masked, o: &RecipeOptions) -> bool {
    if !o.synonym_map {
        return false;
    }
    let mut changed = false;
    for (word, substitute) in SYNONYMS {
        let found = word_matches(&m.text, word);
        if found.is_empty() || !word_matches(&m.text, substitute).is_empty() {
            continue;
        }
        let mut out = String::with_capacity(m.text.len());
        let mut copied = 0;
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut conflict = false;
        for (s, e) in found {
            let original = m.text[s..e].to_owned();
            let token = same_case(substitute, &original);
            out.push_str(&m.text[copied..s]);
            out.push_str(&token);
            copied = e;
            match pairs.iter().find(|(t, _)| *t == token) {
                // Two spellings ("ATTACK", "Attack") behind one substitute
                // could not be told apart again: leave the word alone.
                Some((_, o)) if *o != original => conflict = true,
                Some(_) => {}
                None => pairs.push((token, original)),
            }
        }
        out.push_str(&m.text[copied..]);
        if conflict {
            continue;
        }
        m.text = out;
        for (token, original) in pairs {
            m.push(token, original, SYNONYM);
        }
        changed = true;
    }
    changed
}

/// Markdown density of a (masked) text, which decides policy D.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Density {
    /// `**` pairs.
    pub bold_markers: usize,
    /// Backticks.
    pub backtick_count: usize,
    /// `` `…` `` spans.
    pub code_span_count: usize,
    /// Heading lines with no text.
    pub empty_heading_count: usize,
    /// Horizontal rules.
    pub hr_count: usize,
}

impl Density {
    /// Measures `text`.
    pub fn of(text: &str) -> Density {
        let mut d = Density::default();
        for line in text.lines() {
            let t = line.trim();
            d.bold_markers += line.matches("**").count() / 2;
            let ticks = line.matches('`').count();
            d.backtick_count += ticks;
            d.code_span_count += ticks / 2;
            if !t.is_empty() && t.chars().all(|c| c == '#') {
                d.empty_heading_count += 1;
            }
            if is_hr(t) {
                d.hr_count += 1;
            }
        }
        d
    }

    /// `true` when a threshold is reached (bold 8, backticks 12, code
    /// spans 8, one empty heading, one rule, or 20 in all).
    pub fn exceeded(&self) -> bool {
        self.bold_markers >= 8
            || self.backtick_count >= 12
            || self.code_span_count >= 8
            || self.empty_heading_count >= 1
            || self.hr_count >= 1
            || self.bold_markers
                + self.backtick_count
                + self.code_span_count
                + self.empty_heading_count
                + self.hr_count
                >= 20
    }
}

fn is_hr(t: &str) -> bool {
    let c: Vec<char> = t.chars().filter(|c| !c.is_whitespace()).collect();
    c.len() >= 3
        && (c.iter().all(|&x| x == '-')
            || c.iter().all(|&x| x == '*')
            || c.iter().all(|&x| x == '_'))
}

/// The plain-text projection of a masked text (policy D), line for line:
/// rules and empty headings become blank lines, headings `Title:`,
/// quote prefixes, emphasis markers and backticks go, list markers become
/// `•`. Placeholders are kept exactly. The number of lines never changes.
pub fn markdown_strip(text: &str) -> String {
    text.split('\n')
        .map(strip_line)
        .collect::<Vec<_>>()
        .join("\n")
}

fn strip_line(line: &str) -> String {
    let t = line.trim();
    if is_hr(t) || (!t.is_empty() && t.chars().all(|c| c == '#')) {
        return String::new();
    }
    // Protect placeholders: their `_` and brackets are not markdown.
    let mut kept: Vec<String> = Vec::new();
    let mut s = protect(line, &mut kept);
    let indent_len = s.len() - s.trim_start().len();
    let (indent, mut body) = (s[..indent_len].to_owned(), s[indent_len..].to_owned());
    while let Some(rest) = body.strip_prefix('>') {
        body = rest.trim_start().to_owned();
    }
    if body.starts_with('#') {
        let title = body.trim_start_matches('#').trim();
        body = if title.is_empty() {
            String::new()
        } else {
            format!("{title}:")
        };
    }
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = body.strip_prefix(marker) {
            body = format!("• {rest}");
        }
    }
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && (body[digits..].starts_with(". ") || body[digits..].starts_with(") ")) {
        body = format!("• {}", &body[digits + 2..]);
    }
    body = body.replace("**", "").replace("__", "").replace('`', "");
    body = strip_single(&body, '*');
    body = strip_single(&body, '_');
    s = format!("{indent}{body}");
    restore(&s, &kept)
}

/// Removes `marker` where it opens or closes emphasis (next to a word on
/// one side only), keeping it inside words (`snake_case`, `2*3`).
fn strip_single(text: &str, marker: char) -> String {
    let chars: Vec<char> = text.chars().collect();
    let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric());
    chars
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            **c != marker
                || (word(i.checked_sub(1).and_then(|j| chars.get(j))) && word(chars.get(i + 1)))
        })
        .map(|(_, c)| *c)
        .collect()
}

fn protect(line: &str, kept: &mut Vec<String>) -> String {
    let mut out = String::new();
    let mut rest = line;
    loop {
        let next = [rest.find("[["), rest.find("[MATH_")]
            .into_iter()
            .flatten()
            .min();
        let Some(at) = next else { break };
        let close = if rest[at..].starts_with("[[") {
            "]]"
        } else {
            "]"
        };
        let Some(len) = rest[at..].find(close) else {
            break;
        };
        let end = at + len + close.len();
        out.push_str(&rest[..at]);
        out.push_str(&format!("\u{E000}{}\u{E001}", kept.len()));
        kept.push(rest[at..end].to_owned());
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn restore(text: &str, kept: &[String]) -> String {
    let mut out = text.to_owned();
    for (i, p) in kept.iter().enumerate() {
        out = out.replace(&format!("\u{E000}{i}\u{E001}"), p);
    }
    out
}

/// Estimated tokens saved by a mask, for the recipe log.
pub fn token_delta(before: &str, after: &str) -> i64 {
    i64::from(estimate_tokens(before)) - i64::from(estimate_tokens(after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn math_is_masked_and_restored() {
        let text = "Energy $E = mc^2$ and\n$$\n\\int_0^1 x\\,dx\n$$\ncosts $5 and $10.";
        let m = mask_math(text);
        assert_eq!(m.text, "Energy [MATH_0] and\n[MATH_1]\ncosts $5 and $10.");
        assert_eq!(m.mapping[0].original, "$E = mc^2$");
        assert_eq!(m.unmask(&m.text), text);
        assert_eq!(m.unmask("Energie [MATH_0] et"), "Energie $E = mc^2$ et");
    }

    #[test]
    fn recipes_mask_quotes_code_tables_emoji_and_words() {
        let text = "> a\n> b\n> c\n> d\n> e\n\n```mermaid\ngraph TD\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n| 5 | 6 |\n\nDone 🚀 ✅ after the attack.";
        let base = mask_math(text);
        let m = apply_recipe(&base, &RecipeOptions::default());
        assert_eq!(
            m.transforms,
            [
                "blockquote_flatten",
                "code_fence_mask",
                "table_mask",
                "emoji_mask",
                "synonym_map"
            ]
        );
        assert_eq!(
            m.text,
            "[[QUOTE_BLOCK_0]]\n\n[[CODE_BLOCK_0]]\n\n[[TABLE_BLOCK_0]]\n\nDone [[EMOJI_0]] [[EMOJI_1]] after the incident."
        );
        assert_eq!(m.unmask(&m.text), text);
    }

    #[test]
    fn formula_and_digit_blocks() {
        let text = "We have $a$, $b$ and $c$ here.\n\n1 2 3 4\n5 6 7 8\n9 10 11\n12 13\n14 15 x\n";
        let m = apply_recipe(&mask_math(text), &RecipeOptions::default());
        assert_eq!(m.transforms, ["formula_consolidate", "digit_truncation"]);
        assert_eq!(m.text, "[[FORMULA_BLOCK_0]]\n\n[[NUMERIC_TRUNCATED_0]]\n");
        assert_eq!(m.unmask(&m.text), text);
    }

    #[test]
    fn a_text_that_already_looks_masked_is_left_alone() {
        let text = "Literal [MATH_0] and $x$.";
        assert_eq!(mask_math(text).text, text);
        let text = "The word incident and the attack.";
        let m = apply_recipe(&mask_math(text), &RecipeOptions::default());
        assert!(m.transforms.is_empty(), "{m:?}");
    }

    #[test]
    fn protected_blocks_become_one_line_each_and_come_back() {
        let text = "Intro.\n```\nx = 1\ny = $2$\n```\nMiddle $a$.\n| a |\n|---|\nEnd.";
        let m = mask_math_in(mask_protected(
            text,
            &[(1, 4, "CODE_BLOCK"), (6, 7, "TABLE_BLOCK")],
        ));
        assert_eq!(
            m.text,
            "Intro.\n[[CODE_BLOCK_0]]\nMiddle [MATH_0].\n[[TABLE_BLOCK_0]]\nEnd."
        );
        assert_eq!(m.unmask(&m.text), text);
        assert_eq!(m.hidden_lines("[[CODE_BLOCK_0]]"), 3);
        assert_eq!(m.hidden_lines("Middle [MATH_0]."), 0);
        // Math around a block: the block's lines only.
        let m = mask_math_in(mask_protected(
            "$$\nx\n```\na\n```\n$$",
            &[(2, 4, "CODE_BLOCK")],
        ));
        assert_eq!(m.text, "[MATH_0]");
        assert_eq!(m.hidden_lines("[MATH_0]"), 2, "{m:?}");
        assert_eq!(m.hidden_lines("End."), 0);
        // Math inside the code block is the block's, not masked apart.
        assert_eq!(
            m.mapping
                .iter()
                .filter(|p| p.transform == "math_mask")
                .count(),
            1
        );
        // A text that already holds the shape keeps that kind as it is.
        let own = "[[CODE_BLOCK_0]] is how we write it.\n```\nx\n```";
        let m = mask_protected(own, &[(1, 3, "CODE_BLOCK")]);
        assert_eq!(m.text, own);
        assert!(m.mapping.is_empty());
        // Runs out of range or out of order are skipped, not trusted.
        let m = mask_protected("a\nb", &[(1, 5, "CODE_BLOCK"), (1, 0, "HTML_BLOCK")]);
        assert_eq!(m.text, "a\nb");
    }

    #[test]
    fn strip_keeps_lines_and_placeholders() {
        let text = "### Title\n---\n> **Bold** and `code` with [[EMOJI_0]] and [MATH_1]\n- item_one *it*\n###";
        let s = markdown_strip(text);
        assert_eq!(
            s,
            "Title:\n\nBold and code with [[EMOJI_0]] and [MATH_1]\n• item_one it\n"
        );
        assert_eq!(s.split('\n').count(), text.split('\n').count());
        assert!(Density::of(text).exceeded());
        assert!(!Density::of("plain text").exceeded());
    }

    proptest! {
        #[test]
        fn masking_round_trips(text in "[a-z $\\\\>|`~#*_\\n0-9🚀-]{0,200}") {
            let m = mask_math(&text);
            prop_assert_eq!(m.unmask(&m.text), text.clone());
            let r = apply_recipe(&m, &RecipeOptions { blockquote_min_lines: 2, table_mask_min_rows: 1, digit_truncation_min_lines: 1, ..RecipeOptions::default() });
            prop_assert_eq!(r.unmask(&r.text), text.clone());
            prop_assert_eq!(markdown_strip(&r.text).split('\n').count(), r.text.split('\n').count());
        }

        #[test]
        fn protected_masking_round_trips_and_counts_every_line(
            text in "[a-z $`|\\[\\]_\n0-9]{0,200}",
            cuts in proptest::collection::vec((0usize..12, 0usize..4), 0..5),
        ) {
            let n = text.split('\n').count();
            // Ordered, disjoint runs from the drawn cuts.
            let mut runs = Vec::new();
            let mut at = 0;
            for (gap, len) in cuts {
                let start = at + gap;
                if start + len >= n { break; }
                runs.push((start, start + len, "CODE_BLOCK"));
                at = start + len + 1;
            }
            let m = mask_math_in(mask_protected(&text, &runs));
            prop_assert_eq!(m.unmask(&m.text), text.clone());
            // Without math (whose lines were always shown collapsed),
            // every line of the text is counted once.
            let plain = text.replace('$', "");
            let m = mask_math_in(mask_protected(&plain, &runs));
            let counted: usize = m.text.split('\n').map(|l| 1 + m.hidden_lines(l)).sum();
            prop_assert_eq!(counted, n);
        }

        #[test]
        fn vocabulary_round_trips(words in proptest::collection::vec(prop_oneof![Just("attack"), Just("Attack"), Just("the"), Just("password"), Just("passphrase"), Just("attaque"), Just("x")], 0..12)) {
            let text = words.join(" ");
            let r = apply_recipe(&mask_math(&text), &RecipeOptions::default());
            prop_assert_eq!(r.unmask(&r.text), text);
        }
    }
}
