#!/usr/bin/env python3
"""Time to first diagnostics of `koas lsp`, whole process, from outside.

For each run: start `koas lsp --debounce-ms 0`, initialize, then
  open    didOpen with the document's text -> its publishDiagnostics
  change  one character typed in the middle -> publishDiagnostics of v2
and shut down. Prints the median and range of each over the runs.

usage: scripts/lsp_latency.py KOAS DOC [RUNS]
"""
import json, os, statistics, subprocess, sys, time


def frame(message):
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read(stream):
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("koas lsp closed its output")
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def wait(stream, wanted):
    while True:
        m = read(stream)
        if wanted(m):
            return m


def once(koas, path, text):
    p = subprocess.Popen([koas, "lsp", "--debounce-ms", "0"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    uri = "file://" + os.path.abspath(path)
    send = lambda m: (p.stdin.write(frame(m)), p.stdin.flush())
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}})
    wait(p.stdout, lambda m: m.get("id") == 1)
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    start = time.perf_counter()
    send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "markdown", "version": 1, "text": text}}})
    d = wait(p.stdout, lambda m: m.get("method") == "textDocument/publishDiagnostics"
             and m["params"].get("version") == 1)
    opened = time.perf_counter() - start
    line = text.count("\n") // 2
    start = time.perf_counter()
    send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": line, "character": 0},
                                      "end": {"line": line, "character": 0}}, "text": "x"}]}})
    wait(p.stdout, lambda m: m.get("method") == "textDocument/publishDiagnostics"
         and m["params"].get("version") == 2)
    changed = time.perf_counter() - start
    send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    wait(p.stdout, lambda m: m.get("id") == 2)
    send({"jsonrpc": "2.0", "method": "exit"})
    p.wait(timeout=30)
    return opened, changed, len(d["params"]["diagnostics"])


def main():
    koas, doc = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 11
    text = open(doc, encoding="utf-8").read()
    results = [once(koas, doc, text) for _ in range(runs)]
    for name, i in (("open", 0), ("change", 1)):
        ms = sorted(r[i] * 1000 for r in results)
        print(f"{name:6} median {statistics.median(ms):7.1f} ms  (min {ms[0]:.1f}, max {ms[-1]:.1f}, {runs} runs)")
    print(f"{doc}: {len(text.encode())} bytes, {results[0][2]} diagnostics")


if __name__ == "__main__":
    main()
