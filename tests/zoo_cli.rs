//! `classwise eval --card/--zoo`, `classwise zoo` and `classwise export` from the command line:
//! what they refuse, with the message a user needs.

mod common;

use std::path::{Path, PathBuf};

use common::{classwise, text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("trainer/tests/fixtures/zoo")
}

#[test]
fn an_unsupported_catalogue_model_is_refused_with_the_reason() {
    let out = classwise(&[
        "eval",
        "--zoo",
        "Engstrom2019Robustness",
        "--weights",
        "x.pt",
    ])
    .output()
    .unwrap();
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("Engstrom2019Robustness") && said.contains("Bottleneck"),
        "{said}"
    );
}

#[test]
fn a_checkpoint_holding_a_pickled_call_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let card = tmp.path().join("code.card.toml");
    let body = format!(
        "name = \"code\"\nfile = \"{}\"\ndataset = \"cifar10\"\nthreat_model = \"Linf\"\n\
         eps = \"8/255\"\narchitecture = {{ kind = \"dm_preact_resnet\", depth = 18, \
         activation = \"swish\", base_width = 2 }}\nnormalization = \"none\"\n",
        fixtures().join("variants/code.pt").display()
    );
    std::fs::write(&card, body).unwrap();
    let out = classwise(&["eval", "--card", card.to_str().unwrap(), "--device", "cpu"])
        .output()
        .unwrap();
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("code.pt")
            && said.contains("posix.system")
            && said.contains("never runs code"),
        "{said}"
    );
}

#[test]
fn the_catalogue_lists_models_and_the_unsupported_ones() {
    let out = classwise(&["zoo", "list", "--dataset", "cifar100"])
        .output()
        .unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("Gowal2020Uncovering") && said.contains("DM-WRN-70-16 (Swish)"),
        "{said}"
    );
    assert!(
        said.contains("Not buildable by classwise") && !said.contains("| cifar10 |"),
        "{said}"
    );
}

#[test]
fn a_leaderboard_needs_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    let out = classwise(&["zoo", "run", "--out", tmp.path().to_str().unwrap()])
        .output()
        .unwrap();
    let said = text(&out);
    assert!(
        !out.status.success() && said.contains("at least one model"),
        "{said}"
    );
}

#[test]
fn export_converts_a_checkpoint_through_its_card() {
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("wrn.safetensors");
    let card = fixtures().join("cards/wide_resnet.card.toml");
    let out = classwise(&[
        "export",
        "--card",
        card.to_str().unwrap(),
        "--out",
        out_file.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let written = std::fs::read_to_string(tmp.path().join("wrn.safetensors.card.toml")).unwrap();
    assert!(
        written.contains("file = \"wrn.safetensors\"") && written.contains("sha256"),
        "{written}"
    );
    assert!(
        written.contains("wide_resnet") && written.contains("normalization = \"none\""),
        "{written}"
    );
}
