//! Issue 46: language_lsp.
