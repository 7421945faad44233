//! The review as a library (`koas_review::api`): a typed request in, a
//! typed outcome or error out, nothing printed; the same revert the
//! command line, `koas mcp` and `koas lsp` make through it.

use crate::review_common::{assert_code, library_host, Scratch};
use koas_orchestrator::embed::Control;
use koas_review::api::{
    change_id, check, entry_id, ApiError, CheckRequest, GrepRequest, HtmlPage, ReportRequest,
    RevertChanges, RevertRequest, ReviewCounts, ReviewRequest, Session, Sink, Told,
};
use koas_review_schema::findings::Severity;
use std::sync::Arc;

const DOC: &str = "# Policy\n\nThe bandwith is low.\n\nLogs are kept for seven years.\n";
const OPS: &str = r#"[
 {"action": "replace", "kind": "typo", "target": {"line_start": 3}, "before_text": "bandwith", "after_text": "bandwidth"},
 {"action": "replace", "kind": "style", "target": {"line_start": 5}, "after_text": "Logs are kept for 7 years."},
 {"action": "flag_only", "kind": "consistency", "target": {"line_start": 1}, "rationale": "A title this short says little."}
]"#;

#[test]
fn the_review_api_reverts_and_refuses_in_types() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("ops.json", OPS);
    assert_code(
        &s.koas(&["-q", "review", "doc.md", "--ops", "ops.json"]),
        0,
        "review",
    );
    let global = library_host();
    let control = Control::new(Arc::default(), None);
    let session = Session::open(&global, &control, &s.path("doc.md"), None).expect("session");
    assert_eq!(session.workspace(), s.workspace());

    let request = RevertRequest::new(RevertChanges::Listed(vec!["RVW-0002".into()]));
    let reverted = session.revert(&request).expect("reverted");
    assert_eq!(
        reverted.pairs(),
        [("RVW-0002".to_owned(), "REVERT-RVW-0002".to_owned())]
    );
    assert!(reverted
        .written
        .report
        .as_ref()
        .is_some_and(|r| r.is_file()));
    assert_eq!(reverted.written.doc_replaced, None, "DOC was not asked for");
    assert!(reverted.warnings.is_empty());
    let json = reverted.to_json(session.workspace());
    assert_eq!(json["total_reverted"], 1);
    assert_eq!(json["summary"], "1 changes reverted");

    // The same change again: refused, in a type, with nothing changed.
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    match session.revert(&request) {
        Err(ApiError::Refused { reason }) => assert!(reason.contains("RVW-0002"), "{reason}"),
        other => panic!("not refused: {other:?}"),
    }
    let after = std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    assert_eq!(ledger, after, "a refusal records nothing");

    // One entry in detail: the revert that undid it, its patch.
    let shown = session
        .show(entry_id("RVW-0002").expect("id"), true)
        .expect("shown");
    assert_eq!(
        shown.reverted_by.map(|e| e.id.to_string()).as_deref(),
        Some("REVERT-RVW-0002")
    );
    assert!(shown
        .patch
        .is_some_and(|p| p.contains("+Logs are kept for 7 years.")));
    match session.show(entry_id("RVW-0099").expect("id"), false) {
        Err(ApiError::NotFound { message }) => assert!(message.contains("RVW-0099"), "{message}"),
        other => panic!("found: {other:?}"),
    }
    assert!(matches!(entry_id("RVW-x"), Err(ApiError::Other(_))));

    // The flag is dismissed once; a change is not a flag.
    let dismissed = session
        .dismiss(change_id("RVW-0003").expect("id"), "looked at", None)
        .expect("dismissed");
    assert_eq!(dismissed.entry.id.to_string(), "REVERT-RVW-0003");
    assert!(matches!(
        session.dismiss(change_id("RVW-0003").expect("id"), "", None),
        Err(ApiError::Refused { .. })
    ));
    assert!(matches!(
        session.dismiss(change_id("RVW-0001").expect("id"), "", None),
        Err(ApiError::Refused { .. })
    ));

    // The review's state, in types: DOC is still the original (the review
    // kept its changes in the workspace), nothing is torn.
    let state = session.status(false).expect("status");
    assert_eq!(
        state.doc.file,
        koas_review::api::status::FileState::Original
    );
    assert!(state.behind.is_some_and(|n| n > 0), "{:?}", state.behind);
    assert!(!state.changed_outside);
    assert!(state.status.torn_tail.is_none());
    assert_eq!(state.to_json().expect("json")["status"], "ok");

    // Entries by kind; the dismissed flag is named as such.
    let found = session
        .grep(&GrepRequest {
            kind: Some("consistency".into()),
            reverts: Some(false),
            ..GrepRequest::default()
        })
        .expect("grep");
    assert_eq!(found.entries.len(), 1, "the flag, not its dismissal");
    assert!(found
        .dismissed
        .contains(&change_id("RVW-0003").expect("id")));
    assert!(matches!(
        session.grep(&GrepRequest {
            severity: Some("loud".into()),
            ..GrepRequest::default()
        }),
        Err(ApiError::Other(_))
    ));

    // The report and its page, rewritten from the ledger; the counts are
    // the ones every view says.
    let reported = session
        .report(&ReportRequest {
            html: Some(HtmlPage {
                dest: Some(s.path("page.html")),
                ..HtmlPage::default()
            }),
            ..ReportRequest::default()
        })
        .expect("report");
    assert!(reported.report.is_file() && reported.annotated.is_file());
    assert_eq!(
        reported.html.as_deref(),
        Some(s.path("page.html").as_path())
    );
    assert_eq!(reported.counts.dismissed, 1);
    let page = std::fs::read_to_string(s.path("page.html")).expect("page");
    assert!(page.contains(&reported.counts.sentence()));

    // Every change still active: RVW-0001 alone is left.
    let all = session
        .revert(&RevertRequest::new(RevertChanges::All))
        .expect("reverted");
    assert_eq!(
        all.pairs(),
        [("RVW-0001".to_owned(), "REVERT-RVW-0001".to_owned())]
    );
    let nothing = session
        .revert(&RevertRequest::new(RevertChanges::All))
        .expect("nothing left");
    assert!(nothing.run.is_none() && nothing.entries().is_empty());
    assert_eq!(
        nothing.to_json(session.workspace())["summary"],
        "nothing to revert"
    );
}

