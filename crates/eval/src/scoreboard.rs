//! The scores of a whole evaluation: what each model's reviews gave,
//! summed per model and language, as a terminal table or an HTML page in
//! the review report's style.

use crate::plant::{DefectKind, Lang, PlantedDoc};
use crate::score::{DefectStatus, DocScore};
use koas_report::html::{escape, highlighted_pair, standalone_page};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What one review of one planted copy gave.
#[derive(Debug, Clone, Default)]
pub struct DocRun {
    /// The planted document's name.
    pub doc: String,
    /// Its language.
    pub lang: Option<Lang>,
    /// Its score against the truth.
    pub score: DocScore,
    /// Proposals that change the text.
    pub proposals: usize,
    /// Proposals that change nothing (flags, prose kept as notes).
    pub notes: usize,
    /// Ladder level → chunks whose answer it read.
    pub ladder: BTreeMap<String, u64>,
    /// Chunks whose answer stayed degenerate after every policy.
    pub degenerate: u64,
    /// Chunks asked.
    pub chunks: u64,
    /// Model calls.
    pub calls: u64,
    /// Tokens the model generated and read.
    pub tokens: u64,
    /// Wall time of the review's model stage.
    pub seconds: f64,
    /// `true` when an earlier run's review was reused (no call made).
    pub reused: bool,
}

/// One model's reviews of the planted set.
#[derive(Debug, Clone, Default)]
pub struct ModelRuns {
    /// The model's name as given (`configured` for the configured one).
    pub model: String,
    /// One per planted document that was reviewed.
    pub runs: Vec<DocRun>,
}

/// How the defects of one kind fared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KindScore {
    /// Planted.
    pub defects: usize,
    /// Fixed.
    pub fixed: usize,
    /// Partly fixed.
    pub partial: usize,
    /// Missed.
    pub missed: usize,
}

/// The scores of one model in one language.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    /// The model.
    pub model: String,
    /// `en` or `fr`.
    pub lang: String,
    /// Planted documents reviewed.
    pub documents: usize,
    /// Defects planted in them.
    pub defects: usize,
    /// Defects fixed.
    pub fixed: usize,
    /// Defects partly fixed.
    pub partial: usize,
    /// Defects missed.
    pub missed: usize,
    /// Per defect kind (`misspelling`…).
    pub by_kind: BTreeMap<String, KindScore>,
    /// Proposals that change the text.
    pub proposals: usize,
    /// Proposals that change nothing.
    pub notes: usize,
    /// Chunks asked.
    pub chunks: u64,
    /// Ladder level → chunks whose answer it read.
    pub ladder: BTreeMap<String, u64>,
    /// Chunks whose answer stayed degenerate.
    pub degenerate: u64,
    /// Changes where nothing was planted.
    pub harmful: usize,
    /// Of those, refused by the guards.
    pub refused: usize,
    /// Of those, applied as a flag or with a warning.
    pub flagged: usize,
    /// Of those, applied as a quiet fix: must be 0.
    pub silent_harm: usize,
    /// Fixed / defects.
    pub recall: f64,
    /// Fixed / proposals.
    pub precision: f64,
    /// Harmful / proposals.
    pub harmful_rate: f64,
    /// Model calls.
    pub calls: u64,
    /// Tokens.
    pub tokens: u64,
    /// Wall time of the model stages, summed.
    pub seconds: f64,
    /// Tokens per second of wall time, at the configured concurrency.
    pub tokens_per_second: f64,
    /// Reviews reused from an earlier run.
    pub reused: usize,
}

/// The ladder's outcomes that read nothing (not a rung).
const UNREAD: [&str; 2] = ["empty_response", "failed"];

