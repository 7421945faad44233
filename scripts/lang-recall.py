#!/usr/bin/env python3
"""Recall and fix accuracy of koas's spelling check on planted slips (issue 46).

For every document of the list (docs/precision/language-2026-11-documents.tsv,
read from CORPUS/<language>/<project>/<path>), plant K misspellings the way
people slip -- two adjacent letters swapped, a letter dropped, a letter
doubled, a vowel changed into another -- each on its own prose line, in two
separate runs:

  multi   the word appears at least twice in the document's prose (the common
          case: a word the document uses, mistyped once);
  single  the word appears exactly once in the whole document.

A planted word is lowercase, alphabetic, at least 4 letters, in the independent
word list of its language (/usr/share/dict/american-english from wamerican,
/usr/share/dict/french from wfrench), outside code, tables, front matter,
HTML, links and URLs; a slip whose result is in that word list, or appears in
the document already, is discarded (it is a real word, not a slip). Lines on
which koas already reports something in the unplanted document are not used,
so each finding on a planted line is about the planted word.

Then `koas check --format json` on the planted copies counts
  reported      a `misspelling` finding (any severity) on the planted line
                whose span column..column_end covers the planted word;
  certain       that finding carries a fix (the certain fixes `--fix` applies);
  certain right the fix turns the line back into the original line exactly;
and `koas check --fix` on other copies, diffed against the original
documents, counts the lines `--fix` changed that were not planted (lines that
`--fix` also changes in the unplanted document are counted apart, as
pre-existing) and the certain-and-right planted lines it did not restore.

Writes one row per planted slip to --tsv; prints the tables and, last, one
summary line. Python 3 standard library only.

usage: scripts/lang-recall.py [--koas target/debug/koas] [--per-doc 5] [--seed 46]
"""

import argparse
import collections
import csv
import datetime
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORD_LISTS = {
    "en": ["/usr/share/dict/american-english", "/usr/share/dict/words"],
    "fr": ["/usr/share/dict/french"],
}
WORD_LIST_PACKAGES = {"en": "wamerican", "fr": "wfrench"}
SLIPS = ["swap", "drop", "double", "vowel"]
GROUPS = ["multi", "single"]
LANGUAGE_KINDS = {
    "misspelling",
    "repeated_word",
    "article",
    "agreement",
    "confusion",
    "typography",
}

LETTERS = {
    "en": "a-z",
    "fr": "a-zàâäçéèêëîïôöùûüÿœæ",
}
VOWELS = {
    "en": {c: c for c in "aeiou"},
    "fr": dict(
        [(c, c) for c in "aeiou"]
        + [(c, "a") for c in "àâä"]
        + [(c, "e") for c in "éèêë"]
        + [(c, "i") for c in "îï"]
        + [(c, "o") for c in "ôö"]
        + [(c, "u") for c in "ùûü"]
    ),
}

# Regions of a prose line that are not prose: masked with spaces so that
# columns stay put. Links are masked whole (text and target): the link text
# is prose to koas, but keeping them out keeps the measure simple.
MASKS = [
    re.compile(r"(`+).*?\1"),
    re.compile(r"!?\[[^\]]*\]\([^)]*\)"),
    re.compile(r"!?\[[^\]]*\]\[[^\]]*\]"),
    re.compile(r"\[[^\]]*\]"),
    re.compile(r"<[^>]*>"),
    re.compile(r"\S+://\S*"),
    re.compile(r"\S+@\S+"),
    re.compile(r"\{[^}]*\}"),
    re.compile(r"\$[^$]*\$"),
]
OPENERS = "(\"'«*_“‘"
CLOSERS = ")\"'».,;:!?*_”’"
ELISION = re.compile(r"^(?:jusqu|lorsqu|puisqu|quoiqu|qu|[cdjlmnst])['’]", re.I)


def mask(line):
    for pattern in MASKS:
        line = pattern.sub(lambda m: " " * len(m.group(0)), line)
    return line


