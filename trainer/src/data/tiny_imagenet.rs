//! Tiny-ImageNet-200 (`tiny-imagenet-200/`): 200 classes of 64×64 JPEGs (CFA App. C.1).
//!
//! - `wnids.txt`: one WordNet id per line; their order defines the class index.
//! - `words.txt` (optional): `wnid<TAB>synonyms`; the first synonym becomes the class name.
//! - `train/<wnid>/images/*.JPEG`: 500 per class, read in file-name order.
//! - `val/images/*.JPEG` and `val/val_annotations.txt` (`file<TAB>wnid<TAB>x0<TAB>y0<TAB>x1<TAB>y1`),
//!   50 per class, in annotation order. The official test set has no labels, so
//!   [`Part::Test`] reads `val/`, as the papers do.
//!
//! Some JPEGs are grayscale; every image becomes RGB. Decoding 110,000 JPEGs is slow, so the
//! decoded `u8` tensor is cached (see [`super::cache`]) under a fingerprint of the file list,
//! the file sizes and the contents of `wnids.txt` and `val_annotations.txt`, and rebuilt when it
//! no longer matches.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cache::{self, Fnv};
use super::dataset::{CacheStatus, Dataset, Origin};
use super::text::{Line, read_lines};
use super::{Counts, DatasetId, Part};
use crate::error::{IoContext, Result, TrainerError};

/// Where the decoded-image cache lives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageCache {
    /// In the data set's directory (`classwise-cache-<part>.cwu8`).
    #[default]
    NextToData,
    /// In this directory, under a name that also hashes the data set's path.
    In(PathBuf),
    /// Decode every time.
    Off,
}

/// One image to decode and its class.
struct Item {
    path: PathBuf,
    /// Relative to the data set's directory, for the fingerprint.
    rel: String,
    label: i64,
    size: u64,
}

/// The classes: wnids in `wnids.txt` order, and their names.
struct Classes {
    wnids: Vec<String>,
    index: HashMap<String, usize>,
    names: Vec<String>,
}

fn read_classes(dir: &Path) -> Result<Classes> {
    let path = dir.join("wnids.txt");
    let mut wnids = Vec::new();
    let mut index = HashMap::new();
    for line in read_lines(&path)? {
        let wnid = line.text.trim();
        if wnid.is_empty() {
            continue;
        }
        if wnid.contains(char::is_whitespace) || wnid.contains('/') {
            return Err(line.error(&path, format!("{wnid:?} is not a wnid")));
        }
        if index.insert(wnid.to_string(), wnids.len()).is_some() {
            return Err(line.error(&path, format!("{wnid} is listed twice")));
        }
        wnids.push(wnid.to_string());
    }
    if wnids.is_empty() {
        return Err(TrainerError::BadData {
            path,
            offset: None,
            reason: "no wnids".into(),
        });
    }
    let names = read_words(&dir.join("words.txt"), &index)?.unwrap_or_else(|| wnids.clone());
    Ok(Classes {
        wnids,
        index,
        names,
    })
}

/// First synonyms of the wnids in `index` from `words.txt` (absent wnids keep their id).
fn read_words(path: &Path, index: &HashMap<String, usize>) -> Result<Option<Vec<String>>> {
    if !path.exists() {
        return Ok(None);
    }
    let mut names = vec![String::new(); index.len()];
    for (wnid, &k) in index {
        names[k] = wnid.clone();
    }
    for line in read_lines(path)? {
        if line.text.trim().is_empty() {
            continue;
        }
        let (wnid, words) = line
            .text
            .split_once('\t')
            .ok_or_else(|| line.error(path, "expected `wnid<TAB>words`"))?;
        if let Some(&k) = index.get(wnid.trim()) {
            let first = words.split(',').next().unwrap_or(words).trim();
            if !first.is_empty() {
                names[k] = first.to_string();
            }
        }
    }
    Ok(Some(names))
}

fn is_jpeg(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("jpeg") || e.eq_ignore_ascii_case("jpg"))
}

fn file_size(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .at("reading the size of", path)?
        .len())
}

/// `train/<wnid>/images/*.JPEG` for every class, in class order then file-name order.
fn list_train(dir: &Path, classes: &Classes) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    for (k, wnid) in classes.wnids.iter().enumerate() {
        let images = dir.join("train").join(wnid).join("images");
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&images).at("listing", &images)? {
            let path = entry.at("listing", &images)?.path();
            if is_jpeg(&path) {
                files.push(path);
            }
        }
        if files.is_empty() {
            return Err(TrainerError::BadData {
                path: images,
                offset: None,
                reason: format!("no JPEG images for class {k} ({wnid})"),
            });
        }
        files.sort();
        for path in files {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            items.push(Item {
                size: file_size(&path)?,
                rel: format!("train/{wnid}/images/{}", name.unwrap_or_default()),
                label: k as i64,
                path,
            });
        }
    }
    Ok(items)
}

