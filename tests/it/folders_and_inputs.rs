//! Folder reviews walked like ripgrep walks them, `koas run`'s guarded
//! inputs, a person's op that opens a code fence at the end, and
//! `MODEL_MISMATCH` said once: regression tests through the real `koas`
//! binary.

// ---- MODEL_MISMATCH said once (written by the coordinator; keep at the end) ----

mod model_mismatch {
    use crate::review_common::{stderr, Scratch};
    use koas_test_support::model::{ModelAnswer, ScriptedModel};

    /// Endpoints serving different models: the cause is told once (which
    /// endpoint serves what), the closing error once with what to do, and
    /// no line blames a server that is down.
    #[test]
    fn model_mismatch_is_said_once_with_what_to_do() {
        let a = ScriptedModel::start(|_| ModelAnswer::text("unused"));
        let b = ScriptedModel::start_as("another-model", |_| ModelAnswer::text("unused"));
        let s = Scratch::new();
        let mut doc = String::from("# Handbook\n\n");
        for i in 0..30 {
            doc.push_str(&format!("## Part {i}\n\nPart {i} explains how teh service works.\n\n"));
        }
        s.write("doc.md", &doc);
        s.write("koas.toml", "[llm]\nbackoff_initial_ms = 10\nbackoff_max_ms = 20\n");
        let out = s.koas(&[
            "review", "doc.md", "--llm-backend", "openai", "--llm-endpoint", &a.url(),
            "--llm-endpoint", &b.url(), "--llm-model", "scripted", "--llm-max-in-flight", "6",
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!((a.calls(), b.calls()), (0, 0), "nothing was asked: {err}");
        let detail = format!("{} (serves another-model)", b.url());
        assert_eq!(err.matches(&detail).count(), 1, "the cause, told once:\n{err}");
        assert_eq!(err.matches("aborted earlier").count(), 0, "{err}");
        assert_eq!(err.matches("session aborted").count(), 0, "{err}");
        assert!(!err.contains("server is back"), "no server is down:\n{err}");
        assert_eq!(
            err.matches("list only endpoints that serve the model").count(),
            1,
            "what to do, once:\n{err}"
        );
        // The cause line and the closing error: nothing else names it.
        assert_eq!(err.matches("MODEL_MISMATCH").count(), 2, "{err}");
    }
}
