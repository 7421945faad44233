#!/usr/bin/env python3
"""Issue 45's hostile probe: the attack list of the fourth round, re-run.

    scripts/probe-hostile.py --koas target/debug/koas [--only CATEGORY] [--json]

Runs each attack against the given `koas` binary (which finds its kernels
next to itself, in the same target folder) in a fresh temporary folder and
prints one row per probe: category, probe, outcome (`held`: the attack had
no effect; `broken`: it had; `n/a`: it cannot be run here, with why;
`error`: the probe itself failed) and a short why with the figure measured,
then "held N of M" per category (M leaves out the n/a rows).

Every koas process runs in its own process group with a time limit and,
where it may grow, a cap on its address space; the group is killed when the
probe ends. The only servers reached are loopback HTTP servers this script
starts. Standard library only; no test calls this script: it is a tool a
person runs (docs/isolation.md, "The fourth hostile probe").
"""

import argparse
import http.server
import json
import os
import queue
import re
import resource
import shutil
import signal
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# Bounds of every probe.
STEP_TIMEOUT = 20.0  # seconds a koas process (or an awaited answer) may take
LINEAR_TIMEOUT = 180.0  # seconds the linearity probe's check may take
PROBE_GUARD = 420  # seconds after which a whole probe is abandoned
ADDRESS_SPACE = 3 << 30  # RLIMIT_AS of the koas processes that may grow

# What the attacker's server and document send: a window title (OSC 0 ...
# BEL), a screen clear (CSI 2J), a carriage return, a forged koas line.
ATTACK = "\x1b]0;PWNED\x07\x1b[2J\rkoas: review OK"

CATEGORIES = ["links", "escapes", "lsp", "folders", "run", "edits", "mismatch", "linear"]


class Outcome(Exception):
    """Raised (or returned) by a probe: its outcome and why."""

    def __init__(self, outcome, why):
        super().__init__(why)
        self.outcome = outcome
        self.why = why


def held(why):
    return ("held", why)


def broken(why):
    return ("broken", why)


