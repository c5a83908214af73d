//! AutoAttack on models whose answer is known: APGD reaches the closed-form worst case of
//! linear models, FAB finds the closed-form ℓ∞ distance to a linear boundary, the ℓ∞
//! projection is the smallest step onto a hyperplane in the box, Square's margin never
//! increases, APGD's step-size checkpoints are the reference's, and the cascade never attacks a
//! point already broken and resumes a killed evaluation to the result of an uninterrupted one.

use std::sync::{Arc, Mutex};

use classwise_trainer::attack::apgd::checkpoints;
use classwise_trainer::attack::fab::projection_linf;
use classwise_trainer::attack::square::{margin, p_schedule, side};
use classwise_trainer::attack::{Apgd, Attack, AttackInput, Budget, Fab, Pgd, Square};
use classwise_trainer::data::{Dataset, Origin};
use classwise_trainer::eval::autoattack::{
    AaAttack, AutoAttackSpec, Cascade, CascadeOutcome, Step, Version,
};
use classwise_trainer::model::Classifier;
use classwise_trainer::seed::seeded;
use tch::nn::ModuleT;
use tch::{Device, Kind, Tensor};

/// logits = W·flatten(x) + b.
#[derive(Debug)]
struct Linear {
    w: Tensor,
    b: Tensor,
}

impl Linear {
    fn random(k: i64, d: i64, seed: i64) -> Self {
        seeded(seed, || Linear {
            w: Tensor::randn([k, d], (Kind::Float, Device::Cpu)),
            b: Tensor::randn([k], (Kind::Float, Device::Cpu)) * 0.1,
        })
    }

    fn logits(&self, x: &Tensor) -> Tensor {
        x.flatten(1, -1).matmul(&self.w.tr()) + &self.b
    }
}

impl ModuleT for Linear {
    fn forward_t(&self, xs: &Tensor, _train: bool) -> Tensor {
        self.logits(xs)
    }
}

impl Classifier for Linear {}

fn vec_f64(t: &Tensor) -> Vec<f64> {
    Vec::try_from(&t.to_kind(Kind::Double).flatten(0, -1)).unwrap()
}

fn vec_i64(t: &Tensor) -> Vec<i64> {
    Vec::try_from(&t.to_kind(Kind::Int64)).unwrap()
}

/// Images in [lo, hi] of shape [n, c, h, w].
fn images(n: i64, shape: [i64; 3], lo: f64, hi: f64, seed: i64) -> Tensor {
    seeded(seed, || {
        Tensor::rand(
            [n, shape[0], shape[1], shape[2]],
            (Kind::Float, Device::Cpu),
        ) * (hi - lo)
            + lo
    })
}

/// Per point: the smallest over j ≠ y of (z_y − z_j) − ε‖w_y − w_j‖₁, the margin left after
/// the worst ℓ∞ perturbation of size ε against class j (the box not binding); and its scale
/// ε‖w_y − w_j‖₁ at the minimising j.
fn closed_form_slack(m: &Linear, x: &Tensor, y: &[i64], eps: f64) -> Vec<(f64, f64)> {
    let z = vec_f64(&m.logits(x));
    let w = vec_f64(&m.w);
    let (k, d) = (m.w.size()[0] as usize, m.w.size()[1] as usize);
    y.iter()
        .enumerate()
        .map(|(i, &yi)| {
            let yi = yi as usize;
            (0..k)
                .filter(|&j| j != yi)
                .map(|j| {
                    let l1: f64 = (0..d).map(|t| (w[yi * d + t] - w[j * d + t]).abs()).sum();
                    (z[i * k + yi] - z[i * k + j] - eps * l1, eps * l1)
                })
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .unwrap()
        })
        .collect()
}

fn predictions(m: &dyn Classifier, x: &Tensor) -> Vec<i64> {
    vec_i64(&tch::no_grad(|| m.forward_t(x, false).argmax(-1, false)))
}

fn linf(a: &Tensor, b: &Tensor) -> Vec<f64> {
    vec_f64(&(a - b).abs().flatten(1, -1).amax(1, false))
}

