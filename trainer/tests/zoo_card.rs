//! Model cards, the catalogue of RobustBench's L∞ zoo, and `export`: what a card accepts and
//! refuses, and that an exported model is a PyTorch state dict of the reference's names.
//!
//! Expected values come from RobustBench's `model_info/cifar10/Linf/Carmon2019Unlabeled.json`
//! (clean 89.69 %, AutoAttack 59.53 %) and from the reference state dicts recorded by
//! `tools/zoo/fixtures.py` (`tests/fixtures/zoo/shapes.json`), not from the code under test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use classwise_trainer::data::DatasetId;
use classwise_trainer::model::import::Checkpoint;
use classwise_trainer::model::{Architecture, Model, ModelSpec, Normalization};
use classwise_trainer::zoo::card::NoNormalization;
use classwise_trainer::zoo::{
    CardNormalization, CardSource, Catalogue, ModelCard, ThreatModel, agree_with_catalogue, export,
};
use tch::Device;

const CPU: Device = Device::Cpu;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zoo")
}

/// The card of the fixture `dm_wide_resnet_relu.pt` (a 10-class DM WRN-10-1).
fn dm_card() -> ModelCard {
    ModelCard {
        name: "tiny-dm".into(),
        file: fixtures().join("dm_wide_resnet_relu.pt"),
        sha256: None,
        dataset: DatasetId::Cifar10,
        threat_model: ThreatModel::Linf,
        eps: "8/255".into(),
        architecture: Architecture::DmWideResNet {
            depth: 10,
            width: 1,
            activation: classwise_trainer::model::Activation::Relu,
        },
        normalization: CardNormalization::Some(Normalization::channels(
            vec![0.4914, 0.4822, 0.4465],
            vec![0.2471, 0.2435, 0.2616],
        )),
        source: String::new(),
        citation: String::new(),
        catalogue: None,
    }
}

fn source(card: ModelCard) -> CardSource {
    CardSource::new(card, CPU, std::env::temp_dir(), None)
}

#[test]
fn the_catalogue_builds_every_supported_entry() {
    let cat = Catalogue::builtin().unwrap();
    let count = |d| cat.model.iter().filter(|e| e.dataset == d).count();
    assert_eq!(
        (count(DatasetId::Cifar10), count(DatasetId::Cifar100)),
        (57, 31)
    );
    for e in &cat.model {
        let card = e.card(Path::new("weights.pt"));
        card.check()
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        agree_with_catalogue(&card, &cat).unwrap();
    }
    let carmon = cat.find("Carmon2019Unlabeled", None).unwrap();
    assert_eq!((carmon.clean_acc, carmon.autoattack_acc), (89.69, 59.53));
    let want = Architecture::WideResNet {
        depth: 28,
        widen: 10,
        sub_block1: true,
    };
    assert_eq!(carmon.architecture, want);
    assert_eq!(carmon.normalization, None);
}

#[test]
fn unsupported_unknown_and_ambiguous_names_are_refused_with_why() {
    let cat = Catalogue::builtin().unwrap();
    let err = cat
        .find("Engstrom2019Robustness", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Bottleneck") && err.contains("ResNet-18"),
        "{err}"
    );
    let err = cat.find("NoSuchModel2030", None).unwrap_err().to_string();
    assert!(err.contains("classwise zoo list"), "{err}");
    let err = cat
        .find("Rice2020Overfitting", None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("cifar10 and cifar100"), "{err}");
    let rice = cat.find("cifar100/Rice2020Overfitting", None).unwrap();
    assert_eq!(rice.dataset, DatasetId::Cifar100);
    assert_eq!(rice.buffers, ["mu", "sigma"]);
}

#[test]
fn a_card_without_the_catalogues_normalisation_is_refused() {
    let cat = Catalogue::builtin().unwrap();
    let entry = cat.find("cifar10/Rice2020Overfitting", None).unwrap();
    let mut card = entry.card(Path::new("rice.pt"));
    card.normalization = CardNormalization::None(NoNormalization::None);
    card.catalogue = None; // the name alone ties it to the entry
    let err = agree_with_catalogue(&card, &cat).unwrap_err().to_string();
    assert!(
        err.contains("normalization") && err.contains("none"),
        "{err}"
    );
    assert!(err.contains("0.4914"), "{err}");
}