def excerpt(data, limit=160):
    """A short, inert excerpt of bytes or text (controls shown escaped)."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    data = data.strip()
    data = re.sub(r"[ \t\n]+", " ", data)
    shown = "".join(f"\\x{ord(c):02x}" if ord(c) < 32 or 127 <= ord(c) < 160 else c for c in data)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


# ---------------------------------------------------------------- processes


class Ran:
    """What a finished (or killed) process left."""

    def __init__(self, code, sig, out, err, seconds, maxrss_kib, timed_out):
        self.code, self.signal, self.out, self.err = code, sig, out, err
        self.seconds, self.maxrss_kib, self.timed_out = seconds, maxrss_kib, timed_out

    @property
    def text(self):
        return (self.out + self.err).decode("utf-8", "replace")

    def status(self):
        if self.timed_out:
            return f"still running after {self.seconds:.0f} s (killed)"
        if self.signal:
            return f"killed by {signal.Signals(self.signal).name} after {self.seconds:.1f} s"
        return f"exit {self.code} in {self.seconds:.1f} s"


class Context:
    """One probe's temporary folder, environment, processes and servers."""

    def __init__(self, koas):
        self.koas = koas
        self.dir = Path(tempfile.mkdtemp(prefix="koas-probe-"))
        self.home = self.dir / "home"
        self.home.mkdir()
        self.work = self.dir / "work"
        self.work.mkdir()
        self.groups = []
        self.servers = []

    def env(self):
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("KOAS_") and "proxy" not in k.lower()
        }
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local/share"),
            NO_COLOR="1",
            USER="reviewer",
            no_proxy="127.0.0.1,localhost",
            RUST_BACKTRACE="0",
        )
        return env

    def preexec(self, limit_as, user):
        def setup():
            if limit_as:
                resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
            if user is not None:
                os.setgroups([])
                os.setgid(user)
                os.setuid(user)

        return setup

    def spawn(self, args, cwd=None, limit_as=None, user=None, stdin=None, stdout=None, stderr=None):
        """Starts koas ARGS in a new process group (killed at the end)."""
        p = subprocess.Popen(
            [str(self.koas)] + [str(a) for a in args],
            cwd=str(cwd or self.work),
            env=self.env(),
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=self.preexec(limit_as, user),
        )
        self.groups.append(p.pid)
        return p

    def run(self, args, cwd=None, timeout=STEP_TIMEOUT, limit_as=None, user=None, on_start=None):
        """Runs koas ARGS to its end (or its timeout) and returns a Ran."""
        out_path = self.dir / f"out-{len(self.groups)}"
        err_path = self.dir / f"err-{len(self.groups)}"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.monotonic()
            p = self.spawn(args, cwd=cwd, limit_as=limit_as, user=user, stdout=out, stderr=err)
            if on_start:
                on_start(p)
            status, rusage, timed_out = wait_for_pid(p, start + timeout)
            seconds = time.monotonic() - start
        kill_group(p.pid)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        if timed_out:
            code, sig = None, None
        return Ran(
            code, sig, out_path.read_bytes(), err_path.read_bytes(), seconds,
            rusage.ru_maxrss if rusage else 0, timed_out,
        )

    def server(self, handler):
        s = LoopbackServer(handler)
        self.servers.append(s)
        return s

    def close(self):
        for pid in self.groups:
            kill_group(pid)
        for s in self.servers:
            s.stop()
        # A folder made unreadable by a probe is opened again to be removed.
        for root, dirs, _ in os.walk(self.dir):
            for d in dirs:
                path = os.path.join(root, d)
                try:
                    if not os.path.islink(path):
                        os.chmod(path, 0o700)
                except OSError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for_pid(p, deadline):
    """Waits for child p until deadline: (status, rusage, timed_out); kills
    its group at the deadline."""
    timed_out = False
    while True:
        pid, status, rusage = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = status  # reaped here: Popen must not wait again
            return status, rusage, timed_out
        if time.monotonic() > deadline and not timed_out:
            timed_out = True
            kill_group(p.pid)
            deadline = time.monotonic() + 10
        elif timed_out and time.monotonic() > deadline:
            return 0, None, True
        time.sleep(0.02)


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def peak_rss_mib(pid):
    """VmHWM (the peak resident set) of a live process, in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


# ---------------------------------------------------------------- HTTP


class LoopbackServer:
    """An HTTP server on 127.0.0.1: handler(method, path, body) returns
    (status, body bytes) or None to hang until the server stops."""

    def __init__(self, handler):
        stop = threading.Event()
        self.stop_event = stop
        self.calls = []
        calls = self.calls

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                calls.append((self.command, self.path))
                reply = handler(self.command, self.path, body)
                if reply is None:
                    stop.wait(120)
                    return
                status, data = reply
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if data[:1] in b"{[" else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.stop_event.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def models_handler(model):
    """A server listing `model` and answering chats with an empty review."""

    def handle(method, path, body):
        if path.endswith("/models"):
            return 200, json.dumps({"object": "list", "data": [{"id": model, "object": "model"}]}).encode()
        answer = {"choices": [{"message": {"role": "assistant", "content": "[]"}, "finish_reason": "stop"}]}
        return 200, json.dumps(answer).encode()

    return handle


# ---------------------------------------------------------------- LSP


class Lsp:
    """A client of one `koas lsp` over pipes; writes go through one thread
    so that a frame the server does not read never blocks the probe."""

    def __init__(self, ctx, args=(), limit_as=ADDRESS_SPACE):
        self.ctx = ctx
        self.err = open(ctx.dir / "lsp-stderr", "wb")
        self.p = ctx.spawn(
            ["lsp", *args], limit_as=limit_as, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.err,
        )
        self.incoming = queue.Queue()
        self.seen = []  # (arrival time, size of the body, message)
        self.writes = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()

    def _read(self):
        stream = self.p.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.incoming.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    try:
                        length = int(line.split(b":", 1)[1])
                    except ValueError:
                        length = None
            if length is None:
                continue
            body = stream.read(length)
            try:
                message = json.loads(body)
            except ValueError:
                message = {"unparsed": body[:200].decode("utf-8", "replace")}
            if isinstance(message, dict) and "method" in message and "id" in message:
                # The server's own requests (progress, applyEdit) get an answer.
                result = {"applied": True} if message["method"] == "workspace/applyEdit" else None
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            self.incoming.put((time.monotonic(), len(body), message))

    def _write(self):
        while True:
            data = self.writes.get()
            if data is None:
                return
            try:
                self.p.stdin.write(data)
                self.p.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                return

    def raw(self, data):
        self.writes.put(data)

    @staticmethod
    def frame(message):
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def send(self, message):
        self.raw(self.frame(message))

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def ask(self, method, params, id=None):
        """Sends a request and returns its id (not waiting)."""
        if id is None:
            id = self.next_id
            self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        return id

    def wait(self, wanted, timeout=STEP_TIMEOUT):
        """The first message (seen or new) matching wanted, or None."""
        for item in self.seen:
            if wanted(item[2]):
                self.seen.remove(item)
                return item[2]
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                item = self.incoming.get(timeout=left)
            except queue.Empty:
                return None
            if item is None:
                self.incoming.put(None)  # the server is gone; stay gone
                return None
            if wanted(item[2]):
                return item[2]
            self.seen.append(item)

    def drain(self, seconds):
        """Collects every message arriving within seconds into seen."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                item = self.incoming.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return
            if item is None:
                self.incoming.put(None)
                return
            self.seen.append(item)

    def response(self, id, timeout=STEP_TIMEOUT):
        return self.wait(lambda m: isinstance(m, dict) and m.get("id") == id and "method" not in m, timeout)

    def request(self, method, params, timeout=STEP_TIMEOUT):
        return self.response(self.ask(method, params), timeout)

    def initialize(self):
        answer = self.request(
            "initialize",
            {"processId": None, "rootUri": f"file://{self.ctx.work}",
             "capabilities": {"window": {"workDoneProgress": True}}},
        )
        if not answer or "result" not in answer:
            raise Outcome("error", f"no answer to initialize: {answer}")
        self.notify("initialized", {})

    def open(self, uri, text, version=1):
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "markdown", "version": version, "text": text}})

    def close_doc(self, uri):
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def hover_frame(self, id, uri):
        return self.frame({"jsonrpc": "2.0", "id": id, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}})

    def answered(self, id, timeout=STEP_TIMEOUT):
        """Whether request id got a result (not an error) within timeout."""
        answer = self.response(id, timeout)
        return answer is not None and "error" not in answer

    def alive(self):
        return self.p.poll() is None

    def exit_status(self):
        code = self.p.poll()
        if code is None:
            return "running"
        return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}"


def lsp_ready(ctx, args=()):
    """A started, initialized server with doc.md open: (client, uri)."""
    text = "# Doc\n\nText.\n"
    (ctx.work / "doc.md").write_text(text)
    uri = f"file://{ctx.work / 'doc.md'}"
    c = Lsp(ctx, args)
    c.initialize()
    c.open(uri, text)
    c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    return c, uri


# ---------------------------------------------------------------- documents


def review_document(sections=4):
    text = "# Handbook\n\n"
    for s in range(1, sections + 1):
        text += f"## Part {s}\n\nThe bandwith of part {s} is high.\n\n"
    return text + "Last words.\n"


TYPO_OPS = [{"action": "replace", "kind": "typo", "target": {"line_start": 5},
             "before_text": "bandwith", "after_text": "bandwidth"}]


def files_under(path):
    return sorted(str(p.relative_to(path)) for p in Path(path).rglob("*") if p.is_file() or p.is_symlink())


def workspace_of(ctx):
    found = sorted((ctx.work / ".review").glob("doc_*"))
    if len(found) != 1:
        raise Outcome("error", f"expected one workspace under .review, found {len(found)}")
    return found[0]


