//! Learnable synthetic stand-ins for CIFAR-10, CIFAR-100 and Tiny-ImageNet, written in their real
//! on-disk formats (`classwise data synth`), so that the presets, the loaders and a GPU can be
//! exercised where the real sets cannot be obtained. **For tests and hardware checks, never for
//! results**: nothing measured on them says anything about the papers' data.
//!
//! Class k has a template: a colour (one level per channel) plus a pattern of blocks (an 8 × 8
//! grid) at ±[`PATTERN`] around it. Classes come in **hard pairs** whose second class's template
//! is `c · T_first + (1 − c) · T_own`: the closer `c` is to 1, the more the two classes look
//! alike, so accuracy (and, under an ℓ∞ attack, robustness) differs from pair to pair, the
//! class-wise disparity the papers study. CIFAR-10's pairs follow the real confusions
//! (cat/dog the closest, then deer/horse, automobile/truck, bird/frog, airplane/ship); the other
//! sets pair classes 2j and 2j + 1 with closeness cycling through [`CLOSENESS`].
//!
//! An image of class k is its template times a brightness drawn in [0.85, 1.15], plus Gaussian
//! noise of standard deviation `noise`, clipped to [0, 1] and quantised to bytes. Image j of class
//! k in a part depends only on (seed, part, k, j): a smaller copy holds the first images of a
//! larger one.

use std::path::{Path, PathBuf};

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

use super::{DatasetId, Part, cifar};
use crate::error::{IoContext, Result, invalid};

/// Blocks per side of a template's pattern.
const GRID: usize = 8;
/// Half the contrast of a template's pattern around its colour.
pub const PATTERN: f64 = 0.25;
/// Closeness of the hard pairs of CIFAR-100 and Tiny-ImageNet, cycled over the pairs.
pub const CLOSENESS: [f64; 4] = [0.5, 0.6, 0.7, 0.85];
/// CIFAR-10's hard pairs (first, second, closeness), after the real data's confusions.
pub const CIFAR10_PAIRS: [(usize, usize, f64); 5] = [
    (3, 5, 0.85), // cat, dog
    (4, 7, 0.7),  // deer, horse
    (1, 9, 0.6),  // automobile, truck
    (2, 6, 0.6),  // bird, frog
    (0, 8, 0.5),  // airplane, ship
];

/// The file [`write`] leaves in each data set's directory: its [`SynthSpec`], so that the
/// loaders label the data synthetic ([`super::load_dir`]) and `doctor` says so.
pub const MARKER: &str = "SYNTHETIC.json";

/// What to write.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SynthSpec {
    pub dataset: DatasetId,
    /// Training images per class (official: 5,000 CIFAR-10, 500 CIFAR-100 and Tiny-ImageNet).
    pub train_per_class: usize,
    /// Test images per class (official: 1,000 CIFAR-10, 100 CIFAR-100, 50 Tiny-ImageNet).
    pub test_per_class: usize,
    pub seed: u64,
    /// Noise standard deviation in [0, 1] pixel units.
    pub noise: f64,
}

impl SynthSpec {
    /// The official counts of `dataset`, seed 0, noise 0.2.
    pub fn official(dataset: DatasetId) -> Result<Self> {
        let k = classes(dataset)?;
        Ok(SynthSpec {
            dataset,
            train_per_class: dataset.official_count(Part::Train) / k,
            test_per_class: dataset.official_count(Part::Test) / k,
            seed: 0,
            noise: 0.2,
        })
    }

    /// Checks the counts and the noise; errors name the option.
    pub fn validate(&self) -> Result<()> {
        classes(self.dataset)?;
        if self.train_per_class == 0 || self.test_per_class == 0 {
            return Err(invalid(
                "--train-per-class/--test-per-class",
                format!("{}/{}", self.train_per_class, self.test_per_class),
                "at least 1 image per class in each part",
            ));
        }
        if !(self.noise.is_finite() && (0.0..=1.0).contains(&self.noise)) {
            return Err(invalid(
                "--noise",
                self.noise,
                "a standard deviation in [0, 1]",
            ));
        }
        Ok(())
    }

