//! The submission rules, request by request: accepted kinds and sizes, refused inputs and
//! what the caller is told, priorities and job names.

use tonic::Code;

use super::*;

fn porep(request_id: &str) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: 5,
        priority: Priority::Normal as i32,
        vanilla_proof: br#"{"SectorNum":1,"Phase1Out":"e30=","SectorSize":2048}"#.to_vec(),
        sector_number: 1,
        miner_id: 1000,
        ..Default::default()
    }
}

/// A SnapDeals request as curio's ProveUpdateCuzk makes it, for a 2 KiB sector (one
/// partition).
fn snap(request_id: &str) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size: 2048,
        registered_proof: 0,
        priority: Priority::Normal as i32,
        vanilla_proofs: vec![vec![7; 100]],
        sector_number: 1,
        miner_id: 1000,
        comm_r_old: vec![1; 32],
        comm_r_new: vec![2; 32],
        comm_d_new: vec![3; 32],
        ..Default::default()
    }
}

/// A WindowPoSt partition as curio's GenerateWindowPoStCuzk sends it for 2 KiB sectors: two
/// sectors' vanilla proofs, partition 1.
fn window(request_id: &str) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::WindowPostPartition as i32,
        sector_size: 2048,
        registered_proof: 10,
        priority: Priority::High as i32,
        vanilla_proofs: vec![vec![5; 80], vec![6; 80]],
        miner_id: 1000,
        randomness: vec![9; 32],
        partition_index: 1,
        ..Default::default()
    }
}

/// A WinningPoSt as curio's winning task sends it: the challenged sector's vanilla proof.
fn winning(request_id: &str) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::WinningPost as i32,
        registered_proof: 0,
        priority: Priority::Critical as i32,
        vanilla_proofs: vec![vec![4; 80]],
        miner_id: 1000,
        randomness: vec![8; 32],
        ..Default::default()
    }
}

fn submission(request: &SubmitProofRequest) -> Submission {
    plan(request.clone(), || unreachable!()).unwrap().submission
}

fn code(request: &SubmitProofRequest) -> (Code, String) {
    let status = tonic::Status::from(plan(request.clone(), || "generated".into()).unwrap_err());
    (status.code(), status.message().to_owned())
}

#[test]
fn a_porep_request_becomes_a_job_of_its_seal_proof() {
    let planned = plan(porep("porep-1000-1"), || unreachable!()).unwrap();
    let submission = planned.submission;
    assert_eq!(
        submission.work,
        Work::PoRep {
            seal_proof: "StackedDrg2KiBV1_1",
            miner_id: 1000,
            sector_number: Some(1)
        }
    );
    assert_eq!(submission.priority, PRIORITY_NORMAL);
    assert_eq!(submission.request_id, "porep-1000-1");
    assert!(submission.job_name.starts_with("porep-1000-1-"));
    // The C1 output is stored as sent.
    assert_eq!(planned.input, porep("x").vanilla_proof);
    assert_eq!(
        submission.input_sha256,
        hex(&Sha256::digest(&porep("x").vanilla_proof))
    );
}

#[test]
fn a_snap_request_becomes_the_provers_snap_input() {
    let planned = plan(snap("snap-1000-1"), || unreachable!()).unwrap();
    assert_eq!(
        planned.submission.work,
        Work::SnapDeals {
            update_proof: "StackedDrg2KiBV1"
        }
    );
    assert_eq!(planned.submission.work.kind_name(), "snap-update");
    let input: serde_json::Value = serde_json::from_slice(&planned.input).unwrap();
    let b64 = |bytes: &[u8]| serde_json::Value::from(BASE64.encode(bytes));
    assert_eq!(
        input,
        serde_json::json!({
            "registered_proof": "StackedDrg2KiBV1",
            "comm_r_old": b64(&[1; 32]),
            "comm_r_new": b64(&[2; 32]),
            "comm_d_new": b64(&[3; 32]),
            "vanilla_proofs": [b64(&[7; 100])],
        })
    );
    assert_eq!(
        planned.submission.input_sha256,
        hex(&Sha256::digest(&planned.input))
    );
    // The same request makes the same bytes (idempotency compares the digest); another
    // commitment makes other bytes.
    assert_eq!(
        plan(snap("snap-1000-1"), || unreachable!()).unwrap().input,
        planned.input
    );
    let mut other = snap("snap-1000-1");
    other.comm_d_new = vec![4; 32];
    assert_ne!(
        submission(&other).input_sha256,
        planned.submission.input_sha256
    );
    // curio's proofshare path sends no sector_size.
    let mut no_size = snap("ps-snap");
    no_size.sector_size = 0;
    assert_eq!(submission(&no_size).work, planned.submission.work);
}