def prose_lines(lines):
    """(index, masked line) of the lines that are plain prose."""
    out = []
    i = 0
    n = len(lines)
    if n and lines[0].strip() in ("---", "+++"):
        fence = lines[0].strip()
        i = 1
        while i < n and lines[i].strip() not in (fence, "..."):
            i += 1
        i += 1
    fence = None
    in_html = False
    in_comment = False
    in_math = False
    while i < n:
        line = lines[i]
        stripped = line.strip()
        idx = i
        i += 1
        if fence:
            if stripped.startswith(fence[0] * len(fence)) and stripped.strip(fence[0]) == "":
                fence = None
            continue
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if m:
            fence = m.group(1)
            continue
        if in_comment:
            if "-->" in line:
                in_comment = False
            continue
        if in_math:
            if stripped.startswith("$$"):
                in_math = False
            continue
        if stripped.startswith("$$"):
            in_math = stripped == "$$" or not stripped.endswith("$$")
            continue
        if in_html:
            if not stripped:
                in_html = False
            continue
        if "<!--" in line:
            if "-->" not in line[line.index("<!--"):]:
                in_comment = True
            continue
        if re.match(r"^ {0,3}<", line):
            in_html = True
            continue
        if not stripped or "|" in line or "\t" in line[:4] or line.startswith("    "):
            continue
        if re.match(r"^ {0,3}\[[^\]]+\]:", line) or "{{" in line or "{%" in line:
            continue
        if re.match(r"^\s*(=+|-+)\s*$", line):
            continue
        # A code span or link cut by the line end: the line is not plain.
        if line.count("`") % 2 or line.count("[") != line.count("]"):
            continue
        out.append((idx, mask(line)))
    return out


def tokens(lang, line, masked):
    """(start, word) of the candidate words of a prose line (char offsets)."""
    letters = re.compile("^[%s]+$" % LETTERS[lang])
    for m in re.finditer(r"\S+", masked):
        start, end = m.start(), m.end()
        if start > 0 and not line[start - 1].isspace():
            continue
        if end < len(line) and not line[end].isspace():
            continue
        tok = m.group(0)
        while tok and tok[0] in OPENERS:
            tok = tok[1:]
            start += 1
        while tok and tok[-1] in CLOSERS:
            tok = tok[:-1]
        if lang == "fr":
            e = ELISION.match(tok)
            if e:
                start += e.end()
                tok = tok[e.end():]
        if letters.match(tok):
            yield start, tok


def slip(kind, word, lang, rng):
    """One slip of `kind` in `word`, or None if the word has no room for it."""
    n = len(word)
    if kind == "swap":
        spots = [i for i in range(n - 1) if word[i] != word[i + 1]]
        if not spots:
            return None
        i = rng.choice(spots)
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == "drop":
        i = rng.randrange(n)
        return word[:i] + word[i + 1:]
    if kind == "double":
        spots = [
            i
            for i in range(n)
            if (i == 0 or word[i - 1] != word[i]) and (i == n - 1 or word[i + 1] != word[i])
        ]
        if not spots:
            return None
        i = rng.choice(spots)
        return word[: i + 1] + word[i] + word[i + 1:]
    if kind == "vowel":
        vowels = VOWELS[lang]
        spots = [i for i in range(n) if word[i] in vowels]
        if not spots:
            return None
        i = rng.choice(spots)
        other = rng.choice([v for v in "aeiou" if v != vowels[word[i]]])
        return word[:i] + other + word[i + 1:]
    raise ValueError(kind)


def load_words(lang):
    for path in WORD_LISTS[lang]:
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                return path, {w.strip().lower() for w in f if w.strip()}
    sys.exit(
        "lang-recall: no %s word list (%s); apt-get install -y %s"
        % (lang, " or ".join(WORD_LISTS[lang]), WORD_LIST_PACKAGES[lang])
    )


def run_koas(koas, args, files):
    cmd = [koas, "check", "--no-config", "--quiet", "--fail-on", "never"] + args + files
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("lang-recall: %s exited %d:\n%s" % (" ".join(cmd[:6]), p.returncode, p.stderr[-2000:]))
    return p.stdout


