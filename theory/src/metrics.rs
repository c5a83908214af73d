//! Class-wise metrics (Tian et al. KDD 2021 Defs. 4.1, 4.2, 5.1; WAT eq. (7); CFA App. C.1
//! worst-20%; FRL/BAT standard, boundary and robust error).
//!
//! Conventions used throughout this module:
//!
//! * Accuracies are stored as **fractions** in `[0, 1]`. Methods with a `_percent` suffix rescale.
//! * Denominators are counted per class; nothing divides by `N/K` (which `PKU-ML/CFA:train.py`
//!   does), so unbalanced datasets and splits are handled.
//! * **Absent classes are an error.** A class with no sample in `labels` has no accuracy; every
//!   constructor that would otherwise divide by zero returns [`TheoryError::Class`] naming the
//!   class (`problem = "has no samples"`). Callers that want to tolerate absent classes can use
//!   [`ClassTally::accuracies`], which returns one `Option<f64>` per class.
//! * Labels and predictions must lie in `0..n_classes`; an out-of-range value is reported as
//!   [`TheoryError::Class`] with `problem = "is out of range"`.
//! * Ties for the worst (best) class go to the lowest class index.

use serde::{Deserialize, Serialize};

use crate::check::Bound;
use crate::error::{Result, TheoryError, check, require};

// ---------------------------------------------------------------------------------------------
// Validation helpers
// ---------------------------------------------------------------------------------------------

fn check_n_classes(n_classes: usize) -> Result<()> {
    if n_classes == 0 {
        return Err(TheoryError::Empty { what: "n_classes" });
    }
    Ok(())
}

fn check_same_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(TheoryError::LengthMismatch {
            what,
            expected,
            got,
        });
    }
    Ok(())
}

fn check_class(what: &'static str, class: usize, n_classes: usize) -> Result<()> {
    if class >= n_classes {
        return Err(TheoryError::Class {
            what,
            class,
            n_classes,
            problem: "is out of range",
        });
    }
    Ok(())
}

fn empty_class(what: &'static str, class: usize, n_classes: usize) -> TheoryError {
    TheoryError::Class {
        what,
        class,
        n_classes,
        problem: "has no samples",
    }
}