def reviewed_once(ctx):
    """doc.md and ops.json written, a first plain review run: its workspace."""
    (ctx.work / "doc.md").write_text(review_document())
    (ctx.work / "ops.json").write_text(json.dumps(TYPO_OPS))
    ran = ctx.run(["-q", "review", "doc.md"])
    if ran.code != 0:
        raise Outcome("error", f"first review: {ran.status()}: {excerpt(ran.err)}")
    return workspace_of(ctx)


def refusal(ran):
    """The last non-empty line of stderr, as an excerpt."""
    lines = [l for l in ran.err.decode("utf-8", "replace").splitlines() if l.strip()]
    return excerpt(lines[-1] if lines else "", 110)


# ---------------------------------------------------------------- links


def probe_ledger_link(ctx):
    ws = reviewed_once(ctx)
    outside = ctx.dir / "elsewhere-led"
    ledger = ws / "review" / "ledger.jsonl"
    # The outside file holds the workspace's own ledger, so that a koas
    # that follows the link finds a valid ledger there and appends to it.
    outside.write_bytes(ledger.read_bytes() if ledger.is_file() else b"")
    if ledger.exists() or ledger.is_symlink():
        ledger.unlink()
    ledger.parent.mkdir(parents=True, exist_ok=True)
    ledger.symlink_to(outside)
    original = outside.read_bytes()
    ran = ctx.run(["-q", "review", "doc.md", "--ops", "ops.json"])
    after = outside.read_bytes()
    if after == original:
        return held(f"outside file unchanged ({ran.status()}: {refusal(ran)})")
    return broken(f"outside file written: {len(original)} -> {len(after)} bytes ({ran.status()})")


def probe_patches_link(ctx):
    ws = reviewed_once(ctx)
    outside = ctx.dir / "elsewhere-patches"
    outside.mkdir()
    patches = ws / "review" / "patches"
    if patches.is_symlink() or patches.is_file():
        patches.unlink()
    elif patches.exists():
        shutil.rmtree(patches)
    patches.symlink_to(outside)
    ran = ctx.run(["-q", "review", "doc.md", "--ops", "ops.json"])
    written = files_under(outside)
    if not written:
        return held(f"no file in the outside folder ({ran.status()}: {refusal(ran)})")
    return broken(f"{len(written)} files written outside: {', '.join(written[:3])}")


def probe_review_dir_link_cli(ctx):
    (ctx.work / "doc.md").write_text(review_document())
    (ctx.work / "ops.json").write_text(json.dumps(TYPO_OPS))
    outside = ctx.dir / "elsewhere-review"
    outside.mkdir()
    (ctx.work / ".review").symlink_to(outside)
    ran = ctx.run(["-q", "review", "doc.md", "--ops", "ops.json"])
    written = files_under(outside)
    if not written:
        return held(f"nothing written outside ({ran.status()}: {refusal(ran)})")
    return broken(f"{len(written)} files written in the linked folder ({ran.status()})")


def probe_review_dir_link_lsp(ctx):
    text = review_document()
    (ctx.work / "doc.md").write_text(text)
    outside = ctx.dir / "elsewhere-review"
    outside.mkdir()
    (ctx.work / ".review").symlink_to(outside)
    uri = f"file://{ctx.work / 'doc.md'}"
    c = Lsp(ctx)
    c.initialize()
    c.open(uri, text)
    answer = c.request("workspace/executeCommand",
                       {"command": "koas.review", "arguments": [uri, {"noLlm": True}]}, timeout=60)
    written = files_under(outside)
    said = excerpt(json.dumps(answer.get("error") or answer.get("result")) if answer else "no answer", 110)
    if not written:
        return held(f"nothing written outside (koas.review: {said})")
    return broken(f"{len(written)} files written in the linked folder (koas.review: {said})")


# ---------------------------------------------------------------- escapes

RAW = [("ESC", "\x1b"), ("BEL", "\x07"), ("CR", "\r"), ("CSI", "\x9b")]


def raw_controls(text):
    return [name for name, c in RAW if c in text]


def inert(ran, what):
    found = raw_controls(ran.text)
    shown = "\\u{1b}]0;PWNED" in ran.text or "\\x1b]0;PWNED" in ran.text or "\\e]0;PWNED" in ran.text
    if found:
        return broken(f"raw {'/'.join(found)} on the terminal ({what}; {ran.status()})")
    return held(f"no raw control; attack {'shown escaped' if shown else 'not shown'} ({ran.status()})")


def error_500_server(ctx):
    return ctx.server(lambda m, p, b: (500, ATTACK.encode()))


def fast_llm_config(ctx):
    (ctx.work / "koas.toml").write_text(
        "[llm]\nbackoff_initial_ms = 10\nbackoff_max_ms = 20\nmax_retries = 1\n")


def probe_escape_review(ctx):
    server = error_500_server(ctx)
    (ctx.work / "doc.md").write_text("# Title\n\nThe service handles teh work.\n")
    fast_llm_config(ctx)
    ran = ctx.run(["review", "doc.md", "--llm-backend", "openai", "--llm-endpoint", server.url,
                   "--llm-model", "m"], timeout=60)
    if not server.calls:
        return ("error", f"the server was never asked ({ran.status()}: {refusal(ran)})")
    return inert(ran, "koas review")


PYRAMID_PIPELINE = """name = "probe"
kernels = ["md_inventory", "md_structure", "md_protected_regions", "md_chunk", "md_pyramid"]
workspace = "ws"

[llm]
backend = "openai"
model = "m"
endpoint = "{url}"
backoff_initial_ms = 10
backoff_max_ms = 20
max_retries = 1

[inputs]
doc = "{doc}"
"""


