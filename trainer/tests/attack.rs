//! Properties of the ℓ∞ attacks: outputs stay in the ball and in [0, 1], per-sample budgets are
//! respected, PGD reaches the closed-form worst case of a linear model, only the input receives
//! gradients, and the early-stopped variants follow their rules.

use classwise_trainer::attack::{
    Apgd, Attack, AttackInput, AttackLoss, Budget, EarlyStopVariant, EarlyStoppedPgd, Fab, Pgd,
    Square, Start, StepSize, capturing_early_stopped,
};
use classwise_trainer::model::Classifier;
use classwise_trainer::seed::seeded;
use tch::nn::{self, ModuleT};
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
            w: Tensor::randn([k, d], (Kind::Float, Device::Cpu)).set_requires_grad(true),
            b: Tensor::randn([k], (Kind::Float, Device::Cpu)).set_requires_grad(true),
        })
    }
}

impl ModuleT for Linear {
    fn forward_t(&self, xs: &Tensor, _train: bool) -> Tensor {
        xs.flatten(1, -1).matmul(&self.w.tr()) + &self.b
    }
}

impl Classifier for Linear {}

/// A small non-linear conv net (with BN, to exercise both modes).
fn conv_net(vs: &nn::Path) -> nn::SequentialT {
    nn::seq_t()
        .add(nn::conv2d(vs / "c1", 1, 4, 3, Default::default()))
        .add(nn::batch_norm2d(vs / "bn", 4, Default::default()))
        .add_fn(|x| x.relu())
        .add_fn(|x| x.flatten(1, -1))
        .add(nn::linear(vs / "fc", 4 * 6 * 6, 3, Default::default()))
}

fn data(n: i64, k: i64, seed: i64) -> (Tensor, Tensor, Budget) {
    seeded(seed, || {
        let x = Tensor::rand([n, 1, 8, 8], (Kind::Float, Device::Cpu));
        let y = Tensor::randint(k, [n], (Kind::Int64, Device::Cpu));
        // Per-sample budgets in [0, 0.2), with two exact zeros.
        let eps = Tensor::rand([n], (Kind::Float, Device::Cpu)) * 0.2;
        let _ = eps.narrow(0, 0, 2).fill_(0.0);
        (x, y, Budget::from_tensor(eps).unwrap())
    })
}

fn max_abs(t: &Tensor) -> f64 {
    t.abs().max().double_value(&[])
}

fn all_attacks() -> Vec<Box<dyn Attack>> {
    vec![
        Box::new(Pgd::fgsm()),
        Box::new(Pgd::fgsm_random_start(1.25)),
        Box::new(Pgd::ce(5, 0.05)),
        Box::new(Pgd::trades(5, 0.05)),
        Box::new(Pgd::cw(5, 0.05)),
        Box::new(Pgd::temperature(5, 0.05, 5.0)),
        Box::new(EarlyStoppedPgd::fat_cfa(1, 5, 0.05)),
        Box::new(EarlyStoppedPgd::bat(5, 0.05)),
        Box::new(Pgd {
            steps: 3,
            step: StepSize::FractionOfEps(0.5),
            start: Start::Normal { std: 0.3 },
            loss: AttackLoss::CrossEntropy,
        }),
        Box::new(Apgd {
            iterations: 5,
            ..Apgd::ce()
        }),
        Box::new(Apgd {
            iterations: 5,
            eot_iter: 2,
            ..Apgd::dlr()
        }),
        Box::new(Fab {
            iterations: 5,
            ..Fab::untargeted()
        }),
        Box::new(Square {
            queries: 20,
            ..Square::autoattack()
        }),
    ]
}

#[test]
fn outputs_stay_in_the_ball_and_in_the_unit_box() {
    let vs = nn::VarStore::new(Device::Cpu);
    let net = seeded(1, || conv_net(&vs.root()));
    let (x, y, eps) = data(16, 3, 2);
    for train in [false, true] {
        for attack in all_attacks() {
            let input = AttackInput {
                x: &x,
                y: &y,
                eps: &eps,
                train,
            };
            let xa = seeded(3, || attack.perturb(&net, &input)).unwrap();
            let what = attack.describe();
            assert_eq!(xa.size(), x.size(), "{what}");
            let excess = ((&xa - &x).abs().flatten(1, -1).amax(1, false) - eps.tensor())
                .max()
                .double_value(&[]);
            assert!(excess <= 1e-6, "{what}: outside the ball by {excess}");
            assert!(xa.min().double_value(&[]) >= 0.0 && xa.max().double_value(&[]) <= 1.0);
            // ε = 0 leaves the first two samples exactly unchanged.
            assert_eq!(
                max_abs(&(xa.narrow(0, 0, 2) - x.narrow(0, 0, 2))),
                0.0,
                "{what}"
            );
            // And the attack moved some other sample.
            assert!(max_abs(&(&xa - &x)) > 0.0, "{what}");
        }
    }
}

