//! classwise's zoo architectures against RobustBench's own definitions, and the checkpoint
//! reader against files `torch.save` wrote.
//!
//! The fixtures in `tests/fixtures/zoo/` were written by `tools/zoo/fixtures.py` from the
//! reference code of robustbench 1.1.1 (tiny widths and depths; see that script): each
//! model's weights as `torch.save(model.state_dict())`, the logits PyTorch computed on a fixed
//! batch, and the state-dict names and shapes of full-size networks. Nothing here is computed
//! by the code under test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use classwise_trainer::model::import::{Checkpoint, Format};
use classwise_trainer::model::{Architecture, Model, ModelSpec, Normalization};
use serde::Deserialize;
use tch::nn::ModuleT;
use tch::{Device, Kind, Tensor};

const CPU: Device = Device::Cpu;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zoo")
}

#[derive(Deserialize)]
struct Manifest {
    models: BTreeMap<String, Fixture>,
}

#[derive(Deserialize)]
struct Fixture {
    file: String,
    architecture: Architecture,
    num_classes: usize,
    normalization: Option<Normalization>,
    source: String,
}

impl Fixture {
    fn spec(&self) -> ModelSpec {
        ModelSpec {
            architecture: self.architecture.clone(),
            num_classes: self.num_classes,
            input_shape: [3, 32, 32],
            normalization: self.normalization.clone(),
        }
    }
}

