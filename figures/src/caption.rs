//! Captions that fit their panel: a caption wider than the panel is wrapped into lines (a
//! single-line caption centred on a narrow panel loses both ends, e.g. the radar chart's).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::style::{self, DrawResult};

/// Pixels between the top of the panel and the first caption line, and below the last one.
const PAD: u32 = 10;

/// `text` in lines no wider than `max_width` as `width` measures them: clauses (ending in `; `)
/// are kept whole on a line where they fit, else the words are packed greedily; a single word
/// wider than `max_width` stays on its own line.
pub fn wrap(text: &str, max_width: u32, width: impl Fn(&str) -> u32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for clause in text.split_inclusive("; ") {
        let joined = format!("{line}{clause}");
        if width(joined.trim_end()) <= max_width {
            line = joined;
            continue;
        }
        if !line.is_empty() {
            lines.push(line.trim_end().to_owned());
            line = String::new();
        }
        for word in clause.split_inclusive(' ') {
            let joined = format!("{line}{word}");
            if line.is_empty() || width(joined.trim_end()) <= max_width {
                line = joined;
            } else {
                lines.push(line.trim_end().to_owned());
                line = word.to_owned();
            }
        }
    }
    if !line.trim_end().is_empty() {
        lines.push(line.trim_end().to_owned());
    }
    lines
}

/// Draws `caption` centred at the top of `area` in [`style::caption_font`], wrapped to the
/// width of `area` less `margin` pixels on each side, and returns the area below it (all of
/// `area` for an empty caption).
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    margin: u32,
) -> DrawResult<DrawingArea<DB, Shift>, DB> {
    if caption.is_empty() {
        return Ok(area.clone());
    }
    let font = style::caption_font();
    let (w, _) = area.dim_in_pixel();
    let measure = |s: &str| {
        area.estimate_text_size(s, &font)
            .map_or(14 * s.chars().count() as u32, |(tw, _)| tw)
    };
    let lines = wrap(caption, w.saturating_sub(2 * margin), measure);
    let line_height = (font.font.get_size() * 1.25).round() as u32;
    for (i, line) in lines.iter().enumerate() {
        area.draw(&Text::new(
            line.clone(),
            ((w / 2) as i32, (PAD + i as u32 * line_height) as i32),
            font.pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    let used = 2 * PAD + lines.len() as u32 * line_height;
    Ok(area.split_vertically(used).1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One unit a character.
    fn chars(s: &str) -> u32 {
        s.chars().count() as u32
    }

    #[test]
    fn short_text_stays_on_one_line() {
        assert_eq!(wrap("ab; cd", 10, chars), ["ab; cd"]);
    }

    #[test]
    fn clauses_go_whole_onto_lines_where_they_fit() {
        // "alpha beta; gamma" is 17 > 12: the break comes after the clause, not inside it.
        assert_eq!(
            wrap("alpha beta; gamma; delta", 12, chars),
            ["alpha beta;", "gamma; delta"]
        );
    }

    #[test]
    fn a_long_clause_is_packed_by_words() {
        assert_eq!(
            wrap("one two three four five", 9, chars),
            ["one two", "three", "four five"]
        );
        // A word longer than the line keeps its own line.
        assert_eq!(
            wrap("a verylongword b", 5, chars),
            ["a", "verylongword", "b"]
        );
    }
}