/// For two classes the CE (and the CW margin) of a linear model is monotone in the linear
/// margin (w_y − w_j)·x', so its maximum over [x − ε, x + ε] ∩ [0, 1] is the vertex that moves
/// every coordinate against sign(w_y − w_j) as far as the box allows. FGSM reaches it in one
/// step; PGD-10 with steps of ε/4 reaches it from any start.
#[test]
fn pgd_reaches_the_closed_form_worst_case_of_a_binary_linear_model() {
    let model = Linear::random(2, 64, 4);
    let (x, y, eps) = data(32, 2, 5);
    let other = y.neg() + 1;
    let diff = model.w.index_select(0, &y) - model.w.index_select(0, &other);
    let e = eps.tensor().view([-1, 1]);
    let xf = x.flatten(1, -1);
    let worst = (&xf + &e)
        .clamp_max(1.0)
        .where_self(&diff.lt(0.0), &(&xf - &e).clamp_min(0.0))
        .view_as(&x)
        .detach();
    let input = AttackInput {
        x: &x,
        y: &y,
        eps: &eps,
        train: false,
    };
    let pgd = Pgd {
        steps: 10,
        step: StepSize::FractionOfEps(0.25),
        start: Start::Uniform,
        loss: AttackLoss::CrossEntropy,
    };
    let cw = Pgd {
        loss: AttackLoss::CwMargin { kappa: 1e4 },
        ..pgd
    };
    for attack in [Pgd::fgsm(), pgd, cw] {
        let xa = seeded(6, || attack.perturb(&model, &input)).unwrap();
        let err = max_abs(&(&xa - &worst));
        assert!(err < 1e-6, "{}: {err}", attack.describe());
    }
    // The worst case is worse than the clean point for every sample with ε > 0.
    let margin = |t: &Tensor| {
        let z = model.forward_t(t, false);
        (z.gather(1, &y.unsqueeze(1), false) - z.gather(1, &other.unsqueeze(1), false)).squeeze()
    };
    let drop = (margin(&x) - margin(&worst)).narrow(0, 2, 30);
    assert!(drop.min().double_value(&[]) > 0.0);
}

#[test]
fn only_the_input_receives_gradients() {
    let model = Linear::random(3, 64, 7);
    let (x, y, eps) = data(8, 3, 8);
    let input = AttackInput {
        x: &x,
        y: &y,
        eps: &eps,
        train: false,
    };
    for attack in all_attacks() {
        let xa = seeded(9, || attack.perturb(&model, &input)).unwrap();
        assert!(
            !xa.requires_grad(),
            "{}: output still tracks gradients",
            attack.describe()
        );
        for p in [&model.w, &model.b] {
            assert!(
                !p.grad().defined(),
                "{}: a parameter received a gradient",
                attack.describe()
            );
        }
    }
    // The clean input is not modified in place either.
    let (x2, _, _) = data(8, 3, 8);
    assert_eq!(max_abs(&(&x - &x2)), 0.0);
}

#[test]
fn temperature_one_is_plain_pgd_and_temperature_changes_the_attack() {
    let vs = nn::VarStore::new(Device::Cpu);
    let net = seeded(10, || conv_net(&vs.root()));
    let (x, y, eps) = data(16, 3, 11);
    let input = AttackInput {
        x: &x,
        y: &y,
        eps: &eps,
        train: false,
    };
    let run = |a: Pgd| seeded(12, || a.perturb(&net, &input)).unwrap();
    let plain = run(Pgd::ce(5, 0.02));
    assert_eq!(
        max_abs(&(run(Pgd::temperature(5, 0.02, 1.0)) - &plain)),
        0.0
    );
    assert!(max_abs(&(run(Pgd::temperature(5, 0.02, 50.0)) - &plain)) > 0.0);
}

