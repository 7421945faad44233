//! Deterministic workloads: a small pseudo-random generator, edit ops
//! over a document, and the document and 1,000 ops the review benchmarks
//! time (one definition, so that the in-memory, on-disk and whole-process
//! benchmarks measure the same work).

use crate::corpus::shared_seed_000;
use serde_json::{json, Value};

/// A small deterministic generator (xorshift), for tests that need
/// reproducible pseudo-random choices without proptest (a printed seed
/// replays a run).
pub struct Rng(pub u64);

impl Rng {
    /// Advances the generator and returns its new state (never 0 unless
    /// seeded with 0).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Deterministic ops over a document: every op targets a distinct line,
/// never next to another op's line, mixing partial and whole-line
/// replaces, inserts, deletes and flags. At most `count` ops (fewer when
/// the document has too few lines).
pub fn generated_ops(text: &str, count: usize, seed: u64) -> Vec<Value> {
    let lines: Vec<&str> = text.split('\n').collect();
    let n = if text.ends_with('\n') {
        lines.len() - 1
    } else {
        lines.len()
    };
    let mut rng = Rng(seed | 1);
    let mut used = vec![false; n + 2];
    let mut ops = Vec::new();
    let mut attempts = 0;
    while ops.len() < count && attempts < count * 20 {
        attempts += 1;
        let line = 1 + rng.below(n.max(1));
        if used[line] || used[line.saturating_sub(1)] || used[(line + 1).min(n + 1)] {
            continue;
        }
        used[line] = true;
        let content = lines[line - 1].trim_end_matches('\r');
        let word = content
            .split_whitespace()
            .find(|w| w.len() > 3 && content.matches(*w).count() == 1);
        let op = match (rng.below(10), word) {
            (0..=3, Some(word)) => {
                json!({"action": "replace", "kind": "typo", "target": {"line_start": line},
                "before_text": word, "after_text": format!("{word}é")})
            }
            (4 | 5, _) => {
                json!({"action": "replace", "kind": "terminology", "target": {"line_start": line},
                "after_text": format!("Rewritten line {line} — ünïcode ✓")})
            }
            (6 | 7, _) => {
                json!({"action": "insert", "kind": "grammar", "target": {"line_start": line, "line_end": line},
                "after_text": format!("Inserted after {line}.\nSecond inserted line.")})
            }
            (8, _) => {
                json!({"action": "delete", "target": {"line_start": line}, "rationale": "test deletion"})
            }
            _ => {
                json!({"action": "flag_only", "target": {"line_start": line}, "rationale": "check this"})
            }
        };
        ops.push(op);
    }
    ops
}

/// The document the review benchmarks edit, and what it is: seed 000
/// when the shared corpus is present, else a generated document of about
/// the same size (1,600 lines), so that the benchmarks also run on a
/// fresh clone.
pub fn bench_document() -> (String, &'static str) {
    if let Some(text) = shared_seed_000().and_then(|p| std::fs::read_to_string(p).ok()) {
        return (text, "seed 000");
    }
    let mut text = String::new();
    for i in 0..1600 {
        if i % 9 == 0 {
            text.push_str(&format!("## Section {i}\n"));
        } else if i % 9 == 8 {
            text.push('\n');
        } else {
            text.push_str(&format!(
                "Line {i} of the generated document, with some wörds to edit.\n"
            ));
        }
    }
    (text, "a generated 1,600-line document (../shared absent)")
}

/// The benchmarks' ops: `count` ops on distinct lines spread over the
/// document (a fixed pseudo-random choice, in line order), one op in five
/// of each kind: a partial replace (a whole-line one when the line has no
/// unique word), a whole-line replace, an insert, a delete and a flag.
pub fn bench_ops(text: &str, count: usize) -> Vec<Value> {
    let lines: Vec<&str> = text.lines().collect();
    let mut order: Vec<usize> = (1..=lines.len()).collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for i in (1..order.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order.truncate(count.min(lines.len()));
    order.sort_unstable();
    order
        .iter()
        .enumerate()
        .map(|(k, &line)| {
            let content = lines[line - 1];
            let word = content
                .split_whitespace()
                .find(|w| w.len() > 3 && content.matches(*w).count() == 1);
            match (k % 5, word) {
                (0, Some(w)) => json!({"action": "replace", "kind": "typo", "target": {"line_start": line},
                                        "before_text": w, "after_text": format!("{w}·")}),
                (0 | 1, _) => json!({"action": "replace", "kind": "style", "target": {"line_start": line},
                                      "after_text": format!("Rewritten line {k}."), "rationale": "bench"}),
                (2, _) => json!({"action": "insert", "kind": "clarity", "target": {"line_start": line, "line_end": line},
                                 "after_text": format!("Inserted line {k}."), "rationale": "bench"}),
                (3, _) => json!({"action": "delete", "target": {"line_start": line}, "rationale": "bench"}),
                _ => json!({"action": "flag_only", "target": {"line_start": line}, "rationale": "bench"}),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_are_deterministic_and_target_distinct_lines() {
        let (text, _) = bench_document();
        let ops = bench_ops(&text, 1000);
        assert_eq!(ops, bench_ops(&text, 1000));
        assert_eq!(ops.len(), 1000.min(text.lines().count()));
        let lines: Vec<u64> = ops
            .iter()
            .filter_map(|op| op["target"]["line_start"].as_u64())
            .collect();
        assert!(lines.windows(2).all(|w| w[0] < w[1]), "distinct, in order");
        let generated = generated_ops(&text, 60, 7);
        assert_eq!(generated, generated_ops(&text, 60, 7));
        assert!(!generated.is_empty() && generated.len() <= 60);
    }
}
