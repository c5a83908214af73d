//! Early-stopped PGD: FAT's friendly adversarial examples (Zhang et al. 2020) and BAT's boundary
//! pairs (BAT Algorithm 1).
//!
//! Before each of at most `steps` ascent steps the batch is classified at the current iterate.
//! Each sample has a budget `control` = τ of steps it may still take once misclassified:
//!
//! * [`EarlyStopVariant::Original`] (Zhang et al.): a misclassified sample with budget 0 is
//!   frozen for good; a misclassified sample with budget left spends one and steps; a correct
//!   sample steps.
//! * [`EarlyStopVariant::CfaRepo`] (`PKU-ML/CFA` `fat_loss`): a sample steps iff its budget is
//!   positive, and spends one when misclassified; a sample whose budget reached 0 never steps
//!   again, whatever its prediction.
//!
//! BAT is τ = 0 with the original rule and the TRADES KL loss: a sample stops at its first
//! misclassification. Every run also returns the **boundary pair**: `last_correct` (x_c, the last
//! iterate classified correctly at a check that was followed by a step) and `first_wrong` (x_a,
//! the iterate that step produced). A sample misclassified at its start keeps x_c = x_a = x; a
//! sample never misclassified ends with x_c = the iterate after `steps − 1` steps and x_a = after
//! `steps` (BAT Algorithm 1, lines 3-14).

use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::loss::AttackLoss;
use super::pgd::{Ascent, Start, StepSize, validate_common};
use super::{Attack, AttackInput, StepCounts, project, row_shape};
use crate::error::{Result, invalid};
use crate::model::Classifier;

/// Which early-stopping rule (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EarlyStopVariant {
    Original,
    CfaRepo,
}

/// Early-stopped PGD.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EarlyStoppedPgd {
    /// At most this many steps (K).
    pub steps: usize,
    pub step: StepSize,
    pub start: Start,
    pub loss: AttackLoss,
    /// τ: steps a sample may take after being found misclassified.
    pub tau: usize,
    pub variant: EarlyStopVariant,
    /// ω: the standard deviation of the Gaussian noise added at every step before the
    /// projection (0.001 in the original FAT code, `zjfheart/Friendly-Adversarial-Training`;
    /// 0, none, in CFA's).
    #[serde(default)]
    pub step_noise: f64,
}

/// The result of [`EarlyStoppedPgd::run`].
#[derive(Debug)]
pub struct EarlyStopped {
    /// The emitted (friendly) examples.
    pub x_adv: Tensor,
    /// Ascent steps each sample took (int64, [N]).
    pub steps_taken: Tensor,
    /// x_c: the last iterate found correct before a step (x when none).
    pub last_correct: Tensor,
    /// x_a: the iterate that step produced (x when none).
    pub first_wrong: Tensor,
}

impl EarlyStoppedPgd {
    /// FAT as run in the CFA repository: τ = 3, K = 10, step 2/255, uniform start, CE.
    pub fn fat_cfa(tau: usize, steps: usize, step: f64) -> Self {
        EarlyStoppedPgd {
            steps,
            step: StepSize::Absolute(step),
            start: Start::Uniform,
            loss: AttackLoss::CrossEntropy,
            tau,
            variant: EarlyStopVariant::CfaRepo,
            step_noise: 0.0,
        }
    }

    /// BAT's boundary examples: TRADES KL from x + 0.001·N(0, I), stop at the first
    /// misclassification (BAT Algorithm 1; the paper gives no ξ, 0.001 is inferred from the
    /// TRADES start).
    pub fn bat(steps: usize, step: f64) -> Self {
        EarlyStoppedPgd {
            steps,
            step: StepSize::Absolute(step),
            start: Start::Normal { std: 0.001 },
            loss: AttackLoss::TradesKl,
            tau: 0,
            variant: EarlyStopVariant::Original,
            step_noise: 0.0,
        }
    }

    /// The attack that counts BAT's source-class steps (BAT §3, Fig. 2: untargeted PGD of many
    /// small steps, 1000 of 0.4/255 at ε = 8/255): PGD on CE from a uniform start that stops each
    /// sample at its first misclassification, so that its steps taken are the steps it needed.
    pub fn steps_to_flip(steps: usize, step: f64) -> Self {
        EarlyStoppedPgd {
            steps,
            step: StepSize::Absolute(step),
            start: Start::Uniform,
            loss: AttackLoss::CrossEntropy,
            tau: 0,
            variant: EarlyStopVariant::Original,
            step_noise: 0.0,
        }
    }

    /// Checks the settings; errors name `attack.<field>`.
    pub fn validate(&self) -> Result<()> {
        if self.steps == 0 {
            return Err(invalid("attack.steps", 0, ">= 1"));
        }
        if !(self.step_noise.is_finite() && self.step_noise >= 0.0) {
            return Err(invalid(
                "attack.step_noise",
                self.step_noise,
                "finite and >= 0",
            ));
        }
        validate_common(self.step, self.start, self.loss)
    }

