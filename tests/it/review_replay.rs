//! `koas replay` on a review workspace: the host-provided artifacts of the
//! last pass (review state, ledger view) are stored with the run, so the
//! replay gives kernels the same values and every artifact matches.

use crate::review_common::*;

#[test]
fn a_review_workspace_replays_identically() {
    let s = Scratch::with_fixture("retention_policy.md");
    let out = s.koas(&[
        "review",
        "retention_policy.md",
        "--ops",
        "retention_policy.ops.json",
    ]);
    assert_code(&out, 0, "review");
    let ws = s.workspace();
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ws.join("run.json")).expect("run.json"))
            .expect("json");
    let provided = record["plan"]["provided"]
        .as_object()
        .expect("plan.provided");
    assert!(
        !provided.is_empty(),
        "the review's last pass uses host-provided artifacts"
    );

    let ws_arg = ws.to_string_lossy().into_owned();
    let out = s.koas(&["replay", &ws_arg]);
    assert_code(&out, 0, "replay");
    assert!(stderr(&out).contains("replay: PASS"), "{}", stderr(&out));

    // A provided value missing from the cache is an error naming it.
    let cache = ws.join(".koas/cache/objects");
    let (name, hash) = provided.iter().next().expect("one");
    let hash = hash.as_str().expect("hash");
    std::fs::remove_file(cache.join(&hash[..2]).join(hash)).expect("remove blob");
    let out = s.koas(&["replay", &ws_arg]);
    assert_code(&out, 2, "replay without the provided value");
    assert!(
        stderr(&out).contains(&format!("`{name}`")),
        "{}",
        stderr(&out)
    );
}