/// A linear model on which sample 0 is misclassified at x, sample 1 is far inside its class
/// (never flips at this ε), and samples 2.. flip after a few steps.
#[test]
fn early_stopping_follows_its_rules_and_returns_the_boundary_pair() {
    // One input coordinate: logits (x, 0.5 − x·0) ⇒ class 0 iff x > 0.5.
    let model = Linear {
        w: Tensor::from_slice(&[1.0f32, 0.0]).view([2, 1]),
        b: Tensor::from_slice(&[0.0f32, 0.5]),
    };
    let x = Tensor::from_slice(&[0.2f32, 0.95, 0.62, 0.56]).view([4, 1]);
    let y = Tensor::from_slice(&[0i64, 0, 0, 0]);
    let eps = Budget::uniform(0.2, 4, Device::Cpu).unwrap();
    let input = AttackInput {
        x: &x,
        y: &y,
        eps: &eps,
        train: false,
    };
    let bat = EarlyStoppedPgd {
        start: Start::None,
        loss: AttackLoss::CrossEntropy,
        ..EarlyStoppedPgd::bat(10, 0.05)
    };
    let r = bat.run(&model, &input).unwrap();
    let steps: Vec<i64> = Vec::try_from(&r.steps_taken).unwrap();
    // Sample 0: wrong at the start ⇒ no step, x_c = x_a = x. Sample 1: 0.95 − k·0.05 stays above
    // 0.5 within ε = 0.2 ⇒ all 10 steps. Sample 2: 0.62 → 0.57 → 0.52 → 0.47 (wrong) ⇒ 3 steps.
    // Sample 3: 0.56 → 0.51 → 0.46 ⇒ 2 steps.
    assert_eq!(steps, [0, 10, 3, 2]);
    let v = |t: &Tensor| Vec::<f32>::try_from(&t.flatten(0, -1)).unwrap();
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(p, q)| (p - q).abs() < 1e-6);
    assert!(
        close(&v(&r.x_adv), &[0.2, 0.75, 0.47, 0.46]),
        "{:?}",
        v(&r.x_adv)
    );
    assert!(
        close(&v(&r.last_correct), &[0.2, 0.75, 0.52, 0.51]),
        "{:?}",
        v(&r.last_correct)
    );
    assert!(
        close(&v(&r.first_wrong), &[0.2, 0.75, 0.47, 0.46]),
        "{:?}",
        v(&r.first_wrong)
    );

    // FAT with budget τ = 2: a flipped sample takes two more steps (original rule), so sample 3
    // goes 0.56 → 0.51 → 0.46 (wrong, τ 2 → 1) → 0.41 (τ 1 → 0) → 0.36 (frozen at the next
    // check): 4 steps; sample 0 (wrong from the start) takes exactly τ = 2 steps.
    let fat = EarlyStoppedPgd { tau: 2, ..bat };
    let steps: Vec<i64> = Vec::try_from(&fat.run(&model, &input).unwrap().steps_taken).unwrap();
    assert_eq!(steps, [2, 10, 5, 4]);
    // The CFA-repo rule gives the same counts here (no sample recovers after flipping), and with
    // τ = 0 it never steps at all.
    let cfa = EarlyStoppedPgd {
        variant: EarlyStopVariant::CfaRepo,
        ..fat
    };
    let steps: Vec<i64> = Vec::try_from(&cfa.run(&model, &input).unwrap().steps_taken).unwrap();
    assert_eq!(steps, [2, 10, 5, 4]);
    let none = EarlyStoppedPgd { tau: 0, ..cfa };
    let r = none.run(&model, &input).unwrap();
    assert_eq!(i64::try_from(r.steps_taken.sum(Kind::Int64)).unwrap(), 0);
}

/// The step cross-check's capture (`capturing_early_stopped`) copies every run made inside it,
/// in order, and changes nothing: the runs are the attack's own results, and a run outside a
/// capture is not kept.
#[test]
fn capturing_early_stopped_copies_the_runs_made_inside_it() {
    let model = Linear::random(3, 64, 21);
    let (x, y, eps) = data(6, 3, 22);
    let input = AttackInput {
        x: &x,
        y: &y,
        eps: &eps,
        train: false,
    };
    let bat = EarlyStoppedPgd::bat(5, 0.05);
    let fat = EarlyStoppedPgd::fat_cfa(1, 4, 0.05);
    let plain = seeded(23, || bat.run(&model, &input).unwrap());
    let _outside = fat.run(&model, &input).unwrap();
    let (inside, runs) = capturing_early_stopped(|| {
        seeded(23, || {
            let r = bat.run(&model, &input).unwrap();
            let _ = fat.run(&model, &input).unwrap();
            r
        })
    });
    assert_eq!(runs.len(), 2);
    let same = |a: &Tensor, b: &Tensor| a.equal(b);
    assert!(same(&plain.x_adv, &inside.x_adv) && same(&runs[0].x_adv, &inside.x_adv));
    assert!(same(&runs[0].last_correct, &plain.last_correct));
    assert!(same(&runs[0].first_wrong, &plain.first_wrong));
    assert!(same(&runs[0].steps_taken, &plain.steps_taken));
    assert_eq!(runs[1].steps_taken.size(), [6]);
    let (_, none) = capturing_early_stopped(|| ());
    assert!(none.is_empty());
}

