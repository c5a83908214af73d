//! The cascade's run: the clean pass (or the saved state it resumes), the attacks in order on
//! the points still robust, the final recheck of the flags and the class-wise report.

use std::path::Path;
use std::time::Instant;

use tch::{Device, Kind, Tensor};

use super::checks::{probability_check, recheck, square_check};
use super::report::{AUTOATTACK_SCHEMA, AutoAttackReport, StepReport};
use super::state::{Clock, State, StateKey, Store, data_fingerprint};
use super::step::{Runner, Step};
use crate::data::Dataset;
use crate::error::{Bound, Result, check, invalid};
use crate::eval::{Outcomes, Report, RobustCounting, first_batch_checks, summarize};
use crate::model::Classifier;

/// The cascade's settings.
pub struct Cascade<'a> {
    /// A label for reports (e.g. `standard`).
    pub label: String,
    pub steps: Vec<Step>,
    pub eps: f64,
    /// Points per attack batch (the last batch may be smaller).
    pub batch_size: usize,
    /// Each batch of each attack draws from libtorch's generator seeded with
    /// mix(seed, attack, batch).
    pub seed: u64,
    /// Skip the randomised-model check (AutoAttack's `rand` version).
    pub randomized: bool,
    /// Where the resumable state lives; `None`: not resumable.
    pub state_dir: Option<&'a Path>,
    /// Identifies the model (e.g. [`crate::model::Model::fingerprint`]): a saved state of
    /// another model is refused.
    pub model_id: String,
    /// Warnings known before the run (e.g.
    /// [`AutoAttackSpec::class_warnings`](super::AutoAttackSpec::class_warnings)), reported
    /// with the result.
    pub notes: Vec<String>,
    /// Progress lines on stderr.
    pub verbose: bool,
}

/// The cascade's result.
pub struct CascadeOutcome {
    pub report: AutoAttackReport,
    /// The adversarial examples [N, …] on the CPU (x itself where no attack succeeded).
    pub x_adv: Tensor,
    /// Per sample: robust after every attack.
    pub robust: Vec<bool>,
}