fn manifest() -> Manifest {
    let text = std::fs::read_to_string(dir().join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn expected() -> BTreeMap<String, Tensor> {
    Tensor::read_safetensors(dir().join("expected.safetensors"))
        .unwrap()
        .into_iter()
        .collect()
}

/// max |a − b| / max |b|: the relative error of a batch of logits.
fn relative_error(a: &Tensor, b: &Tensor) -> f64 {
    let diff = (a - b).abs().max().double_value(&[]);
    diff / b.abs().max().double_value(&[])
}

#[test]
fn every_family_computes_the_reference_logits() {
    let expected = expected();
    let input = &expected["input"];
    let manifest = manifest();
    assert!(manifest.models.len() >= 8, "fixtures missing");
    for (name, fixture) in &manifest.models {
        let (model, _) = Model::import(&dir().join(&fixture.file), &fixture.spec(), CPU)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let logits = tch::no_grad(|| model.forward_t(input, false));
        let want = &expected[&format!("{name}.logits")];
        assert_eq!(logits.size(), want.size(), "{name}");
        let err = relative_error(&logits, want);
        assert!(
            err <= 1e-5,
            "{name} ({}): relative error {err:e}",
            fixture.source
        );
    }
}

#[derive(Deserialize)]
struct Shapes(BTreeMap<String, BTreeMap<String, Vec<i64>>>);

/// The full-size networks have exactly the reference state-dict names and shapes (the
/// reference's `num_batches_tracked` counters and unused `sub_block1` aside).
#[test]
fn full_size_networks_have_the_reference_names_and_shapes() {
    let text = std::fs::read_to_string(dir().join("shapes.json")).unwrap();
    let Shapes(all) = serde_json::from_str(&text).unwrap();
    let dm = |depth, width| Architecture::DmWideResNet {
        depth,
        width,
        activation: classwise_trainer::model::Activation::Swish,
    };
    let cases = [
        ("wide_resnet-28-10", Architecture::wide_resnet(28, 10)),
        (
            "wide_resnet-34-20-sub_block1",
            Architecture::wide_resnet(34, 20),
        ),
        ("wide_resnet-70-16", Architecture::wide_resnet(70, 16)),
        ("dm_wide_resnet-70-16", dm(70, 16)),
        (
            "dm_preact_resnet-18",
            Architecture::DmPreActResNet {
                depth: 18,
                activation: classwise_trainer::model::Activation::Swish,
                base_width: 64,
            },
        ),
        ("resnet18", Architecture::ResNet18),
    ];
    for (name, arch) in cases {
        let reference: BTreeMap<String, Vec<i64>> = all[name]
            .iter()
            .filter(|(k, _)| !k.ends_with("num_batches_tracked") && !k.starts_with("sub_block1."))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let model = Model::new(&ModelSpec::new(arch, 10, [3, 32, 32]), CPU, 0).unwrap();
        let ours: BTreeMap<String, Vec<i64>> = model.state_shapes().into_iter().collect();
        assert_eq!(ours, reference, "{name}");
    }
}

fn preact_fixture() -> (ModelSpec, PathBuf) {
    let fixture = &manifest().models["dm_preact_resnet"];
    (fixture.spec(), dir().join(&fixture.file))
}

fn state(model: &Model) -> Vec<(String, Tensor)> {
    model.state()
}

fn same_state(a: &Model, b: &Model) -> bool {
    state(a)
        .iter()
        .zip(state(b))
        .all(|((n, x), (m, y))| *n == m && x.equal(&y))
}

#[test]
fn legacy_nested_and_data_parallel_checkpoints_load_the_same_weights() {
    let (spec, plain) = preact_fixture();
    let (reference, map) = Model::import(&plain, &spec, CPU).unwrap();
    assert_eq!(map.nest, None);
    let variants = dir().join("variants");
    for (file, nest) in [
        ("legacy.pt", None),
        ("wat_style.pth", Some("state_dict")),
        ("nested_model.pt", Some("model")),
    ] {
        let (model, map) = Model::import(&variants.join(file), &spec, CPU)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(map.nest.as_deref(), nest, "{file}");
        assert!(same_state(&model, &reference), "{file}: other weights");
    }
}

#[test]
fn a_wat_checkpoint_ignores_everything_outside_its_state_dict() {
    let (spec, _) = preact_fixture();
    let (_, map) = Model::import(&dir().join("variants/wat_style.pth"), &spec, CPU).unwrap();
    // The state dict's BatchNorm counters: 1 stem-free BN per block input, 2 per block, final.
    let counters = map
        .ignored
        .iter()
        .filter(|n| n.ends_with("num_batches_tracked"));
    assert_eq!(counters.count(), 2 * 8 + 1);
    assert!(
        map.kept
            .iter()
            .all(|(_, file)| file.starts_with("state_dict.module."))
    );
}

#[test]
fn a_pickled_call_is_refused_without_running_it() {
    let path = dir().join("variants/code.pt");
    let err = Checkpoint::open(&path).expect_err("a pickled os.system call must be refused");
    let text = err.to_string();
    assert!(text.contains("code.pt"), "{text}");
    assert!(text.contains("`hook`"), "{text}");
    assert!(text.contains("posix.system"), "{text}");
}

#[test]
fn a_truncated_checkpoint_is_an_error_naming_the_file() {
    let (spec, _) = preact_fixture();
    let err =
        Model::import(&dir().join("variants/truncated.pt"), &spec, CPU).expect_err("truncated");
    let text = err.to_string();
    assert!(
        text.contains("truncated.pt") && text.contains("not a readable PyTorch checkpoint"),
        "{text}"
    );
}

#[test]
fn a_file_that_is_no_checkpoint_is_an_error_naming_the_file() {
    let (spec, _) = preact_fixture();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("noise.pth");
    let bytes: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&path, bytes).unwrap();
    let err = Model::import(&path, &spec, CPU)
        .expect_err("noise")
        .to_string();
    assert!(
        err.contains("noise.pth") && err.contains("not a readable PyTorch checkpoint"),
        "{err}"
    );
    let empty = tmp.path().join("empty.safetensors");
    classwise_trainer::model::safetensors::save_tensors(&empty, &[]).unwrap();
    let err = Model::import(&empty, &spec, CPU)
        .expect_err("no tensors")
        .to_string();
    assert!(
        err.contains("empty.safetensors") && err.contains("holds no tensors"),
        "{err}"
    );
}

#[test]
fn another_architecture_lists_every_mismatch_with_both_shapes() {
    let (_, path) = preact_fixture();
    let mut spec = manifest().models["dm_preact_resnet"].spec();
    spec.num_classes = 100;
    let err = Model::import(&path, &spec, CPU)
        .expect_err("heads differ")
        .to_string();
    assert!(err.contains("dm_preact_resnet.pt"), "{err}");
    assert!(err.contains("wrongly shaped (2)"), "{err}");
    assert!(
        err.contains("`logits.weight` file [10, 16] model [100, 16]"),
        "{err}"
    );
    assert!(err.contains("`logits.bias` file [10] model [100]"), "{err}");
    let wrn = ModelSpec::new(Architecture::wide_resnet(10, 1), 10, [3, 32, 32]);
    let err = Model::import(&path, &wrn, CPU)
        .expect_err("another family")
        .to_string();
    assert!(
        err.contains("missing from the file") && err.contains("`block1.layer.0.conv1.weight`"),
        "{err}"
    );
    assert!(
        err.contains("in the file, not in the model") && err.contains("`conv_2d.weight`"),
        "{err}"
    );
}

#[test]
fn sub_block1_weights_are_unexpected_unless_the_spec_says_so() {
    let fixture = &manifest().models["wide_resnet"];
    let path = dir().join(&fixture.file);
    let mut spec = fixture.spec();
    spec.architecture = Architecture::wide_resnet(10, 1);
    let err = Model::import(&path, &spec, CPU)
        .expect_err("sub_block1 keys")
        .to_string();
    assert!(err.contains("`sub_block1.layer.0.conv1.weight`"), "{err}");
    assert!(Model::import(&path, &fixture.spec(), CPU).is_ok());
}

#[test]
fn normalisation_buffers_must_agree_with_the_spec() {
    let fixture = &manifest().models["Rice2020OverfittingNet"];
    let path = dir().join(&fixture.file);
    let mut spec = fixture.spec();
    spec.normalization = None;
    let err = Model::import(&path, &spec, CPU)
        .expect_err("no normalisation")
        .to_string();
    assert!(
        err.contains("`mu`") && err.contains("`sigma`") && err.contains("normalisation is none"),
        "{err}"
    );
    spec.normalization = Some(Normalization::cifar100());
    let err = Model::import(&path, &spec, CPU)
        .expect_err("other statistics")
        .to_string();
    assert!(err.contains("Rice2020OverfittingNet.pt"), "{err}");
}

#[test]
fn safetensors_files_are_read_too() {
    let (spec, plain) = preact_fixture();
    let (reference, _) = Model::import(&plain, &spec, CPU).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("w.safetensors");
    let halves: Vec<(String, Tensor)> = reference
        .state()
        .into_iter()
        .map(|(n, t)| {
            (
                format!("module.{n}"),
                t.to_kind(Kind::Half).to_kind(Kind::Float),
            )
        })
        .collect();
    classwise_trainer::model::safetensors::save_tensors(&path, &halves).unwrap();
    let checkpoint = Checkpoint::open(&path).unwrap();
    assert_eq!(checkpoint.format, Format::Safetensors);
    let (model, _) = Model::import(&path, &spec, CPU).unwrap();
    let (n, t) = &model.state()[0];
    assert!(t.equal(&halves[0].1), "{n}");
}