/// The four integers of a bounding box (`x0 y0 x1 y1`), checked but not used.
fn check_bbox(line: &Line, path: &Path, fields: &[&str]) -> Result<()> {
    if fields.len() != 4 {
        return Err(line.error(
            path,
            format!(
                "{} fields, expected 2 (file, wnid) or 6 (file, wnid, x0, y0, x1, y1)",
                fields.len() + 2
            ),
        ));
    }
    if let Some(f) = fields.iter().find(|f| f.trim().parse::<u32>().is_err()) {
        return Err(line.error(path, format!("bounding-box value {f:?} is not an integer")));
    }
    Ok(())
}

/// `val/val_annotations.txt` and the images it names, in annotation order.
fn list_val(dir: &Path, classes: &Classes) -> Result<(Vec<Item>, Vec<u8>)> {
    let path = dir.join("val").join("val_annotations.txt");
    let text = std::fs::read(&path).at("reading", &path)?;
    let mut seen = HashSet::new();
    let mut items = Vec::new();
    for line in read_lines(&path)? {
        if line.text.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.text.split('\t').collect();
        let (file, wnid) = match fields.as_slice() {
            [file, wnid, ..] => (file.trim(), wnid.trim()),
            _ => {
                return Err(line.error(
                    &path,
                    "expected `file<TAB>wnid<TAB>x0<TAB>y0<TAB>x1<TAB>y1`",
                ));
            }
        };
        check_bbox(&line, &path, &fields[2..])?;
        if file.is_empty() || file.contains('/') || !is_jpeg(Path::new(file)) {
            return Err(line.error(&path, format!("{file:?} is not a JPEG file name")));
        }
        let k = *classes
            .index
            .get(wnid)
            .ok_or_else(|| line.error(&path, format!("wnid {wnid:?} is not in wnids.txt")))?;
        if !seen.insert(file.to_string()) {
            return Err(line.error(&path, format!("{file} is annotated twice")));
        }
        let image = dir.join("val").join("images").join(file);
        let size = std::fs::metadata(&image)
            .map_err(|e| line.error(&path, format!("{}: {e}", image.display())))?
            .len();
        items.push(Item {
            path: image,
            rel: format!("val/images/{file}"),
            label: k as i64,
            size,
        });
    }
    Ok((items, text))
}

/// Decodes one image to RGB C×H×W bytes in `out`; all images must be `w`×`h`.
fn decode_into(path: &Path, (w, h): (u32, u32), first: &Path, out: &mut [u8]) -> Result<()> {
    let bad = |reason: String| TrainerError::BadData {
        path: path.to_path_buf(),
        offset: None,
        reason,
    };
    let rgb = decode(path)?;
    if rgb.dimensions() != (w, h) {
        let (gw, gh) = rgb.dimensions();
        return Err(bad(format!(
            "{gw}×{gh} pixels, but {} has {w}×{h}; all images must have one size",
            first.display()
        )));
    }
    let plane = (w * h) as usize;
    for (i, px) in rgb.pixels().enumerate() {
        out[i] = px[0];
        out[plane + i] = px[1];
        out[2 * plane + i] = px[2];
    }
    Ok(())
}

fn decode(path: &Path) -> Result<image::RgbImage> {
    let bad = |what: &str, e: &dyn std::fmt::Display| TrainerError::BadData {
        path: path.to_path_buf(),
        offset: None,
        reason: format!("{what}: {e}"),
    };
    let reader = image::ImageReader::open(path)
        .at("opening", path)?
        .with_guessed_format()
        .at("reading", path)?;
    let img = reader
        .decode()
        .map_err(|e| bad("cannot decode the image", &e))?;
    Ok(img.to_rgb8())
}

/// Decodes `items` into `out` (C×H×W each) on all cores; the first error in item order wins.
fn decode_block(items: &[Item], size: (u32, u32), first: &Path, out: &mut [u8]) -> Result<()> {
    let per_image = out.len() / items.len().max(1);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    let per_thread = items.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(per_thread)
            .zip(out.chunks_mut(per_thread * per_image))
            .map(|(items, out)| {
                s.spawn(move || {
                    items
                        .iter()
                        .zip(out.chunks_mut(per_image))
                        .try_for_each(|(item, o)| decode_into(&item.path, size, first, o))
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join().unwrap_or_else(|_| {
                Err(TrainerError::BadData {
                    path: first.to_path_buf(),
                    offset: None,
                    reason: "an image decoder panicked".into(),
                })
            })
        })
    })
}

