//! A run's `selection.json`, `state.json`, `interrupted.json` and `env.json`: every
//! `selection.json` the committed study runs wrote (schema 1, before `schema` existed) reads,
//! schema-1 `state.json`, `interrupted.json` and every older `env.json` format read, each reads
//! back as written at the current schema, and bad files are refused naming the field.

use std::path::Path;

use classwise_core::CoreError;
use classwise_core::record::{SELECTION_SCHEMA, SelectionRecord};
use classwise_core::select::Selection;

/// Each text is refused by `parse` with an error containing its field.
fn refused(parse: impl Fn(&str) -> Result<(), CoreError>, cases: &[(String, &str)]) {
    for (text, field) in cases {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
}

/// The committed runs' `selection.json` files under `results/`.
fn committed() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut found = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "selection.json") {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn the_committed_runs_selection_files_read_as_schema_1() {
    let files = committed();
    assert!(files.len() >= 50, "{} files", files.len());
    let mut strategies = std::collections::BTreeSet::new();
    for path in files {
        let what = path.display().to_string();
        let r = SelectionRecord::parse(&std::fs::read_to_string(&path).unwrap(), &what).unwrap();
        assert_eq!(r.schema, 1, "{what}");
        assert!(["val", "test"].contains(&r.split.as_str()), "{what}");
        assert_eq!(r.tracks[0].track, "raw", "{what}");
        strategies.insert(format!("{:?}", r.strategy));
    }
    assert!(strategies.len() >= 2, "{strategies:?}");
}

const FILE: &str = r#"{"strategy":{"kind":"best-avg-worst"},"split":"val","tracks":[{"track":"raw","epoch":5,"candidates":[4,5],"final_scores":[[4,0.5],[5,0.75]]}]}"#;

#[test]
fn a_selection_reads_back_as_written() {
    let mut r = SelectionRecord::parse(FILE, "selection.json").unwrap();
    assert_eq!(r.strategy, Selection::BestAvgWorst);
    assert_eq!(r.tracks[0].final_scores, [(4, 0.5), (5, 0.75)]);
    r.schema = SELECTION_SCHEMA;
    let text = serde_json::to_string_pretty(&r).unwrap();
    assert_eq!(SelectionRecord::parse(&text, "again").unwrap(), r);
}

#[test]
fn bad_selections_are_refused_naming_the_field() {
    let cases = [
        (
            FILE.replace("\"epoch\":5", "\"epoch\":3"),
            "s.json: tracks[0].epoch",
        ),
        (FILE.replacen('{', r#"{"schema":3,"#, 1), "s.json: schema"),
        (
            FILE.replace("\"split\":\"val\",", ""),
            "not a run's selection.json",
        ),
    ];
    refused(|t| SelectionRecord::parse(t, "s.json").map(drop), &cases);
}

/// A `state.json` in the format the trainer wrote until 2026-11-28 (schema 1: no `schema`),
/// shortened: its rule state and selector cut down.
const STATE_1: &str = r#"{"completed_epochs":3,"checkpoint":"e0002","rule":{"prev_train_robust":[0.1,0.5]},"ema_updates":3,"fawa_updates":0,"selection":{"raw":{"epochs":3}}}"#;

#[test]
fn a_schema_1_run_state_reads_and_round_trips_with_its_hook_fields() {
    use classwise_core::record::{RunState, STATE_SCHEMA};
    let mut s = RunState::parse(STATE_1, "state.json").unwrap();
    assert_eq!((s.schema, s.checkpoint.as_str()), (1, "e0002"));
    assert_eq!(s.driver.completed_epochs, 3);
    assert_eq!(s.driver.rule["prev_train_robust"][1], 0.5);
    // Every field besides the driver's own is a hook's, kept for the hooks to read.
    let hooks: Vec<&str> = s.driver.hooks.keys().map(String::as_str).collect();
    assert_eq!(hooks, ["ema_updates", "fawa_updates", "selection"]);
    s.schema = STATE_SCHEMA;
    let text = serde_json::to_string(&s).unwrap();
    assert_eq!(RunState::parse(&text, "again").unwrap(), s);
}

#[test]
fn a_bad_run_state_is_refused_naming_the_field() {
    use classwise_core::record::RunState;
    let cases = [
        (
            STATE_1.replace("\"completed_epochs\":3", "\"completed_epochs\":0"),
            "state.json: completed_epochs",
        ),
        (
            STATE_1.replacen('{', r#"{"schema":7,"#, 1),
            "state.json: schema",
        ),
        (
            STATE_1.replace("\"checkpoint\":\"e0002\",", ""),
            "not a run state",
        ),
    ];
    refused(|t| RunState::parse(t, "state.json").map(drop), &cases);
}

/// An `interrupted.json` in the format the trainer wrote until 2026-11-28 (schema 1: no
/// `schema`): stopped before batch 2 of epoch 0, over 3 classes.
const MID_1: &str = r#"{"epoch":0,"checkpoint":"m0000-000002","progress":{"next_step":2,"correct":[1,2,0],"total":[4,3,1],"loss_sum":4.5,"confusion":[1,2,1,0,2,1,1,0,0]},"rule":null,"train_seconds":1.25,"signal":"SIGTERM"}"#;

#[test]
fn a_schema_1_mid_epoch_record_reads_and_bad_ones_are_refused() {
    use classwise_core::record::{MID_EPOCH_SCHEMA, MidEpoch};
    let mut m = MidEpoch::parse(MID_1, "interrupted.json").unwrap();
    assert_eq!((m.schema, m.epoch, m.progress.next_step), (1, 0, 2));
    assert_eq!(m.progress.total, [4, 3, 1]);
    assert_eq!(m.signal.as_deref(), Some("SIGTERM"));
    m.schema = MID_EPOCH_SCHEMA;
    let text = serde_json::to_string(&m).unwrap();
    assert_eq!(MidEpoch::parse(&text, "again").unwrap(), m);
    let cases = [
        (
            MID_1.replace("m0000-000002", "m0000-000003"),
            "interrupted.json: checkpoint",
        ),
        (
            MID_1.replace("[1,2,0]", "[1,2]"),
            "interrupted.json: progress.correct",
        ),
        (
            MID_1.replacen('{', r#"{"schema":3,"#, 1),
            "interrupted.json: schema",
        ),
        (
            MID_1.replace("\"epoch\":0,", ""),
            "not a mid-epoch checkpoint record",
        ),
    ];
    refused(|t| MidEpoch::parse(t, "interrupted.json").map(drop), &cases);
}

#[test]
fn every_env_json_format_reads_as_a_list_of_sessions() {
    use classwise_core::record::EnvRecord;
    // Before sessions were recorded: one flat object, the only session.
    let flat = EnvRecord::parse(r#"{"git_sha":"abc","device":"Cpu"}"#, "env.json").unwrap();
    assert_eq!((flat.schema, flat.sessions.len()), (1, 1));
    assert_eq!(flat.sessions[0]["git_sha"], "abc");
    let listed = r#"{"sessions":[{"start_epoch":0},{"start_epoch":2,"start_step":5}]}"#;
    let r = EnvRecord::parse(listed, "env.json").unwrap();
    assert_eq!((r.schema, r.sessions.len()), (1, 2));
    assert_eq!(r.sessions[1]["start_step"], 5);
    let cases = [
        (r#"{"sessions":[1]}"#.to_owned(), "env.json: sessions"),
        (
            r#"{"schema":3,"sessions":[]}"#.to_owned(),
            "env.json: schema",
        ),
        ("[1]".to_owned(), "a JSON object"),
    ];
    refused(|t| EnvRecord::parse(t, "env.json").map(drop), &cases);
}

#[test]
fn a_schema_1_split_reads_and_an_image_in_train_and_val_is_refused() {
    use classwise_core::record::SplitIndices;
    // As the trainer wrote it until 2026-11-28 (no `schema`; the split in its own format).
    let file = r#"{"split":{"spec":{"rule":"first"},"of":6,"train":[2,3,4,5],"val":[0,1]},"train":[2,3,5],"val":[0,1],"test":[0,1,2]}"#;
    let s = SplitIndices::parse(file, "split.json").unwrap();
    assert_eq!(
        (s.schema, s.train.as_slice(), s.test.len()),
        (1, &[2, 3, 5][..], 3)
    );
    assert_eq!(s.split["of"], 6);
    let cases = [
        (
            file.replace("\"train\":[2,3,5]", "\"train\":[1,3,5]"),
            "split.json: train",
        ),
        (
            file.replace("\"test\":[0,1,2]", "\"test\":[0,-1,2]"),
            "split.json: test",
        ),
        (
            file.replacen('{', r#"{"schema":4,"#, 1),
            "split.json: schema",
        ),
    ];
    refused(|t| SplitIndices::parse(t, "split.json").map(drop), &cases);
}
