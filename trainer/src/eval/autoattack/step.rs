//! One step of the cascade: an attack, and its run over the points still robust when it
//! starts, batch by batch. Batch b of attack s draws from libtorch's generator seeded with
//! mix(seed, s, b), and the state is saved after every batch, so a resumed attack continues at
//! its first unfinished batch with the draws an uninterrupted run would make.

use std::time::Instant;

use classwise_theory::metrics::class_accuracy_from_flags;
use tch::{Device, Tensor};

use super::checks::check_ball;
use super::report::StepReport;
use super::state::{Clock, Current, State, Store};
use crate::attack::{Attack, AttackInput, Budget};
use crate::data::Dataset;
use crate::error::Result;
use crate::model::Classifier;

/// One attack of the cascade.
pub struct Step {
    /// A short name for tables and file names (`apgd-ce`).
    pub name: String,
    pub attack: Box<dyn Attack>,
}

/// What every batch of every attack needs: the model and the data, the cascade's settings,
/// where the state is saved and the clock of the evaluation.
pub(super) struct Runner<'a> {
    pub(super) model: &'a dyn Classifier,
    pub(super) data: &'a Dataset,
    pub(super) device: Device,
    pub(super) eps: f64,
    /// Points per attack batch (the last batch may be smaller).
    pub(super) batch_size: usize,
    pub(super) seed: u64,
    pub(super) verbose: bool,
    pub(super) store: Store<'a>,
    pub(super) clock: Clock,
}

impl Runner<'_> {
    /// Attack `si` of the cascade on the points still robust, from its first unfinished batch
    /// when resumed; its row of the class × attack table goes to `state.finished`.
    pub(super) fn run(
        &self,
        si: usize,
        step: &Step,
        state: &mut State,
        x_adv: &mut Tensor,
    ) -> Result<()> {
        let mut current = match state.current.take() {
            Some(c) if c.step == si => c,
            _ => Current::start(si, &state.robust),
        };
        let batches: Vec<Vec<i64>> = current
            .queue
            .chunks(self.batch_size)
            .map(<[i64]>::to_vec)
            .collect();
        for (bi, chunk) in batches.iter().enumerate().skip(current.batches_done) {
            let t0 = Instant::now();
            let broken = self.attack_batch(si, bi, step, chunk, state, x_adv)?;
            current.batches_done = bi + 1;
            current.broken += broken;
            current.seconds += t0.elapsed().as_secs_f64();
            if self.verbose {
                eprintln!(
                    "autoattack {} batch {}/{}: {} of {} broken, robust {:.2}% ({:.1} s)",
                    step.name,
                    bi + 1,
                    batches.len(),
                    broken,
                    chunk.len(),
                    100.0 * state.robust_fraction(),
                    current.seconds
                );
            }
            state.current = Some(current.clone());
            state.seconds = self.clock.total();
            self.store.save(state)?;
        }
        self.finish(step, current, state)
    }

    /// Batch `bi` of attack `si` on the points `chunk`: the points it breaks lose their flag,
    /// take their adversarial prediction and example, and are saved in the batch's file.
    /// Returns how many it broke.
    fn attack_batch(
        &self,
        si: usize,
        bi: usize,
        step: &Step,
        chunk: &[i64],
        state: &mut State,
        x_adv: &mut Tensor,
    ) -> Result<usize> {
        let (x, y) = self.data.batch(chunk, self.device)?;
        let adv = self.perturb(si, bi, step, (&x, &y), &mut state.warnings)?;
        let pred = tch::no_grad(|| self.model.forward_t(&adv, false).argmax(-1, false));
        let broken = pred.ne_tensor(&y);
        let rows = broken.nonzero().squeeze_dim(1);
        let at = Tensor::from_slice(chunk).index_select(0, &rows.to_device(Device::Cpu));
        let adv_rows = adv.index_select(0, &rows).to_device(Device::Cpu);
        let pred_rows: Vec<i64> =
            Vec::try_from(&pred.index_select(0, &rows).to_device(Device::Cpu))?;
        self.store.save_batch(si, bi, &at, &adv_rows)?;
        let _ = x_adv.index_copy_(0, &at, &adv_rows);
        let at: Vec<i64> = Vec::try_from(&at)?;
        for (&i, &p) in at.iter().zip(&pred_rows) {
            state.robust[i as usize] = false;
            state.adv_pred[i as usize] = p;
        }
        Ok(at.len())
    }

    /// The adversarial examples of batch `bi` of attack `si`, drawn from the generator seeded
    /// with mix(seed, si, bi) and checked to lie in the ε-ball and [0, 1]; the attack's new
    /// warnings are added to `warnings`.
    fn perturb(
        &self,
        si: usize,
        bi: usize,
        step: &Step,
        (x, y): (&Tensor, &Tensor),
        warnings: &mut Vec<String>,
    ) -> Result<Tensor> {
        let budget = Budget::uniform(self.eps, x.size()[0], self.device)?;
        let input = AttackInput {
            x,
            y,
            eps: &budget,
            train: false,
        };
        let (adv, new) =
            crate::seed::seeded(crate::seed::mix(self.seed, si as u64, bi as u64), || {
                step.attack.perturb_checked(self.model, &input)
            })?;
        for w in new {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        check_ball(&adv, x, self.eps, &step.name)?;
        Ok(adv)
    }

    /// The attack's row of the table (robust accuracy per class after it) goes to
    /// `state.finished`, and the state is saved with no attack in progress.
    fn finish(&self, step: &Step, current: Current, state: &mut State) -> Result<()> {
        let labels: Vec<usize> = self
            .data
            .label_slice()
            .iter()
            .map(|&l| l as usize)
            .collect();
        let robust = class_accuracy_from_flags(&state.robust, &labels, self.data.num_classes())?;
        state.finished.push(StepReport {
            attack: step.name.clone(),
            settings: step.attack.describe(),
            attacked: current.queue.len(),
            broken: current.broken,
            seconds: current.seconds,
            robust_per_class: robust.per_class().to_vec(),
            robust: robust.overall().unwrap_or(robust.class_mean()),
        });
        state.current = None;
        state.seconds = self.clock.total();
        self.store.save(state)
    }
}