#[test]
fn snap_requests_need_one_vanilla_proof_per_partition_and_32_byte_commitments() {
    let mut big = snap("s");
    big.registered_proof = 3;
    big.sector_size = 32 << 30;
    let (c, message) = code(&big);
    assert_eq!(c, Code::InvalidArgument);
    assert!(
        message.contains("vanilla_proofs has 1 entries")
            && message.contains("StackedDrg32GiBV1")
            && message.contains("16"),
        "{message}"
    );
    big.vanilla_proofs = vec![vec![1]; 16];
    assert_eq!(
        submission(&big).work,
        Work::SnapDeals {
            update_proof: "StackedDrg32GiBV1"
        }
    );

    let mut empty = snap("s");
    empty.vanilla_proofs = vec![Vec::new()];
    assert!(code(&empty).1.contains("vanilla_proofs[0] is empty"));

    let mut cid = snap("s");
    cid.comm_r_new = vec![1; 38];
    let (c, message) = code(&cid);
    assert_eq!(c, Code::InvalidArgument);
    assert!(message.contains("comm_r_new has 38 bytes"), "{message}");

    let mut missing = snap("s");
    missing.comm_d_new.clear();
    assert!(code(&missing).1.contains("comm_d_new has 0 bytes"));

    let mut seal_number = snap("s");
    seal_number.registered_proof = 8;
    let (c, message) = code(&seal_number);
    assert_eq!(c, Code::InvalidArgument);
    assert!(
        message.contains("not a registered update proof"),
        "{message}"
    );

    let mut size = snap("s");
    size.sector_size = 8 << 20;
    assert!(code(&size).1.contains("does not match registered_proof 0"));

    let mut c1 = snap("s");
    c1.vanilla_proof = b"{}".to_vec();
    assert!(code(&c1).1.contains("vanilla_proof is set"));
}

#[test]
fn post_requests_become_the_provers_post_input() {
    let planned = plan(window("wdpost-1000-0-1"), || unreachable!()).unwrap();
    assert_eq!(
        planned.submission.work,
        Work::WindowPost {
            post_proof: "StackedDrgWindow2KiBV1_2"
        }
    );
    assert_eq!(planned.submission.work.kind_name(), "window-post");
    assert_eq!(planned.submission.priority, PRIORITY_HIGH);
    let input: serde_json::Value = serde_json::from_slice(&planned.input).unwrap();
    let b64 = |bytes: &[u8]| serde_json::Value::from(BASE64.encode(bytes));
    assert_eq!(
        input,
        serde_json::json!({
            "registered_proof": "StackedDrgWindow2KiBV1_2",
            "miner_id": 1000,
            "randomness": b64(&[9; 32]),
            "partition_index": 1,
            "vanilla_proofs": [b64(&[5; 80]), b64(&[6; 80])],
        })
    );
    // Partition 0 is still a partition (proto3 sends 0 for it).
    let mut first = window("w");
    first.partition_index = 0;
    let input: serde_json::Value =
        serde_json::from_slice(&plan(first, || unreachable!()).unwrap().input).unwrap();
    assert_eq!(input["partition_index"], 0);

    let planned = plan(winning("winning-1000-1"), || unreachable!()).unwrap();
    assert_eq!(
        planned.submission.work,
        Work::WinningPost {
            post_proof: "StackedDrgWinning2KiBV1"
        }
    );
    let input: serde_json::Value = serde_json::from_slice(&planned.input).unwrap();
    assert!(input.get("partition_index").is_none(), "{input}");
    // Unspecified priorities are curio's: HIGH for WindowPoSt, CRITICAL for WinningPoSt.
    let mut unspecified = window("w");
    unspecified.priority = Priority::Unspecified as i32;
    assert_eq!(submission(&unspecified).priority, PRIORITY_HIGH);
    let mut unspecified = winning("w");
    unspecified.priority = Priority::Unspecified as i32;
    assert_eq!(submission(&unspecified).priority, PRIORITY_CRITICAL);
}

