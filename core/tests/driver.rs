//! The shared training driver against a backend that logs every call: the order of the steps
//! of an epoch, the union of the rule's and the hooks' needs, the hooks' state merged into the
//! committed state and restored on resume, clean-up after the commit, and how runs end.

use std::sync::{Arc, Mutex};

use classwise_core::driver::{
    Backend, Cleanup, Driver, DriverState, EpochEnd, EpochStart, Hook, Measurement, Outcome, Start,
    merge,
};
use classwise_core::{ClassPlan, ClassRule, ClassStats, CoreError, Needs};
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

/// Logs every call; stops inside `interrupt_in` if set; keeps the committed states.
struct LogBackend {
    log: Log,
    interrupt_in: Option<usize>,
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

    fn train_epoch(&mut self, start: &EpochStart<'_>) -> Result<Option<usize>, CoreError> {
        let e = start.epoch;
        self.log
            .lock()
            .unwrap()
            .push(format!("train {e} from rule {}", start.rule_at_start));
        Ok((self.interrupt_in != Some(e)).then_some(e))
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

/// A hook with a name, its own counter in the state (`<name>_seen`) and an entry in the
/// shared `tracks` object; asks for validation costs; prunes the previous epoch.
struct Counter {
    name: &'static str,
    seen: u64,
}

impl Hook<LogBackend> for Counter {
    fn needs(&self, _epoch: usize) -> Needs {
        Needs {
            val_costs: true,
            ..Needs::default()
        }
    }
    fn restore(
        &mut self,
        b: &mut LogBackend,
        fields: &Map<String, Value>,
    ) -> Result<(), CoreError> {
        self.seen = fields
            .get(&format!("{}_seen", self.name))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        b.log
            .lock()
            .unwrap()
            .push(format!("restore {} {}", self.name, self.seen));
        Ok(())
    }
    fn after_epoch(
        &mut self,
        b: &mut LogBackend,
        end: &mut EpochEnd<'_, Vec<String>>,
    ) -> Result<(), CoreError> {
        self.seen += 1;
        end.record.push(self.name.to_owned());
        b.log.lock().unwrap().push(format!(
            "{} after {} record {:?}",
            self.name, end.epoch, end.record
        ));
        Ok(())
    }
    fn save(&self, _b: &mut LogBackend, _epoch: usize) -> Result<Map<String, Value>, CoreError> {
        let fields =
            json!({ format!("{}_seen", self.name): self.seen, "tracks": { self.name: self.seen } });
        Ok(fields.as_object().expect("an object").clone())
    }
    fn after_checkpoint(&mut self, epoch: usize) -> Vec<Cleanup> {
        epoch
            .checked_sub(1)
            .map(Cleanup::Checkpoint)
            .into_iter()
            .collect()
    }
    fn finish(&mut self, b: &mut LogBackend) -> Result<(), CoreError> {
        b.log.lock().unwrap().push(format!("finish {}", self.name));
        Ok(())
    }
}

fn driver(log: &Log, epochs: usize, stop_after: Option<usize>) -> Driver<LogBackend> {
    Driver {
        rule: Box::new(CountingRule {
            observed: 0,
            log: log.clone(),
        }),
        hooks: vec![
            Box::new(Counter { name: "a", seen: 0 }),
            Box::new(Counter { name: "b", seen: 0 }),
        ],
        epochs,
        stop_after,
    }
}

fn backend(log: &Log, interrupt_in: Option<usize>) -> LogBackend {
    LogBackend {
        log: log.clone(),
        interrupt_in,
        committed: Vec::new(),
    }
}

#[test]
fn a_fresh_run_follows_the_documented_order() {
    let log = Log::default();
    let mut b = backend(&log, None);
    let outcome = driver(&log, 2, None)
        .run(&mut b, Start::Fresh)
        .expect("runs");
    assert_eq!(outcome, Outcome::Completed);
    let c0 =
        r#"commit {"completed_epochs":1,"rule":1,"a_seen":1,"b_seen":1,"tracks":{"a":1,"b":1}}"#;
    let c1 =
        r#"commit {"completed_epochs":2,"rule":2,"a_seen":2,"b_seen":2,"tracks":{"a":2,"b":2}}"#;
    let expected = [
        "measure initial true",
        "observe initial",
        "plan 0",
        "train 0 from rule 0",
        "measure 0 needs 001",
        "observe 0",
        "record 0 measured after 0",
        r#"a after 0 record ["counting", "a"]"#,
        r#"b after 0 record ["counting", "a", "b"]"#,
        "save 0",
        c0,
        "plan 1",
        "train 1 from rule 1",
        "measure 1 needs 011",
        "observe 1",
        "record 1 measured after 1",
        r#"a after 1 record ["counting", "a"]"#,
        r#"b after 1 record ["counting", "a", "b"]"#,
        "save 1",
        c1,
        "clean Checkpoint(0)",
        "clean Checkpoint(0)",
        "finish a",
        "finish b",
    ];
    assert_eq!(*log.lock().unwrap(), expected);
}

#[test]
fn a_resume_restores_instead_of_initialising_and_matches_an_uninterrupted_run() {
    let log = Log::default();
    let mut first = backend(&log, None);
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
    let mut second = backend(&log, None);
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
    let mut whole = backend(&Log::default(), None);
    driver(&Log::default(), 3, None)
        .run(&mut whole, Start::Fresh)
        .expect("runs");
    assert_eq!(second.committed.last(), whole.committed.last());
}

#[test]
fn an_epoch_stopped_inside_commits_nothing_for_it() {
    let log = Log::default();
    let mut b = backend(&log, Some(1));
    let outcome = driver(&log, 3, None)
        .run(&mut b, Start::Fresh)
        .expect("runs");
    assert_eq!(outcome, Outcome::Interrupted { epoch: 1 });
    assert_eq!(b.committed.len(), 1);
    assert_eq!(
        log.lock().unwrap().last().map(String::as_str),
        Some("train 1 from rule 1")
    );
}

#[test]
fn merging_hook_fields_joins_objects_and_refuses_other_collisions() {
    let mut into = json!({"selection": {"raw": 1}, "ema_updates": 2})
        .as_object()
        .cloned()
        .unwrap();
    let more = json!({"selection": {"ema": 3}, "fawa_updates": 0})
        .as_object()
        .cloned()
        .unwrap();
    merge(&mut into, more).expect("disjoint keys merge");
    assert_eq!(
        Value::Object(into.clone()),
        json!({"selection": {"raw": 1, "ema": 3}, "ema_updates": 2, "fawa_updates": 0})
    );
    let clash = json!({"ema_updates": 5}).as_object().cloned().unwrap();
    let err = merge(&mut into, clash).expect_err("two hooks writing one number");
    assert!(err.to_string().contains("ema_updates"), "{err}");
}
