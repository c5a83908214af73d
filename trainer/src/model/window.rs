//! A forward pass that recomputes only what a change inside one window of the input affects.
//!
//! Square Attack (Andriushchenko et al. 2020, Alg. 2) changes one s×s window of every image
//! per query, the same window for the whole batch (`fra31/auto-attack:autoattack/square.py`),
//! and after its first few hundred queries the window is a few pixels wide. In a feature
//! extractor made of spatially local layers (stride-1 convolutions, pointwise maps, 2×2
//! max-pools), a change of input rows [r₀, r₁) reaches
//!
//! * rows [r₀ + p − k + 1, r₁ + p) of a k×k convolution with zero padding p (clamped to the
//!   map), computed from input rows [o₀ − p, o₁ − p + k − 1);
//! * rows [⌊r₀/2⌋, ⌈r₁/2⌉) of a 2×2 max-pool (odd sizes floored), from rows [2o₀, 2o₁);
//! * the same rows of a pointwise map (normalisation, BatchNorm in eval mode, ReLU);
//!
//! and likewise for columns. [`WindowForward`] keeps every layer's input for a batch, recomputes
//! each layer on the affected region only (from a crop of its cached input, zero-padded where
//! the crop crosses the map's border, patched with the new values of the layer before) and runs
//! the classifier head on the patched last map. A query changes nothing until
//! [`WindowForward::accept`] keeps its values for the rows chosen.
//!
//! The logits agree with the full forward pass up to the order of floating-point summation
//! (`trainer/tests/window.rs` checks them against `forward_t`). A window covering more than a
//! quarter of the input is recomputed in full, by the same operations as `forward_t`.

use tch::nn::Module;

use super::layers::Conv2d;
use tch::{Kind, Tensor};

use crate::error::{Result, invalid};

/// Rows [top, top + height) and columns [left, left + width) of an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub top: i64,
    pub left: i64,
    pub height: i64,
    pub width: i64,
}

/// A half-open range [start, end) of rows or columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: i64,
    end: i64,
}

impl Span {
    fn len(self) -> i64 {
        self.end - self.start
    }

    fn intersect(self, other: Span) -> Span {
        Span {
            start: self.start.max(other.start),
            end: self.end.min(other.end),
        }
    }
}

/// A region of a feature map: its rows and columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Region {
    rows: Span,
    cols: Span,
}

impl Region {
    fn whole(map: &Tensor) -> Region {
        let size = map.size();
        Region {
            rows: Span {
                start: 0,
                end: size[2],
            },
            cols: Span {
                start: 0,
                end: size[3],
            },
        }
    }

    fn of(map: &Tensor, r: Region) -> Tensor {
        map.narrow(2, r.rows.start, r.rows.len())
            .narrow(3, r.cols.start, r.cols.len())
    }
}

/// A pointwise map applied to a feature map (or a crop of it).
pub(crate) type Pointwise<'a> = Box<dyn Fn(&Tensor) -> Tensor + 'a>;

/// One spatially local layer of a feature extractor.
pub(crate) enum LocalOp<'a> {
    /// A map applied position by position (normalisation; BN in eval mode and ReLU).
    Pointwise(Pointwise<'a>),
    /// A k×k convolution with stride 1, dilation 1, one group and zero padding `padding`, then
    /// the pointwise `post`.
    Conv {
        conv: &'a Conv2d,
        kernel: i64,
        padding: i64,
        post: Pointwise<'a>,
    },
    /// 2×2 max-pooling with stride 2, odd sizes floored ([`super::layers::max_pool2`]).
    MaxPool2,
}

