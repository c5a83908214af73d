//! Data loaders on files written here in the real on-disk formats, splits (CFA's
//! and WAT's per-class rules) and augmentation. Expected values come from the formats' definitions,
//! computed in the test, never from the code under test.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use classwise_trainer::data::cifar::{load_cifar10, load_cifar100};
use classwise_trainer::data::idx::{load_fashion_mnist, load_mnist};
use classwise_trainer::data::tiny_imagenet::load_tiny_imagenet;
use classwise_trainer::data::{
    self, Augment, CacheStatus, Cifar100Labels, Counts, DataSource, Dataset, DatasetId, ImageCache,
    LoadOptions, Located, PadMode, Part, Split, SplitRule, SplitSpec, SyntheticSpec, ValSize,
    augment::Draw,
};
use flate2::{Compression, write::GzEncoder};
use image::codecs::jpeg::JpegEncoder;
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use tch::{Device, Kind, Tensor};

// ---------------------------------------------------------------------------------------------
// Helpers

/// The test's own pixel rule: a value that depends on the record, the plane and the position.
fn pixel(record: usize, plane: usize, pos: usize) -> u8 {
    ((record * 31 + plane * 97 + pos * 7) % 256) as u8
}

/// One CIFAR record: label bytes then the R, G, B planes (32×32 row-major each).
fn cifar_record(labels: &[u8], record: usize) -> Vec<u8> {
    let mut r = labels.to_vec();
    for plane in 0..3 {
        r.extend((0..1024).map(|pos| pixel(record, plane, pos)));
    }
    r
}

fn u8_at(t: &Tensor, idx: &[i64]) -> i64 {
    t.int64_value(idx)
}

/// The message of an error, which must name `file` and contain every one of `parts`.
fn assert_err_mentions<T: std::fmt::Debug>(
    r: classwise_trainer::Result<T>,
    file: &str,
    parts: &[&str],
) {
    let msg = r.expect_err("expected an error").to_string();
    assert!(msg.contains(file), "error does not name {file}: {msg}");
    for p in parts {
        assert!(msg.contains(p), "error lacks {p:?}: {msg}");
    }
}

/// A CIFAR-10 directory: five train files of `per_file` records, a test file of `test`.
/// Train record `r` (global index) has label `r % 10`; test record `r` has label `9 - r % 10`.
fn write_cifar10(dir: &Path, per_file: usize, test: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for f in 0..5 {
        let bytes: Vec<u8> = (0..per_file)
            .flat_map(|i| {
                let r = f * per_file + i;
                cifar_record(&[(r % 10) as u8], r)
            })
            .collect();
        std::fs::write(dir.join(format!("data_batch_{}.bin", f + 1)), bytes).unwrap();
    }
    let bytes: Vec<u8> = (0..test)
        .flat_map(|r| cifar_record(&[(9 - r % 10) as u8], 1000 + r))
        .collect();
    std::fs::write(dir.join("test_batch.bin"), bytes).unwrap();
}

// ---------------------------------------------------------------------------------------------
// CIFAR-10

#[test]
fn cifar10_pixels_planes_labels_and_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_cifar10(dir, 4, 3);
    let counts = Counts::Exactly { train: 20, test: 3 };
    let train = load_cifar10(dir, Part::Train, counts).unwrap();
    assert_eq!(train.len(), 20);
    assert_eq!(train.image_shape(), [3, 32, 32]);
    assert_eq!(train.images().kind(), Kind::Uint8);
    for r in [0usize, 5, 19] {
        assert_eq!(train.label_slice()[r], (r % 10) as i64);
        for (plane, y, x) in [(0, 0, 0), (1, 3, 17), (2, 31, 30)] {
            let want = pixel(r, plane, y * 32 + x);
            let got = u8_at(
                train.images(),
                &[r as i64, plane as i64, y as i64, x as i64],
            );
            assert_eq!(got, i64::from(want), "record {r} plane {plane} ({y},{x})");
        }
    }
    // Without batches.meta.txt: the official names.
    assert_eq!(train.class_names()[3], "cat");
    assert_eq!(train.num_classes(), 10);

    let test = load_cifar10(dir, Part::Test, counts).unwrap();
    assert_eq!(test.len(), 3);
    assert_eq!(test.label_slice(), &[9, 8, 7]);
    assert_eq!(
        u8_at(test.images(), &[2, 1, 0, 5]),
        i64::from(pixel(1002, 1, 5))
    );

    // Class names from batches.meta.txt (10 lines plus a blank one, as shipped).
    let names: Vec<String> = (0..10).map(|k| format!("class-{k}")).collect();
    std::fs::write(dir.join("batches.meta.txt"), names.join("\n") + "\n\n").unwrap();
    let named = load_cifar10(dir, Part::Test, Counts::Any).unwrap();
    assert_eq!(named.class_names(), names.as_slice());
    std::fs::write(dir.join("batches.meta.txt"), "a\nb\n").unwrap();
    assert_err_mentions(
        load_cifar10(dir, Part::Test, Counts::Any),
        "batches.meta.txt",
        &["2 class names"],
    );
}

#[test]
fn cifar10_checks_counts_truncation_and_labels_naming_file_and_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_cifar10(dir, 4, 3);
    const REC: usize = 1 + 3072;
    // Official counts: 10,000 per file. The first train file holds 4.
    assert_err_mentions(
        load_cifar10(dir, Part::Train, Counts::Official),
        "data_batch_1.bin",
        &[&format!("at byte {}", 4 * REC), "expected 10000"],
    );
    assert!(load_cifar10(dir, Part::Train, Counts::Any).is_ok());
    // A train total that cannot be split over five files.
    assert!(load_cifar10(dir, Part::Train, Counts::Exactly { train: 21, test: 3 }).is_err());

    // Truncated: 100 bytes of a fifth record in data_batch_3.bin.
    let p3 = dir.join("data_batch_3.bin");
    let mut bytes = std::fs::read(&p3).unwrap();
    bytes.extend(cifar_record(&[1], 99).into_iter().take(100));
    std::fs::write(&p3, &bytes).unwrap();
    assert_err_mentions(
        load_cifar10(dir, Part::Train, Counts::Any),
        "data_batch_3.bin",
        &[&format!("at byte {}", 4 * REC), "truncated"],
    );

    // A label out of range in the third record of the test file.
    write_cifar10(dir, 4, 3);
    let pt = dir.join("test_batch.bin");
    let mut bytes = std::fs::read(&pt).unwrap();
    bytes[2 * REC] = 10;
    std::fs::write(&pt, &bytes).unwrap();
    assert_err_mentions(
        load_cifar10(dir, Part::Test, Counts::Any),
        "test_batch.bin",
        &[&format!("at byte {}", 2 * REC), "out of range"],
    );

    // An empty file and a missing file.
    std::fs::write(&pt, b"").unwrap();
    assert_err_mentions(
        load_cifar10(dir, Part::Test, Counts::Any),
        "test_batch.bin",
        &["no records"],
    );
    std::fs::remove_file(&pt).unwrap();
    assert_err_mentions(
        load_cifar10(dir, Part::Test, Counts::Any),
        "test_batch.bin",
        &[],
    );
}

