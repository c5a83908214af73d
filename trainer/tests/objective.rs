//! The training objectives on fixed, parameter-free models whose adversarial points are known in
//! closed form: each loss is recomputed by hand in f64 from the logits (MART, TRADES with both
//! scalings, FAT's early-stopped examples and dynamic τ, BAT's boundary pairs and uniform-KL
//! terms with its ablations, PGD-AT with class-wise ε), with
//! class-wise β and weights that differ per class.
//!
//! Every model records the inputs it is forwarded (and the mode), so the adversarial examples
//! an objective trains on can be checked as well as its loss.

use std::sync::Mutex;

use classwise_trainer::attack::{
    AttackInput, AttackLoss, Budget, EarlyStopVariant, EarlyStoppedPgd, Pgd, Start, StepSize,
};
use classwise_trainer::model::Classifier;
use classwise_trainer::seed::seeded;
use classwise_trainer::train::{
    Bat, BatPoint, BatSource, ClassPlan, DevicePlan, Fat, Mart, Method, Objective, PgdAt,
    StepContext, Trades, TradesScaling,
};
use tch::nn::ModuleT;
use tch::{Device, Kind, Tensor};

// ---------------------------------------------------------------------------------------------
// Fixed models and f64 arithmetic.

type Forward = Box<dyn Fn(&Tensor) -> Tensor + Send>;

/// A parameter-free model that records every input (detached copy) and mode it is forwarded.
struct Fixed {
    forward: Forward,
    seen: Mutex<Vec<(Tensor, bool)>>,
}

impl std::fmt::Debug for Fixed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fixed")
    }
}

impl ModuleT for Fixed {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        self.seen.lock().unwrap().push((xs.detach().copy(), train));
        (self.forward)(xs)
    }
}

impl Classifier for Fixed {}

