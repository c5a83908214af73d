//! The window forward pass (`model::window`): after any sequence of window queries, accepts
//! and row selections its logits equal the full forward pass of the images it stands for,
//! on every architecture that has one (SmallCNN with normalisation, on an even and an odd input
//! size; FAT's SmallCNN with padded convolutions and BN), for windows of every size and
//! position, borders and corners included.

use classwise_trainer::model::{
    Architecture, Classifier, MemoryFormat, Model, ModelSpec, Normalization, Window,
};
use classwise_trainer::seed::seeded;
use tch::nn::ModuleT;
use tch::{Device, Kind, Tensor};

const CPU: Device = Device::Cpu;

fn max_abs(a: &Tensor, b: &Tensor) -> f64 {
    f64::try_from((a - b).abs().max()).unwrap()
}

fn logits(model: &Model, x: &Tensor) -> Tensor {
    tch::no_grad(|| model.forward_t(x, false))
}

/// A model of `arch` whose BN layers (if any) have running statistics away from (0, 1).
fn model(arch: Architecture, shape: [usize; 3], normalization: Option<Normalization>) -> Model {
    let mut spec = ModelSpec::new(arch, 10, shape);
    if let Some(n) = normalization {
        spec = spec.with_normalization(n);
    }
    let model = Model::new(&spec, CPU, 3).unwrap();
    let [c, h, w] = shape.map(|d| d as i64);
    seeded(4, || {
        tch::no_grad(|| {
            for _ in 0..3 {
                let x = Tensor::rand([16, c, h, w], (Kind::Float, CPU)) * 0.8 + 0.1;
                let _ = model.forward_t(&x, true);
            }
        })
    });
    model
}

/// Windows of every side from 1 to the image's, at corners, edges and inside.
fn windows(h: i64, w: i64) -> Vec<Window> {
    let mut out = Vec::new();
    for s in 1..=h.min(w) {
        let tops = [0, h - s, (h - s) / 2, (s * 7) % (h - s + 1)];
        let lefts = [w - s, 0, (w - s) / 3, (s * 5) % (w - s + 1)];
        for (&top, &left) in tops.iter().zip(&lefts) {
            out.push(Window {
                top,
                left,
                height: s,
                width: s,
            });
        }
    }
    out
}

fn region(t: &Tensor, win: Window) -> Tensor {
    t.narrow(2, win.top, win.height)
        .narrow(3, win.left, win.width)
}

/// Queries every window with random values, accepts a random half of the rows each time, and
/// drops rows now and then; checks every query's and the cache's logits against the full pass.
fn check(model: &Model, shape: [usize; 3], tol: f64) {
    let [c, h, w] = shape.map(|d| d as i64);
    let n = 12;
    let mut x = seeded(5, || Tensor::rand([n, c, h, w], (Kind::Float, CPU)));
    let mut fw = model
        .window_forward(&x, false)
        .expect("a window forward pass");
    assert!(max_abs(&fw.logits(), &logits(model, &x)) < tol);
    for (i, win) in windows(h, w).into_iter().enumerate() {
        let rows = x.size()[0];
        let (values, keep) = seeded(100 + i as i64, || {
            (
                Tensor::rand([rows, c, win.height, win.width], (Kind::Float, CPU)),
                Tensor::rand([rows], (Kind::Float, CPU)).lt(0.5),
            )
        });
        let patched = x.copy();
        region(&patched, win).copy_(&values);
        let got = fw.query(win, &values).unwrap();
        let err = max_abs(&got, &logits(model, &patched));
        assert!(err < tol, "window {win:?}: logits differ by {err}");
        fw.accept(&keep);
        x = patched.where_self(&keep.view([-1, 1, 1, 1]), &x);
        if i % 9 == 8 && rows > 3 {
            let kept = Tensor::from_slice(&[0i64, 2, rows - 1]);
            fw.select(&kept);
            x = x.index_select(0, &kept);
        } else if i % 9 == 4 {
            // Grow back by repeating rows (selection may reorder and duplicate).
            let rows_now: Vec<i64> = (0..rows).rev().chain(0..rows.min(3)).collect();
            let kept = Tensor::from_slice(&rows_now);
            fw.select(&kept);
            x = x.index_select(0, &kept);
        }
        let err = max_abs(&fw.logits(), &logits(model, &x));
        assert!(
            err < tol,
            "after accepting window {win:?}: logits differ by {err}"
        );
    }
}

#[test]
fn small_cnn_with_normalisation_equals_the_full_pass() {
    let shape = [1, 28, 28];
    let norm = Normalization::channels(vec![0.286], vec![0.353]);
    let m = model(
        Architecture::SmallCnn {
            zero_last_layer: false,
        },
        shape,
        Some(norm),
    );
    check(&m, shape, 1e-4);
}

#[test]
fn small_cnn_on_an_odd_size_equals_the_full_pass() {
    // 31 → 29 → 27 → pool 13 (row 26 dropped) → 11 → 9 → pool 4 (row 8 dropped).
    let shape = [2, 31, 31];
    let m = model(
        Architecture::SmallCnn {
            zero_last_layer: false,
        },
        shape,
        None,
    );
    check(&m, shape, 1e-4);
}