    /// Runs the attack.
    pub fn run(&self, model: &dyn Classifier, input: &AttackInput<'_>) -> Result<EarlyStopped> {
        self.validate()?;
        let ascent = Ascent::new(model, input, self.step, self.loss)?;
        let x = input.x;
        let n = x.size()[0];
        let dev = x.device();
        let mut x_adv = ascent.start(self.start);
        let mut control = Tensor::full([n], self.tau as i64, (Kind::Int64, dev));
        let mut frozen = Tensor::zeros([n], (Kind::Bool, dev));
        let mut steps_taken = Tensor::zeros([n], (Kind::Int64, dev));
        let mut last_correct = x.copy();
        let mut first_wrong = x.copy();
        let rows = |mask: &Tensor| mask.view(row_shape(x.dim()).as_slice());
        for _ in 0..self.steps {
            let correct = tch::no_grad(|| {
                model
                    .forward_t(&x_adv, input.train)
                    .argmax(-1, false)
                    .eq_tensor(input.y)
            });
            let wrong = correct.logical_not();
            let has_budget = control.gt(0);
            let stepping = match self.variant {
                EarlyStopVariant::CfaRepo => has_budget.copy(),
                EarlyStopVariant::Original => {
                    frozen = frozen.logical_or(&wrong.logical_and(&has_budget.logical_not()));
                    frozen.logical_not()
                }
            };
            control = &control - wrong.logical_and(&has_budget).to_kind(Kind::Int64);
            if !bool::try_from(stepping.any())? {
                break;
            }
            let stepped = ascent.noisy_step(&x_adv, self.step_noise)?;
            tch::no_grad(|| {
                let at_boundary = rows(&stepping.logical_and(&correct));
                last_correct = last_correct.where_self(&at_boundary.logical_not(), &x_adv);
                first_wrong = first_wrong.where_self(&at_boundary.logical_not(), &stepped);
                x_adv = stepped.where_self(&rows(&stepping), &x_adv);
            });
            steps_taken += stepping.to_kind(Kind::Int64);
        }
        let x_adv = tch::no_grad(|| project(&x_adv, x, &ascent.eps));
        let run = EarlyStopped {
            x_adv,
            steps_taken,
            last_correct,
            first_wrong,
        };
        capture(&run);
        Ok(run)
    }
}

impl EarlyStopped {
    /// A detached copy sharing no storage with `self`.
    pub fn copy(&self) -> EarlyStopped {
        let copy = |t: &Tensor| t.detach().copy();
        EarlyStopped {
            x_adv: copy(&self.x_adv),
            steps_taken: copy(&self.steps_taken),
            last_correct: copy(&self.last_correct),
            first_wrong: copy(&self.first_wrong),
        }
    }
}

thread_local! {
    /// While [`capturing_early_stopped`] runs: copies of the runs of this thread's
    /// early-stopped attacks, in order.
    static CAPTURED: std::cell::RefCell<Option<Vec<EarlyStopped>>> =
        const { std::cell::RefCell::new(None) };
}

/// Keeps a copy of `run` while [`capturing_early_stopped`] runs on this thread (otherwise one
/// thread-local check, nothing copied).
fn capture(run: &EarlyStopped) {
    CAPTURED.with(|c| {
        if let Some(runs) = c.borrow_mut().as_mut() {
            runs.push(run.copy());
        }
    });
}

/// Runs `f` and returns, with its result, copies of every [`EarlyStoppedPgd::run`] made on this
/// thread meanwhile (FAT's friendly x̃, BAT's boundary pairs, with their steps). For the step
/// cross-check (`tools/crosscheck/STEP_FORMAT.md`), as `capturing_adversarial` in the
/// objectives; training never calls it.
pub fn capturing_early_stopped<T>(f: impl FnOnce() -> T) -> (T, Vec<EarlyStopped>) {
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let out = f();
    let runs = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (out, runs)
}

impl Attack for EarlyStoppedPgd {
    fn describe(&self) -> String {
        format!(
            "early-stopped-pgd-{} {} tau {} {:?}",
            self.steps,
            self.loss.name(),
            self.tau,
            self.variant
        )
    }

    fn perturb(&self, model: &dyn Classifier, input: &AttackInput<'_>) -> Result<Tensor> {
        Ok(self.run(model, input)?.x_adv)
    }

    /// With τ = 0 and the original rule a sample stops at its first misclassification, so its
    /// steps taken are the steps it needed; with τ > 0 they include the extra steps.
    fn perturb_with_steps(
        &self,
        model: &dyn Classifier,
        input: &AttackInput<'_>,
    ) -> Result<(Tensor, Option<StepCounts>)> {
        let r = self.run(model, input)?;
        Ok((
            r.x_adv,
            Some(StepCounts {
                taken: r.steps_taken,
                max: self.steps,
            }),
        ))
    }
}
