//! Runs a Vale style repository's fixtures the way its tests run Vale:
//! for each `fixtures/<Name>/` with a `.vale.ini` and a `test.md`, the
//! rules its `.vale.ini` turns on, on the whole of `test.md` (no scopes
//! yet), printed as Vale's line format `test.md:LINE:COLUMN:Style.Rule:message`
//! under a `== <Name>` header. The rules the crate does not run yet are
//! listed on stderr.
//!
//! `cargo run -p koas-vale --example style_fixtures -- PATH/TO/STYLE-REPO`

use koas_vale::{line_column, load_rule, Switch, ValeIni};
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let repo = std::env::args()
        .nth(1)
        .ok_or("give a style repository's folder")?;
    let repo = Path::new(&repo);
    let mut fixtures: Vec<_> = std::fs::read_dir(repo.join("fixtures"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(".vale.ini").is_file() && p.join("test.md").is_file())
        .collect();
    fixtures.sort();
    for fixture in fixtures {
        let ini = ValeIni::parse(&std::fs::read_to_string(fixture.join(".vale.ini"))?)?;
        let text = std::fs::read_to_string(fixture.join("test.md"))?;
        let mut rules: Vec<String> = Vec::new();
        for section in ini.sections.iter().filter(|s| s.glob.contains("md")) {
            for style in &section.based_on {
                if let Ok(dir) = std::fs::read_dir(repo.join(style)) {
                    for e in dir.filter_map(Result::ok) {
                        let name = e.file_name().to_string_lossy().into_owned();
                        if let Some(rule) = name.strip_suffix(".yml") {
                            rules.push(format!("{style}.{rule}"));
                        }
                    }
                }
            }
            for (rule, switch) in &section.switches {
                match switch {
                    Switch::Off => rules.retain(|r| r != rule),
                    _ => rules.push(rule.clone()),
                }
            }
        }
        rules.sort();
        rules.dedup();
        let mut lines = Vec::new();
        for name in &rules {
            let Some((style, rule)) = name.split_once('.') else {
                continue;
            };
            let Ok(yaml) = std::fs::read_to_string(repo.join(style).join(format!("{rule}.yml")))
            else {
                eprintln!("{name}: no rule file");
                continue;
            };
            match load_rule(name, &yaml) {
                Ok(loaded) => {
                    for note in &loaded.unsupported {
                        eprintln!("{note}");
                    }
                    for alert in loaded.rule.check(&text) {
                        let (line, column) = line_column(&text, alert.span.start);
                        lines.push((
                            line,
                            column,
                            format!("test.md:{line}:{column}:{}:{}", alert.rule, alert.message),
                        ));
                    }
                }
                Err(e) => eprintln!("{e}"),
            }
        }
        lines.sort();
        let name = fixture
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!("== {name}");
        for (_, _, line) in lines {
            println!("{line}");
        }
    }
    Ok(())
}
