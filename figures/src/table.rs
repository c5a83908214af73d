//! The data behind a figure: named columns written as CSV next to the image, numbers in
//! shortest round-trip form (`inf` and `NaN` for the non-finite values a figure marks).

use std::path::Path;

use crate::error::{FigureError, Result, invalid};

/// One cell of a [`Table`].
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Num(f64),
    /// Counts, class indices, epochs.
    Int(i64),
    Text(String),
}

impl From<f64> for Cell {
    fn from(v: f64) -> Self {
        Cell::Num(v)
    }
}

impl From<usize> for Cell {
    fn from(v: usize) -> Self {
        Cell::Int(v as i64)
    }
}

impl From<&str> for Cell {
    fn from(v: &str) -> Self {
        Cell::Text(v.to_owned())
    }
}

impl From<String> for Cell {
    fn from(v: String) -> Self {
        Cell::Text(v)
    }
}

impl Cell {
    fn render(&self) -> String {
        match self {
            Cell::Num(v) => format!("{v:?}"),
            Cell::Int(v) => v.to_string(),
            Cell::Text(t) => t.clone(),
        }
    }
}

/// Rows under a header. `name` is appended to the figure's id in the file name
/// (`<id>.csv` when empty, `<id>-<name>.csv` otherwise).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub name: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with `header`.
    pub fn new(name: &str, header: &[&str]) -> Self {
        Table {
            name: name.to_owned(),
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; it must have one cell per column.
    pub fn push(&mut self, row: Vec<Cell>) -> Result<()> {
        if row.len() != self.header.len() {
            return Err(invalid(
                format!("row {} of table '{}'", self.rows.len(), self.name),
                format!("{} cells", row.len()),
                format!("{} cells ({})", self.header.len(), self.header.join(", ")),
            ));
        }
        self.rows.push(row);
        Ok(())
    }

    /// A table of equally long numeric columns.
    pub fn columns(name: &str, columns: &[(&str, &[f64])]) -> Result<Self> {
        let n = columns.first().map_or(0, |c| c.1.len());
        let header: Vec<&str> = columns.iter().map(|c| c.0).collect();
        let mut t = Table::new(name, &header);
        if let Some((h, c)) = columns.iter().find(|c| c.1.len() != n) {
            return Err(invalid(
                format!("column '{h}' of table '{name}'"),
                format!("{} values", c.len()),
                format!("{n} values, as the first column"),
            ));
        }
        for i in 0..n {
            t.push(columns.iter().map(|c| Cell::Num(c.1[i])).collect())?;
        }
        Ok(t)
    }

    /// The file name of this table for figure `id`.
    pub fn file_name(&self, id: &str) -> String {
        if self.name.is_empty() {
            format!("{id}.csv")
        } else {
            format!("{id}-{}.csv", self.name)
        }
    }

    /// The CSV text.
    pub fn to_csv(&self) -> Result<Vec<u8>> {
        let encode = |e: csv::Error| FigureError::Encode {
            what: format!("table '{}'", self.name),
            message: e.to_string(),
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.header).map_err(encode)?;
        for row in &self.rows {
            w.write_record(row.iter().map(Cell::render))
                .map_err(encode)?;
        }
        w.into_inner().map_err(|e| FigureError::Encode {
            what: format!("table '{}'", self.name),
            message: e.to_string(),
        })
    }

    /// Writes `<dir>/<file_name(id)>` atomically.
    pub fn write(&self, dir: &Path, id: &str) -> Result<std::path::PathBuf> {
        let path = dir.join(self.file_name(id));
        crate::atomic::write_atomic(&path, &self.to_csv()?)?;
        Ok(path)
    }
}
