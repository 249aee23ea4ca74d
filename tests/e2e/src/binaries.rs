//! Where the binaries under test are: `PROOFPIPE_BIN_DIR`, else the target directory of the
//! running test executable (`target/<profile>/deps/<test>` -> `target/<profile>/`).

use std::path::PathBuf;

/// The path of binary `name`. Panics, saying how to build it, when it does not exist.
pub fn binary(name: &str) -> PathBuf {
    let dir = match std::env::var_os("PROOFPIPE_BIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let exe = std::env::current_exe().expect("the test executable's path");
            let deps = exe.parent().expect("the test executable is in a directory");
            deps.parent().unwrap_or(deps).to_path_buf()
        }
    };
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} does not exist: run `cargo build -p proofpipe-prover -p proofpipe-operator` first \
         (or set PROOFPIPE_BIN_DIR to the directory holding the binaries)",
        path.display()
    );
    path
}
