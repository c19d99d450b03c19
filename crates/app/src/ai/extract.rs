//! Text out of an AI attachment: csv and txt as written, xlsx cell by cell (calamine), pdf page
//! by page (lopdf). Runs on the blocking pool (see [`super::attachments`]), so everything here is
//! synchronous and bounded by what it reads:
//! - xlsx: the archive's entries, declared sizes and compression ratios are checked before
//!   calamine opens it, and every entry is inflated once through a size cap, so a zip bomb is
//!   refused after at most [`MAX_XLSX_INFLATED`] bytes of work; cells are streamed, never
//!   gathered into a range (a sheet with cells at A1 and XFD1048576 would allocate billions);
//! - pdf: every Flate stream is inflated once through a shared cap before lopdf sees the file,
//!   and lopdf's own per-stream limit and nesting limit stand behind that;
//! - every kind stops at [`MAX_TEXT_CHARS`] characters of text.

use std::io::{Cursor, Read};

use calamine::{DataType as _, Reader as _, Xlsx};

/// The kinds of file an attachment may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Csv,
    Txt,
    Xlsx,
    Pdf,
}

impl Kind {
    /// The kind named by a file name's extension (case-insensitive).
    #[must_use]
    pub fn of(name: &str) -> Option<Self> {
        let (_, extension) = name.rsplit_once('.')?;
        match extension.to_ascii_lowercase().as_str() {
            "csv" => Some(Self::Csv),
            "txt" => Some(Self::Txt),
            "xlsx" => Some(Self::Xlsx),
            "pdf" => Some(Self::Pdf),
            _ => None,
        }
    }

    #[must_use]
    pub fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Txt => "txt",
            Self::Xlsx => "xlsx",
            Self::Pdf => "pdf",
        }
    }
}

/// Why no text came out; the display text is shown to the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("The file is not valid UTF-8 text.")]
    NotText,
    #[error("The spreadsheet could not be read.")]
    BadSpreadsheet,
    #[error("The spreadsheet expands to more data than allowed.")]
    SpreadsheetTooLarge,
    #[error("The PDF could not be read.")]
    BadPdf,
    #[error("The PDF expands to more data than allowed.")]
    PdfTooLarge,
    #[error("The file holds no text.")]
    Empty,
}

/// The most text one attachment gives the model, in characters.
pub const MAX_TEXT_CHARS: usize = 100_000;
/// Entries an xlsx archive may have.
const MAX_XLSX_ENTRIES: usize = 1_000;
/// Bytes all of an xlsx archive's entries may inflate to together.
pub const MAX_XLSX_INFLATED: u64 = 32 * 1024 * 1024;
/// The highest compression ratio an xlsx entry may declare (real sheets compress 5 to 20 times).
const MAX_XLSX_RATIO: u64 = 200;
/// Bytes all of a PDF's Flate streams may inflate to together.
pub const MAX_PDF_INFLATED: u64 = 64 * 1024 * 1024;
/// Bytes one PDF stream may inflate to inside lopdf.
const MAX_PDF_STREAM: usize = 16 * 1024 * 1024;
/// Pages of a PDF read at most.
const MAX_PDF_PAGES: usize = 500;

/// The text of `bytes`, a file of `kind`.
///
/// # Errors
/// [`ExtractError`] saying why the file gives no text.
pub fn extract(kind: Kind, bytes: &[u8]) -> Result<String, ExtractError> {
    let text = match kind {
        Kind::Csv | Kind::Txt => plain(bytes)?,
        Kind::Xlsx => xlsx(bytes)?,
        Kind::Pdf => pdf(bytes)?,
    };
    if text.trim().is_empty() {
        return Err(ExtractError::Empty);
    }
    Ok(text)
}

/// Appends `piece` to `text` up to the cap; answers whether there is room for more.
fn append(text: &mut String, chars: &mut usize, piece: &str) -> bool {
    for c in piece.chars() {
        if *chars >= MAX_TEXT_CHARS {
            return false;
        }
        text.push(c);
        *chars += 1;
    }
    *chars < MAX_TEXT_CHARS
}

fn plain(bytes: &[u8]) -> Result<String, ExtractError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|_| ExtractError::NotText)?;
    if text.contains('\0') {
        return Err(ExtractError::NotText);
    }
    Ok(text.chars().take(MAX_TEXT_CHARS).collect())
}

