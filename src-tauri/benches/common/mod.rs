//! What the benchmarks share: lf-sim's stand-in `lf` found beside the benchmarked binary,
//! and the session counts a run measures.

use std::path::{Path, PathBuf};

/// lf-sim's stand-in `lf`, beside the benchmarked `lf-tray`. Cargo builds no binary of a
/// dependency, so it is built first (the README's command does); without it the tray
/// would list nothing and every wait would time out, saying nothing of why.
pub fn stand_in_lf() -> PathBuf {
    let lf = Path::new(env!("CARGO_BIN_EXE_lf-tray")).with_file_name("lf");
    assert!(
        lf.is_file(),
        "no stand-in lf at {}: build it first with `cargo build --release -p lf-sim --bin lf`",
        lf.display()
    );
    lf
}

/// The counts of open sessions named as arguments, else issue 47's 10, 1 000 and 10 000.
#[allow(dead_code)] // The watch benchmark measures generations, not counts.
pub fn counts() -> Vec<usize> {
    let named: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if named.is_empty() {
        vec![10, 1_000, 10_000]
    } else {
        named
    }
}

/// An `lf` in `dir` that runs the stand-in as generation E2 on the home lf-sim keeps in
/// `dir`: what the tray is pointed at, as a person's PATH would point it at lf.
#[allow(dead_code)] // The watch benchmark plays each generation with a home of its own.
pub fn e2_lf(dir: &Path) -> PathBuf {
    let lf = dir.join("lf");
    std::fs::write(
        &lf,
        format!(
            "#!/bin/sh\nLF_SIM_GENERATION=e2 LF_SIM_DIR={} exec {} \"$@\"\n",
            dir.display(),
            stand_in_lf().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&lf, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    lf
}