/// Checks that a slice of values is non-empty and every entry is finite and in `[lo, hi]`.
fn check_values(
    name: &'static str,
    values: &[f64],
    lo: f64,
    hi: f64,
    expected: &'static str,
) -> Result<()> {
    if values.is_empty() {
        return Err(TheoryError::Empty { what: name });
    }
    for &v in values {
        require(name, v, v.is_finite() && v >= lo && v <= hi, expected)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Slice statistics (unit-agnostic)
// ---------------------------------------------------------------------------------------------

/// Class-wise variance, Tian et al. Def. 4.1 (quoted as WAT Definition 1):
/// CV = (1/C)·Σ_c (a_c − ā)², the **population** variance (divisor C, not C − 1).
///
/// Unit-agnostic: fractions give fraction² (the unit of WAT Tables 4–5, e.g. 0.0250), percentages
/// give percent² (the unit of Tian Tables 1, 3, 5, e.g. 224.3). Two-pass formula for accuracy.
pub fn class_variance(values: &[f64]) -> Result<f64> {
    check_values("values", values, f64::NEG_INFINITY, f64::INFINITY, "finite")?;
    Ok(population_variance(values))
}

/// Population variance of a non-empty finite slice; exactly 0 when all values are equal (the
/// rounded mean of equal values need not equal them, so this is checked first).
fn population_variance(values: &[f64]) -> f64 {
    if values.iter().all(|&v| v == values[0]) {
        return 0.0;
    }
    let c = values.len() as f64;
    let mean = values.iter().sum::<f64>() / c;
    values.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>() / c
}

/// Maximum class-wise discrepancy, Tian et al. Def. 4.2: MCD = a_max − a_min (same unit as the input).
pub fn max_class_discrepancy(values: &[f64]) -> Result<f64> {
    check_values("values", values, f64::NEG_INFINITY, f64::INFINITY, "finite")?;
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(max - min)
}

/// WAT eq. (7): the relative gain of a strategy S over a baseline A (vanilla TRADES) under one
/// attack,
///
/// ρ = (Acc_wc(A_S) − Acc_wc(A)) / Acc_wc(A) − (Acc(A) − Acc(A_S)) / Acc(A).
///
/// Scale-free: pass all four numbers as fractions or all as percentages. The baseline average
/// and worst-class accuracies must be positive (they are denominators). Larger is better; ρ = 0
/// for the baseline itself. Check (WAT Table 1, PGD-100 column): WAT-PGD
/// (36.6 − 25.2)/25.2 − (51.69 − 49.13)/51.69 = 0.403.
pub fn wat_rho(
    baseline_avg: f64,
    baseline_worst: f64,
    strategy_avg: f64,
    strategy_worst: f64,
) -> Result<f64> {
    check("baseline_avg", baseline_avg, Bound::Positive)?;
    check("baseline_worst", baseline_worst, Bound::Positive)?;
    check("strategy_avg", strategy_avg, Bound::NonNegative)?;
    check("strategy_worst", strategy_worst, Bound::NonNegative)?;
    Ok((strategy_worst - baseline_worst) / baseline_worst
        - (baseline_avg - strategy_avg) / baseline_avg)
}

// ---------------------------------------------------------------------------------------------
// Counting
// ---------------------------------------------------------------------------------------------

/// Per-class counts of correct predictions, accumulated batch by batch (e.g. CFA's on-the-fly
/// train robust accuracy t_k of `PKU-ML/CFA:train.py`, or an evaluation pass).
///
/// Every `add_*` method validates its whole input before touching the counts, so an error leaves
/// the tally unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassTally {
    correct: Vec<u64>,
    total: Vec<u64>,
}

impl ClassTally {
    /// An empty tally for `n_classes ≥ 1` classes.
    pub fn new(n_classes: usize) -> Result<Self> {
        check_n_classes(n_classes)?;
        Ok(Self {
            correct: vec![0; n_classes],
            total: vec![0; n_classes],
        })
    }

    pub fn n_classes(&self) -> usize {
        self.total.len()
    }

    /// Number of correct samples per class.
    pub fn correct(&self) -> &[u64] {
        &self.correct
    }

    /// Number of samples per class (the per-class denominators).
    pub fn total(&self) -> &[u64] {
        &self.total
    }

    /// Records one sample of class `label`.
    pub fn add(&mut self, label: usize, correct: bool) -> Result<()> {
        check_class("label", label, self.n_classes())?;
        self.total[label] += 1;
        self.correct[label] += u64::from(correct);
        Ok(())
    }

    /// Records a batch given predicted classes and labels (correct iff `prediction == label`).
    pub fn add_predictions(&mut self, predictions: &[usize], labels: &[usize]) -> Result<()> {
        check_same_len("predictions", labels.len(), predictions.len())?;
        let k = self.n_classes();
        for (&p, &y) in predictions.iter().zip(labels) {
            check_class("labels", y, k)?;
            check_class("predictions", p, k)?;
        }
        for (&p, &y) in predictions.iter().zip(labels) {
            self.total[y] += 1;
            self.correct[y] += u64::from(p == y);
        }
        Ok(())
    }

    /// Records a batch given per-sample correctness flags and labels.
    pub fn add_flags(&mut self, correct: &[bool], labels: &[usize]) -> Result<()> {
        check_same_len("correct", labels.len(), correct.len())?;
        let k = self.n_classes();
        for &y in labels {
            check_class("labels", y, k)?;
        }
        for (&c, &y) in correct.iter().zip(labels) {
            self.total[y] += 1;
            self.correct[y] += u64::from(c);
        }
        Ok(())
    }

    /// Per-class accuracy, `None` for a class with no samples (the explicit alternative to the
    /// error returned by [`ClassTally::to_accuracy`]).
    pub fn accuracies(&self) -> Vec<Option<f64>> {
        self.correct
            .iter()
            .zip(&self.total)
            .map(|(&c, &n)| (n > 0).then(|| c as f64 / n as f64))
            .collect()
    }

    /// The class-wise accuracy; errors with [`TheoryError::Class`] if a class has no samples.
    pub fn to_accuracy(&self) -> Result<ClassAccuracy> {
        class_accuracy_from_counts(&self.correct, &self.total)
    }
}

/// Class-wise accuracy acc_k = #{i : y_i = k, ŷ_i = k} / #{i : y_i = k}.
pub fn class_accuracy(
    predictions: &[usize],
    labels: &[usize],
    n_classes: usize,
) -> Result<ClassAccuracy> {
    let mut tally = ClassTally::new(n_classes)?;
    tally.add_predictions(predictions, labels)?;
    tally.to_accuracy()
}

/// Class-wise accuracy from per-sample correctness flags (e.g. "correct under PGD").
pub fn class_accuracy_from_flags(
    correct: &[bool],
    labels: &[usize],
    n_classes: usize,
) -> Result<ClassAccuracy> {
    let mut tally = ClassTally::new(n_classes)?;
    tally.add_flags(correct, labels)?;
    tally.to_accuracy()
}

/// Class-wise accuracy from per-class counts, correct_k / total_k. Requires
/// `correct_k ≤ total_k` and `total_k > 0` for every class.
pub fn class_accuracy_from_counts(correct: &[u64], total: &[u64]) -> Result<ClassAccuracy> {
    check_n_classes(total.len())?;
    check_same_len("correct", total.len(), correct.len())?;
    let k = total.len();
    let mut per_class = Vec::with_capacity(k);
    for (class, (&c, &n)) in correct.iter().zip(total).enumerate() {
        if n == 0 {
            return Err(empty_class("total", class, k));
        }
        if c > n {
            return Err(TheoryError::Class {
                what: "correct",
                class,
                n_classes: k,
                problem: "has more correct samples than samples",
            });
        }
        per_class.push(c as f64 / n as f64);
    }
    Ok(ClassAccuracy {
        per_class,
        correct: Some(correct.to_vec()),
        total: Some(total.to_vec()),
    })
}

// ---------------------------------------------------------------------------------------------
// ClassAccuracy
// ---------------------------------------------------------------------------------------------

/// A class index with its value (the worst or best class).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassValue {
    pub class: usize,
    pub value: f64,
}