fn lang_name(lang: Option<Lang>) -> &'static str {
    match lang {
        Some(Lang::En) => "en",
        Some(Lang::Fr) => "fr",
        None => "?",
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The rows of one model: one per language, in language order.
pub fn rows(model: &ModelRuns) -> Vec<Row> {
    let mut by_lang: BTreeMap<&str, Row> = BTreeMap::new();
    for run in &model.runs {
        let lang = lang_name(run.lang);
        let row = by_lang.entry(lang).or_insert_with(|| Row {
            model: model.model.clone(),
            lang: lang.to_string(),
            ..Row::default()
        });
        let s = &run.score;
        row.documents += 1;
        row.defects += s.defects.len();
        row.fixed += s.count(DefectStatus::Fixed);
        row.partial += s.count(DefectStatus::Partial);
        row.missed += s.count(DefectStatus::Missed);
        for (kind, status) in s.defects.values() {
            let k = row.by_kind.entry(kind.as_str().to_string()).or_default();
            k.defects += 1;
            match status {
                DefectStatus::Fixed => k.fixed += 1,
                DefectStatus::Partial => k.partial += 1,
                DefectStatus::Missed => k.missed += 1,
            }
        }
        row.proposals += run.proposals;
        row.notes += run.notes;
        row.chunks += run.chunks;
        row.degenerate += run.degenerate;
        for (level, n) in &run.ladder {
            *row.ladder.entry(level.clone()).or_default() += n;
        }
        row.harmful += s.harm();
        row.refused += s.harmful.get("refused").copied().unwrap_or(0);
        row.flagged += s.harmful.get("flagged").copied().unwrap_or(0);
        row.silent_harm += s.silent_harm();
        row.calls += run.calls;
        row.tokens += run.tokens;
        row.seconds += run.seconds;
        row.reused += usize::from(run.reused);
    }
    by_lang
        .into_values()
        .map(|mut r| {
            r.recall = ratio(r.fixed, r.defects);
            // Of what the model proposed, the share that fixed a defect.
            r.precision = ratio(r.fixed, r.proposals);
            r.harmful_rate = ratio(r.harmful, r.proposals);
            r.tokens_per_second = if r.seconds > 0.0 {
                r.tokens as f64 / r.seconds
            } else {
                0.0
            };
            r
        })
        .collect()
}

/// The terminal table: one line per model and language, then the defect
/// kinds and the format compliance of each.
pub fn table(rows: &[Row]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<20} {:<4} {:>7} {:>5} {:>7} {:>6} {:>6} {:>9} {:>7} {:>7} {:>7} {:>6} {:>5} {:>6} {:>7} {:>7} {:>6}",
        "model", "lang", "defects", "fixed", "partial", "missed", "recall", "precision",
        "changes", "harmful", "refused", "silent", "notes", "calls", "tokens", "seconds", "tok/s"
    );
    for r in rows {
        let _ = writeln!(
            t,
            "{:<20} {:<4} {:>7} {:>5} {:>7} {:>6} {:>5.0}% {:>9} {:>7} {:>7} {:>7} {:>6} {:>5} {:>6} {:>7} {:>7.1} {:>6.1}",
            r.model, r.lang, r.defects, r.fixed, r.partial, r.missed, r.recall * 100.0,
            // No change proposed: no precision to speak of, not 0%.
            if r.proposals == 0 { "–".to_owned() } else { pct(r.precision) },
            r.proposals, r.harmful, r.refused, r.silent_harm, r.notes,
            r.calls, r.tokens, r.seconds, r.tokens_per_second
        );
    }
    for r in rows {
        let kinds: Vec<String> = r
            .by_kind
            .iter()
            .map(|(k, s)| format!("{k} {}/{}", s.fixed, s.defects))
            .collect();
        let _ = writeln!(
            t,
            "{} {}: fixed by kind: {}",
            r.model,
            r.lang,
            kinds.join(", ")
        );
    }
    for r in rows {
        let (unread, read): (Vec<_>, Vec<_>) = r
            .ladder
            .iter()
            .partition(|(l, _)| UNREAD.contains(&l.as_str()));
        let list = |v: &[(&String, &u64)]| {
            v.iter()
                .map(|(l, n)| format!("{l} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut line = format!(
            "{} {}: {} chunks, answers read by {}",
            r.model,
            r.lang,
            r.chunks,
            if read.is_empty() {
                "no rung".to_string()
            } else {
                list(&read)
            }
        );
        if !unread.is_empty() {
            let _ = write!(line, "; not read: {}", list(&unread));
        }
        let _ = writeln!(t, "{line}; {} degenerate after every policy", r.degenerate);
    }
    if rows.iter().any(|r| r.reused > 0) {
        t.push_str("(reviews of an earlier run were reused: their calls, tokens and seconds are not counted again)\n");
    }
    t
}

/// Everything an evaluation page shows.
#[derive(Debug, Clone, Copy)]
pub struct Evaluation<'a> {
    /// The planting seed.
    pub seed: u64,
    /// Defects planted per document.
    pub samples: usize,
    /// The planted set.
    pub documents: &'a [PlantedDoc],
    /// Each model's reviews.
    pub models: &'a [ModelRuns],
    /// Their scores ([`rows`] of each model, in model order).
    pub rows: &'a [Row],
    /// Reviews that failed, as messages.
    pub failed: &'a [String],
    /// The page's generator (the tool and its version).
    pub generator: &'a str,
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// A row's first cells: its model and language.
fn row_start(out: &mut String, r: &Row) {
    let _ = write!(
        out,
        "<tr><td>{}</td><td>{}</td>",
        escape(&r.model),
        escape(&r.lang)
    );
}

fn num_cell(out: &mut String, value: impl std::fmt::Display) {
    let _ = write!(out, "<td class=\"num\">{value}</td>");
}

fn status_name(status: DefectStatus) -> &'static str {
    match status {
        DefectStatus::Fixed => "fixed",
        DefectStatus::Partial => "partly fixed",
        DefectStatus::Missed => "missed",
    }
}

