//! `classwise zoo run`'s library: several cards evaluated with AutoAttack into one leaderboard,
//! resumable per model (a finished model is read back, not evaluated again, unless its weights
//! or the settings changed), refusing models of different data sets.
//!
//! The models are the tiny fixtures of `tests/fixtures/zoo/` (random weights) on a synthetic
//! CIFAR-10 written here: this checks the mechanics, not any accuracy.

use std::path::{Path, PathBuf};

use classwise_core::record::{Leaderboard, Reported};
use classwise_trainer::data::synth::{SynthSpec, write};
use classwise_trainer::data::{Counts, DataSource, DatasetId, LoadOptions};
use classwise_trainer::eval::autoattack::{AaAttack, Version};
use classwise_trainer::eval::job::{AutoAttackJob, EvalJob, EvalRequest};
use classwise_trainer::zoo::ModelCard;
use classwise_trainer::zoo::leaderboard::{self, Arena, Contender};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zoo")
}

fn card(name: &str, file: &str, architecture: &str, normalization: &str) -> ModelCard {
    let text = format!(
        "name = \"{name}\"\nfile = \"{file}\"\ndataset = \"cifar10\"\nthreat_model = \"Linf\"\n\
         eps = \"8/255\"\narchitecture = {architecture}\nnormalization = {normalization}\n"
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("card.toml");
    std::fs::write(&path, text).unwrap();
    let mut card = ModelCard::read(&path).unwrap();
    card.file = fixtures().join(file);
    card
}

fn contenders() -> Vec<Contender> {
    let c10 = "{ mean = [0.4914, 0.4822, 0.4465], std = [0.2471, 0.2435, 0.2616] }";
    let wrn = "{ kind = \"wide_resnet\", depth = 10, widen = 1, sub_block1 = true }";
    let dm = "{ kind = \"dm_wide_resnet\", depth = 10, width = 1, activation = \"relu\" }";
    let reported = Reported {
        clean: 90.0,
        robust: 60.0,
        source: "a paper".into(),
    };
    vec![
        Contender {
            card: card("tiny-wrn", "wide_resnet.pt", wrn, "\"none\""),
            reported: Some(reported),
        },
        Contender {
            card: card("tiny-dm", "dm_wide_resnet_relu.pt", dm, c10),
            reported: None,
        },
    ]
}

fn arena(out: &Path, data_root: &Path, attacks: &[&str]) -> Arena {
    let attacks = attacks
        .iter()
        .map(|a| a.parse::<AaAttack>().unwrap())
        .collect();
    let request = EvalRequest {
        checkpoint: String::new(),
        eps: None,
        robust_counting: None,
        test_per_class: Some(2),
        memory_format: None,
        data_dir: None,
        job: EvalJob::AutoAttack(AutoAttackJob {
            version: Version::Standard,
            attacks: Some(attacks),
            batch_size: 500,
            save_adv: false,
        }),
    };
    let options = LoadOptions {
        counts: Counts::Any,
        ..Default::default()
    };
    let data = DataSource::Files {
        id: DatasetId::Cifar10,
        root: Some(data_root.to_path_buf()),
        options,
    };
    Arena {
        request,
        device: tch::Device::Cpu,
        out: out.to_path_buf(),
        data: Some(data),
    }
}

fn synthetic_cifar10(root: &Path) {
    let spec = SynthSpec {
        train_per_class: 1,
        test_per_class: 2,
        ..SynthSpec::official(DatasetId::Cifar10).unwrap()
    };
    write(&spec, root, false).unwrap();
}

fn reports(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("eval-") && n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_leaderboard_ranks_its_models_and_resumes_per_model() {
    let tmp = tempfile::tempdir().unwrap();
    synthetic_cifar10(tmp.path());
    let out = tmp.path().join("board");
    let board = leaderboard::run(&contenders(), &arena(&out, tmp.path(), &["apgd-ce"])).unwrap();
    assert_eq!(board.models.len(), 2);
    assert_eq!((board.n_samples, board.class_names.len()), (20, 10));
    let text = std::fs::read_to_string(out.join("leaderboard.json")).unwrap();
    assert_eq!(
        Leaderboard::parse(&text, "leaderboard.json").unwrap(),
        board
    );
    let wrn = board.models.iter().find(|r| r.name == "tiny-wrn").unwrap();
    assert!(wrn.difference.is_some() && wrn.reported.is_some());
    let md = std::fs::read_to_string(out.join("leaderboard.md")).unwrap();
    assert!(
        md.contains("tiny-wrn") && md.contains("tiny-dm") && md.contains("| 0 airplane |"),
        "{md}"
    );

    // Again: nothing is evaluated again, the same board comes back.
    let wrn_dir = out.join("models/tiny-wrn");
    let before = reports(&wrn_dir);
    assert_eq!(before.len(), 1);
    let again = leaderboard::run(&contenders(), &arena(&out, tmp.path(), &["apgd-ce"])).unwrap();
    assert_eq!(again, board);
    assert_eq!(reports(&wrn_dir), before);

    // Other settings: evaluated again, into a report of its own.
    leaderboard::run(
        &contenders(),
        &arena(&out, tmp.path(), &["apgd-ce", "apgd-t"]),
    )
    .unwrap();
    assert_eq!(reports(&wrn_dir).len(), 2);
}

#[test]
fn models_of_different_data_sets_or_names_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut models = contenders();
    models[1].card.dataset = DatasetId::Cifar100;
    let err = leaderboard::run(&models, &arena(tmp.path(), tmp.path(), &["apgd-ce"])).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("tiny-dm") && text.contains("CIFAR-100") && text.contains("CIFAR-10"),
        "{text}"
    );
    let mut twins = contenders();
    twins[1].card.name = "tiny-wrn".into();
    let err = leaderboard::run(&twins, &arena(tmp.path(), tmp.path(), &["apgd-ce"])).unwrap_err();
    assert!(err.to_string().contains("distinct model names"), "{err}");
}
