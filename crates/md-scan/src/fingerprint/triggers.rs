//! The trigger conditions of `triggers_recipe`: the feature thresholds
//! past which a chunk is likely to make a model answer with nothing.

use super::ChunkFeatures;
use crate::config::FingerprintConfig;

/// `true` when `threshold` is on (non-zero) and `value` reaches it.
fn reaches(value: u32, threshold: u32) -> bool {
    threshold > 0 && value >= threshold
}

/// The names of the triggers a chunk fires, always in this order (so the
/// list is stable across runs):
///
/// | name | condition (defaults) |
/// |------|----------------------|
/// | `table_rows_with_emoji_or_quote` | table rows ≥ 3 and any emoji or blockquote line |
/// | `math_with_table` | math > 0 and tables > 0 |
/// | `emoji` | emoji ≥ 5 |
/// | `blockquote` | blockquote lines ≥ 5 |
/// | `code_fence` | code fences ≥ 1 |
/// | `table_rows` | table rows ≥ 3 |
/// | `math` | math ≥ 3 |
pub fn triggers(f: &ChunkFeatures, c: &FingerprintConfig) -> Vec<&'static str> {
    let mut fired = Vec::new();
    if reaches(f.table_rows, c.table_rows_with_emoji_or_quote)
        && (f.emoji_count > 0 || f.blockquote_lines > 0)
    {
        fired.push("table_rows_with_emoji_or_quote");
    }
    if c.math_with_table && f.math_count > 0 && f.table_count > 0 {
        fired.push("math_with_table");
    }
    if reaches(f.emoji_count, c.emoji_min) {
        fired.push("emoji");
    }
    if reaches(f.blockquote_lines, c.blockquote_min_lines) {
        fired.push("blockquote");
    }
    if reaches(f.code_fence_count, c.code_fence_min) {
        fired.push("code_fence");
    }
    if reaches(f.table_rows, c.table_rows_min) {
        fired.push("table_rows");
    }
    if reaches(f.math_count, c.math_min) {
        fired.push("math");
    }
    fired
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn features() -> ChunkFeatures {
        ChunkFeatures::default()
    }

    #[test]
    fn each_v73_trigger_at_its_threshold() {
        let c = FingerprintConfig::default();
        assert!(triggers(&features(), &c).is_empty());
        let f = ChunkFeatures {
            table_rows: 3,
            table_count: 1,
            emoji_count: 1,
            ..features()
        };
        assert_eq!(
            triggers(&f, &c),
            ["table_rows_with_emoji_or_quote", "table_rows"]
        );
        let f = ChunkFeatures {
            table_rows: 2,
            table_count: 1,
            math_count: 1,
            ..features()
        };
        assert_eq!(triggers(&f, &c), ["math_with_table"]);
        assert_eq!(
            triggers(
                &ChunkFeatures {
                    emoji_count: 4,
                    ..features()
                },
                &c
            ),
            Vec::<&str>::new()
        );
        assert_eq!(
            triggers(
                &ChunkFeatures {
                    emoji_count: 5,
                    ..features()
                },
                &c
            ),
            ["emoji"]
        );
        assert_eq!(
            triggers(
                &ChunkFeatures {
                    blockquote_lines: 5,
                    ..features()
                },
                &c
            ),
            ["blockquote"]
        );
        assert_eq!(
            triggers(
                &ChunkFeatures {
                    code_fence_count: 1,
                    ..features()
                },
                &c
            ),
            ["code_fence"]
        );
        assert_eq!(
            triggers(
                &ChunkFeatures {
                    math_count: 3,
                    ..features()
                },
                &c
            ),
            ["math"]
        );
    }

    #[test]
    fn zero_thresholds_turn_triggers_off() {
        let c = FingerprintConfig {
            code_fence_min: 0,
            emoji_min: 8,
            ..FingerprintConfig::default()
        };
        let f = ChunkFeatures {
            code_fence_count: 4,
            emoji_count: 6,
            ..features()
        };
        assert!(triggers(&f, &c).is_empty());
    }

    proptest! {
        /// Raising any feature never removes a trigger (monotonicity).
        #[test]
        fn triggers_are_monotonic(rows in 0u32..6, tables in 0u32..3, math in 0u32..5, emoji in 0u32..9, quote in 0u32..9, fences in 0u32..3, bump in 0usize..6) {
            let c = FingerprintConfig::default();
            let f = ChunkFeatures { table_rows: rows, table_count: tables, math_count: math, emoji_count: emoji, blockquote_lines: quote, code_fence_count: fences, ..features() };
            let mut g = f.clone();
            match bump { 0 => g.table_rows += 1, 1 => g.table_count += 1, 2 => g.math_count += 1, 3 => g.emoji_count += 1, 4 => g.blockquote_lines += 1, _ => g.code_fence_count += 1 }
            let before = triggers(&f, &c);
            let after = triggers(&g, &c);
            for t in before { prop_assert!(after.contains(&t)); }
        }
    }
}
