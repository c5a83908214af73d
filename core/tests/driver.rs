//! The shared training driver against a backend that logs every call: the order of the steps
//! of an epoch (every hook's parts added before any hook sees the record), the union of the
//! rule's and the hooks' needs, the hooks' typed state joined into the committed state and
//! read back, checked, on resume, clean-up after the commit, the outputs handed to the backend,
//! and how runs end.

use std::sync::{Arc, Mutex};

use classwise_core::driver::{
    Backend, Cleanup, Driver, DriverState, EpochStart, EpochView, Hook, Measurement, Outcome,
    Start, Stop, boxed, join,
};
use classwise_core::{ClassPlan, ClassRule, ClassStats, CoreError, Needs};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

type Log = Arc<Mutex<Vec<String>>>;

/// A rule that asks for the initial model, for errors on odd epochs, and counts observations.
struct CountingRule {
    observed: u64,
    log: Log,
}

impl ClassRule for CountingRule {
    fn name(&self) -> &'static str {
        "counting"
    }
    fn plan(&mut self, epoch: usize) -> classwise_core::Result<ClassPlan> {
        self.log.lock().unwrap().push(format!("plan {epoch}"));
        Ok(ClassPlan::uniform(2, 0.1, 1.0))
    }
    fn needs_initial(&self) -> Needs {
        Needs {
            val_accuracy: true,
            ..Needs::default()
        }
    }
    fn observe_initial(&mut self, _stats: &ClassStats) -> classwise_core::Result<()> {
        self.log.lock().unwrap().push("observe initial".into());
        Ok(())
    }
    fn needs(&self, epoch: usize) -> Needs {
        Needs {
            val_errors: epoch % 2 == 1,
            ..Needs::default()
        }
    }
    fn observe(&mut self, epoch: usize, _stats: &ClassStats) -> classwise_core::Result<()> {
        self.observed += 1;
        self.log.lock().unwrap().push(format!("observe {epoch}"));
        Ok(())
    }
    fn state(&self) -> classwise_core::Result<Value> {
        Ok(json!(self.observed))
    }
    fn restore(&mut self, state: &Value) -> classwise_core::Result<()> {
        self.observed = state.as_u64().expect("a count");
        self.log
            .lock()
            .unwrap()
            .push(format!("restore rule {state}"));
        Ok(())
    }
}

/// Logs every call; stops an epoch when the driver's stop says so before its first batch;
/// keeps the committed states.
struct LogBackend {
    log: Log,
    committed: Vec<DriverState>,
}

/// What the log backend measures: the statistics and the epoch measured, which `record` logs
/// (so that the log shows the measurement reaching the record).
struct Measured {
    stats: ClassStats,
    epoch: usize,
}

impl Measurement for Measured {
    fn stats(&self) -> &ClassStats {
        &self.stats
    }
}

impl Backend for LogBackend {
    type Error = CoreError;
    type Trained = usize;
    type Measured = Measured;
    type Record = Vec<String>;
    type Part = String;
    type Output = String;

    fn train_epoch(&mut self, start: &EpochStart<'_>) -> Result<Option<usize>, CoreError> {
        let e = start.epoch;
        self.log
            .lock()
            .unwrap()
            .push(format!("train {e} from rule {}", start.rule_at_start));
        Ok((!start.stop_before(0)).then_some(e))
    }
    fn measure_initial(&mut self, needs: Needs) -> Result<ClassStats, CoreError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("measure initial {}", needs.val_accuracy));
        Ok(ClassStats::default())
    }
    fn measure(&mut self, epoch: usize, _t: &usize, n: Needs) -> Result<Measured, CoreError> {
        let needs = format!(
            "{}{}{}",
            n.val_accuracy as u8, n.val_errors as u8, n.val_costs as u8
        );
        self.log
            .lock()
            .unwrap()
            .push(format!("measure {epoch} needs {needs}"));
        let stats = ClassStats::default();
        Ok(Measured { stats, epoch })
    }
    fn record(
        &mut self,
        epoch: usize,
        _plan: ClassPlan,
        _trained: usize,
        measured: &Measured,
        rule: &dyn ClassRule,
    ) -> Result<Vec<String>, CoreError> {
        let line = format!("record {epoch} measured after {}", measured.epoch);
        self.log.lock().unwrap().push(line);
        Ok(vec![rule.name().to_owned()])
    }
    fn add(&mut self, record: &mut Vec<String>, part: String) -> Result<(), CoreError> {
        record.push(part);
        Ok(())
    }
    fn complete(&mut self, record: &mut Vec<String>) -> Result<(), CoreError> {
        record.push("complete".into());
        Ok(())
    }
    fn finish(&mut self, outputs: Vec<String>) -> Result<(), CoreError> {
        let line = format!("backend finish {outputs:?}");
        self.log.lock().unwrap().push(line);
        Ok(())
    }
    fn save(&mut self, epoch: usize) -> Result<(), CoreError> {
        self.log.lock().unwrap().push(format!("save {epoch}"));
        Ok(())
    }
    fn commit(&mut self, state: &DriverState) -> Result<(), CoreError> {
        let text = serde_json::to_string(state).expect("serialisable");
        self.log.lock().unwrap().push(format!("commit {text}"));
        self.committed.push(state.clone());
        Ok(())
    }
    fn clean(&mut self, action: Cleanup) -> Result<(), CoreError> {
        self.log.lock().unwrap().push(format!("clean {action:?}"));
        Ok(())
    }
}