    /// Whether these are the data set's official counts (the loaders' default expectation).
    pub fn is_official(&self) -> bool {
        let official = SynthSpec::official(self.dataset).ok();
        official.is_some_and(|o| {
            (o.train_per_class, o.test_per_class) == (self.train_per_class, self.test_per_class)
        })
    }
}

/// The spec of the synthetic data set in `dir`, if [`write`] wrote it (an unreadable marker
/// still marks the set synthetic, with its error as the description).
pub fn read_marker(dir: &Path) -> Option<std::result::Result<SynthSpec, String>> {
    let text = std::fs::read_to_string(dir.join(MARKER)).ok()?;
    Some(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", dir.join(MARKER).display())))
}

/// How a loaded data set from a synth directory describes itself.
pub fn describe(spec: &std::result::Result<SynthSpec, String>) -> String {
    match spec {
        Ok(s) => format!(
            "SYNTHETIC stand-in written by `classwise data synth` (seed {}, noise {}), not the \
             real data",
            s.seed, s.noise
        ),
        Err(e) => format!("SYNTHETIC stand-in (unreadable marker {e}), not the real data"),
    }
}

/// The number of classes of a data set synth can write.
fn classes(dataset: DatasetId) -> Result<usize> {
    match dataset {
        DatasetId::Cifar10 => Ok(10),
        DatasetId::Cifar100 => Ok(100),
        DatasetId::TinyImagenet => Ok(200),
        other => Err(invalid(
            "dataset",
            other.name(),
            "cifar10, cifar100 or tiny-imagenet (Fashion-MNIST is real: `cargo xtask setup`)",
        )),
    }
}

/// Image side and channels of a data set synth writes.
fn shape(dataset: DatasetId) -> (usize, usize) {
    match dataset {
        DatasetId::TinyImagenet => (3, 64),
        _ => (3, cifar::SIDE),
    }
}

/// For each class, the class it is paired with as the second of a hard pair, and how close.
pub fn pairs(dataset: DatasetId) -> Result<Vec<Option<(usize, f64)>>> {
    let k = classes(dataset)?;
    let mut partner = vec![None; k];
    if dataset == DatasetId::Cifar10 {
        for (a, b, c) in CIFAR10_PAIRS {
            partner[b] = Some((a, c));
        }
    } else {
        for j in 0..k / 2 {
            partner[2 * j + 1] = Some((2 * j, CLOSENESS[j % CLOSENESS.len()]));
        }
    }
    Ok(partner)
}

/// The class templates in [0, 1], each C×H×W (CIFAR-10's pairs, or 2j/2j + 1).
pub fn templates(dataset: DatasetId, seed: u64) -> Result<Vec<Vec<f64>>> {
    let (c, side) = shape(dataset);
    let own: Vec<Vec<f64>> = (0..classes(dataset)?)
        .map(|k| own_template(c, side, stream(seed, 0, k as u64, 0)))
        .collect();
    Ok(pairs(dataset)?
        .iter()
        .zip(&own)
        .map(|(partner, t)| match partner {
            Some((a, closeness)) => (own[*a].iter().zip(t))
                .map(|(ta, tb)| closeness * ta + (1.0 - closeness) * tb)
                .collect(),
            None => t.clone(),
        })
        .collect())
}

/// A template drawn from its own stream: a colour in [0.3, 0.7] per channel plus ±PATTERN blocks.
fn own_template(channels: usize, side: usize, mut rng: ChaCha8Rng) -> Vec<f64> {
    let colour: Vec<f64> = (0..channels).map(|_| rng.random_range(0.3..0.7)).collect();
    let signs: Vec<f64> = (0..channels * GRID * GRID)
        .map(|_| {
            if rng.random::<bool>() {
                PATTERN
            } else {
                -PATTERN
            }
        })
        .collect();
    let block = side / GRID;
    (0..channels * side * side)
        .map(|p| {
            let (ch, y, x) = (p / (side * side), p / side % side, p % side);
            colour[ch] + signs[(ch * GRID + y / block) * GRID + x / block]
        })
        .collect()
}

/// The generator of image `j` of class `k` in stream `part` (0: templates, 1: train, 2: test).
fn stream(seed: u64, part: u64, k: u64, j: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream((part << 62) | (k << 32) | j);
    rng
}

/// Image `j` of class `k` of `part` as C×H×W bytes.
fn image(template: &[f64], noise: f64, mut rng: ChaCha8Rng) -> Vec<u8> {
    let brightness = rng.random_range(0.85..1.15);
    let normal = Normal::new(0.0, noise.max(f64::MIN_POSITIVE)).expect("σ > 0 is finite");
    template
        .iter()
        .map(|t| ((t * brightness + normal.sample(&mut rng)).clamp(0.0, 1.0) * 255.0).round() as u8)
        .collect()
}

/// The images of one part, interleaved by class (image i has class i mod K), as (label, bytes).
fn part_images(spec: &SynthSpec, templates: &[Vec<f64>], part: Part) -> Vec<(usize, Vec<u8>)> {
    let (per_class, id) = match part {
        Part::Train => (spec.train_per_class, 1),
        Part::Test => (spec.test_per_class, 2),
    };
    let k = templates.len();
    (0..per_class * k)
        .map(|i| {
            let (class, j) = (i % k, i / k);
            let rng = stream(spec.seed, id, class as u64, j as u64);
            (class, image(&templates[class], spec.noise, rng))
        })
        .collect()
}

/// What [`write`] wrote.
#[derive(Debug, Serialize)]
pub struct Written {
    /// The data set's directory (e.g. `<root>/cifar-10-batches-bin`).
    pub dir: PathBuf,
    pub train: usize,
    pub test: usize,
    pub spec: SynthSpec,
}

/// Writes the data set of `spec` into `root/<its directory name>` in its real format. The files
/// are written into a temporary directory beside it, then moved into place, so an interrupted
/// write leaves no half data set. An existing directory is an error unless `replace`.
pub fn write(spec: &SynthSpec, root: &Path, replace: bool) -> Result<Written> {
    spec.validate()?;
    let dir = root.join(spec.dataset.dir_name());
    if dir.exists() && !replace {
        return Err(invalid(
            "--out",
            dir.display(),
            "a directory without that data set (pass --force to replace it)",
        ));
    }
    let tmp = root.join(format!(
        ".{}.synth-{}",
        spec.dataset.dir_name(),
        std::process::id()
    ));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).at("removing", &tmp)?;
    }
    std::fs::create_dir_all(&tmp).at("creating", &tmp)?;
    let templates = templates(spec.dataset, spec.seed)?;
    let train = part_images(spec, &templates, Part::Train);
    let test = part_images(spec, &templates, Part::Test);
    match spec.dataset {
        DatasetId::Cifar10 => formats::cifar10(&tmp, &train, &test)?,
        DatasetId::Cifar100 => formats::cifar100(&tmp, &train, &test)?,
        _ => formats::tiny_imagenet(&tmp, &train, &test)?,
    }
    let marker = serde_json::to_string_pretty(spec).expect("a spec serialises");
    std::fs::write(tmp.join(MARKER), marker).at("writing", tmp.join(MARKER))?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).at("removing", &dir)?;
    }
    std::fs::rename(&tmp, &dir).at("moving into place", &dir)?;
    Ok(Written {
        dir,
        train: train.len(),
        test: test.len(),
        spec: *spec,
    })
}