/// Per-class accuracies (fractions) with their summary statistics: average, worst class,
/// worst-20% (CFA App. C.1), CV and MCD (Tian et al. Defs. 4.1, 4.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassAccuracy {
    per_class: Vec<f64>,
    /// Per-class counts, when built from data (absent when built from published values).
    correct: Option<Vec<u64>>,
    total: Option<Vec<u64>>,
}

impl ClassAccuracy {
    /// From per-class accuracies given as fractions in `[0, 1]` (e.g. a published table divided
    /// by 100). Sample counts are then unknown, so [`ClassAccuracy::overall`] is `None`.
    pub fn from_values(per_class: Vec<f64>) -> Result<Self> {
        check_values("per_class", &per_class, 0.0, 1.0, "a fraction in [0, 1]")?;
        Ok(Self {
            per_class,
            correct: None,
            total: None,
        })
    }

    pub fn n_classes(&self) -> usize {
        self.per_class.len()
    }

    /// acc_k for every class, as fractions.
    pub fn per_class(&self) -> &[f64] {
        &self.per_class
    }

    /// acc_k as a fraction, `None` if `class` is out of range.
    pub fn get(&self, class: usize) -> Option<f64> {
        self.per_class.get(class).copied()
    }

    /// Per-class sample counts, when known.
    pub fn totals(&self) -> Option<&[u64]> {
        self.total.as_deref()
    }

    /// Per-class correct counts, when known.
    pub fn corrects(&self) -> Option<&[u64]> {
        self.correct.as_deref()
    }

    /// Unweighted mean over classes, ā = (1/C)·Σ_c a_c (Tian Def. 4.1's ā).
    /// Clamped to [worst, best], which the exact mean satisfies but a rounded sum may not.
    pub fn class_mean(&self) -> f64 {
        let mean = self.per_class.iter().sum::<f64>() / self.n_classes() as f64;
        mean.clamp(self.worst().value, self.best().value)
    }

    /// Accuracy over **all samples** (the papers' "Avg"), Σ_k correct_k / Σ_k total_k. `None` when
    /// the counts are unknown ([`ClassAccuracy::from_values`]).
    pub fn overall(&self) -> Option<f64> {
        let (c, n) = (self.correct.as_ref()?, self.total.as_ref()?);
        let n_all: u64 = n.iter().sum();
        Some(c.iter().sum::<u64>() as f64 / n_all as f64)
    }