fn write_card(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("model.card.toml");
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn a_card_must_state_its_normalisation_even_when_none() {
    let tmp = tempfile::tempdir().unwrap();
    let body = "name = \"m\"\nfile = \"m.pt\"\ndataset = \"cifar10\"\nthreat_model = \"Linf\"\n\
                eps = \"8/255\"\narchitecture = { kind = \"resnet18\" }\n";
    let err = ModelCard::read(&write_card(tmp.path(), body))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("model.card.toml") && err.contains("normalization"),
        "{err}"
    );
    let with_none = format!("{body}normalization = \"none\"\n");
    let card = ModelCard::read(&write_card(tmp.path(), &with_none)).unwrap();
    assert_eq!(card.spec().normalization, None);
    assert_eq!(card.file, tmp.path().join("m.pt"));
    let l2 = with_none.replace("Linf", "L2");
    let err = ModelCard::read(&write_card(tmp.path(), &l2))
        .unwrap_err()
        .to_string();
    assert!(err.contains("threat_model"), "{err}");
}

#[test]
fn a_data_set_with_other_classes_than_the_head_is_refused() {
    let mut card = dm_card();
    card.dataset = DatasetId::Cifar100;
    card.normalization = CardNormalization::Some(Normalization::cifar100());
    let err = source(card).load().unwrap_err().to_string();
    assert!(err.contains("dm_wide_resnet_relu.pt"), "{err}");
    assert!(
        err.contains("`logits.weight` has 10 outputs") && err.contains("100 classes"),
        "{err}"
    );
}

#[test]
fn a_wrong_sha256_is_refused_before_loading() {
    let mut card = dm_card();
    card.sha256 = Some("00".repeat(32));
    let err = source(card.clone()).load().unwrap_err().to_string();
    assert!(err.contains("SHA-256") && err.contains("tiny-dm"), "{err}");
    // `sha256sum tests/fixtures/zoo/dm_wide_resnet_relu.pt` (regenerate with the fixtures).
    let digest = "ed3850654046fceba33fff2621037554a4db5bd392aea1ede92e3293f44b051f";
    card.sha256 = Some(digest.to_uppercase());
    assert!(source(card.clone()).load().is_ok());
    card.sha256 = None;
    assert_eq!(card.verify_file().unwrap(), digest);
}

#[test]
fn an_export_is_the_reference_state_dict_and_reloads_through_its_card() {
    let card = dm_card();
    let model = source(card.clone()).load().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("exported.safetensors");
    let facts = export::CardFacts {
        name: "tiny-dm-export".into(),
        dataset: Some(DatasetId::Cifar10),
        eps: "8/255".into(),
        source: "a test".into(),
    };
    let written = export::export(&model, &out, &facts).unwrap();
    // The same names (BatchNorm counters included) and shapes as the file torch.save wrote.
    let original = Checkpoint::open(&card.file).unwrap();
    let exported = Checkpoint::open(&out).unwrap();
    assert_eq!(exported.names(), original.names());
    for name in original.names() {
        assert_eq!(exported.shape(&name), original.shape(&name), "{name}");
    }
    let card_path = written.card.expect("a CIFAR-10 model gets a card");
    let reread = ModelCard::read(&card_path).unwrap();
    assert_eq!(reread.spec(), card.spec());
    let again = source(reread).load().unwrap();
    let same = model
        .state()
        .iter()
        .zip(again.state())
        .all(|((n, a), (m, b))| *n == m && a.equal(&b));
    assert!(same, "the exported weights differ");
}

/// A full-size ResNet-18's export has exactly the names and shapes of RobustBench's
/// `ResNet18().state_dict()`, counters (shape []) included.
#[test]
fn a_full_size_export_matches_the_reference_state_dict() {
    let text = std::fs::read_to_string(fixtures().join("shapes.json")).unwrap();
    let all: BTreeMap<String, BTreeMap<String, Vec<i64>>> = serde_json::from_str(&text).unwrap();
    let model = Model::new(
        &ModelSpec::new(Architecture::ResNet18, 10, [3, 32, 32]),
        CPU,
        0,
    )
    .unwrap();
    let ours: BTreeMap<String, Vec<i64>> = export::pytorch_state(&model)
        .into_iter()
        .map(|(n, t)| (n, t.size()))
        .collect();
    assert_eq!(ours, all["resnet18"]);
}
