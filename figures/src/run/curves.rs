//! Class-wise robust accuracy of a trainer run over the epochs: on the test subset after each
//! evaluated epoch (the per-class curves of CFA §3 and Tian et al. Fig. 1), and t_k, the
//! accuracy on the adversarial examples trained on (CFA §3.3, the statistic CCM calibrates on).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::log::RunLog;
use crate::classes::ClassLines;
use crate::error::{Result, invalid};
use crate::legend::{self, Entry};
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::{Cell, Table};

const AXES: [&str; 3] = [
    "epoch",
    "robust test accuracy (evaluation attack)",
    "train robust accuracy t_k",
];

/// The series of [`RunCurves`], read from a run's `metrics.jsonl`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunCurves {
    pub name: String,
    pub class_names: Vec<String>,
    /// 1-based epochs of every line of `metrics.jsonl`.
    pub epochs: Vec<f64>,
    /// t_k per class (outer index: class).
    pub train_robust: Vec<Vec<f64>>,
    /// 1-based epochs with a test evaluation.
    pub test_epochs: Vec<f64>,
    /// Robust test accuracy per class at `test_epochs` (outer index: class).
    pub test_robust: Vec<Vec<f64>>,
    pub test_avg: Vec<f64>,
    pub test_worst: Vec<f64>,
    /// 1-based epochs with an evaluation of the averaged model, and its average robust accuracy.
    pub ema_epochs: Vec<f64>,
    pub ema_avg: Vec<f64>,
    /// Test images per class of each evaluation (`None`: the whole test set, or unknown).
    pub test_per_class: Option<usize>,
}

impl RunCurves {
    pub fn new(log: &RunLog) -> Result<Self> {
        let k = log.num_classes();
        let epoch = |e: usize| (e + 1) as f64;
        let mut c = RunCurves {
            name: log.name.clone(),
            class_names: log.class_names.clone(),
            epochs: Vec::new(),
            train_robust: vec![Vec::new(); k],
            test_epochs: Vec::new(),
            test_robust: vec![Vec::new(); k],
            test_avg: Vec::new(),
            test_worst: Vec::new(),
            ema_epochs: Vec::new(),
            ema_avg: Vec::new(),
            test_per_class: log.epoch_test_per_class,
        };
        for e in &log.epochs {
            c.epochs.push(epoch(e.epoch));
            for (series, v) in c.train_robust.iter_mut().zip(&e.train_robust) {
                series.push(*v);
            }
            if let Some(t) = &e.test {
                c.test_epochs.push(epoch(e.epoch));
                for (series, v) in c.test_robust.iter_mut().zip(&t.robust) {
                    series.push(*v);
                }
                c.test_avg.push(t.robust_avg);
                c.test_worst.push(t.robust_worst);
            }
            if let Some(t) = &e.ema_test {
                c.ema_epochs.push(epoch(e.epoch));
                c.ema_avg.push(t.robust_avg);
            }
        }
        if c.test_epochs.is_empty() {
            return Err(invalid(
                format!("metrics of run {}", c.name),
                "no epoch with a test evaluation",
                "at least one (the last epoch is always evaluated)",
            ));
        }
        Ok(c)
    }

    fn lines(&self) -> ClassLines {
        ClassLines::new(self.class_names.len())
    }

