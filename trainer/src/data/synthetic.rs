//! A seeded synthetic image data set with class-dependent difficulty, for tests and smoke runs
//! that need no files.
//!
//! Class `k` has a template of blocks of 4×4 pixels at 0.5 ± 0.3; an image is its class's
//! template plus Gaussian noise clipped to [0,1]. The noise standard deviation grows linearly
//! from `noise[0]` for class 0 to `noise[1]` for the last class, so later classes are harder:
//! the class-wise disparity the papers study, in miniature. Images are interleaved by class
//! (image `i` has class `i mod K`), as real data sets mix their classes. Everything follows from
//! `seed`: the templates are shared by both parts, the noise differs.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use super::Part;
use super::dataset::{Dataset, Origin, images_from_bytes, numbered_classes};
use crate::error::{Result, invalid};

/// Side of a template block in pixels.
const BLOCK: usize = 4;

/// The synthetic data set's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SyntheticSpec {
    pub classes: usize,
    pub train_per_class: usize,
    pub test_per_class: usize,
    /// 1 or 3.
    pub channels: usize,
    /// Height and width.
    pub side: usize,
    pub seed: u64,
    /// Noise standard deviation of the first and of the last class, in [0,1] pixel units.
    pub noise: [f64; 2],
}

impl Default for SyntheticSpec {
    /// Ten classes of 1×28×28 (Fashion-MNIST's shape), 100 train and 20 test images per class.
    fn default() -> Self {
        SyntheticSpec {
            classes: 10,
            train_per_class: 100,
            test_per_class: 20,
            channels: 1,
            side: 28,
            seed: 0,
            noise: [0.1, 0.6],
        }
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

impl SyntheticSpec {
    fn check(&self) -> Result<()> {
        let positive = [
            ("synthetic.classes", self.classes),
            ("synthetic.side", self.side),
        ];
        if let Some((field, v)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(invalid(*field, v, "at least 1"));
        }
        if self.channels != 1 && self.channels != 3 {
            return Err(invalid("synthetic.channels", self.channels, "1 or 3"));
        }
        if !self.noise.iter().all(|s| s.is_finite() && *s >= 0.0) {
            return Err(invalid(
                "synthetic.noise",
                format!("{:?}", self.noise),
                "two finite standard deviations ≥ 0",
            ));
        }
        Ok(())
    }

    /// Noise standard deviation of class `k`.
    pub fn noise_of(&self, k: usize) -> f64 {
        let t = if self.classes > 1 {
            k as f64 / (self.classes - 1) as f64
        } else {
            0.0
        };
        self.noise[0] + t * (self.noise[1] - self.noise[0])
    }

    /// The class templates in [0,1], each C×side×side.
    pub fn templates(&self) -> Vec<Vec<f64>> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let (c, s) = (self.channels, self.side);
        let blocks = s.div_ceil(BLOCK);
        (0..self.classes)
            .map(|_| {
                let signs: Vec<f64> = (0..c * blocks * blocks)
                    .map(|_| if rng.random::<bool>() { 0.3 } else { -0.3 })
                    .collect();
                (0..c * s * s)
                    .map(|p| {
                        let (ch, y, x) = (p / (s * s), p / s % s, p % s);
                        0.5 + signs[(ch * blocks + y / BLOCK) * blocks + x / BLOCK]
                    })
                    .collect()
            })
            .collect()
    }

    /// The training or the test part.
    pub fn generate(&self, part: Part) -> Result<Dataset> {
        self.check()?;
        let per_class = match part {
            Part::Train => self.train_per_class,
            Part::Test => self.test_per_class,
        };
        let templates = self.templates();
        let n = per_class * self.classes;
        let stream = match part {
            Part::Train => 1u64,
            Part::Test => 2,
        };
        let mut rng =
            ChaCha8Rng::seed_from_u64(self.seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let per_image = self.channels * self.side * self.side;
        let mut pixels = Vec::with_capacity(n * per_image);
        let mut labels = Vec::with_capacity(n);
        for i in 0..n {
            let k = i % self.classes;
            let sigma = self.noise_of(k);
            pixels.extend(templates[k].iter().map(|&t| {
                let v = (t + sigma * normal(&mut rng)).clamp(0.0, 1.0);
                (v * 255.0).round() as u8
            }));
            labels.push(k as i64);
        }
        let images = images_from_bytes(&pixels, [n, self.channels, self.side, self.side])?;
        let origin = Origin::new(
            format!(
                "synthetic {} ({} classes, {}×{}×{}, seed {})",
                part.name(),
                self.classes,
                self.channels,
                self.side,
                self.side,
                self.seed
            ),
            None,
        );
        Dataset::new(images, labels, numbered_classes(self.classes), origin)
    }
}
