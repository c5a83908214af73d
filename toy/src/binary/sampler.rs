//! Sampling CFA eq. (5): y uniform on {±1}; x₁ = y with probability p_y, else −y;
//! x₂, …, x_{d+1} iid N(ηy, σ²).
//!
//! Samples are drawn per class (N per class, as the class-wise accuracies need) in chunks of
//! [`crate::rng::CHUNK`], chunk c of class y from its own ChaCha8 stream. Chunks are processed
//! in parallel with rayon and their results returned in chunk order, so every number is the
//! same for any thread count.

use classwise_theory::model::{BinaryModel, Class};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use super::{class_index, label};
use crate::rng::{self, chunks, stream_id};

/// Stream tag of the binary sampler.
const TAG_SAMPLER: u8 = 1;

/// Draws samples of the binary model.
#[derive(Clone, Copy, Debug)]
pub struct Sampler {
    model: BinaryModel,
}

/// Samples of one class, row-major: row i is (x₁, x₂, …, x_{d+1}).
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    pub y: Class,
    /// d + 1
    pub dim: usize,
    pub x: Vec<f64>,
}

impl Samples {
    pub fn len(&self) -> usize {
        self.x.len() / self.dim
    }

    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Row i.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.dim..(i + 1) * self.dim]
    }

    pub fn rows(&self) -> impl Iterator<Item = &[f64]> {
        self.x.chunks_exact(self.dim)
    }
}

impl Sampler {
    pub fn new(model: BinaryModel) -> Self {
        Sampler { model }
    }

    pub fn model(&self) -> &BinaryModel {
        &self.model
    }

    /// Chunk `chunk` (of length `len`) of class y's sample stream for `seed`.
    pub fn chunk(&self, y: Class, seed: u64, chunk: u64, len: usize) -> Samples {
        let m = &self.model;
        let dim = m.d() as usize + 1;
        let (yv, p) = (label(y), m.p(y));
        let (mean, sigma) = (m.eta() * yv, m.sigma());
        let mut rng = rng::stream(seed, stream_id(TAG_SAMPLER, class_index(y), chunk));
        let mut x = Vec::with_capacity(len * dim);
        for _ in 0..len {
            let agrees = rng.random::<f64>() < p;
            x.push(if agrees { yv } else { -yv });
            x.extend((1..dim).map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                mean + sigma * z
            }));
        }
        Samples { y, dim, x }
    }

    /// The first `n` samples of class y's stream (the concatenation of its chunks).
    pub fn sample(&self, y: Class, n: usize, seed: u64) -> Samples {
        let parts = self.map_chunks(y, n, seed, |s| s.x.clone());
        Samples {
            y,
            dim: self.model.d() as usize + 1,
            x: parts.concat(),
        }
    }

    /// Applies `f` to every chunk of the first `n` samples of class y, in parallel, and returns
    /// the results in chunk order. The result does not depend on the number of threads.
    pub fn map_chunks<T: Send>(
        &self,
        y: Class,
        n: usize,
        seed: u64,
        f: impl Fn(&Samples) -> T + Sync,
    ) -> Vec<T> {
        let parts: Vec<_> = chunks(n).collect();
        parts
            .into_par_iter()
            .map(|(c, _, len)| f(&self.chunk(y, seed, c, len)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampler() -> Sampler {
        Sampler::new(BinaryModel::new(3, 0.4, 0.7, 0.85, 0.7).unwrap())
    }

    #[test]
    fn rows_have_the_model_shape() {
        let s = sampler().sample(Class::Neg, 1000, 1);
        assert_eq!((s.len(), s.dim), (1000, 4));
        assert!(s.rows().all(|r| r[0] == 1.0 || r[0] == -1.0));
    }

    #[test]
    fn sample_is_a_prefix_of_a_longer_sample() {
        let n = crate::rng::CHUNK + 10;
        let a = sampler().sample(Class::Pos, n, 5);
        let b = sampler().sample(Class::Pos, n + 7, 5);
        assert_eq!(a.x[..], b.x[..a.x.len()]);
        assert_ne!(a.x[..100], sampler().sample(Class::Pos, n, 6).x[..100]);
    }
}
