//! Runs end to end on the synthetic data set: files of a run directory, resume after a stop is
//! bit-identical to an uninterrupted run, and the guards on existing directories.

use classwise_trainer::model::Model;
use classwise_trainer::run::{RunConfig, TrainOptions, train};
use classwise_trainer::train::Objective as _;
use tch::Device;

const CONFIG: &str = r#"
name = "synthetic-test"
seed = 3
epochs = 3
device = "cpu"
batch_size = 16

[data]
source = { kind = "synthetic", classes = 3, train_per_class = 24, test_per_class = 8, channels = 1, side = 16, seed = 5, noise = [0.1, 0.4] }
split = { rule = "first", size = { per-class = 4 } }
augment = { crop_padding = 2, pad_mode = "zero", flip = true }

[model]
num_classes = 3
input_shape = [1, 16, 16]
architecture = { kind = "small_cnn" }

[optimizer]
momentum = 0.9
weight_decay = 5e-4

[schedule]
base = 0.05
pieces = [[2, 0.005]]

[train]
eps = "16/255"
method = { method = "pgd-at", attack = { steps = 2, step = { kind = "absolute", value = 0.03 }, start = { kind = "uniform" }, loss = { kind = "cross-entropy" } } }

[eval]
eps = "16/255"
attack = { steps = 3, step = { kind = "absolute", value = 0.03 }, start = { kind = "uniform" }, loss = { kind = "cross-entropy" } }

[ema]
alpha = 0.5
"#;

fn config() -> RunConfig {
    RunConfig::from_toml(CONFIG).unwrap()
}

fn opts() -> TrainOptions {
    TrainOptions::default()
}

fn resume() -> TrainOptions {
    TrainOptions {
        resume: true,
        ..opts()
    }
}

fn stop_after(n: usize) -> TrainOptions {
    TrainOptions {
        stop_after: Some(n),
        ..opts()
    }
}

fn final_state(dir: &std::path::Path) -> Vec<(String, tch::Tensor)> {
    let run = classwise_trainer::run::RunDir(dir.to_path_buf());
    Model::load(&run.weights("last").unwrap(), Device::Cpu)
        .unwrap()
        .state()
}

