//! The page's own style and script, and the hashes its Content-Security-
//! Policy allows them by.

use super::*;

/// The page's script: filters and click-to-copy. It holds no data.
pub(super) const SCRIPT: &str = r##"(function () {
  "use strict";
  var form = document.getElementById("filters");
  if (!form) { return; }
  var selects = {
    kind: document.getElementById("f-kind"),
    severity: document.getElementById("f-severity"),
    status: document.getElementById("f-status")
  };
  var items = document.querySelectorAll("[data-kind]");
  var groups = document.querySelectorAll(".group");
  var counter = document.getElementById("f-count");
  function matches(el, name) {
    var wanted = selects[name].value;
    if (!wanted) { return true; }
    var value = el.getAttribute("data-" + name);
    // Findings have no status: the status filter is for changes.
    return value === null ? name === "status" : value === wanted;
  }
  function apply() {
    // The total is the summary's count of changes and flags.
    var shown = 0, total = Number(counter.getAttribute("data-total"));
    for (var i = 0; i < items.length; i++) {
      var el = items[i];
      var ok = matches(el, "kind") && matches(el, "severity") && matches(el, "status");
      el.hidden = !ok;
      if (el.hasAttribute("data-status") && ok) { shown++; }
    }
    for (var g = 0; g < groups.length; g++) {
      groups[g].hidden = groups[g].querySelector("[data-kind]:not([hidden])") === null;
    }
    counter.textContent = shown + " of " + total + " changes and flags shown";
    var parts = [];
    for (var name in selects) {
      if (selects[name].value) { parts.push(name + "=" + encodeURIComponent(selects[name].value)); }
    }
    try {
      history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
    } catch (e) {
      // Some browsers refuse to rewrite a file: URL; the filters still work.
    }
  }
  function fromFragment() {
    var pairs = location.hash.replace(/^#/, "").split("&");
    for (var i = 0; i < pairs.length; i++) {
      var kv = pairs[i].split("=");
      var select = selects[kv[0]];
      if (!select || kv.length !== 2) { continue; }
      var value;
      try { value = decodeURIComponent(kv[1]); } catch (e) { continue; }
      for (var o = 0; o < select.options.length; o++) {
        if (select.options[o].value === value) { select.value = value; }
      }
    }
  }
  form.hidden = false;
  form.addEventListener("change", apply);
  form.addEventListener("reset", function () { setTimeout(apply, 0); });
  fromFragment();
  apply();
  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target || !target.classList || !target.classList.contains("cmd")) { return; }
    var text = target.textContent;
    function done() {
      target.classList.add("copied");
      setTimeout(function () { target.classList.remove("copied"); }, 1200);
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, function () {});
    } else {
      var range = document.createRange();
      range.selectNodeContents(target);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      try { if (document.execCommand("copy")) { done(); } } catch (e) { /* selected: copy by hand */ }
    }
  });
  document.documentElement.setAttribute("data-filters", "ready");
})();
"##;

pub(super) const STYLE: &str = r#"
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg2: #f6f8fa;
  --del: #ffebe9; --del-hl: #ffc1bc; --add: #dafbe1; --add-hl: #a6f0b5; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  margin: 0 auto; padding: 1.2em 2em 4em; max-width: 1500px; }
h1 { font-size: 1.6em; margin: 0.2em 0 0.6em; }
h2 { font-size: 1.3em; border-bottom: 1px solid var(--line); padding-bottom: 0.2em; margin-top: 1.8em; }
h3 { font-size: 1.05em; margin: 1.4em 0 0.5em; }
table { border-collapse: collapse; }
th, td { border: 1px solid var(--line); padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: var(--bg2); }
td.num { text-align: right; }
code, pre, .diff td.text, .lines { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.notice { border-left: 4px solid #0969da; background: #ddf4ff; padding: 0.5em 1em; }
.cut { border-left: 4px solid #9a6700; background: #fff8c5; padding: 0.5em 1em; }
.muted { color: var(--muted); }
#filters { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--line);
  padding: 0.5em 0; z-index: 1; display: flex; gap: 1.2em; align-items: center; flex-wrap: wrap; }
#filters[hidden] { display: none; }
.change { border: 1px solid var(--line); border-radius: 6px; margin: 0.8em 0; padding: 0.5em 0.9em; }
.change > header { display: flex; gap: 0.6em; align-items: baseline; flex-wrap: wrap; }
.id { font-weight: 700; font-family: ui-monospace, Menlo, Consolas, monospace; }
.tag { border: 1px solid var(--line); border-radius: 1em; padding: 0 0.6em; font-size: 0.85em; background: var(--bg2); }
.st-applied { background: #dafbe1; } .st-flagged { background: #fff8c5; }
.st-reverted, .st-dismissed { background: #eaeef2; } .st-not-revertible { background: #ffebe9; }
.sev-error { background: #ffebe9; } .sev-warning { background: #fff8c5; } .attention { background: #fff8c5; }
.summary { margin: 0.3em 0; }
.notes { margin: 0.3em 0; padding-left: 1.2em; }
.why { margin: 0.3em 0; }
.callout { border-left: 4px solid #0969da; padding: 0.2em 0.9em; margin: 0.4em 0; }
.callout p { margin: 0.2em 0; }
.callout-title { font-weight: 600; }
.callout-note { border-color: #0969da; } .callout-note .callout-title { color: #0969da; }
.callout-tip { border-color: #1a7f37; } .callout-tip .callout-title { color: #1a7f37; }
.callout-important { border-color: #8250df; } .callout-important .callout-title { color: #8250df; }
.callout-warning { border-color: #9a6700; } .callout-warning .callout-title { color: #9a6700; }
.callout-caution { border-color: #d1242f; } .callout-caution .callout-title { color: #d1242f; }
.diff { width: 100%; table-layout: fixed; margin: 0.4em 0; }
.diff td { border: none; padding: 0 0.5em; }
.diff col.lnc { width: 3.5em; }
.diff td.ln { text-align: right; color: var(--muted); user-select: none; background: var(--bg2); }
.diff td.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.diff th { font-weight: 600; }
.diff td.del { background: var(--del); } .diff td.add { background: var(--add); }
.diff td.del .hl { background: var(--del-hl); } .diff td.add .hl { background: var(--add-hl); }
.lines { white-space: pre-wrap; overflow-wrap: anywhere; background: #fff8c5; padding: 0.3em 0.5em; margin: 0.3em 0; }
.cmds { margin: 0.4em 0 0.2em; }
code.cmd { background: var(--bg2); border: 1px solid var(--line); border-radius: 4px; padding: 0.1em 0.4em;
  user-select: all; cursor: copy; }
code.cmd.copied { outline: 2px solid #1a7f37; }
.more td { text-align: center; color: var(--muted); font-style: italic; }
[hidden] { display: none !important; }
"#;

/// `sha256-<base64>` of a text, as a Content-Security-Policy source.
pub(super) fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64(&Sha256::digest(text.as_bytes())))
}

pub(super) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
