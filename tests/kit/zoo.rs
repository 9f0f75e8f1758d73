//! The zoo at the seam: every mutant is a decorator that wraps any subject, so each one is
//! killed through the adapter protocol (`agentsim serve --mutant NAME`) by the rule and on the
//! case that kill it in process (golden/zoo.txt, which `agentsim mutants --golden` keeps).

use crate::binary::{agentsim, root, BIN};

/// One line of golden/zoo.txt: the mutant, its killing rule, and the case that killed it.
struct Kill {
    mutant: String,
    rule: String,
    scenario: String,
    strategy: String,
    seed: String,
}

fn kills() -> Vec<Kill> {
    let text = std::fs::read_to_string(root().join("golden/zoo.txt")).expect("golden/zoo.txt");
    text.lines()
        .filter(|line| !line.starts_with("rules no mutant breaks"))
        .map(|line| {
            // `name tier RULE canonical=yes scenario (strategy seed N) schedules`
            let words: Vec<&str> = line.split_whitespace().collect();
            Kill {
                mutant: words[0].to_string(),
                rule: words[2].to_string(),
                scenario: words[4].to_string(),
                strategy: words[5].trim_start_matches('(').to_string(),
                seed: words[7].trim_end_matches(')').to_string(),
            }
        })
        .collect()
}

#[test]
fn every_mutant_is_killed_through_serve_as_in_process() {
    let kills = kills();
    assert_eq!(
        kills.len(),
        agentsim::zoo::Mutant::ALL.len(),
        "golden/zoo.txt names every mutant"
    );
    let mut wrong = Vec::new();
    for kill in &kills {
        let adapter = format!("{BIN} serve --mutant {}", kill.mutant);
        let scenario = format!("scenarios/{}.json", kill.scenario);
        let run = agentsim(
            &[
                "run",
                "--impl",
                &adapter,
                &scenario,
                "--strategy",
                &kill.strategy,
                "--seed",
                &kill.seed,
                "--format",
                "json",
            ],
            &[],
        );
        let report: serde_json::Value = match serde_json::from_str(&run.stdout) {
            Ok(report) => report,
            Err(error) => {
                wrong.push(format!("{}: no JSON report ({error}): {}", kill.mutant, run.stderr));
                continue;
            }
        };
        let root_cause = report["results"][0]["rootCause"].as_str().unwrap_or("-").to_string();
        let killed = root_cause == kill.rule;
        if !killed {
            wrong.push(format!(
                "{}: through serve on {} ({} seed {}) the root cause is {root_cause}, in process {}",
                kill.mutant, kill.scenario, kill.strategy, kill.seed, kill.rule
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