#[test]
fn fat_small_cnn_with_padding_and_batch_norm_equals_the_full_pass() {
    let shape = [3, 16, 16];
    let m = model(
        Architecture::SmallCnnCifar,
        shape,
        Some(Normalization::cifar10()),
    );
    check(&m, shape, 1e-4);
}

#[test]
fn with_channels_last_kernels_the_window_pass_equals_the_full_pass() {
    // `classwise eval` lays the kernels out channels-last: the crops are then strided views of
    // channels-last maps.
    let cases = [
        (
            Architecture::SmallCnnCifar,
            [3, 16, 16],
            Some(Normalization::cifar10()),
        ),
        (
            Architecture::SmallCnn {
                zero_last_layer: false,
            },
            [2, 20, 20],
            None,
        ),
    ];
    for (arch, shape, norm) in cases {
        let mut m = model(arch, shape, norm);
        m.set_memory_format(MemoryFormat::ChannelsLast).unwrap();
        assert_eq!(m.memory_format(), MemoryFormat::ChannelsLast);
        check(&m, shape, 1e-4);
    }
}

#[test]
fn no_window_pass_in_train_mode_or_for_residual_networks() {
    let small = model(
        Architecture::SmallCnn {
            zero_last_layer: false,
        },
        [1, 28, 28],
        None,
    );
    let x = seeded(6, || Tensor::rand([2, 1, 28, 28], (Kind::Float, CPU)));
    assert!(small.window_forward(&x, true).is_none());
    let resnet = Model::new(
        &ModelSpec::new(Architecture::ResNet18, 10, [3, 32, 32]),
        CPU,
        1,
    )
    .unwrap();
    let x = seeded(7, || Tensor::rand([2, 3, 32, 32], (Kind::Float, CPU)));
    assert!(resnet.window_forward(&x, false).is_none());
}

#[test]
fn bad_windows_and_values_are_refused_by_name() {
    let m = model(
        Architecture::SmallCnn {
            zero_last_layer: false,
        },
        [1, 28, 28],
        None,
    );
    let x = seeded(8, || Tensor::rand([2, 1, 28, 28], (Kind::Float, CPU)));
    let mut fw = m.window_forward(&x, false).unwrap();
    let outside = Window {
        top: 26,
        left: 0,
        height: 3,
        width: 3,
    };
    let err = fw
        .query(outside, &Tensor::zeros([2, 1, 3, 3], (Kind::Float, CPU)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("window") && err.contains("28×28"), "{err}");
    let inside = Window {
        top: 0,
        left: 0,
        height: 3,
        width: 3,
    };
    let err = fw
        .query(inside, &Tensor::zeros([2, 1, 3, 2], (Kind::Float, CPU)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("values") && err.contains("[2, 1, 3, 3]"),
        "{err}"
    );
}

/// Square through the window pass against Square through full forward passes, same seed: the
/// random draws do not depend on the margins, so the two runs differ only where a decision
/// turns on the last bits of a logit. Both must leave the same points fooled and end at the
/// same margins (up to summation order) nearly everywhere.
#[test]
fn square_with_the_window_pass_follows_the_full_forward_run() {
    use classwise_trainer::attack::square::margin;
    use classwise_trainer::attack::{AttackInput, Budget, Square};

    let shape = [1, 28, 28];
    let mut m = model(
        Architecture::SmallCnn {
            zero_last_layer: false,
        },
        shape,
        None,
    );
    let n = 16;
    let x = seeded(21, || Tensor::rand([n, 1, 28, 28], (Kind::Float, CPU)));
    let y = logits(&m, &x).argmax(-1, false);
    let budget = Budget::uniform(0.005, n, CPU).unwrap();
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
    let run = |m: &Model| {
        let mut trace = Vec::new();
        let adv = seeded(22, || square.run(m, &input, Some(&mut trace))).unwrap();
        (adv, trace)
    };
    let (adv_window, trace_window) = run(&m);
    m.set_window_forward(false);
    let (adv_full, trace_full) = run(&m);
    assert!(m.window_forward(&x, false).is_none());
    assert_eq!(trace_window.len(), trace_full.len());

    let fooled = |adv: &Tensor| -> Vec<bool> {
        let p = logits(&m, adv).argmax(-1, false);
        Vec::<bool>::try_from(p.ne_tensor(&y)).unwrap()
    };
    let (fw, ff) = (fooled(&adv_window), fooled(&adv_full));
    let differ = fw.iter().zip(&ff).filter(|(a, b)| a != b).count();
    let broken = ff.iter().filter(|&&f| f).count();
    assert!(broken > 0 && broken < n as usize, "{broken} of {n} broken");
    assert!(differ <= 1, "{differ} points fooled by one run only");

    let final_margin = |adv: &Tensor| -> Vec<f64> {
        Vec::<f64>::try_from(margin(&logits(&m, adv), &y).to_kind(Kind::Double)).unwrap()
    };
    let (mw, mf) = (final_margin(&adv_window), final_margin(&adv_full));
    let close = mw
        .iter()
        .zip(&mf)
        .filter(|(a, b)| (*a - *b).abs() < 1e-3)
        .count();
    assert!(
        close + 2 >= n as usize,
        "only {close} of {n} final margins agree"
    );
    let linf = f64::try_from((&adv_window - &x).abs().max()).unwrap();
    assert!(linf <= 0.005 + 1e-6, "{linf}");
}
