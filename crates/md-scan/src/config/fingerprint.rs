//! `FingerprintConfig`: the v7.3 recipe thresholds of
//! `md_fingerprint_chunk`.

use serde::{Deserialize, Serialize};

/// When a chunk `triggers_recipe` (spec §7, "v7.3 Expanded Triggers").
/// A threshold of 0 turns its trigger off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FingerprintConfig {
    /// Table rows that trigger together with any emoji or blockquote line.
    pub table_rows_with_emoji_or_quote: u32,
    /// Trigger when the chunk has both math and a table.
    pub math_with_table: bool,
    /// Emoji code points that trigger on their own (v7.2: 8, v7.3: 5).
    pub emoji_min: u32,
    /// Blockquote lines that trigger on their own.
    pub blockquote_min_lines: u32,
    /// Code fences that trigger on their own (v7.3).
    pub code_fence_min: u32,
    /// Table rows that trigger on their own (v7.3).
    pub table_rows_min: u32,
    /// Math expressions that trigger on their own (v7.3).
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