def probe_escape_run(ctx):
    server = error_500_server(ctx)
    (ctx.work / "doc.md").write_text(review_document())
    (ctx.work / "pipeline.toml").write_text(PYRAMID_PIPELINE.format(url=server.url, doc="doc.md"))
    ran = ctx.run(["run", "pipeline.toml", "-v"], timeout=60)
    if not server.calls:
        return ("error", f"the server was never asked ({ran.status()}: {refusal(ran)})")
    return inert(ran, "koas run")


def escape_document():
    # A heading and a broken link whose texts carry the attack: the finding
    # quotes the link.
    return f"# Title {ATTACK}\n\nSee [the part](#part-{ATTACK}).\n"


def probe_escape_check(ctx, fmt):
    (ctx.work / "doc.md").write_bytes(escape_document().encode())
    ran = ctx.run(["check", "doc.md", "--fail-on", "never", "--format", fmt])
    if ran.code is None:
        return ("error", f"koas check: {ran.status()}")
    if not raw_controls(ran.text) and "PWNED" not in ran.text:
        return ("n/a", f"no finding quotes the heading or the link: nothing to escape ({ran.status()})")
    return inert(ran, f"koas check --format {fmt}")


def probe_escape_check_name(ctx, fmt):
    # A file name is the document's too: every finding line starts with it.
    docs = ctx.work / "docs"
    docs.mkdir()
    (docs / f"{ATTACK}.md").write_text("# T\n\n##\n\nSee [x](#nowhere).\n")
    ran = ctx.run(["check", "docs", "--fail-on", "never", "--format", fmt])
    if ran.code is None:
        return ("error", f"koas check: {ran.status()}")
    return inert(ran, f"koas check FOLDER --format {fmt}")


# ---------------------------------------------------------------- LSP


def probe_lsp_non_utf8(ctx):
    c, uri = lsp_ready(ctx)
    c.raw(b"Content-Length: 10\xff\r\n\r\n{\"a\":1}xyz")
    c.raw(c.hover_frame(1000, uri))
    if c.answered(1000):
        return held("the next request answered; server alive")
    time.sleep(1)
    return broken(f"next request unanswered; server {c.exit_status()}")


def probe_lsp_huge_header(ctx):
    c, uri = lsp_ready(ctx)
    since = time.monotonic()
    # A header line without ':' (the reader before issue 45 quoted such a
    # line whole in its error).
    c.raw(b"A" * (5 << 20) + b"\r\n\r\n")
    c.raw(c.hover_frame(1000, uri))
    ok = c.answered(1000, timeout=30)
    c.drain(1)
    replies = [size for t, size, _ in c.seen if t >= since]
    largest = max(replies + [0])
    rss = peak_rss_mib(c.p.pid)
    figure = (f"largest reply {largest / 1024:.1f} KiB" if replies else "no error reply") + (
        f", peak RSS {rss:.0f} MiB" if rss else "")
    if largest < 64 * 1024 and ok:
        return held(f"{figure}; next request answered")
    return broken(f"{figure}; next request {'answered' if ok else 'unanswered'}; server {c.exit_status()}")


def probe_lsp_huge_length(ctx):
    c, uri = lsp_ready(ctx)
    c.raw(b"Content-Length: 99999999999\r\n\r\n" + c.hover_frame(1000, uri))
    refused = c.wait(lambda m: m.get("id") is None and "error" in m, timeout=10)
    ok = c.answered(1000, timeout=10)
    if not ok:
        # Whatever follows an unread length: another request.
        c.raw(c.hover_frame(1001, uri))
        later = c.answered(1001, timeout=5)
        return broken(f"the next request swallowed (a later one {'answered' if later else 'unanswered too'}); "
                      f"{'refused' if refused else 'no refusal'}; server {c.exit_status()}")
    return held(f"{'refused' if refused else 'no refusal sent'}; the next request answered")


def five_after(c, uri, hostile, first_id):
    c.raw(hostile + b"".join(c.hover_frame(first_id + i, uri) for i in range(5)))
    got = sum(1 for i in range(5) if c.answered(first_id + i, timeout=8 if i == 0 else 3))
    if got == 5:
        return held("5 of 5 later requests answered with their ids")
    errors = sum(1 for _, _, m in c.seen if m.get("id") is None and "error" in m)
    return broken(f"{got} of 5 later requests answered ({errors} errors with id null)")


def probe_lsp_negative_length(ctx):
    c, uri = lsp_ready(ctx)
    # The frame's body follows its header, as a client sends it.
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover", "params": {}}).encode()
    return five_after(c, uri, b"Content-Length: -5\r\n\r\n" + body, 1000)


def probe_lsp_longer_body(ctx):
    c, uri = lsp_ready(ctx)
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover",
                       "params": {"pad": "p" * 80}}).encode()
    return five_after(c, uri, b"Content-Length: %d\r\n\r\n" % (len(body) - 40) + body, 1000)


