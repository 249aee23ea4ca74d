#!/usr/bin/env python3
"""A client of cuzk.v1.ProvingEngine that is not proofpipe's: Python grpcio, with stubs
generated at run time from the vendored upstream .proto (gateway/proto), calling the gateway
the way curio calls the seed engine (request ids as curio makes them, Prove blocking until the
proof is ready). Prints one JSON object with what it saw; the Rust test
(tests/e2e/tests/gateway_curio.rs) judges it. Exits non-zero when a call answers other than
the API promises.
"""

import argparse
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

    # Without the token, and with a wrong one: refused.
    for name, metadata in [("none", None), ("wrong", [("authorization", "Bearer nope")])]:
        try:
            engine.GetStatus(pb.GetStatusRequest(), metadata=metadata, timeout=30)
            sys.exit(f"GetStatus with {name} token was accepted")
        except grpc.RpcError as error:
            seen[f"token_{name}"] = error.code().name

    with open(args.c1, "rb") as f:
        c1 = f.read()
    sector = json.loads(c1)["SectorNum"]
    submit = pb.SubmitProofRequest(
        request_id=f"porep-{args.miner}-{sector}",
        proof_kind=pb.POREP_SEAL_COMMIT,
        sector_size=2048,
        registered_proof=5,  # StackedDrg2KiBV1_1
        priority=pb.NORMAL,
        vanilla_proof=c1,
        sector_number=sector,
        miner_id=args.miner,
    )
    first = engine.SubmitProof(submit, metadata=auth, timeout=60)
    seen["submitted_job"] = first.job_id
    seen["queue_position"] = first.queue_position

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

    status = engine.GetStatus(pb.GetStatusRequest(), metadata=auth, timeout=30)
    seen["queues"] = {q.proof_kind: [q.pending, q.in_progress] for q in status.queues}
    seen["completed"] = status.total_proofs_completed
    seen["gpus"] = [g.name for g in status.gpus]
    metrics = engine.GetMetrics(pb.GetMetricsRequest(), metadata=auth, timeout=30)
    seen["metrics_has_jobs_created"] = "proofpipe_gateway_jobs_created_total" in metrics.prometheus_text
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
