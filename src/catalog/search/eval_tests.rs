//! Recall on the project's evaluation set (`tests/fixtures/search_eval/`):
//! searches worded as a model words them, each with the operation(s) that
//! answer it, written before the ranking was tuned. A drop in recall fails
//! the test; `cargo test --lib search_recall -- --nocapture` prints the
//! figures and every miss.

use serde::Deserialize;

use super::SearchIndex;
use crate::catalog::Catalog;

/// A set of searches, the floors its recall holds, and why it is kept.
struct Set {
    name: &'static str,
    text: &'static str,
    /// Recall@1 and recall@3 it holds: a little under what the ranking
    /// measured when they were set (docs/benchmarks.md, "Finding an
    /// operation"), so a change that loses recall fails.
    floors: (f64, f64),
}

/// The first goals were 70 % first and 90 % in the top three; issue 56's,
/// on a set written after its changes, 80 % and 92 %.
const SETS: [Set; 6] = [
    Set {
        name: "evaluation",
        text: include_str!("../../../tests/fixtures/search_eval/intents.json"),
        floors: (0.82, 0.93),
    },
    // Written after the first ranking by someone who had not seen it. Its
    // misses showed what the first ranking lacked (values in queries:
    // `acme/app`, `v1.4.2`, `src/lib.rs`), so it has shaped the ranking
    // since.
    Set {
        name: "held out",
        text: include_str!("../../../tests/fixtures/search_eval/held_out.json"),
        floors: (0.87, 0.94),
    },
    // Written by someone who had seen neither the ranking nor the other
    // sets, and read only to measure.
    Set {
        name: "fresh",
        text: include_str!("../../../tests/fixtures/search_eval/fresh.json"),
        floors: (0.88, 0.97),
    },
    // Written after the ranking learned word forms, answer fields,
    // purposes and near words, by someone who had seen neither the ranking
    // nor the other sets; held out for two rounds, then a development set
    // of issue 56's last round.
    Set {
        name: "fourth",
        text: include_str!("../../../tests/fixtures/search_eval/fourth.json"),
        floors: (0.77, 0.92),
    },
    // Written blind (the catalog and Gitea's OpenAPI document only) at the
    // start of issue 56's last round, measured after it: only its figures
    // were read while the ranking changed.
    Set {
        name: "fifth",
        text: include_str!("../../../tests/fixtures/search_eval/fifth.json"),
        floors: (0.78, 0.90),
    },
    // Written blind (the catalog and Gitea's OpenAPI document only) after
    // issue 56's last round, and measured once.
    Set {
        name: "sixth",
        text: include_str!("../../../tests/fixtures/search_eval/sixth.json"),
        floors: (0.82, 0.93),
    },
];

#[derive(Deserialize)]
struct EvaluationSet {
    intents: Vec<Intent>,
}

#[derive(Deserialize)]
struct Intent {
    query: String,
    expect: Vec<String>,
    area: String,
}

/// (recall@1, recall@3, the misses with what came first).
fn evaluate(catalog: &Catalog, index: &SearchIndex, set: &str) -> (f64, f64, Vec<String>) {
    let set: EvaluationSet = serde_json::from_str(set).unwrap();
    let ops = catalog.operations();
    let (mut first, mut top3) = (0, 0);
    let mut misses = Vec::new();
    for intent in &set.intents {
        let found: Vec<&str> = index
            .search(&intent.query, |_| true, 5)
            .into_iter()
            .map(|i| ops[i].tool_name.as_str())
            .collect();
        let rank = found
            .iter()
            .position(|name| intent.expect.iter().any(|e| e == name));
        match rank {
            Some(0) => first += 1,
            _ => misses.push(format!(
                "[{}] {:?}: rank {} (want {}) got {}",
                intent.area,
                intent.query,
                rank.map_or("-".to_owned(), |r| (r + 1).to_string()),
                intent.expect.join("|"),
                found.iter().take(3).copied().collect::<Vec<_>>().join(", ")
            )),
        }
        if rank.is_some_and(|r| r < 3) {
            top3 += 1;
        }
    }
    let n = set.intents.len() as f64;
    (f64::from(first) / n, f64::from(top3) / n, misses)
}

