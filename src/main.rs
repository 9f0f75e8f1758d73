use agentsim::scenario;
use agentsim::sim::{reference::ReferenceSubject, simulate, Scripted};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let s = scenario::load(
        std::path::Path::new(&path),
        "x",
        &[
            "RESTORE-4",
            "PROJECT-1",
            "WIRE-1",
            "WIRE-3",
            "WIRE-4",
            "PERSIST-1",
            "PERSIST-2",
            "PERSIST-6",
        ],
    )
    .unwrap();
    let out = simulate(&s.scenario, &mut ReferenceSubject::new(), &mut Scripted).unwrap();
    print!("{}", out.trace.render());
    println!("{:?}", out.findings);
}
