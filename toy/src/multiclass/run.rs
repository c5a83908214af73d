//! A complete toy run: the toy's [`Backend`] of the shared training driver
//! ([`classwise_core::driver`]) and its hooks (FAWA and EMA averages of the flat parameters,
//! WAT's model selection, the history), then the report.

use classwise_core::average::{Averager, Averaging};
use classwise_core::driver::{
    Backend, Driver, EpochStart, EpochView, Hook, Measurement, NoState, Outcome, Start, Stop, boxed,
};
use classwise_core::select::{EpochScore, Selection, Selector};
use classwise_core::{ClassPlan, ClassRule, ClassStats, Needs};
use classwise_theory::calibration::{AverageAction, wat_validation_costs};

use super::config::RunConfig;
use super::data::Splits;
use super::eval::{ClassEval, evaluate, trades_loss_sums};
use super::model::Linear;
use super::report::{EpochRecord, ModelReport, RunReport, SelectedReport};
use super::train::{EpochRng, EpochStats, Sgd, train_epoch};
use crate::error::{Result, ToyError};
use crate::rng::{stream, stream_id};

/// Stream tags of the epoch loop (data uses 16, init 17).
const TAG_SHUFFLE: u8 = 18;
const TAG_TRAIN_ATTACK: u8 = 19;
const TAG_VAL_ATTACK: u8 = 20;

/// The toy as a driver backend: the linear model, its optimiser, the data, and what the hooks
/// hand over when the run completes ([`Finished`]).
struct Toy<'a> {
    config: &'a RunConfig,
    splits: Splits,
    model: Linear,
    sgd: Sgd,
    finished: Vec<Finished>,
}

/// A hook's part of an epoch's record: FAWA's decision.
enum Part {
    Fawa(AverageAction),
}

/// What a hook hands over when the run completes.
enum Finished {
    /// Every epoch's record.
    History(Vec<EpochRecord>),
    /// The FAWA model and the epochs its gate admitted.
    Fawa(ModelReport, usize),
    Ema(ModelReport),
    /// WAT's selected iterate.
    Selected(SelectedReport),
}

impl Toy<'_> {
    /// The test-set report of flat parameters.
    fn report(&self, params: &[f64]) -> Result<ModelReport> {
        let k = self.config.data.n_classes;
        let model = Linear::from_flat(k, self.config.data.dim(), params.to_vec())?;
        let eval = evaluate(&model, &self.splits.test, self.config.epsilon)?;
        Ok(ModelReport {
            clean: eval.clean.summary(),
            robust: eval.robust.summary(),
            params: params.to_vec(),
        })
    }

    /// Class-wise validation accuracy and errors (every statistic is cheap on the toy).
    fn validate(&self) -> Result<(ClassEval, ClassStats)> {
        let val = evaluate(&self.model, &self.splits.val, self.config.epsilon)?;
        let stats = ClassStats {
            train_robust: Vec::new(),
            val_clean: Some(val.clean.per_class().to_vec()),
            val_robust: Some(val.robust.per_class().to_vec()),
            val_errors: Some(val.errors(&self.splits.val.y)?),
            val_costs: None,
        };
        Ok((val, stats))
    }
}

/// An epoch's measurements: the statistics the rule observes, and the validation and test
/// evaluations the history records.
struct Measured {
    stats: ClassStats,
    val: ClassEval,
    test: ClassEval,
}

impl Measurement for Measured {
    fn stats(&self) -> &ClassStats {
        &self.stats
    }
}

