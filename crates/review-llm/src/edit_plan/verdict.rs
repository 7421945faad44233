//! The tutor's answer: `VERDICT: ACCEPTED | CORRECTED | REJECTED`, a
//! `REASON:` line, and for a correction the corrected ops after
//! `CORRECTION:`.

/// A tutor's verdict on a chunk's proposals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TutorVerdict {
    /// Keep the worker's ops.
    Accepted {
        /// The tutor's reason.
        reason: String,
    },
    /// Use the tutor's ops instead (text to run through the ladder).
    Corrected {
        /// The tutor's reason.
        reason: String,
        /// The corrected ops as the tutor wrote them.
        correction: String,
    },
    /// Regenerate conservatively.
    Rejected {
        /// The tutor's reason.
        reason: String,
    },
}

/// Parses a tutor answer; `None` when it names no verdict (which the
/// planner treats as a failed tutor: the chunk's ops are rejected).
pub fn parse_verdict(answer: &str) -> Option<TutorVerdict> {
    let mut verdict: Option<&str> = None;
    let mut reason = String::new();
    let mut correction: Option<String> = None;
    let lines: Vec<&str> = answer.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim().trim_start_matches(['*', '#', ' ']).trim();
        let upper = t.to_ascii_uppercase();
        if verdict.is_none() {
            if let Some(rest) = upper.strip_prefix("VERDICT") {
                let rest = rest.trim_start_matches([':', ' ', '*']);
                verdict = ["ACCEPTED", "CORRECTED", "REJECTED"]
                    .into_iter()
                    .find(|v| rest.starts_with(v));
                continue;
            }
        }
        if reason.is_empty() && upper.starts_with("REASON") {
            reason = t["REASON".len()..]
                .trim_start_matches([':', ' ', '*'])
                .trim()
                .to_owned();
            continue;
        }
        if upper.starts_with("CORRECTION") {
            let first = t["CORRECTION".len()..].trim_start_matches([':', ' ', '*']);
            let mut body = vec![first];
            body.extend(lines[i + 1..].iter().copied());
            correction = Some(body.join("\n").trim().to_owned());
            break;
        }
    }
    match verdict? {
        "ACCEPTED" => Some(TutorVerdict::Accepted { reason }),
        "REJECTED" => Some(TutorVerdict::Rejected { reason }),
        _ => Some(TutorVerdict::Corrected {
            reason,
            correction: correction.unwrap_or_default(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_verdicts() {
        assert_eq!(
            parse_verdict("VERDICT: ACCEPTED\nREASON: fine."),
            Some(TutorVerdict::Accepted {
                reason: "fine.".into()
            })
        );
        assert_eq!(
            parse_verdict("**Verdict:** REJECTED\nReason: would change a number."),
            Some(TutorVerdict::Rejected {
                reason: "would change a number.".into()
            })
        );
        let v = parse_verdict(
            "VERDICT: CORRECTED\nREASON: severity.\nCORRECTION:\n[{\"action\": \"replace\"}]\n",
        );
        assert_eq!(
            v,
            Some(TutorVerdict::Corrected {
                reason: "severity.".into(),
                correction: "[{\"action\": \"replace\"}]".into()
            })
        );
        assert_eq!(parse_verdict("I think these are good."), None);
        assert_eq!(parse_verdict("VERDICT: MAYBE"), None);
    }
}