    /// The reported average: [`ClassAccuracy::overall`] when counts are known, otherwise
    /// [`ClassAccuracy::class_mean`]. The two agree on balanced test sets.
    pub fn average(&self) -> f64 {
        self.overall().unwrap_or_else(|| self.class_mean())
    }

    /// Worst class, min_k acc_k (ties: lowest index).
    pub fn worst(&self) -> ClassValue {
        let mut best = ClassValue {
            class: 0,
            value: self.per_class[0],
        };
        for (class, &value) in self.per_class.iter().enumerate().skip(1) {
            if value < best.value {
                best = ClassValue { class, value };
            }
        }
        best
    }

    /// Best class, max_k acc_k (ties: lowest index).
    pub fn best(&self) -> ClassValue {
        let mut best = ClassValue {
            class: 0,
            value: self.per_class[0],
        };
        for (class, &value) in self.per_class.iter().enumerate().skip(1) {
            if value > best.value {
                best = ClassValue { class, value };
            }
        }
        best
    }

    /// Mean accuracy of the `k` lowest classes, 1 ≤ k ≤ C.
    pub fn worst_k_mean(&self, k: usize) -> Result<f64> {
        if k == 0 || k > self.n_classes() {
            return Err(TheoryError::InvalidParameter {
                name: "k",
                value: k as f64,
                expected: "1 <= k <= n_classes",
            });
        }
        let mut sorted = self.per_class.clone();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted[..k].iter().sum::<f64>() / k as f64;
        // The exact mean lies in [sorted[0], sorted[k-1]]; undo rounding that leaves it.
        Ok(mean.clamp(sorted[0], sorted[k - 1]))
    }

    /// Number of classes in the worst `fraction` of classes: ⌈fraction·C⌉ (at least 1), with a
    /// 1e-9 guard so that 0.2·200 = 40 exactly (CFA App. C.1: 40 of 200 Tiny-ImageNet classes).
    pub fn worst_fraction_count(&self, fraction: f64) -> Result<usize> {
        require(
            "fraction",
            fraction,
            fraction > 0.0 && fraction <= 1.0,
            "in (0, 1]",
        )?;
        let k = (fraction * self.n_classes() as f64 - 1e-9).ceil().max(1.0) as usize;
        Ok(k.min(self.n_classes()))
    }

    /// Worst-p% mean (CFA App. C.1, Table 4: "worst-20%"): the mean accuracy of the
    /// [`worst_fraction_count`](ClassAccuracy::worst_fraction_count) lowest classes.
    pub fn worst_fraction_mean(&self, fraction: f64) -> Result<f64> {
        self.worst_k_mean(self.worst_fraction_count(fraction)?)
    }

    /// CV in **fraction²** (WAT Tables 4–5 unit, e.g. 0.0250): population variance of the
    /// per-class accuracies, Tian Def. 4.1 / WAT Definition 1.
    pub fn cv(&self) -> f64 {
        population_variance(&self.per_class)
    }

    /// CV in **percent²** (Tian Tables 1, 3, 5 unit, e.g. 224.3 for Madry-PGD): 10⁴ · [`cv`](Self::cv).
    pub fn cv_percent2(&self) -> f64 {
        self.cv() * 1e4
    }

    /// Population standard deviation of the per-class accuracies (fraction), √CV. CFA App. C.2's
    /// "variance 0.15 vs 0.17" is most likely this quantity (a variance of such fractions is of
    /// the order of 0.02, cf. the CV values of WAT Table 4).
    pub fn std_dev(&self) -> f64 {
        self.cv().sqrt()
    }

    /// MCD (Tian Def. 4.2) as a fraction: max_k acc_k − min_k acc_k.
    pub fn mcd(&self) -> f64 {
        self.best().value - self.worst().value
    }

    /// MCD in percentage points (Tian's unit, e.g. 46.3).
    pub fn mcd_percent(&self) -> f64 {
        self.mcd() * 100.0
    }

    /// WAT eq. (7) with `self` as the strategy A_S and `baseline` as A (same attack), using
    /// [`average`](Self::average) and [`worst`](Self::worst).
    pub fn rho_against(&self, baseline: &ClassAccuracy) -> Result<f64> {
        wat_rho(
            baseline.average(),
            baseline.worst().value,
            self.average(),
            self.worst().value,
        )
    }

