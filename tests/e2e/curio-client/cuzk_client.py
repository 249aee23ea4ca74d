#!/usr/bin/env python3
"""A client of cuzk.v1.ProvingEngine that is not proofpipe's: Python grpcio, with stubs
generated at run time from the vendored upstream .proto (gateway/proto), calling the gateway
the way curio calls the seed engine (request ids as curio makes them, Prove blocking until the
proof is ready): a PoRep C2 and, with --snap, a SnapDeals update proof, with --window-post a
deadline's partitions at once under one request id (WINDOW_POST_PARTITION, HIGH), with --winning-post a WinningPoSt
(WINNING_POST, CRITICAL). Prints one JSON object with what it saw; the Rust test
(tests/e2e/tests/gateway_curio.rs) judges it. Exits non-zero when a call answers other than
the API promises.
"""

import argparse
import base64
import json
import sys
import tempfile
import threading
import time

import grpc
from grpc_tools import protoc


def load_stubs(proto_root):
    out = tempfile.mkdtemp(prefix="cuzk-stubs-")
    status = protoc.main(
        [
            "protoc",
            f"-I{proto_root}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            "cuzk/v1/proving.proto",
        ]
    )
    if status != 0:
        sys.exit(f"protoc failed on {proto_root}/cuzk/v1/proving.proto")
    sys.path.insert(0, out)
    from cuzk.v1 import proving_pb2, proving_pb2_grpc  # noqa: E402

    return proving_pb2, proving_pb2_grpc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--proto-root", required=True)
    parser.add_argument("--c1", required=True, help="lotus-bench commit-2 JSON")
    parser.add_argument("--proof-out", required=True)
    parser.add_argument("--miner", type=int, default=1000)
    parser.add_argument(
        "--snap",
        help="a SnapDeals input JSON (proofpipe-prover's snap-testdata): its commitments and "
        "vanilla proofs are sent as curio's ProveUpdateCuzk sends them",
    )
    parser.add_argument("--snap-proof-out")
    parser.add_argument(
        "--window-post",
        help="a whole WindowPoSt input JSON (proofpipe-prover's post-testdata): each partition's "
        "sectors are sent as curio's GenerateWindowPoStCuzk sends one partition",
    )
    parser.add_argument(
        "--window-post-out",
        help="prefix of each partition's proof (<prefix>-<k>) and input (<prefix>-<k>.json)",
    )
    parser.add_argument("--winning-post", help="a WinningPoSt input JSON (post-testdata)")
    parser.add_argument("--winning-post-proof-out")
    parser.add_argument(
        "--one-proof",
        action="store_true",
        help="only this: Prove the C1 output once, as curio's PoRep task does, and write the "
        "proof to --proof-out (docs/quickstart-filecoin.md)",
    )
    parser.add_argument(
        "--urgent-while-busy-out",
        help="only this: a WinningPoSt Proved while a PoRep proves; proofs to <prefix>-porep "
        "and <prefix>-winning",
    )
    args = parser.parse_args()

    pb, rpc = load_stubs(args.proto_root)
    # curio's own limits (lib/cuzk/client.go): 256 MiB each way.
    channel = grpc.insecure_channel(
        args.address,
        options=[
            ("grpc.max_send_message_length", 256 << 20),
            ("grpc.max_receive_message_length", 256 << 20),
        ],
    )
    engine = rpc.ProvingEngineStub(channel)
    auth = [("authorization", f"Bearer {args.token}")]
    seen = {}

    if args.one_proof:
        submit, _ = porep_request(pb, args, "")
        result = engine.Prove(pb.ProveRequest(submit=submit), metadata=auth, timeout=1800).result
        status = pb.AwaitProofResponse.Status.Name(result.status)
        if status != "COMPLETED":
            sys.exit(f"job {result.job_id}: {status}: {result.error_message}")
        with open(args.proof_out, "wb") as f:
            f.write(result.proof)
        print(json.dumps({"job_id": result.job_id, "status": status, "proof_bytes": len(result.proof)}))
        return

    if args.urgent_while_busy_out:
        urgent_while_busy(engine, pb, auth, args, seen)
        print(json.dumps(seen))
        return

    # Without the token, and with a wrong one: refused.
    for name, metadata in [("none", None), ("wrong", [("authorization", "Bearer nope")])]:
        try:
            engine.GetStatus(pb.GetStatusRequest(), metadata=metadata, timeout=30)
            sys.exit(f"GetStatus with {name} token was accepted")
        except grpc.RpcError as error:
            seen[f"token_{name}"] = error.code().name

    submit, sector = porep_request(pb, args, "")
    first = engine.SubmitProof(submit, metadata=auth, timeout=60)
    seen["submitted_job"] = first.job_id
    seen["queue_position"] = first.queue_position

    # A C1 output under another registered proof than it was sealed with (10:
    # StackedDrg2KiBV1_1_Feat_SyntheticPoRep): it can never prove, so it fails at once with the
    # prover's reason, and the prover stays for the next proof.
    wrong = pb.SubmitProofRequest()
    wrong.CopyFrom(submit)
    wrong.request_id = f"porep-{args.miner}-{sector}-wrong-type"
    wrong.registered_proof = 10
    wrong.priority = pb.HIGH
    result = engine.Prove(pb.ProveRequest(submit=wrong), metadata=auth, timeout=1800).result
    seen["wrong_type_job"] = result.job_id
    seen["wrong_type_status"] = pb.AwaitProofResponse.Status.Name(result.status)
    seen["wrong_type_error"] = result.error_message

    # curio retries a failed proof under the same request id; here with the input put right
    # (the registered proof it was sealed with): a new attempt, which proves.
    retry = pb.SubmitProofRequest()
    retry.CopyFrom(wrong)
    retry.registered_proof = 5
    result = engine.Prove(pb.ProveRequest(submit=retry), metadata=auth, timeout=1800).result
    seen["retry_job"] = result.job_id
    seen["retry_status"] = pb.AwaitProofResponse.Status.Name(result.status)
    with open(args.proof_out + ".retry", "wb") as f:
        f.write(result.proof)

    # A second proof, cancelled while it waits behind the first: its waiter hears CANCELLED.
    doomed = pb.SubmitProofRequest()
    doomed.CopyFrom(submit)
    doomed.request_id = "cancel-me"
    doomed.priority = pb.LOW
    doomed_job = engine.SubmitProof(doomed, metadata=auth, timeout=60).job_id
    answers = {}

    def wait_for_doomed():
        answers["doomed"] = engine.AwaitProof(
            pb.AwaitProofRequest(job_id=doomed_job, timeout_ms=0), metadata=auth, timeout=300
        )

    waiter = threading.Thread(target=wait_for_doomed)
    waiter.start()
    time.sleep(1)
    cancel = engine.CancelProof(pb.CancelProofRequest(job_id=doomed_job), metadata=auth, timeout=60)
    waiter.join(timeout=120)
    seen["cancelled_job"] = doomed_job
    seen["cancel_was_running"] = cancel.was_running
    seen["cancelled_waiter"] = pb.AwaitProofResponse.Status.Name(answers["doomed"].status)

    # What curio does: Prove, the same request id again, blocking until the proof is ready.
    result = engine.Prove(pb.ProveRequest(submit=submit), metadata=auth, timeout=1800).result
    seen["prove_job"] = result.job_id
    seen["prove_status"] = pb.AwaitProofResponse.Status.Name(result.status)
    seen["error_message"] = result.error_message
    seen["timings_ms"] = {
        "queue_wait": result.queue_wait_ms,
        "srs_load": result.srs_load_ms,
        "synthesis": result.synthesis_ms,
        "gpu_compute": result.gpu_compute_ms,
        "total": result.total_ms,
    }
    with open(args.proof_out, "wb") as f:
        f.write(result.proof)
    seen["proof_bytes"] = len(result.proof)

    if args.snap:
        prove_snap(engine, pb, auth, args, seen)
    if args.window_post:
        prove_window_post(engine, pb, auth, args, seen)
    if args.winning_post:
        prove_winning_post(engine, pb, auth, args, seen)

    status = engine.GetStatus(pb.GetStatusRequest(), metadata=auth, timeout=30)
    seen["queues"] = {q.proof_kind: [q.pending, q.in_progress] for q in status.queues}
    seen["completed"] = status.total_proofs_completed
    seen["gpus"] = [g.name for g in status.gpus]
    metrics = engine.GetMetrics(pb.GetMetricsRequest(), metadata=auth, timeout=30)
    seen["metrics_has_jobs_created"] = "proofpipe_gateway_jobs_created_total" in metrics.prometheus_text
    print(json.dumps(seen))