/// Measures the set named `name`, prints its figures and misses, and
/// fails when it falls under its floors.
fn holds_its_floors(name: &str) {
    let set = SETS.iter().find(|set| set.name == name).unwrap();
    let catalog = Catalog::bundled();
    let index = SearchIndex::new(catalog.operations());
    let (at1, at3, misses) = evaluate(&catalog, &index, set.text);
    for miss in &misses {
        println!("{name} {miss}");
    }
    println!(
        "{name}: recall@1 {:.1} %, recall@3 {:.1} %",
        at1 * 100.0,
        at3 * 100.0
    );
    let (floor1, floor3) = set.floors;
    assert!(at1 >= floor1, "{name}: recall@1 {at1:.3} < {floor1}");
    assert!(at3 >= floor3, "{name}: recall@3 {at3:.3} < {floor3}");
}

#[test]
fn search_recall_on_the_evaluation_set_holds_its_floors() {
    holds_its_floors("evaluation");
}

#[test]
fn search_recall_on_the_held_out_set_holds_its_floors() {
    holds_its_floors("held out");
}

#[test]
fn search_recall_on_the_fresh_set_holds_its_floors() {
    holds_its_floors("fresh");
}

#[test]
fn search_recall_on_the_fourth_set_holds_its_floors() {
    holds_its_floors("fourth");
}

#[test]
fn search_recall_on_the_fifth_set_holds_its_floors() {
    holds_its_floors("fifth");
}

#[test]
fn search_recall_on_the_sixth_set_holds_its_floors() {
    holds_its_floors("sixth");
}

/// `SEARCH_EXPLAIN="query one|query two" cargo test --lib explain_searches
/// -- --nocapture`: the top results of each query, with their scores.
#[test]
fn explain_searches() {
    let Ok(queries) = std::env::var("SEARCH_EXPLAIN") else {
        return;
    };
    let catalog = Catalog::bundled();
    let index = SearchIndex::new(catalog.operations());
    for query in queries.split('|') {
        for line in index.explain(catalog.operations(), query, 6) {
            println!("{line}");
        }
    }
}

/// Recall on a set kept outside the repository, so that whoever tunes the
/// ranking never reads it: `AEGIS_SEARCH_EVAL_FILE=/path/set.json cargo
/// test --lib search_recall_on_a_set_kept_outside -- --ignored
/// --nocapture` prints recall@1 and recall@3, and nothing of the set
/// (`AEGIS_SEARCH_EVAL_SHOW=1`: its misses too, for a development set). A
/// measurement, not a test: it needs the file.
#[test]
#[ignore = "a measurement: needs AEGIS_SEARCH_EVAL_FILE, a set kept outside the repository"]
fn search_recall_on_a_set_kept_outside_the_repository() {
    let path = std::env::var("AEGIS_SEARCH_EVAL_FILE")
        .expect("AEGIS_SEARCH_EVAL_FILE names the set to measure");
    let set = std::fs::read_to_string(&path).expect("the set is readable");
    let catalog = Catalog::bundled();
    let index = SearchIndex::new(catalog.operations());
    let (at1, at3, misses) = evaluate(&catalog, &index, &set);
    // A development set's misses, for whoever tunes on it; never a held-out set's.
    if std::env::var("AEGIS_SEARCH_EVAL_SHOW").is_ok_and(|v| v == "1") {
        for miss in &misses {
            println!("{miss}");
        }
    }
    println!(
        "{path}: recall@1 {:.1} %, recall@3 {:.1} % ({} misses)",
        at1 * 100.0,
        at3 * 100.0,
        misses.len()
    );
}
