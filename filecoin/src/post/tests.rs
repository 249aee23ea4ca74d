use super::*;

#[test]
fn post_proofs_parse_by_name_ffi_name_and_curio_number() {
    use RegisteredPoStProof::*;
    assert_eq!(
        parse_post_proof("StackedDrgWindow32GiBV1_2").unwrap(),
        StackedDrgWindow32GiBV1_2
    );
    // filecoin-ffi's and go-state-types' V1_1 is filecoin-proofs-api's V1_2.
    assert_eq!(
        parse_post_proof("StackedDrgWindow32GiBV1_1").unwrap(),
        StackedDrgWindow32GiBV1_2
    );
    assert_eq!(
        parse_post_proof("StackedDrgWinning2KiBV1").unwrap(),
        StackedDrgWinning2KiBV1
    );
    // The seed engine's registered_post_proof_from_u64.
    assert_eq!(parse_post_proof("0").unwrap(), StackedDrgWinning2KiBV1);
    assert_eq!(parse_post_proof("3").unwrap(), StackedDrgWinning32GiBV1);
    assert_eq!(parse_post_proof("8").unwrap(), StackedDrgWindow32GiBV1);
    assert_eq!(parse_post_proof("10").unwrap(), StackedDrgWindow2KiBV1_2);
    assert_eq!(parse_post_proof("13").unwrap(), StackedDrgWindow32GiBV1_2);
    assert_eq!(parse_post_proof("14").unwrap(), StackedDrgWindow64GiBV1_2);
    assert!(parse_post_proof("15").is_err());
    assert!(parse_post_proof("StackedDrgWinning32GiBV1_1").is_err());
    assert_eq!(
        post_proof_name(StackedDrgWindow8MiBV1_2),
        "StackedDrgWindow8MiBV1_2"
    );
}

#[test]
fn partition_counts_are_filecoin_proofs() {
    use RegisteredPoStProof::*;
    assert_eq!(sectors_per_partition(StackedDrgWindow32GiBV1_2), 2349);
    assert_eq!(sectors_per_partition(StackedDrgWindow64GiBV1_2), 2300);
    assert_eq!(sectors_per_partition(StackedDrgWindow2KiBV1_2), 2);
    assert_eq!(partitions_for(StackedDrgWindow32GiBV1_2, 2349), 1);
    assert_eq!(partitions_for(StackedDrgWindow32GiBV1_2, 2350), 2);
    assert_eq!(partitions_for(StackedDrgWindow2KiBV1_2, 3), 2);
    assert_eq!(partitions_for(StackedDrgWinning32GiBV1, 1), 1);
}

fn input() -> PostInput {
    PostInput {
        post_proof: RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
        prover_id: prover_id_of_miner(1000),
        miner_id: Some(1000),
        randomness: [7; 32],
        partition_index: Some(1),
        vanilla_proofs: vec![vec![1, 2, 3]].into(),
    }
}

#[test]
fn inputs_round_trip_and_bad_ones_are_named() {
    let input = input();
    assert_eq!(PostInput::parse(&input.to_json()).unwrap(), input);
    let whole = PostInput {
        partition_index: None,
        miner_id: None,
        prover_id: [9; 32],
        ..input.clone()
    };
    assert_eq!(PostInput::parse(&whole.to_json()).unwrap(), whole);
    let err = |bytes: &[u8]| PostInput::parse(bytes).unwrap_err().to_string();
    assert!(err(b"{\"registered_proof\"").contains("not JSON"));
    assert!(err(b"{}").contains("\"registered_proof\" is missing"));
    let mut v: Value = serde_json::from_slice(&input.to_json()).unwrap();
    v["randomness"] = "AAAA".into();
    assert!(err(&serde_json::to_vec(&v).unwrap()).contains("randomness has 3 bytes"));
    let mut v: Value = serde_json::from_slice(&input.to_json()).unwrap();
    v["registered_proof"] = 99.into();
    assert!(err(&serde_json::to_vec(&v).unwrap()).contains("registered_proof"));
    let mut v: Value = serde_json::from_slice(&input.to_json()).unwrap();
    v.as_object_mut().unwrap().remove("miner_id");
    assert!(err(&serde_json::to_vec(&v).unwrap()).contains("\"miner_id\" is missing"));
    // curio's numbers and a proto3 zero partition index for WinningPoSt.
    let winning = br#"{"registered_proof": 0, "miner_id": 1000, "partition_index": 0,
        "randomness": "0707070707070707070707070707070707070707070707070707070707070707",
        "vanilla_proofs": []}"#;
    let parsed = PostInput::parse(winning).unwrap();
    assert_eq!(parsed.kind(), PostKind::Winning);
    assert_eq!(parsed.partition_index, None);
    assert_eq!(parsed.randomness, [7; 32]);
    let winning_p1 = String::from_utf8_lossy(winning)
        .replace("\"partition_index\": 0", "\"partition_index\": 1");
    assert!(err(winning_p1.as_bytes()).contains("a WinningPoSt has one partition"));
    // curio's other request fields, when passed through, must agree.
    let mut v: Value = serde_json::from_slice(&input.to_json()).unwrap();
    v["sector_size"] = 2048.into();
    v["proof_kind"] = "WINDOW_POST_PARTITION".into();
    assert_eq!(
        PostInput::parse(&serde_json::to_vec(&v).unwrap()).unwrap(),
        input
    );
    v["proof_kind"] = 4.into();
    assert!(err(&serde_json::to_vec(&v).unwrap()).contains("proof_kind is 4"));
    v["proof_kind"] = 3.into();
    v["sector_size"] = 34359738368u64.into();
    assert!(err(&serde_json::to_vec(&v).unwrap()).contains("sector_size is 34359738368"));
}

