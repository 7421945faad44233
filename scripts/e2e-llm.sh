#!/usr/bin/env bash
# End-to-end check of the LLM host service against a real local
# OpenAI-compatible server (llama.cpp / llama-cpp-python, vLLM, LM Studio,
# Ollama's /v1). See docs/llm.md for how to start one.
#
#   scripts/e2e-llm.sh [ENDPOINT] [MODEL]
#   ENDPOINT defaults to $KOAS_LLM_ENDPOINT or http://127.0.0.1:8081
#   MODEL    defaults to $KOAS_LLM_MODEL    or smollm2-135m
#
# Runs ping → calibrate → one request per paragraph of the fixture
# document, each answer read as one JSON object → an unchanged re-run (must make
# zero LLM calls) → replay from the exchange log with no network (must
# match). Exits 0 on PASS, 1 on FAIL, 2 when the server is not reachable.
# Only loopback endpoints are accepted (strict sovereignty).
set -euo pipefail

ENDPOINT="${1:-${KOAS_LLM_ENDPOINT:-http://127.0.0.1:8081}}"
MODEL="${2:-${KOAS_LLM_MODEL:-smollm2-135m}}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORKSPACE="${KOAS_E2E_WORKSPACE:-$(mktemp -d -t koas-e2e-llm.XXXXXX)}"

if ! curl -fsS --max-time 5 "${ENDPOINT%/}/v1/models" >/dev/null 2>&1; then
    echo "e2e-llm: no OpenAI-compatible server answers at ${ENDPOINT} (see docs/llm.md)" >&2
    exit 2
fi

cd "$ROOT"
status=0
cargo run --quiet -p koas-llm --example e2e -- \
    --endpoint "$ENDPOINT" --model "$MODEL" --workspace "$WORKSPACE" \
    ${KOAS_E2E_REQUIRE_CALIBRATION:+--require-calibration} || status=$?
echo "e2e-llm: exchange log at ${WORKSPACE}/llm/exchanges.jsonl"
[ "$status" -eq 0 ] || exit $status

# The runtime end to end: a pipeline whose kernel asks the model through the
# host (the test kernel `asks_llm`), a cached re-run, replay without network,
# and `koas llm ping` / `koas llm calibrate` on the same [llm] table.
cargo build --quiet -p koas
cargo build --quiet --manifest-path orchestrator/tests/plugins/Cargo.toml --target-dir target/test-plugins
KOAS="$ROOT/target/debug/koas"
TESTKIT="$ROOT/target/test-plugins/debug/libkoas_kernel_test_testkit.so"
PIPE="$WORKSPACE/pipeline"
mkdir -p "$PIPE"
printf '# A short note\n\nThe teh quick brown fox.\n' > "$PIPE/doc.md"
cat > "$PIPE/e2e.toml" <<TOML
name = "e2e-llm"
kernels = ["source_len", "asks_llm"]
workspace = "ws"
[inputs]
doc = "doc.md"
[llm]
backend = "openai"
endpoint = "$ENDPOINT"
model = "$MODEL"
TOML
"$KOAS" run "$PIPE/e2e.toml" --kernel-path "$TESTKIT" || status=$?
"$KOAS" run "$PIPE/e2e.toml" --kernel-path "$TESTKIT" --kernel asks_llm || status=$?
"$KOAS" replay "$PIPE/ws" --kernel-path "$TESTKIT" || status=$?
"$KOAS" llm ping "$PIPE/e2e.toml" || status=$?
"$KOAS" llm calibrate "$PIPE/e2e.toml" || echo "e2e-llm: calibration did not pass (a tiny model may drift)" >&2
echo "e2e-llm: pipeline workspace at $PIPE/ws (run.json, llm/exchanges.jsonl)"
exit $status
