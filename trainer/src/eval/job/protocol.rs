//! `classwise eval --protocol`: the source's protocol (a run's `[[eval.protocol]]`) into one
//! report; AutoAttack entries resume from `<out dir>/<report stem>.partial/entry-<i>/`.

use classwise_core::name::slug;

use crate::error::{Result, invalid};
use crate::eval::protocol::{self, ProtocolOptions};
use crate::eval::{RobustCounting, Subject};

use super::{
    EvalOutput, EvalRequest, lay_out, remove_partial, stem_parts, test_subset, write_report,
};

/// Runs the protocol on the request's model.
pub(super) fn run(
    request: &EvalRequest,
    mut subject: Subject,
    autoattack_batch_size: usize,
) -> Result<EvalOutput> {
    if subject.settings.protocol.is_empty() {
        return Err(invalid(
            subject.origin.display().to_string(),
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
    lay_out(&mut subject, request, None)?;
    let (test, _) = test_subset(request, &subject)?;
    let (checkpoint, subset) = stem_parts(request, &subject);
    let settings = &subject.settings; // with the request's eps applied
    let stem = format!(
        "eval-{checkpoint}-protocol-eps_{}{subset}",
        slug(&settings.eps.text)
    );
    let partial = subject.out_dir.join(format!("{stem}.partial"));
    let opts = ProtocolOptions {
        default_eps: &settings.eps,
        batch_size: settings.protocol_batch_size,
        autoattack_batch_size,
        seed: settings.seed as u64,
        state_dir: Some(&partial),
        model_id: subject.model.fingerprint()?,
        verbose: true,
    };
    let (model, device) = (&subject.model, subject.device);
    let report = protocol::run(model, &test, &settings.protocol, &opts, device)?;
    let text = protocol::markdown(&report);
    let written = write_report(&subject.out_dir, &stem, "protocol report", &report, text)?;
    remove_partial(&partial)?;
    Ok(written)
}