#[test]
fn a_run_writes_its_directory_and_resumes_bit_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let full = train(&config(), &a, opts()).unwrap();
    let report = full.report.expect("a finished run has a report");
    assert_eq!(report.n_samples, 24);
    for f in [
        "config.toml",
        "env.json",
        "split.json",
        "metrics.jsonl",
        "state.json",
        "report.json",
        "report.md",
        "report-ema.json",
        "report-ema.md",
    ] {
        assert!(a.join(f).is_file(), "{f} missing");
    }
    assert!(a.join("checkpoints/best.safetensors").is_file());
    let metrics = std::fs::read_to_string(a.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.lines().count(), 3);
    for line in metrics.lines() {
        // The lines read back through the shared records, as the figures read them.
        let record = classwise_core::record::EpochRecord::parse(line).unwrap();
        assert_eq!(record.to_line().unwrap(), line);
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["train_robust"].as_array().unwrap().len(), 3);
        assert!(v["test"]["robust_worst"].is_number(), "{line}");
        assert!(v["ema_test"]["robust_worst"].is_number(), "{line}");
        assert!(v["val"]["robust_worst"].is_number(), "{line}");
        assert!(v["eps_warmup"].is_null(), "{line}");
        // Training throughput is measured on the training time alone.
        let (train_s, eval_s, all_s) = (
            v["train_seconds"].as_f64().unwrap(),
            v["eval_seconds"].as_f64().unwrap(),
            v["seconds"].as_f64().unwrap(),
        );
        assert!(
            train_s > 0.0 && eval_s > 0.0 && train_s + eval_s <= all_s,
            "{line}"
        );
        let ips = v["train_images_per_second"].as_f64().unwrap();
        assert!((ips * train_s - 60.0).abs() < 1e-6, "{line}");
    }
    // The resolved config parses back to the same run.
    let saved = std::fs::read_to_string(a.join("config.toml")).unwrap();
    assert_eq!(RunConfig::from_toml(&saved).unwrap(), config());

    // Stop after one epoch, then resume: the same final weights, bit for bit.
    let stopped = train(&config(), &b, stop_after(1)).unwrap();
    assert!(stopped.report.is_none());
    assert_eq!(stopped.completed_epochs, 1);
    let resumed = train(&config(), &b, resume()).unwrap();
    assert_eq!(resumed.completed_epochs, 3);
    let (sa, sb) = (final_state(&a), final_state(&b));
    assert_eq!(sa.len(), sb.len());
    for ((na, ta), (nb, tb)) in sa.iter().zip(&sb) {
        assert_eq!(na, nb);
        assert!(ta.equal(tb), "{na} differs after resume");
    }
    assert_eq!(
        std::fs::read_to_string(b.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .count(),
        3
    );
    let ra: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("report.json")).unwrap()).unwrap();
    let rb: serde_json::Value =
        serde_json::from_slice(&std::fs::read(b.join("report.json")).unwrap()).unwrap();
    assert_eq!(ra, rb);

    // env.json keeps the first session and appends the resumed one.
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(b.join("env.json")).unwrap()).unwrap();
    let sessions = env["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{env}");
    assert_eq!(sessions[0]["start_epoch"], 0);
    assert_eq!(sessions[1]["start_epoch"], 1);
    assert_eq!(sessions[0]["seed"], 3);
    let env_a: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("env.json")).unwrap()).unwrap();
    assert_eq!(env_a["sessions"].as_array().unwrap().len(), 1);
}

/// Every field of two metrics lines but the wall times.
fn without_times(line: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
    for key in [
        "seconds",
        "train_seconds",
        "eval_seconds",
        "train_images_per_second",
    ] {
        v.as_object_mut().unwrap().remove(key);
    }
    v
}

