//! Code fences (```` ``` ```` or `~~~` lines) around a payload in model
//! text: models often wrap the JSON or YAML they were asked for in one.

/// The contents of every closed fenced block (```` ``` ```` or `~~~`, any
/// info string) in `text`, in order.
pub fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut open: Option<(&str, usize)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let fence = if trimmed.starts_with("```") {
            Some("```")
        } else if trimmed.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (open, fence) {
            (None, Some(f)) => open = Some((f, offset + line.len())),
            (Some((f, start)), Some(g)) if f == g && trimmed.trim_end() == f => {
                blocks.push(&text[start..offset]);
                open = None;
            }
            _ => {}
        }
        offset += line.len();
    }
    blocks
}

/// The payload to parse: the content of the one fenced block when there is
/// exactly one, otherwise the whole text.
pub fn payload(text: &str) -> &str {
    let blocks = fenced_blocks(text);
    if blocks.len() == 1 {
        blocks[0].trim()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwraps_a_single_fence() {
        assert_eq!(payload("```json\n[1]\n```"), "[1]");
        assert_eq!(payload("intro\n~~~yaml\na: 1\n~~~\nbye"), "a: 1");
    }

    #[test]
    fn keeps_text_with_zero_or_several_fences() {
        assert_eq!(payload("[1]"), "[1]");
        let two = "```\n1\n```\n```\n2\n```";
        assert_eq!(fenced_blocks(two), vec!["1\n", "2\n"]);
        assert_eq!(payload(two), two);
        assert_eq!(payload("```\nunclosed"), "```\nunclosed");
    }
}