    /// A serialisable summary of every statistic.
    pub fn summary(&self) -> ClassAccuracySummary {
        ClassAccuracySummary {
            n_classes: self.n_classes(),
            per_class: self.per_class.clone(),
            overall: self.overall(),
            class_mean: self.class_mean(),
            worst: self.worst(),
            best: self.best(),
            cv_fraction2: self.cv(),
            cv_percent2: self.cv_percent2(),
            mcd: self.mcd(),
        }
    }
}

/// All statistics of a [`ClassAccuracy`], in fractions unless the name says otherwise.
///
/// Read back from JSON, only `per_class` and `overall` are taken from the file: every other
/// field is a function of `per_class` and is computed again ([`ClassAccuracy::summary`]), so
/// a summary read is always consistent and the statistics written by an older version (or left
/// out of a hand-written file) cannot disagree with its accuracies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SummaryFields")]
pub struct ClassAccuracySummary {
    pub n_classes: usize,
    pub per_class: Vec<f64>,
    /// Accuracy over all samples, when counts are known.
    pub overall: Option<f64>,
    pub class_mean: f64,
    pub worst: ClassValue,
    pub best: ClassValue,
    /// CV, fraction² (WAT).
    pub cv_fraction2: f64,
    /// CV, percent² (Tian).
    pub cv_percent2: f64,
    pub mcd: f64,
}

impl ClassAccuracySummary {
    /// The reported average: `overall` when counts were known, otherwise `class_mean`
    /// ([`ClassAccuracy::average`]).
    pub fn average(&self) -> f64 {
        self.overall.unwrap_or(self.class_mean)
    }
}

/// What a [`ClassAccuracySummary`] is read from.
#[derive(Deserialize)]
struct SummaryFields {
    per_class: Vec<f64>,
    #[serde(default)]
    overall: Option<f64>,
}

impl TryFrom<SummaryFields> for ClassAccuracySummary {
    type Error = TheoryError;

    fn try_from(f: SummaryFields) -> Result<Self> {
        if let Some(o) = f.overall {
            require(
                "overall",
                o,
                (0.0..=1.0).contains(&o),
                "a fraction in [0, 1]",
            )?;
        }
        let mut summary = ClassAccuracy::from_values(f.per_class)?.summary();
        summary.overall = f.overall;
        Ok(summary)
    }
}

// ---------------------------------------------------------------------------------------------
// Standard / boundary / robust error (FRL, BAT)
// ---------------------------------------------------------------------------------------------

/// Class-wise standard, boundary and robust error (FRL Xu et al. 2021; BAT Table 1).
///
/// * standard error e_k = 1 − clean_acc_k;
/// * boundary error b_k = clean_acc_k − robust_acc_k (unconditional, as in FRL's `evaluate`);
/// * robust error r_k = e_k + b_k = 1 − robust_acc_k.
///
/// b_k equals "the fraction of the class that is correct when clean but wrong under attack"
/// exactly when no sample is wrong when clean but correct under attack. Such samples are counted
/// in [`ClassErrors::clean_wrong_robust_correct`]; when there are some, b_k is smaller than that
/// fraction (and may even be negative). The FRL/BAT identity robust = standard + boundary holds
/// always.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassErrors {
    pub standard: Vec<f64>,
    pub boundary: Vec<f64>,
    pub robust: Vec<f64>,
    /// Over all samples (FRL's "overall e and b").
    pub overall_standard: f64,
    pub overall_boundary: f64,
    pub overall_robust: f64,
    /// Samples per class.
    pub totals: Vec<u64>,
    /// Per class: samples wrong when clean but correct under attack.
    pub clean_wrong_robust_correct: Vec<u64>,
}

fn argmax(values: &[f64]) -> ClassValue {
    let mut best = ClassValue {
        class: 0,
        value: values[0],
    };
    for (class, &value) in values.iter().enumerate().skip(1) {
        if value > best.value {
            best = ClassValue { class, value };
        }
    }
    best
}

impl ClassErrors {
    /// Worst (largest) standard error over classes ("Worst Std").
    pub fn worst_standard(&self) -> ClassValue {
        argmax(&self.standard)
    }

    /// Worst (largest) boundary error over classes ("Worst Bndy"), maximised separately.
    pub fn worst_boundary(&self) -> ClassValue {
        argmax(&self.boundary)
    }