#[test]
fn bad_post_requests_are_refused_saying_what_to_do() {
    let refused = |request: SubmitProofRequest, needle: &str| {
        let (c, message) = code(&request);
        assert_eq!(c, Code::InvalidArgument, "{message}");
        assert!(message.contains(needle), "{needle:?} in {message}");
    };
    let mut retired = window("w");
    retired.registered_proof = 8;
    refused(retired, "retired WindowPoSt proof");
    let mut crossed = window("w");
    crossed.registered_proof = 3;
    refused(
        crossed,
        "is a WINNING_POST proof, but proof_kind is WINDOW_POST_PARTITION",
    );
    let mut size = window("w");
    size.sector_size = 32 << 30;
    refused(size, "does not match registered_proof 10");
    let mut seed = window("w");
    seed.randomness = vec![1; 31];
    refused(seed, "randomness has 31 bytes");
    let mut none = winning("w");
    none.vanilla_proofs.clear();
    refused(none, "vanilla_proofs has 0 entries");
    let mut many = winning("w");
    many.vanilla_proofs.push(vec![1]);
    refused(many, "1 to 1");
    let mut empty = window("w");
    empty.vanilla_proofs[1].clear();
    refused(empty, "vanilla_proofs[1] is empty");
    let mut partition = winning("w");
    partition.partition_index = 2;
    refused(partition, "a WINNING_POST has one partition");
    let mut c1 = winning("w");
    c1.vanilla_proof = b"{}".to_vec();
    refused(c1, "vanilla_proof is set");
}

#[test]
fn every_registered_post_proof_number_names_a_proof_the_crd_accepts() {
    for &(number, name, ..) in POST_PROOF_NUMBERS {
        assert!(
            proofpipe_crds::post_proof_partitions(name).is_some(),
            "{number} -> {name}"
        );
    }
    assert_eq!(POST_PROOF_NUMBERS.len(), proofpipe_crds::POST_PROOFS.len());
}

#[test]
fn every_registered_update_proof_number_names_a_proof_the_crd_accepts() {
    for &(number, name, _) in UPDATE_PROOF_NUMBERS {
        assert!(
            proofpipe_crds::update_proof_partitions(name).is_some(),
            "{number} -> {name}"
        );
    }
    assert_eq!(
        UPDATE_PROOF_NUMBERS.len(),
        proofpipe_crds::UPDATE_PROOFS.len()
    );
}

#[test]
fn the_same_request_id_names_the_same_job_and_different_ids_different_jobs() {
    assert_eq!(job_name("porep-1000-1"), job_name("porep-1000-1"));
    assert_ne!(job_name("porep-1000-1"), job_name("porep-1000-2"));
    // Equal readable parts, different ids.
    assert_ne!(job_name("A_b"), job_name("a-b"));
}

#[test]
fn a_deadline_s_partitions_under_one_id_get_one_name_per_input() {
    // curio's WindowPoSt: every partition of a deadline under one id, partition index 0,
    // each with its own sectors.
    let id = "wdpost-1000-0-0909090909";
    let partition = |sector: u8| {
        let mut request = window(id);
        request.partition_index = 0;
        request.vanilla_proofs = vec![vec![sector; 80]];
        submission(&request)
    };
    let (a, b) = (partition(1), partition(2));
    assert_eq!(a.work.attempt_rule(), AttemptRule::OnePerInput);
    assert_ne!(a.job_name, b.job_name, "each input its own job");
    assert_eq!(
        a.job_name,
        partition(1).job_name,
        "the same input, the same job"
    );
    assert!(
        a.job_name.starts_with("wdpost-1000-0-0909090909-"),
        "{}",
        a.job_name
    );
    assert!(a.job_name.len() <= 53, "{}", a.job_name);
    assert_eq!(
        a.job_name,
        first_job_name(id, AttemptRule::OnePerInput, &a.input_sha256)
    );
    // A WinningPoSt likewise; PoRep and SnapDeals keep the id's own name.
    assert_eq!(
        submission(&winning("winning-1000-7")).work.attempt_rule(),
        AttemptRule::OnePerInput
    );
    for request in [porep("porep-1000-1"), snap("snap-1000-1")] {
        let planned = submission(&request);
        assert_eq!(planned.work.attempt_rule(), AttemptRule::OtherWorkReplaces);
        assert_eq!(planned.job_name, job_name(&request.request_id));
    }
}