#[test]
fn apgd_checkpoints_are_the_references() {
    // autopgd_base.py with n_iter = 100: n_iter_2 = 22, size_decr = 3, n_iter_min = 6, a check
    // whenever 22, 19, 16, 13, 10, 7, 6, 6 iterations have passed since the last one.
    let expected = [
        (21, 22),
        (40, 19),
        (56, 16),
        (69, 13),
        (79, 10),
        (86, 7),
        (92, 6),
        (98, 6),
    ];
    assert_eq!(checkpoints(100), expected);
    // n_iter = 10: all three parameters are 1 or 2 after max(…, 1).
    let ten: Vec<(usize, usize)> = std::iter::once((1, 2))
        .chain((2..10).map(|i| (i, 1)))
        .collect();
    assert_eq!(checkpoints(10), ten);
}

#[test]
fn apgd_ce_breaks_exactly_the_points_a_binary_linear_model_cannot_defend() {
    let m = Linear::random(2, 16, 1);
    let x = images(400, [1, 4, 4], 0.2, 0.8, 2);
    let eps = 0.05; // the box [0, 1] is never binding: x ± ε stays inside
    let y = predictions(&m, &x); // every point correct: the margin decides
    let slack = closed_form_slack(&m, &x, &y, eps);
    let y_t = Tensor::from_slice(&y);
    let budget = Budget::uniform(eps, 400, Device::Cpu).unwrap();
    let input = AttackInput {
        x: &x,
        y: &y_t,
        eps: &budget,
        train: false,
    };
    let x_adv = seeded(3, || Apgd::ce().perturb(&m, &input)).unwrap();
    let pred = predictions(&m, &x_adv);
    let (mut breakable, mut broken) = (0, 0);
    for (i, &(s, _)) in slack.iter().enumerate() {
        let is_broken = pred[i] != y[i];
        assert_eq!(is_broken, s < 0.0, "point {i}: slack {s}");
        breakable += usize::from(s < 0.0);
        broken += usize::from(is_broken);
    }
    assert!(
        breakable > 40 && breakable < 360,
        "{breakable} breakable of 400"
    );
    assert_eq!(broken, breakable);
    for d in linf(&x_adv, &x) {
        assert!(d <= eps + 1e-6);
    }
}

#[test]
fn apgd_t_breaks_every_ten_class_linear_point_with_room_and_no_other() {
    let m = Linear::random(10, 16, 4);
    let x = images(300, [1, 4, 4], 0.2, 0.8, 5);
    let eps = 0.03;
    let y = predictions(&m, &x);
    let slack = closed_form_slack(&m, &x, &y, eps);
    let y_t = Tensor::from_slice(&y);
    let budget = Budget::uniform(eps, 300, Device::Cpu).unwrap();
    let input = AttackInput {
        x: &x,
        y: &y_t,
        eps: &budget,
        train: false,
    };
    // APGD-T tries every wrong class in turn: every point with room is broken. APGD-CE may
    // ascend towards another class than the weakest one; it never breaks a point that cannot be.
    for (attack, must_break) in [(Apgd::targeted(), true), (Apgd::ce(), false)] {
        let x_adv = seeded(6, || attack.perturb(&m, &input)).unwrap();
        let pred = predictions(&m, &x_adv);
        let mut clear = 0;
        for (i, &(s, scale)) in slack.iter().enumerate() {
            if s >= 0.0 {
                assert_eq!(
                    pred[i],
                    y[i],
                    "{}: point {i} cannot be broken",
                    attack.describe()
                );
            } else if s < -0.2 * scale {
                clear += 1;
                if must_break {
                    assert_ne!(pred[i], y[i], "{}: point {i}, slack {s}", attack.describe());
                }
            }
        }
        assert!(clear > 30, "only {clear} clearly breakable points");
    }
}

/// FAB-T's best ‖δ‖∞ on a linear binary model, as a multiple of the closed-form distance D,
/// when the box does not bind: every iterate stays on the ray x + a·s (s the sign vector of the
/// optimal direction), the projections from x + a·s and from x are (D − a)·s and D·s, so the
/// whole attack is the scalar recurrence a ← (1 − α)(a + η(D − a)) + αηD with
/// α = min(|D − a| / (|D − a| + D), α_max), keeping a when a > D and pulling back a ← β·a.
fn fab_on_a_ray(iterations: usize) -> f64 {
    let (eta, beta, alpha_max) = (1.05, 0.9, 0.1);
    let (mut a, mut best) = (0.0f64, f64::INFINITY);
    for _ in 0..iterations {
        let d1 = (1.0 - a).abs().max(1e-8);
        let alpha = (d1 / (d1 + 1.0)).min(alpha_max);
        a = (1.0 - alpha) * (a + eta * (1.0 - a)) + alpha * eta;
        if a > 1.0 {
            best = best.min(a);
            a *= beta;
        }
    }
    best
}