impl Cascade<'_> {
    /// The cascade on every sample of `data`, the model in eval mode.
    pub fn run(
        &self,
        model: &dyn Classifier,
        data: &Dataset,
        device: Device,
    ) -> Result<CascadeOutcome> {
        self.validate(data)?;
        let store = Store::new(self.state_dir);
        let key = self.state_key(data)?;
        // The images as the attacks see them (f32 in [0, 1], as `Dataset::batch` gives them).
        let mut x_adv = data.images().to_device(Device::Cpu).to_kind(Kind::Float) / 255.0;
        let (mut state, resumed) = match self.resume(store, &key, &mut x_adv)? {
            Some(state) => (state, true),
            None => (self.clean_pass(model, data, device, store, key)?, false),
        };
        let runner = Runner {
            model,
            data,
            device,
            eps: self.eps,
            batch_size: self.batch_size,
            seed: self.seed,
            verbose: self.verbose,
            store,
            clock: Clock::start(state.seconds),
        };
        for (si, step) in self.steps.iter().enumerate().skip(state.finished.len()) {
            runner.run(si, step, &mut state, &mut x_adv)?;
        }

        // The final flags from the stored adversarial examples, in another batch split.
        recheck(
            model,
            &x_adv,
            &state,
            data.label_slice(),
            self.batch_size,
            device,
        )?;
        let evaluation = self.evaluation(model, data, &state)?;
        let seconds = runner.clock.total();
        Ok(CascadeOutcome {
            report: self.report(evaluation, state.finished, seconds, resumed, data.len()),
            x_adv,
            robust: state.robust,
        })
    }

    /// At least one attack, a positive batch size, a finite ε >= 0 and some data.
    fn validate(&self, data: &Dataset) -> Result<()> {
        if self.steps.is_empty() {
            return Err(invalid("attacks", "[]", "at least one attack"));
        }
        if self.batch_size == 0 {
            return Err(invalid("batch_size", 0, ">= 1"));
        }
        check("eps", self.eps, Bound::NonNegative)?;
        if data.is_empty() {
            return Err(invalid("data", "no samples", "at least one image"));
        }
        Ok(())
    }

    /// What a saved state must match to be resumed: the model, the images, the attacks with
    /// their settings, ε, the batch size and the seed.
    fn state_key(&self, data: &Dataset) -> Result<StateKey> {
        Ok(StateKey {
            model: self.model_id.clone(),
            data: data_fingerprint(data)?,
            attacks: self.steps.iter().map(|s| s.attack.describe()).collect(),
            eps: self.eps,
            batch_size: self.batch_size,
            seed: self.seed,
        })
    }

    /// The saved state with this key, if any, with the adversarial examples of its finished
    /// batches restored into `x_adv`.
    fn resume(&self, store: Store, key: &StateKey, x_adv: &mut Tensor) -> Result<Option<State>> {
        let Some(state) = store.load(key)? else {
            return Ok(None);
        };
        store.restore_adversarial(&state, x_adv)?;
        if self.verbose {
            eprintln!(
                "autoattack: resuming {} ({} of {} attacks finished)",
                store
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                state.finished.len(),
                self.steps.len()
            );
        }
        Ok(Some(state))
    }

    /// Clean predictions and the initial flags, with the first batch's checks.
    fn clean_pass(
        &self,
        model: &dyn Classifier,
        data: &Dataset,
        device: Device,
        store: Store,
        key: StateKey,
    ) -> Result<State> {
        let t0 = Instant::now();
        let n = data.len();
        let mut warnings = Vec::new();
        let first: Vec<i64> = (0..n.min(self.batch_size) as i64).collect();
        let (x, _) = data.batch(&first, device)?;
        warnings.extend(
            first_batch_checks(model, &x)
                .into_iter()
                .filter(|w| !(self.randomized && w.contains("randomised"))),
        );
        warnings.extend(probability_check(model, &x));
        let logits = clean_logits(model, data, self.batch_size, device)?;
        let clean_pred: Vec<i64> = Vec::try_from(&logits.argmax(-1, false))?;
        warnings.extend(self.notes.iter().cloned());
        let labels = data.label_slice();
        let robust: Vec<bool> = clean_pred.iter().zip(labels).map(|(p, l)| p == l).collect();
        let state = State::new(
            key,
            clean_pred,
            robust,
            warnings,
            t0.elapsed().as_secs_f64(),
        );
        if self.verbose {
            eprintln!(
                "autoattack {}: clean accuracy {:.2}% on {} images",
                self.label,
                100.0 * state.robust_fraction(),
                n
            );
        }
        store.save(&state)?;
        Ok(state)
    }

    /// The final class-wise evaluation (robust = survived every attack), with the warnings
    /// of the run and of Square's check.
    fn evaluation(&self, model: &dyn Classifier, data: &Dataset, state: &State) -> Result<Report> {
        let labels = data.label_slice();
        let mut warnings = state.warnings.clone();
        if let Some(w) = square_check(&state.finished) {
            warnings.push(w);
        }
        let outcomes = Outcomes {
            labels: labels.iter().map(|&l| l as usize).collect(),
            clean_ok: state
                .clean_pred
                .iter()
                .zip(labels)
                .map(|(p, l)| p == l)
                .collect(),
            robust_ok: state.robust.clone(),
            robust_pred: state.adv_pred.iter().map(|&p| p as usize).collect(),
            clean_probs: None,
            steps: None,
            precision: model.precision(),
            all_attacked: false,
        };
        let names: Vec<&str> = self.steps.iter().map(|s| s.name.as_str()).collect();
        summarize(
            format!("autoattack {} ({})", self.label, names.join(", ")),
            self.eps,
            RobustCounting::CleanAndAdversarial,
            data.class_names(),
            outcomes,
            warnings,
        )
    }

    /// The report of a run over `n` images that took `seconds` (over all sessions).
    fn report(
        &self,
        evaluation: Report,
        steps: Vec<StepReport>,
        seconds: f64,
        resumed: bool,
        n: usize,
    ) -> AutoAttackReport {
        AutoAttackReport {
            schema: AUTOATTACK_SCHEMA,
            version: self.label.clone(),
            eps: self.eps,
            batch_size: self.batch_size,
            seed: self.seed,
            clean_per_class: evaluation.clean.per_class.clone(),
            steps,
            evaluation,
            seconds,
            seconds_per_image: seconds / n as f64,
            resumed,
        }
    }
}

/// The model's clean logits [N, K] on `data`, on the CPU, in batches (eval mode).
pub fn clean_logits(
    model: &dyn Classifier,
    data: &Dataset,
    batch_size: usize,
    device: Device,
) -> Result<Tensor> {
    let idx: Vec<i64> = (0..data.len() as i64).collect();
    let mut parts = Vec::new();
    for chunk in idx.chunks(batch_size.max(1)) {
        let (x, _) = data.batch(chunk, device)?;
        parts.push(tch::no_grad(|| model.forward_t(&x, false)).to_device(Device::Cpu));
    }
    Ok(Tensor::cat(&parts, 0))
}