/// Checks the archive's declared and actual sizes before calamine reads it.
fn check_archive(bytes: &[u8]) -> Result<(), ExtractError> {
    let mut archive =
        zip::ZipArchive::new(Cursor::new(bytes)).map_err(|_| ExtractError::BadSpreadsheet)?;
    if archive.len() > MAX_XLSX_ENTRIES {
        return Err(ExtractError::SpreadsheetTooLarge);
    }
    let mut declared = 0_u64;
    for index in 0..archive.len() {
        let entry = archive
            .by_index_raw(index)
            .map_err(|_| ExtractError::BadSpreadsheet)?;
        let size = entry.size();
        declared = declared.saturating_add(size);
        if declared > MAX_XLSX_INFLATED
            || size
                > entry
                    .compressed_size()
                    .max(1)
                    .saturating_mul(MAX_XLSX_RATIO)
        {
            return Err(ExtractError::SpreadsheetTooLarge);
        }
    }
    // Declared sizes can lie: inflate every entry once through the cap.
    let mut inflated = 0_u64;
    let mut sink = [0_u8; 16 * 1024];
    for index in 0..archive.len() {
        let entry = archive
            .by_index(index)
            .map_err(|_| ExtractError::BadSpreadsheet)?;
        let mut limited = entry.take(MAX_XLSX_INFLATED - inflated + 1);
        loop {
            let n = limited
                .read(&mut sink)
                .map_err(|_| ExtractError::BadSpreadsheet)?;
            if n == 0 {
                break;
            }
            inflated += n as u64;
            if inflated > MAX_XLSX_INFLATED {
                return Err(ExtractError::SpreadsheetTooLarge);
            }
        }
    }
    Ok(())
}

fn xlsx(bytes: &[u8]) -> Result<String, ExtractError> {
    check_archive(bytes)?;
    let mut workbook: Xlsx<_> =
        Xlsx::new(Cursor::new(bytes)).map_err(|_| ExtractError::BadSpreadsheet)?;
    let mut text = String::new();
    let mut chars = 0;
    for name in workbook.sheet_names() {
        if !append(&mut text, &mut chars, &format!("# {name}\n")) {
            break;
        }
        let mut cells = workbook
            .worksheet_cells_reader(&name)
            .map_err(|_| ExtractError::BadSpreadsheet)?;
        let mut row = None;
        let mut room = true;
        while room {
            let Some(cell) = cells
                .next_cell()
                .map_err(|_| ExtractError::BadSpreadsheet)?
            else {
                break;
            };
            let (r, _) = cell.get_position();
            let separator = match row {
                Some(previous) if previous == r => "\t",
                Some(_) => "\n",
                None => "",
            };
            row = Some(r);
            let value = cell.get_value().as_string().unwrap_or_else(|| {
                cell.get_value()
                    .get_bool()
                    .map(|b| b.to_string())
                    .unwrap_or_default()
            });
            room =
                append(&mut text, &mut chars, separator) && append(&mut text, &mut chars, &value);
        }
        if !room || !append(&mut text, &mut chars, "\n\n") {
            break;
        }
    }
    Ok(text)
}