/// A hook's state: its counter under a field of its own name (`a_seen`), so that two counters
/// write different fields.
#[derive(Default, Serialize, Deserialize)]
struct Seen(std::collections::BTreeMap<String, u64>);

/// A hook with a name and its own counter in the state (`<name>_seen`); adds its name to the
/// record and logs the record it sees; asks for validation costs; prunes the previous epoch;
/// hands over its name and count at the end.
struct Counter {
    name: &'static str,
    seen: u64,
}

impl Counter {
    fn field(&self) -> String {
        format!("{}_seen", self.name)
    }
}

impl Hook<LogBackend> for Counter {
    type State = Seen;

    fn needs(&self, _epoch: usize) -> Needs {
        Needs {
            val_costs: true,
            ..Needs::default()
        }
    }
    fn restore(&mut self, b: &LogBackend, state: Seen) -> Result<(), CoreError> {
        self.seen = state.0.get(&self.field()).copied().unwrap_or(0);
        let line = format!("restore {} {}", self.name, self.seen);
        b.log.lock().unwrap().push(line);
        Ok(())
    }
    fn after_epoch(&mut self, end: &EpochView<'_, LogBackend>) -> Result<Vec<String>, CoreError> {
        self.seen += 1;
        let line = format!("{} after {} record {:?}", self.name, end.epoch, end.record);
        end.backend.log.lock().unwrap().push(line);
        Ok(vec![self.name.to_owned()])
    }
    fn on_record(&mut self, b: &LogBackend, record: &Vec<String>) -> Result<(), CoreError> {
        let line = format!("{} sees {record:?}", self.name);
        b.log.lock().unwrap().push(line);
        Ok(())
    }
    fn save(&self, _b: &LogBackend, _epoch: usize) -> Result<Seen, CoreError> {
        Ok(Seen([(self.field(), self.seen)].into()))
    }
    fn after_checkpoint(&mut self, epoch: usize) -> Vec<Cleanup> {
        epoch
            .checked_sub(1)
            .map(Cleanup::Checkpoint)
            .into_iter()
            .collect()
    }
    fn finish(&mut self, b: &LogBackend) -> Result<Vec<String>, CoreError> {
        b.log.lock().unwrap().push(format!("finish {}", self.name));
        Ok(vec![format!("{} {}", self.name, self.seen)])
    }
}

fn driver(log: &Log, epochs: usize, stop_after: Option<usize>) -> Driver<'static, LogBackend> {
    Driver {
        rule: Box::new(CountingRule {
            observed: 0,
            log: log.clone(),
        }),
        hooks: vec![
            boxed(Counter { name: "a", seen: 0 }),
            boxed(Counter { name: "b", seen: 0 }),
        ],
        epochs,
        stop_after,
        stop: Stop::default(),
    }
}

fn backend(log: &Log) -> LogBackend {
    LogBackend {
        log: log.clone(),
        committed: Vec::new(),
    }
}