impl Fixed {
    fn new(forward: impl Fn(&Tensor) -> Tensor + Send + 'static) -> Self {
        Fixed {
            forward: Box::new(forward),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// The forwards recorded so far (and forgets them).
    fn take(&self) -> Vec<(Tensor, bool)> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

fn f32s(v: &[f64]) -> Tensor {
    Tensor::from_slice(v).to_kind(Kind::Float)
}

/// A batch [N, d] of f32 inputs.
fn batch(rows: &[&[f64]]) -> Tensor {
    let d = rows[0].len() as i64;
    let flat: Vec<f64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    f32s(&flat).view([-1, d])
}

fn labels(y: &[usize]) -> Tensor {
    Tensor::from_slice(&y.iter().map(|&k| k as i64).collect::<Vec<_>>())
}

/// The rows of a 2-D tensor as f64.
fn rows(t: &Tensor) -> Vec<Vec<f64>> {
    let d = t.size()[1] as usize;
    let flat = Vec::<f64>::try_from(&t.to_kind(Kind::Double).flatten(0, -1)).unwrap();
    flat.chunks(d).map(<[f64]>::to_vec).collect()
}

fn softmax(z: &[f64]) -> Vec<f64> {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// −log softmax(z)_y.
fn cross_entropy(z: &[f64], y: usize) -> f64 {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + z.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
    lse - z[y]
}

/// Σ_k p_k (log p_k − log(q_k + floor)).
fn kl(p: &[f64], q: &[f64], floor: f64) -> f64 {
    p.iter()
        .zip(q)
        .map(|(pk, qk)| pk * (pk.ln() - (qk + floor).ln()))
        .sum()
}

fn argmax(z: &[f64]) -> usize {
    (0..z.len()).fold(0, |best, k| if z[k] > z[best] { k } else { best })
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[track_caller]
fn assert_close(actual: f64, expected: f64, tol: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tol * (1.0 + expected.abs()),
        "{what}: {actual} vs {expected} by hand"
    );
}

fn loss_of(
    method: &Method,
    model: &Fixed,
    x: &Tensor,
    y: &Tensor,
    plan: &ClassPlan,
    epoch: usize,
    seed: i64,
) -> (f64, Vec<bool>) {
    let plan = &DevicePlan::new(plan, Device::Cpu).unwrap();
    let out = seeded(seed, || {
        method
            .loss(model, x, y, StepContext { plan, epoch })
            .unwrap()
    });
    (
        out.loss.double_value(&[]),
        Vec::<bool>::try_from(&out.predicted.eq_tensor(y)).unwrap(),
    )
}

/// The per-sample steps of the training attack that `method`'s loss reports.
fn steps_of(
    method: &Method,
    model: &Fixed,
    (x, y): (&Tensor, &Tensor),
    plan: &ClassPlan,
    epoch: usize,
) -> Option<Vec<i64>> {
    let plan = &DevicePlan::new(plan, Device::Cpu).unwrap();
    let out = method
        .loss(model, x, y, StepContext { plan, epoch })
        .unwrap();
    out.steps.map(|s| Vec::try_from(&s).unwrap())
}

// ---------------------------------------------------------------------------------------------
// The diagonal model: z_k = s_k·x_k + b_k, three classes, three input coordinates.
//
// With s_k > 0, ∂CE(f(x'), y)/∂x'_k = s_k·(p'_k − [k = y]) is negative for k = y and positive
// for k ≠ y wherever x' is, so sign-PGD on CE moves coordinate y down and the others up until
// the ball or [0, 1] stops them: from any start, once steps·α covers the distance, x' is the
// vertex x'_y = max(x_y − ε, 0), x'_k = min(x_k + ε, 1).

const S: [f64; 3] = [2.0, 3.0, 4.0];
const B: [f64; 3] = [0.5, 0.0, -0.25];

fn diagonal() -> Fixed {
    Fixed::new(|x| x * f32s(&S) + f32s(&B))
}

fn diagonal_logits(x: &[f64]) -> Vec<f64> {
    (0..3).map(|k| S[k] * x[k] + B[k]).collect()
}

/// The CE worst case of the diagonal model in the ε-ball around x (see above).
fn diagonal_vertex(x: &[f64], y: usize, eps: f64) -> Vec<f64> {
    (0..3)
        .map(|k| {
            if k == y {
                (x[k] - eps).max(0.0)
            } else {
                (x[k] + eps).min(1.0)
            }
        })
        .collect()
}

/// Dyadic inputs (exact in f32); sample 3 is clipped by [0, 1] on both sides.
const DIAG_X: [[f64; 3]; 5] = [
    [0.5, 0.25, 0.75],
    [0.125, 0.625, 0.375],
    [0.875, 0.5, 0.25],
    [0.0625, 0.9375, 0.5],
    [0.25, 0.375, 0.625],
];
const DIAG_Y: [usize; 5] = [0, 1, 2, 0, 2];
const DIAG_EPS: [f64; 3] = [0.125, 0.25, 0.0625];

fn diagonal_batch() -> (Tensor, Tensor) {
    let rows: Vec<&[f64]> = DIAG_X.iter().map(|r| r.as_slice()).collect();
    (batch(&rows), labels(&DIAG_Y))
}

// ---------------------------------------------------------------------------------------------
// MART.

/// MART (Wang et al. 2020, as `mart_loss` in `YisenWang/MART:mart.py` computes it) with the
/// plan's class-wise β and weights: per sample
///
/// ```text
/// natural_weight[y]·[CE(f(x'), y) − log(1.0001 − p'_ŷ + 1e-12)]
///   + boundary_weight[y]·β_y·KL(p ‖ p')·(1.0000001 − p_y)
/// ```
///
/// with the KL taken with log(p' + 1e-12) and ŷ = argmax_{k≠y} p'_k, averaged over the batch.
/// x' is the closed-form vertex of the diagonal model at ε_{y_i}, reached by MART's attack
/// (CE-PGD from x + 0.001·N).
#[test]
fn mart_loss_matches_the_hand_computed_formula() {
    let model = diagonal();
    let (x, y) = diagonal_batch();
    let plan = ClassPlan {
        eps: DIAG_EPS.to_vec(),
        beta: vec![6.0, 2.0, 4.0],
        natural_weight: vec![1.0, 0.5, 2.0],
        boundary_weight: vec![1.5, 1.0, 0.25],
        step_size: None,
    };
    let mart = Method::Mart(Mart {
        attack: Pgd {
            steps: 10,
            step: StepSize::Absolute(0.05),
            start: Start::Normal { std: 0.001 },
            loss: AttackLoss::CrossEntropy,
        },
    });

    let mut per_sample = Vec::new();
    let mut correct = Vec::new();
    let mut y_hats = Vec::new();
    for (xi, &yi) in DIAG_X.iter().zip(&DIAG_Y) {
        let x_adv = diagonal_vertex(xi, yi, plan.eps[yi]);
        let (z, z_adv) = (diagonal_logits(xi), diagonal_logits(&x_adv));
        let (p, p_adv) = (softmax(&z), softmax(&z_adv));
        let y_hat = (0..3)
            .filter(|&k| k != yi)
            .fold(None, |best: Option<usize>, k| match best {
                Some(b) if p_adv[b] >= p_adv[k] => Some(b),
                _ => Some(k),
            })
            .unwrap();
        y_hats.push(y_hat);
        let bce = cross_entropy(&z_adv, yi) - (1.0001 - p_adv[y_hat] + 1e-12).ln();
        let robust = kl(&p, &p_adv, 1e-12) * (1.0000001 - p[yi]);
        per_sample.push(
            plan.natural_weight[yi] * bce + plan.boundary_weight[yi] * plan.beta[yi] * robust,
        );
        correct.push(argmax(&z_adv) == yi);
    }
    // The example exercises both cases of ŷ (the most likely class under attack is y itself, or
    // a wrong class) and both outcomes of the attack.
    assert_eq!(y_hats, [2, 2, 0, 1, 1]);
    assert_eq!(correct, [false, false, false, false, true]);

    let (loss, got_correct) = loss_of(&mart, &model, &x, &y, &plan, 0, 1);
    assert_close(loss, mean(&per_sample), 1e-5, "MART loss");
    assert_eq!(got_correct, correct);

    // The attack ran in eval mode; the two loss forwards (x, then x') in train mode, and x' is
    // the vertex.
    let seen = model.take();
    let (attack, loss_forwards) = seen.split_at(seen.len() - 2);
    assert_eq!(attack.len(), 10);
    assert!(attack.iter().all(|(_, train)| !train));
    assert!(loss_forwards.iter().all(|(_, train)| *train));
    assert_eq!(rows(&loss_forwards[0].0), DIAG_X.map(|r| r.to_vec()));
    for (i, got) in rows(&loss_forwards[1].0).iter().enumerate() {
        let want = diagonal_vertex(&DIAG_X[i], DIAG_Y[i], plan.eps[DIAG_Y[i]]);
        for (g, w) in got.iter().zip(&want) {
            assert_close(*g, *w, 1e-6, &format!("MART x' of sample {i}"));
        }
    }

    // Each sample alone: the per-sample value, so no class's weights can hide in the mean.
    for (i, want) in per_sample.iter().enumerate() {
        let (xi, yi) = (x.narrow(0, i as i64, 1), y.narrow(0, i as i64, 1));
        let (loss, _) = loss_of(&mart, &model, &xi, &yi, &plan, 0, 2);
        assert_close(loss, *want, 1e-5, &format!("MART loss of sample {i}"));
    }
}

// ---------------------------------------------------------------------------------------------
// TRADES.

/// TRADES' attack maximises KL(p(x) ‖ p(x')), which is flat at x' = x, so its direction depends
/// on the start noise; this model makes the result independent of it: one input coordinate u
/// enters through |u − 1/2| (with every clean u = 1/2 the KL is a convex function of |u' − 1/2|
/// with its minimum at 0, so the attack ends at |u' − 1/2| = ε on whichever side), and a second
/// coordinate v enters through round(4v)/4, which varies the clean logits per sample but has a
/// zero gradient, so the attack leaves v within the start noise and round(4v') = round(4v).
const TW: [f64; 3] = [1.5, -1.0, 1.75];
const TM: [f64; 3] = [1.0, -0.5, 2.0];
const TB: [f64; 3] = [0.25, 0.75, -0.5];

fn folded() -> Fixed {
    Fixed::new(|x| {
        let u = x.narrow(1, 0, 1);
        let v = x.narrow(1, 1, 1);
        (u - 0.5).abs() * f32s(&TW) + (v * 4.0).round() / 4.0 * f32s(&TM) + f32s(&TB)
    })
}

fn folded_logits(fold: f64, v: f64) -> Vec<f64> {
    (0..3)
        .map(|k| TW[k] * fold + TM[k] * (4.0 * v).round() / 4.0 + TB[k])
        .collect()
}

/// TRADES (Zhang et al. 2019) with class-wise β (CFA eqs. (7)-(8)): per sample
/// natural_weight[y]·a(β_y)·CE(f(x), y) + boundary_weight[y]·b(β_y)·KL(p(x) ‖ p(x')), with
/// (a, b) = (1, β) in the paper's scaling and (1/(1 + β), β/(1 + β)) in the reference one
/// (`PKU-ML/CFA:attack.py` `trades_loss`, (1 − β')·CE + β'·KL with β' = β/(1 + β)), averaged over
/// the batch; x' from TRADES' KL attack (`yaodongyu/TRADES:trades.py`) at ε_{y_i}.
#[test]
fn trades_loss_weights_each_class_as_computed_by_hand() {
    let model = folded();
    let vs = [0.25, 0.5, 0.75, 1.0, 0.0];
    let ys = [0usize, 1, 2, 1, 2];
    let rows_x: Vec<[f64; 2]> = vs.iter().map(|&v| [0.5, v]).collect();
    let x = batch(&rows_x.iter().map(|r| r.as_slice()).collect::<Vec<_>>());
    let y = labels(&ys);
    let plan = ClassPlan {
        eps: vec![0.125, 0.25, 0.375],
        beta: vec![6.0, 1.0, 3.0],
        natural_weight: vec![1.0, 2.0, 0.5],
        boundary_weight: vec![0.5, 1.0, 2.0],
        step_size: None,
    };
    for (scaling, seed) in [(TradesScaling::Paper, 3), (TradesScaling::Reference, 4)] {
        let trades = Method::Trades(Trades {
            attack: Pgd::trades(10, 0.05),
            scaling,
            second_clean_forward: false,
        });
        let mut per_sample = Vec::new();
        let mut correct = Vec::new();
        for (&v, &yi) in vs.iter().zip(&ys) {
            let z = folded_logits(0.0, v);
            let z_adv = folded_logits(plan.eps[yi], v);
            let beta = plan.beta[yi];
            let (a, b) = match scaling {
                TradesScaling::Paper => (1.0, beta),
                TradesScaling::Reference => (1.0 / (1.0 + beta), beta / (1.0 + beta)),
            };
            per_sample.push(
                plan.natural_weight[yi] * a * cross_entropy(&z, yi)
                    + plan.boundary_weight[yi] * b * kl(&softmax(&z), &softmax(&z_adv), 0.0),
            );
            correct.push(argmax(&z_adv) == yi);
        }
        let (loss, got_correct) = loss_of(&trades, &model, &x, &y, &plan, 0, seed);
        assert_close(loss, mean(&per_sample), 1e-5, &format!("{scaling:?} loss"));
        assert_eq!(got_correct, correct, "{scaling:?}");

        // The attack in eval mode; x' at |u' − 1/2| = ε_{y_i}, v' within the start noise.
        let seen = model.take();
        let (attack, loss_forwards) = seen.split_at(seen.len() - 2);
        assert!(attack.iter().all(|(_, train)| !train));
        assert!(loss_forwards.iter().all(|(_, train)| *train));
        for (i, r) in rows(&loss_forwards[1].0).iter().enumerate() {
            assert_close((r[0] - 0.5).abs(), plan.eps[ys[i]], 1e-6, "|u' − 1/2|");
            assert!((r[1] - vs[i]).abs() < 0.01, "v' of sample {i}: {}", r[1]);
        }
    }
    // The example is not degenerate: correctness under attack varies across samples.
    let correct: Vec<bool> = vs
        .iter()
        .zip(&ys)
        .map(|(&v, &yi)| argmax(&folded_logits(plan.eps[yi], v)) == yi)
        .collect();
    assert!(
        correct.contains(&true) && correct.contains(&false),
        "{correct:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// FAT.

/// One input coordinate: logits (x, 1/2) ⇒ class 0 iff x > 1/2; CE-PGD moves class-0 samples
/// down and class-1 samples up by exactly α per step.
fn threshold() -> Fixed {
    Fixed::new(|x| Tensor::cat(&[x.shallow_clone(), x.full_like(0.5)], 1))
}

/// Inputs of the threshold model: two class-0 samples near and far from the threshold, one
/// class-1 sample, one class-0 sample already wrong.
const THRESHOLD_X: [f64; 4] = [0.56, 0.43, 0.2, 0.95];
const THRESHOLD_Y: [usize; 4] = [0, 1, 0, 0];

/// The batch of [`THRESHOLD_X`] (a column), its labels, and the labels as indices.
fn threshold_batch() -> (Tensor, Tensor, [usize; 4]) {
    let rows: Vec<[f64; 1]> = THRESHOLD_X.iter().map(|v| [*v]).collect();
    let x = batch(&rows.iter().map(|r| r.as_slice()).collect::<Vec<_>>());
    (x, labels(&THRESHOLD_Y), THRESHOLD_Y)
}

/// ε 0.3 and 0.17, β 6 and 2, natural weights 1 and 3, boundary weights 2 and 0.5.
fn threshold_plan() -> ClassPlan {
    ClassPlan {
        eps: vec![0.3, 0.17],
        beta: vec![6.0, 2.0],
        natural_weight: vec![1.0, 3.0],
        boundary_weight: vec![2.0, 0.5],
        step_size: None,
    }
}

/// τ of `zjfheart/Friendly-Adversarial-Training:FAT.py` (`adjust_tau`, called with the 1-based
/// epoch): 0 up to epoch 50, 1 up to 90, 2 after.
fn fat_paper_tau(epoch0: usize) -> usize {
    match epoch0 + 1 {
        ..=50 => 0,
        51..=90 => 1,
        _ => 2,
    }
}

fn early_stopped(tau: usize, step_noise: f64) -> EarlyStoppedPgd {
    EarlyStoppedPgd {
        steps: 10,
        step: StepSize::Absolute(0.05),
        start: Start::None,
        loss: AttackLoss::CrossEntropy,
        tau,
        variant: EarlyStopVariant::Original,
        step_noise,
    }
}

/// FAT's dynamic τ: `tau_schedule = [[50, 1], [90, 2]]` (0-based first epochs) with τ = 0 gives
/// the original code's τ in every one of its 120 epochs.
#[test]
fn fat_tau_schedule_follows_the_original_code() {
    let fat = Fat {
        attack: early_stopped(0, 0.0),
        tau_schedule: vec![[50, 1], [90, 2]],
        attack_train_mode: false,
    };
    fat.validate().unwrap();
    for epoch in 0..120 {
        assert_eq!(fat.tau_at(epoch), fat_paper_tau(epoch), "epoch {epoch}");
    }
    // Without a schedule τ is the attack's own.
    let fixed = Fat {
        attack: early_stopped(3, 0.0),
        tau_schedule: vec![],
        attack_train_mode: false,
    };
    assert_eq!(fixed.tau_at(0), 3);
    assert_eq!(fixed.tau_at(200), 3);
    // Epochs must increase.
    let bad = Fat {
        tau_schedule: vec![[90, 2], [50, 1]],
        ..fat
    };
    assert!(
        bad.validate()
            .unwrap_err()
            .to_string()
            .contains("tau_schedule")
    );
}

/// FAT's loss through the objective on the threshold model, Zhang et al.'s rule: a sample
/// takes steps while correct and exactly τ more after its first misclassification, and x̃ stays
/// in its class's ball. The loss is the natural-weighted mean CE at x̃.
#[test]
fn fat_stops_tau_steps_after_the_first_misclassification() {
    let model = threshold();
    // 0.56 (class 0): 0.51, then 0.46 is wrong after 2 steps. 0.43 (class 1): 0.48, then 0.53
    // is wrong after 2 steps; its ε = 0.17 stops it at 0.60. 0.2 (class 0) is wrong from the
    // start: τ steps. 0.95 (class 0) never flips: 10 steps, stopped by ε = 0.3 at 0.65.
    let (x, y, ys) = threshold_batch();
    let plan = ClassPlan {
        beta: vec![0.0, 0.0],
        boundary_weight: vec![1.0, 1.0],
        ..threshold_plan()
    };
    let fat = Method::Fat(Fat {
        attack: early_stopped(0, 0.0),
        tau_schedule: vec![[50, 1], [90, 2]],
        attack_train_mode: false,
    });
    // (epoch, τ in that epoch, x̃).
    let cases: [(usize, usize, [f64; 4]); 6] = [
        (0, 0, [0.46, 0.53, 0.2, 0.65]),
        (49, 0, [0.46, 0.53, 0.2, 0.65]),
        (50, 1, [0.41, 0.58, 0.15, 0.65]),
        (89, 1, [0.41, 0.58, 0.15, 0.65]),
        (90, 2, [0.36, 0.60, 0.10, 0.65]),
        (119, 2, [0.36, 0.60, 0.10, 0.65]),
    ];
    for (epoch, tau, x_tilde) in cases {
        assert_eq!(fat_paper_tau(epoch), tau);
        // The steps the objective reports for the epoch's log (BAT Fig. 2b): flip after 2
        // steps, then τ more; the never-flipping sample takes all 10.
        let t = tau as i64;
        assert_eq!(
            steps_of(&fat, &model, (&x, &y), &plan, epoch),
            Some(vec![2 + t, 2 + t, t, 10]),
            "epoch {epoch}"
        );
        let (loss, correct) = loss_of(&fat, &model, &x, &y, &plan, epoch, 5);
        let seen = model.take();
        let got = rows(&seen.last().unwrap().0);
        for (i, want) in x_tilde.iter().enumerate() {
            assert_close(
                got[i][0],
                *want,
                1e-6,
                &format!("epoch {epoch}: x̃ of sample {i}"),
            );
        }
        let per_sample: Vec<f64> = x_tilde
            .iter()
            .zip(&ys)
            .map(|(&xt, &yi)| plan.natural_weight[yi] * cross_entropy(&[xt, 0.5], yi))
            .collect();
        assert_close(
            loss,
            mean(&per_sample),
            1e-5,
            &format!("epoch {epoch}: loss"),
        );
        let want_correct: Vec<bool> = x_tilde
            .iter()
            .zip(&ys)
            .map(|(&xt, &yi)| argmax(&[xt, 0.5]) == yi)
            .collect();
        assert_eq!(correct, want_correct, "epoch {epoch}");
    }

    // The step counts themselves: flip after 2 steps, then τ more (the never-flipping sample
    // keeps stepping, projected onto its ball, for all 10).
    let eps = Budget::per_class(&plan.eps, &y).unwrap();
    let input = AttackInput {
        x: &x,
        y: &y,
        eps: &eps,
        train: false,
    };
    for tau in 0..4 {
        let r = early_stopped(tau, 0.0).run(&model, &input).unwrap();
        let steps: Vec<i64> = Vec::try_from(&r.steps_taken).unwrap();
        let t = tau as i64;
        assert_eq!(steps, [2 + t, 2 + t, t, 10], "tau {tau}");
    }
}

/// FAT's ω (`zjfheart/Friendly-Adversarial-Training:earlystop.py`, 0.001): N(0, ω²) noise added
/// at every step. On the threshold model (steps of exactly ±α, no decision near the noise) the
/// stopping is unchanged, x̃ moves by the sum of one draw per step, reproducibly under a seed.
#[test]
fn fat_step_noise_is_gaussian_per_step_and_seeded() {
    let model = threshold();
    // 2,000 copies of 0.56 (class 0): two steps to 0.46, frozen there (τ = 0).
    let n = 2000;
    let x = Tensor::full([n, 1], 0.56, (Kind::Float, Device::Cpu));
    let y = Tensor::zeros([n], (Kind::Int64, Device::Cpu));
    let eps = Budget::uniform(0.3, n, Device::Cpu).unwrap();
    let input = AttackInput {
        x: &x,
        y: &y,
        eps: &eps,
        train: false,
    };
    let omega = 0.001;
    let run = |noise: f64, seed: i64| {
        seeded(seed, || early_stopped(0, noise).run(&model, &input)).unwrap()
    };
    let quiet = run(0.0, 6);
    let noisy = run(omega, 6);
    let again = run(omega, 6);
    let other = run(omega, 7);
    // Without noise x̃ is exactly two steps down.
    let q = rows(&quiet.x_adv);
    assert!(q.iter().all(|r| (r[0] - 0.46).abs() < 1e-6));
    // The same seed gives the same examples; another seed others.
    assert!(noisy.x_adv.equal(&again.x_adv));
    assert!(!noisy.x_adv.equal(&other.x_adv));
    // Same stopping: two steps each.
    for r in [&quiet, &noisy] {
        assert_eq!(
            i64::try_from(r.steps_taken.sum(Kind::Int64)).unwrap(),
            2 * n
        );
    }
    // x̃ − 0.46 is the sum of two N(0, ω²) draws: mean 0, standard deviation ω·√2.
    let d: Vec<f64> = rows(&noisy.x_adv).iter().map(|r| r[0] - 0.46).collect();
    let m = mean(&d);
    let sd = (d.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64).sqrt();
    let want = omega * 2f64.sqrt();
    assert!(m.abs() < 4.0 * want / (n as f64).sqrt(), "mean {m}");
    assert!((sd / want - 1.0).abs() < 0.08, "sd {sd} vs {want}");
}

// ---------------------------------------------------------------------------------------------
// PGD-AT.

/// PGD-AT (Madry et al.; CFA eqs. (1)-(2)) with class-wise ε (CFA eq. (6)): every x'_i stays in
/// the ball of its class's ε_{y_i} and, on the diagonal model where CE-PGD saturates, reaches
/// it (the closed-form vertex) except where [0, 1] clips; the loss is the natural-weighted mean
/// CE at x'. The attack's mode follows `attack_train_mode`, and the plan's step override (FRL's
/// remargin) replaces the attack's step.
#[test]
fn pgd_at_keeps_each_sample_in_its_class_budget_and_saturates() {
    let model = diagonal();
    let (x, y) = diagonal_batch();
    let plan = ClassPlan {
        eps: DIAG_EPS.to_vec(),
        beta: vec![0.0; 3],
        natural_weight: vec![1.0, 0.5, 2.0],
        boundary_weight: vec![1.0; 3],
        step_size: None,
    };
    for (attack_train_mode, seed) in [(false, 8), (true, 9)] {
        // Uniform start; 10 steps of 0.06 cover the 2ε = 0.5 of the largest ball.
        let at = Method::PgdAt(PgdAt {
            attack: Pgd::ce(10, 0.06),
            attack_train_mode,
        });
        let (loss, correct) = loss_of(&at, &model, &x, &y, &plan, 0, seed);
        let seen = model.take();
        let (attack, last) = seen.split_at(seen.len() - 1);
        assert_eq!(attack.len(), 10);
        assert!(attack.iter().all(|(_, train)| *train == attack_train_mode));
        assert!(last[0].1);
        let x_adv = rows(&last[0].0);
        let mut per_sample = Vec::new();
        let mut want_correct = Vec::new();
        for (i, (xi, &yi)) in DIAG_X.iter().zip(&DIAG_Y).enumerate() {
            let eps = plan.eps[yi];
            let dist = xi
                .iter()
                .zip(&x_adv[i])
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                dist <= eps + 1e-6,
                "sample {i}: ‖x' − x‖∞ = {dist} > ε = {eps}"
            );
            // Saturated: the budget is used up (sample 3 is clipped on both of its moved
            // coordinates, but its third coordinate still moves by ε).
            assert_close(dist, eps, 1e-6, &format!("sample {i}: ‖x' − x‖∞"));
            let vertex = diagonal_vertex(xi, yi, eps);
            for (g, w) in x_adv[i].iter().zip(&vertex) {
                assert_close(*g, *w, 1e-6, &format!("x' of sample {i}"));
            }
            let z_adv = diagonal_logits(&vertex);
            per_sample.push(plan.natural_weight[yi] * cross_entropy(&z_adv, yi));
            want_correct.push(argmax(&z_adv) == yi);
        }
        assert_close(loss, mean(&per_sample), 1e-5, "PGD-AT loss");
        assert_eq!(correct, want_correct);
    }

    // The plan's absolute step (FRL's remargin) replaces the attack's 0.5: 3 steps of 0.01 from
    // x move every coordinate by 0.03, inside every ball and away from the edges of [0, 1].
    let small = ClassPlan {
        step_size: Some(0.01),
        ..plan.clone()
    };
    let at = Method::PgdAt(PgdAt {
        attack: Pgd {
            steps: 3,
            step: StepSize::Absolute(0.5),
            start: Start::None,
            loss: AttackLoss::CrossEntropy,
        },
        attack_train_mode: false,
    });
    let _ = loss_of(&at, &model, &x, &y, &small, 0, 10);
    let seen = model.take();
    let x_adv = rows(&seen.last().unwrap().0);
    for (i, (xi, &yi)) in DIAG_X.iter().zip(&DIAG_Y).enumerate() {
        let want = diagonal_vertex(xi, yi, 0.03);
        for (g, w) in x_adv[i].iter().zip(&want) {
            assert_close(
                *g,
                *w,
                1e-6,
                &format!("x' of sample {i} with the plan's step"),
            );
        }
    } // A fixed-step attack reports no per-sample steps (every sample takes all of them).
    assert_eq!(steps_of(&at, &model, (&x, &y), &small, 0), None);
}

// ---------------------------------------------------------------------------------------------
// BAT.

/// KL(U ‖ softmax(z)) = Σ_k (1/K)·(log(1/K) − log p_k), BAT eq. (6).
fn uniform_kl(z: &[f64]) -> f64 {
    let k = z.len() as f64;
    softmax(z)
        .iter()
        .map(|p| (1.0 / k) * ((1.0 / k).ln() - p.ln()))
        .sum()
}

/// BAT on the threshold model (CE steps of exactly ±α = 0.05 from x, so every iterate is known):
///
/// * 0.56 (class 0): checked correct at 0.56 and 0.51, wrong at 0.46: x_c = 0.51, x_a = 0.46;
/// * 0.43 (class 1, ε 0.17): x_c = 0.48, x_a = 0.53;
/// * 0.2 (class 0) is wrong from the start: x_c = x_a = x (BAT Algorithm 1, lines 3 and 6-7);
/// * 0.95 (class 0, ε 0.3) never flips: the iterates after 9 and 10 steps, both projected to
///   0.65.
///
/// The fixed x' of the ablations runs all 10 steps: [0.26, 0.60, 0.0, 0.65]. Each loss is
/// recomputed by hand: eq. (7) with the paper's scaling and class-wise β and weights, and the
/// Table 2 No. 6 ablation (TRADES source, uniform KL on x') with CFA's scaling.
#[test]
fn bat_loss_on_boundary_pairs_matches_the_hand_computed_formula() {
    let model = threshold();
    let x0 = THRESHOLD_X;
    let (x, y, ys) = threshold_batch();
    let plan = threshold_plan();
    let attack = Pgd {
        steps: 10,
        step: StepSize::Absolute(0.05),
        start: Start::None,
        loss: AttackLoss::CrossEntropy,
    };
    let z = |v: f64| [v, 0.5];
    let x_c = [0.51, 0.48, 0.2, 0.65];
    let x_a = [0.46, 0.53, 0.2, 0.65];
    let fixed = [0.26, 0.60, 0.0, 0.65];

    let bat = Method::Bat(Bat {
        attack,
        alpha: 1.5,
        source: BatSource::Boundary,
        uniform_on: vec![BatPoint::LastCorrect, BatPoint::FirstWrong],
        scaling: TradesScaling::Paper,
    });
    bat.validate().unwrap();
    let (loss, correct) = loss_of(&bat, &model, &x, &y, &plan, 0, 3);
    let per_sample: Vec<f64> = (0..4)
        .map(|i| {
            let k = ys[i];
            let (nw, bw, beta) = (
                plan.natural_weight[k],
                plan.boundary_weight[k],
                plan.beta[k],
            );
            nw * cross_entropy(&z(x_c[i]), k)
                + beta * bw * kl(&softmax(&z(x0[i])), &softmax(&z(x_a[i])), 0.0)
                + 1.5 * bw * (uniform_kl(&z(x_c[i])) + uniform_kl(&z(x_a[i])))
        })
        .collect();
    assert_close(loss, mean(&per_sample), 1e-5, "BAT eq. (7)");
    // t_k counts x_a.
    assert_eq!(correct, [false, false, false, true]);
    // τ = 0: the steps to the first misclassification (none for 0.2, wrong from the start; all
    // 10 for 0.95, never wrong), as the epoch logs them.
    assert_eq!(
        steps_of(&bat, &model, (&x, &y), &plan, 0),
        Some(vec![2, 2, 0, 10])
    );

    let ablation = Method::Bat(Bat {
        attack,
        alpha: 1.5,
        source: BatSource::Trades,
        uniform_on: vec![BatPoint::Fixed],
        scaling: TradesScaling::Reference,
    });
    let (loss, correct) = loss_of(&ablation, &model, &x, &y, &plan, 0, 3);
    let per_sample: Vec<f64> = (0..4)
        .map(|i| {
            let k = ys[i];
            let (nw, bw, beta) = (
                plan.natural_weight[k],
                plan.boundary_weight[k],
                plan.beta[k],
            );
            let (a, b) = (1.0 / (1.0 + beta), beta / (1.0 + beta));
            a * nw * cross_entropy(&z(x0[i]), k)
                + b * bw * kl(&softmax(&z(x0[i])), &softmax(&z(fixed[i])), 0.0)
                + a * 1.5 * bw * uniform_kl(&z(fixed[i]))
        })
        .collect();
    assert_close(
        loss,
        mean(&per_sample),
        1e-5,
        "Table 2 No. 6 with CFA's scaling",
    );
    assert_eq!(correct, [false, false, false, true]);

    // α = 0 or no uniform term is the source loss alone; a point named twice is refused.
    let source_only = |uniform_on: Vec<BatPoint>, alpha: f64| {
        Method::Bat(Bat {
            attack,
            alpha,
            source: BatSource::Boundary,
            uniform_on,
            scaling: TradesScaling::Paper,
        })
    };
    let (a, _) = loss_of(&source_only(vec![], 1.5), &model, &x, &y, &plan, 0, 3);
    let (b, _) = loss_of(
        &source_only(vec![BatPoint::FirstWrong], 0.0),
        &model,
        &x,
        &y,
        &plan,
        0,
        3,
    );
    let per_sample: Vec<f64> = (0..4)
        .map(|i| {
            let k = ys[i];
            plan.natural_weight[k] * cross_entropy(&z(x_c[i]), k)
                + plan.beta[k]
                    * plan.boundary_weight[k]
                    * kl(&softmax(&z(x0[i])), &softmax(&z(x_a[i])), 0.0)
        })
        .collect();
    assert_close(a, mean(&per_sample), 1e-5, "source only");
    assert_close(b, mean(&per_sample), 1e-5, "alpha 0");
    let twice = source_only(vec![BatPoint::LastCorrect, BatPoint::LastCorrect], 1.0);
    assert!(
        twice
            .validate()
            .unwrap_err()
            .to_string()
            .contains("uniform_on")
    );
}

/// `second_clean_forward` (the reference TRADES codes' KL target from its own clean forward):
/// the train-mode forwards are x, x', x instead of x, x', and on a deterministic model the
/// loss is the same.
#[test]
fn trades_second_clean_forward_adds_a_clean_pass_after_the_adversarial_one() {
    let model = folded();
    let plan = ClassPlan::uniform(3, 0.25, 3.0);
    let device_plan = DevicePlan::new(&plan, Device::Cpu).unwrap();
    let x = batch(&[&[0.5, 0.25], &[0.5, 0.75]]);
    let y = labels(&[0, 2]);
    let mut losses = Vec::new();
    for second in [false, true] {
        let trades = Trades {
            attack: Pgd::trades(3, 0.05),
            scaling: TradesScaling::Paper,
            second_clean_forward: second,
        };
        let ctx = StepContext {
            plan: &device_plan,
            epoch: 0,
        };
        let out = seeded(5, || trades.loss(&model, &x, &y, ctx)).unwrap();
        losses.push(out.loss.double_value(&[]));
        let train: Vec<Tensor> = (model.take().into_iter())
            .filter(|(_, train)| *train)
            .map(|(t, _)| t)
            .collect();
        let clean = |t: &Tensor| t.equal(&x);
        let pattern: Vec<bool> = train.iter().map(clean).collect();
        let want: &[bool] = if second {
            &[true, false, true]
        } else {
            &[true, false]
        };
        assert_eq!(
            pattern, want,
            "train-mode forwards (clean?) with second = {second}"
        );
    }
    assert_eq!(losses[0], losses[1]);
}