#[test]
fn fab_finds_the_closed_form_distance_to_a_linear_boundary() {
    let m = Linear::random(2, 16, 7);
    // Points close to the boundary so that the minimal perturbation stays inside the box.
    let x = images(200, [1, 4, 4], 0.35, 0.65, 8);
    let y = predictions(&m, &x);
    let z = vec_f64(&m.logits(&x));
    let w = vec_f64(&m.w);
    let l1: f64 = (0..16).map(|t| (w[t] - w[16 + t]).abs()).sum();
    let budget = Budget::uniform(1.0, 200, Device::Cpu).unwrap();
    let y_t = Tensor::from_slice(&y);
    let input = AttackInput {
        x: &x,
        y: &y_t,
        eps: &budget,
        train: false,
    };
    let fab = Fab {
        early_stop: false,
        ..Fab::targeted()
    };
    let out = seeded(9, || fab.run(&m, &input)).unwrap();
    let dist = vec_f64(&out.distance);
    let pred = predictions(&m, &out.x_adv);
    // η = 1.05 overshoots and β = 0.9 pulls back: FAB ends within about 0.5% above D.
    let ratio = fab_on_a_ray(100);
    assert!(ratio > 1.0 && ratio < 1.01, "{ratio}");
    let mut checked = 0;
    for i in 0..200 {
        let closed = (z[2 * i] - z[2 * i + 1]).abs() / l1;
        if closed * 1.1 > 0.35 {
            continue; // the box may bind
        }
        checked += 1;
        assert!(
            (dist[i] / closed - ratio).abs() < 1e-3,
            "point {i}: FAB {} vs closed form {closed} × {ratio}",
            dist[i]
        );
        assert_ne!(pred[i], y[i]);
    }
    assert!(checked > 50, "{checked}");
    // The returned examples are the ones measured.
    for (d, e) in linf(&out.x_adv, &x).iter().zip(&dist) {
        assert!((d - e).abs() < 1e-6);
    }
}

/// Σ_i |w_i|·min(λ, r_i): the most w·x can change with ‖d‖∞ ≤ λ in the box, r_i being the
/// room of coordinate i in the useful direction.
fn reach(w: &[f64], room: &[f64], lambda: f64) -> f64 {
    w.iter()
        .zip(room)
        .map(|(w, r)| w.abs() * lambda.min(*r))
        .sum()
}

