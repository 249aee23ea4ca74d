//! `params`: generate, list and check cached Groth16 parameters.

use std::process::ExitCode;

use bytesize::ByteSize;
use proofpipe_prover::ProverError;
use proofpipe_prover::params::ParamsStore;
use serde_json::json;

use super::{ParamsArgs, store};

pub fn run(args: ParamsArgs) -> Result<ExitCode, ProverError> {
    let store = store(args.params_dir.clone());
    if let Some(circuit) = args.circuit {
        circuit.shape(args.constraints)?;
        let path = store.path_for(circuit, args.constraints);
        let origin = if args.regenerate {
            store.regenerate(circuit, args.constraints)?;
            "generated".to_string()
        } else {
            let (_, origin) = store.get(circuit, args.constraints)?;
            format!("{origin:?}").to_lowercase()
        };
        let (params, _) = store.get(circuit, args.constraints)?;
        if args.json {
            println!(
                "{}",
                json!({"path": path, "origin": origin, "circuit": circuit, "constraints": args.constraints, "shape": params.shape, "heap_bytes": params.heap_bytes()})
            );
        } else {
            println!(
                "{} ({origin}): {circuit} at {} constraints, {} in memory",
                path.display(),
                args.constraints,
                ByteSize(params.heap_bytes())
            );
        }
        return Ok(ExitCode::SUCCESS);
    }

    let files = store.list()?;
    let mut bad = 0;
    let mut rows = Vec::new();
    for file in files {
        let (path, header, len) = (file.path, file.header, file.bytes);
        let header = match (header, args.check) {
            (Ok(h), true) => ParamsStore::check_file(&path).map(|_| h),
            (h, _) => h,
        };
        match header {
            Ok(h) => rows.push(json!({"path": path, "ok": true, "circuit": h.circuit, "constraints": h.constraints, "bytes": len})),
            Err(e) => {
                bad += 1;
                rows.push(json!({"path": path, "ok": false, "error": e.to_string(), "bytes": len}));
            }
        }
    }
    if args.json {
        println!("{}", json!({"dir": store.dir(), "files": rows}));
    } else {
        println!(
            "parameters in {} ({}):",
            store.dir().display(),
            if args.check {
                "checksums verified"
            } else {
                "headers read; --check verifies checksums"
            }
        );
        if rows.is_empty() {
            println!(
                "  none yet: `proofpipe-prover params --circuit mul-chain --constraints 4096` makes some"
            );
        }
        for r in &rows {
            let path = r["path"].as_str().unwrap_or_default();
            if r["ok"] == true {
                println!(
                    "  ok   {path}: {} at {} constraints, {}",
                    r["circuit"].as_str().unwrap_or_default(),
                    r["constraints"],
                    ByteSize(r["bytes"].as_u64().unwrap_or(0))
                );
            } else {
                println!("  BAD  {path}: {}", r["error"].as_str().unwrap_or_default());
            }
        }
    }
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
