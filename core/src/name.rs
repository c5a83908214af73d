//! Names made from free text for files and directories: the sweep's run ids
//! (`<group>-s<seed>-<digest>`) and the evaluation files (`eval-<model>-<attack>-eps_<ε>-…`).

/// `text` as one file-name component: ASCII letters, digits, `.`, `-` and `=` are kept, and
/// any other run of characters (`_` included) becomes one `_`, none at either end. E.g.
/// `pgd-2 ce 1/T=5 step 0.025` → `pgd-2_ce_1_T=5_step_0.025`, `autoattack custom (apgd-ce,
/// fab-t)` → `autoattack_custom_apgd-ce_fab-t`.
pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '=') {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_owned()
}

/// Whether `name` is a plain name: non-empty, of ASCII letters, digits, `-`, `_` and `.` (the
/// names of sweeps and their variants).
pub fn is_plain(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}
