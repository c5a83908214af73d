//! The training driver shared by the multi-class toy and the libtorch trainer: one loop over a
//! [`Backend`] (train an epoch under the rule's plan; measure what the rule and the hooks need;
//! write the checkpoint) and its [`Hook`]s, in the manner of argmin's `Executor::run` and burn's
//! learner. Per epoch:
//!
//! ```text
//! rule.plan ─▶ backend.train_epoch ─▶ backend.measure ─▶ rule.observe ─▶ backend.record
//!    ─▶ hooks.after_epoch ─▶ backend.add(parts), backend.complete ─▶ hooks.on_record
//!    ─▶ backend.save, hooks.save ─▶ backend.commit(state)
//!    ─▶ hooks.after_checkpoint ─▶ backend.clean(actions)
//! ```
//!
//! and after the last epoch `hooks.finish` ─▶ `backend.finish(outputs)`. The hooks see the
//! backend and the epoch read-only ([`EpochView`]) and return what they produce. A fresh run
//! lets a rule that decides its first epoch from the initial model (FRL) observe it first; a
//! resumed run instead restores the rule and the hooks from the committed [`DriverState`] and
//! starts at its epoch. The class-wise
//! decisions themselves are the rule's ([`crate::rule`]), the averages' ([`crate::average`])
//! and the selections' ([`crate::select`]).

mod backend;
mod hook;
mod state;

pub use backend::{Backend, Cleanup, EpochStart, Measurement, Stop};
pub use hook::{DynHook, EpochView, Hook, NoState, boxed};
pub use state::{DriverState, join};

use serde_json::{Map, Value};

use crate::rule::ClassRule;

/// Where a run starts.
#[derive(Clone, Debug, PartialEq)]
pub enum Start {
    /// From the initial model at epoch 0.
    Fresh,
    /// At 0-based `epoch` of a resumed run, with the rule's state as that epoch began and the
    /// hooks' fields of the last committed state (empty before the first).
    Resume {
        epoch: usize,
        rule: Value,
        hooks: Map<String, Value>,
    },
}

/// How a [`Driver::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every epoch ran and the hooks finished.
    Completed,
    /// Stopped after this many completed epochs ([`Driver::stop_after`]); nothing finished.
    Stopped { completed_epochs: usize },
    /// The backend stopped inside this 0-based epoch ([`Stop`]: a signal) and saved what a
    /// resume needs.
    Interrupted { epoch: usize },
}

/// A rule, the hooks and the length of a run.
pub struct Driver<'h, B: Backend> {
    pub rule: Box<dyn ClassRule>,
    /// Called in this order at every point of an epoch ([`boxed`] makes a [`Hook`] one).
    pub hooks: Vec<Box<dyn DynHook<B> + 'h>>,
    pub epochs: usize,
    /// Stop after this many completed epochs, as a kill there would (for tests of resume and
    /// for splitting a run into sessions).
    pub stop_after: Option<usize>,
    /// When to stop inside an epoch: on a signal, for every backend ([`Stop`]).
    pub stop: Stop,
}

impl<B: Backend> Driver<'_, B> {
    /// Runs the epochs from `start` to the end (or [`Driver::stop_after`]).
    pub fn run(&mut self, backend: &mut B, start: Start) -> Result<Outcome, B::Error> {
        let first = self.start(backend, start)?;
        let end = self.stop_after.map_or(self.epochs, |n| n.min(self.epochs));
        for epoch in first..end {
            if !self.epoch(backend, epoch)? {
                return Ok(Outcome::Interrupted { epoch });
            }
        }
        let completed_epochs = end.max(first);
        if completed_epochs < self.epochs {
            return Ok(Outcome::Stopped { completed_epochs });
        }
        let mut outputs = Vec::new();
        for hook in &mut self.hooks {
            outputs.extend(hook.finish(backend)?);
        }
        backend.finish(outputs)?;
        Ok(Outcome::Completed)
    }

    /// Initialises a fresh run or restores a resumed one; returns the first epoch to train.
    fn start(&mut self, backend: &mut B, start: Start) -> Result<usize, B::Error> {
        match start {
            Start::Fresh => {
                let needs = self.rule.needs_initial();
                if needs.any() {
                    let stats = backend.measure_initial(needs)?;
                    self.rule.observe_initial(&stats)?;
                }
                Ok(0)
            }
            Start::Resume { epoch, rule, hooks } => {
                self.rule.restore(&rule)?;
                for hook in &mut self.hooks {
                    hook.restore(backend, &hooks)?;
                }
                Ok(epoch)
            }
        }
    }

    /// One epoch; `false` when the backend stopped inside it.
    fn epoch(&mut self, backend: &mut B, epoch: usize) -> Result<bool, B::Error> {
        let rule_at_start = self.rule.state()?;
        let plan = self.rule.plan(epoch)?;
        let start = EpochStart {
            epoch,
            plan: &plan,
            rule_at_start: &rule_at_start,
            stop: &self.stop,
        };
        let Some(trained) = backend.train_epoch(&start)? else {
            return Ok(false);
        };
        let needs = (self.hooks.iter()).fold(self.rule.needs(epoch), |n, h| n.or(h.needs(epoch)));
        let measured = backend.measure(epoch, &trained, needs)?;
        self.rule.observe(epoch, measured.stats())?;
        let mut record = backend.record(epoch, plan, trained, &measured, self.rule.as_ref())?;
        let view = EpochView {
            epoch,
            stats: measured.stats(),
            record: &record,
            backend,
        };
        let mut parts = Vec::new();
        for hook in &mut self.hooks {
            parts.extend(hook.after_epoch(&view)?);
        }
        for part in parts {
            backend.add(&mut record, part)?;
        }
        backend.complete(&mut record)?;
        for hook in &mut self.hooks {
            hook.on_record(backend, &record)?;
        }
        self.checkpoint(backend, epoch)?;
        Ok(true)
    }

    /// The epoch's checkpoint: the backend's files, the hooks' files and fields, the committed
    /// state, then the hooks' clean-up.
    fn checkpoint(&mut self, backend: &mut B, epoch: usize) -> Result<(), B::Error> {
        backend.save(epoch)?;
        let mut hooks = Map::new();
        for hook in &self.hooks {
            join(&mut hooks, hook.save(backend, epoch)?)?;
        }
        let state = DriverState {
            completed_epochs: epoch + 1,
            rule: self.rule.state()?,
            hooks,
        };
        backend.commit(&state)?;
        for hook in &mut self.hooks {
            for action in hook.after_checkpoint(epoch) {
                backend.clean(action)?;
            }
        }
        Ok(())
    }
}
