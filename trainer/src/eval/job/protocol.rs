//! `classwise eval --protocol`: the configuration's `[[eval.protocol]]` into one report;
//! AutoAttack entries resume from `<run>/<report stem>.partial/entry-<i>/`.

use classwise_core::name::slug;

use crate::error::{Result, invalid};
use crate::eval::RobustCounting;
use crate::eval::protocol::{self, ProtocolOptions};
use crate::run::{RunConfig, RunDir, report_seed};

use super::{
    EvalOutput, EvalRequest, load_eval_model, remove_partial, stem_parts, test_subset, write_report,
};

/// Runs the protocol on the request's model.
pub(super) fn run(
    request: &EvalRequest,
    dir: &RunDir,
    config: &RunConfig,
    autoattack_batch_size: usize,
) -> Result<EvalOutput> {
    if config.eval.protocol.is_empty() {
        return Err(invalid(
            dir.config().display().to_string(),
            "no [[eval.protocol]] entries",
            "the paper's final evaluation listed there, e.g. attack = \"autoattack\" (see the \
             presets in configs/)",
        ));
    }
    if request.robust_counting == Some(RobustCounting::AdversarialOnly) {
        return Err(invalid(
            "--robust-counting",
            "adversarial-only",
            "clean-and-adversarial: the protocol counts robust points as AutoAttack does",
        ));
    }
    let eps = &config.eval.eps; // with the request's eps applied
    let device = config.device.device()?;
    let format = request.memory_format.unwrap_or(config.memory_format);
    let model = load_eval_model(dir, &request.checkpoint, device, format)?;
    let (test, _) = test_subset(request, config)?;
    let (checkpoint, subset) = stem_parts(request);
    let stem = format!("eval-{checkpoint}-protocol-eps_{}{subset}", slug(&eps.text));
    let partial = dir.0.join(format!("{stem}.partial"));
    let opts = ProtocolOptions {
        default_eps: eps,
        batch_size: config.batch_size,
        autoattack_batch_size,
        seed: report_seed(config) as u64,
        state_dir: Some(&partial),
        model_id: model.fingerprint()?,
        verbose: true,
    };
    let report = protocol::run(&model, &test, &config.eval.protocol, &opts, device)?;
    let text = protocol::markdown(&report);
    let written = write_report(dir, &stem, "protocol report", &report, text)?;
    remove_partial(&partial)?;
    Ok(written)
}
