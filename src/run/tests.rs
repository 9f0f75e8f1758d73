use std::path::PathBuf;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::check::Level;

#[test]
fn a_plain_replay_names_only_the_file() {
    let run = Run::at("scenarios/a.json".into());
    assert_eq!(run.command(), "agentsim replay scenarios/a.json");
}

#[test]
fn every_part_that_changes_the_trace_is_in_the_command() {
    let run = Run::at("dir with space/it's.json".into())
        .seeded(StrategyKind::Pct { depth: 3 }, 41)
        .on(
            &Implementation::adapter("node my adapter.mjs", Duration::from_millis(2500))
                .with_mutant(crate::zoo::Mutant::from_name("poison-not-stored")),
        );
    assert_eq!(
        run.command(),
        "agentsim replay 'dir with space/it'\\''s.json' --strategy pct:3 --seed 41 --mutant poison-not-stored --impl 'node my adapter.mjs' --step-timeout-ms 2500"
    );
    let crash = Run::at("s.json".into()).in_world(World::NetCrash {
        step: 12,
        sync: SyncPolicy::None,
    });
    assert_eq!(
        crash.command(),
        "agentsim replay s.json --crash-at-step 12 --sync none --seed 0"
    );
    let choices = Run::at("s.json".into()).choosing(vec![0, 2, 1]);
    assert_eq!(choices.command(), "agentsim replay s.json --choices 0.2.1");
}

#[test]
fn flags_that_cannot_describe_one_run_are_typed_errors() {
    let cases = [
        (
            "agentsim replay s.json --in-process --world net",
            "run.in-process-networked",
        ),
        ("agentsim replay s.json --world net --choices 1.2", "run.choices-in-net"),
        (
            "agentsim replay s.json --crash-at-step 3 --impl x",
            "run.crash-with-others",
        ),
        ("agentsim replay s.json --after t.json", "run.after-without-adapter"),
        (
            "agentsim replay s.json --impl x --world net --after t.json",
            "run.after-without-adapter",
        ),
        ("agentsim run s.json", "run.not-a-command"),
        ("agentsim replay 's.json", "run.not-a-command"),
        ("agentsim replay s.json --no-such-flag", "run.not-a-command"),
    ];
    for (command, code) in cases {
        let error = Run::parse(command).expect_err(command);
        assert_eq!(error.code(), code, "{command}: {error}");
    }
    let forced = Run::at("s.json".into())
        .in_world(World::NetSeeded)
        .seeded(StrategyKind::Random, 3);
    assert_eq!(forced.validate(), Err(RunError::StrategyInNet));
}

#[test]
fn shell_words_read_what_shell_quote_writes() {
    for text in ["plain", "", "it's", "a b", "'\"$`\\", "tab\there", "new\nline"] {
        let line = format!("x {} y", shell_quote(text));
        assert_eq!(shell_words(&line).unwrap(), vec!["x", text, "y"], "{line}");
    }
    assert_eq!(shell_words("a \"b \\\" c\" d\\ e").unwrap(), vec!["a", "b \" c", "d e"]);
}

/// A word a printed command can carry: not empty, not read as a flag.
fn word() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ./'\"$`\\\\_=,:@%+-]{0,16}".prop_map(|text| format!("x{text}"))
}

fn strategy_kind() -> impl Strategy<Value = StrategyKind> {
    prop_oneof![
        Just(StrategyKind::Scripted),
        Just(StrategyKind::Random),
        (1u32..10).prop_map(|depth| StrategyKind::Pct { depth }),
        (1u32..10, 1u32..500).prop_map(|(depth, steps)| StrategyKind::PctSteps { depth, steps }),
        (1u32..5000, any::<bool>()).prop_map(|(bound, reduced)| StrategyKind::Exhaustive { bound, reduced }),
        Just(StrategyKind::Guided),
    ]
}

fn schedule() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        (strategy_kind(), any::<u64>()).prop_map(|(strategy, seed)| Schedule::Seeded { strategy, seed }),
        prop::collection::vec(0usize..20, 0..12).prop_map(Schedule::Choices),
    ]
}

fn implementation() -> impl Strategy<Value = Implementation> {
    let mutants = crate::zoo::names();
    let mutant =
        prop::option::of(prop::sample::select(mutants)).prop_map(|name| name.and_then(crate::zoo::Mutant::from_name));
    let base = prop_oneof![
        Just(Implementation::reference()),
        Just(Implementation::conforming_variant()),
        Just(Implementation::conforming_variant_with_serial_observers()),
        (word(), 1u64..100_000).prop_map(|(command, ms)| Implementation::adapter(command, Duration::from_millis(ms))),
    ];
    (base, mutant).prop_map(|(base, mutant)| base.with_mutant(mutant))
}

fn world() -> impl Strategy<Value = World> {
    prop_oneof![
        Just(World::Own),
        Just(World::InProcess),
        Just(World::NetSeeded),
        (any::<u64>(), any::<bool>()).prop_map(|(step, sync)| World::NetCrash {
            step,
            sync: if sync {
                SyncPolicy::EveryAppend
            } else {
                SyncPolicy::None
            },
        }),
    ]
}

fn judging() -> impl Strategy<Value = Selection> {
    let ids: Vec<&'static str> = crate::check::RULE_IDS.to_vec();
    let rules = prop::option::of(prop::sample::subsequence(ids, 1..4));
    let level = prop::option::of(prop_oneof![Just(Level::Must), Just(Level::Should)]);
    (rules, level).prop_map(|(rules, level)| {
        let selection = match rules {
            Some(rules) => Selection::parse_rules(&rules.join(",")).expect("rule ids parse"),
            None => Selection::all(),
        };
        selection.with_level(level)
    })
}

fn run() -> impl Strategy<Value = Run> {
    (
        word(),
        schedule(),
        implementation(),
        world(),
        judging(),
        prop::option::of((word(), any::<u64>())),
    )
        .prop_map(|(scenario, schedule, implementation, world, judging, after)| {
            let adapter = implementation.is_adapter();
            // What cannot go together is made to: a forced networked world runs the scripted
            // schedule from a seed, `after` only on an adapter in process.
            let schedule = match schedule {
                Schedule::Choices(_) if world.forced_net() => Schedule::Seeded {
                    strategy: StrategyKind::Scripted,
                    seed: 7,
                },
                Schedule::Seeded { seed, .. } if world.forced_net() => Schedule::Seeded {
                    strategy: StrategyKind::Scripted,
                    seed,
                },
                schedule => schedule,
            };
            let world = match world {
                World::NetCrash { .. } if adapter => World::Own,
                world => world,
            };
            let after = after.filter(|_| adapter && !world.forced_net());
            Run {
                scenario: PathBuf::from(scenario),
                schedule,
                implementation,
                world,
                judging,
                after: after.map(|(path, seed)| (PathBuf::from(path), seed)),
            }
        })
        .prop_filter("a valid run", |run| run.validate().is_ok())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A printed replay command parses back to the same run.
    #[test]
    fn a_printed_replay_command_parses_back_to_the_same_run(run in run()) {
        let command = run.command();
        let parsed = Run::parse(&command);
        prop_assert_eq!(parsed.as_ref(), Ok(&run), "{}", command);
    }
}
