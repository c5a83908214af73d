//! The one slug of file and directory names, on the texts it names: attack labels, ε ratios,
//! checkpoint paths and sweep groups.

use classwise_core::name::{is_plain, slug};

#[test]
fn slugs_keep_letters_digits_dots_dashes_and_equals() {
    let cases = [
        (
            "pgd-20 ce step 0.025 uniform start",
            "pgd-20_ce_step_0.025_uniform_start",
        ),
        ("pgd-2 ce 1/T=5 step 0.025", "pgd-2_ce_1_T=5_step_0.025"),
        (
            "autoattack custom (apgd-ce, fab-t)",
            "autoattack_custom_apgd-ce_fab-t",
        ),
        ("8/255", "8_255"),
        (
            "/tmp/run a/model.safetensors",
            "tmp_run_a_model.safetensors",
        ),
        (
            "fmnist-smoke-rule.weight=0.1",
            "fmnist-smoke-rule.weight=0.1",
        ),
        ("a__b  c_", "a_b_c"),
        ("κ ≤ 1", "1"),
    ];
    for (text, want) in cases {
        let got = slug(text);
        assert_eq!(got, want, "slug({text:?})");
        assert_eq!(slug(&got), got, "a slug is its own slug: {got:?}");
    }
}

#[test]
fn plain_names_are_letters_digits_dashes_underscores_and_dots() {
    for name in ["fmnist-at", "wat_table1", "v1.2", "A-b_c.d"] {
        assert!(is_plain(name), "{name}");
    }
    for name in ["", "a b", "a=b", "a/b", "é"] {
        assert!(!is_plain(name), "{name:?}");
    }
}
