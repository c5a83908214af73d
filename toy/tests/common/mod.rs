//! Shared proptest configuration of the toy tests.

use proptest::test_runner::{Config, FileFailurePersistence};

/// `cases` random cases (or `PROPTEST_CASES` when set), with failing seeds recorded in
/// `toy/proptest-regressions/<file>.txt` (cargo runs tests from the package root), which is
/// committed so that every later run replays them first.
pub fn config(file: &'static str, cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..Config::default()
    }
}
