//! K Gaussian classes of different difficulty: the multi-class generalisation of CFA's binary
//! model (CFA eq. (5), Sec. 2.2).
//!
//! CFA's binary model draws a *robust* feature x₁ = y with probability p_y (and −y otherwise) and
//! d *non-robust* features x₂… ~ N(η·y, σ²). Classes differ only through p_y. Here a sample of
//! class y ∈ {0, …, K−1} is the concatenation `[robust block | non-robust block]`:
//!
//! * **robust block** (K coordinates): `robust_scale · one_hot(ℓ) + N(0, σ_y²)` per coordinate,
//!   where the *displayed label* ℓ = y with probability p_y (the class reliability) and otherwise
//!   ℓ is uniform over the other K − 1 classes. It is the analogue of x₁ = ±1: a large-magnitude
//!   feature that an ℓ∞ budget ε < robust_scale / 2 rarely flips, but that is wrong for a
//!   fraction 1 − p_y of class y. Unlike CFA's x₁ it carries the class noise: with a noiseless
//!   one-hot block every adversarial method converges to "predict the displayed label", whose
//!   class-wise accuracy is exactly p_y, and no class-wise rule could change anything.
//! * **non-robust block** (K·m coordinates, m per class): the m coordinates of block y are
//!   N(η, σ_y²), every other block is N(0, σ_y²). It is the analogue of x₂… ~ N(η·y, σ²): each
//!   coordinate is weakly informative, the adversary shifts every one by ε, and the noise scale
//!   σ_y is class-dependent (a second difficulty knob, absent from CFA's model).
//!
//! A class with low p_y and large σ_y is hard in the sense of CFA Sec. 2 / Tian et al.: even the
//! best robust classifier is less accurate on it, so adversarial training shows a class-wise
//! robust disparity.
//!
//! Splits are class-balanced (`n_train`, `n_val`, `n_test` samples **per class**) and every
//! (split, class) pair has its own ChaCha8 stream (tag 16), so a split does not change when
//! another split's size changes.

use rand::RngExt;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

use crate::error::{Bound, Result, ToyError, check, require, require_count};
use crate::rng::{stream, stream_id};

/// Stream tag of the data sampler (multiclass tags are 16..=31).
const TAG_DATA: u8 = 16;

/// Configuration of the K-class toy distribution (see the module docs for the model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToyData {
    /// Number of classes K ≥ 2.
    pub n_classes: usize,
    /// Non-robust coordinates per class, m ≥ 1 (the non-robust block has K·m coordinates).
    pub block: usize,
    /// Magnitude of the one-hot robust block (> 0).
    pub robust_scale: f64,
    /// Mean η of the non-robust coordinates of the true class's block (≥ 0).
    pub eta: f64,
    /// p_y ∈ [0, 1]: probability that the robust block shows the true class (length K).
    pub reliability: Vec<f64>,
    /// σ_y > 0: noise scale of every non-robust coordinate of a class-y sample (length K).
    pub noise: Vec<f64>,
    /// Training samples per class.
    pub n_train: usize,
    /// Validation samples per class (FAWA gate, WAT costs, FRL constraints).
    pub n_val: usize,
    /// Test samples per class.
    pub n_test: usize,
}

/// The names accepted by [`ToyData::preset`].
pub const DATA_PRESETS: &[&str] = &["default", "equal", "small"];

impl ToyData {
    /// Named presets:
    ///
    /// * `"default"`: K = 5, m = 4, robust_scale 2, η = 1, reliability 1.0 → 0.9 and noise
    ///   0.6 → 1.2 (class 4 is the hard class on both counts); 400 / 200 / 1000 samples per class.
    /// * `"equal"`: the default with every class as easy as class 0 (no intrinsic disparity).
    /// * `"small"`: K = 3 with few samples, for quick tests.
    ///
    /// Returns `None` for an unknown name ([`DATA_PRESETS`] lists them).
    pub fn preset(name: &str) -> Option<Self> {
        let default = Self {
            n_classes: 5,
            block: 4,
            robust_scale: 2.0,
            eta: 1.0,
            reliability: vec![1.0, 0.975, 0.95, 0.925, 0.9],
            noise: vec![0.6, 0.75, 0.9, 1.05, 1.2],
            n_train: 400,
            n_val: 200,
            n_test: 1000,
        };
        match name {
            "default" => Some(default),
            "equal" => Some(Self {
                reliability: vec![1.0; 5],
                noise: vec![0.6; 5],
                ..default
            }),
            "small" => Some(Self {
                n_classes: 3,
                block: 2,
                reliability: vec![1.0, 0.95, 0.9],
                noise: vec![0.6, 0.9, 1.2],
                n_train: 100,
                n_val: 50,
                n_test: 200,
                ..default
            }),
            _ => None,
        }
    }

