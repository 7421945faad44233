#!/usr/bin/env python3
"""Run koas check --format json on every document of the issue-46 corpus
(/work/corpus46/<lang>, listed in docs/precision/language-2026-11-documents.tsv)
and write /work/corpus46/koas-<lang>.tsv
(project, path, line, column, kind, severity, word, suggestions, certain, message)."""
import json, subprocess, sys, os
koas = sys.argv[1]
lang = sys.argv[2]
root = f"/work/corpus46/{lang}"
out = open(f"/work/corpus46/koas-{lang}.tsv", "w")
out.write("project\tpath\tline\tcolumn\tkind\tseverity\tword\tsuggestions\tcertain\tmessage\n")
files = []
for dp, dn, fn in os.walk(root):
    for f in fn:
        if f.endswith(".md"):
            files.append(os.path.join(dp, f))
files.sort()
for f in files:
    rel = os.path.relpath(f, root)
    project, path = rel.split("/", 1)
    r = subprocess.run([koas, "check", f, "--format", "json"], capture_output=True, text=True)
    try:
        data = json.loads(r.stdout)
    except Exception:
        print("bad output", f, r.stderr[:300], file=sys.stderr); continue
    lines = open(f, encoding="utf-8").read().split("\n")
    for x in data:
        if x.get("kernel") != "md_language_check":
            continue
        line = lines[x["line"]-1]
        chars = list(line)
        c0 = x["column"]-1; c1 = (x.get("column_end") or x["column"])-1
        word = "".join(chars[c0:c1])
        out.write("\t".join([project, path, str(x["line"]), str(x["column"]), x["kind"], x["severity"], word.replace("\t"," "),
            "|".join(x.get("suggestions", [])), "yes" if x.get("fix") else "no", x["message"].replace("\t"," ")]) + "\n")