def probe_lsp_reopen(ctx):
    dirty = "# Doc\n\n" + "".join(f"See [part](#missing-part-{i}).\n\n" for i in range(2500))
    clean = "# Doc\n\nText.\n"
    (ctx.work / "doc.md").write_text(clean)
    uri = f"file://{ctx.work / 'doc.md'}"
    c = Lsp(ctx)
    c.initialize()
    stale = []
    for _ in range(3):
        c.open(uri, dirty)
        c.close_doc(uri)
        c.open(uri, clean)
        reopened = time.monotonic()
        # Everything published for the document from then on, until a later
        # request is answered and a quiet second has passed.
        c.answered(c.ask("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": 0, "character": 0}}), timeout=30)
        c.drain(2)
        for t, _, m in c.seen:
            if (t >= reopened and m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"].get("uri") == uri and m["params"].get("diagnostics")):
                stale.append(len(m["params"]["diagnostics"]))
        c.seen.clear()
        c.close_doc(uri)
        c.drain(0.5)
        c.seen.clear()
    if not stale:
        return held("3 of 3 reopenings: no old diagnostic published on the clean text")
    return broken(f"{len(stale)} publications with old findings after a reopen (sizes {stale[:3]})")


def command(c, name, uri, timeout):
    arguments = [uri]
    if name == "koas.review":
        arguments.append({"noLlm": True})
    return c.request("workspace/executeCommand", {"command": name, "arguments": arguments}, timeout)


def said(answer):
    if answer is None:
        return "no answer"
    if "error" in answer:
        return "refused: " + excerpt(answer["error"].get("message", ""), 80)
    return "accepted: " + excerpt(json.dumps(answer.get("result")), 60)


def probe_lsp_fifo(ctx):
    c, uri = lsp_ready(ctx)
    fifo = ctx.work / "pipe.md"
    os.mkfifo(fifo)
    fifo_uri = f"file://{fifo}"
    c.open(fifo_uri, "# Doc\n\nText.\n")
    review = c.ask("workspace/executeCommand", {"command": "koas.review", "arguments": [fifo_uri, {"noLlm": True}]})
    hover = c.ask("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
    ok = c.answered(hover, timeout=STEP_TIMEOUT)
    answer = c.response(review, timeout=2)
    if ok:
        return held(f"the next request answered; koas.review {said(answer)}")
    return broken(f"no answer to the next request in {STEP_TIMEOUT:.0f} s (main loop blocked on the FIFO); "
                  f"server {c.exit_status()}")


def probe_lsp_dev_zero(ctx):
    c, uri = lsp_ready(ctx)
    c.open("file:///dev/zero", "# Doc\n\nText.\n")
    start = time.monotonic()
    answer = command(c, "koas.check", "file:///dev/zero", timeout=30)
    took = time.monotonic() - start
    rss = peak_rss_mib(c.p.pid)
    alive = c.alive() and c.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}, timeout=10) is not None
    figure = f"{took:.1f} s" + (f", peak RSS {rss:.0f} MiB" if rss else "")
    if answer and "error" in answer and alive:
        return held(f"{said(answer)} ({figure}); server alive")
    return broken(f"koas.check {said(answer)} ({figure}); server {c.exit_status()}"
                  f" under a {ADDRESS_SPACE >> 30} GiB address-space cap")


def probe_lsp_sparse(ctx):
    c, uri = lsp_ready(ctx)
    huge = ctx.work / "huge.md"
    with open(huge, "wb") as f:
        f.truncate(2 << 30)  # 2 GiB of nothing, no disk taken
    huge_uri = f"file://{huge}"
    c.open(huge_uri, "# Huge\n\nText.\n")
    start = time.monotonic()
    answer = command(c, "koas.review", huge_uri, timeout=30)
    took = time.monotonic() - start
    rss = peak_rss_mib(c.p.pid)
    figure = f"{took:.1f} s, peak RSS {rss:.0f} MiB" if rss is not None else f"{took:.1f} s, server {c.exit_status()}"
    if answer and "error" in answer and took < 3 and rss is not None and rss < 256:
        return held(f"{said(answer)} ({figure})")
    return broken(f"koas.review {said(answer)} ({figure})")


def slow_document():
    return "# Slow\n\n" + "".join(
        f"## Part {i} on retries\n\nSee [part](#part-{i}-on-retrys), Table {i} and Figure {i}: 12% of 40 units.\n\n"
        f"| a | b |\n|---|---|\n| {i} | x |\n\n" for i in range(40_000))


def probe_lsp_parallel(ctx):
    slow = slow_document()
    (ctx.work / "a-slow.md").write_text(slow)
    (ctx.work / "b-small.md").write_text("# Small\n\n##\n")
    slow_uri, small_uri = f"file://{ctx.work / 'a-slow.md'}", f"file://{ctx.work / 'b-small.md'}"
    c = Lsp(ctx)
    c.initialize()
    c.open(slow_uri, slow)
    c.open(small_uri, "# Small\n\n##\n")
    opened = time.monotonic()
    got = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                 and m["params"].get("uri") == small_uri, timeout=STEP_TIMEOUT)
    waited = time.monotonic() - opened
    slow_first = any(m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("uri") == slow_uri
                     for _, _, m in c.seen)
    if got is None:
        return broken(f"the small document's diagnostics not there after {STEP_TIMEOUT:.0f} s "
                      f"(behind the {len(slow) >> 20} MiB one)")
    if waited < 3 and not slow_first:
        return held(f"the small document's diagnostics after {waited:.1f} s, before the slow one's")
    return broken(f"the small document waited {waited:.1f} s"
                  f"{' (the slow one published first)' if slow_first else ''}")


# ---------------------------------------------------------------- folders


def folder_review(ctx, user=None, cwd=None):
    return ctx.run(["review", "docs", "--no-llm"], cwd=cwd, timeout=120, user=user)


def probe_folder_non_utf8(ctx):
    docs = ctx.work / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nText.\n")
    with open(os.path.join(os.fsencode(docs), b"b\xff.md"), "wb") as f:
        f.write(b"# B\n\nText.\n")
    ran = folder_review(ctx)
    text = ran.text
    named = any(s in text for s in ("\\xff", "\\xFF", "\ufffd", "UTF-8", "utf-8", "%FF"))
    if named:
        line = next((l for l in text.splitlines() if any(s in l for s in ("\\xff", "\\xFF", "\ufffd", "UTF-8"))), "")
        return held(f"reported: {excerpt(line, 100)}")
    return broken(f"the non-UTF-8 name is not mentioned ({ran.status()}; {len(text.splitlines())} lines)")


def probe_folder_loop(ctx, verb):
    docs = ctx.work / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nText.\n")
    (docs / "sub" / "b.md").write_text("# B\n\nText.\n")
    (docs / "sub" / "loop").symlink_to("..")
    if verb == "review":
        ran = folder_review(ctx)
    else:
        ran = ctx.run(["check", "docs", "--fail-on", "never"], timeout=120)
    lines = [l for l in ran.text.splitlines() if l.strip()]
    followed = [l for l in lines if "loop/" in l]
    files = re.search(r"in (\d+) files?", ran.text)
    figure = f"{len(lines)} lines, {len(followed)} through the loop"
    if files:
        figure += f", {files.group(1)} files checked"
    if not followed and len(lines) < 40 and (not files or int(files.group(1)) <= 2):
        return held(f"{figure} ({ran.status()})")
    return broken(f"{figure} ({ran.status()})")