def findings_by_file(koas, files):
    out = collections.defaultdict(list)
    for f in json.loads(run_koas(koas, ["--format", "json"], files) or "[]"):
        out[os.path.abspath(f["file"])].append(f)
    return out


def busy_lines(findings):
    """0-based lines a finding is on, or a fix edits."""
    lines = set()
    for f in findings:
        for ln in range(f["line"], (f.get("line_end") or f["line"]) + 1):
            lines.add(ln - 1)
        for e in (f.get("fix") or {}).get("edits", []):
            lines.add(e["line"] - 1)
    return lines


def fixed_lines(findings):
    return {e["line"] - 1 for f in findings for e in (f.get("fix") or {}).get("edits", [])}


def read_lines(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read().split("\n")


INFLECTIONS = ["s", "es", "ed", "ing", "er", "ers", "d", "r", "y"]


def inflection_of(bad, count):
    """The document word (used twice or more) that `bad` reads as an
    inflection of ("titress" = "titres" + "s"), or ''."""
    for suffix in INFLECTIONS:
        stem = bad[: -len(suffix)]
        if bad.endswith(suffix) and len(stem) >= 3 and count[stem] >= 2:
            return stem
    return ""


def in_container(lines, idx):
    """`true` when line idx is inside a `:::` block (a glossary entry of
    some static-site generators)."""
    depth = 0
    for line in lines[:idx]:
        if line.startswith(":::"):
            depth = 0 if line.strip() == ":::" else 1
    return depth == 1


def derivation(bad, words):
    """The known word `bad` reads as a regular derivation or a compound
    of, by the independent word list ('' when none): the shapes an
    affix-aware dictionary accepts."""
    for suffix in ["s", "es", "ed", "d", "ing", "er", "ers", "r", "rs", "y", "ly", "al"]:
        stem = bad[: -len(suffix)]
        if not bad.endswith(suffix) or len(stem) < 3:
            continue
        for cand in (stem, stem + "e", stem[:-1] if len(stem) > 3 and stem[-1] == stem[-2] else ""):
            if cand and cand in words:
                return "%s+%s" % (cand, suffix)
    for i in range(3, len(bad) - 2):
        if bad[:i] in words and bad[i:] in words:
            return "%s+%s" % (bad[:i], bad[i:])
    return ""


def plant(lang, group, doc, lines, busy, words, per_doc, seed, doc_index):
    """Planted slips of one document for one group: list of dicts."""
    rng = random.Random("%s:%s:%s:%s" % (seed, lang, group, doc))
    prose = prose_lines(lines)
    text_lower = "\n".join(lines).lower()
    count = collections.Counter()
    cands = []
    for idx, masked in prose:
        for start, word in tokens(lang, lines[idx], masked):
            count[word.lower()] += 1
            if idx not in busy and len(word) >= 4 and word == word.lower():
                cands.append((idx, start, word))
    whole = lambda w: len(re.findall(r"(?<![\w'’-])%s(?![\w'’-])" % re.escape(w), text_lower))
    if group == "multi":
        cands = [c for c in cands if count[c[2]] >= 2]
    else:
        cands = [c for c in cands if count[c[2]] == 1 and whole(c[2]) == 1]
    cands = [c for c in cands if c[2] in words]
    rng.shuffle(cands)
    used_lines = set()
    used_forms = set()
    planted = []
    for k in range(per_doc):
        kind = SLIPS[(doc_index + k) % len(SLIPS)]
        for idx, start, word in cands:
            if idx in used_lines:
                continue
            bad = slip(kind, word, lang, rng)
            # The same slip twice would be a word the document uses.
            if not bad or bad in words or bad in used_forms or whole(bad) > 0:
                continue
            used_lines.add(idx)
            used_forms.add(bad)
            planted.append(
                dict(line=idx, start=start, word=word, slipped=bad, slip=kind, count=count[word],
                     inflection=inflection_of(bad, count), container=in_container(lines, idx))
            )
            break
    return planted


NEUTRAL = {
    "en": "This is the word %s in a sentence of the document.\n",
    "fr": "Voici le mot %s dans une phrase du document.\n",
}


def explain(koas, work, rows, words_by_lang):
    """A likely cause for each slip missed or fixed wrong, in column
    `cause`: the slipped word alone in a neutral sentence tells a word the
    checker accepts anywhere from one the document's context vouches for."""
    todo = [r for r in rows if r["outcome"] in ("missed", "wrong_fix")]
    idir = os.path.join(work, "isolated")
    shutil.rmtree(idir, ignore_errors=True)
    os.makedirs(idir)
    files = []
    for i, r in enumerate(todo):
        path = os.path.join(idir, "%04d-%s.md" % (i, r["language"]))
        with open(path, "w", encoding="utf-8") as f:
            f.write(NEUTRAL[r["language"]] % r["slipped"])
        files.append(path)
    alone = findings_by_file(koas, files) if files else {}
    for r, path in zip(todo, files):
        hits = [f for f in alone.get(os.path.abspath(path), []) if f["kind"] == "misspelling"]
        words = words_by_lang[r["language"]]
        other = words_by_lang.get("en" if r["language"] == "fr" else "fr", set())
        if r["outcome"] == "wrong_fix":
            n = len(r["suggestions"].split())
            r["cause"] = "certain fix to %s, a word the document uses; %d suggestions" % (r["fixed_to"], n)
            if len(r["slipped"]) <= 3:
                r["cause"] += "; a word of %d letters" % len(r["slipped"])
        elif hits:
            if r["container"]:
                r["cause"] = "context: inside a ::: block (glossary entry)"
            elif r["inflection"]:
                r["cause"] = "context: read as an inflection of the document's %s" % r["inflection"]
            elif r["other_findings"]:
                r["cause"] = "context: another finding on the line (%s)" % r["other_findings"]
            else:
                r["cause"] = "context: reported alone, not in the document"
        elif r["language"] == "fr" and r["slipped"] in other:
            r["cause"] = "accepted alone: an English word (of the English list) in a French paragraph"
        elif r["language"] == "fr" and derivation(r["slipped"], other):
            r["cause"] = "accepted alone: an English derivation (%s) in a French paragraph" % derivation(r["slipped"], other)
        elif derivation(r["slipped"], words):
            r["cause"] = "accepted alone: reads as a derivation or compound of listed words (%s)" % derivation(r["slipped"], words)
        else:
            r["cause"] = "accepted alone: not in the word list, yet koas's dictionary or rules take it"
    for r in rows:
        r.setdefault("cause", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--koas", default=os.path.join(ROOT, "target", "debug", "koas"))
    ap.add_argument("--corpus", default="/work/corpus46")
    ap.add_argument("--list", default=os.path.join(ROOT, "docs/precision/language-2026-11-documents.tsv"))
    ap.add_argument("--per-doc", type=int, default=5, help="slips per document and group")
    ap.add_argument("--seed", default="46")
    ap.add_argument("--tsv", default=os.path.join(ROOT, "docs/precision/language-2026-11-recall.tsv"))
    ap.add_argument("--keep", help="keep the planted copies in this folder")
    a = ap.parse_args()
    koas = os.path.abspath(a.koas)
    built = os.path.getmtime(koas)
    head = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                          capture_output=True, text=True).stdout.strip()
    stamp = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")

    docs = collections.defaultdict(list)
    with open(a.list, encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            path = os.path.join(a.corpus, row["language"], row["project"], row["path"])
            if os.path.exists(path):
                docs[row["language"]].append((row["project"], row["path"], path))
            else:
                print("lang-recall: missing %s" % path, file=sys.stderr)

    work = a.keep or tempfile.mkdtemp(prefix="lang-recall-")
    os.makedirs(work, exist_ok=True)
    rows = []
    stats = {}
    lists = {}
    words_by_lang = {}
    for lang in sorted(docs):
        list_path, words = load_words(lang)
        lists[lang] = list_path
        words_by_lang[lang] = words
        entries = sorted(docs[lang])
        base = findings_by_file(koas, [p for _, _, p in entries])
        for group in GROUPS:
            pdir = os.path.join(work, lang, group, "planted")
            fdir = os.path.join(work, lang, group, "fixed")
            for d in (pdir, fdir):
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
            jobs = []
            for i, (project, rel, path) in enumerate(entries):
                lines = read_lines(path)
                findings = base.get(os.path.abspath(path), [])
                slips = plant(lang, group, "%s/%s" % (project, rel), lines, busy_lines(findings),
                              words, a.per_doc, a.seed, i)
                if not slips:
                    continue
                new = list(lines)
                for s in slips:
                    ln = new[s["line"]]
                    new[s["line"]] = ln[: s["start"]] + s["slipped"] + ln[s["start"] + len(s["word"]):]
                name = "%03d-%s-%s" % (i, project, rel.replace("/", "_"))
                for d in (pdir, fdir):
                    with open(os.path.join(d, name), "w", encoding="utf-8", newline="") as f:
                        f.write("\n".join(new))
                jobs.append((project, rel, lines, fixed_lines(findings), slips, name))
            found = findings_by_file(koas, [os.path.join(pdir, j[5]) for j in jobs])
            run_koas(koas, ["--fix"], [os.path.join(fdir, j[5]) for j in jobs])
            st = stats[(lang, group)] = collections.defaultdict(collections.Counter)
            for project, rel, lines, pre_fixed, slips, name in jobs:
                fs = found.get(os.path.abspath(os.path.join(pdir, name)), [])
                after = read_lines(os.path.join(fdir, name))
                planted_lines = {s["line"] for s in slips}
                if len(after) != len(lines):
                    st["all"]["line_count_changed"] += 1
                for ln in range(min(len(after), len(lines))):
                    if after[ln] != lines[ln] and ln not in planted_lines:
                        if ln in pre_fixed:
                            st["all"]["other_lines_preexisting"] += 1
                        else:
                            st["all"]["other_lines_changed"] += 1
                            print("lang-recall: --fix changed unplanted line %s/%s:%d"
                                  % (project, rel, ln + 1), file=sys.stderr)
                for s in slips:
                    col = len(lines[s["line"]][: s["start"]]) + 1
                    col_end = col + len(s["slipped"])
                    # koas reads lines without their CRLF ending.
                    original = lines[s["line"]].rstrip("\r")
                    planted_line = original[: s["start"]] + s["slipped"] + original[s["start"] + len(s["word"]):]
                    on_line = [f for f in fs if f["line"] == s["line"] + 1]
                    covering = [
                        f for f in on_line
                        if f["column"] <= col and (f.get("column_end") or f["column"] + 1) >= col_end
                    ]
                    hit = next((f for f in covering if f["kind"] == "misspelling"), None)
                    fix_after = None
                    if hit and hit.get("fix"):
                        for e in hit["fix"]["edits"]:
                            if e["line"] == s["line"] + 1:
                                fix_after = e["after"]
                    fixed_to = ""
                    if fix_after is not None:
                        fixed_to = fix_after[s["start"]: s["start"] + len(fix_after) - len(planted_line) + len(s["slipped"])]
                    right = fix_after == original
                    sugg = hit.get("suggestions", []) if hit else []
                    restored = after[s["line"]] == lines[s["line"]] if s["line"] < len(after) else False
                    if not hit:
                        outcome = "missed"
                    elif fix_after is None:
                        outcome = "reported"
                    elif right:
                        outcome = "fixed"
                    else:
                        outcome = "wrong_fix"
                    for key in (s["slip"], "all"):
                        c = st[key]
                        c["planted"] += 1
                        c["reported"] += bool(hit)
                        c["certain"] += fix_after is not None
                        c["certain_right"] += right
                        c["top1"] += bool(sugg) and sugg[0] == s["word"]
                        c["in_suggestions"] += s["word"] in sugg
                        if right and not restored:
                            c["certain_right_not_restored"] += 1
                        if not right and after[s["line"]].rstrip("\r") != planted_line and not restored:
                            c["planted_line_mangled"] += 1
                    rows.append(dict(
                        language=lang, group=group, project=project, path=rel,
                        line=s["line"] + 1, column=col, word=s["word"], slip=s["slip"],
                        slipped=s["slipped"], count_in_doc=s["count"], outcome=outcome,
                        severity=hit["severity"] if hit else "",
                        other_findings=";".join(sorted({f["kind"] for f in on_line if f is not hit})),
                        fixed_to=fixed_to, suggestions=" ".join(sugg),
                        restored_by_fix="yes" if restored else "no",
                        inflection=s["inflection"], container=s["container"],
                    ))

    explain(koas, work, rows, words_by_lang)
    for r in rows:
        del r["inflection"], r["container"]
    with open(a.tsv, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["language"],
                           delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)

    pct = lambda x, y: "%.1f%%" % (100.0 * x / y) if y else "-"
    print("koas: %s (built %s UTC; checkout %s)" % (koas, stamp(built), head))
    if os.path.getmtime(koas) != built:
        print("WARNING: koas was rebuilt during the run (now %s): the figures mix two builds"
              % stamp(os.path.getmtime(koas)))
    print("seed %s, %d slips per document and group; planted copies in %s"
          % (a.seed, a.per_doc, work))
    for lang in sorted(lists):
        print("%s: %d documents; real-word filter: %s" % (lang, len(docs[lang]), lists[lang]))
    print()
    print("| language | words | slip | planted | reported | certain fixes | certain right | top suggestion right |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    summary = []
    ok = True
    for (lang, group), st in sorted(stats.items()):
        for key in SLIPS + ["all"]:
            c = st[key]
            print("| %s | %s | %s | %d | %d (%s) | %d (%s) | %d (%s) | %d (%s) |" % (
                lang, group, "**all**" if key == "all" else key, c["planted"],
                c["reported"], pct(c["reported"], c["planted"]),
                c["certain"], pct(c["certain"], c["planted"]),
                c["certain_right"], pct(c["certain_right"], c["certain"]),
                c["top1"], pct(c["top1"], c["planted"])))
        c = st["all"]
        summary.append("%s/%s reported %s" % (lang, group, pct(c["reported"], c["planted"])))
        # The recall bar is for the common case (a word the
        # document uses); the words used once are reported beside it.
        if group == "multi":
            ok &= c["planted"] > 0 and c["reported"] >= 0.95 * c["planted"]
        ok &= c["other_lines_changed"] + c["line_count_changed"] + c["certain_right_not_restored"] == 0
    for lang in sorted(lists):
        both = [stats[(lang, g)]["all"] for g in GROUPS if (lang, g) in stats]
        certain = sum(c["certain"] for c in both)
        right = sum(c["certain_right"] for c in both)
        other = sum(c["other_lines_changed"] for c in both)
        summary.append("%s certain fixes right %s (%d/%d), unplanted lines changed %d"
                       % (lang, pct(right, certain), right, certain, other))
        # Every certain fix counts, whichever run it came from.
        ok &= certain == 0 or right >= 0.95 * certain
    print()
    print("| language | words | unplanted lines changed by --fix | of which --fix changes unplanted too | certain-right lines not restored | planted lines changed wrongly | line count changed |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for (lang, group), st in sorted(stats.items()):
        c = st["all"]
        print("| %s | %s | %d | %d | %d | %d | %d |" % (
            lang, group, c["other_lines_changed"] + c["other_lines_preexisting"],
            c["other_lines_preexisting"], c["certain_right_not_restored"],
            c["planted_line_mangled"], c["line_count_changed"]))
    print()
    causes = collections.Counter(
        (r["language"], r["group"], r["outcome"], re.sub(r" \(.*|; .*| to .*| of the document's .*", "", r["cause"]))
        for r in rows if r["cause"])
    if causes:
        print("| language | words | outcome | likely cause | slips |")
        print("|---|---|---|---|---:|")
        for (lang, group, outcome, cause), n in sorted(causes.items()):
            print("| %s | %s | %s | %s | %d |" % (lang, group, outcome, cause, n))
        print()
    print("detail: %s (%d slips, %d missed)"
          % (a.tsv, len(rows), sum(r["outcome"] == "missed" for r in rows)))
    print("lang-recall: %s: %s" % ("PASS" if ok else "FAIL", "; ".join(summary)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
