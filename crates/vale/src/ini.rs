//! `.vale.ini`: where the styles are, which apply to which files, and
//! each rule's switch.

use crate::Level;

/// A `.vale.ini`, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValeIni {
    /// `StylesPath`, as written (relative to the file's folder).
    pub styles_path: Option<String>,
    /// `MinAlertLevel`: alerts below it are not reported.
    pub min_level: Option<Level>,
    /// `Vocab`: the vocabularies (`<StylesPath>/config/vocabularies/<name>`).
    pub vocab: Vec<String>,
    /// The `[glob]` sections, in file order.
    pub sections: Vec<Section>,
    /// Each key this crate does not act on, with its line: said once.
    pub unsupported: Vec<String>,
}

/// One `[glob]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    /// The files it applies to (`*.md`, `*.{md,txt}`).
    pub glob: String,
    /// `BasedOnStyles`: every rule of these styles is on.
    pub based_on: Vec<String>,
    /// `Style.Rule = YES | NO | suggestion | warning | error`, in order.
    pub switches: Vec<(String, Switch)>,
    /// `TokenIgnores`: patterns of inline text no rule reads (as Vale,
    /// split on commas).
    pub token_ignores: Vec<String>,
    /// `BlockIgnores`: patterns of whole blocks no rule reads.
    pub block_ignores: Vec<String>,
}

/// What a section says of one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// `YES`: on, at its own level.
    On,
    /// `NO`: off.
    Off,
    /// On, at this level.
    At(Level),
}

/// Why a `.vale.ini` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct IniError {
    /// The 1-based line.
    pub line: usize,
    /// What is wrong there.
    pub reason: String,
}

impl ValeIni {
    /// Reads the text of a `.vale.ini`.
    pub fn parse(text: &str) -> Result<ValeIni, IniError> {
        let mut ini = ValeIni::default();
        // Inside `[formats]` (file types mapped to others): not a glob.
        let mut in_formats = false;
        for (line, joined) in logical_lines(text) {
            let trimmed = joined.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            if let Some(glob) = trimmed.strip_prefix('[') {
                let glob = glob.strip_suffix(']').ok_or_else(|| IniError {
                    line,
                    reason: format!("a section `{trimmed}` without its closing `]`"),
                })?;
                in_formats = glob.trim() == "formats";
                if in_formats {
                    ini.unsupported.push(format!(
                        "line {line}: `[formats]` is not acted on (koas reads Markdown)"
                    ));
                } else {
                    ini.sections.push(Section {
                        glob: glob.trim().to_owned(),
                        ..Section::default()
                    });
                }
                continue;
            }
            if in_formats {
                continue;
            }
            let Some((key, value)) = trimmed.split_once('=') else {
                return Err(IniError {
                    line,
                    reason: format!("`{trimmed}` is neither a section nor `key = value`"),
                });
            };
            let key = key.trim();
            // A value may be quoted (`StylesPath = "styles"`).
            let value = value.trim();
            // An inline comment needs a space before its `#` or `;`.
            let value = [" #", " ;"]
                .iter()
                .filter_map(|mark| value.find(mark))
                .min()
                .map_or(value, |cut| value[..cut].trim_end());
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            let list = || -> Vec<String> {
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
                    .collect()
            };
            match (ini.sections.last_mut(), key) {
                (None, "StylesPath") => ini.styles_path = Some(value.to_owned()),
                (None, "MinAlertLevel") => {
                    ini.min_level = Some(level(value).ok_or_else(|| IniError {
                        line,
                        reason: format!(
                            "MinAlertLevel `{value}`: use suggestion, warning or error"
                        ),
                    })?)
                }
                (None, "Vocab") => ini.vocab = list(),
                (Some(section), "BasedOnStyles") => section.based_on = list(),
                (Some(section), "TokenIgnores") => section.token_ignores.extend(list()),
                (Some(section), "BlockIgnores") => section.block_ignores.extend(list()),
                // `Style.Rule = …`, or `Style = YES|NO` for a whole style
                // (a bare key with another value is one of Vale's own).
                (Some(section), rule)
                    if rule.contains('.')
                        || (matches!(value, "YES" | "NO") && !VALE_KEYS.contains(&rule)) =>
                {
                    // Vale reads these five words as written; any other
                    // value turns the rule off. So does koas, and says so.
                    let switch = match switch_word(value) {
                        Some(switch) => switch,
                        None => {
                            let meant = meant(value)
                                .map(|m| format!(" (`{m}`?)"))
                                .unwrap_or_default();
                            ini.unsupported.push(format!(
                                "line {line}: `{rule} = {value}`: Vale reads YES, NO, suggestion, warning or error as written, and turns the rule off for any other value; so does koas{meant}"
                            ));
                            Switch::Off
                        }
                    };
                    section.switches.push((rule.to_owned(), switch));
                }
                _ => ini
                    .unsupported
                    .push(format!("line {line}: `{key}` is not acted on")),
            }
        }
        Ok(ini)
    }
}

