// Runs allocate many small values per schedule; mimalloc roughly halves their cost.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    agentsim::cli::main()
}
