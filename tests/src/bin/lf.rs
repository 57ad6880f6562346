//! The stand-in `lf` (see `lf_sim::cli`).

fn main() {
    std::process::exit(lf_sim::cli::main(std::env::args_os().collect()));
}