    /// Worst (largest) robust error over classes ("Worst Rob"), maximised separately; in general
    /// ≠ worst standard + worst boundary (BAT Table 1 reports the three worst values).
    pub fn worst_robust(&self) -> ClassValue {
        argmax(&self.robust)
    }
}

/// Standard/boundary/robust errors from per-sample clean and robust correctness flags.
pub fn class_errors(
    clean_correct: &[bool],
    robust_correct: &[bool],
    labels: &[usize],
    n_classes: usize,
) -> Result<ClassErrors> {
    let mut clean = ClassTally::new(n_classes)?;
    check_same_len("robust_correct", clean_correct.len(), robust_correct.len())?;
    clean.add_flags(clean_correct, labels)?;
    let mut robust = ClassTally::new(n_classes)?;
    robust.add_flags(robust_correct, labels)?;
    let mut flipped = vec![0u64; n_classes];
    for ((&c, &r), &y) in clean_correct.iter().zip(robust_correct).zip(labels) {
        flipped[y] += u64::from(!c && r);
    }
    let clean_acc = clean.to_accuracy()?;
    let robust_acc = robust.to_accuracy()?;
    let standard: Vec<f64> = clean_acc.per_class().iter().map(|a| 1.0 - a).collect();
    let boundary: Vec<f64> = clean_acc
        .per_class()
        .iter()
        .zip(robust_acc.per_class())
        .map(|(c, r)| c - r)
        .collect();
    let robust_err: Vec<f64> = robust_acc.per_class().iter().map(|a| 1.0 - a).collect();
    // Both tallies have counts, so `overall` is Some.
    let clean_all = clean_acc.average();
    let robust_all = robust_acc.average();
    Ok(ClassErrors {
        standard,
        boundary,
        robust: robust_err,
        overall_standard: 1.0 - clean_all,
        overall_boundary: clean_all - robust_all,
        overall_robust: 1.0 - robust_all,
        totals: clean.total().to_vec(),
        clean_wrong_robust_correct: flipped,
    })
}

// ---------------------------------------------------------------------------------------------
// CVC (Tian Def. 5.1)
// ---------------------------------------------------------------------------------------------