def porep_request(pb, args, id_suffix):
    """curio's PoRep C2 request for the test's 2 KiB C1 output (its request id
    porep-<miner>-<sector>, then id_suffix), and the sector number."""
    with open(args.c1, "rb") as f:
        c1 = f.read()
    sector = json.loads(c1)["SectorNum"]
    request = pb.SubmitProofRequest(
        request_id=f"porep-{args.miner}-{sector}{id_suffix}",
        proof_kind=pb.POREP_SEAL_COMMIT,
        sector_size=2048,
        registered_proof=5,  # StackedDrg2KiBV1_1
        priority=pb.NORMAL,
        vanilla_proof=c1,
        sector_number=sector,
        miner_id=args.miner,
    )
    return request, sector


def raw(value):
    """A commitment as the snap input file holds it (base64, or 64 hex digits): its 32 bytes."""
    if len(value) == 64 and all(c in "0123456789abcdefABCDEF" for c in value):
        return bytes.fromhex(value)
    return base64.b64decode(value)


def prove_snap(engine, pb, auth, args, seen):
    """A SnapDeals update proof, the way curio's lib/ffi ProveUpdateCuzk asks for one: raw
    32-byte commitments, one bincode PartitionProof per partition, Prove blocking."""
    with open(args.snap) as f:
        snap = json.load(f)
    update = pb.SubmitProofRequest(
        request_id=f"snap-{args.miner}-1",
        proof_kind=pb.SNAP_DEALS_UPDATE,
        sector_size=2048,
        registered_proof=0,  # abi.RegisteredUpdateProof_StackedDrg2KiBV1
        priority=pb.NORMAL,
        vanilla_proofs=[base64.b64decode(p) for p in snap["vanilla_proofs"]],
        sector_number=1,
        miner_id=args.miner,
        comm_r_old=raw(snap["comm_r_old"]),
        comm_r_new=raw(snap["comm_r_new"]),
        comm_d_new=raw(snap["comm_d_new"]),
    )
    result = engine.Prove(pb.ProveRequest(submit=update), metadata=auth, timeout=1800).result
    seen["snap_job"] = result.job_id
    seen["snap_status"] = pb.AwaitProofResponse.Status.Name(result.status)
    seen["snap_error_message"] = result.error_message
    with open(args.snap_proof_out, "wb") as f:
        f.write(result.proof)
    seen["snap_proof_bytes"] = len(result.proof)


