//! The built book (`cargo xtask book`, into `out/book` or `$CLASSWISE_BOOK_DIR`) as headless
//! Chromium shows it: every page is opened and its DOM read after the page's scripts ran (the
//! sidebar's links are written by script), then
//! - every internal link and image resolves (the file exists; a `#fragment` names an element
//!   of the target page), and so does every font KaTeX's stylesheet loads;
//! - formulas rendered: no KaTeX error, and no raw TeX left in the text outside code;
//! - screenshots of the index and of chapter 2 are written to `<book>-screenshots/`, to be
//!   looked at; the test checks that each shows a page drawn from top to bottom (not blank, not
//!   cut off: see [`screenshot_shows_a_page`]).
//!
//! Ignored by `cargo test` (it needs the built book and Chromium): `cargo xtask book --check`
//! and `cargo xtask test` run it.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use scraper::{ElementRef, Html, Selector};

const CHROMIUM: &str = "/usr/bin/chromium";

fn book_dir() -> PathBuf {
    std::env::var_os("CLASSWISE_BOOK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("out/book"))
}

/// Chromium, headless, in a fresh profile, with no background network (the machine has none).
fn chromium(profile: &Path) -> Command {
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--virtual-time-budget=3000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// The page's DOM after its scripts ran.
fn rendered_dom(page: &Path, profile: &Path) -> String {
    let out = chromium(profile)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot start {CHROMIUM}: {e} (cargo xtask book --check installs it)")
        });
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "chromium could not open {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn selector(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

/// The ids of the elements of the page at `path` (as served: the static file).
fn ids(path: &Path) -> BTreeSet<String> {
    let html = Html::parse_document(&std::fs::read_to_string(path).unwrap_or_default());
    html.select(&selector("[id]"))
        .filter_map(|e| e.value().attr("id").map(str::to_owned))
        .collect()
}

/// Whether `target` (a link or source relative to `page`) resolves inside the book; `Err`
/// says why not. External and special links are not followed (the machine has no network).
fn resolves(book: &Path, page: &Path, target: &str) -> Result<(), String> {
    if target.is_empty()
        || target.contains("://")
        || target.starts_with("mailto:")
        || target.starts_with("javascript:")
        || target.starts_with("data:")
    {
        return Ok(());
    }
    let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
    let file = file.split('?').next().unwrap_or(file);
    let path = if file.is_empty() {
        page.to_path_buf()
    } else if let Some(abs) = file.strip_prefix('/') {
        book.join(abs)
    } else {
        page.parent().unwrap().join(file)
    };
    let path = if path.is_dir() {
        path.join("index.html")
    } else {
        path
    };
    if !path.is_file() || std::fs::metadata(&path).map_or(0, |m| m.len()) == 0 {
        return Err(format!("`{target}`: no file {}", path.display()));
    }
    if !fragment.is_empty() && !ids(&path).contains(fragment) {
        return Err(format!(
            "`{target}`: {} has no element with id `{fragment}`",
            path.display()
        ));
    }
    Ok(())
}

/// The text of `e` outside code and outside rendered formulas (whose MathML keeps the TeX
/// source as an annotation).
fn prose(e: ElementRef, into: &mut String) {
    for child in e.children() {
        if let Some(el) = ElementRef::wrap(child) {
            let v = el.value();
            let skip = matches!(v.name(), "code" | "pre" | "script" | "style")
                || v.classes().any(|c| c == "katex" || c == "katex-display");
            if !skip {
                prose(el, into);
            }
        } else if let Some(t) = child.value().as_text() {
            into.push_str(t);
            into.push(' ');
        }
    }
}

/// What in `text` looks like TeX that did not render: a control sequence (`\frac`), a display
/// delimiter, or a `$…$` pair around TeX-like characters.
fn raw_tex(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    for (i, w) in chars.windows(2).enumerate() {
        if (w[0] == '\\' && w[1].is_ascii_alphabetic()) || w == ['$', '$'] {
            let end = (i + 30).min(chars.len());
            return Some(chars[i..end].iter().collect());
        }
    }
    let mut dollars = text.match_indices('$').map(|(i, _)| i);
    while let (Some(a), Some(b)) = (dollars.next(), dollars.next()) {
        let inside = &text[a + 1..b];
        if inside.len() < 80 && inside.contains(['_', '^', '{', '\\']) {
            return Some(text[a..=b].to_owned());
        }
    }
    None
}

#[test]
fn the_raw_tex_detector_catches_unrendered_formulas_only() {
    assert!(raw_tex(r"the weight \frac{1}{2} here").is_some());
    assert!(raw_tex("inline $w_y$ left").is_some());
    assert!(raw_tex("$$ a = b $$").is_some());
    assert!(raw_tex("it costs $5 and $6 per hour").is_none());
    assert!(raw_tex("plain prose with a C:\\ path? no: 5 \\ 3").is_none());
}

/// Whether a screenshot shows a drawn page: the window's size, and in the content column
/// (right of the first quarter of the width, where mdBook's 300-pixel sidebar is), in each
/// quarter of the height, at least 1% of the pixels differ from the page's background (the
/// column's most common colour) and anti-aliased text gives at least 32 distinct colours. A
/// blank page, a sidebar beside an empty page, or a page whose rendering stopped part-way
/// down fails. `Ok` tells the least drawn quarter's numbers.
fn screenshot_shows_a_page(shot: &image::RgbImage, size: (u32, u32)) -> Result<String, String> {
    if shot.dimensions() != size {
        return Err(format!(
            "{:?} pixels, expected the window's {size:?}",
            shot.dimensions()
        ));
    }
    let (w, h) = size;
    let columns = w / 4..w;
    // The colours of each quarter of the height, counted once.
    let quarters: Vec<HashMap<[u8; 3], usize>> = (0..4)
        .map(|q| {
            let mut counts = HashMap::new();
            for y in q * h / 4..(q + 1) * h / 4 {
                for x in columns.clone() {
                    *counts.entry(shot.get_pixel(x, y).0).or_insert(0) += 1;
                }
            }
            counts
        })
        .collect();
    let mut all = HashMap::new();
    for (colour, n) in quarters.iter().flatten() {
        *all.entry(*colour).or_insert(0) += n;
    }
    let background = *all.iter().max_by_key(|(_, n)| **n).unwrap().0;
    let mut least = (f64::INFINITY, usize::MAX);
    for (q, counts) in (0..).zip(&quarters) {
        let pixels: usize = counts.values().sum();
        let drawn = pixels - counts.get(&background).copied().unwrap_or(0);
        let share = drawn as f64 / pixels as f64;
        if share < 0.01 || counts.len() < 32 {
            return Err(format!(
                "rows {:?}, columns {columns:?} look blank: {:.2}% of the pixels differ from \
                 the background {background:?}, {} colours (expected at least 1% and 32)",
                q * h / 4..(q + 1) * h / 4,
                100.0 * share,
                counts.len()
            ));
        }
        least = (least.0.min(share), least.1.min(counts.len()));
    }
    Ok(format!(
        "each quarter: at least {:.1}% drawn, {} colours",
        100.0 * least.0,
        least.1
    ))
}

#[test]
fn the_screenshot_check_rejects_blank_and_cut_off_pages() {
    let size = (200, 400);
    // Text-like: grey glyph pixels of many shades on white, everywhere.
    let page = image::RgbImage::from_fn(size.0, size.1, |x, y| {
        if (x / 3 + y / 5) % 7 == 0 {
            let v = ((x * 7 + y * 13) % 200) as u8;
            image::Rgb([v, v, v])
        } else {
            image::Rgb([255, 255, 255])
        }
    });
    assert!(screenshot_shows_a_page(&page, size).is_ok());
    let blank = image::RgbImage::from_pixel(size.0, size.1, image::Rgb([255, 255, 255]));
    assert!(screenshot_shows_a_page(&blank, size).is_err());
    // A drawn sidebar beside an empty content column.
    let sidebar_only = image::RgbImage::from_fn(size.0, size.1, |x, y| {
        if x < size.0 / 4 {
            *page.get_pixel(x, y)
        } else {
            image::Rgb([255, 255, 255])
        }
    });
    assert!(screenshot_shows_a_page(&sidebar_only, size).is_err());
    let mut cut_off = page.clone();
    for y in 300..size.1 {
        for x in 0..size.0 {
            cut_off.put_pixel(x, y, image::Rgb([255, 255, 255]));
        }
    }
    let err = screenshot_shows_a_page(&cut_off, size).unwrap_err();
    assert!(err.contains("rows 300..400"), "{err}");
    assert!(screenshot_shows_a_page(&page, (200, 500)).is_err());
}

#[test]
#[ignore = "needs the built book and Chromium: run `cargo xtask book --check`"]
fn the_built_book_in_headless_chromium() {
    let book = book_dir();
    assert!(
        book.join("index.html").is_file(),
        "{} has no index.html: run `cargo xtask book` first",
        book.display()
    );
    let profile = tempfile::tempdir().unwrap();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&book)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            // The printable version repeats every page; toc.html is the sidebar's fallback.
            !["print.html", "toc.html", "404.html"].contains(&name.as_ref())
        })
        .collect();
    pages.sort();
    assert!(
        pages.len() >= 5,
        "only {} pages in {}",
        pages.len(),
        book.display()
    );

    let mut problems = Vec::new();
    let (mut links, mut images, mut formulas) = (0, 0, 0);
    let mut chapter2_formulas = 0;
    for page in &pages {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let dom = Html::parse_document(&rendered_dom(page, profile.path()));
        for (sel, attr) in [
            ("a[href]", "href"),
            ("link[href]", "href"),
            ("img[src]", "src"),
        ] {
            for e in dom.select(&selector(sel)) {
                let target = e.value().attr(attr).unwrap();
                if sel == "img[src]" {
                    images += 1;
                } else {
                    links += 1;
                }
                if let Err(e) = resolves(&book, page, target) {
                    problems.push(format!("{name}: {e}"));
                }
            }
        }
        let errors = dom.select(&selector(".katex-error")).count();
        if errors > 0 {
            problems.push(format!("{name}: {errors} formulas failed to render"));
        }
        let n = dom.select(&selector(".katex")).count();
        formulas += n;
        if name.starts_with("ch2-") {
            chapter2_formulas = n;
        }
        let main = dom.select(&selector("main")).next();
        let Some(main) = main else {
            problems.push(format!("{name}: no <main>"));
            continue;
        };
        let mut text = String::new();
        prose(main, &mut text);
        if let Some(tex) = raw_tex(&text) {
            problems.push(format!("{name}: raw TeX left on the page: `{tex}`"));
        }
    }
    // The fonts KaTeX's stylesheet loads, relative to the stylesheet.
    let css = walk(&book)
        .into_iter()
        .find(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with("katex") && n.to_string_lossy().ends_with(".css")
            })
        })
        .expect("the book has no KaTeX stylesheet");
    let sheet = std::fs::read_to_string(&css).unwrap();
    let fonts: Vec<&str> = sheet
        .split("url(")
        .skip(1)
        .filter_map(|s| s.split(')').next())
        .collect();
    assert!(
        fonts.len() > 20,
        "{}: {} font urls",
        css.display(),
        fonts.len()
    );
    for f in fonts {
        if let Err(e) = resolves(&book, &css, f.trim_matches(['"', '\''])) {
            problems.push(format!("{}: {e}", css.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "the built book:\n{}",
        problems.join("\n")
    );
    eprintln!(
        "{} pages: {links} links and {images} images resolve, {formulas} formulas rendered",
        pages.len()
    );
    assert!(images >= 10, "only {images} images in the book");
    assert!(formulas >= 200, "only {formulas} formulas in the book");
    assert!(
        chapter2_formulas >= 30,
        "only {chapter2_formulas} formulas in chapter 2"
    );

    // Screenshots to look at.
    let shots = book.with_file_name(format!(
        "{}-screenshots",
        book.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&shots).unwrap();
    let chapter2 = pages
        .iter()
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("ch2-"))
        .expect("no chapter 2 page");
    for (page, png) in [
        (&book.join("index.html"), "index.png"),
        (chapter2, "chapter-2.png"),
    ] {
        let out = chromium(profile.path())
            .arg("--window-size=1280,2000")
            .arg(format!("--screenshot={}", shots.join(png).display()))
            .arg(format!("file://{}", page.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shot = image::open(shots.join(png))
            .unwrap_or_else(|e| panic!("{png}: not a readable PNG: {e}"))
            .to_rgb8();
        match screenshot_shows_a_page(&shot, (1280, 2000)) {
            Ok(drawn) => eprintln!("screenshot: {} ({drawn})", shots.join(png).display()),
            Err(e) => panic!("{}: {e}", shots.join(png).display()),
        }
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}