/// Class-wise variance of confidence, Tian et al. Def. 5.1:
///
/// CVC_k = (1/(N_k·C)) Σ_{i ∈ class k} Σ_c (p_c^i − p̄^i)²,  p̄^i = (1/C) Σ_c p_c^i (= 1/C),
///
/// i.e. the mean over the images of class k of the population variance of the softmax vector.
/// `probs` is row-major, one row of `n_classes` probabilities per sample (each entry in `[0, 1]`
/// and each row summing to 1 within 1e-6). Whether the rows come from natural or adversarial
/// inputs is the caller's choice (Tian et al. Def. 5.1 does not say).
pub fn cvc(probs: &[f64], labels: &[usize], n_classes: usize) -> Result<Vec<f64>> {
    check_n_classes(n_classes)?;
    check_same_len("probs", labels.len() * n_classes, probs.len())?;
    for &y in labels {
        check_class("labels", y, n_classes)?;
    }
    for row in probs.chunks(n_classes) {
        for &p in row {
            require(
                "probs",
                p,
                p.is_finite() && (0.0..=1.0).contains(&p),
                "a probability in [0, 1]",
            )?;
        }
        let s: f64 = row.iter().sum();
        require(
            "probs row sum",
            s,
            (s - 1.0).abs() <= 1e-6,
            "1 (within 1e-6)",
        )?;
    }
    let c = n_classes as f64;
    let mut sums = vec![0.0; n_classes];
    let mut counts = vec![0u64; n_classes];
    for (row, &y) in probs.chunks(n_classes).zip(labels) {
        let mean = row.iter().sum::<f64>() / c;
        sums[y] += row.iter().map(|p| (p - mean) * (p - mean)).sum::<f64>();
        counts[y] += 1;
    }
    sums.iter()
        .zip(&counts)
        .enumerate()
        .map(|(k, (&s, &n))| {
            if n == 0 {
                Err(empty_class("labels", k, n_classes))
            } else {
                Ok(s / (n as f64 * c))
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Confusion matrix (Tian's robust confusion matrix, Tian et al. Fig. 2)
// ---------------------------------------------------------------------------------------------

/// Confusion counts: rows are true classes, columns predictions. Read back from JSON through
/// [`ConfusionMatrix::from_counts`], so a file with other than `n_classes`² counts is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ConfusionFields")]
pub struct ConfusionMatrix {
    n_classes: usize,
    /// Row-major `n_classes × n_classes`.
    counts: Vec<u64>,
}

/// What a [`ConfusionMatrix`] is read from.
#[derive(Deserialize)]
struct ConfusionFields {
    n_classes: usize,
    counts: Vec<u64>,
}

impl TryFrom<ConfusionFields> for ConfusionMatrix {
    type Error = TheoryError;

    fn try_from(f: ConfusionFields) -> Result<Self> {
        ConfusionMatrix::from_counts(f.n_classes, f.counts)
    }
}

impl ConfusionMatrix {
    /// Counts `(label, prediction)` pairs.
    pub fn from_predictions(
        predictions: &[usize],
        labels: &[usize],
        n_classes: usize,
    ) -> Result<Self> {
        check_n_classes(n_classes)?;
        check_same_len("predictions", labels.len(), predictions.len())?;
        for (&p, &y) in predictions.iter().zip(labels) {
            check_class("labels", y, n_classes)?;
            check_class("predictions", p, n_classes)?;
        }
        let mut counts = vec![0u64; n_classes * n_classes];
        for (&p, &y) in predictions.iter().zip(labels) {
            counts[y * n_classes + p] += 1;
        }
        Ok(Self { n_classes, counts })
    }

    /// A matrix from its row-major counts (rows: true classes), as [`ConfusionMatrix`]
    /// serializes them.
    pub fn from_counts(n_classes: usize, counts: Vec<u64>) -> Result<Self> {
        check_n_classes(n_classes)?;
        check_same_len("counts", n_classes * n_classes, counts.len())?;
        Ok(Self { n_classes, counts })
    }

    pub fn n_classes(&self) -> usize {
        self.n_classes
    }

    /// Number of samples of true class `truth` predicted as `predicted` (`None` if out of range).
    pub fn count(&self, truth: usize, predicted: usize) -> Option<u64> {
        (truth < self.n_classes && predicted < self.n_classes)
            .then(|| self.counts[truth * self.n_classes + predicted])
    }

    /// Samples per true class.
    pub fn row_totals(&self) -> Vec<u64> {
        self.counts
            .chunks(self.n_classes)
            .map(|r| r.iter().sum())
            .collect()
    }

    /// Row-normalised matrix in **percent** (Tian Fig. 2); errors on a class with no samples.
    pub fn row_normalized_percent(&self) -> Result<Vec<Vec<f64>>> {
        self.counts
            .chunks(self.n_classes)
            .enumerate()
            .map(|(k, row)| {
                let n: u64 = row.iter().sum();
                if n == 0 {
                    return Err(empty_class("labels", k, self.n_classes));
                }
                Ok(row.iter().map(|&c| 100.0 * c as f64 / n as f64).collect())
            })
            .collect()
    }

    /// Counts with the diagonal set to 0 (Tian's "misclassified" variant).
    pub fn misclassified(&self) -> Vec<Vec<u64>> {
        self.counts
            .chunks(self.n_classes)
            .enumerate()
            .map(|(k, row)| {
                let mut r = row.to_vec();
                r[k] = 0;
                r
            })
            .collect()
    }

    /// The target-class distribution of BAT §3 (Fig. 2b): each class's share of the
    /// misclassified predictions, the column sums of [`ConfusionMatrix::misclassified`] over
    /// their total; `None` when nothing was misclassified.
    pub fn target_shares(&self) -> Option<Vec<f64>> {
        let mut share = vec![0.0; self.n_classes];
        for row in self.misclassified() {
            for (s, n) in share.iter_mut().zip(row) {
                *s += n as f64;
            }
        }
        let total: f64 = share.iter().sum();
        (total > 0.0).then(|| share.iter().map(|v| v / total).collect())
    }

    /// The diagonal as class-wise accuracy.
    pub fn class_accuracy(&self) -> Result<ClassAccuracy> {
        let correct: Vec<u64> = (0..self.n_classes)
            .map(|k| self.counts[k * self.n_classes + k])
            .collect();
        class_accuracy_from_counts(&correct, &self.row_totals())
    }
}