/// The three on-disk layouts.
mod formats {
    use std::io::Write;
    use std::path::Path;

    use image::codecs::jpeg::JpegEncoder;

    use crate::data::cifar::{CIFAR10_CLASSES, CIFAR10_TEST_FILE, CIFAR10_TRAIN_FILES};
    use crate::error::{IoContext, Result};

    type Images = [(usize, Vec<u8>)];

    /// Records of `labels(class)` then the pixel bytes, into `path`.
    fn records(path: &Path, images: &Images, labels: impl Fn(usize) -> Vec<u8>) -> Result<()> {
        let file = std::fs::File::create(path).at("creating", path)?;
        let mut out = std::io::BufWriter::new(file);
        for (class, pixels) in images {
            out.write_all(&labels(*class)).at("writing", path)?;
            out.write_all(pixels).at("writing", path)?;
        }
        out.flush().at("writing", path)
    }

    fn lines(path: &Path, lines: impl Iterator<Item = String>) -> Result<()> {
        let text: String = lines.map(|l| l + "\n").collect();
        std::fs::write(path, text).at("writing", path)
    }

    /// `data_batch_1..5.bin` (the training images in five equal files), `test_batch.bin`,
    /// `batches.meta.txt`.
    pub(super) fn cifar10(dir: &Path, train: &Images, test: &Images) -> Result<()> {
        let per_file = train.len() / CIFAR10_TRAIN_FILES.len();
        for (f, name) in CIFAR10_TRAIN_FILES.iter().enumerate() {
            let chunk = &train[f * per_file..(f + 1) * per_file];
            records(&dir.join(name), chunk, |c| vec![c as u8])?;
        }
        records(&dir.join(CIFAR10_TEST_FILE), test, |c| vec![c as u8])?;
        lines(
            &dir.join("batches.meta.txt"),
            CIFAR10_CLASSES.iter().map(|s| s.to_string()),
        )
    }