def probe_folder_unreadable(ctx):
    nobody = 65534
    as_user = None
    if os.geteuid() == 0:
        # Root reads a mode-000 folder anyway: the probe runs koas as user
        # nobody when nobody can run it, else it cannot be run here.
        trial = ctx.run(["--version"], user=nobody, timeout=STEP_TIMEOUT)
        if trial.code != 0:
            return ("n/a", "runs as root, which reads mode-000 folders, and user nobody cannot run this koas")
        as_user = nobody
    docs = ctx.work / "docs"
    (docs / "b-locked").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nText.\n")
    (docs / "b-locked" / "c.md").write_text("# C\n\nText.\n")
    (docs / "z.md").write_text("# Z\n\nText.\n")
    if as_user is not None:
        for root, dirs, files in os.walk(ctx.dir):
            for name in dirs + files + ["."]:
                os.chown(os.path.join(root, name), nobody, nobody, follow_symlinks=False)
        os.chmod(ctx.dir, 0o755)
    os.chmod(docs / "b-locked", 0)
    ran = folder_review(ctx, user=as_user)
    text = ran.text
    who = " (run as user nobody)" if as_user is not None else ""
    lines = [l for l in text.splitlines() if "b-locked" in l]
    z = "z.md" in text or "z_" in text
    if lines and z:
        return held(f"the subfolder named: {excerpt(lines[0], 90)}; z.md reviewed{who}")
    return broken(f"subfolder {'named' if lines else 'not named'}, z.md {'reviewed' if z else 'not reviewed'}"
                  f" ({ran.status()}){who}")


# ---------------------------------------------------------------- koas run inputs

RUN_PIPELINE = """name = "probe"
kernels = ["md_inventory"]
workspace = "ws"

[inputs]
doc = "{doc}"
"""


def run_pipeline(ctx, doc):
    (ctx.work / "pipeline.toml").write_text(RUN_PIPELINE.format(doc=doc))


def probe_run_dev_zero(ctx):
    run_pipeline(ctx, "/dev/zero")
    ran = ctx.run(["run", "pipeline.toml"], limit_as=ADDRESS_SPACE, timeout=60)
    figure = f"{ran.status()}, peak RSS {ran.maxrss_kib / 1024:.0f} MiB"
    if ran.code not in (None, 0) and ran.seconds < 5 and ran.maxrss_kib < 512 * 1024:
        return held(f"refused: {refusal(ran)} ({figure})")
    return broken(f"{figure} under a {ADDRESS_SPACE >> 30} GiB cap: {refusal(ran)}")


def probe_run_fifo(ctx):
    os.mkfifo(ctx.work / "fifo.md")
    run_pipeline(ctx, "fifo.md")
    ran = ctx.run(["run", "pipeline.toml"], timeout=STEP_TIMEOUT)
    if ran.code not in (None, 0) and ran.seconds < 5:
        return held(f"refused: {refusal(ran)} ({ran.status()})")
    return broken(f"{ran.status()} (blocked on the FIFO)")


def sigterm_outcome(ctx, ran, sent, what, again_args):
    """The outcome of a run sent SIGTERM at sent[0] s: it must exit within
    seconds and leave the workspace free (again_args, a run of the same
    document, is not refused as locked)."""
    if not sent[0]:
        return held(f"ended before the signal ({ran.status()}: {refusal(ran)})")
    left = sorted(p for p in files_under(ctx.work / "ws") if p.endswith(".lock")) if (ctx.work / "ws").exists() else []
    again = ctx.run(again_args, timeout=STEP_TIMEOUT)
    free = again.code == 0
    lock = (f"workspace free (a new run: {again.status()})" if free
            else f"a new run: {again.status()}: {refusal(again)}; lock files left: {left}")
    if ran.timed_out:
        return broken(f"still running {ran.seconds - sent[0]:.0f} s after SIGTERM ({what}; killed); {lock}")
    after = ran.seconds - sent[0]
    if after < 12 and free:
        return held(f"exited {after:.1f} s after SIGTERM ({ran.status()}); {lock}")
    return broken(f"exited {after:.1f} s after SIGTERM ({ran.status()}); {lock}")


def sigterm_after(delay, sent, ready=None):
    def on_start(p):
        def later():
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and p.returncode is None:
                if ready and ready():
                    time.sleep(0.5)
                    break
                time.sleep(0.05)
            if p.returncode is None:
                try:
                    os.kill(p.pid, signal.SIGTERM)
                    sent[0] = time.monotonic() - started
                except ProcessLookupError:
                    pass

        started = time.monotonic()
        threading.Thread(target=later, daemon=True).start()

    return on_start


def probe_run_sigterm_fifo(ctx):
    os.mkfifo(ctx.work / "fifo.md")
    run_pipeline(ctx, "fifo.md")
    sent = [None]
    ran = ctx.run(["run", "pipeline.toml"], timeout=STEP_TIMEOUT + 15, on_start=sigterm_after(3, sent))
    # The same document, now a regular file: the workspace must take it.
    (ctx.work / "fifo.md").unlink()
    (ctx.work / "fifo.md").write_text("# OK\n\nText.\n")
    return sigterm_outcome(ctx, ran, sent, "blocked on the FIFO", ["run", "pipeline.toml"])