#[test]
fn curios_request_in_proto3_json_reads_the_same() {
    // What a proto3 JSON mapping makes of SubmitProofRequest: lowerCamelCase names, uint64
    // as strings, a partition index of 0 left out, enums by name.
    let request = br#"{"requestId": "wdpost-1000-0-1", "proofKind": "WINDOW_POST_PARTITION",
        "sectorSize": "2048", "registeredProof": "10", "priority": "HIGH",
        "vanillaProofs": ["AQID"], "minerId": "1000",
        "randomness": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="}"#;
    let parsed = PostInput::parse(request).unwrap();
    assert_eq!(
        parsed,
        PostInput {
            partition_index: Some(0),
            ..input()
        }
    );
    assert_eq!(snake_to_camel("partition_index"), "partitionIndex");
}

#[test]
fn proto3_json_leaves_zero_fields_out_and_they_read_as_zero() {
    // A 2 KiB WinningPoSt as proto3 JSON writes it: registeredProof 0
    // (StackedDrgWinning2KiBV1) and partitionIndex 0 are left out.
    let winning = br#"{"requestId": "winning-1000-7", "proofKind": "WINNING_POST",
        "priority": "CRITICAL", "vanillaProofs": ["AQID"], "minerId": "1000",
        "randomness": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="}"#;
    let parsed = PostInput::parse(winning).unwrap();
    assert_eq!(
        parsed.post_proof,
        RegisteredPoStProof::StackedDrgWinning2KiBV1
    );
    assert_eq!(parsed.partition_index, None);
    assert_eq!(parsed.miner_id, Some(1000));
    // Miner f00: minerId 0 left out too.
    let f00 = String::from_utf8_lossy(winning).replace(r#""minerId": "1000","#, "");
    assert_eq!(PostInput::parse(f00.as_bytes()).unwrap().miner_id, Some(0));
    // Left-out repeated and bytes fields are empty: refused for what they are, not as missing.
    let err = |text: &str| PostInput::parse(text.as_bytes()).unwrap_err().to_string();
    let no_randomness = String::from_utf8_lossy(winning).replace(
        r#""randomness": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=""#,
        r#""requestId2": 1"#,
    );
    assert!(
        err(&no_randomness).contains("randomness has 0 bytes"),
        "{}",
        err(&no_randomness)
    );
    let no_proofs = String::from_utf8_lossy(winning).replace(r#""vanillaProofs": ["AQID"],"#, "");
    assert!(
        PostInput::parse(no_proofs.as_bytes())
            .unwrap()
            .vanilla_proofs
            .is_empty()
    );
    // A WINDOW_POST_PARTITION without registeredProof is the zero, a WinningPoSt proof:
    // refused as the kind mismatch it is.
    let window = String::from_utf8_lossy(winning).replace("WINNING_POST", "WINDOW_POST_PARTITION");
    assert!(
        err(&window).contains("is a WinningPoSt proof"),
        "{}",
        err(&window)
    );
    // Our own file (no proofKind) still names what is missing.
    assert!(
        err(r#"{"miner_id": 1, "randomness": "", "vanilla_proofs": []}"#)
            .contains("\"registered_proof\" is missing")
    );
}

#[test]
fn bad_vanilla_proofs_are_refused_before_proving() {
    let e = |input: &PostInput| {
        prepare(input, SynthesisMode::OnePass)
            .err()
            .unwrap()
            .to_string()
    };
    let input = input();
    assert!(
        e(&input).contains("vanilla_proofs[0] is not a bincode FallbackPoStSectorProof"),
        "{}",
        e(&input)
    );
    let empty = PostInput {
        vanilla_proofs: Vec::new().into(),
        ..input.clone()
    };
    assert!(e(&empty).contains("vanilla_proofs is empty"));
    let many = PostInput {
        vanilla_proofs: vec![vec![0]; 3].into(),
        ..input.clone()
    };
    assert!(
        e(&many).contains("partition has at most 2 sectors"),
        "{}",
        e(&many)
    );
    let unsafe_randomness = PostInput {
        randomness: [0xff; 32],
        ..input.clone()
    };
    assert!(e(&unsafe_randomness).contains("randomness is not a field element"));
    let winning = PostInput {
        post_proof: RegisteredPoStProof::StackedDrgWinning2KiBV1,
        partition_index: None,
        vanilla_proofs: vec![vec![0]; 2].into(),
        ..input
    };
    assert!(e(&winning).contains("2 vanilla proofs where a WinningPoSt has 1"));
}

#[test]
fn a_whole_window_post_is_taken_apart_as_curio_sends_it() {
    let whole = PostInput {
        partition_index: None,
        vanilla_proofs: vec![vec![1], vec![2], vec![3]].into(),
        ..input()
    };
    let p1 = whole.window_partition(1).unwrap();
    assert_eq!(p1.partition_index, Some(1));
    assert_eq!(&p1.vanilla_proofs[..], &[vec![3]]);
    assert!(whole.window_partition(2).is_err());
    assert!(p1.window_partition(0).is_err());
}