#[test]
fn job_names_are_dns_labels_whatever_the_id() {
    for id in [
        "porep-1000-1",
        "UPPER case/with:symbols",
        "---",
        "",
        "é unicode ✓",
        &"x".repeat(300),
        "trailing-",
    ] {
        for name in [
            job_name(id),
            first_job_name(id, AttemptRule::OnePerInput, &"ab".repeat(32)),
        ] {
            assert!(name.len() <= 53, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
            assert!(!name.starts_with('-') && !name.ends_with('-'), "{name}");
            assert!(!name.contains("--"), "{name}");
        }
    }
    assert!(job_name("---").starts_with("proof-"));
}

#[test]
fn an_empty_request_id_gets_a_generated_one() {
    let mut request = porep("");
    request.request_id.clear();
    let submission = plan(request, || "gw-abc".into()).unwrap().submission;
    assert_eq!(submission.request_id, "gw-abc");
    assert_eq!(submission.job_name, job_name("gw-abc"));
}

#[test]
fn priorities_map_in_order_with_critical_above_all() {
    let mut values = Vec::new();
    for p in [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ] {
        let mut request = porep("p");
        request.priority = p as i32;
        values.push(submission(&request).priority);
    }
    assert!(values.is_sorted_by(|a, b| a < b), "{values:?}");
    let mut unspecified = porep("p");
    unspecified.priority = Priority::Unspecified as i32;
    let planned = submission(&unspecified);
    assert_eq!(
        (planned.priority, planned.priority_name),
        (PRIORITY_NORMAL, "NORMAL")
    );
    assert_eq!(
        priority(0, ProofKind::WinningPost).unwrap().0,
        PRIORITY_CRITICAL
    );
}

#[test]
fn every_registered_seal_proof_number_names_a_proof_the_crd_accepts() {
    for &(number, name, _) in SEAL_PROOF_NUMBERS {
        assert!(
            proofpipe_crds::seal_proof_partitions(name).is_some(),
            "{number} -> {name}"
        );
    }
    assert_eq!(SEAL_PROOF_NUMBERS.len(), proofpipe_crds::SEAL_PROOFS.len());
}

#[test]
fn a_sector_number_of_zero_defers_to_the_envelope() {
    let mut request = porep("p");
    request.sector_number = 0;
    let Work::PoRep { sector_number, .. } = submission(&request).work else {
        panic!("a PoRep")
    };
    assert_eq!(sector_number, None);
}

#[test]
fn bad_requests_are_refused_saying_what_to_do() {
    let mut unset = porep("p");
    unset.proof_kind = 0;
    assert_eq!(code(&unset).0, Code::InvalidArgument);

    let mut post = porep("p");
    post.proof_kind = ProofKind::WindowPostPartition as i32;
    let (c, message) = code(&post);
    assert_eq!(c, Code::InvalidArgument);
    // A PoRep's registered_proof 5 is a retired WindowPoSt number.
    assert!(message.contains("retired WindowPoSt proof"), "{message}");

    let mut v1 = porep("p");
    v1.registered_proof = 3;
    let (c, message) = code(&v1);
    assert_eq!(c, Code::InvalidArgument);
    assert!(message.contains("retired V1"), "{message}");

    let mut ni = porep("p");
    ni.registered_proof = 15;
    assert_eq!(code(&ni).0, Code::Unimplemented);

    let mut size = porep("p");
    size.sector_size = 32 << 30;
    let (c, message) = code(&size);
    assert_eq!(c, Code::InvalidArgument);
    assert!(message.contains("does not match"), "{message}");

    let mut empty = porep("p");
    empty.vanilla_proof.clear();
    empty.vanilla_proofs = vec![b"x".to_vec()];
    let (c, message) = code(&empty);
    assert_eq!(c, Code::InvalidArgument);
    assert!(message.contains("vanilla_proofs is for PoSt"), "{message}");

    let mut binary = porep("p");
    binary.vanilla_proof = vec![0, 1, 2];
    assert!(code(&binary).1.contains("not JSON"));

    let mut miner = porep("p");
    miner.miner_id = u64::MAX;
    assert!(code(&miner).1.contains("miner_id"));

    let mut bad_priority = porep("p");
    bad_priority.priority = 9;
    assert_eq!(code(&bad_priority).0, Code::InvalidArgument);
}
