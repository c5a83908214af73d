//! Diagnostic mode (`classwise train --diagnose`): when a training step produces a value that is
//! not finite, name the first operation whose output (forward) or gradient (backward) is not
//! finite, and the batch.
//!
//! The objectives and the models mark their intermediate results with [`probe`] (a name and the
//! tensor). Outside diagnostic mode a probe costs one thread-local check. In diagnostic mode the
//! epoch loop records the probes of each batch's loss ([`record`]), then, before the update:
//! * **forward**: the first probe, in the order they were computed, holding a NaN or an infinity;
//! * **backward**: the gradient of the loss with respect to every probe (one extra backward pass,
//!   [`Trace::backward`]). Gradients flow from the loss back to the input, so the probe *last*
//!   in forward order whose gradient is not finite, while the probes after it have finite ones,
//!   is where the backward pass first turned non-finite: the operations between it and the next
//!   probe produced the NaN in their backward;
//! * **parameters**: the first parameter whose gradient is not finite.
//!
//! Every check reads the device (one synchronisation per probe): a mode for finding a fault, not
//! for training.

use std::cell::{Cell, RefCell};

use tch::{Kind, Tensor};

use crate::error::Result;

thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(false) };
    static TRACE: RefCell<Option<Vec<(String, Tensor)>>> = const { RefCell::new(None) };
}

/// Turns diagnostic mode on or off for this thread (a run sets it from `--diagnose` on the
/// thread that trains).
pub fn set_enabled(on: bool) {
    ENABLED.with(|e| e.set(on));
}

/// Whether diagnostic mode is on for this thread.
pub fn enabled() -> bool {
    ENABLED.with(Cell::get)
}

/// Whether a [`record`] runs on this thread (to skip building a probe's name otherwise).
pub fn recording() -> bool {
    TRACE.with(|trace| trace.borrow().is_some())
}

/// Records `t` under `name` while a [`record`] runs on this thread; otherwise does nothing.
pub fn probe(name: &str, t: &Tensor) {
    TRACE.with(|trace| {
        if let Some(list) = trace.borrow_mut().as_mut() {
            list.push((name.to_string(), t.shallow_clone()));
        }
    });
}

/// Runs `f`, recording the probes it passes on this thread.
pub fn record<T>(f: impl FnOnce() -> T) -> (T, Trace) {
    let outer = TRACE.with(|trace| trace.replace(Some(Vec::new())));
    let out = f();
    let probes = TRACE.with(|trace| trace.replace(outer)).unwrap_or_default();
    (out, Trace(probes))
}

/// Whether every value of `t` is finite (a floating tensor; other kinds always are).
pub fn all_finite(t: &Tensor) -> bool {
    match t.kind() {
        Kind::Float | Kind::Double | Kind::Half | Kind::BFloat16 => {
            t.isfinite().all().int64_value(&[]) != 0
        }
        _ => true,
    }
}

/// The probes of one step, in the order they were computed.
pub struct Trace(Vec<(String, Tensor)>);

/// What diagnostic mode found in one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// The first probe whose value is not finite.
    Forward { op: String },
    /// The gradient of the loss first turns non-finite at the output of `op`; `next` is the
    /// first later probe whose gradient is finite (the backward of the operations between them
    /// produced it), if any.
    Backward { op: String, next: Option<String> },
    /// Every probe's gradient is finite but this parameter's is not.
    Parameter { name: String },
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Forward { op } => write!(f, "forward: the output of `{op}` is not finite"),
            Finding::Backward {
                op,
                next: Some(next),
            } => write!(
                f,
                "backward: the gradient first turns non-finite at the output of `{op}` (the \
                 gradient at `{next}`, computed after it, is finite: the backward of the \
                 operations between them produced it)"
            ),
            Finding::Backward { op, next: None } => write!(
                f,
                "backward: the gradient is not finite at the output of `{op}`, the last probe"
            ),
            Finding::Parameter { name } => {
                write!(
                    f,
                    "backward: the gradient of parameter `{name}` is not finite"
                )
            }
        }
    }
}

impl Trace {
    /// The probes' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The first probe whose value is not finite.
    pub fn forward(&self) -> Option<Finding> {
        self.0
            .iter()
            .find(|(_, t)| !all_finite(t))
            .map(|(name, _)| Finding::Forward { op: name.clone() })
    }

    /// Differentiates `loss` with respect to every probe that is part of its graph (keeping the
    /// graph for the real backward) and finds where the gradient first turns non-finite.
    pub fn backward(&self, loss: &Tensor) -> Result<Option<Finding>> {
        let in_graph: Vec<&(String, Tensor)> =
            self.0.iter().filter(|(_, t)| t.requires_grad()).collect();
        if in_graph.is_empty() {
            return Ok(None);
        }
        let inputs: Vec<&Tensor> = in_graph.iter().map(|(_, t)| t).collect();
        let grads = Tensor::f_run_backward(&[loss], &inputs, true, false)?;
        let finite: Vec<Option<bool>> = grads
            .iter()
            .map(|g| g.defined().then(|| all_finite(g)))
            .collect();
        // From the loss backwards: the first probe whose gradient is not finite.
        let Some(bad) = (0..finite.len()).rev().find(|&i| finite[i] == Some(false)) else {
            return Ok(None);
        };
        let next = (bad + 1..finite.len())
            .find(|&i| finite[i] == Some(true))
            .map(|i| in_graph[i].0.clone());
        Ok(Some(Finding::Backward {
            op: in_graph[bad].0.clone(),
            next,
        }))
    }
}

/// The first of the `named` parameters whose gradient is not finite.
pub fn parameter_gradients<'a>(
    mut named: impl Iterator<Item = (&'a str, &'a Tensor)>,
) -> Option<Finding> {
    named
        .find(|(_, p)| {
            let g = p.grad();
            g.defined() && !all_finite(&g)
        })
        .map(|(name, _)| Finding::Parameter {
            name: name.to_string(),
        })
}