#[test]
fn projection_linf_is_the_smallest_step_onto_the_hyperplane_inside_the_box() {
    let (m, d) = (200i64, 7i64);
    let (t, w, b) = seeded(10, || {
        let t = Tensor::rand([m, d], (Kind::Float, Device::Cpu));
        let w = Tensor::randn([m, d], (Kind::Float, Device::Cpu));
        // Some coordinates with w_i = 0, which must not move.
        let mask = Tensor::rand([m, d], (Kind::Float, Device::Cpu)).gt(0.15);
        let w = w * mask.to_kind(Kind::Float);
        let b = Tensor::randn([m], (Kind::Float, Device::Cpu)) * 1.5;
        (t, w, b)
    });
    let step = projection_linf(&t, &w, &b);
    let (tv, wv, bv, sv) = (vec_f64(&t), vec_f64(&w), vec_f64(&b), vec_f64(&step));
    let (mut reachable, mut unreachable) = (0, 0);
    for (i, &bi) in bv.iter().enumerate() {
        let r = i * d as usize..(i + 1) * d as usize;
        let (ti, wi, si) = (&tv[r.clone()], &wv[r.clone()], &sv[r]);
        let c = bi - ti.iter().zip(wi).map(|(a, b)| a * b).sum::<f64>();
        let room: Vec<f64> = ti
            .iter()
            .zip(wi)
            .map(|(t, w)| if w * c > 0.0 { 1.0 - t } else { *t })
            .collect();
        for j in 0..d as usize {
            let moved = ti[j] + si[j];
            assert!(
                (-1e-6..=1.0 + 1e-6).contains(&moved),
                "row {i} leaves the box"
            );
            if wi[j] == 0.0 {
                assert_eq!(si[j], 0.0);
            }
        }
        let change: f64 = si.iter().zip(wi).map(|(s, w)| s * w).sum();
        let norm = si.iter().fold(0.0f64, |a, s| a.max(s.abs()));
        let max_room = room.iter().cloned().fold(0.0, f64::max);
        if reach(wi, &room, max_room) >= c.abs() * (1.0 + 1e-6) {
            reachable += 1;
            assert!(
                (change - c).abs() <= 1e-4 * (1.0 + c.abs()),
                "row {i}: {change} vs {c}"
            );
            // Bisection on λ (independent of the sort in the implementation).
            let (mut lo, mut hi) = (0.0, max_room);
            for _ in 0..100 {
                let mid = 0.5 * (lo + hi);
                if reach(wi, &room, mid) >= c.abs() {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            assert!(
                (norm - hi).abs() <= 1e-4,
                "row {i}: ‖d‖∞ {norm} vs minimal {hi}"
            );
        } else {
            unreachable += 1;
            // Out of reach: every coordinate goes to its face in the useful direction.
            for j in 0..d as usize {
                if wi[j] != 0.0 {
                    assert!((si[j].abs() - room[j]).abs() < 1e-6, "row {i}, {j}");
                    assert!(si[j] * wi[j] * c >= 0.0);
                }
            }
        }
    }
    assert!(
        reachable > 50 && unreachable > 5,
        "{reachable} / {unreachable}"
    );
}

#[test]
fn square_schedule_and_side_are_the_references() {
    // p_selection without rescaling: halved after 10, 50, 200, 500, 1000, 2000, 4000, ...
    let p: Vec<f64> = [
        0, 10, 11, 50, 51, 200, 201, 500, 501, 1000, 1001, 2000, 2001, 4000, 4001, 4999,
    ]
    .iter()
    .map(|&i| p_schedule(0.8, i))
    .collect();
    let expected = [
        0.8, 0.8, 0.4, 0.4, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125, 0.00625,
        0.00625,
    ];
    for (a, b) in p.iter().zip(expected) {
        assert!((a - b).abs() < 1e-15, "{p:?}");
    }
    // torchattacks' rescaled schedule with 5,000 queries: query i counts as
    // int(i / 5000 * 10000), i.e. 2i, except where f64 rounds below (6 → 11.999… → 11).
    let rescaled = Square {
        rescale_schedule: true,
        ..Square::autoattack()
    };
    let got: Vec<f64> = [0, 5, 6, 25, 26, 100, 101, 4000, 4001, 4999]
        .iter()
        .map(|&i| rescaled.p_at(i))
        .collect();
    let want = [
        0.8, 0.8, 0.4, 0.4, 0.2, 0.2, 0.1, 0.003125, 0.0015625, 0.0015625,
    ];
    for (a, b) in got.iter().zip(want) {
        assert!((a - b).abs() < 1e-15, "{got:?}");
    }
    assert_eq!(Square::autoattack().p_at(4001), 0.00625);
    assert_eq!(side(0.8, 32, 32), 29); // round(√(0.8·1024)) = round(28.6)
    assert_eq!(side(0.8, 28, 28), 25);
    assert_eq!(side(1e-6, 32, 32), 1);
    assert_eq!(side(1.0, 8, 8), 8);
}

/// A small non-linear model (conv + ReLU + linear) with fixed random weights.
#[derive(Debug)]
struct SmallConv {
    conv: Tensor,
    fc: Tensor,
}

impl SmallConv {
    fn new(seed: i64) -> Self {
        seeded(seed, || SmallConv {
            conv: Tensor::randn([4, 3, 3, 3], (Kind::Float, Device::Cpu)) * 0.5,
            fc: Tensor::randn([10, 4 * 6 * 6], (Kind::Float, Device::Cpu)) * 0.3,
        })
    }
}

impl ModuleT for SmallConv {
    fn forward_t(&self, xs: &Tensor, _train: bool) -> Tensor {
        xs.conv2d(&self.conv, None::<Tensor>, [1, 1], [0, 0], [1, 1], 1)
            .relu()
            .flatten(1, -1)
            .matmul(&self.fc.tr())
    }
}

impl Classifier for SmallConv {}

#[test]
fn square_margin_never_increases_and_its_outputs_are_valid() {
    let model = SmallConv::new(11);
    let x = images(64, [3, 8, 8], 0.0, 1.0, 12);
    let y_v = predictions(&model, &x);
    let y = Tensor::from_slice(&y_v);
    let eps = 0.05;
    let budget = Budget::uniform(eps, 64, Device::Cpu).unwrap();
    let input = AttackInput {
        x: &x,
        y: &y,
        eps: &budget,
        train: false,
    };
    let square = Square {
        queries: 300,
        ..Square::autoattack()
    };
    let mut trace = Vec::new();
    let x_adv = seeded(13, || square.run(&model, &input, Some(&mut trace))).unwrap();
    assert!(trace.len() > 2);
    let rows: Vec<Vec<f64>> = trace.iter().map(vec_f64).collect();
    for w in rows.windows(2) {
        for (i, (a, b)) in w[0].iter().zip(&w[1]).enumerate() {
            assert!(b <= a, "point {i}: margin {a} -> {b}");
        }
    }
    let last = rows.last().unwrap();
    let pred = predictions(&model, &x_adv);
    let final_margin = vec_f64(&margin(&model.logits_of(&x_adv), &y));
    let mut fooled = 0;
    for i in 0..64 {
        if pred[i] != y_v[i] {
            fooled += 1;
            assert!(last[i] <= 0.0);
            assert!((final_margin[i] - last[i]).abs() < 1e-4);
        }
    }
    assert!(fooled > 0 && fooled < 64, "{fooled}");
    for d in linf(&x_adv, &x) {
        assert!(d <= eps + 1e-6);
    }
    let (lo, hi) = (x_adv.min().double_value(&[]), x_adv.max().double_value(&[]));
    assert!(lo >= 0.0 && hi <= 1.0);
}

impl SmallConv {
    fn logits_of(&self, x: &Tensor) -> Tensor {
        tch::no_grad(|| self.forward_t(x, false))
    }
}

// ---------------------------------------------------------------------------------------------
// The cascade.

/// A data set of `n` random 3×8×8 images labelled by `model` except for every 7th image
/// (misclassified clean on purpose).
fn dataset(model: &dyn Classifier, n: i64, seed: i64) -> Dataset {
    let images = seeded(seed, || {
        Tensor::randint(256, [n, 3, 8, 8], (Kind::Uint8, Device::Cpu))
    });
    let x = images.to_kind(Kind::Float) / 255.0;
    let labels: Vec<i64> = predictions(model, &x)
        .into_iter()
        .enumerate()
        .map(|(i, p)| if i % 7 == 3 { (p + 1) % 10 } else { p })
        .collect();
    let names = (0..10).map(|c| format!("c{c}")).collect();
    Dataset::new(images, labels, names, Origin::new("random images", None)).unwrap()
}

/// The rows an attack was asked to attack, with whether its output for the row was
/// misclassified.
type Record = Arc<Mutex<Vec<(i64, bool)>>>;

/// Records the rows it is asked to attack, as indices into `reference`, with whether its
/// output for the row is misclassified.
struct Recording {
    inner: Box<dyn Attack>,
    reference: Tensor,
    seen: Record,
    /// Fail on this call (0-based), as a kill would stop the evaluation.
    fail_on_call: Option<usize>,
    calls: Mutex<usize>,
}

impl Recording {
    fn new(inner: Box<dyn Attack>, reference: &Tensor) -> (Self, Record) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (
            Recording {
                inner,
                reference: reference.flatten(1, -1),
                seen: seen.clone(),
                fail_on_call: None,
                calls: Mutex::new(0),
            },
            seen,
        )
    }
}

impl Attack for Recording {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn perturb(
        &self,
        model: &dyn Classifier,
        input: &AttackInput<'_>,
    ) -> classwise_trainer::Result<Tensor> {
        let mut calls = self.calls.lock().unwrap();
        if self.fail_on_call == Some(*calls) {
            return Err(classwise_trainer::error::invalid("test", "kill", "no kill"));
        }
        *calls += 1;
        let rows = input.x.flatten(1, -1);
        let out = self.inner.perturb(model, input)?;
        let pred = predictions(model, &out);
        let y = vec_i64(input.y);
        for r in 0..rows.size()[0] {
            let d = (&self.reference - rows.get(r)).abs().amax(1, false);
            let i = d.argmin(0, false).int64_value(&[]);
            assert!(d.double_value(&[i]) < 1e-6);
            self.seen
                .lock()
                .unwrap()
                .push((i, pred[r as usize] != y[r as usize]));
        }
        Ok(out)
    }
}

fn cascade(steps: Vec<Step>, state_dir: Option<&std::path::Path>) -> Cascade<'_> {
    Cascade {
        label: "test".into(),
        steps,
        eps: 0.01,
        batch_size: 16,
        seed: 5,
        randomized: false,
        state_dir,
        model_id: "small-conv-21".into(),
        notes: Vec::new(),
        verbose: false,
    }
}

