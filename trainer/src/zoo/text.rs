//! The leaderboard as markdown: the ranking table, then robust accuracy per model and class.

use classwise_core::record::{Leaderboard, LeaderboardRow};

fn pct(v: f64) -> String {
    format!("{:.2}", 100.0 * v)
}

fn reported(r: &LeaderboardRow) -> String {
    match (&r.reported, r.difference) {
        (Some(rep), Some(d)) => {
            let flag = if r.flagged { " **⚠**" } else { "" };
            format!("{:.2} | {d:+.2}{flag}", rep.robust)
        }
        _ => "– | –".to_owned(),
    }
}

/// The ranking table.
fn ranking(board: &Leaderboard) -> String {
    let mut md = String::from(
        "| rank (avg) | model | architecture | clean % | robust % | reported % | Δ points | \
         worst class | worst % | std (points) | worst-20 % | rank (worst) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in &board.models {
        let worst = board
            .class_names
            .get(r.worst_class)
            .map_or("?", String::as_str);
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} {worst} | {} | {:.2} | {} | {} |\n",
            r.rank_by_average,
            r.name,
            r.architecture,
            pct(r.clean),
            pct(r.robust),
            reported(r),
            r.worst_class,
            pct(r.worst_robust),
            100.0 * r.robust_std,
            pct(r.robust_worst_20),
            r.rank_by_worst,
        ));
    }
    md
}

/// Robust accuracy (%) per model (rows) and class (columns).
fn per_class(board: &Leaderboard) -> String {
    let head: Vec<String> = board
        .class_names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{i} {n}"))
        .collect();
    let mut md = format!(
        "| model | {} |\n|---|{}\n",
        head.join(" | "),
        "---|".repeat(head.len())
    );
    for r in &board.models {
        let cells: Vec<String> = r.robust_per_class.iter().map(|v| pct(*v)).collect();
        md.push_str(&format!("| {} | {} |\n", r.name, cells.join(" | ")));
    }
    md
}

/// The whole page.
pub fn markdown(board: &Leaderboard) -> String {
    let flagged = board.models.iter().filter(|r| r.flagged).count();
    format!(
        "# Class-wise leaderboard: {} at eps = {}\n\n{} on {} test images per model. Robust = \
         correct on the clean image and on its adversarial example. Δ = ours − reported robust \
         accuracy; **⚠** marks a difference larger than 1 point and three binomial standard \
         errors ({flagged} flagged).\n\n{}\nRobust accuracy (%) by class:\n\n{}",
        board.dataset,
        board.eps_text,
        board.protocol,
        board.n_samples,
        ranking(board),
        per_class(board)
    )
}