#[test]
fn the_review_api_reviews_and_checks_in_types() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("ops.json", OPS);
    let global = library_host();
    let control = Control::new(Arc::default(), None);

    // Checked before any review: the misspelling is no finding of the
    // structure checks, and nothing fails at the default severity.
    let checked = check(&global, &s.path("doc.md"), &CheckRequest::default()).expect("checked");
    assert_eq!(checked.total(), checked.output.findings.len());
    assert_eq!(checked.fail_on, Severity::Warning);
    assert_eq!(
        checked.fails(),
        checked
            .output
            .findings
            .iter()
            .any(|f| f.severity >= Severity::Warning)
    );

    // The review's kernels' steps reach the session's one sink.
    let steps = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = steps.clone();
    let sink: Sink = Arc::new(move |told: Told<'_>| {
        if let Told::Step(_) = told {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let session = Session::open(&global, &control, &s.path("doc.md"), None)
        .expect("session")
        .told(sink);
    let request = ReviewRequest {
        ops: Some(s.path("ops.json")),
        whole_json: true,
        ..ReviewRequest::default()
    };
    let reviewed = session.review(&request).expect("reviewed");
    assert_eq!(
        reviewed.counts,
        ReviewCounts {
            applied: 2,
            flagged: 1,
            rejected: 0,
            known: 0
        }
    );
    assert!(reviewed.report.as_ref().is_some_and(|r| r.is_file()));
    assert!(steps.load(std::sync::atomic::Ordering::Relaxed) > 0);
    let json = reviewed.to_json();
    assert_eq!(json["total_changes"], 2);
    assert_eq!(json["summary"], reviewed.summary);
    assert!(reviewed.to_text().contains(&reviewed.summary));
    let edited =
        std::fs::read_to_string(s.workspace().join("stage3/doc.edited.md")).expect("edited");
    assert!(edited.contains("bandwidth"), "{edited}");

    // The same ops again: nothing recorded twice. The typo's op no longer
    // finds its `before_text` on the fixed line and is refused; the
    // others' effects are known.
    let again = session.review(&request).expect("reviewed again");
    assert_eq!(again.counts.applied, 0);
    assert_eq!(
        again.counts,
        ReviewCounts {
            rejected: 1,
            known: 2,
            ..ReviewCounts::default()
        },
        "{}",
        again.summary
    );

    // An ops file that is not JSON: an error before anything is locked
    // or written.
    s.write("bad.json", "[{\"action\": ");
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    let bad = ReviewRequest {
        ops: Some(s.path("bad.json")),
        ..ReviewRequest::default()
    };
    match session.review(&bad) {
        Err(ApiError::Other(e)) => assert!(format!("{e:#}").contains("bad.json"), "{e:#}"),
        other => panic!("not an error: {other:?}"),
    }
    let after = std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    assert_eq!(ledger, after, "a refused ops file records nothing");
}