    /// Input dimension D = K + K·m.
    pub fn dim(&self) -> usize {
        self.n_classes * (1 + self.block)
    }

    /// Checks every field; the error names the field (`data.<field>`).
    pub fn validate(&self) -> Result<()> {
        require_count("data.n_classes", self.n_classes, 2)?;
        require_count("data.block", self.block, 1)?;
        let r = self.robust_scale;
        check("data.robust_scale", r, Bound::Positive)?;
        check("data.eta", self.eta, Bound::NonNegative)?;
        check_class_vector("data.reliability", &self.reliability, self.n_classes)?;
        for &p in &self.reliability {
            require(
                "data.reliability",
                p,
                (0.0..=1.0).contains(&p),
                "a probability in [0, 1]",
            )?;
        }
        check_class_vector("data.noise", &self.noise, self.n_classes)?;
        for &s in &self.noise {
            check("data.noise", s, Bound::Positive)?;
        }
        require_count("data.n_train", self.n_train, 1)?;
        require_count("data.n_val", self.n_val, 1)?;
        require_count("data.n_test", self.n_test, 1)?;
        Ok(())
    }

    /// Draws the three class-balanced splits for `seed`.
    pub fn sample(&self, seed: u64) -> Result<Splits> {
        self.validate()?;
        Ok(Splits {
            train: self.sample_split(seed, Split::Train)?,
            val: self.sample_split(seed, Split::Val)?,
            test: self.sample_split(seed, Split::Test)?,
        })
    }

    /// Draws one split (rows ordered class by class).
    pub fn sample_split(&self, seed: u64, split: Split) -> Result<Dataset> {
        self.validate()?;
        let per_class = match split {
            Split::Train => self.n_train,
            Split::Val => self.n_val,
            Split::Test => self.n_test,
        };
        let k = self.n_classes;
        let dim = self.dim();
        let mut x = Vec::with_capacity(k * per_class * dim);
        let mut y = Vec::with_capacity(k * per_class);
        for class in 0..k {
            let mut rng = stream(seed, stream_id(TAG_DATA, split as u64, class as u64));
            let normal =
                Normal::new(0.0, self.noise[class]).map_err(|_| ToyError::InvalidParameter {
                    name: "data.noise",
                    value: self.noise[class],
                    expected: "finite and > 0",
                })?;
            for _ in 0..per_class {
                let shown = if rng.random::<f64>() < self.reliability[class] {
                    class
                } else {
                    // Uniform over the K − 1 other classes.
                    let j = rng.random_range(0..k - 1);
                    if j >= class { j + 1 } else { j }
                };
                for c in 0..k {
                    let mean = if c == shown { self.robust_scale } else { 0.0 };
                    x.push(mean + normal.sample(&mut rng));
                }
                for b in 0..k {
                    let mean = if b == class { self.eta } else { 0.0 };
                    x.extend((0..self.block).map(|_| mean + normal.sample(&mut rng)));
                }
                y.push(class);
            }
        }
        Dataset::new(x, y, dim, k)
    }
}

fn check_class_vector(what: &'static str, v: &[f64], k: usize) -> Result<()> {
    if v.len() == k {
        Ok(())
    } else {
        Err(ToyError::LengthMismatch {
            what,
            expected: k,
            got: v.len(),
        })
    }
}

/// Which split a [`Dataset`] is (part of the stream id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Split {
    Train = 0,
    Val = 1,
    Test = 2,
}

/// Train, validation and test sets of one seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Splits {
    pub train: Dataset,
    pub val: Dataset,
    pub test: Dataset,
}

/// A labelled data set: `x` row-major (`len() × dim`), labels in `0..n_classes`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    pub x: Vec<f64>,
    pub y: Vec<usize>,
    pub dim: usize,
    pub n_classes: usize,
}

impl Dataset {
    /// Checks the shapes and label range.
    pub fn new(x: Vec<f64>, y: Vec<usize>, dim: usize, n_classes: usize) -> Result<Self> {
        require_count("dim", dim, 1)?;
        require_count("n_classes", n_classes, 2)?;
        if x.len() != y.len() * dim {
            return Err(ToyError::LengthMismatch {
                what: "x (rows × dim)",
                expected: y.len() * dim,
                got: x.len(),
            });
        }
        if let Some(&bad) = y.iter().find(|&&c| c >= n_classes) {
            return Err(ToyError::InvalidParameter {
                name: "y",
                value: bad as f64,
                expected: "a label in 0..n_classes",
            });
        }
        Ok(Self {
            x,
            y,
            dim,
            n_classes,
        })
    }

    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Row `i` (panics if `i ≥ len()`, an internal indexing error).
    pub fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.dim..(i + 1) * self.dim]
    }

    /// Samples per class.
    pub fn class_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.n_classes];
        for &c in &self.y {
            counts[c] += 1;
        }
        counts
    }
}
