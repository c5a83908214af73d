//! An image classification data set held in memory as `u8` (images are fed to the model in
//! [0,1], as torchvision's `ToTensor` in the reference codes; the conversion happens per batch,
//! on the batch's device).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::error::{Result, invalid};

/// Whether a decoded-image cache was used (Tiny-ImageNet, see [`super::tiny_imagenet`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cache", rename_all = "kebab-case")]
pub enum CacheStatus {
    /// The cache matched the files and was read instead of decoding.
    Hit { path: PathBuf },
    /// No cache existed; one was written.
    Built { path: PathBuf },
    /// A cache existed but did not match (files changed, or it was damaged); it was replaced.
    Rebuilt { path: PathBuf, why: String },
    /// Caching was switched off.
    Disabled,
    /// The images were decoded but the cache could not be written (e.g. a read-only directory).
    WriteFailed { path: PathBuf, why: String },
}

/// Where a data set came from, for run records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    /// Human-readable, e.g. `CIFAR-10 train`.
    pub description: String,
    /// The directory read, if any (synthetic sets have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheStatus>,
}

impl Origin {
    pub fn new(description: impl Into<String>, path: Option<PathBuf>) -> Self {
        Origin {
            description: description.into(),
            path,
            cache: None,
        }
    }
}

/// Images as a CPU `u8` tensor N×C×H×W, labels as an `i64` tensor N in `0..num_classes`.
///
/// Invariants (checked by [`Dataset::new`]): shapes agree, every label is in range, there is one
/// class name per class.
#[derive(Debug)]
pub struct Dataset {
    images: Tensor,
    labels: Tensor,
    /// The labels on the host, for splits and class counts without tensor round trips.
    label_vec: Vec<i64>,
    class_names: Vec<String>,
    origin: Origin,
}

impl Dataset {
    /// Checks the invariants and builds the data set. `images` must be `u8` with four
    /// dimensions; it is moved to the CPU if it is not there.
    pub fn new(
        images: Tensor,
        labels: Vec<i64>,
        class_names: Vec<String>,
        origin: Origin,
    ) -> Result<Self> {
        let size = images.size();
        if images.kind() != Kind::Uint8 || size.len() != 4 {
            return Err(invalid(
                "images",
                format!("{:?} tensor of shape {size:?}", images.kind()),
                "a u8 tensor N×C×H×W",
            ));
        }
        if size[0] != labels.len() as i64 {
            return Err(invalid(
                "labels",
                format!("{} labels", labels.len()),
                format!("one label per image ({})", size[0]),
            ));
        }
        let k = class_names.len() as i64;
        if k == 0 {
            return Err(invalid("class_names", "[]", "at least one class"));
        }
        if let Some((i, &y)) = labels.iter().enumerate().find(|&(_, &y)| y < 0 || y >= k) {
            return Err(invalid(
                format!("labels[{i}]"),
                y,
                format!("a class index in 0..{k}"),
            ));
        }
        let images = images.f_to_device(Device::Cpu)?.f_contiguous()?;
        let labels_t = Tensor::f_from_slice(&labels)?;
        Ok(Dataset {
            images,
            labels: labels_t,
            label_vec: labels,
            class_names,
            origin,
        })
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.label_vec.len()
    }

    pub fn is_empty(&self) -> bool {
        self.label_vec.is_empty()
    }

    /// (C, H, W).
    pub fn image_shape(&self) -> [i64; 3] {
        let s = self.images.size();
        [s[1], s[2], s[3]]
    }

    pub fn num_classes(&self) -> usize {
        self.class_names.len()
    }

    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    /// The `u8` images, N×C×H×W on the CPU.
    pub fn images(&self) -> &Tensor {
        &self.images
    }

    /// The labels as an `i64` tensor N on the CPU.
    pub fn labels(&self) -> &Tensor {
        &self.labels
    }