impl LocalOp<'_> {
    /// The op on a whole map, as the model's `forward_t` computes it.
    fn full(&self, xs: &Tensor) -> Tensor {
        match self {
            LocalOp::Pointwise(f) => f(xs),
            LocalOp::Conv { conv, post, .. } => post(&conv.forward(xs)),
            LocalOp::MaxPool2 => super::layers::max_pool2(xs),
        }
    }

    /// The output span reached by a change of input span `changed` on an axis of length `len`,
    /// and the input span (possibly beyond the map: zero padding) it is computed from; `None`
    /// if the change reaches no output (a floored pool row).
    fn reach(&self, changed: Span, len: i64) -> Option<(Span, Span)> {
        let (out, need) = match self {
            LocalOp::Pointwise(_) => (changed, changed),
            LocalOp::Conv {
                kernel, padding, ..
            } => {
                let out = Span {
                    start: (changed.start + padding - kernel + 1).max(0),
                    end: (changed.end + padding).min(len + 2 * padding - kernel + 1),
                };
                let need = Span {
                    start: out.start - padding,
                    end: out.end - padding + kernel - 1,
                };
                (out, need)
            }
            LocalOp::MaxPool2 => {
                let out = Span {
                    start: changed.start / 2,
                    end: ((changed.end + 1) / 2).min(len / 2),
                };
                let need = Span {
                    start: 2 * out.start,
                    end: 2 * out.end,
                };
                (out, need)
            }
        };
        (out.len() > 0).then_some((out, need))
    }

    /// The op on `crop`, a crop of its input that covers `need` clipped to the map; the parts
    /// of `need` outside the map are the convolution's zero padding.
    fn on_crop(&self, crop: &Tensor, need: Region, map: Region) -> Tensor {
        match self {
            LocalOp::Pointwise(f) => f(crop),
            LocalOp::Conv { conv, post, .. } => {
                let pad = [
                    map.cols.start - need.cols.start,
                    need.cols.end - map.cols.end,
                    map.rows.start - need.rows.start,
                    need.rows.end - map.rows.end,
                ]
                .map(|p| p.max(0));
                let padded = if pad.iter().any(|&p| p > 0) {
                    crop.constant_pad_nd(pad)
                } else {
                    crop.shallow_clone()
                };
                post(&conv.with_padding(&padded, 0))
            }
            LocalOp::MaxPool2 => super::layers::max_pool2(crop),
        }
    }
}

/// Copies the part of `src` (covering region `src_at` of a map) that falls inside `dst`
/// (covering `dst_at` of the same map) into `dst`.
fn paste(dst: &Tensor, dst_at: Region, src: &Tensor, src_at: Region) {
    let rows = dst_at.rows.intersect(src_at.rows);
    let cols = dst_at.cols.intersect(src_at.cols);
    if rows.len() <= 0 || cols.len() <= 0 {
        return;
    }
    let part = |t: &Tensor, at: Region| {
        t.narrow(2, rows.start - at.rows.start, rows.len()).narrow(
            3,
            cols.start - at.cols.start,
            cols.len(),
        )
    };
    part(dst, dst_at).copy_(&part(src, src_at));
}

/// The cached forward pass of one batch through local layers and a head; see the module
/// documentation.
pub struct WindowForward<'a> {
    ops: Vec<LocalOp<'a>>,
    head: Pointwise<'a>,
    /// `maps[i]` is the input of `ops[i]`; the last one is the head's input.
    maps: Vec<Tensor>,
    /// The last query's new values: per map, the region they cover and the values.
    pending: Vec<Option<(Region, Tensor)>>,
}