#[test]
fn a_run_interrupted_inside_epochs_resumes_bit_identically() {
    // CFA's class-wise rule (state carried across epochs, plan recomputed on resume), FAWA, EMA
    // and augmentation (a stream replayed up to the batch where the run stopped).
    let overrides = [
        "rule={ kind = \"cfa\", lambda1 = 0.5, begin = 1 }".to_owned(),
        "fawa={ alpha = 0.5, delta = 0.0, start_epoch = 1 }".to_owned(),
    ];
    let config = RunConfig::from_toml_with_overrides(CONFIG, &overrides).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    train(&config, &a, opts()).unwrap();
    let run_b = classwise_trainer::run::RunDir(b.clone());
    // 60 training images in batches of 16: 4 batches per epoch. Stop in the first epoch (no
    // state.json yet), resume and stop again in the second epoch, then finish.
    let at = |epoch, step, resume| TrainOptions {
        interrupt_at: Some((epoch, step)),
        resume,
        ..opts()
    };
    let first = train(&config, &b, at(0, 2, false)).unwrap();
    let mid = first.interrupted.expect("stopped inside epoch 0");
    assert_eq!((mid.epoch, mid.progress.next_step), (0, 2));
    assert_eq!(mid.progress.total.iter().sum::<u64>(), 32, "{mid:?}");
    assert!(first.report.is_none() && !b.join("state.json").exists());
    assert_eq!(
        run_b.progress().unwrap(),
        classwise_trainer::run::RunProgress::MidEpoch { epoch: 0, step: 2 }
    );
    let second = train(&config, &b, at(1, 3, true)).unwrap();
    let mid = second.interrupted.expect("stopped inside epoch 1");
    assert_eq!((mid.epoch, mid.progress.next_step), (1, 3));
    assert_eq!(second.completed_epochs, 1);
    // Only the newest mid-epoch checkpoint is kept.
    let mids: Vec<_> = std::fs::read_dir(b.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('m'))
        .collect();
    assert_eq!(mids, vec![mid.checkpoint.clone()]);
    let done = train(&config, &b, resume()).unwrap();
    assert!(done.interrupted.is_none() && done.report.is_some());
    assert_eq!(
        run_b.progress().unwrap(),
        classwise_trainer::run::RunProgress::Complete
    );
    assert!(!b.join("interrupted.json").exists());
    for ((na, ta), (nb, tb)) in final_state(&a).iter().zip(&final_state(&b)) {
        assert_eq!(na, nb);
        assert!(ta.equal(tb), "{na} differs after two mid-epoch resumes");
    }
    let (ma, mb) = (
        std::fs::read_to_string(a.join("metrics.jsonl")).unwrap(),
        std::fs::read_to_string(b.join("metrics.jsonl")).unwrap(),
    );
    assert_eq!(mb.lines().count(), 3);
    for (la, lb) in ma.lines().zip(mb.lines()) {
        assert_eq!(without_times(la), without_times(lb));
    }
    for f in [
        "report.json",
        "report-ema.json",
        "report-fawa.json",
        "selection.json",
    ] {
        let read = |d: &std::path::Path| -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(d.join(f)).unwrap()).unwrap()
        };
        assert_eq!(read(&a), read(&b), "{f}");
    }
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(b.join("env.json")).unwrap()).unwrap();
    let starts: Vec<_> = env["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["start_epoch"].as_u64().unwrap(),
                s["start_step"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(starts, vec![(0, 0), (0, 2), (1, 3)]);
}

#[test]
fn existing_runs_and_changed_configs_are_guarded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    // A run killed before its first checkpoint (config.toml but no state.json): --resume starts
    // it from the beginning, unless the configuration changed.
    train(&config(), &dir, stop_after(0)).unwrap();
    assert!(dir.join("config.toml").is_file() && !dir.join("state.json").exists());
    let mut changed = config();
    changed.train.beta = 1.0;
    let e = train(&changed, &dir, resume()).err().unwrap();
    assert!(e.to_string().contains("--force"), "{e}");
    let started = train(
        &config(),
        &dir,
        TrainOptions {
            resume: true,
            stop_after: Some(1),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(started.completed_epochs, 1);
    assert!(dir.join("state.json").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
    // --resume on a directory that does not exist starts the run too.
    let started = train(
        &config(),
        &dir,
        TrainOptions {
            resume: true,
            stop_after: Some(0),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(started.completed_epochs, 0);
    std::fs::remove_dir_all(&dir).unwrap();
    train(&config(), &dir, stop_after(1)).unwrap();
    let e = train(&config(), &dir, opts()).err().unwrap();
    assert!(e.to_string().contains("--resume"), "{e}");
    let e = train(&changed, &dir, resume()).err().unwrap();
    assert!(e.to_string().contains("--force"), "{e}");
    let done = train(
        &changed,
        &dir,
        TrainOptions {
            resume: true,
            force: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(done.completed_epochs, 3);
}

#[test]
fn bad_configs_name_the_field() {
    for (from, to, field) in [
        ("epochs = 3", "epochs = 0", "epochs"),
        ("eps = \"16/255\"\nmethod", "eps = \"16/0\"\nmethod", "eps"),
        ("num_classes = 3", "num_classes = 0", "num_classes"),
        ("momentum = 0.9", "momentum = 1.9", "optimizer.momentum"),
        ("batch_size = 16", "batch_size = 16\nbogus = 1", "bogus"),
        // The training attack is checked when the config is read, not after the data loaded.
        (
            "method = { method = \"pgd-at\", attack = { steps = 2,",
            "method = { method = \"pgd-at\", attack = { steps = 0,",
            "train.method.attack.steps",
        ),
        (
            "attack = { steps = 3,",
            "attack = { steps = 0,",
            "eval.attack.steps",
        ),
        (
            "crop_padding = 2",
            "crop_padding = 1000000",
            "data.augment.crop_padding",
        ),
        (
            "input_shape = [1, 16, 16]",
            "input_shape = [1, 28, 28]",
            "model.input_shape",
        ),
        // The data's class count must match the model's.
        ("num_classes = 3", "num_classes = 4", "model.num_classes"),
    ] {
        let text = CONFIG.replacen(from, to, 1);
        assert_ne!(text, CONFIG, "{from}");
        let e = RunConfig::from_toml(&text).err().unwrap().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
    // A config that fails validation leaves no run directory behind.
    let mut c = config();
    c.model.num_classes = 4;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let e = train(&c, &out, opts()).err().unwrap();
    assert!(e.to_string().contains("model.num_classes"), "{e}");
    assert!(!out.exists());
}

/// `train.eps_warmup_epochs`: ε grows batch by batch over the first epochs, and the log says
/// by how much; a run without it logs no warm-up.
#[test]
fn eps_warmup_ramps_per_batch_and_is_logged() {
    let mut c = config();
    c.train.eps_warmup_epochs = 2;
    // 60 training images in batches of 16: 4 batches per epoch, 8 over the warm-up.
    let scales: Vec<f64> = (0..3)
        .flat_map(|e| (0..4).map(move |s| (e, s)))
        .map(|(e, s)| c.train.eps_scale(e, s, 4))
        .collect();
    let want: Vec<f64> = (1..=8)
        .map(|i| f64::from(i) / 8.0)
        .chain([1.0; 4])
        .collect();
    assert_eq!(scales, want);
    let tmp = tempfile::tempdir().unwrap();
    train(&c, tmp.path(), stop_after(3)).unwrap();
    let metrics = std::fs::read_to_string(tmp.path().join("metrics.jsonl")).unwrap();
    let warmup: Vec<serde_json::Value> = metrics
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["eps_warmup"].clone())
        .collect();
    assert_eq!(
        warmup,
        [
            serde_json::json!([0.125, 0.5]),
            serde_json::json!([0.625, 1.0]),
            serde_json::Value::Null
        ]
    );
}

/// The averaged model: with decay 0.5 from epoch 0 over 3 epochs it is
/// 0.25·w₀ + 0.25·w₁ + 0.5·w₂ (BN statistics included, integer buffers copied), which
/// `RunDir::load_model("ema")` returns and `report-ema.json` evaluates; with decay 0 it is the
/// last model, so its per-epoch evaluation equals the raw model's (same attack starts).
#[test]
fn the_weight_average_is_saved_evaluated_and_loadable() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = config();
    c.checkpoint.every = 1;
    let dir = tmp.path().join("half");
    train(&c, &dir, opts()).unwrap();
    let run = classwise_trainer::run::RunDir(dir.clone());
    let epoch = |e: usize| {
        Model::load(
            &run.checkpoint(&format!("e{e:04}"))
                .join("model.safetensors"),
            Device::Cpu,
        )
        .unwrap()
        .state()
    };
    let (w0, w1, w2) = (epoch(0), epoch(1), epoch(2));
    let ema = run.load_model("ema", Device::Cpu).unwrap().state();
    let mut averaged = 0;
    for (i, (name, t)) in ema.iter().enumerate() {
        assert_eq!(name, &w2[i].0);
        if t.is_floating_point() {
            let expected = &w0[i].1 * 0.25 + &w1[i].1 * 0.25 + &w2[i].1 * 0.5;
            assert!(t.allclose(&expected, 1e-5, 1e-6, false), "{name}");
            averaged += 1;
        } else {
            assert!(t.equal(&w2[i].1), "{name}");
        }
    }
    assert!(averaged > 4, "{averaged} floating tensors");
    // It differs from the last model, and so does its report.
    let last = run.load_model("last", Device::Cpu).unwrap().state();
    assert!(ema.iter().zip(&last).any(|(a, b)| !a.1.equal(&b.1)));
    assert!(dir.join("report-ema.json").is_file());

    c.ema = Some(classwise_trainer::run::config::EmaConfig {
        alpha: 0.0,
        start_epoch: 0,
    });
    let dir = tmp.path().join("zero");
    train(&c, &dir, opts()).unwrap();
    let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    for line in metrics.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["ema_test"], v["test"], "{line}");
    }
    let report = |f: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join(f)).unwrap()).unwrap()
    };
    assert_eq!(report("report-ema.json"), report("report.json"));

    // Without [ema] there is no averaged model to load, and the error says so.
    c.ema = None;
    let dir = tmp.path().join("none");
    train(&c, &dir, opts()).unwrap();
    assert!(!dir.join("report-ema.json").exists());
    let run = classwise_trainer::run::RunDir(dir);
    let err = run
        .load_model("ema", Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("set [ema] in the config"), "{err}");
}

/// A FAWA whose gate never passes (δ = 1: every class's validation robust accuracy 100 %)
/// holds no model: no `report-fawa.json`, and loading it says why instead of asking for a
/// `[fawa]` the config has.
#[test]
fn a_fawa_that_never_accepted_has_no_model() {
    let tmp = tempfile::tempdir().unwrap();
    let overrides = ["fawa={ alpha = 0.5, delta = 1.0, start_epoch = 0 }".to_owned()];
    let c = RunConfig::from_toml_with_overrides(CONFIG, &overrides).unwrap();
    let dir = tmp.path().join("gated");
    train(&c, &dir, opts()).unwrap();
    assert!(dir.join("report.json").is_file());
    assert!(!dir.join("report-fawa.json").exists());
    let err = classwise_trainer::run::RunDir(dir)
        .load_model("fawa", Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("[fawa] holds none"), "{err}");
    assert!(!err.contains("set [fawa]"), "{err}");
}

/// `extends`: a file states only what differs from the one it extends (tables merged key by key,
/// chains followed, paths relative to the file); a table naming another method or rule kind
/// replaces the base's whole; a cycle and a missing base are refused, naming the file.
#[test]
fn configs_extend_other_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("base.toml"), CONFIG).unwrap();
    // Only the β and the epochs change; the rest is the base's.
    std::fs::write(
        dir.join("sub/child.toml"),
        "extends = \"../base.toml\"\nname = \"child\"\nepochs = 2\n[train]\nbeta = 2.0\n",
    )
    .unwrap();
    // Another method: the base's PGD-AT table must not leak a field into TRADES (its `scaling`
    // comes from here alone), and a chain of two files is followed.
    std::fs::write(
        dir.join("sub/grandchild.toml"),
        "extends = \"child.toml\"\nname = \"grandchild\"\n[train]\nmethod = { method = \"trades\", \
         scaling = \"paper\", attack = { steps = 1, step = { kind = \"absolute\", value = 0.03 }, \
         start = { kind = \"none\" }, loss = { kind = \"trades-kl\" } } }\n[rule]\nkind = \
         \"class-beta\"\nbeta = [1.0, 2.0, 3.0]\n",
    )
    .unwrap();
    let base = RunConfig::from_toml(CONFIG).unwrap();
    let child = RunConfig::from_file(&dir.join("sub/child.toml"), &[]).unwrap();
    assert_eq!(
        (child.name.as_str(), child.epochs, child.train.beta),
        ("child", 2, 2.0)
    );
    assert_eq!(child.train.method, base.train.method);
    assert_eq!(
        (&child.data, &child.eval, &child.ema),
        (&base.data, &base.eval, &base.ema)
    );
    let grandchild =
        RunConfig::from_file(&dir.join("sub/grandchild.toml"), &["epochs=1".into()]).unwrap();
    assert_eq!(grandchild.train.method.name(), "trades");
    assert_eq!((grandchild.epochs, grandchild.train.beta), (1, 2.0));
    assert_eq!(grandchild.rule.name(), "class-beta");
    // A cycle, and a base that does not exist.
    std::fs::write(dir.join("a.toml"), "extends = \"b.toml\"\n").unwrap();
    std::fs::write(dir.join("b.toml"), "extends = \"a.toml\"\n").unwrap();
    let e = RunConfig::from_file(&dir.join("a.toml"), &[])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("extends") && e.contains("cycle"), "{e}");
    std::fs::write(
        dir.join("c.toml"),
        "extends = \"missing.toml\"\nname = \"c\"\n",
    )
    .unwrap();
    let e = RunConfig::from_file(&dir.join("c.toml"), &[])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("missing.toml"), "{e}");
}