impl Backend for Toy<'_> {
    type Error = ToyError;
    type Trained = EpochStats;
    type Measured = Measured;
    type Record = EpochRecord;
    type Part = Part;
    type Output = Finished;

    /// The whole epoch, unless a stop was asked for before it began (the toy keeps no
    /// checkpoint, so it stops only between epochs).
    fn train_epoch(&mut self, start: &EpochStart<'_>) -> Result<Option<EpochStats>> {
        if start.stop_before(0) {
            return Ok(None);
        }
        let (config, epoch) = (self.config, start.epoch as u64);
        let mut rng = EpochRng {
            shuffle: stream(config.seed, stream_id(TAG_SHUFFLE, 0, epoch)),
            attack: stream(config.seed, stream_id(TAG_TRAIN_ATTACK, 0, epoch)),
        };
        let stats = train_epoch(
            &mut self.model,
            &mut self.sgd,
            &self.splits.train,
            &config.base,
            start.plan,
            &config.attack,
            config.batch_size,
            config.lr_at(start.epoch),
            &mut rng,
        )?;
        Ok(Some(stats))
    }

    fn measure_initial(&mut self, _needs: Needs) -> Result<ClassStats> {
        Ok(self.validate()?.1)
    }

    /// Everything, every epoch: validation accuracy, errors and WAT's costs, and the test set.
    fn measure(&mut self, epoch: usize, trained: &EpochStats, _needs: Needs) -> Result<Measured> {
        let config = self.config;
        let (val_eval, mut stats) = self.validate()?;
        let test = evaluate(&self.model, &self.splits.test, config.epsilon)?;
        let mut cost_rng = stream(config.seed, stream_id(TAG_VAL_ATTACK, 0, epoch as u64));
        let val = &self.splits.val;
        let (ce, kl) = trades_loss_sums(
            &self.model,
            val,
            config.epsilon,
            &config.cost_attack,
            &mut cost_rng,
        )?;
        let n_val = val.len() as f64;
        stats.val_costs = Some(wat_validation_costs(&ce, &kl, config.cost_beta, n_val)?);
        stats.train_robust = trained.train_robust.clone();
        Ok(Measured {
            stats,
            val: val_eval,
            test,
        })
    }

    fn record(
        &mut self,
        epoch: usize,
        plan: ClassPlan,
        trained: EpochStats,
        m: &Measured,
        _rule: &dyn ClassRule,
    ) -> Result<EpochRecord> {
        let measured = |v: &Option<Vec<f64>>| v.clone().unwrap_or_default();
        let (stats, val, test) = (&m.stats, &m.val, &m.test);
        Ok(EpochRecord {
            epoch,
            lr: self.config.lr_at(epoch),
            plan,
            train_loss: trained.mean_loss,
            train_robust: trained.train_robust,
            val_clean: measured(&stats.val_clean),
            val_robust: measured(&stats.val_robust),
            val_worst_robust: val.robust.worst().value,
            val_costs: measured(&stats.val_costs),
            test_clean: test.clean.per_class().to_vec(),
            test_robust: test.robust.per_class().to_vec(),
            fawa: None,
        })
    }

    fn add(&mut self, record: &mut EpochRecord, part: Part) -> Result<()> {
        match part {
            Part::Fawa(action) => record.fawa = Some(action),
        }
        Ok(())
    }

    fn finish(&mut self, outputs: Vec<Finished>) -> Result<()> {
        self.finished = outputs;
        Ok(())
    }
}

/// A weight average of the flat parameters (FAWA or EMA), decided after each epoch.
struct Average {
    averager: Averager,
    /// θ̄, `None` while the average holds nothing.
    params: Option<Vec<f64>>,
}

impl Average {
    fn is_fawa(&self) -> bool {
        matches!(self.averager.averaging, Averaging::Fawa(_))
    }
}

impl Hook<Toy<'_>> for Average {
    type State = NoState;

    fn after_epoch(&mut self, end: &EpochView<'_, Toy<'_>>) -> Result<Vec<Part>> {
        // FAWA's gate reads the validation robust accuracy; EMA ignores it.
        let val_robust = end.stats.val_robust.as_deref();
        let action = self.averager.decide(end.epoch, val_robust)?.action;
        self.params = apply(action, self.params.take(), end.backend.model.params())?;
        Ok(self
            .is_fawa()
            .then_some(Part::Fawa(action))
            .into_iter()
            .collect())
    }

    fn finish(&mut self, toy: &Toy<'_>) -> Result<Vec<Finished>> {
        let Some(params) = &self.params else {
            return Ok(Vec::new());
        };
        let report = toy.report(params)?;
        Ok(vec![match self.is_fawa() {
            true => Finished::Fawa(report, self.averager.state.updates),
            false => Finished::Ema(report),
        }])
    }
}

/// Applies an averaging decision to the averaged flat parameters `avg` (`None` while empty).
fn apply(action: AverageAction, avg: Option<Vec<f64>>, params: &[f64]) -> Result<Option<Vec<f64>>> {
    Ok(match avg {
        Some(a) => Some(action.apply(&a, params)?),
        None if action == AverageAction::Keep => None,
        // Copy, or an average with nothing to average yet (cannot happen: the `Averager` turns
        // it into a copy), starts from the current parameters.
        None => Some(params.to_vec()),
    })
}

/// WAT Algorithm 1's output rule (argmin over epochs of the worst-class validation cost),
/// reported for every method.
struct WatSelection {
    selector: Selector,
    /// The epoch and the flat parameters of the current choice.
    chosen: Option<(usize, Vec<f64>)>,
}

