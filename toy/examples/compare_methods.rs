//! Prints the multi-class comparison table: the methods that `toy/tests/multiclass.rs`
//! compares, each trained on seeds 0, 1 and 2 of its `"default"` preset, with the final model's
//! clean and robust test accuracy, then the robust test accuracy of the FAWA model (CFA only)
//! and of WAT's selected iterate, each as avg/worst class. The README's table and the numbers
//! quoted in the tests come from this output.
//!
//! ```sh
//! cargo run --release -p classwise-toy --example compare_methods
//! ```
//!
//! The 18 runs take about 13 s in a release build (one after the other, measured on a shared
//! 2-core machine).

use classwise_toy::multiclass::{RunConfig, RunReport, run};

/// The compared methods ([`classwise_toy::multiclass::METHODS`] spelling).
const COMPARED: [&str; 6] = ["at", "cfa-at", "trades", "cfa-trades", "wat", "frl"];
const SEEDS: [u64; 3] = [0, 1, 2];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for method in COMPARED {
        for seed in SEEDS {
            let mut config = RunConfig::preset_named(method)?;
            config.seed = seed;
            println!("{}", table_line(method, seed, &run(&config)?));
        }
    }
    Ok(())
}

/// One line of the table: final clean and robust accuracy, then the FAWA model (when there is
/// one) and the selected iterate, each as avg/worst.
fn table_line(method: &str, seed: u64, r: &RunReport) -> String {
    let f = &r.final_model;
    let mut line = format!(
        "{method:10} seed {seed}: final clean {:.3}/{:.3} robust {:.3}/{:.3} (avg/worst)",
        f.clean_avg(),
        f.clean_worst(),
        f.robust_avg(),
        f.robust_worst()
    );
    if let Some(fw) = &r.fawa {
        line += &format!(
            " | FAWA ({} epochs) {:.3}/{:.3}",
            r.fawa_accepted,
            fw.robust_avg(),
            fw.robust_worst()
        );
    }
    let s = &r.selected;
    line += &format!(
        " | selected epoch {} {:.3}/{:.3}",
        s.epoch,
        s.model.robust_avg(),
        s.model.robust_worst()
    );
    line
}
