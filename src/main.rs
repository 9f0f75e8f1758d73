use agentsim::scenario;
use agentsim::sim::{reference::ReferenceSubject, simulate, Scripted};
fn main() {
    for path in std::env::args().skip(1) {
        match scenario::load(std::path::Path::new(&path), "x", agentsim::check::RULE_IDS) {
            Ok(s) => {
                let out = simulate(&s.scenario, &mut ReferenceSubject::new(), &mut Scripted).unwrap();
                println!("== {path}");
                print!("{}", out.trace.render());
                for f in out.findings {
                    println!("FINDING {} line {}: {}", f.rule, f.line, f.message);
                }
            }
            Err(e) => println!("ERROR {e}"),
        }
    }
}
