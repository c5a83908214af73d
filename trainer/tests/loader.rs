//! The prefetching loader hands over exactly the batches the sequential path makes (cut,
//! converted, augmented with the same stream, skipped steps included), reports a bad index by
//! name, and stops its worker when dropped early.

use classwise_trainer::data::{Augment, Dataset, Loader, LoaderPlan, Origin, PadMode};
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use tch::{Device, Kind, Tensor};

/// 50 random `u8` images 3×8×8 in 5 classes.
fn dataset() -> Dataset {
    let images = classwise_trainer::seed::seeded(1, || {
        Tensor::randint(256, [50, 3, 8, 8], (Kind::Int64, Device::Cpu)).to_kind(Kind::Uint8)
    });
    let labels = (0..50).map(|i| i % 5).collect();
    let names = (0..5).map(|k| k.to_string()).collect();
    Dataset::new(images, labels, names, Origin::new("test", None)).unwrap()
}

fn steps() -> Vec<Vec<i64>> {
    let order: Vec<i64> = (0..50).rev().collect();
    order.chunks(16).map(<[i64]>::to_vec).collect()
}

#[test]
fn prefetched_batches_equal_the_sequential_ones_with_skips_and_augmentation() {
    let data = dataset();
    let modes = [
        Augment::crop_flip(2, PadMode::Reflect),
        Augment::crop_flip(3, PadMode::Zero),
    ];
    for (augment, skip) in modes.into_iter().flat_map(|a| [(a, 0), (a, 2)]) {
        let plan = LoaderPlan {
            steps: steps(),
            skip,
            augment,
            rng: ChaCha8Rng::seed_from_u64(7),
        };
        let got: Vec<_> = Loader::spawn(data.host_source(), plan, Device::Cpu)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        // The sequential path: every step draws, only the unskipped ones are kept.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut want = Vec::new();
        for (step, idx) in steps().iter().enumerate() {
            let (x, y) = data.batch(idx, Device::Cpu).unwrap();
            let x = augment.apply(&x, &mut rng).unwrap();
            if step >= skip {
                want.push((step, x, y));
            }
        }
        assert_eq!(got.len(), want.len(), "skip {skip}");
        for (g, (step, x, y)) in got.iter().zip(&want) {
            assert_eq!(g.step, *step);
            assert_eq!(g.x.kind(), Kind::Float);
            assert!(g.x.equal(x), "images of step {step} (skip {skip})");
            assert!(g.y.equal(y), "labels of step {step} (skip {skip})");
        }
    }
}

#[test]
fn in_order_plans_cover_every_image_once_without_augmentation() {
    let data = dataset();
    let batches: Vec<_> = Loader::spawn(
        data.host_source(),
        LoaderPlan::in_order(data.len(), 16),
        Device::Cpu,
    )
    .unwrap()
    .map(Result::unwrap)
    .collect();
    assert_eq!(
        batches.iter().map(|b| b.y.size()[0]).collect::<Vec<_>>(),
        vec![16, 16, 16, 2]
    );
    let x = Tensor::cat(&batches.iter().map(|b| &b.x).collect::<Vec<_>>(), 0);
    let all: Vec<i64> = (0..50).collect();
    assert!(x.equal(&data.batch(&all, Device::Cpu).unwrap().0));
}

#[test]
fn a_bad_index_is_named_and_ends_the_pass() {
    let data = dataset();
    let plan = LoaderPlan {
        steps: vec![vec![0, 1], vec![2, 50], vec![3]],
        skip: 0,
        augment: Augment::none(),
        rng: ChaCha8Rng::seed_from_u64(0),
    };
    let mut loader = Loader::spawn(data.host_source(), plan, Device::Cpu).unwrap();
    assert!(loader.next().unwrap().is_ok());
    let err = loader.next().unwrap().err().expect("index 50 of 50 images");
    let text = err.to_string();
    assert!(text.contains("indices[1]") && text.contains("50"), "{text}");
    // The worker stopped at the error: asking again says it ended early, never hangs.
    let after = loader.next().unwrap().err().expect("the worker has ended");
    assert!(after.to_string().contains("data loader"), "{after}");
}

#[test]
fn dropping_a_loader_early_stops_its_worker() {
    let data = dataset();
    let plan = LoaderPlan {
        steps: (0..200).map(|i| vec![i % 50]).collect(),
        skip: 0,
        augment: Augment::crop_flip(1, PadMode::Zero),
        rng: ChaCha8Rng::seed_from_u64(3),
    };
    let mut loader = Loader::spawn(data.host_source(), plan, Device::Cpu).unwrap();
    assert!(loader.next().unwrap().is_ok());
    // The worker is blocked on a full queue; dropping must hang up and join it.
    drop(loader);
}
