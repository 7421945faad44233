//! `md_inventory`: checks that the input is a text document and describes
//! it (`file_stats`).

use crate::error::MdError;

use crate::line_index::LineIndex;
use crate::scan::Scan;
use koas_review_schema::stage1::{FileStats, FrontMatter, LineEndingStyle, LineEndings};

/// Decodes file bytes: UTF-8 (with or without BOM) and free of NUL bytes.
/// The error names `path` and the offset of the first bad byte.
pub fn decode<'a>(path: &str, bytes: &'a [u8]) -> Result<&'a str, MdError> {
    let text = std::str::from_utf8(bytes).map_err(|e| MdError::NotUtf8 {
        path: path.to_string(),
        offset: e.valid_up_to() as u64,
    })?;
    check_text(path, text)?;
    Ok(text)
}

/// Refuses text that holds a NUL byte (binary content); the error names
/// `path` and the offset of the first NUL.
pub fn check_text(path: &str, text: &str) -> Result<(), MdError> {
    match text.bytes().position(|b| b == 0) {
        Some(offset) => Err(MdError::Binary {
            path: path.to_string(),
            offset: offset as u64,
        }),
        None => Ok(()),
    }
}

/// Describes an indexed, scanned document. `sha256` is the hash of the
/// exact bytes when the caller already has it (computed otherwise).
pub fn file_stats(
    path: &str,
    index: &LineIndex<'_>,
    scan: &Scan,
    sha256: Option<&str>,
) -> FileStats {
    let text = index.text();
    let bytes = text.as_bytes();
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    let crlf = bytes.windows(2).filter(|w| w == b"\r\n").count() as u64;
    let lf = newlines - crlf;
    let style = match (lf, crlf) {
        (0, 0) => LineEndingStyle::None,
        (_, 0) => LineEndingStyle::Lf,
        (0, _) => LineEndingStyle::Crlf,
        _ => LineEndingStyle::Mixed,
    };
    let lines = index.line_count();
    let max_line_bytes = (1..=lines)
        .map(|l| index.line_content_end(l) - index.line_start(l))
        .max()
        .unwrap_or(0) as u64;
    let body = &bytes[index.bom_len()..];
    let chars = body.iter().filter(|&&b| (b & 0xC0) != 0x80).count() as u64;
    let front_matter = scan.front_matter.map(|f| FrontMatter {
        format: f.format,
        line_start: 1,
        line_end: f.line_end,
        content_hash: index.line_hash(1, f.line_end),
    });
    FileStats {
        path: path.to_string(),
        sha256: sha256.map_or_else(|| koas_kernel_api::hash::sha256(bytes), str::to_string),
        bytes: bytes.len() as u64,
        chars,
        lines,
        has_bom: index.bom_len() > 0,
        line_endings: LineEndings { lf, crlf, style },
        final_newline: bytes.last() == Some(&b'\n'),
        max_line_bytes,
        front_matter,
        code_fences: count(scan.fenced_code_count()),
        indented_code_blocks: count(scan.indented_code_count()),
        tables: count(scan.table_count()),
        headings: count(scan.structural_headings().count()),
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{scan, ScanOptions};
    use koas_kernel_api::hash::sha256;
    use koas_review_schema::stage1::FrontMatterFormat;

    fn stats(text: &str) -> FileStats {
        let idx = LineIndex::new(text);
        let s = scan(&idx, ScanOptions::default());
        file_stats("doc.md", &idx, &s, None)
    }

    #[test]
    fn counts_everything() {
        let text = "---\ntitle: t\n---\n# H\n\n```rust\nx\n```\n\n    indented\n\n| a |\n|---|\n| 1 |\n\n~~~\ny\n~~~\n";
        let st = stats(text);
        assert_eq!(st.lines, 18);
        assert_eq!(st.bytes, text.len() as u64);
        assert_eq!(st.code_fences, 2);
        assert_eq!(st.indented_code_blocks, 1);
        assert_eq!(st.tables, 1);
        assert_eq!(st.headings, 1);
        let fm = st.front_matter.expect("front matter");
        assert_eq!(
            (fm.format, fm.line_start, fm.line_end),
            (FrontMatterFormat::Yaml, 1, 3)
        );
        assert_eq!(st.line_endings.style, LineEndingStyle::Lf);
        assert!(st.final_newline);
        assert_eq!(st.sha256, sha256(text.as_bytes()));
    }

    #[test]
    fn bom_and_crlf() {
        let text = "\u{feff}# Été\r\nligne\r\nfin";
        let st = stats(text);
        assert!(st.has_bom);
        assert_eq!(st.lines, 3);
        assert_eq!(st.chars, "# Été\r\nligne\r\nfin".chars().count() as u64);
        assert_eq!((st.line_endings.lf, st.line_endings.crlf), (0, 2));
        assert_eq!(st.line_endings.style, LineEndingStyle::Crlf);
        assert!(!st.final_newline);
        assert_eq!(st.max_line_bytes, 7); // "# Été": É and é take 2 bytes each
        assert_eq!(stats("a\nb\r\n").line_endings.style, LineEndingStyle::Mixed);
        assert_eq!(stats("").line_endings.style, LineEndingStyle::None);
    }

    #[test]
    fn refuses_binary_and_non_utf8_with_offsets() {
        assert_eq!(
            decode("x.md", b"ok\xff\xfe"),
            Err(MdError::NotUtf8 {
                path: "x.md".into(),
                offset: 2
            })
        );
        let err = decode("y.bin", b"abc\0def").expect_err("binary");
        assert_eq!(
            err,
            MdError::Binary {
                path: "y.bin".into(),
                offset: 3
            }
        );
        assert!(err.to_string().contains("y.bin") && err.to_string().contains("offset 3"));
        assert_eq!(decode("z.md", "\u{feff}é".as_bytes()), Ok("\u{feff}é"));
    }
}