fn cheap_steps() -> Vec<(String, Box<dyn Attack>)> {
    vec![
        ("fgsm".into(), Box::new(Pgd::fgsm()) as Box<dyn Attack>),
        (
            "apgd-ce".into(),
            Box::new(Apgd {
                iterations: 10,
                ..Apgd::ce()
            }),
        ),
        (
            "square".into(),
            Box::new(Square {
                queries: 50,
                ..Square::autoattack()
            }),
        ),
    ]
}

#[test]
fn the_cascade_never_attacks_a_broken_point_and_counts_per_class() {
    let model = SmallConv::new(21);
    let data = dataset(&model, 120, 22);
    let (x_all, y_all) = data
        .batch(&(0..120).collect::<Vec<_>>(), Device::Cpu)
        .unwrap();
    let mut seen = Vec::new();
    let steps: Vec<Step> = cheap_steps()
        .into_iter()
        .map(|(name, attack)| {
            let (rec, s) = Recording::new(attack, &x_all);
            seen.push(s);
            Step {
                name,
                attack: Box::new(rec),
            }
        })
        .collect();
    let out: CascadeOutcome = cascade(steps, None)
        .run(&model, &data, Device::Cpu)
        .unwrap();
    let y = vec_i64(&y_all);
    let clean = predictions(&model, &x_all);
    // Before each attack: the points correct clean and not broken by an earlier attack.
    let mut robust: Vec<bool> = clean.iter().zip(&y).map(|(p, l)| p == l).collect();
    for (si, s) in seen.iter().enumerate() {
        let mut record = s.lock().unwrap().clone();
        record.sort();
        let attacked: Vec<i64> = record.iter().map(|&(i, _)| i).collect();
        let expected: Vec<i64> = (0..120).filter(|&i| robust[i as usize]).collect();
        assert_eq!(attacked, expected, "attack {si}");
        let broken: Vec<i64> = record.iter().filter(|r| r.1).map(|r| r.0).collect();
        for &i in &broken {
            robust[i as usize] = false;
        }
        let step = &out.report.steps[si];
        assert_eq!((step.attacked, step.broken), (expected.len(), broken.len()));
        let n_robust = robust.iter().filter(|&&r| r).count();
        assert!((step.robust - n_robust as f64 / 120.0).abs() < 1e-12);
        // Per class, from the flags kept here.
        for (c, &acc) in step.robust_per_class.iter().enumerate() {
            let of_c: Vec<usize> = (0..120).filter(|&i| y[i] == c as i64).collect();
            let hits = of_c.iter().filter(|&&i| robust[i]).count();
            assert!((acc - hits as f64 / of_c.len() as f64).abs() < 1e-12);
        }
    }
    assert_eq!(robust, out.robust);
    // Final flags: robust ⇔ correct clean and correct on x_adv.
    let pred_adv = predictions(&model, &out.x_adv);
    for i in 0..120 {
        assert_eq!(
            out.robust[i],
            clean[i] == y[i] && pred_adv[i] == y[i],
            "sample {i}"
        );
    }
    // Per-class robust accuracy after the last attack equals the final report's.
    let last = out.report.steps.last().unwrap();
    assert_eq!(
        last.robust_per_class,
        out.report.evaluation.robust.per_class
    );
    let n_robust = out.robust.iter().filter(|&&r| r).count();
    assert!((last.robust - n_robust as f64 / 120.0).abs() < 1e-12);
    assert!(n_robust > 0 && n_robust < 100, "{n_robust}");
}

