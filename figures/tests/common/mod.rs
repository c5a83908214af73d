//! Helpers shared by the figure tests.

// Each test crate uses a part of these.
#![allow(dead_code)]

use classwise_figures::Table;

/// The CSV of `table`: its header line and the rows split into cells.
pub fn csv(table: &Table) -> (String, Vec<Vec<String>>) {
    let text = String::from_utf8(table.to_csv().unwrap()).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_owned();
    let rows = lines
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    (header, rows)
}

/// A number of a CSV cell (`inf` and `NaN` included).
pub fn num(cell: &str) -> f64 {
    cell.parse().unwrap_or_else(|e| panic!("{cell:?}: {e}"))
}

/// The first of `rows` whose cells hold the given `(column, text)` pairs; panics naming them.
pub fn row<'a>(rows: &'a [Vec<String>], key: &[(usize, &str)]) -> &'a [String] {
    rows.iter()
        .find(|r| key.iter().all(|(c, v)| r[*c] == *v))
        .unwrap_or_else(|| panic!("no row with {key:?}"))
}

/// Asserts that every one of `values` is drawn inside the y axis `y` (up to rounding), above its
/// start when the axis is truncated (a bar at the start would be hidden).
pub fn assert_on_axis(y: &std::ops::Range<f64>, values: &[f64], what: &str) {
    for &v in values {
        assert!(
            v <= y.end + 1e-12 && (v > y.start || (y.start == 0.0 && v == 0.0)),
            "{what}: {v} is not drawn on the axis {y:?}"
        );
    }
}
