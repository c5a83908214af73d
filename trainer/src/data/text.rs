//! Small text files of the data sets (class-name lists, Tiny-ImageNet's `wnids.txt`,
//! `words.txt` and `val_annotations.txt`), read line by line so that errors can name the line
//! and its byte offset.

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result, TrainerError};

/// One line of a text file, without its line terminator (`\n` or `\r\n`).
#[derive(Clone, Debug)]
pub(crate) struct Line {
    /// 1-based.
    pub number: usize,
    /// Byte offset of the line's first character.
    pub offset: u64,
    pub text: String,
}

impl Line {
    /// A [`TrainerError::BadData`] at this line.
    pub fn error(&self, path: &Path, reason: impl std::fmt::Display) -> TrainerError {
        TrainerError::BadData {
            path: path.to_path_buf(),
            offset: Some(self.offset),
            reason: format!("line {}: {reason}", self.number),
        }
    }
}

/// The lines of a UTF-8 text file.
pub(crate) fn read_lines(path: &Path) -> Result<Vec<Line>> {
    let bytes = std::fs::read(path).at("reading", path)?;
    let text = String::from_utf8(bytes).map_err(|e| TrainerError::BadData {
        path: path.to_path_buf(),
        offset: Some(e.utf8_error().valid_up_to() as u64),
        reason: "not valid UTF-8 text".into(),
    })?;
    let mut offset = 0u64;
    let mut lines = Vec::new();
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let body = raw.strip_suffix('\n').unwrap_or(raw);
        let body = body.strip_suffix('\r').unwrap_or(body);
        lines.push(Line {
            number: i + 1,
            offset,
            text: body.to_string(),
        });
        offset += raw.len() as u64;
    }
    Ok(lines)
}

/// A class-name list (one name per non-blank line, e.g. CIFAR's `batches.meta.txt`) that must
/// hold exactly `expected` names. `None` when the file does not exist.
pub(crate) fn read_class_names(path: &Path, expected: usize) -> Result<Option<Vec<String>>> {
    if !path.exists() {
        return Ok(None);
    }
    let lines = read_lines(path)?;
    let named: Vec<&Line> = lines.iter().filter(|l| !l.text.trim().is_empty()).collect();
    if let Some(extra) = named.get(expected) {
        return Err(extra.error(
            path,
            format!("more than the {expected} class names expected"),
        ));
    }
    if named.len() < expected {
        return Err(TrainerError::BadData {
            path: PathBuf::from(path),
            offset: None,
            reason: format!("{} class names, expected {expected}", named.len()),
        });
    }
    Ok(Some(
        named.iter().map(|l| l.text.trim().to_string()).collect(),
    ))
}