// ---------------------------------------------------------------------------------------------
// CIFAR-100

/// `train.bin` with `n` records: coarse label `r % 20`, fine label `(r * 7) % 100`.
fn write_cifar100(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let bytes: Vec<u8> = (0..n)
        .flat_map(|r| cifar_record(&[(r % 20) as u8, ((r * 7) % 100) as u8], r))
        .collect();
    std::fs::write(dir.join("train.bin"), bytes).unwrap();
    let test: Vec<u8> = (0..2)
        .flat_map(|r| cifar_record(&[19, 99], 500 + r))
        .collect();
    std::fs::write(dir.join("test.bin"), test).unwrap();
}

#[test]
fn cifar100_fine_and_coarse_labels_pixels_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_cifar100(dir, 30);
    let counts = Counts::Exactly { train: 30, test: 2 };
    let fine = load_cifar100(dir, Part::Train, Cifar100Labels::Fine, counts).unwrap();
    let coarse = load_cifar100(dir, Part::Train, Cifar100Labels::Coarse, counts).unwrap();
    assert_eq!((fine.num_classes(), coarse.num_classes()), (100, 20));
    for r in 0..30 {
        assert_eq!(fine.label_slice()[r], ((r * 7) % 100) as i64);
        assert_eq!(coarse.label_slice()[r], (r % 20) as i64);
    }
    // Two label bytes are skipped before the planes.
    assert_eq!(
        u8_at(fine.images(), &[17, 2, 10, 4]),
        i64::from(pixel(17, 2, 10 * 32 + 4))
    );
    assert_eq!(fine.class_names()[42], "42");
    let test = load_cifar100(dir, Part::Test, Cifar100Labels::Fine, counts).unwrap();
    assert_eq!(test.label_slice(), &[99, 99]);

    let names: Vec<String> = (0..20).map(|k| format!("super{k}")).collect();
    std::fs::write(dir.join("coarse_label_names.txt"), names.join("\n")).unwrap();
    let named = load_cifar100(dir, Part::Test, Cifar100Labels::Coarse, counts).unwrap();
    assert_eq!(named.class_names(), names.as_slice());

    // Official counts: train.bin must hold 50,000 records.
    assert_err_mentions(
        load_cifar100(dir, Part::Train, Cifar100Labels::Fine, Counts::Official),
        "train.bin",
        &["expected 50000"],
    );
    // Both label bytes are checked, whichever is used.
    const REC: usize = 2 + 3072;
    let p = dir.join("train.bin");
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[5 * REC + 1] = 100;
    std::fs::write(&p, &bytes).unwrap();
    assert_err_mentions(
        load_cifar100(dir, Part::Train, Cifar100Labels::Coarse, Counts::Any),
        "train.bin",
        &[&format!("at byte {}", 5 * REC + 1), "fine label 100"],
    );
    bytes[5 * REC + 1] = 3;
    bytes[7 * REC] = 20;
    std::fs::write(&p, &bytes).unwrap();
    assert_err_mentions(
        load_cifar100(dir, Part::Train, Cifar100Labels::Fine, Counts::Any),
        "train.bin",
        &[&format!("at byte {}", 7 * REC), "coarse label 20"],
    );
    // A CIFAR-10 record size is not a CIFAR-100 record size.
    std::fs::write(&p, cifar_record(&[1], 0).repeat(2)).unwrap();
    assert_err_mentions(
        load_cifar100(dir, Part::Train, Cifar100Labels::Fine, Counts::Any),
        "train.bin",
        &["truncated"],
    );
}

// ---------------------------------------------------------------------------------------------
// idx

fn idx_bytes(magic: u32, dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut b = magic.to_be_bytes().to_vec();
    for d in dims {
        b.extend(d.to_be_bytes());
    }
    b.extend_from_slice(data);
    b
}

fn write_maybe_gz(path: &Path, bytes: &[u8], gz: bool) {
    if gz {
        let mut enc = GzEncoder::new(std::fs::File::create(path).unwrap(), Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap();
    } else {
        std::fs::write(path, bytes).unwrap();
    }
}

/// An MNIST-style directory with `n` train and 2 test images of 5×4 (rows × cols); image `i`
/// has pixel `(i*11 + y*4 + x) % 256` at (y, x) and label `(3 i) % 10`.
fn write_idx_dir(dir: &Path, n: usize, gz: bool) {
    std::fs::create_dir_all(dir).unwrap();
    let ext = if gz { ".gz" } else { "" };
    for (prefix, count) in [("train", n), ("t10k", 2)] {
        let data: Vec<u8> = (0..count)
            .flat_map(|i| (0..20).map(move |p| ((i * 11 + p) % 256) as u8))
            .collect();
        let labels: Vec<u8> = (0..count).map(|i| ((3 * i) % 10) as u8).collect();
        write_maybe_gz(
            &dir.join(format!("{prefix}-images-idx3-ubyte{ext}")),
            &idx_bytes(0x803, &[count as u32, 5, 4], &data),
            gz,
        );
        write_maybe_gz(
            &dir.join(format!("{prefix}-labels-idx1-ubyte{ext}")),
            &idx_bytes(0x801, &[count as u32], &labels),
            gz,
        );
    }
}

fn check_idx_dataset(d: &Dataset, n: usize) {
    assert_eq!(d.len(), n);
    assert_eq!(d.image_shape(), [1, 5, 4]);
    for i in [0, n / 2, n - 1] {
        assert_eq!(d.label_slice()[i], ((3 * i) % 10) as i64);
        for (y, x) in [(0, 0), (2, 3), (4, 1)] {
            let want = ((i * 11 + y * 4 + x) % 256) as i64;
            assert_eq!(u8_at(d.images(), &[i as i64, 0, y as i64, x as i64]), want);
        }
    }
}

#[test]
fn idx_plain_and_gzipped_load_the_same_images() {
    let tmp = tempfile::tempdir().unwrap();
    for gz in [false, true] {
        let dir = tmp.path().join(if gz { "gz" } else { "plain" });
        write_idx_dir(&dir, 30, gz);
        let counts = Counts::Exactly { train: 30, test: 2 };
        let train = load_fashion_mnist(&dir, Part::Train, counts).unwrap();
        check_idx_dataset(&train, 30);
        assert_eq!(train.class_names()[9], "Ankle boot");
        let test = load_mnist(&dir, Part::Test, counts).unwrap();
        check_idx_dataset(&test, 2);
        assert_eq!(test.class_names()[7], "7");
        assert_err_mentions(
            load_fashion_mnist(&dir, Part::Train, Counts::Official),
            "train-images-idx3-ubyte",
            &["at byte 4", "expected 60000"],
        );
    }
    // The config path finds an uncompressed copy too (as `fashion-mnist/` under a root).
    let root = tmp.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::rename(tmp.path().join("plain"), root.join("fashion-mnist")).unwrap();
    let source = DataSource::Files {
        id: DatasetId::FashionMnist,
        root: Some(root),
        options: LoadOptions {
            counts: Counts::Exactly { train: 30, test: 2 },
            ..LoadOptions::default()
        },
    };
    check_idx_dataset(&data::load(&source, Part::Train, None).unwrap(), 30);
    // Gzip is detected by its magic, not by the name.
    let dir = tmp.path().join("gz");
    for stem in ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"] {
        std::fs::rename(dir.join(format!("{stem}.gz")), dir.join(stem)).unwrap();
    }
    check_idx_dataset(&load_mnist(&dir, Part::Test, Counts::Any).unwrap(), 2);
}