    /// `train.bin`, `test.bin` (coarse label k / 5, fine label k), and the label names.
    pub(super) fn cifar100(dir: &Path, train: &Images, test: &Images) -> Result<()> {
        let labels = |c: usize| vec![(c / 5) as u8, c as u8];
        records(&dir.join("train.bin"), train, labels)?;
        records(&dir.join("test.bin"), test, labels)?;
        lines(
            &dir.join("fine_label_names.txt"),
            (0..100).map(|k| format!("synthetic_{k}")),
        )?;
        lines(
            &dir.join("coarse_label_names.txt"),
            (0..20).map(|k| format!("synthetic_group_{k}")),
        )
    }

    /// The wnid of class k (`n9` and eight digits: no real wnid starts with 9).
    fn wnid(k: usize) -> String {
        format!("n9{k:07}")
    }

    fn jpeg(path: &Path, pixels: &[u8]) -> Result<()> {
        let side = 64usize;
        let rgb: Vec<u8> = (0..side * side)
            .flat_map(|p| (0..3).map(move |c| pixels[c * side * side + p]))
            .collect();
        let file = std::fs::File::create(path).at("creating", path)?;
        let mut out = std::io::BufWriter::new(file);
        JpegEncoder::new_with_quality(&mut out, 95)
            .encode(
                &rgb,
                side as u32,
                side as u32,
                image::ExtendedColorType::Rgb8,
            )
            .map_err(std::io::Error::other)
            .at("encoding", path)?;
        out.flush().at("writing", path)
    }

    /// `wnids.txt`, `words.txt`, `train/<wnid>/images/<wnid>_<j>.JPEG` with `<wnid>_boxes.txt`,
    /// `val/images/val_<i>.JPEG` with `val/val_annotations.txt`.
    pub(super) fn tiny_imagenet(dir: &Path, train: &Images, test: &Images) -> Result<()> {
        lines(&dir.join("wnids.txt"), (0..200).map(wnid))?;
        lines(
            &dir.join("words.txt"),
            (0..200).map(|k| format!("{}\tsynthetic class {k}", wnid(k))),
        )?;
        let mut counter = vec![0usize; 200];
        let mut boxes = vec![String::new(); 200];
        for (class, pixels) in train {
            let (w, j) = (wnid(*class), counter[*class]);
            let images = dir.join("train").join(&w).join("images");
            std::fs::create_dir_all(&images).at("creating", &images)?;
            let name = format!("{w}_{j}.JPEG");
            jpeg(&images.join(&name), pixels)?;
            boxes[*class].push_str(&format!("{name}\t0\t0\t63\t63\n"));
            counter[*class] += 1;
        }
        for (k, text) in boxes.iter().enumerate() {
            let path = dir
                .join("train")
                .join(wnid(k))
                .join(format!("{}_boxes.txt", wnid(k)));
            std::fs::write(&path, text).at("writing", &path)?;
        }
        let images = dir.join("val").join("images");
        std::fs::create_dir_all(&images).at("creating", &images)?;
        let mut annotations = String::new();
        for (i, (class, pixels)) in test.iter().enumerate() {
            let name = format!("val_{i}.JPEG");
            jpeg(&images.join(&name), pixels)?;
            annotations.push_str(&format!("{name}\t{}\t0\t0\t63\t63\n", wnid(*class)));
        }
        let path = dir.join("val").join("val_annotations.txt");
        std::fs::write(&path, annotations).at("writing", &path)
    }
}
