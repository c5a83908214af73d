//! `classwise data synth`: the three real formats read back by the loaders, labelled synthetic,
//! seeded, with hard class pairs, and refused on bad input.

use classwise_trainer::data::synth::{self, SynthSpec, templates, write};
use classwise_trainer::data::{Counts, DatasetId, LoadOptions, Located, Part, load_dir, locate};

fn spec(dataset: DatasetId, train: usize, test: usize) -> SynthSpec {
    SynthSpec {
        train_per_class: train,
        test_per_class: test,
        ..SynthSpec::official(dataset).unwrap()
    }
}

fn exactly(train: usize, test: usize) -> LoadOptions {
    LoadOptions {
        counts: Counts::Exactly { train, test },
        ..Default::default()
    }
}

#[test]
fn every_format_reads_back_with_its_labels_and_is_marked_synthetic() {
    let tmp = tempfile::tempdir().unwrap();
    for (id, k) in [
        (DatasetId::Cifar10, 10),
        (DatasetId::Cifar100, 100),
        (DatasetId::TinyImagenet, 200),
    ] {
        let w = write(&spec(id, 2, 1), tmp.path(), false).unwrap();
        assert_eq!((w.train, w.test), (2 * k, k));
        let options = exactly(2 * k, k);
        let train = load_dir(id, &w.dir, Part::Train, &options).unwrap();
        let test = load_dir(id, &w.dir, Part::Test, &options).unwrap();
        assert_eq!(train.num_classes(), k);
        let labels = Vec::<i64>::try_from(train.labels()).unwrap();
        // Two images of every class (the CIFAR files interleave them; Tiny-ImageNet lists them
        // by class directory).
        let mut per_class = vec![0; k];
        labels.iter().for_each(|&l| per_class[l as usize] += 1);
        assert!(per_class.iter().all(|&n| n == 2), "{id:?}");
        assert_eq!(test.len(), k);
        let origin = &train.origin().description;
        assert!(origin.contains("SYNTHETIC"), "{id:?}: {origin}");
        match locate(id, &[tmp.path().to_path_buf()]) {
            Located::Synthetic { counts, .. } => assert_eq!(counts, Some([2, 1])),
            other => panic!("{id:?}: {other:?}"),
        }
    }
}

/// Image j of class k depends only on (seed, part, k, j): a small copy is a prefix of a larger
/// one, and another seed gives other images.
#[test]
fn images_are_seeded_and_a_smaller_copy_is_a_prefix() {
    let read = |train: usize, seed: u64| {
        let tmp = tempfile::tempdir().unwrap();
        let s = SynthSpec {
            seed,
            ..spec(DatasetId::Cifar10, train, 1)
        };
        let w = write(&s, tmp.path(), false).unwrap();
        let d = load_dir(
            DatasetId::Cifar10,
            &w.dir,
            Part::Train,
            &exactly(10 * train, 10),
        )
        .unwrap();
        d.images().copy()
    };
    let (small, large) = (read(5, 3), read(10, 3));
    assert!(small.equal(&large.narrow(0, 0, 50)));
    assert!(!small.equal(&read(5, 4)));
}

/// Each hard pair's templates are closer than the first class is to any other class.
#[test]
fn hard_pairs_are_the_closest_classes() {
    let t = templates(DatasetId::Cifar10, 0).unwrap();
    let dist = |a: usize, b: usize| -> f64 {
        t[a].iter()
            .zip(&t[b])
            .map(|(x, y)| (x - y).abs())
            .sum::<f64>()
            / t[a].len() as f64
    };
    for (a, b, closeness) in synth::CIFAR10_PAIRS {
        let others = (0..10).filter(|&c| c != a && c != b);
        let nearest_other = others.map(|c| dist(a, c)).fold(f64::INFINITY, f64::min);
        assert!(
            dist(a, b) < nearest_other,
            "pair ({a}, {b}), closeness {closeness}"
        );
    }
    // cat/dog (0.85) are closer than airplane/ship (0.5).
    assert!(dist(3, 5) < dist(0, 8));
}

#[test]
fn bad_requests_are_refused_naming_the_option() {
    let tmp = tempfile::tempdir().unwrap();
    let e = |s: SynthSpec| write(&s, tmp.path(), false).unwrap_err().to_string();
    let noisy = SynthSpec {
        noise: f64::NAN,
        ..spec(DatasetId::Cifar10, 1, 1)
    };
    assert!(e(noisy).contains("--noise"));
    assert!(e(spec(DatasetId::Cifar10, 0, 1)).contains("--train-per-class"));
    let fmnist = SynthSpec {
        dataset: DatasetId::FashionMnist,
        ..spec(DatasetId::Cifar10, 1, 1)
    };
    assert!(e(fmnist).contains("cifar10, cifar100 or tiny-imagenet"));
    write(&spec(DatasetId::Cifar10, 1, 1), tmp.path(), false).unwrap();
    let again = e(spec(DatasetId::Cifar10, 1, 1));
    assert!(again.contains("--force"), "{again}");
    write(&spec(DatasetId::Cifar10, 2, 1), tmp.path(), true).unwrap();
}