#[test]
fn bad_input_is_an_error_naming_the_field() {
    let model = Linear::random(3, 64, 13);
    let (x, y, eps) = data(8, 3, 14);
    let pgd = Pgd::ce(2, 0.01);
    let err = |r: classwise_trainer::Result<Tensor>| r.unwrap_err().to_string();
    let too_bright = &x + 1.5;
    let e = err(pgd.perturb(
        &model,
        &AttackInput {
            x: &too_bright,
            y: &y,
            eps: &eps,
            train: false,
        },
    ));
    assert!(e.contains("`x`") && e.contains("[0, 1]"), "{e}");
    let short = Budget::uniform(0.1, 3, Device::Cpu).unwrap();
    let e = err(pgd.perturb(
        &model,
        &AttackInput {
            x: &x,
            y: &y,
            eps: &short,
            train: false,
        },
    ));
    assert!(e.contains("`eps`"), "{e}");
    let bad = Pgd {
        step: StepSize::Absolute(f64::NAN),
        ..pgd
    };
    let e = err(bad.perturb(
        &model,
        &AttackInput {
            x: &x,
            y: &y,
            eps: &eps,
            train: false,
        },
    ));
    assert!(e.contains("attack.step"), "{e}");
    let labels = Tensor::from_slice(&[0i64, 5]);
    let e = Budget::per_class(&[0.1, 0.2, 0.3], &labels)
        .unwrap_err()
        .to_string();
    assert!(e.contains("labels"), "{e}");
    assert!(Budget::uniform(-0.1, 2, Device::Cpu).is_err());
    // Per-class budgets pick ε_{y_i}.
    let b = Budget::per_class(&[0.1, 0.2, 0.3], &Tensor::from_slice(&[2i64, 0, 1])).unwrap();
    assert_eq!(
        Vec::<f32>::try_from(b.tensor()).unwrap(),
        [0.3f32, 0.1, 0.2]
    );
}

/// FGSM with a random start (Tian et al. App. A.2) starts from a uniform point in the ball, so
/// it differs from plain FGSM and from itself under another seed; the description names the
/// start of every PGD-style attack.
#[test]
fn fgsm_with_a_random_start_is_offered_and_described() {
    let vs = nn::VarStore::new(Device::Cpu);
    let net = seeded(1, || conv_net(&vs.root()));
    let (x, y, eps) = data(16, 3, 2);
    let input = AttackInput {
        x: &x,
        y: &y,
        eps: &eps,
        train: false,
    };
    let plain = seeded(3, || Pgd::fgsm().perturb(&net, &input)).unwrap();
    let rs = Pgd::fgsm_random_start(1.0);
    let a = seeded(3, || rs.perturb(&net, &input)).unwrap();
    let b = seeded(4, || rs.perturb(&net, &input)).unwrap();
    assert!(max_abs(&(&a - &plain)) > 1e-3);
    assert!(max_abs(&(&a - &b)) > 1e-3);
    assert_eq!(Pgd::fgsm().describe(), "fgsm ce step 1*eps no start");
    assert_eq!(rs.describe(), "fgsm ce step 1*eps uniform start");
    assert_eq!(
        Pgd::ce(10, 0.025).describe(),
        "pgd-10 ce step 0.025 uniform start"
    );
    assert_eq!(
        Pgd::trades(10, 0.007).describe(),
        "pgd-10 trades-kl step 0.007 normal start std 0.001"
    );
}

/// An attack of zero steps would report clean accuracy as robust accuracy: refused.
#[test]
fn zero_steps_are_refused() {
    let e = Pgd::ce(0, 0.01).validate().unwrap_err().to_string();
    assert!(e.contains("attack.steps"), "{e}");
}