def probe_run_sigterm_model(ctx):
    server = ctx.server(lambda m, p, b: None if "chat" in p else
                        (200, json.dumps({"object": "list", "data": [{"id": "m"}]}).encode()))
    (ctx.work / "doc.md").write_text(review_document())
    (ctx.work / "pipeline.toml").write_text(PYRAMID_PIPELINE.format(url=server.url, doc="doc.md"))
    sent = [None]
    ran = ctx.run(["run", "pipeline.toml"], timeout=STEP_TIMEOUT + 15,
                  on_start=sigterm_after(STEP_TIMEOUT, sent,
                                         ready=lambda: any("chat" in p for _, p in server.calls)))
    if not any("chat" in p for _, p in server.calls):
        return ("error", f"the hung server was never asked ({ran.status()}: {refusal(ran)})")
    return sigterm_outcome(ctx, ran, sent, "waiting on a model that never answers",
                           ["run", "pipeline.toml", "--until", "md_chunk"])


# ---------------------------------------------------------------- edits

FENCES = ["```", "````", "~~~", "~~~~", "```rust", " ```", "  ```", "   ```",
          "~~~ python title=x", "~~~ `info`"]
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def open_fence_at(text, needle):
    """Whether the first line containing needle lies inside a fenced block."""
    fence = None
    for line in text.splitlines():
        if needle in line:
            return fence is not None
        m = FENCE_RE.match(line)
        if not m:
            continue
        marker, info = m.group(1), m.group(2)
        if fence is None:
            if marker[0] == "`" and "`" in info:
                continue  # not a fence (CommonMark: no backtick in a backtick fence's info)
            fence = marker
        elif marker[0] == fence[0] and len(marker) >= len(fence) and not info.strip():
            fence = None
    return False


def probe_fence(ctx, fence):
    text = review_document()
    last = len(text.splitlines())
    (ctx.work / "doc.md").write_text(text)
    ops = [{"action": "replace", "kind": "style", "target": {"line_start": last},
            "after_text": f"Last words.\n{fence}", "needs_attention": True, "rationale": "r"}]
    (ctx.work / "ops.json").write_text(json.dumps(ops))
    ran = ctx.run(["-q", "review", "doc.md", "--ops", "ops.json", "--json"], timeout=60)
    try:
        v = json.loads(ran.out)
    except ValueError:
        return ("error", f"no JSON ({ran.status()}: {refusal(ran)})")
    rejected = [r.get("reject") for r in v.get("apply_log", []) if r.get("reject")]
    changes = v.get("total_changes")
    reviewed = (workspace_of(ctx) / "stage3" / "doc.REVIEWED.md")
    inside = reviewed.exists() and open_fence_at(reviewed.read_text(), "REVIEWER: RVW-")
    note = "; its review note inside a code block" if inside else ""
    if rejected and not changes and not inside:
        return held(f"refused ({', '.join(rejected)})")
    return broken(f"applied ({changes} change{'s' if changes != 1 else ''}){note}")


# ---------------------------------------------------------------- mismatch


def probe_model_mismatch(ctx):
    a = ctx.server(models_handler("m"))
    b = ctx.server(models_handler("other"))
    doc = "# Handbook\n\n" + "".join(f"## Part {i}\n\nPart {i} explains how teh service works.\n\n" for i in range(30))
    (ctx.work / "doc.md").write_text(doc)
    (ctx.work / "koas.toml").write_text("[llm]\nbackoff_initial_ms = 10\nbackoff_max_ms = 20\n")
    ran = ctx.run(["review", "doc.md", "--llm-backend", "openai", "--llm-endpoint", a.url,
                   "--llm-endpoint", b.url, "--llm-model", "m", "--llm-max-in-flight", "6"], timeout=90)
    err = ran.err.decode("utf-8", "replace")
    mismatch = sum(1 for l in err.splitlines() if "MODEL_MISMATCH" in l)
    aborted = sum(1 for l in err.splitlines() if "aborted earlier" in l)
    back = "server is back" in err
    figure = (f"{mismatch} MODEL_MISMATCH lines, {aborted} 'aborted earlier', "
              f"'once the server is back' {'present' if back else 'absent'} ({ran.status()})")
    if mismatch <= 2 and aborted == 0 and not back and ran.code not in (None, 0):
        return held(figure)
    return broken(figure)


# ---------------------------------------------------------------- linear


def linear_document(n=6344):
    """The issue's shape: about 512 KiB, n headings and n broken links,
    each one letter away from its heading's anchor ("did you mean")."""
    text = "# Anchors\n\n" + "".join(
        f"## Section {i} on retries\n\nSee [the part](#section-{i}-on-retrys), then more.\n\n" for i in range(n))
    return text, n


def timed_check(ctx, n, timeout):
    text, _ = linear_document(n)
    (ctx.work / f"doc{n}.md").write_text(text)
    ran = ctx.run(["check", f"doc{n}.md", "--fail-on", "never", "--format", "json"], timeout=timeout,
                  limit_as=ADDRESS_SPACE)
    return ran, len(text)


