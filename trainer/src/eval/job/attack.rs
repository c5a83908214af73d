//! `classwise eval [--attack pgd|fgsm|fgsm-rs|cw|temperature|flip-steps]`: a model under its
//! source's evaluation attack or another, class by class.

use crate::attack::{EarlyStoppedPgd, Pgd, StepSize};
use crate::error::{Result, invalid};
use crate::eval::{Subject, evaluate_on, evaluate_with, markdown, write_predictions};

use super::{EvalOutput, EvalRequest, file_stem, lay_out, test_subset, write_report};

/// The attack of an evaluation; `steps` and `step` (default ε/4, ε for FGSM-RS) where the
/// attack takes them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AttackChoice {
    /// The source's own evaluation attack.
    Configured,
    /// PGD on cross-entropy with a uniform start.
    Pgd { steps: usize, step: Option<f64> },
    /// One step of size ε from the clean input.
    Fgsm,
    /// FGSM from a uniform random start in the ε-ball, one step (Tian et al., App. A.2).
    FgsmRs { step: Option<f64> },
    /// PGD on the CW∞ margin (κ = 50).
    Cw { steps: usize, step: Option<f64> },
    /// Tian et al.'s Temperature-PGD with 1/T = `inv_t`.
    Temperature {
        steps: usize,
        step: Option<f64>,
        inv_t: f64,
    },
    /// PGD that stops each image at its first misclassification and reports the steps each
    /// class needed (BAT §3, Fig. 2).
    FlipSteps { steps: usize, step: Option<f64> },
}

impl AttackChoice {
    /// The PGD-family attack replacing the configured one (`None`: the configured one).
    fn pgd(self, eps: f64) -> Option<Pgd> {
        let default = |step: Option<f64>| step.unwrap_or(eps / 4.0);
        Some(match self {
            AttackChoice::Configured | AttackChoice::FlipSteps { .. } => return None,
            AttackChoice::Pgd { steps, step } => Pgd::ce(steps, default(step)),
            AttackChoice::Fgsm => Pgd::fgsm(),
            AttackChoice::FgsmRs { step: None } => Pgd::fgsm_random_start(1.0),
            AttackChoice::FgsmRs { step: Some(s) } => Pgd {
                step: StepSize::Absolute(s),
                ..Pgd::fgsm_random_start(1.0)
            },
            AttackChoice::Cw { steps, step } => Pgd::cw(steps, default(step)),
            AttackChoice::Temperature { steps, step, inv_t } => {
                Pgd::temperature(steps, default(step), inv_t)
            }
        })
    }

    /// BAT's steps-to-flip attack, for [`AttackChoice::FlipSteps`].
    fn flip(self, eps: f64) -> Result<Option<EarlyStoppedPgd>> {
        let AttackChoice::FlipSteps { steps, step } = self else {
            return Ok(None);
        };
        let flip = EarlyStoppedPgd::steps_to_flip(steps, step.unwrap_or(eps / 4.0));
        flip.validate()
            .map_err(|e| invalid("--steps or --step", e, "a valid steps-to-flip attack"))?;
        Ok(Some(flip))
    }
}

/// Evaluates the request's model with `choice` on the test subset.
pub(super) fn run(
    request: &EvalRequest,
    mut subject: Subject,
    choice: &AttackChoice,
) -> Result<EvalOutput> {
    let settings = &mut subject.settings;
    if let Some(attack) = choice.pgd(settings.eps.value) {
        settings.attack = attack;
    }
    (settings.attack.validate()).map_err(|e| e.in_section("eval"))?;
    let flip = choice.flip(settings.eps.value)?;
    lay_out(&mut subject, request, None)?;
    let (test, _) = test_subset(request, &subject)?;
    let (model, settings, device) = (&subject.model, &subject.settings, subject.device);
    let report = crate::seed::seeded(settings.seed, || match &flip {
        Some(f) => evaluate_with(model, &test, settings, f, device),
        None => evaluate_on(model, &test, settings, device),
    })?;
    let stem = file_stem(request, &subject, &report.attack);
    let text = markdown(&report);
    let out = write_report(&subject.out_dir, &stem, "evaluation", &report, text)?;
    write_predictions(&report, &out.json_path)?;
    Ok(out)
}