#[test]
fn a_killed_cascade_resumes_to_the_uninterrupted_result() {
    let model = SmallConv::new(31);
    let data = dataset(&model, 100, 32);
    let plain = || -> Vec<Step> {
        cheap_steps()
            .into_iter()
            .map(|(name, attack)| Step { name, attack })
            .collect()
    };
    let small_batches = |steps, dir| {
        let mut c = cascade(steps, dir);
        c.batch_size = 8;
        c
    };
    let whole = small_batches(plain(), None)
        .run(&model, &data, Device::Cpu)
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    // Killed in the second batch of the second attack.
    let (x_all, _) = data
        .batch(&(0..100).collect::<Vec<_>>(), Device::Cpu)
        .unwrap();
    let steps: Vec<Step> = cheap_steps()
        .into_iter()
        .enumerate()
        .map(|(i, (name, attack))| {
            let (mut rec, _) = Recording::new(attack, &x_all);
            if i == 1 {
                rec.fail_on_call = Some(1);
            }
            Step {
                name,
                attack: Box::new(rec),
            }
        })
        .collect();
    let mut killed = cascade(steps, Some(dir.path()));
    killed.batch_size = 8;
    let err = killed
        .run(&model, &data, Device::Cpu)
        .err()
        .expect("the second attack fails");
    assert!(err.to_string().contains("kill"), "{err}");
    let state = std::fs::read_to_string(dir.path().join("state.json")).unwrap();
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(state["finished"].as_array().unwrap().len(), 1);
    assert_eq!(state["current"]["batches_done"], 1);

    let resumed = small_batches(plain(), Some(dir.path()))
        .run(&model, &data, Device::Cpu)
        .unwrap();
    assert!(resumed.report.resumed);
    assert_eq!(resumed.robust, whole.robust);
    assert_eq!(
        (&resumed.x_adv - &whole.x_adv)
            .abs()
            .max()
            .double_value(&[]),
        0.0
    );
    for (a, b) in resumed.report.steps.iter().zip(&whole.report.steps) {
        assert_eq!(a.robust_per_class, b.robust_per_class);
        assert_eq!((a.attacked, a.broken), (b.attacked, b.broken));
    }

    // A state of another evaluation is refused, naming what differs.
    let mut other = small_batches(plain(), Some(dir.path()));
    other.eps = 0.06;
    let err = other
        .run(&model, &data, Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("eps 0.01, now 0.06") && err.contains("state.json"),
        "{err}"
    );
}