#[test]
fn idx_errors_name_the_file_and_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let any = Counts::Any;
    for gz in [false, true] {
        let ext = if gz { ".gz" } else { "" };
        let images = dir.join(format!("train-images-idx3-ubyte{ext}"));
        let labels = dir.join(format!("train-labels-idx1-ubyte{ext}"));
        let fresh = || {
            for e in std::fs::read_dir(dir).unwrap() {
                std::fs::remove_file(e.unwrap().path()).unwrap();
            }
            write_idx_dir(dir, 6, gz);
        };

        // Labels file with the images' magic.
        fresh();
        write_maybe_gz(&labels, &idx_bytes(0x803, &[6], &[0; 6]), gz);
        assert_err_mentions(
            load_fashion_mnist(dir, Part::Train, any),
            "train-labels-idx1-ubyte",
            &["at byte 0", "0x00000803", "0x00000801"],
        );

        // Truncated images: 6 images of 20 bytes announced, 110 bytes present.
        fresh();
        let data: Vec<u8> = vec![1; 110];
        write_maybe_gz(&images, &idx_bytes(0x803, &[6, 5, 4], &data), gz);
        assert_err_mentions(
            load_fashion_mnist(dir, Part::Train, any),
            "train-images-idx3-ubyte",
            &[&format!("at byte {}", 16 + 110), "truncated"],
        );

        // Trailing bytes.
        fresh();
        write_maybe_gz(&images, &idx_bytes(0x803, &[6, 5, 4], &[1; 125]), gz);
        assert_err_mentions(
            load_fashion_mnist(dir, Part::Train, any),
            "train-images-idx3-ubyte",
            &[&format!("at byte {}", 16 + 120)],
        );

        // Label 10 of the fifth image.
        fresh();
        write_maybe_gz(&labels, &idx_bytes(0x801, &[6], &[0, 1, 2, 3, 10, 5]), gz);
        assert_err_mentions(
            load_fashion_mnist(dir, Part::Train, any),
            "train-labels-idx1-ubyte",
            &[&format!("at byte {}", 8 + 4), "out of range"],
        );

        // Fewer labels than images.
        fresh();
        write_maybe_gz(&labels, &idx_bytes(0x801, &[5], &[0; 5]), gz);
        assert_err_mentions(
            load_fashion_mnist(dir, Part::Train, any),
            "train-labels-idx1-ubyte",
            &["5 labels"],
        );
    }
    // A gzip stream cut short.
    write_idx_dir(dir, 6, true);
    let p = dir.join("train-images-idx3-ubyte.gz");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    assert_err_mentions(
        load_fashion_mnist(dir, Part::Train, any),
        "train-images-idx3-ubyte.gz",
        &["at byte"],
    );
}

/// Files with Fashion-MNIST's official shapes (60,000 and 10,000 images of 28×28, zeros) under
/// `root/fashion-mnist`, gzipped.
fn write_official_shaped_fashion_mnist(root: &Path) -> PathBuf {
    let dir = root.join("fashion-mnist");
    std::fs::create_dir_all(&dir).unwrap();
    for (prefix, n) in [("train", 60_000u32), ("t10k", 10_000)] {
        write_maybe_gz(
            &dir.join(format!("{prefix}-images-idx3-ubyte.gz")),
            &idx_bytes(0x803, &[n, 28, 28], &vec![0; n as usize * 784]),
            true,
        );
        write_maybe_gz(
            &dir.join(format!("{prefix}-labels-idx1-ubyte.gz")),
            &idx_bytes(0x801, &[n], &vec![0; n as usize]),
            true,
        );
    }
    dir
}

/// `locate` (behind `classwise doctor`) reads every Fashion-MNIST file to its end: a gzip stream
/// cut short, or a complete stream with less data than its header announces, is reported as
/// damaged, naming the file, although the headers are intact.
#[test]
fn a_truncated_fashion_mnist_file_is_found_damaged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_official_shaped_fashion_mnist(tmp.path());
    let roots = vec![tmp.path().to_path_buf()];
    match data::locate(DatasetId::FashionMnist, &roots) {
        Located::Found { train, test, .. } => {
            assert_eq!((train, test), (Some(60_000), Some(10_000)))
        }
        other => panic!("complete files: {other:?}"),
    }
    let images = dir.join("train-images-idx3-ubyte.gz");
    let whole = std::fs::read(&images).unwrap();
    // Cut to its first tenth, as a broken download leaves it.
    std::fs::write(&images, &whole[..whole.len() / 10]).unwrap();
    match data::locate(DatasetId::FashionMnist, &roots) {
        Located::Invalid { reason, .. } => assert!(
            reason.contains("train-images-idx3-ubyte.gz") && reason.contains("truncated"),
            "{reason}"
        ),
        other => panic!("cut gzip stream: {other:?}"),
    }
    // A whole gzip stream whose data stops 784 bytes short of the header's 60,000 images.
    write_maybe_gz(
        &images,
        &idx_bytes(0x803, &[60_000, 28, 28], &vec![0; 59_999 * 784]),
        true,
    );
    match data::locate(DatasetId::FashionMnist, &roots) {
        Located::Invalid { reason, .. } => assert!(
            reason.contains("train-images-idx3-ubyte.gz")
                && reason.contains(&format!("{}", 16 + 59_999 * 784))
                && reason.contains("truncated"),
            "{reason}"
        ),
        other => panic!("short data: {other:?}"),
    }
}

