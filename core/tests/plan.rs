//! The per-class plan: validation, the ε warm-up scale, needs and TRADES' term weights.

use approx::assert_abs_diff_eq;
use classwise_core::{ClassPlan, CoreError, Needs, TradesScaling};

fn plan() -> ClassPlan {
    ClassPlan {
        eps: vec![0.1, 0.2],
        beta: vec![6.0, 3.0],
        natural_weight: vec![1.0, 0.5],
        boundary_weight: vec![2.0, 1.0],
        step_size: Some(0.05),
    }
}

/// The field a validation error names.
fn field(e: CoreError) -> String {
    match e {
        CoreError::Invalid { field, .. } => field,
        CoreError::LengthMismatch { what, .. } => what,
        other => panic!("expected a field error, got {other:?}"),
    }
}

#[test]
fn validate_names_the_field() {
    plan().validate(2).unwrap();
    assert_eq!(field(plan().validate(3).unwrap_err()), "plan.eps");
    type Edit = fn(&mut ClassPlan);
    let cases: [(&str, Edit); 6] = [
        ("plan.eps", |p| p.eps[0] = -0.1),
        ("plan.beta", |p| p.beta[1] = f64::NAN),
        ("plan.natural_weight", |p| p.natural_weight[0] = -1.0),
        ("plan.boundary_weight", |p| {
            p.boundary_weight[1] = f64::INFINITY
        }),
        ("plan.boundary_weight", |p| p.boundary_weight.push(1.0)),
        ("plan.step_size", |p| p.step_size = Some(-0.01)),
    ];
    for (name, edit) in cases {
        let mut p = plan();
        edit(&mut p);
        let e = p.validate(2).unwrap_err();
        assert!(e.to_string().contains(name), "{e}");
        assert_eq!(field(e), name);
    }
    let mut no_step = plan();
    no_step.step_size = None;
    no_step.validate(2).unwrap();
}

#[test]
fn eps_scale_multiplies_only_eps() {
    let half = plan().with_eps_scale(0.5).unwrap();
    assert_abs_diff_eq!(half.eps[0], 0.05, epsilon = 1e-15);
    assert_abs_diff_eq!(half.eps[1], 0.1, epsilon = 1e-15);
    assert_eq!(
        ClassPlan {
            eps: plan().eps,
            ..half
        },
        plan()
    );
    assert_eq!(plan().with_eps_scale(1.0).unwrap(), plan());
    assert_eq!(plan().with_eps_scale(0.0).unwrap().eps, [0.0, 0.0]);
    assert_eq!(field(plan().with_eps_scale(1.5).unwrap_err()), "eps_scale");
    assert_eq!(
        field(plan().with_eps_scale(f64::NAN).unwrap_err()),
        "eps_scale"
    );
}

#[test]
fn uniform_plans() {
    let p = ClassPlan::uniform(3, 0.3, 6.0);
    assert_eq!(p.n_classes(), 3);
    assert_eq!(p.eps, [0.3; 3]);
    assert_eq!(p.beta, [6.0; 3]);
    assert_eq!(p.natural_weight, [1.0; 3]);
    assert_eq!(p.boundary_weight, [1.0; 3]);
    assert_eq!(p.step_size, None);
}

#[test]
fn trades_term_weights() {
    // Paper: CE + β·KL; reference code (CFA eq. (8)): (CE + β·KL)/(1 + β).
    assert_eq!(TradesScaling::Paper.term_weights(6.0), (1.0, 6.0));
    let (a, b) = TradesScaling::Reference.term_weights(6.0);
    assert_abs_diff_eq!(a, 1.0 / 7.0, epsilon = 1e-15);
    assert_abs_diff_eq!(b, 6.0 / 7.0, epsilon = 1e-15);
    assert_eq!(TradesScaling::Reference.term_weights(0.0), (1.0, 0.0));
    assert_eq!(TradesScaling::default(), TradesScaling::Reference);
}

#[test]
fn needs_combine() {
    let acc = Needs {
        val_accuracy: true,
        ..Needs::default()
    };
    let costs = Needs {
        val_costs: true,
        ..Needs::default()
    };
    assert!(!Needs::default().any());
    assert_eq!(
        acc.or(costs),
        Needs {
            val_accuracy: true,
            val_errors: false,
            val_costs: true
        }
    );
    assert!(acc.or(Needs::default()).any());
}