/// Inflates every zlib stream of the file once, through a shared cap, before lopdf (which
/// decodes object streams eagerly, each up to its own limit) sees it.
fn check_streams(bytes: &[u8]) -> Result<(), ExtractError> {
    let mut inflated = 0_u64;
    let mut sink = [0_u8; 16 * 1024];
    let mut rest = bytes;
    while let Some(at) = find(rest, b"stream") {
        let after = rest.get(at + b"stream".len()..).unwrap_or_default();
        let start = match after {
            [b'\r', b'\n', ..] => 2,
            [b'\n' | b'\r', ..] => 1,
            _ => {
                rest = after;
                continue;
            }
        };
        let data = after.get(start..).unwrap_or_default();
        let end = find(data, b"endstream").unwrap_or(data.len());
        let body = data.get(..end).unwrap_or_default();
        let remaining = MAX_PDF_INFLATED.saturating_sub(inflated);
        let mut decoder = flate2::read::ZlibDecoder::new(body).take(remaining + 1);
        // Streams that are not zlib (images, other filters) stop at their first read.
        while let Ok(n) = decoder.read(&mut sink) {
            if n == 0 {
                break;
            }
            inflated += n as u64;
            if inflated > MAX_PDF_INFLATED {
                return Err(ExtractError::PdfTooLarge);
            }
        }
        rest = data.get(end..).unwrap_or_default();
    }
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn pdf(bytes: &[u8]) -> Result<String, ExtractError> {
    check_streams(bytes)?;
    let options = lopdf::LoadOptions {
        max_decompressed_size: Some(MAX_PDF_STREAM),
        ..lopdf::LoadOptions::default()
    };
    let document =
        lopdf::Document::load_mem_with_options(bytes, options).map_err(|_| ExtractError::BadPdf)?;
    let mut text = String::new();
    let mut chars = 0;
    for page in document.get_pages().keys().take(MAX_PDF_PAGES) {
        // A page whose text cannot be read is skipped; the others still count.
        let Ok(page_text) = document.extract_text_with_limit(&[*page], MAX_PDF_STREAM) else {
            continue;
        };
        if !append(&mut text, &mut chars, &page_text) {
            break;
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn kinds_come_from_the_extension() {
        assert_eq!(Kind::of("Report.PDF"), Some(Kind::Pdf));
        assert_eq!(Kind::of("a.b.csv"), Some(Kind::Csv));
        assert_eq!(Kind::of("sheet.xlsx"), Some(Kind::Xlsx));
        assert_eq!(Kind::of("notes.txt"), Some(Kind::Txt));
        assert_eq!(Kind::of("image.png"), None);
        assert_eq!(Kind::of("noextension"), None);
        assert_eq!(Kind::of("sheet.xls"), None);
    }

    #[test]
    fn plain_text_is_checked_and_capped() {
        assert_eq!(extract(Kind::Txt, b"\xEF\xBB\xBFhello").unwrap(), "hello");
        assert_eq!(
            extract(Kind::Csv, b"\xff\xfe").unwrap_err(),
            ExtractError::NotText
        );
        assert_eq!(
            extract(Kind::Txt, b"a\0b").unwrap_err(),
            ExtractError::NotText
        );
        assert_eq!(
            extract(Kind::Txt, b"  \n ").unwrap_err(),
            ExtractError::Empty
        );
        let long = "x".repeat(MAX_TEXT_CHARS + 10);
        assert_eq!(
            extract(Kind::Txt, long.as_bytes()).unwrap().chars().count(),
            MAX_TEXT_CHARS
        );
    }

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        let mut writer = zip::ZipWriter::new(&mut out);
        for (name, data) in entries {
            writer
                .start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            writer.write_all(data).unwrap();
        }
        writer.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn a_zip_bomb_is_refused_before_calamine_reads_it() {
        // 40 MiB of zeros compress to about 40 KiB: over the ratio and the total.
        let zeros = vec![0_u8; 40 * 1024 * 1024];
        let bomb = zip_of(&[("xl/worksheets/sheet1.xml", &zeros)]);
        assert!(bomb.len() < 1024 * 1024);
        assert_eq!(
            extract(Kind::Xlsx, &bomb).unwrap_err(),
            ExtractError::SpreadsheetTooLarge
        );
    }

    #[test]
    fn garbage_is_not_a_spreadsheet_or_a_pdf() {
        assert_eq!(
            extract(Kind::Xlsx, b"PK\x03\x04 not really").unwrap_err(),
            ExtractError::BadSpreadsheet
        );
        assert_eq!(
            extract(Kind::Pdf, b"%PDF-1.7\n1 0 obj << /Type /Catalog").unwrap_err(),
            ExtractError::BadPdf
        );
    }

    #[test]
    fn a_pdf_whose_streams_inflate_too_far_is_refused() {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&vec![b' '; 70 * 1024 * 1024]).unwrap();
        let compressed = encoder.finish().unwrap();
        let mut pdf = b"%PDF-1.7\n1 0 obj\n<< /Length 1 /Filter /FlateDecode >>\nstream\n".to_vec();
        pdf.extend_from_slice(&compressed);
        pdf.extend_from_slice(b"\nendstream\nendobj\n%%EOF\n");
        assert_eq!(
            extract(Kind::Pdf, &pdf).unwrap_err(),
            ExtractError::PdfTooLarge
        );
    }
}