/// The evaluation as a self-contained HTML page in the review report's
/// style: the scores, the defect kinds, the format compliance, and every
/// planted defect with what each model made of it. Every text that comes
/// from a document, a model name or an error is escaped.
pub fn html(eval: &Evaluation<'_>) -> String {
    let mut b = String::new();
    html_intro(&mut b, eval);
    html_scores(&mut b, eval.rows);
    html_kinds(&mut b, eval.rows);
    html_format(&mut b, eval.rows);
    html_defects(&mut b, eval);
    standalone_page("Model evaluation", eval.generator, &b)
}

/// The page's opening: what was planted and reviewed, failed reviews,
/// reused ones.
fn html_intro(b: &mut String, eval: &Evaluation<'_>) {
    let rows = eval.rows;
    let defects: usize = eval.documents.iter().map(|d| d.defects.len()).sum();
    let _ = writeln!(
        b,
        "<p class=\"muted\">{} planted documents, {} defects (seed {}, at most {} per document), reviewed by {} model(s) exactly as <code>koas review</code> would.</p>",
        eval.documents.len(),
        defects,
        eval.seed,
        eval.samples,
        eval.models.len()
    );
    if !eval.failed.is_empty() {
        b.push_str("<div class=\"cut\"><p>These reviews failed; their documents are missing from the scores:</p><ul>");
        for f in eval.failed {
            let _ = write!(b, "<li>{}</li>", escape(f));
        }
        b.push_str("</ul></div>\n");
    }
    if rows.iter().any(|r| r.reused > 0) {
        b.push_str("<p class=\"notice\">Reviews of an earlier run were reused: their calls, tokens and seconds are not counted again.</p>\n");
    }
}

/// The scores and the cost tables.
fn html_scores(b: &mut String, rows: &[Row]) {
    b.push_str("<h2 id=\"scores\">Scores</h2>\n");
    b.push_str("<p>Recall: defects fixed of those planted. Precision: proposed changes that fixed a defect. Harmful: changes where nothing was planted, by what the guards did with them; <strong>silent</strong> harm (applied as a quiet fix) must be 0.</p>\n");
    // Scores and cost in two tables: eighteen columns in one were wider
    // than a 1,400-pixel window.
    b.push_str("<table><thead><tr><th>model</th><th>lang</th><th>defects</th><th>fixed</th><th>partly</th><th>missed</th><th>recall</th><th>precision</th><th>changes</th><th>harmful</th><th>refused</th><th>flagged</th><th>silent</th><th>notes</th></tr></thead><tbody>\n");
    for r in rows {
        row_start(b, r);
        for n in [r.defects, r.fixed, r.partial, r.missed] {
            num_cell(b, n);
        }
        num_cell(b, pct(r.recall));
        // No change proposed: no precision to speak of, not 0%.
        num_cell(
            b,
            if r.proposals == 0 {
                "–".to_owned()
            } else {
                pct(r.precision)
            },
        );
        for n in [r.proposals, r.harmful, r.refused, r.flagged] {
            num_cell(b, n);
        }
        let silent_class = if r.silent_harm > 0 {
            "num sev-critical"
        } else {
            "num"
        };
        let _ = write!(b, "<td class=\"{silent_class}\">{}</td>", r.silent_harm);
        num_cell(b, r.notes);
        b.push_str("</tr>\n");
    }
    b.push_str("</tbody></table>\n");
    b.push_str("<h3>Cost</h3>\n<table><thead><tr><th>model</th><th>lang</th><th>calls</th><th>tokens</th><th>seconds</th><th>tokens/s</th></tr></thead><tbody>\n");
    for r in rows {
        row_start(b, r);
        num_cell(b, r.calls);
        num_cell(b, r.tokens);
        num_cell(b, format!("{:.1}", r.seconds));
        num_cell(b, format!("{:.1}", r.tokens_per_second));
        b.push_str("</tr>\n");
    }
    b.push_str("</tbody></table>\n");
}

