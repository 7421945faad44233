#!/bin/sh
# Attaches `koas lsp` to a Markdown buffer in a real Neovim (headless, the
# built-in LSP client of Neovim 0.7 or later), prints the diagnostics it
# publishes, asks for the code actions of the first fixable one, applies
# the certain fix and prints the diagnostics after it.
#
# usage: scripts/nvim-lsp-check.sh [KOAS] [DOC]
# By hand, not in CI: it needs Neovim (Debian: apt install neovim).
set -eu
koas=${1:-koas}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
doc=${2:-}
if [ -z "$doc" ]; then
    doc="$work/guide.md"
    printf '%s\n' '# Guide' '' 'See [the setup](#setupp) first.' '' '##' '' '## Setup' '' \
        'As an AI language model, I wrote this section.' > "$doc"
fi
cat > "$work/koas.lua" <<LUA
local out = io.stdout
local function show(title)
  out:write(title .. "\n")
  local diags = vim.diagnostic.get(0)
  table.sort(diags, function(a, b) return a.lnum < b.lnum end)
  for _, d in ipairs(diags) do
    out:write(string.format("  %d:%d %s %s: %s\n", d.lnum + 1, d.col + 1,
      vim.diagnostic.severity[d.severity], d.code or "?", d.message))
  end
end
local id = vim.lsp.start_client({ name = "koas", cmd = { "$koas", "lsp" }, root_dir = "$work" })
vim.lsp.buf_attach_client(0, id)
local got = vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 50)
if not got then out:write("no diagnostics in 20 s\n"); vim.cmd("cquit 1") end
show("diagnostics on open:")
local target
for _, d in ipairs(vim.diagnostic.get(0)) do
  if d.code == "empty_heading" then target = d end
end
local params = {
  textDocument = vim.lsp.util.make_text_document_params(),
  range = { start = { line = target.lnum, character = 0 }, ["end"] = { line = target.lnum, character = 0 } },
  context = { diagnostics = { target.user_data.lsp } },
}
local answers, request_err = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 10000)
if request_err then out:write("request error: " .. tostring(request_err) .. "\n") end
if os.getenv("KOAS_NVIM_DEBUG") then out:write(vim.inspect(answers) .. "\n") end
local chosen
out:write("code actions on line " .. (target.lnum + 1) .. ":\n")
for _, answer in pairs(answers or {}) do
  local failed = answer.error or answer.err
  if failed then out:write("  error: " .. vim.inspect(failed) .. "\n") end
  for _, action in ipairs(answer.result or {}) do
    out:write("  " .. action.title .. (action.isPreferred and " (preferred)" or "") .. "\n")
    if action.isPreferred then chosen = action end
  end
end
vim.lsp.util.apply_workspace_edit(chosen.edit, "utf-16")
out:write("applied: " .. chosen.title .. "\n")
local before = #vim.diagnostic.get(0)
vim.wait(20000, function() return #vim.diagnostic.get(0) ~= before end, 50)
show("diagnostics after the fix (buffer not saved):")
out:write("buffer:\n")
for _, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do out:write("  | " .. line .. "\n") end
vim.lsp.stop_client(id)
vim.wait(5000, function() return vim.lsp.get_client_by_id(id) == nil end, 50)
vim.cmd("qa!")
LUA
nvim --headless -u NONE -i NONE -n -c "set ft=markdown" -c "luafile $work/koas.lua" "$doc"
