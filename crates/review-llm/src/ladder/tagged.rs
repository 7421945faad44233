//! Level 4, `tagged_payload`: ops between explicit markers.

use super::{relaxed, strict, yaml, Found};

const PAIRS: &[(&str, &str)] = &[
    ("BEGIN_EDIT_OPS", "END_EDIT_OPS"),
    ("<EDIT_OPS>", "</EDIT_OPS>"),
];

/// `true` when the text contains an opening marker.
pub(crate) fn has_tags(text: &str) -> bool {
    PAIRS.iter().any(|(open, _)| text.contains(open))
}

/// The contents of every tagged block. A block whose closing marker is
/// missing runs to the next opening marker, or to the end of the text
/// (output cut by `max_tokens`): small models often repeat the opening
/// marker and an empty list until the budget is spent.
fn tagged_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    for (open, close) in PAIRS {
        let mut rest = text;
        while let Some(at) = rest.find(open) {
            let after = &rest[at + open.len()..];
            match after.find(close) {
                Some(end) => {
                    blocks.push(&after[..end]);
                    rest = &after[end + close.len()..];
                }
                None => match after.find(open) {
                    Some(next) => {
                        blocks.push(&after[..next]);
                        rest = &after[next..];
                    }
                    None => {
                        blocks.push(after);
                        break;
                    }
                },
            }
        }
    }
    blocks
}

/// Parses each tagged block with levels 1–3 and concatenates their ops.
pub(crate) fn extract(text: &str) -> Result<Found, String> {
    let blocks = tagged_blocks(text);
    if blocks.is_empty() {
        return Err("no BEGIN_EDIT_OPS/END_EDIT_OPS or <EDIT_OPS> tags".to_string());
    }
    let mut all = Found::ops(Vec::new(), 0);
    let mut parsed = 0;
    let mut errors = Vec::new();
    for block in blocks {
        let block = block.trim();
        let found = strict::extract(block)
            .or_else(|_| relaxed::extract(block, true))
            .or_else(|_| yaml::extract(block));
        match found {
            Ok(found) => {
                parsed += 1;
                all.ops.extend(found.ops);
                all.skipped += found.skipped;
                all.rejected.extend(found.rejected);
            }
            Err(e) => errors.push(e),
        }
    }
    if parsed == 0 {
        return Err(format!(
            "tagged content did not parse: {}",
            errors.join("; ")
        ));
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tag_styles_and_truncated_blocks() {
        let text = "BEGIN_EDIT_OPS\n[{'action':'delete','line':1}]\nEND_EDIT_OPS\n<EDIT_OPS>\n- action: flag\n  line: 2\n</EDIT_OPS>\nBEGIN_EDIT_OPS [{\"action\":\"delete\",\"line\":3}]";
        let found = extract(text).unwrap();
        let lines: Vec<_> = found.ops.iter().map(|o| o.line_start).collect();
        assert_eq!(lines, vec![Some(1), Some(3), Some(2)]);
    }

    #[test]
    fn empty_tagged_list_means_no_ops() {
        assert!(extract("BEGIN_EDIT_OPS\n[]\nEND_EDIT_OPS")
            .unwrap()
            .ops
            .is_empty());
        assert!(extract("BEGIN_EDIT_OPS\nnonsense\nEND_EDIT_OPS").is_err());
        assert!(extract("no tags").is_err());
    }

    #[test]
    fn regression_a_repeated_opening_marker_without_a_close_is_several_blocks() {
        // SmolLM2-135M's answer to seed 000's chunks: the marker and an
        // empty list, again and again, never closed. It says "no changes".
        let text =
            "BEGIN_EDIT_OPS\n[]\n\nBEGIN_EDIT_OPS\n[]\nBEGIN_EDIT_OPS\n[]\nBEGIN_EDIT_OPS\n[";
        let found = extract(text).unwrap();
        assert!(found.ops.is_empty());
        // Ops in one of the blocks are kept, whatever the others hold.
        let text = "BEGIN_EDIT_OPS\n[]\nBEGIN_EDIT_OPS\n[{\"action\":\"delete\",\"line\":4}]\nBEGIN_EDIT_OPS\n[";
        let found = extract(text).unwrap();
        assert_eq!(found.ops.len(), 1);
        assert_eq!(found.ops[0].line_start, Some(4));
    }
}
