//! Issue 46: language_check.