    /// The labels on the host.
    pub fn label_slice(&self) -> &[i64] {
        &self.label_vec
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Images per class.
    pub fn class_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.num_classes()];
        for &y in &self.label_vec {
            counts[y as usize] += 1;
        }
        counts
    }

    fn check_indices(&self, indices: &[i64]) -> Result<Tensor> {
        check_range(indices, self.len())?;
        Ok(Tensor::f_from_slice(indices)?)
    }

    /// The images at `indices` as `f32` in [0,1] (B×C×H×W) and their labels (`i64`, B), both
    /// on `device`. The `u8` batch is moved first and converted there (4× less to copy).
    pub fn batch(&self, indices: &[i64], device: Device) -> Result<(Tensor, Tensor)> {
        let idx = self.check_indices(indices)?;
        let x = self
            .images
            .f_index_select(0, &idx)?
            .f_to_device(device)?
            .f_to_kind(Kind::Float)?
            .f_div_scalar(255.0)?;
        let y = self.labels.f_index_select(0, &idx)?.f_to_device(device)?;
        Ok((x, y))
    }

    /// The images and labels as host memory a worker thread can read without libtorch
    /// ([`HostSource`]); it shares the images' memory.
    pub fn host_source(&self) -> HostSource {
        let [c, h, w] = self.image_shape().map(|d| d as usize);
        HostSource {
            images: self.images.shallow_clone(),
            labels: self.label_vec.clone(),
            shape: [c, h, w],
        }
    }

    /// The same data set with another origin description (e.g. marked synthetic).
    pub fn described(mut self, description: String) -> Dataset {
        self.origin.description = description;
        self
    }

    /// A new data set with the images at `indices` (in that order), e.g. a training split or a
    /// fixed evaluation subset.
    pub fn subset(&self, indices: &[i64]) -> Result<Dataset> {
        let idx = self.check_indices(indices)?;
        let images = self.images.f_index_select(0, &idx)?;
        let labels = indices
            .iter()
            .map(|&j| self.label_vec[j as usize])
            .collect();
        let mut origin = self.origin.clone();
        origin.description = format!(
            "{} ({} of {} images)",
            origin.description,
            indices.len(),
            self.len()
        );
        Dataset::new(images, labels, self.class_names.clone(), origin)
    }

    /// The first `n` images of each class in file order (all of them when `n` is `None`).
    pub fn head_per_class(&self, n: Option<usize>) -> Result<Dataset> {
        self.subset(&self.head_per_class_indices(n))
    }

    /// The indices (in file order) of [`Dataset::head_per_class`]'s images.
    pub fn head_per_class_indices(&self, n: Option<usize>) -> Vec<i64> {
        let all: Vec<i64> = (0..self.len() as i64).collect();
        first_per_class(self.label_slice(), &all, n, self.num_classes())
    }
}

/// The `u8` images and the labels of a [`Dataset`], readable from another thread with no libtorch
/// call ([`Dataset::host_source`]): a libtorch kernel started on a second thread would start a
/// second OpenMP team competing with the training thread's for the cores.
#[derive(Debug)]
pub struct HostSource {
    /// Contiguous N×C×H×W `u8` on the CPU (as [`Dataset::new`] stores them); kept alive here
    /// and never written, so [`HostSource::bytes`] may read its memory.
    images: Tensor,
    labels: Vec<i64>,
    shape: [usize; 3],
}

impl HostSource {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// (C, H, W).
    pub fn image_shape(&self) -> [usize; 3] {
        self.shape
    }

    /// Every image's bytes, row-major N×C×H×W.
    fn bytes(&self) -> &[u8] {
        let n = self.len() * self.shape.iter().product::<usize>();
        // SAFETY: `images` is a contiguous CPU u8 tensor of exactly `n` elements (checked by
        // `Dataset::new`, which also made it contiguous); `self` holds a reference to its
        // storage for the lifetime of the returned slice, and no code writes to a data set's
        // images after construction.
        unsafe { std::slice::from_raw_parts(self.images.data_ptr() as *const u8, n) }
    }

    /// The bytes of image `i` (C×H×W, row-major) and its label; `i` must be below
    /// [`HostSource::len`] (checked by the caller with [`check_range`]).
    pub(crate) fn image(&self, i: usize) -> (&[u8], i64) {
        let size = self.shape.iter().product::<usize>();
        (&self.bytes()[i * size..(i + 1) * size], self.labels[i])
    }
}

/// Checks that every index is in `0..n`; an error names the first that is not.
pub(crate) fn check_range(indices: &[i64], n: usize) -> Result<()> {
    match indices
        .iter()
        .enumerate()
        .find(|&(_, &j)| j < 0 || j >= n as i64)
    {
        Some((i, &j)) => Err(invalid(
            format!("indices[{i}]"),
            j,
            format!("an image index in 0..{n}"),
        )),
        None => Ok(()),
    }
}

/// `n` default class names `"0"`, `"1"`, ….
pub(crate) fn numbered_classes(n: usize) -> Vec<String> {
    (0..n).map(|k| k.to_string()).collect()
}

/// Builds the `u8` tensor N×C×H×W from host bytes in that layout.
pub(crate) fn images_from_bytes(bytes: &[u8], shape: [usize; 4]) -> Result<Tensor> {
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    Ok(Tensor::f_from_data_size(bytes, &dims, Kind::Uint8)?)
}

/// The first `n` indices of each of the `k` classes among `indices`, in their order (all of
/// them when `n` is `None`): the fixed per-class subsets of training and evaluation.
pub fn first_per_class(labels: &[i64], indices: &[i64], n: Option<usize>, k: usize) -> Vec<i64> {
    let Some(n) = n else {
        return indices.to_vec();
    };
    let mut taken = vec![0usize; k];
    indices
        .iter()
        .copied()
        .filter(|&i| {
            let c = labels[i as usize] as usize;
            taken[c] += 1;
            taken[c] <= n
        })
        .collect()
}
