//! AutoAttack (Croce & Hein 2020), class by class: the cascade of
//! `fra31/auto-attack:autoattack/autoattack.py` over a data set.
//!
//! * Versions ([`Version`]): `standard` = APGD-CE, APGD-T (9 targets), FAB-T (9 targets),
//!   Square (5,000 queries); `plus` = APGD-CE and APGD-DLR with 5 restarts, FAB with 5
//!   restarts, Square, APGD-T, FAB-T; `rand` = APGD-CE and APGD-DLR with EOT over 20 forwards.
//!   A custom list takes the `standard` settings of each attack (1 restart).
//! * The cascade: a point misclassified clean is not robust and is never attacked; each attack
//!   runs only on the points still robust, in batches; a point is robust iff it survives all.
//!   The result keeps per-sample flags and predictions, the robust accuracy per class after each
//!   attack (a class × attack table) and the time each attack took.
//! * Checks, as AutoAttack's `checks.py`: randomised forwards and batch-size dependence on the
//!   first batch (not for `rand`), probabilities instead of logits, too few classes for the DLR
//!   losses, zero gradients at APGD's start, Square breaking points the white-box attacks did not.
//!   Every adversarial example is checked to be in the ε-ball and [0, 1], and the final flags are
//!   recomputed from the stored adversarial examples in another batch split.
//! * Resumable: with a state directory, the flags, the finished attacks and the finished
//!   batches of the current attack are saved atomically after every batch (the adversarial
//!   examples of a batch in their own file), so a killed evaluation continues from its last
//!   finished batch. Each batch's random draws come from its own seed (evaluation seed, attack,
//!   batch), so a resumed evaluation gives the result an uninterrupted one would.
//!
//! The parts: `spec` (which attacks, with which settings), `cascade` (the run: clean pass, the
//! attacks in order, the final recheck), `step` (one attack over the points still robust, batch
//! by batch), `state` (the saved state that makes a run resumable), `checks` (AutoAttack's
//! sanity checks) and `report` (the class × attack table).

mod cascade;
mod checks;
mod report;
mod spec;
mod state;
mod step;

pub use cascade::{Cascade, CascadeOutcome, clean_logits};
pub use report::{AutoAttackReport, StepReport, markdown};
pub use spec::{AaAttack, AutoAttackSpec, Version};
pub use step::Step;