#[test]
fn a_fresh_run_follows_the_documented_order() {
    let log = Log::default();
    let mut b = backend(&log);
    let outcome = driver(&log, 2, None)
        .run(&mut b, Start::Fresh)
        .expect("runs");
    assert_eq!(outcome, Outcome::Completed);
    let c0 = r#"commit {"completed_epochs":1,"rule":1,"a_seen":1,"b_seen":1}"#;
    let c1 = r#"commit {"completed_epochs":2,"rule":2,"a_seen":2,"b_seen":2}"#;
    // Every hook's part is in the record before any hook sees it, whatever their order.
    let seen = r#"["counting", "a", "b", "complete"]"#;
    let expected = [
        "measure initial true",
        "observe initial",
        "plan 0",
        "train 0 from rule 0",
        "measure 0 needs 001",
        "observe 0",
        "record 0 measured after 0",
        r#"a after 0 record ["counting"]"#,
        r#"b after 0 record ["counting"]"#,
        &format!("a sees {seen}"),
        &format!("b sees {seen}"),
        "save 0",
        c0,
        "plan 1",
        "train 1 from rule 1",
        "measure 1 needs 011",
        "observe 1",
        "record 1 measured after 1",
        r#"a after 1 record ["counting"]"#,
        r#"b after 1 record ["counting"]"#,
        &format!("a sees {seen}"),
        &format!("b sees {seen}"),
        "save 1",
        c1,
        "clean Checkpoint(0)",
        "clean Checkpoint(0)",
        "finish a",
        "finish b",
        r#"backend finish ["a 2", "b 2"]"#,
    ];
    assert_eq!(*log.lock().unwrap(), expected);
}

#[test]
fn a_resume_restores_instead_of_initialising_and_matches_an_uninterrupted_run() {
    let log = Log::default();
    let mut first = backend(&log);
    let stopped = driver(&log, 3, Some(1))
        .run(&mut first, Start::Fresh)
        .expect("runs");
    assert_eq!(
        stopped,
        Outcome::Stopped {
            completed_epochs: 1
        }
    );
    assert!(!log.lock().unwrap().iter().any(|l| l.starts_with("finish")));
    let state = first.committed.last().expect("one commit").clone();
    log.lock().unwrap().clear();
    let mut second = backend(&log);
    let start = Start::Resume {
        epoch: state.completed_epochs,
        rule: state.rule.clone(),
        hooks: state.hooks.clone(),
    };
    assert_eq!(
        driver(&log, 3, None).run(&mut second, start),
        Ok(Outcome::Completed)
    );
    let lines = log.lock().unwrap();
    assert_eq!(
        lines[..4],
        ["restore rule 1", "restore a 1", "restore b 1", "plan 1"]
    );
    assert!(!lines.iter().any(|l| l.contains("initial")));
    let mut whole = backend(&Log::default());
    driver(&Log::default(), 3, None)
        .run(&mut whole, Start::Fresh)
        .expect("runs");
    assert_eq!(second.committed.last(), whole.committed.last());
}

#[test]
fn an_epoch_stopped_inside_commits_nothing_for_it() {
    let log = Log::default();
    let mut b = backend(&log);
    let mut d = driver(&log, 3, None);
    // The driver's stop point before epoch 1's first batch: the backend asks, the epoch stops.
    d.stop = Stop { at: Some((1, 0)) };
    let outcome = d.run(&mut b, Start::Fresh).expect("runs");
    assert_eq!(outcome, Outcome::Interrupted { epoch: 1 });
    assert_eq!(b.committed.len(), 1);
    assert_eq!(
        log.lock().unwrap().last().map(String::as_str),
        Some("train 1 from rule 1")
    );
}

#[test]
fn hook_fields_are_joined_and_a_field_two_hooks_write_is_refused() {
    let mut into = json!({"selection": {"raw": 1}, "ema_updates": 2})
        .as_object()
        .cloned()
        .unwrap();
    let more = json!({"fawa_updates": 0}).as_object().cloned().unwrap();
    join(&mut into, more).expect("disjoint fields join");
    assert_eq!(
        Value::Object(into.clone()),
        json!({"selection": {"raw": 1}, "ema_updates": 2, "fawa_updates": 0})
    );
    // Even two objects under one name: each hook's state has fields of its own.
    let clash = json!({"selection": {"ema": 3}})
        .as_object()
        .cloned()
        .unwrap();
    let err = join(&mut into, clash).expect_err("two hooks writing one field");
    assert!(err.to_string().contains("selection"), "{err}");
}

#[test]
fn a_resumed_state_that_does_not_fit_a_hook_is_refused() {
    let log = Log::default();
    let hooks: Map<String, Value> = json!({"a_seen": "many", "b_seen": 1})
        .as_object()
        .cloned()
        .unwrap();
    let start = Start::Resume {
        epoch: 1,
        rule: json!(1),
        hooks,
    };
    let err = driver(&log, 3, None)
        .run(&mut backend(&log), start)
        .expect_err("a count that is not a number");
    let text = err.to_string();
    assert!(
        text.contains("a hook's state") && text.contains("many"),
        "{text}"
    );
}