/// Each model's results by kind of defect.
fn html_kinds(b: &mut String, rows: &[Row]) {
    b.push_str(
        "<h2 id=\"kinds\">By kind of defect</h2>\n<table><thead><tr><th>model</th><th>lang</th>",
    );
    for kind in DefectKind::ALL {
        let _ = write!(b, "<th>{}</th>", kind.as_str());
    }
    b.push_str("</tr></thead><tbody>\n");
    for r in rows {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td>",
            escape(&r.model),
            escape(&r.lang)
        );
        for kind in DefectKind::ALL {
            match r.by_kind.get(kind.as_str()) {
                Some(k) => num_cell(
                    b,
                    format!("{} / {} fixed, {} partly", k.fixed, k.defects, k.partial),
                ),
                None => b.push_str("<td class=\"num muted\">none planted</td>"),
            }
        }
        b.push_str("</tr>\n");
    }
    b.push_str("</tbody></table>\n");
}

/// How each model's answers were read (the extraction ladder's rungs).
fn html_format(b: &mut String, rows: &[Row]) {
    b.push_str("<h2 id=\"format\">Format compliance</h2>\n<p>How each chunk's answer was read: the first rung of the extraction ladder that read it, and the answers that stayed unreadable (degenerate).</p>\n");
    let levels: std::collections::BTreeSet<&str> = rows
        .iter()
        .flat_map(|r| r.ladder.keys().map(String::as_str))
        .collect();
    b.push_str("<table><thead><tr><th>model</th><th>lang</th><th>chunks</th>");
    for l in &levels {
        let _ = write!(b, "<th>{}</th>", escape(l));
    }
    b.push_str("<th>degenerate</th></tr></thead><tbody>\n");
    for r in rows {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td>",
            escape(&r.model),
            escape(&r.lang)
        );
        num_cell(b, r.chunks);
        for l in &levels {
            num_cell(b, r.ladder.get(*l).copied().unwrap_or(0));
        }
        num_cell(b, r.degenerate);
        b.push_str("</tr>\n");
    }
    b.push_str("</tbody></table>\n");
}