/// The `classwise eval` jobs are library functions: on a finished run, the run's own attack
/// reproduces `report.json` (same checkpoint, test images and attack; on this small model the
/// robust accuracies are 0 or 1 per class, so the seed is not what this pins), another attack
/// writes its report under a name of its settings without replacing an earlier one, and a
/// refused request writes nothing.
#[test]
fn eval_jobs_run_without_the_binary() {
    use classwise_trainer::eval::RobustCounting;
    use classwise_trainer::eval::autoattack::Version;
    use classwise_trainer::eval::job::{self, AttackChoice, AutoAttackJob, EvalJob, EvalRequest};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let mut config = config();
    config.ema = None;
    config.epochs = 10;
    config.batch_size = 8;
    config.train.eps = classwise_trainer::attack::Eps::parse("4/255").unwrap();
    config.eval.eps = config.train.eps.clone();
    train(&config, &dir, opts()).unwrap();
    let source = classwise_trainer::run::RunDir(dir.clone());
    let request = |job| EvalRequest {
        checkpoint: "last".into(),
        eps: None,
        robust_counting: None,
        test_per_class: None,
        memory_format: None,
        data_dir: None,
        job,
    };
    let own = job::run(&source, &request(EvalJob::Attack(AttackChoice::Configured))).unwrap();
    let own: serde_json::Value = serde_json::from_str(&own.json).unwrap();
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    // A model that learned something (not one class for every image), so that the comparison
    // has content.
    let clean = own["clean"]["per_class"].as_array().unwrap().clone();
    assert!(clean.iter().any(|c| c != &clean[0]), "{clean:?}");
    for field in [
        "attack",
        "n_samples",
        "clean",
        "robust",
        "errors",
        "confusion_under_attack",
    ] {
        assert_eq!(own[field], saved[field], "{field}");
    }
    let fgsm = || request(EvalJob::Attack(AttackChoice::Fgsm));
    let first = job::run(&source, &fgsm()).unwrap();
    let second = job::run(&source, &fgsm()).unwrap();
    let stem = "eval-last-fgsm_ce_step_1_eps_no_start-eps_4_255-clean-and-adversarial";
    assert_eq!(first.json_path, dir.join(format!("{stem}.json")));
    assert_eq!(second.json_path, dir.join(format!("{stem}-2.json")));
    assert!(first.markdown_path.exists() && first.markdown.contains("| class |"));
    let written: serde_json::Value = serde_json::from_str(&first.json).unwrap();
    assert_eq!(written["attack"], "fgsm ce step 1*eps no start");
    assert_eq!(
        std::fs::read_to_string(&first.json_path).unwrap(),
        first.json + "\n"
    );
    let before = std::fs::read_dir(&dir).unwrap().count();
    let refused = job::run(
        &source,
        &EvalRequest {
            robust_counting: Some(RobustCounting::AdversarialOnly),
            ..request(EvalJob::AutoAttack(AutoAttackJob {
                version: Version::Standard,
                attacks: None,
                batch_size: 8,
                save_adv: false,
            }))
        },
    )
    .unwrap_err();
    assert!(
        refused.to_string().contains("--robust-counting"),
        "{refused}"
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before);
}