impl std::fmt::Debug for WindowForward<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowForward")
            .field("layers", &self.ops.len())
            .field(
                "maps",
                &self.maps.iter().map(Tensor::size).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<'a> WindowForward<'a> {
    /// Runs `x` [N, C, H, W] through `ops` and keeps every map (no gradient is recorded).
    pub(crate) fn new(ops: Vec<LocalOp<'a>>, head: Pointwise<'a>, x: &Tensor) -> Self {
        let maps = tch::no_grad(|| {
            let mut maps = vec![x.detach()];
            for op in &ops {
                let next = op.full(maps.last().unwrap_or(x));
                maps.push(next);
            }
            maps
        });
        let pending = maps.iter().map(|_| None).collect();
        WindowForward {
            ops,
            head,
            maps,
            pending,
        }
    }

    /// The logits of the cached batch.
    pub fn logits(&self) -> Tensor {
        tch::no_grad(|| (self.head)(self.last_map()))
    }

    fn last_map(&self) -> &Tensor {
        &self.maps[self.maps.len() - 1]
    }

    /// The logits of the cached batch with the input's `window` replaced by `values`
    /// [N, C, height, width]; the cache keeps the old values until [`Self::accept`].
    pub fn query(&mut self, window: Window, values: &Tensor) -> Result<Tensor> {
        let input = &self.maps[0];
        let size = input.size();
        let (h, w) = (size[2], size[3]);
        let fits = window.top >= 0
            && window.left >= 0
            && window.height >= 1
            && window.width >= 1
            && window.top + window.height <= h
            && window.left + window.width <= w;
        if !fits {
            return Err(invalid(
                "window",
                format!("{window:?}"),
                format!("a non-empty window inside the {h}×{w} input"),
            ));
        }
        let expected = [size[0], size[1], window.height, window.width];
        if values.size() != expected {
            return Err(invalid(
                "values",
                format!("{:?}", values.size()),
                format!("shape {expected:?}"),
            ));
        }
        let at = Region {
            rows: Span {
                start: window.top,
                end: window.top + window.height,
            },
            cols: Span {
                start: window.left,
                end: window.left + window.width,
            },
        };
        Ok(tch::no_grad(|| {
            self.pending.iter_mut().for_each(|p| *p = None);
            if 4 * window.height * window.width > h * w {
                self.query_full(at, values)
            } else {
                self.query_local(at, values)
            }
        }))
    }

    /// Recomputes every map of the patched input in full.
    fn query_full(&mut self, at: Region, values: &Tensor) -> Tensor {
        let mut map = self.maps[0].copy();
        Region::of(&map, at).copy_(values);
        for (i, op) in self.ops.iter().enumerate() {
            let next = op.full(&map);
            self.pending[i] = Some((Region::whole(&map), map));
            map = next;
        }
        let logits = (self.head)(&map);
        let last = self.pending.len() - 1;
        self.pending[last] = Some((Region::whole(&map), map));
        logits
    }

    /// Recomputes each map on the region the change reaches.
    fn query_local(&mut self, mut at: Region, values: &Tensor) -> Tensor {
        let mut new = values.shallow_clone();
        self.pending[0] = Some((at, new.shallow_clone()));
        for (i, op) in self.ops.iter().enumerate() {
            let map = &self.maps[i];
            let whole = Region::whole(map);
            let reach = op
                .reach(at.rows, whole.rows.end)
                .zip(op.reach(at.cols, whole.cols.end));
            let Some(((out_rows, need_rows), (out_cols, need_cols))) = reach else {
                // The change stops here: the later maps are unchanged.
                return self.logits();
            };
            let need = Region {
                rows: need_rows,
                cols: need_cols,
            };
            let inside = Region {
                rows: need.rows.intersect(whole.rows),
                cols: need.cols.intersect(whole.cols),
            };
            let crop = Region::of(map, inside).copy();
            paste(&crop, inside, &new, at);
            new = op.on_crop(&crop, need, whole);
            at = Region {
                rows: out_rows,
                cols: out_cols,
            };
            self.pending[i + 1] = Some((at, new.shallow_clone()));
        }
        let last = self.last_map().copy();
        paste(&last, Region::whole(&last), &new, at);
        (self.head)(&last)
    }

    /// Keeps the last query's values for the rows where `keep` [N] (bool) is true.
    pub fn accept(&mut self, keep: &Tensor) {
        tch::no_grad(|| {
            let rows = keep.to_kind(Kind::Bool).nonzero().squeeze_dim(1);
            for (map, pending) in self.maps.iter().zip(&mut self.pending) {
                if let Some((at, new)) = pending.take()
                    && rows.numel() > 0
                {
                    let _ = Region::of(map, at).index_copy_(0, &rows, &new.index_select(0, &rows));
                }
            }
        });
    }

    /// Keeps only the batch rows `rows` (1-D int64), in that order.
    pub fn select(&mut self, rows: &Tensor) {
        for map in &mut self.maps {
            *map = map.index_select(0, rows);
        }
        self.pending.iter_mut().for_each(|p| *p = None);
    }
}