/// Every planted defect with what each model made of it.
fn html_defects(b: &mut String, eval: &Evaluation<'_>) {
    b.push_str("<h2 id=\"defects\">Planted defects</h2>\n");
    for doc in eval.documents {
        let _ = writeln!(b, "<h3>{}</h3>", escape(&doc.name));
        if doc.defects.is_empty() {
            b.push_str("<p class=\"muted\">No defect could be planted in this document.</p>\n");
            continue;
        }
        b.push_str("<table class=\"diff\"><thead><tr><th>defect</th><th>line</th><th>kind</th><th>planted</th><th>original</th>");
        for m in eval.models {
            let _ = write!(b, "<th>{}</th>", escape(&m.model));
        }
        b.push_str("</tr></thead><tbody>\n");
        for d in &doc.defects {
            // The planted words highlighted, as the review report shows
            // a change.
            let (planted, truth) = highlighted_pair(&d.planted, &d.truth);
            let _ = write!(
                b,
                "<tr><td class=\"id\">{}</td><td class=\"ln\">{}</td><td>{}</td><td class=\"text del\">{planted}</td><td class=\"text add\">{truth}</td>",
                escape(&d.id),
                d.line,
                d.kind.as_str(),
            );
            for m in eval.models {
                let status = m
                    .runs
                    .iter()
                    .find(|r| r.doc == doc.name)
                    .and_then(|r| r.score.defects.get(&d.id))
                    .map(|(_, s)| *s);
                match status {
                    Some(s) => {
                        let class = match s {
                            DefectStatus::Fixed => "st-applied",
                            DefectStatus::Partial => "st-flagged",
                            DefectStatus::Missed => "st-not-revertible",
                        };
                        let _ = write!(b, "<td class=\"{class}\">{}</td>", status_name(s));
                    }
                    None => b.push_str("<td class=\"muted\">not reviewed</td>"),
                }
            }
            b.push_str("</tr>\n");
        }
        b.push_str("</tbody></table>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plant::plant;
    use crate::score::{score, Guarded, Proposal};

    fn run_of(doc: &PlantedDoc, result: &str, proposals: &[Proposal]) -> DocRun {
        let score = score(doc, result, proposals);
        DocRun {
            doc: doc.name.clone(),
            lang: Some(Lang::En),
            proposals: proposals.iter().filter(|p| p.change).count(),
            notes: score.notes,
            score,
            chunks: 2,
            ladder: BTreeMap::from([("strict".to_string(), 2)]),
            tokens: 300,
            seconds: 2.0,
            calls: 2,
            ..DocRun::default()
        }
    }

    fn planted() -> PlantedDoc {
        let (name, lang, text) = crate::BUNDLED[0];
        plant(name, text, lang, 7, 4)
    }

    #[test]
    fn rows_count_kinds_harm_and_throughput() {
        let doc = planted();
        assert!(doc.defects.len() >= 2);
        // The first defect fixed, the rest left; one careless silent change
        // far from any defect.
        let mut lines: Vec<String> = doc.text.split('\n').map(str::to_string).collect();
        let first = &doc.defects[0];
        lines[first.line - 1] = first.truth.clone();
        let far = (1..=lines.len())
            .find(|l| doc.defects.iter().all(|d| d.line.abs_diff(*l) > 1))
            .expect("a line far from every defect");
        let proposals = [
            Proposal {
                first: first.line,
                last: first.line,
                guarded: Guarded::Silent,
                change: true,
            },
            Proposal {
                first: far,
                last: far,
                guarded: Guarded::Silent,
                change: true,
            },
        ];
        let runs = ModelRuns {
            model: "m<1>".into(),
            runs: vec![run_of(&doc, &lines.join("\n"), &proposals)],
        };
        let rows = rows(&runs);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.fixed, r.missed), (1, doc.defects.len() - 1));
        assert_eq!((r.harmful, r.silent_harm), (1, 1));
        assert_eq!(r.precision, 0.5);
        assert_eq!(r.tokens_per_second, 150.0);
        let kind = first.kind.as_str();
        assert!(r.by_kind[kind].fixed >= 1, "{:?}", r.by_kind);
        let planted_by_kind: usize = r.by_kind.values().map(|k| k.defects).sum();
        assert_eq!(planted_by_kind, doc.defects.len());
        let t = table(&rows);
        assert!(t.contains("m<1> en: fixed by kind: "), "{t}");
        assert!(t.contains("150.0"), "{t}");
        assert!(
            t.contains("m<1> en: 2 chunks, answers read by strict 2; 0 degenerate"),
            "{t}"
        );
        let unread = Row {
            model: "s".into(),
            lang: "fr".into(),
            chunks: 5,
            ladder: BTreeMap::from([("tagged_payload".into(), 4), ("failed".into(), 1)]),
            degenerate: 1,
            ..Row::default()
        };
        let t = table(&[unread]);
        assert!(
            t.contains("s fr: 5 chunks, answers read by tagged_payload 4; not read: failed 1; 1 degenerate"),
            "{t}"
        );
    }

    #[test]
    fn the_page_escapes_what_it_shows_and_marks_silent_harm() {
        let mut doc = planted();
        doc.name = "<script>alert(1)</script>.md".into();
        let far = doc.text.split('\n').count();
        let run = run_of(
            &doc,
            &doc.text.clone(),
            &[Proposal {
                first: far,
                last: far,
                guarded: Guarded::Silent,
                change: true,
            }],
        );
        let models = [ModelRuns {
            model: "<img src=x onerror=alert(2)>".into(),
            runs: vec![run],
        }];
        let failed = ["other: <b>down</b>".to_string()];
        let page = html(&Evaluation {
            seed: 7,
            samples: 4,
            documents: std::slice::from_ref(&doc),
            models: &models,
            rows: &models.iter().flat_map(rows).collect::<Vec<_>>(),
            failed: &failed,
            generator: "koas test",
        });
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(!page.contains("<img src=x"), "{page}");
        assert!(!page.contains("<b>down"), "{page}");
        assert!(page.contains("&lt;img src=x onerror=alert(2)&gt;"));
        assert!(page.contains("Content-Security-Policy"));
        assert!(
            page.contains("<td class=\"num sev-critical\">1</td>"),
            "{page}"
        );
        // Every planted defect is listed, missed by the model.
        assert_eq!(
            page.matches("<td class=\"st-not-revertible\">missed</td>")
                .count(),
            doc.defects.len()
        );
    }
}