    /// Panel (a): each class's robust test accuracy over the epochs, the band between the best
    /// and the worst class (Tian et al. Fig. 1 shades it), the average, the worst class and the
    /// averaged model's average.
    pub(crate) fn draw_test_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        caption: &str,
    ) -> DrawResult<(), DB> {
        let last = self.epochs.last().copied().unwrap_or(1.0);
        let [x_desc, test_desc, _] = AXES;
        let mut a = style::chart(area, caption, 0.5..last + 0.5, 0.0..1.0)?;
        style::mesh_with(
            &mut a,
            x_desc,
            test_desc,
            &style::tick_whole,
            &style::tick_plain,
        )?;
        let best: Vec<f64> = (0..self.test_epochs.len())
            .map(|i| {
                self.test_robust
                    .iter()
                    .map(|s| s[i])
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect();
        let mut band = points(&self.test_epochs, &best);
        band.extend(
            points(&self.test_epochs, &self.test_worst)
                .into_iter()
                .rev(),
        );
        a.draw_series(std::iter::once(Polygon::new(
            band,
            style::tint(style::REFERENCE, 0.15).filled(),
        )))?;
        for (c, series) in self.test_robust.iter().enumerate() {
            self.lines()
                .draw(&mut a, &points(&self.test_epochs, series), c)?;
        }
        style::line(
            &mut a,
            &points(&self.test_epochs, &self.test_avg),
            BLACK,
            Dash::Solid,
            "",
        )?;
        style::line(
            &mut a,
            &points(&self.test_epochs, &self.test_worst),
            BLACK,
            Dash::Dotted,
            "",
        )?;
        if !self.ema_epochs.is_empty() {
            style::line(
                &mut a,
                &points(&self.ema_epochs, &self.ema_avg),
                BLACK,
                Dash::Dashed,
                "",
            )?;
        }
        Ok(())
    }

    /// The legend's summary row of [`RunCurves::draw_test_panel`].
    pub(crate) fn summary_entries(&self) -> Vec<Entry> {
        let mut summary = vec![
            Entry::line(BLACK, Dash::Solid, "average"),
            Entry::line(BLACK, Dash::Dotted, "worst class"),
            Entry::boxed(
                style::tint(style::REFERENCE, 0.15),
                "gap between the best and the worst class",
            ),
        ];
        if !self.ema_epochs.is_empty() {
            summary.push(Entry::line(
                BLACK,
                Dash::Dashed,
                "average, weight-averaged model",
            ));
        }
        summary
    }
}

fn points(x: &[f64], y: &[f64]) -> Vec<(f64, f64)> {
    x.iter().copied().zip(y.iter().copied()).collect()
}

impl Figure for RunCurves {
    fn id(&self) -> &'static str {
        "run-curves"
    }

    fn title(&self) -> String {
        format!(
            "Run {}: class-wise robust accuracy during training",
            self.name
        )
    }

    fn reproduces(&self) -> &'static str {
        "the class-wise robust accuracy curves of CFA section 3 and Tian et al. Figure 1, from \
         the run's metrics.jsonl"
    }

    fn look_at(&self) -> &'static str {
        "The spread between the classes at every epoch, which class stays at the bottom (the \
         worst class), and whether t_k, the statistic CFA calibrates its budgets on, ranks the \
         classes as the test accuracy does."
    }

    fn size(&self) -> (u32, u32) {
        (1600, 820)
    }

    fn tables(&self) -> Vec<Table> {
        let k = self.class_names.len();
        let mut test_header = vec!["epoch".to_owned()];
        test_header.extend((0..k).map(|c| format!("robust_{c}")));
        test_header.extend(["robust_avg".to_owned(), "robust_worst".to_owned()]);
        let mut test = Table::new(
            "test",
            &test_header.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        for (i, e) in self.test_epochs.iter().enumerate() {
            let mut row = vec![Cell::from(*e)];
            row.extend(self.test_robust.iter().map(|s| Cell::from(s[i])));
            row.extend([Cell::from(self.test_avg[i]), Cell::from(self.test_worst[i])]);
            test.push(row).expect("one cell per column");
        }
        let mut train_header = vec!["epoch".to_owned()];
        train_header.extend((0..k).map(|c| format!("train_robust_{c}")));
        let mut train = Table::new(
            "train",
            &train_header.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        for (i, e) in self.epochs.iter().enumerate() {
            let mut row = vec![Cell::from(*e)];
            row.extend(self.train_robust.iter().map(|s| Cell::from(s[i])));
            train.push(row).expect("one cell per column");
        }
        let mut classes = Table::new("classes", &["class", "name"]);
        for (c, n) in self.class_names.iter().enumerate() {
            classes
                .push(vec![Cell::from(c), Cell::from(n.as_str())])
                .expect("two cells");
        }
        let mut out = vec![test, train, classes];
        if !self.ema_epochs.is_empty() {
            out.push(
                Table::columns(
                    "ema",
                    &[("epoch", &self.ema_epochs), ("robust_avg", &self.ema_avg)],
                )
                .expect("equal lengths by construction"),
            );
        }
        out
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (plot, strip) = legend::split(area, self.lines().legend_rows(true));
        let panels = plot.split_evenly((1, 2));
        let caption = match self.test_per_class {
            Some(n) => format!("(a) test subset of {n} images per class"),
            None => "(a) test set, each class and the average".to_owned(),
        };
        self.draw_test_panel(&panels[0], &caption)?;
        let last = self.epochs.last().copied().unwrap_or(1.0);
        let [x_desc, _, train_desc] = AXES;
        let mut b = style::chart(
            &panels[1],
            "(b) t_k on the training adversarial examples",
            0.5..last + 0.5,
            0.0..1.0,
        )?;
        style::mesh_with(
            &mut b,
            x_desc,
            train_desc,
            &style::tick_whole,
            &style::tick_plain,
        )?;
        for (c, series) in self.train_robust.iter().enumerate() {
            self.lines()
                .draw(&mut b, &points(&self.epochs, series), c)?;
        }
        self.lines()
            .legend(&strip, &self.class_names, self.summary_entries())
    }
}