def probe_linear(ctx):
    # Growth, not speed: the check of n and of n/4 sections, whose ratio is
    # 4 for a linear check, about 5 for n log n and 16 for a quadratic one.
    n = 6344
    small, small_size = timed_check(ctx, n // 4, LINEAR_TIMEOUT)
    if small.timed_out:
        return broken(f"{small_size >> 10} KiB, {n // 4} headings and as many broken links: "
                      f"over {small.seconds:.0f} s (killed); the {n} sections not tried")
    if small.code is None:
        return ("error", f"koas check: {small.status()}")
    big, size = timed_check(ctx, n, LINEAR_TIMEOUT)
    shape = f"{size >> 10} KiB, {n} headings and {n} broken links"
    if big.code is None and not big.timed_out:
        return ("error", f"koas check: {big.status()}")
    if small.timed_out or big.timed_out:
        return broken(f"{shape}: over {big.seconds:.0f} s (killed); {n // 4} sections: "
                      f"{'over ' if small.timed_out else ''}{small.seconds:.1f} s")
    ratio = big.seconds / max(small.seconds, 0.01)
    figure = f"{shape}: {big.seconds:.1f} s; {n // 4} sections: {small.seconds:.1f} s; ratio {ratio:.1f}"
    return held(figure) if ratio < 8 else broken(figure)


# ---------------------------------------------------------------- the list

PROBES = [
    ("links", "ledger.jsonl -> outside file (review --ops)", probe_ledger_link),
    ("links", "review/patches -> outside folder (review --ops)", probe_patches_link),
    ("links", ".review -> outside folder (review --ops)", probe_review_dir_link_cli),
    ("links", ".review -> outside folder (lsp koas.review)", probe_review_dir_link_lsp),
    ("escapes", "HTTP 500 body with escapes (koas review)", probe_escape_review),
    ("escapes", "HTTP 500 body with escapes (koas run, [llm])", probe_escape_run),
    ("escapes", "escapes in a heading and a link (koas check)", lambda ctx: probe_escape_check(ctx, "human")),
    ("escapes", "escapes in a file name (koas check FOLDER)", lambda ctx: probe_escape_check_name(ctx, "human")),
    ("escapes", "escapes in a file name (check --format github)", lambda ctx: probe_escape_check_name(ctx, "github")),
    ("lsp", "non-UTF-8 header byte", probe_lsp_non_utf8),
    ("lsp", "5 MiB header line", probe_lsp_huge_header),
    ("lsp", "Content-Length: 99999999999", probe_lsp_huge_length),
    ("lsp", "Content-Length: -5, then 5 requests", probe_lsp_negative_length),
    ("lsp", "body 40 bytes longer, then 5 requests", probe_lsp_longer_body),
    ("lsp", "close 2,500 findings, reopen clean at version 1", probe_lsp_reopen),
    ("lsp", "executeCommand koas.review on a FIFO", probe_lsp_fifo),
    ("lsp", "executeCommand koas.check on /dev/zero", probe_lsp_dev_zero),
    ("lsp", "executeCommand koas.review on a 2 GiB sparse file", probe_lsp_sparse),
    ("lsp", "small document behind a slow one", probe_lsp_parallel),
    ("folders", "file name not UTF-8", probe_folder_non_utf8),
    ("folders", "sub/loop -> .. (koas review FOLDER)", lambda ctx: probe_folder_loop(ctx, "review")),
    ("folders", "sub/loop -> .. (koas check FOLDER)", lambda ctx: probe_folder_loop(ctx, "check")),
    ("folders", "unreadable subfolder (mode 000)", probe_folder_unreadable),
    ("run", "doc = /dev/zero", probe_run_dev_zero),
    ("run", "doc = a FIFO", probe_run_fifo),
    ("run", "SIGTERM while blocked on a FIFO", probe_run_sigterm_fifo),
    ("run", "SIGTERM while waiting on a hung model", probe_run_sigterm_model),
] + [
    ("edits", f"op opening a fence on the last line: {f!r}", (lambda f: lambda ctx: probe_fence(ctx, f))(f))
    for f in FENCES
] + [
    ("mismatch", "two endpoints serving different models, 30 sections", probe_model_mismatch),
    ("linear", "koas check: 6,344 headings + broken links, n vs n/4", probe_linear),
]


class GuardExpired(Exception):
    pass


def on_alarm(signum, frame):
    raise GuardExpired()


def run_probe(koas, fn):
    ctx = Context(koas)
    start = time.monotonic()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(PROBE_GUARD)
    try:
        outcome, why = fn(ctx)
    except Outcome as o:
        outcome, why = o.outcome, o.why
    except GuardExpired:
        outcome, why = "broken", f"the probe did not end within {PROBE_GUARD} s"
    except Exception as e:  # a probe's own failure is reported, not hidden
        outcome, why = "error", f"probe failed: {type(e).__name__}: {excerpt(str(e), 120)}"
    finally:
        signal.alarm(0)
        ctx.close()
    return outcome, why, time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--koas", required=True, help="the koas binary (its kernels next to it)")
    parser.add_argument("--only", choices=CATEGORIES, action="append", help="run only this category (repeatable)")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of the table")
    args = parser.parse_args()
    koas = Path(args.koas).resolve()
    if not os.access(koas, os.X_OK):
        sys.exit(f"probe-hostile: {koas} is not an executable")
    version = subprocess.run([str(koas), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    rows = []
    for category, name, fn in PROBES:
        if args.only and category not in args.only:
            continue
        outcome, why, seconds = run_probe(koas, fn)
        rows.append({"category": category, "probe": name, "outcome": outcome, "why": why,
                     "seconds": round(seconds, 1)})
        if not args.json:
            print(f"{category:<9} {name:<60} {outcome:<7} {why}", flush=True)
    counts = {}
    for r in rows:
        c = counts.setdefault(r["category"], {"held": 0, "of": 0, "broken": 0, "n/a": 0, "error": 0})
        c[r["outcome"]] += 1
        if r["outcome"] != "n/a":
            c["of"] += 1
    total_held = sum(c["held"] for c in counts.values())
    total_of = sum(c["of"] for c in counts.values())
    if args.json:
        print(json.dumps({"koas": str(koas), "version": version,
                          "profile": next((p for p in ("debug", "release") if f"/{p}/" in str(koas)), "unknown"), "date": time.strftime("%Y-%m-%d"),
                          "rows": rows, "counts": counts, "held": total_held, "of": total_of}, indent=1))
        return
    print()
    profile = next((p for p in ("debug", "release") if f"/{p}/" in str(koas)), "unknown")
    print(f"koas: {koas} ({version}, {profile} build), {time.strftime('%Y-%m-%d %H:%M %Z')}")
    for category, c in counts.items():
        extra = "".join(f", {c[k]} {k}" for k in ("n/a", "error") if c[k])
        print(f"{category:<9} held {c['held']} of {c['of']}{extra}")
    print(f"{'all':<9} held {total_held} of {total_of}")


if __name__ == "__main__":
    main()