fn cache_path(dir: &Path, part: Part, cache: &ImageCache) -> Option<PathBuf> {
    match cache {
        ImageCache::Off => None,
        ImageCache::NextToData => Some(dir.join(format!("classwise-cache-{}.cwu8", part.name()))),
        ImageCache::In(cdir) => {
            let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            let hash = Fnv::new()
                .bytes(canonical.to_string_lossy().as_bytes())
                .finish();
            Some(cdir.join(format!("tiny-imagenet-{}-{hash:016x}.cwu8", part.name())))
        }
    }
}

/// Decodes all items, writing the cache at `cache_at` along the way when given.
fn decode_all(
    items: &[Item],
    cache_at: Option<(&Path, u64)>,
) -> Result<(tch::Tensor, Option<std::result::Result<(), String>>)> {
    let first = &items[0].path;
    let size = decode(first)?.dimensions();
    let shape = [items.len(), 3, size.1 as usize, size.0 as usize];
    let mut writer = None;
    let mut write_error = None;
    if let Some((path, fp)) = cache_at {
        match cache::Writer::create(path, fp, shape) {
            Ok(w) => writer = Some(w),
            Err(e) => write_error = Some(e.to_string()),
        }
    }
    let images = cache::fill_blocks(shape, |start, count, buf| {
        decode_block(&items[start..start + count], size, first, buf)?;
        if let Some(w) = writer.as_mut()
            && let Err(e) = w.write(buf)
        {
            write_error = Some(e.to_string());
            writer = None;
        }
        Ok(())
    })?;
    if let Some(w) = writer
        && let Err(e) = w.finish()
    {
        write_error = Some(e.to_string());
    }
    let outcome = cache_at.map(|_| write_error.map_or(Ok(()), Err));
    Ok((images, outcome))
}

/// Loads Tiny-ImageNet-200 from `dir`. `counts` checks the number of images of the part
/// (official: 100,000 train, 10,000 val); `cache` says where decoded images are kept.
pub fn load_tiny_imagenet(
    dir: &Path,
    part: Part,
    counts: Counts,
    cache: &ImageCache,
) -> Result<Dataset> {
    let classes = read_classes(dir)?;
    let mut fp = Fnv::new();
    fp.field(b"classwise tiny-imagenet cache v1")
        .field(part.name().as_bytes())
        .field(&std::fs::read(dir.join("wnids.txt")).at("reading", dir.join("wnids.txt"))?);
    let (items, listed_in) = match part {
        Part::Train => (list_train(dir, &classes)?, dir.join("train")),
        Part::Test => {
            let (items, annotations) = list_val(dir, &classes)?;
            fp.field(&annotations);
            (items, dir.join("val").join("val_annotations.txt"))
        }
    };
    if let Some(want) = counts.expected(DatasetId::TinyImagenet, part)
        && want != items.len()
    {
        return Err(TrainerError::BadData {
            path: listed_in,
            offset: None,
            reason: format!("{} images, expected {want}", items.len()),
        });
    }
    if items.is_empty() {
        return Err(TrainerError::BadData {
            path: listed_in,
            offset: None,
            reason: "no images".into(),
        });
    }
    for item in &items {
        fp.field(item.rel.as_bytes())
            .field(&item.size.to_le_bytes());
    }
    let fingerprint = fp.finish();
    let labels: Vec<i64> = items.iter().map(|i| i.label).collect();
    let cache_file = cache_path(dir, part, cache);
    let mut stale = None;
    let mut cached = None;
    if let Some(path) = &cache_file {
        match cache::read(path, fingerprint, items.len(), 3) {
            Ok(hit) => cached = hit,
            Err(why) => stale = Some(why),
        }
    }
    let (images, status) = match (cached, cache_file) {
        (Some(images), Some(path)) => (images, CacheStatus::Hit { path }),
        (_, None) => (decode_all(&items, None)?.0, CacheStatus::Disabled),
        (None, Some(path)) => {
            let (images, outcome) = decode_all(&items, Some((&path, fingerprint)))?;
            let status = match (outcome, stale) {
                (Some(Err(why)), _) => CacheStatus::WriteFailed { path, why },
                (_, Some(why)) => CacheStatus::Rebuilt { path, why },
                (_, None) => CacheStatus::Built { path },
            };
            (images, status)
        }
    };
    let description = match part {
        Part::Train => "Tiny-ImageNet train".to_string(),
        Part::Test => "Tiny-ImageNet val (the labelled test set)".to_string(),
    };
    let mut origin = Origin::new(description, Some(dir.to_path_buf()));
    origin.cache = Some(status);
    Dataset::new(images, labels, classes.names, origin)
}