impl Hook<Toy<'_>> for WatSelection {
    type State = NoState;

    fn after_epoch(&mut self, end: &EpochView<'_, Toy<'_>>) -> Result<Vec<Part>> {
        let score = EpochScore {
            avg_plus_worst: None,
            val_costs: end.stats.val_costs.clone(),
        };
        if self.selector.offer(end.epoch, &score)?.keep {
            self.chosen = Some((end.epoch, end.backend.model.to_flat()));
        }
        Ok(Vec::new())
    }

    fn finish(&mut self, toy: &Toy<'_>) -> Result<Vec<Finished>> {
        // The first epoch is always kept (it is the argmin of a one-epoch history).
        let Some((epoch, params)) = &self.chosen else {
            return Err(ToyError::LengthMismatch {
                what: "WAT-selected iterates",
                expected: 1,
                got: 0,
            });
        };
        debug_assert_eq!(self.selector.choose(&[]), Some(*epoch));
        let model = toy.report(params)?;
        let epoch = *epoch;
        Ok(vec![Finished::Selected(SelectedReport { epoch, model })])
    }
}

/// Keeps every epoch's completed record.
#[derive(Default)]
struct History(Vec<EpochRecord>);

impl Hook<Toy<'_>> for History {
    type State = NoState;

    fn on_record(&mut self, _toy: &Toy<'_>, record: &EpochRecord) -> Result<()> {
        self.0.push(record.clone());
        Ok(())
    }

    fn finish(&mut self, _toy: &Toy<'_>) -> Result<Vec<Finished>> {
        Ok(vec![Finished::History(std::mem::take(&mut self.0))])
    }
}

/// Runs one configuration: sample the data, train for `epochs` epochs with the base loss and
/// the class-wise rule, evaluate every epoch, and report (see [`RunReport`]). Deterministic in
/// `config` (single-threaded; every random draw comes from a named stream of `config.seed`).
pub fn run(config: &RunConfig) -> Result<RunReport> {
    run_until(config, Stop::default())
}

/// [`run`], stopping as `stop` says (a signal, or a test's stop point): an interrupted toy run
/// is an error naming the epoch (it keeps no checkpoint to resume from).
pub fn run_until(config: &RunConfig, stop: Stop) -> Result<RunReport> {
    config.validate()?;
    let splits = config.data.sample(config.seed)?;
    let k = config.data.n_classes;
    let model = Linear::init(k, config.data.dim(), config.init_scale, config.seed)?;
    let sgd = Sgd::new(model.n_params(), config.momentum, config.weight_decay);
    let mut toy = Toy {
        config,
        splits,
        model,
        sgd,
        finished: Vec::new(),
    };
    let (fawa, ema) = config.averagers()?;
    let average = |averager| {
        boxed(Average {
            averager,
            params: None,
        })
    };
    let mut hooks: Vec<_> = fawa.into_iter().chain(ema).map(average).collect();
    hooks.push(boxed(WatSelection {
        selector: Selector::new(Selection::Wat, config.epochs)?,
        chosen: None,
    }));
    hooks.push(boxed(History::default()));
    let mut driver = Driver {
        rule: config.rule.build(config.rule_context())?,
        hooks,
        epochs: config.epochs,
        stop_after: None,
        stop,
    };
    if let Outcome::Interrupted { epoch } = driver.run(&mut toy, Start::Fresh)? {
        let signal = classwise_core::interrupt::signal_name().map(str::to_owned);
        return Err(ToyError::Interrupted { epoch, signal });
    }
    report(toy)
}

/// The run's report from the final model and what the hooks handed over.
fn report(mut toy: Toy<'_>) -> Result<RunReport> {
    let config = toy.config;
    let (mut history, mut fawa, mut ema, mut selected) = (Vec::new(), None, None, None);
    for output in std::mem::take(&mut toy.finished) {
        match output {
            Finished::History(h) => history = h,
            Finished::Fawa(r, n) => fawa = Some((r, n)),
            Finished::Ema(r) => ema = Some(r),
            Finished::Selected(s) => selected = Some(s),
        }
    }
    let selected = selected.ok_or(ToyError::LengthMismatch {
        what: "WAT-selected iterates",
        expected: 1,
        got: 0,
    })?;
    let (fawa, fawa_accepted) = fawa.map_or((None, 0), |(r, n)| (Some(r), n));
    Ok(RunReport {
        config: config.clone(),
        label: format!("{}/{}", config.rule.name(), config.base.name()),
        final_model: toy.report(toy.model.params())?,
        history,
        fawa,
        fawa_accepted,
        ema,
        selected,
    })
}