/// `locate` checks CIFAR's file sizes against the official release (sparse files of the right
/// sizes stand in for the real ones): a missing or truncated batch file is reported as damaged.
#[test]
fn cifar_releases_are_checked_by_size() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = vec![tmp.path().to_path_buf()];
    let c10 = tmp.path().join("cifar-10-batches-bin");
    std::fs::create_dir_all(&c10).unwrap();
    let files = [
        "data_batch_1.bin",
        "data_batch_2.bin",
        "data_batch_3.bin",
        "data_batch_4.bin",
        "data_batch_5.bin",
        "test_batch.bin",
    ];
    let size = |path: &Path, len: u64| {
        std::fs::File::create(path).unwrap().set_len(len).unwrap();
    };
    for f in files {
        size(&c10.join(f), 10_000 * 3_073);
    }
    assert!(matches!(
        data::locate(DatasetId::Cifar10, &roots),
        Located::Found {
            train: Some(50_000),
            test: Some(10_000),
            ..
        }
    ));
    size(&c10.join("data_batch_3.bin"), 10_000 * 3_073 - 100);
    match data::locate(DatasetId::Cifar10, &roots) {
        Located::Invalid { reason, .. } => assert!(
            reason.contains("data_batch_3.bin") && reason.contains("truncated"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(c10.join("data_batch_3.bin")).unwrap();
    match data::locate(DatasetId::Cifar10, &roots) {
        Located::Invalid { reason, .. } => assert!(reason.contains("data_batch_3.bin"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let c100 = tmp.path().join("cifar-100-binary");
    std::fs::create_dir_all(&c100).unwrap();
    size(&c100.join("train.bin"), 50_000 * 3_074);
    size(&c100.join("test.bin"), 10_000 * 3_074 + 1);
    match data::locate(DatasetId::Cifar100, &roots) {
        Located::Invalid { reason, .. } => assert!(
            reason.contains("test.bin") && reason.contains("too long"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
}

/// The real Fashion-MNIST, which `cargo xtask setup` always provides (this test fails, rather
/// than skips, when it is missing: run the set-up).
#[test]
fn real_fashion_mnist() {
    let roots = classwise_trainer::paths::data_roots(None);
    let dir = match data::locate(DatasetId::FashionMnist, &roots) {
        Located::Found { path, .. } => path,
        other => panic!("Fashion-MNIST is not usable ({other:?}); `cargo xtask setup` provides it"),
    };
    let t0 = Instant::now();
    let train = load_fashion_mnist(&dir, Part::Train, Counts::Official).unwrap();
    let t_train = t0.elapsed();
    let t1 = Instant::now();
    let test = load_fashion_mnist(&dir, Part::Test, Counts::Official).unwrap();
    println!(
        "Fashion-MNIST from {}: train {:.2?}, test {:.2?}",
        dir.display(),
        t_train,
        t1.elapsed()
    );
    assert_eq!((train.len(), test.len()), (60_000, 10_000));
    assert_eq!(train.image_shape(), [1, 28, 28]);
    assert_eq!(train.num_classes(), 10);
    assert_eq!(train.class_counts(), vec![6_000; 10]);
    assert_eq!(test.class_counts(), vec![1_000; 10]);
    // Not all black, not all white: a real image's pixels spread over the byte range.
    let (x, _) = train.batch(&[0, 1, 2], Device::Cpu).unwrap();
    let (lo, hi) = (x.min().double_value(&[]), x.max().double_value(&[]));
    assert!(lo == 0.0 && hi > 0.9, "pixel range {lo}..{hi}");

    // The config path finds it too.
    let source = DataSource::Files {
        id: DatasetId::FashionMnist,
        root: Some(dir.clone()),
        options: LoadOptions::default(),
    };
    assert_eq!(data::load(&source, Part::Test, None).unwrap().len(), 10_000);
}

// ---------------------------------------------------------------------------------------------
// Tiny-ImageNet

const WNIDS: [&str; 3] = ["n01443537", "n01629819", "n01641577"];

fn write_jpeg(path: &Path, img: image::DynamicImage) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let f = std::fs::File::create(path).unwrap();
    img.write_with_encoder(JpegEncoder::new_with_quality(f, 95))
        .unwrap();
}

/// A 64×64 image of one colour.
fn flat(rgb: [u8; 3]) -> image::DynamicImage {
    image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(64, 64, image::Rgb(rgb)))
}

/// A 64×64 image with four 32×32 quadrants: top-left, top-right, bottom-left, bottom-right.
fn quadrants(c: [[u8; 3]; 4]) -> image::DynamicImage {
    image::DynamicImage::ImageRgb8(image::RgbImage::from_fn(64, 64, |x, y| {
        image::Rgb(c[(2 * (y / 32) + x / 32) as usize])
    }))
}

/// Class `k`'s colour in train image `j`.
fn train_colour(k: usize, j: usize) -> [u8; 3] {
    [
        (40 + 70 * k) as u8,
        (200 - 60 * j) as u8,
        (90 + 30 * k) as u8,
    ]
}

/// Three classes; two train images each, plus a grayscale third one for class 1; four val
/// images (val_0 … val_3) of classes 2, 0, 1, 2.
fn write_tiny(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("wnids.txt"), WNIDS.join("\n") + "\n").unwrap();
    std::fs::write(
        dir.join("words.txt"),
        "n00001740\tentity\nn01443537\tgoldfish, Carassius auratus\n\
         n01629819\tEuropean fire salamander, Salamandra salamandra\n\
         n01641577\tbullfrog, Rana catesbeiana\n",
    )
    .unwrap();
    for (k, wnid) in WNIDS.iter().enumerate() {
        let images = dir.join("train").join(wnid).join("images");
        for j in 0..2 {
            write_jpeg(
                &images.join(format!("{wnid}_{j}.JPEG")),
                flat(train_colour(k, j)),
            );
        }
        std::fs::write(
            dir.join("train")
                .join(wnid)
                .join(format!("{wnid}_boxes.txt")),
            "",
        )
        .unwrap();
    }
    let gray =
        image::DynamicImage::ImageLuma8(image::GrayImage::from_pixel(64, 64, image::Luma([90])));
    write_jpeg(
        &dir.join("train")
            .join(WNIDS[1])
            .join("images")
            .join(format!("{}_2.JPEG", WNIDS[1])),
        gray,
    );
    let val_classes = [2usize, 0, 1, 2];
    let mut ann = String::new();
    for (i, &k) in val_classes.iter().enumerate() {
        let name = format!("val_{i}.JPEG");
        let img = if i == 0 {
            quadrants([[250, 10, 10], [10, 250, 10], [10, 10, 250], [128, 128, 128]])
        } else {
            flat([(20 * i) as u8, 100, 200])
        };
        write_jpeg(&dir.join("val").join("images").join(&name), img);
        ann.push_str(&format!("{name}\t{}\t0\t10\t50\t63\n", WNIDS[k]));
    }
    std::fs::write(dir.join("val").join("val_annotations.txt"), ann).unwrap();
}

/// Pixel at (c, y, x) of image `i` is within `tol` of `want`.
fn assert_near(d: &Dataset, i: i64, c: i64, y: i64, x: i64, want: u8, tol: i64) {
    let got = u8_at(d.images(), &[i, c, y, x]);
    assert!(
        (got - i64::from(want)).abs() <= tol,
        "image {i} channel {c} ({y},{x}): {got}, expected {want}±{tol}"
    );
}

#[test]
fn tiny_imagenet_labels_rgb_grayscale_and_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny-imagenet-200");
    write_tiny(&dir);
    let counts = Counts::Exactly { train: 7, test: 4 };
    let train = load_tiny_imagenet(&dir, Part::Train, counts, &ImageCache::Off).unwrap();
    assert_eq!(train.len(), 7);
    assert_eq!(train.image_shape(), [3, 64, 64]);
    assert_eq!(train.label_slice(), &[0, 0, 1, 1, 1, 2, 2]);
    assert_eq!(
        train.class_names(),
        &["goldfish", "European fire salamander", "bullfrog"]
    );
    assert_eq!(train.origin().cache, Some(CacheStatus::Disabled));
    // Class order is wnids.txt order, files in name order; planes are R, G, B.
    let mut i = 0;
    for k in 0..3 {
        for j in 0..2 {
            for (c, &v) in train_colour(k, j).iter().enumerate() {
                assert_near(&train, i, c as i64, 20, 33, v, 3);
            }
            i += 1;
        }
        if k == 1 {
            // The grayscale JPEG: three equal planes.
            for c in 0..3 {
                assert_near(&train, i, c, 5, 60, 90, 2);
            }
            i += 1;
        }
    }

    let val = load_tiny_imagenet(&dir, Part::Test, counts, &ImageCache::Off).unwrap();
    assert_eq!(val.label_slice(), &[2, 0, 1, 2]);
    // Quadrants: rows are y, columns are x.
    let q: [[u8; 3]; 4] = [[250, 10, 10], [10, 250, 10], [10, 10, 250], [128, 128, 128]];
    for (quad, (y, x)) in [(8, 8), (8, 56), (56, 8), (56, 56)].into_iter().enumerate() {
        for c in 0..3 {
            assert_near(&val, 0, c, y, x, q[quad][c as usize], 6);
        }
    }
    assert_near(&val, 3, 0, 40, 40, 60, 3);

    // Without words.txt the wnids are the names.
    std::fs::remove_file(dir.join("words.txt")).unwrap();
    let bare = load_tiny_imagenet(&dir, Part::Test, counts, &ImageCache::Off).unwrap();
    assert_eq!(bare.class_names(), &WNIDS);
    // Official counts.
    assert_err_mentions(
        load_tiny_imagenet(&dir, Part::Train, Counts::Official, &ImageCache::Off),
        "train",
        &["7 images, expected 100000"],
    );
}

#[test]
fn tiny_imagenet_errors_name_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny");
    write_tiny(&dir);
    let any = Counts::Any;
    let off = ImageCache::Off;
    let ann = dir.join("val").join("val_annotations.txt");
    let good = std::fs::read_to_string(&ann).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    // Byte offset of line 3 = the lengths of lines 1 and 2 with their newlines.
    let line3 = lines[0].len() + 1 + lines[1].len() + 1;

    let with_line3 = |text: &str| {
        let mut l = lines.clone();
        l[2] = text;
        std::fs::write(&ann, l.join("\n") + "\n").unwrap();
        load_tiny_imagenet(&dir, Part::Test, any, &off)
    };
    assert_err_mentions(
        with_line3("val_2.JPEG\tn01629819\t0\tx\t50\t63"),
        "val_annotations.txt",
        &["line 3", &format!("at byte {line3}"), "\"x\""],
    );
    assert_err_mentions(with_line3("val_2.JPEG"), "val_annotations.txt", &["line 3"]);
    assert_err_mentions(
        with_line3("val_2.JPEG\tn09999999\t0\t1\t2\t3"),
        "val_annotations.txt",
        &["line 3", "n09999999"],
    );
    assert_err_mentions(
        with_line3("val_9.JPEG\tn01629819\t0\t1\t2\t3"),
        "val_annotations.txt",
        &["line 3", "val_9.JPEG"],
    );
    assert_err_mentions(
        with_line3(lines[0]),
        "val_annotations.txt",
        &["line 3", "twice"],
    );
    std::fs::write(&ann, &good).unwrap();

    // A duplicate wnid.
    let wnids = dir.join("wnids.txt");
    std::fs::write(
        &wnids,
        format!("{}\n{}\n{}\n", WNIDS[0], WNIDS[1], WNIDS[0]),
    )
    .unwrap();
    assert_err_mentions(
        load_tiny_imagenet(&dir, Part::Train, any, &off),
        "wnids.txt",
        &["line 3", "twice"],
    );
    std::fs::write(&wnids, WNIDS.join("\n")).unwrap();

    // A file that is not a JPEG, and an image of another size.
    let img = dir.join("train").join(WNIDS[2]).join("images");
    std::fs::write(img.join("zz_bad.JPEG"), b"this is not an image").unwrap();
    assert_err_mentions(
        load_tiny_imagenet(&dir, Part::Train, any, &off),
        "zz_bad.JPEG",
        &["decode"],
    );
    std::fs::remove_file(img.join("zz_bad.JPEG")).unwrap();
    let small = image::DynamicImage::ImageRgb8(image::RgbImage::new(32, 64));
    write_jpeg(&img.join("zz_small.JPEG"), small);
    assert_err_mentions(
        load_tiny_imagenet(&dir, Part::Train, any, &off),
        "zz_small.JPEG",
        &["32×64"],
    );
    // A missing class directory.
    std::fs::remove_dir_all(dir.join("train").join(WNIDS[2])).unwrap();
    assert_err_mentions(
        load_tiny_imagenet(&dir, Part::Train, any, &off),
        WNIDS[2],
        &[],
    );
}

fn same_images(a: &Dataset, b: &Dataset) -> bool {
    a.images().size() == b.images().size() && a.images().equal(b.images())
}

#[test]
fn tiny_imagenet_cache_is_reused_and_rebuilt_on_change() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny-imagenet-200");
    write_tiny(&dir);
    let cache_dir = tmp.path().join("cache");
    let any = Counts::Any;
    let fresh = load_tiny_imagenet(&dir, Part::Train, any, &ImageCache::Off).unwrap();
    for cache in [ImageCache::NextToData, ImageCache::In(cache_dir.clone())] {
        let first = load_tiny_imagenet(&dir, Part::Train, any, &cache).unwrap();
        let Some(CacheStatus::Built { path }) = first.origin().cache.clone() else {
            panic!("first load: {:?}", first.origin().cache);
        };
        assert!(path.is_file(), "{}", path.display());
        // No temporary file is left next to the cache.
        let names: Vec<PathBuf> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(names.is_empty(), "{names:?}");

        let second = load_tiny_imagenet(&dir, Part::Train, any, &cache).unwrap();
        assert_eq!(
            second.origin().cache,
            Some(CacheStatus::Hit { path: path.clone() })
        );
        assert!(same_images(&fresh, &second) && same_images(&first, &second));
        assert_eq!(second.label_slice(), fresh.label_slice());

        // A damaged cache is rebuilt.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        let third = load_tiny_imagenet(&dir, Part::Train, any, &cache).unwrap();
        assert!(
            matches!(third.origin().cache, Some(CacheStatus::Rebuilt { .. })),
            "{:?}",
            third.origin().cache
        );
        assert!(same_images(&fresh, &third));
    }
    // Changing an image (a different file size) rebuilds, and the new pixels are used.
    let cache = ImageCache::In(cache_dir.clone());
    let target = dir
        .join("train")
        .join(WNIDS[0])
        .join("images")
        .join(format!("{}_1.JPEG", WNIDS[0]));
    let before = std::fs::metadata(&target).unwrap().len();
    write_jpeg(
        &target,
        quadrants([[250, 10, 10], [10, 250, 10], [10, 10, 250], [128, 128, 128]]),
    );
    assert_ne!(before, std::fs::metadata(&target).unwrap().len());
    let changed = load_tiny_imagenet(&dir, Part::Train, any, &cache).unwrap();
    assert!(
        matches!(changed.origin().cache, Some(CacheStatus::Rebuilt { .. })),
        "{:?}",
        changed.origin().cache
    );
    assert_near(&changed, 1, 1, 8, 56, 250, 6);
    // Adding an image rebuilds too.
    write_jpeg(
        &dir.join("train")
            .join(WNIDS[2])
            .join("images")
            .join("extra.JPEG"),
        flat([1, 2, 3]),
    );
    let added = load_tiny_imagenet(&dir, Part::Train, any, &cache).unwrap();
    assert_eq!(added.len(), fresh.len() + 1);
    assert!(matches!(
        added.origin().cache,
        Some(CacheStatus::Rebuilt { .. })
    ));
    // The val part has its own cache.
    let val = load_tiny_imagenet(&dir, Part::Test, any, &cache).unwrap();
    assert!(matches!(
        val.origin().cache,
        Some(CacheStatus::Built { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Config path and Dataset

#[test]
fn data_source_finds_the_directory_and_round_trips_as_json() {
    let tmp = tempfile::tempdir().unwrap();
    write_cifar10(&tmp.path().join("cifar-10-batches-bin"), 2, 5);
    let source = DataSource::Files {
        id: DatasetId::Cifar10,
        root: Some(tmp.path().to_path_buf()),
        options: LoadOptions {
            counts: Counts::Exactly { train: 10, test: 5 },
            ..LoadOptions::default()
        },
    };
    let json = serde_json::to_string(&source).unwrap();
    let back: DataSource = serde_json::from_str(&json).unwrap();
    assert_eq!(back, source);
    assert_eq!(data::load(&back, Part::Test, None).unwrap().len(), 5);
    assert_eq!(data::load(&back, Part::Train, None).unwrap().len(), 10);

    let missing = DataSource::Files {
        id: DatasetId::Cifar100,
        root: Some(tmp.path().to_path_buf()),
        options: LoadOptions::default(),
    };
    let msg = data::load(&missing, Part::Test, None)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("cifar-100-binary"), "{msg}");

    let synthetic: DataSource =
        serde_json::from_str(r#"{"kind": "synthetic", "classes": 3, "seed": 5}"#).unwrap();
    let d = data::load(&synthetic, Part::Train, None).unwrap();
    assert_eq!(d.num_classes(), 3);
}

#[test]
fn batches_are_f32_in_unit_range_on_the_device_and_indices_are_checked() {
    let spec = SyntheticSpec {
        classes: 4,
        train_per_class: 5,
        ..SyntheticSpec::default()
    };
    let d = spec.generate(Part::Train).unwrap();
    let idx = [3i64, 0, 17];
    let (x, y) = d.batch(&idx, Device::Cpu).unwrap();
    assert_eq!(x.kind(), Kind::Float);
    assert_eq!(x.size(), vec![3, 1, 28, 28]);
    for (b, &i) in idx.iter().enumerate() {
        assert_eq!(y.int64_value(&[b as i64]), d.label_slice()[i as usize]);
        for (r, c) in [(0, 0), (13, 20)] {
            let want = u8_at(d.images(), &[i, 0, r, c]) as f64 / 255.0;
            let got = x.double_value(&[b as i64, 0, r, c]);
            assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        }
    }
    assert!(d.batch(&[20], Device::Cpu).is_err());
    assert!(d.batch(&[-1], Device::Cpu).is_err());
    let sub = d.subset(&[4, 5, 6]).unwrap();
    assert_eq!(sub.label_slice(), &d.label_slice()[4..7]);
    assert!(sub.images().equal(&d.images().narrow(0, 4, 3)));
}

// ---------------------------------------------------------------------------------------------
// Synthetic

#[test]
fn synthetic_is_deterministic_with_class_dependent_noise() {
    let spec = SyntheticSpec {
        classes: 5,
        train_per_class: 40,
        test_per_class: 8,
        channels: 3,
        side: 12,
        seed: 11,
        noise: [0.05, 0.4],
    };
    let a = spec.generate(Part::Train).unwrap();
    let b = spec.generate(Part::Train).unwrap();
    assert!(same_images(&a, &b));
    assert_eq!(a.len(), 200);
    assert_eq!(a.image_shape(), [3, 12, 12]);
    assert_eq!(a.class_counts(), vec![40; 5]);
    let test = spec.generate(Part::Test).unwrap();
    assert_eq!(test.class_counts(), vec![8; 5]);
    assert!(!same_images(
        &test,
        &a.subset(&(0..40).collect::<Vec<_>>()).unwrap()
    ));
    let other = SyntheticSpec { seed: 12, ..spec }
        .generate(Part::Train)
        .unwrap();
    assert!(!same_images(&a, &other));

    // Spread around the class mean grows with the class index.
    let x = a.images().to_kind(Kind::Float) / 255.0;
    let spread: Vec<f64> = (0..5)
        .map(|k| {
            let idx: Vec<i64> = (0..200).filter(|i| i % 5 == k).collect();
            let xs = x.index_select(0, &Tensor::from_slice(&idx));
            let dev = &xs - xs.mean_dim(0, true, Kind::Float);
            dev.abs().mean(Kind::Float).double_value(&[])
        })
        .collect();
    assert!(spread.windows(2).all(|w| w[0] < w[1]), "{spread:?}");
    assert!(
        SyntheticSpec {
            channels: 2,
            ..spec
        }
        .generate(Part::Train)
        .is_err()
    );
}

// ---------------------------------------------------------------------------------------------
// Splits

/// Labels of three classes, interleaved unevenly: class sizes 10, 7, 4.
fn uneven_labels() -> Vec<i64> {
    let mut labels = Vec::new();
    let mut left = [10, 7, 4];
    while left.iter().any(|&l| l > 0) {
        for (k, l) in left.iter_mut().enumerate() {
            if *l > 0 {
                labels.push(k as i64);
                *l -= 1;
            }
        }
    }
    labels
}

/// The indices of class `k`, in order.
fn members(labels: &[i64], k: i64) -> Vec<i64> {
    (0..labels.len() as i64)
        .filter(|&i| labels[i as usize] == k)
        .collect()
}

fn assert_partition(split: &Split, n: usize) {
    let mut all: Vec<i64> = split.train.iter().chain(&split.val).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..n as i64).collect::<Vec<_>>());
    assert!(split.check().is_ok());
}

#[test]
fn first_and_last_per_class_splits() {
    let labels = uneven_labels();
    for (rule, take_last) in [(SplitRule::First, false), (SplitRule::Last, true)] {
        let spec = SplitSpec {
            rule,
            size: ValSize::PerClass(3),
        };
        let split = Split::new(&labels, 3, &spec).unwrap();
        let mut want = Vec::new();
        for k in 0..3 {
            let m = members(&labels, k);
            let chosen = if take_last {
                &m[m.len() - 3..]
            } else {
                &m[..3]
            };
            want.extend_from_slice(chosen);
        }
        want.sort_unstable();
        assert_eq!(split.val, want, "{rule:?}");
        assert_partition(&split, labels.len());
        assert!(split.train.windows(2).all(|w| w[0] < w[1]));
    }
    // WAT on a CIFAR-like layout: 10 classes of 50, last 3 → positions 47..49 of each class.
    let labels: Vec<i64> = (0..500).map(|i| (i * 7 % 10) as i64).collect();
    let spec = SplitSpec {
        rule: SplitRule::Last,
        size: ValSize::PerClass(3),
    };
    let split = Split::new(&labels, 10, &spec).unwrap();
    for k in 0..10 {
        let m = members(&labels, k);
        let val: Vec<i64> = split
            .val
            .iter()
            .copied()
            .filter(|&i| labels[i as usize] == k)
            .collect();
        assert_eq!(val, m[47..50].to_vec());
    }
    // Too many per class.
    let too_many = SplitSpec {
        rule: SplitRule::First,
        size: ValSize::PerClass(5),
    };
    assert!(Split::new(&uneven_labels(), 3, &too_many).is_err());
    assert!(Split::new(&[0, 3], 3, &SplitSpec::none()).is_err());
    let none = Split::new(&labels, 10, &SplitSpec::none()).unwrap();
    assert!(none.val.is_empty() && none.train.len() == 500);
}

#[test]
fn fraction_and_random_splits_and_saving() {
    let labels = uneven_labels();
    let frac = SplitSpec {
        rule: SplitRule::First,
        size: ValSize::Fraction(0.3),
    };
    let split = Split::new(&labels, 3, &frac).unwrap();
    // round(0.3·10) = 3, round(0.3·7) = 2, round(0.3·4) = 1.
    for (k, want) in [(0, 3), (1, 2), (2, 1)] {
        let got = split
            .val
            .iter()
            .filter(|&&i| labels[i as usize] == k)
            .count();
        assert_eq!(got, want, "class {k}");
    }
    for bad in [1.0, -0.1, f64::NAN] {
        let spec = SplitSpec {
            rule: SplitRule::First,
            size: ValSize::Fraction(bad),
        };
        assert!(Split::new(&labels, 3, &spec).is_err(), "{bad}");
    }

    let random = |seed| SplitSpec {
        rule: SplitRule::Random { seed },
        size: ValSize::PerClass(2),
    };
    let a = Split::new(&labels, 3, &random(1)).unwrap();
    let b = Split::new(&labels, 3, &random(1)).unwrap();
    assert_eq!(a, b);
    assert_partition(&a, labels.len());
    for k in 0..3 {
        assert_eq!(
            a.val.iter().filter(|&&i| labels[i as usize] == k).count(),
            2
        );
    }
    // Some seed picks differently from seed 1 (ten seeds all picking the same would be a bug).
    assert!((2..12).any(|s| Split::new(&labels, 3, &random(s)).unwrap().val != a.val));
    // And some seed differs from the first-N rule.
    let first = Split::new(
        &labels,
        3,
        &SplitSpec {
            rule: SplitRule::First,
            size: ValSize::PerClass(2),
        },
    )
    .unwrap();
    assert!((1..12).any(|s| Split::new(&labels, 3, &random(s)).unwrap().val != first.val));

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("split.json");
    a.save(&path).unwrap();
    assert_eq!(Split::load(&path).unwrap(), a);
    // A split that overlaps is refused on loading.
    let mut broken = a.clone();
    broken.train.push(broken.val[0]);
    std::fs::write(&path, serde_json::to_string(&broken).unwrap()).unwrap();
    assert!(Split::load(&path).is_err());
    std::fs::write(&path, "{ not json").unwrap();
    assert_err_mentions(Split::load(&path), "split.json", &["line 1"]);
}

// ---------------------------------------------------------------------------------------------
// Augmentation

/// 1×1×3×3 with values 1..9 row by row.
fn three_by_three() -> Tensor {
    Tensor::from_slice(&[1f32, 2., 3., 4., 5., 6., 7., 8., 9.]).view([1, 1, 3, 3])
}

fn values(t: &Tensor) -> Vec<f32> {
    let t = t.flatten(0, -1);
    let mut v = vec![0f32; t.numel()];
    t.copy_data(&mut v, t.numel());
    v
}

#[test]
fn crop_with_zero_and_reflect_padding_and_flip_on_a_hand_made_image() {
    let x = three_by_three();
    let d = |dy, dx, flip| [Draw { dy, dx, flip }];
    let zero = Augment {
        crop_padding: 1,
        pad_mode: PadMode::Zero,
        flip: false,
    };
    let reflect = Augment {
        pad_mode: PadMode::Reflect,
        ..zero
    };
    // Zero padding; offset (1,1) is no shift.
    assert_eq!(
        values(&zero.apply_draws(&x, &d(1, 1, false)).unwrap()),
        values(&x)
    );
    assert_eq!(
        values(&zero.apply_draws(&x, &d(0, 0, false)).unwrap()),
        [0., 0., 0., 0., 1., 2., 0., 4., 5.]
    );
    assert_eq!(
        values(&zero.apply_draws(&x, &d(2, 1, false)).unwrap()),
        [4., 5., 6., 7., 8., 9., 0., 0., 0.]
    );
    // Reflect padding mirrors without repeating the edge: row -1 is row 1, column -1 column 1.
    assert_eq!(
        values(&reflect.apply_draws(&x, &d(0, 0, false)).unwrap()),
        [5., 4., 5., 2., 1., 2., 5., 4., 5.]
    );
    assert_eq!(
        values(&reflect.apply_draws(&x, &d(2, 2, false)).unwrap()),
        [5., 6., 5., 8., 9., 8., 5., 6., 5.]
    );
    // Flip after the crop.
    assert_eq!(
        values(&zero.apply_draws(&x, &d(1, 1, true)).unwrap()),
        [3., 2., 1., 6., 5., 4., 9., 8., 7.]
    );
    assert_eq!(
        values(&zero.apply_draws(&x, &d(0, 2, true)).unwrap()),
        [0., 0., 0., 0., 3., 2., 0., 6., 5.]
    );
    // Bad inputs are errors, not panics.
    assert!(zero.apply_draws(&x, &d(3, 0, false)).is_err());
    assert!(zero.apply_draws(&x, &[]).is_err());
    assert!(
        zero.apply_draws(&x.view([1, 3, 3]), &d(0, 0, false))
            .is_err()
    );
    let too_wide = Augment {
        crop_padding: 3,
        ..reflect
    };
    assert!(too_wide.apply_draws(&x, &d(0, 0, false)).is_err());
}

#[test]
fn augmentation_matches_manual_crops_and_replays_from_the_seed() {
    let spec = SyntheticSpec {
        classes: 3,
        train_per_class: 6,
        channels: 3,
        side: 32,
        ..SyntheticSpec::default()
    };
    let d = spec.generate(Part::Train).unwrap();
    let idx: Vec<i64> = (0..18).collect();
    let (x, _) = d.batch(&idx, Device::Cpu).unwrap();
    for mode in [PadMode::Zero, PadMode::Reflect] {
        let aug = Augment::crop_flip(4, mode);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let draws = aug.draw(18, &mut ChaCha8Rng::seed_from_u64(3));
        let out = aug.apply(&x, &mut rng).unwrap();
        assert_eq!(out.size(), x.size());
        let padded = match mode {
            PadMode::Zero => x.constant_pad_nd([4, 4, 4, 4]),
            PadMode::Reflect => x.reflection_pad2d([4, 4, 4, 4]),
        };
        for (b, dr) in draws.iter().enumerate() {
            let crop = padded
                .get(b as i64)
                .narrow(1, dr.dy as i64, 32)
                .narrow(2, dr.dx as i64, 32);
            let want = if dr.flip { crop.flip([2]) } else { crop };
            assert!(out.get(b as i64).equal(&want), "{mode:?} image {b} {dr:?}");
        }
        // Same seed, same result; another seed, another one.
        let again = aug.apply(&x, &mut ChaCha8Rng::seed_from_u64(3)).unwrap();
        assert!(again.equal(&out));
        let other = aug.apply(&x, &mut ChaCha8Rng::seed_from_u64(4)).unwrap();
        assert!(!other.equal(&out));
    }
    // Flip only: each image is itself or its exact mirror image.
    let flip = Augment {
        flip: true,
        ..Augment::none()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let draws = flip.draw(18, &mut ChaCha8Rng::seed_from_u64(9));
    let out = flip.apply(&x, &mut rng).unwrap();
    for (b, dr) in draws.iter().enumerate() {
        let xb = x.get(b as i64);
        let want = if dr.flip { xb.flip([2]) } else { xb };
        assert!(out.get(b as i64).equal(&want));
    }
    assert!(Augment::none().apply(&x, &mut rng).unwrap().equal(&x));

    // The draws cover every offset and flip about half the time.
    let aug = Augment::crop_flip(4, PadMode::Zero);
    let many = aug.draw(4000, &mut ChaCha8Rng::seed_from_u64(0));
    for o in 0..=8 {
        assert!(
            many.iter().any(|d| d.dy == o) && many.iter().any(|d| d.dx == o),
            "{o}"
        );
    }
    assert!(many.iter().all(|d| d.dy <= 8 && d.dx <= 8));
    let flips = many.iter().filter(|d| d.flip).count() as f64 / 4000.0;
    assert!((0.45..0.55).contains(&flips), "{flips}");
}
