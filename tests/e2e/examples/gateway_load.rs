//! The gateway under load (`proofpipe_e2e::gateway_load`): curio-style Prove calls, some
//! repeated, into stand-in provers; prints a Markdown table and exits non-zero if any call was
//! lost or answered wrongly, a request id got two jobs, or a job was proved twice.
//!
//!     eval "$(../shared/kube-testenv/start.sh)"        # a fresh one: nothing is cleaned up
//!     cargo build -p proofpipe-operator -p proofpipe-gateway
//!     cargo run -p proofpipe-e2e --example gateway_load -- \
//!         --submissions 500 --provers 4 --duplicates 50 --prove-ms 100

use proofpipe_e2e::cluster::TestNamespace;
use proofpipe_e2e::gateway_load::{LoadArgs, run};

fn args() -> LoadArgs {
    let mut args = LoadArgs::default();
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given.next().unwrap_or_default();
        let number = || {
            value
                .parse::<usize>()
                .unwrap_or_else(|_| panic!("{flag} takes a number, not {value:?}"))
        };
        match flag.as_str() {
            "--submissions" => args.submissions = number(),
            "--provers" => args.provers = number(),
            "--duplicates" => args.duplicates = number(),
            "--prove-ms" => args.prove_ms = number() as u64,
            "--input-bytes" => args.input_bytes = number(),
            other => panic!(
                "unknown flag {other}: --submissions N --provers N --duplicates N --prove-ms MS \
                 --input-bytes N"
            ),
        }
    }
    assert!(
        args.duplicates <= args.submissions,
        "--duplicates repeats some of the submissions: at most --submissions"
    );
    args
}

#[tokio::main]
async fn main() {
    let args = args();
    let Some(namespace) = TestNamespace::create("gateway-load").await else {
        std::process::exit(2);
    };
    let report = run(&namespace, &args).await;
    println!("{}", report.table());
    let problems = report.problems();
    for problem in &problems {
        eprintln!("FAILED: {problem}");
    }
    if !problems.is_empty() {
        std::process::exit(1);
    }
}
