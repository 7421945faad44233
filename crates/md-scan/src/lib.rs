//! # koas-md-scan — Stage 2 deterministic checks
//!
//! The logic of three reviewer kernels and of `koas check`:
//!
//! * **`md_consistency_scan`** ([`consistency_scan`]): AI leftovers,
//!   duplicated paragraphs, broken section references (English and
//!   French), numbers the next table contradicts, table structure,
//!   percentage columns, terminology drift and broken link fragments.
//! * **`md_numbering_control`** ([`numbering_control`]): heading level
//!   skips, figure/table/equation numbering gaps and duplicates, references
//!   to missing figures/tables/equations, renumbering proposals.
//! * **`md_language_check`** ([`language_check`]): misspellings with
//!   ranked suggestions, doubled words, articles, French elision and
//!   typography, through `koas-lang` (English and French, per paragraph).
//! * **`md_fingerprint_chunk`** ([`chunk_fingerprints`]): the structural
//!   features of each chunk and whether it `triggers_recipe`.
//! * **`koas check`** ([`check_document`] and [`format`](mod@format)): Stage 1 and
//!   Stage 2 in-process, with output as text, JSON, SARIF 2.1.0 or GitHub
//!   workflow annotations.
//!
//! The settings of each check and the project file `koas.toml` are
//! `koas-project`'s, re-exported as [`config`] and [`kinds`].
//!
//! Every check reads the document text and the Stage 1 artifacts of
//! `koas-md` ([`Stage1View`]); nothing inside a protected region is
//! reported. Findings share one type,
//! [`Finding`](koas_review_schema::findings::Finding). Suppression comments
//! (`<!-- koas-disable-next-line KIND -->`, `<!-- koas-disable KIND -->` …
//! `<!-- koas-enable -->`) are honoured by every entry point.

#![deny(missing_docs)]

mod analysis;
mod budget;
mod consistency;
mod document;
mod error;
mod evidence;
pub mod fingerprint;
pub mod fix;
pub mod format;
mod gate;
mod language;
pub mod markdown;
mod numbering;
pub mod numbers;
pub mod planted;
pub mod plugin;
pub mod quotes;
pub mod stage1;
mod style;
pub mod suppress;
pub mod tables;
mod words;

pub use analysis::{
    check_document, chunk_fingerprints, consistency_scan, language_check, numbering_control,
    Checker, LanguageOutput, NumberingOutput, ScanOutput,
};
pub use budget::{Budget, CheckError, Interrupt};
pub use consistency::links;
pub use consistency::KERNEL as CONSISTENCY_KERNEL;
pub use document::{Document, Stage1View};
pub use error::ScanError;
pub use fingerprint::KERNEL as FINGERPRINT_KERNEL;
/// The project file and the checks' settings (`koas-project`).
pub use koas_project as config;
/// The finding kinds a project file or a comment may name (`koas-project`).
pub use koas_project::kinds;
pub use language::KERNEL as LANGUAGE_KERNEL;
pub use numbering::KERNEL as NUMBERING_KERNEL;
