fn main() -> std::process::ExitCode {
    agentsim::cli::main()
}