#[test]
fn versions_list_the_references_attacks() {
    use AaAttack::*;
    assert_eq!(Version::Standard.attacks(), [ApgdCe, ApgdT, FabT, Square]);
    assert_eq!(Version::Rand.attacks(), [ApgdCe, ApgdDlr]);
    assert_eq!(
        Version::Plus.attacks(),
        [ApgdCe, ApgdDlr, Fab, Square, ApgdT, FabT]
    );
    let rand = AutoAttackSpec::version(Version::Rand);
    let steps = rand.steps();
    assert!(steps.iter().all(|s| s.attack.describe().contains("eot 20")));
    let plus = AutoAttackSpec::version(Version::Plus).steps();
    assert!(plus[0].attack.describe().contains("5 restarts"));
    let standard = AutoAttackSpec::version(Version::Standard).steps();
    assert_eq!(
        standard[1].attack.describe(),
        "apgd-t 100 iterations 1 restart 9 targets"
    );
    assert_eq!(
        standard[3].attack.describe(),
        "square 5000 queries p_init 0.8 1 restart"
    );
    let dup = AutoAttackSpec {
        version: Version::Standard,
        attacks: Some(vec![Square, Square]),
    };
    assert!(dup.validate().unwrap_err().to_string().contains("square"));
    assert!(
        "apgd-x"
            .parse::<AaAttack>()
            .unwrap_err()
            .contains("apgd-ce")
    );
}
