//! Issue 46: language_review.
