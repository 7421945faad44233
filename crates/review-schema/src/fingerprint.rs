//! The `chunk_fingerprints` artifact of `md_fingerprint_chunk`: the
//! structural features of each chunk, the thresholds that decide whether a
//! chunk triggers a content recipe, and which triggers fired.

use serde::{Deserialize, Serialize};

/// What `md_fingerprint_chunk` measures in a chunk's own lines.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkFeatures {
    /// Body rows of the pipe tables starting in the chunk.
    pub table_rows: u32,
    /// Pipe tables starting in the chunk.
    pub table_count: u32,
    /// Display math blocks plus inline math spans.
    pub math_count: u32,
    /// Emoji code points (non-ASCII characters with the Unicode `Emoji`
    /// property).
    pub emoji_count: u32,
    /// Digits divided by non-whitespace characters (0 for an empty chunk),
    /// rounded to 4 decimals.
    pub digit_density: f64,
    /// List items (`-`, `*`, `+`, `1.`, `1)`) outside code.
    pub bullet_count: u32,
    /// Lines starting with `>`.
    pub blockquote_lines: u32,
    /// Whole-word, case-insensitive matches of the safety keywords.
    pub safety_keyword_hits: u32,
    /// Fenced code blocks starting in the chunk.
    pub code_fence_count: u32,
    /// Estimated tokens of the chunk (chars / 4).
    pub content_tokens: u32,
}

/// The fingerprint of one chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkFingerprint {
    /// The chunk's ID.
    pub chunk_id: String,
    /// The section the chunk belongs to (`S0` for the preamble).
    pub section_id: String,
    /// First line it owns (1-based).
    pub line_start: u32,
    /// Last line it owns (1-based, inclusive).
    pub line_end: u32,
    /// The measured features, written as fields of this object.
    #[serde(flatten)]
    pub features: ChunkFeatures,
    /// `true` when any trigger fired.
    pub triggers_recipe: bool,
    /// The triggers that fired, by name.
    pub triggers: Vec<String>,
}

/// The `chunk_fingerprints` artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkFingerprints {
    /// `sha256:` of the document.
    pub doc_hash: String,
    /// Number of chunks.
    pub chunk_count: usize,
    /// Number of chunks that trigger a recipe.
    pub triggered_count: usize,
    /// The thresholds used.
    pub config: FingerprintConfig,
    /// One fingerprint per chunk, in chunk order.
    pub fingerprints: Vec<ChunkFingerprint>,
}

/// When a chunk `triggers_recipe`: it holds content a small model tends to
/// damage or refuse (tables, math, emoji, code, quotes, security words),
/// so the LLM planner applies a content recipe (masking) to it before the
/// call. A threshold of 0 turns its trigger off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FingerprintConfig {
    /// Table rows that trigger together with any emoji or blockquote line.
    pub table_rows_with_emoji_or_quote: u32,
    /// Trigger when the chunk has both math and a table.
    pub math_with_table: bool,
    /// Emoji code points that trigger on their own.
    pub emoji_min: u32,
    /// Blockquote lines that trigger on their own.
    pub blockquote_min_lines: u32,
    /// Code fences that trigger on their own.
    pub code_fence_min: u32,
    /// Table rows that trigger on their own.
    pub table_rows_min: u32,
    /// Math expressions that trigger on their own.
    pub math_min: u32,
    /// Security words that make small models refuse or self-censor;
    /// matched whole-word, case-insensitively.
    pub safety_keywords: Vec<String>,
}

impl Default for FingerprintConfig {
    fn default() -> Self {
        FingerprintConfig {
            table_rows_with_emoji_or_quote: 3,
            math_with_table: true,
            emoji_min: 5,
            blockquote_min_lines: 5,
            code_fence_min: 1,
            table_rows_min: 3,
            math_min: 3,
            safety_keywords: [
                "exploit",
                "exploits",
                "attack",
                "attacks",
                "attacker",
                "malware",
                "ransomware",
                "vulnerability",
                "vulnerabilities",
                "injection",
                "payload",
                "bypass",
                "jailbreak",
                "backdoor",
                "phishing",
                "weapon",
                "kill",
                "password",
                "credentials",
                "attaque",
                "attaques",
                "vulnérabilité",
                "vulnérabilités",
                "piratage",
                "contournement",
                "mot de passe",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        }
    }
}