/// The lines of `text` with their 1-based numbers, a line ending in `\`
/// joined to the next (Vale's continued values).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (i, raw) in text.lines().enumerate() {
        let (body, continues) = match raw.trim_end().strip_suffix('\\') {
            Some(body) => (body, true),
            None => (raw, false),
        };
        match out.last_mut() {
            Some((_, last)) if open => {
                last.push(' ');
                last.push_str(body.trim());
            }
            _ => out.push((i + 1, body.to_owned())),
        }
        open = continues;
    }
    out
}

/// The keys Vale itself reads in a section: never a style's name.
const VALE_KEYS: [&str; 6] = [
    "BasedOnStyles",
    "BlockIgnores",
    "TokenIgnores",
    "Transform",
    "Lang",
    "CommentDelimiters",
];

/// A level as a `.vale.ini` writes it: in any case (`Warning`).
fn level(text: &str) -> Option<Level> {
    Level::parse(&text.to_ascii_lowercase())
}

/// What a switch's value that Vale does not read probably meant: the
/// word in Vale's case (`Error` → `error`, `No` → `NO`).
fn meant(value: &str) -> Option<&'static str> {
    let lower = value.trim_end_matches([';', ',']).to_ascii_lowercase();
    ["YES", "NO", "suggestion", "warning", "error"]
        .into_iter()
        .find(|w| w.to_ascii_lowercase() == lower)
}

/// A switch's value as Vale reads it: `YES`, `NO` or a level, exactly.
fn switch_word(value: &str) -> Option<Switch> {
    match value {
        "YES" => Some(Switch::On),
        "NO" => Some(Switch::Off),
        other => Level::parse(other).map(Switch::At),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projects_ini_gives_its_styles_sections_and_switches() {
        let ini = ValeIni::parse(
            "StylesPath = styles\nMinAlertLevel = warning\nVocab = Docs\nPackages = Google\n\n# the docs\n[*.md]\nBasedOnStyles = Vale, Google\nGoogle.Will = NO\nGoogle.WordList = error\nGoogle.Latin = YES\n",
        )
        .expect("reads");
        assert_eq!(ini.styles_path.as_deref(), Some("styles"));
        assert_eq!(ini.min_level, Some(Level::Warning));
        assert_eq!(ini.vocab, ["Docs"]);
        assert_eq!(ini.unsupported, ["line 4: `Packages` is not acted on"]);
        assert_eq!(ini.sections.len(), 1);
        let md = &ini.sections[0];
        assert_eq!(md.glob, "*.md");
        assert_eq!(md.based_on, ["Vale", "Google"]);
        assert_eq!(
            md.switches,
            [
                ("Google.Will".to_owned(), Switch::Off),
                ("Google.WordList".to_owned(), Switch::At(Level::Error)),
                ("Google.Latin".to_owned(), Switch::On),
            ]
        );
    }

    #[test]
    fn quoted_values_continued_lines_and_formats_read_as_vale_reads_them() {
        let ini = ValeIni::parse(
            "StylesPath = \"a/styles\"\nPackages = Google, \\\n  write-good\n[formats]\nmdx = md\n[*.md]\nBasedOnStyles = Vale, \\\n   Team\nVale.Spelling = No\n",
        )
        .expect("reads");
        assert_eq!(ini.styles_path.as_deref(), Some("a/styles"));
        assert_eq!(ini.sections.len(), 1, "[formats] is no glob");
        assert_eq!(ini.sections[0].based_on, ["Vale", "Team"]);
        assert_eq!(
            ini.sections[0].switches,
            [("Vale.Spelling".to_owned(), Switch::Off)]
        );
        assert_eq!(
            ini.unsupported,
            [
                "line 2: `Packages` is not acted on",
                "line 4: `[formats]` is not acted on (koas reads Markdown)",
                "line 9: `Vale.Spelling = No`: Vale reads YES, NO, suggestion, warning or error as written, and turns the rule off for any other value; so does koas (`NO`?)"
            ]
        );
    }

    #[test]
    fn a_broken_line_is_named() {
        let err = ValeIni::parse("StylesPath = s\n[*.md\n").expect_err("unclosed");
        assert_eq!(err.line, 2);
        // A switch Vale does not read turns the rule off, as in Vale;
        // an inline comment is no part of the value.
        let ini = ValeIni::parse(
            "[*.md]\nGoogle.Will = maybe\nGoogle.Colons = Error\nTeam.A = NO # off: noisy\nTeam.B = NO;\n",
        )
        .expect("reads");
        let switches: Vec<(&str, Switch)> = ini.sections[0]
            .switches
            .iter()
            .map(|(r, s)| (r.as_str(), *s))
            .collect();
        assert_eq!(
            switches,
            [
                ("Google.Will", Switch::Off),
                ("Google.Colons", Switch::Off),
                ("Team.A", Switch::Off),
                ("Team.B", Switch::Off)
            ]
        );
        assert_eq!(ini.unsupported.len(), 3, "{:?}", ini.unsupported);
        assert!(ini.unsupported[1].ends_with("so does koas (`error`?)"));
        let err = ValeIni::parse("just words\n").expect_err("no equals");
        assert_eq!(err.line, 1);
    }
}