# abi.RegisteredPoStProof numbers, as curio sends them (the chain's WindowPoSt V1_1 is
# filecoin-proofs-api's V1_2).
POST_PROOF_NUMBERS = {
    "StackedDrgWinning2KiBV1": 0,
    "StackedDrgWindow2KiBV1_2": 10,
}


def post_request(pb, post, request_id, kind, priority, proofs, partition_index=0):
    return pb.SubmitProofRequest(
        request_id=request_id,
        proof_kind=kind,
        sector_size=2048,
        registered_proof=POST_PROOF_NUMBERS[post["registered_proof"]],
        priority=priority,
        vanilla_proofs=[base64.b64decode(p) for p in proofs],
        miner_id=post["miner_id"],
        randomness=base64.b64decode(post["randomness"]),
        partition_index=partition_index,
    )


def prove_window_post(engine, pb, auth, args, seen):
    """A WindowPoSt deadline the way curio's window tasks ask for it: one task per on-chain
    partition, all at once, each sending its own sectors' vanilla proofs with partition index
    0 and the deadline's randomness under the same request id
    (wdpost-<miner>-<partition_index>-<randomness>), HIGH, Prove blocking. Here each of the
    test WindowPoSt's sectors is a partition of its own. Writes each partition's proof and its
    one-partition input (for the verifier); then sends partition 1 again, after it finished."""
    with open(args.window_post) as f:
        post = json.load(f)
    proofs = post["vanilla_proofs"]
    request_id = f"wdpost-{args.miner}-0-{base64.b64decode(post['randomness']).hex()}"
    requests = [
        post_request(pb, post, request_id, pb.WINDOW_POST_PARTITION, pb.HIGH, [sector], 0)
        for sector in proofs
    ]
    results = [None] * len(requests)

    def prove(k):
        results[k] = engine.Prove(
            pb.ProveRequest(submit=requests[k]), metadata=auth, timeout=1800
        ).result

    threads = [threading.Thread(target=prove, args=(k,)) for k in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen["window_post_request_id"] = request_id
    seen["window_post"] = []
    for k, result in enumerate(results):
        out = f"{args.window_post_out}-{k}"
        with open(out, "wb") as f:
            f.write(result.proof)
        partition = dict(post, vanilla_proofs=[proofs[k]], partition_index=0)
        with open(f"{out}.json", "w") as f:
            json.dump(partition, f)
        seen["window_post"].append(
            {
                "job": result.job_id,
                "status": pb.AwaitProofResponse.Status.Name(result.status),
                "error_message": result.error_message,
                "proof_bytes": len(result.proof),
            }
        )
    # curio's task retried after its Prove returned (a restart, a lost answer): the same
    # partition again reattaches to its finished job and gets the same proof.
    again = engine.Prove(pb.ProveRequest(submit=requests[1]), metadata=auth, timeout=1800).result
    seen["window_post_again"] = {
        "job": again.job_id,
        "status": pb.AwaitProofResponse.Status.Name(again.status),
        "same_proof": again.proof == results[1].proof,
    }


def prove_winning_post(engine, pb, auth, args, seen):
    """A WinningPoSt, the way curio's winning task asks for one: CRITICAL, Prove blocking."""
    with open(args.winning_post) as f:
        post = json.load(f)
    request = post_request(
        pb, post, f"winning-{args.miner}-1", pb.WINNING_POST, pb.CRITICAL, post["vanilla_proofs"]
    )
    result = engine.Prove(pb.ProveRequest(submit=request), metadata=auth, timeout=1800).result
    with open(args.winning_post_proof_out, "wb") as f:
        f.write(result.proof)
    seen["winning_post"] = {
        "job": result.job_id,
        "status": pb.AwaitProofResponse.Status.Name(result.status),
        "error_message": result.error_message,
        "proof_bytes": len(result.proof),
    }


def urgent_while_busy(engine, pb, auth, args, seen):
    """curio's WinningPoSt (CRITICAL) while the pool's one prover proves a PoRep: submitted
    once the PoRep is on the prover, answered before the PoRep's proof."""
    porep, _ = porep_request(pb, args, "-busy")
    porep_job = engine.SubmitProof(porep, metadata=auth, timeout=60).job_id
    deadline = time.monotonic() + 300
    while True:
        status = engine.GetStatus(pb.GetStatusRequest(), metadata=auth, timeout=30)
        if any(q.proof_kind == "porep-c2" and q.in_progress > 0 for q in status.queues):
            break
        if time.monotonic() > deadline:
            sys.exit("the PoRep was not on a prover within 300 s")
        time.sleep(0.2)
    started = time.monotonic()
    with open(args.winning_post) as f:
        post = json.load(f)
    request = post_request(
        pb, post, f"winning-{args.miner}-busy", pb.WINNING_POST, pb.CRITICAL, post["vanilla_proofs"]
    )
    winning = engine.Prove(pb.ProveRequest(submit=request), metadata=auth, timeout=1800).result
    winning_done = time.monotonic()
    porep_result = engine.AwaitProof(
        pb.AwaitProofRequest(job_id=porep_job, timeout_ms=0), metadata=auth, timeout=1800
    )
    porep_done = time.monotonic()
    with open(f"{args.urgent_while_busy_out}-winning", "wb") as f:
        f.write(winning.proof)
    with open(f"{args.urgent_while_busy_out}-porep", "wb") as f:
        f.write(porep_result.proof)
    seen["porep_job"] = porep_job
    seen["porep_status"] = pb.AwaitProofResponse.Status.Name(porep_result.status)
    seen["porep_error_message"] = porep_result.error_message
    seen["winning_job"] = winning.job_id
    seen["winning_status"] = pb.AwaitProofResponse.Status.Name(winning.status)
    seen["winning_error_message"] = winning.error_message
    seen["winning_seconds"] = winning_done - started
    seen["porep_seconds"] = porep_done - started


if __name__ == "__main__":
    main()
