#!/usr/bin/env python3
"""A second client for `koas mcp`: the official Python MCP SDK (`mcp` on PyPI).

Starts `koas mcp --root <scratch folder>` on stdio, lists the tools, and runs
every tool on a copy of a review fixture: check, review with inline ops (with
progress), status, show with patch, grep, revert, report, then a path escape
and a malformed argument (both must come back as results with isError).
Prints one line per step and exits non-zero on the first surprise.

Not run by CI (it needs `pip install mcp`):

    python3 -m venv /tmp/mcp-venv && /tmp/mcp-venv/bin/pip install mcp
    cargo build --workspace
    /tmp/mcp-venv/bin/python scripts/mcp_check.py [--koas target/debug/koas]
"""

import argparse
import asyncio
import json
import pathlib
import shutil
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = pathlib.Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "review" / "retention_policy.md"
OPS = REPO / "tests" / "fixtures" / "review" / "retention_policy.ops.json"


def check(condition, what):
    if not condition:
        print(f"FAIL: {what}")
        sys.exit(1)


def answer(result):
    """The tool's JSON object (structured content, else the text content)."""
    value = result.structured_content
    if value is None:
        value = json.loads(result.content[0].text)
    return value, bool(result.is_error)


async def main(koas):
    root = pathlib.Path(tempfile.mkdtemp(prefix="koas-mcp-check-"))
    try:
        shutil.copy(FIXTURE, root / "spec.md")
        ops = json.loads(OPS.read_text())
        params = StdioServerParameters(command=koas, args=["mcp", "--root", str(root)])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                print(f"initialize: server {init.server_info.name} {init.server_info.version}, "
                      f"protocol {init.protocol_version}")

                tools = (await session.list_tools()).tools
                print(f"tools/list: {len(tools)} tools: {', '.join(t.name for t in tools)}")
                for t in tools:
                    props = t.input_schema.get("properties", {})
                    check("doc_path" in props and all("description" in p for p in props.values()),
                          f"{t.name}: schema with described properties")

                async def call(name, args, progress=None):
                    result = await session.call_tool(name, args, progress_callback=progress)
                    value, is_error = answer(result)
                    check(value.get("status") in ("completed", "error", "not_found", "partial"),
                          f"{name}: status in the convention: {value}")
                    check(len(value.get("summary", "")) < 300, f"{name}: short summary")
                    return value, is_error

                v, err = await call("check_md", {"doc_path": "spec.md"})
                check(not err, f"check_md: {v}")
                print(f"check_md: {v['summary']} (counts {v['counts']})")

                steps = []

                async def on_progress(progress, total, message):
                    steps.append(message)

                v, err = await call("review_md_run",
                                    {"doc_path": "spec.md", "ops": ops, "no_llm": True},
                                    on_progress)
                check(not err and v["total_changes"] > 0, f"review_md_run: {v}")
                print(f"review_md_run: {v['summary']}; counts {v['counts']}; "
                      f"{len(steps)} progress notifications (first: {steps[0] if steps else None})")
                ids = v["applied_ids"]

                v, err = await call("review_md_status", {"doc_path": "spec.md"})
                check(not err and v["lock_holder"] is None, f"review_md_status: {v}")
                print(f"review_md_status: {v['summary']}; stages {v['stages_completed']}")

                v, err = await call("review_md_show_change",
                                    {"doc_path": "spec.md", "change_id": ids[0], "include_patch": True})
                check(not err and "@@" in (v.get("patch") or ""), f"review_md_show_change: {v}")
                print(f"review_md_show_change {ids[0]}: {v['summary']!r}, patch of "
                      f"{len(v['patch'].splitlines())} lines")

                v, err = await call("review_md_grep", {"doc_path": "spec.md", "kind": "typo"})
                check(not err, f"review_md_grep: {v}")
                print(f"review_md_grep kind=typo: {v['summary']}")

                v, err = await call("review_md_revert", {"doc_path": "spec.md", "change_ids": ids[-1]})
                check(not err and v["total_reverted"] == 1, f"review_md_revert: {v}")
                print(f"review_md_revert {ids[-1]}: {v['summary']}")
                v, err = await call("review_md_revert", {"doc_path": "spec.md", "change_ids": [ids[-1]]})
                check(err and v["refused"], f"second revert refused: {v}")
                print(f"review_md_revert {ids[-1]} again: isError, refused: {v['refused'][0]['reason']}")

                v, err = await call("review_md_report", {"doc_path": "spec.md"})
                check(not err and v["text"].startswith("#"), f"review_md_report: {v}")
                print(f"review_md_report: {v['summary']}; {len(v['text'].splitlines())} lines of Markdown")

                v, err = await call("check_md", {"doc_path": "../etc/passwd"})
                check(err and "outside the server's root" in v["error"], f"escape: {v}")
                print(f"path escape: isError: {v['error']}")

                v, err = await call("review_md_show_change", {"doc_path": "spec.md", "change_id": 34})
                check(err, f"malformed: {v}")
                print(f"malformed argument: isError: {v['error']}")
        print("OK: every check passed")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--koas", default=str(REPO / "target" / "debug" / "koas"),
                        help="the koas executable (default: target/debug/koas)")
    asyncio.run(main(parser.parse_args().koas))
