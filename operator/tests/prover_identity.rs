//! The chart's prover-identity ValidatingAdmissionPolicies (ADR 0014), evaluated with a CEL
//! interpreter the way the API server applies them: match conditions, then variables, then
//! every validation. kube-testenv enforces no admission policy, so this is where a rogue
//! prover's write is shown to be refused and a rightful one admitted.
//!
//! The expressions are read from `charts/proofpipe/policies/prover-identity.yaml`, the file
//! the chart's template includes.
//!
//! The two status.proofs rules (and the variables only they read) use CEL's two-variable
//! comprehensions, which this interpreter lacks: `prover_identity_admission.rs` tests them on
//! the API server's own CEL, at the largest job too. Here they are left out, and
//! [`the_interpreter_leaves_out_only_the_proofs_rules`] keeps it to those.

use std::collections::HashMap;
use std::path::Path;

use cel::{Context, Program, Value};
use serde::Deserialize;
use serde_json::{Value as Json, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Policies {
    match_conditions: Vec<Named>,
    variables: Vec<Named>,
    proof_job_status: Vec<Validation>,
    prover_pool_status: Vec<Validation>,
}

#[derive(Deserialize)]
struct Named {
    name: String,
    expression: String,
}

#[derive(Deserialize)]
struct Validation {
    expression: String,
    message: String,
}

fn chart() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../charts/proofpipe")
}

fn policies() -> Policies {
    let text = std::fs::read_to_string(chart().join("policies/prover-identity.yaml")).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

/// Expressions only the API server's CEL evaluates (see the module's note).
fn needs_the_api_servers_cel(expression: &str) -> bool {
    expression.contains("transformMapEntry")
        || expression.contains("variables.oldProofs")
        || expression.contains("variables.newProofs")
}

fn eval(expression: &str, context: &Context) -> Result<Value, String> {
    let program =
        Program::compile(expression).map_err(|err| format!("{expression}: parse: {err}"))?;
    program
        .execute(context)
        .map_err(|err| format!("{expression}: {err}"))
}

/// What the API server answers: `Ok` when the write is admitted, else the message of the
/// first failed validation. An evaluation error refuses too (failurePolicy: Fail).
fn admit(validations: &[Validation], request: &Json, old: &Json, new: &Json) -> Result<(), String> {
    let policies = policies();
    let mut context = Context::default();
    for (name, value) in [("request", request), ("oldObject", old), ("object", new)] {
        context.add_variable_from_value(name, cel::to_value(value).unwrap());
    }
    for condition in &policies.match_conditions {
        if eval(&condition.expression, &context)? != Value::Bool(true) {
            return Ok(()); // not a prover: the policy does not apply
        }
    }
    let mut variables = HashMap::<String, Value>::new();
    for variable in &policies.variables {
        if needs_the_api_servers_cel(&variable.expression) {
            continue;
        }
        let value = eval(&variable.expression, &context)?;
        // Each variable sees the ones before it, as in the API server.
        variables.insert(variable.name.clone(), value);
        context.add_variable_from_value("variables", variables.clone());
    }
    for validation in validations {
        if needs_the_api_servers_cel(&validation.expression) {
            continue;
        }
        match eval(&validation.expression, &context) {
            Ok(Value::Bool(true)) => {}
            Ok(other) => {
                return Err(format!("{} (got {other:?})", validation.message));
            }
            Err(err) => return Err(format!("{}: evaluation failed: {err}", validation.message)),
        }
    }
    Ok(())
}

/// A request by the prover ServiceAccount of namespace `proving` from `pod`'s bound token.
fn prover(pod: &str, object: &str) -> Json {
    json!({
        "name": object, "namespace": "proving",
        "userInfo": {
            "username": "system:serviceaccount:proving:proofpipe-prover",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:proving"],
            "extra": { "authentication.kubernetes.io/pod-name": [pod] },
        },
    })
}

fn proof(partition: i32, pod: &str, verified: bool) -> Json {
    json!({ "partition": partition, "proof": "AAAA", "verified": verified,
            "publicInputs": [], "provedBy": pod })
}

/// Job `job-a` on attempt 2, assigned to gpu-prover-1: gpu-prover-0 proved partitions 0
/// and 1 (1 unverified) on attempt 1.
fn stored_job(assigned: &str) -> Json {
    json!({
        "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
        "metadata": { "name": "job-a", "namespace": "proving",
                      "labels": { "proofpipe.dev/assigned-pod": assigned } },
        "spec": { "pool": "gpu", "circuit": "mul-chain", "constraints": 1024, "partitions": 4 },
        "status": {
            "phase": "Running", "pod": assigned, "attempts": 2, "progress": "1/4",
            "assignedPods": ["gpu-prover-0", "gpu-prover-1"],
            "proofs": [proof(0, "gpu-prover-0", true), proof(1, "gpu-prover-0", false)],
            "stageSeconds": { "synthesis": 1.0, "queueWait": 0.0, "gpu": 2.0, "finalize": 0.5 },
            "conditions": [{ "type": "Assigned", "status": "True", "reason": "Assigned",
                             "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z" }],
        },
    })
}

/// What gpu-prover-1's daemon makes of the job: its proofs of partitions 1 (anew: the
/// earlier one failed verification) and 2, its stage timings, a Filecoin result of its own.
fn rightful_write(old: &Json) -> Json {
    let mut new = old.clone();
    new["status"]["proofs"] = json!([
        proof(0, "gpu-prover-0", true),
        proof(1, "gpu-prover-1", true),
        proof(2, "gpu-prover-1", true),
    ]);
    new["status"]["stageSeconds"]["gpu"] = json!(3.0);
    new["status"]["filecoin"] = json!({ "proof": "AAAA", "proofBytes": 1920, "verified": true, "provedBy": "gpu-prover-1" });
    new
}

fn job_policy() -> Vec<Validation> {
    policies().proof_job_status
}

fn refused_because(result: Result<(), String>, why: &str) {
    match result {
        Ok(()) => panic!("admitted; expected a refusal: {why}"),
        Err(message) => assert!(
            message.contains(why),
            "refused for {message:?}, not {why:?}"
        ),
    }
}

#[test]
fn the_chart_template_includes_the_tested_expressions() {
    let template =
        std::fs::read_to_string(chart().join("templates/prover-identity-policy.yaml")).unwrap();
    for needed in [
        ".Files.Get \"policies/prover-identity.yaml\"",
        "$policy.proofJobStatus",
        "$policy.proverPoolStatus",
        "$policy.matchConditions",
        "$policy.variables",
        "failurePolicy: Fail",
    ] {
        assert!(template.contains(needed), "the template lacks {needed}");
    }
}

#[test]
fn the_assigned_prover_writes_its_own_proofs_timings_and_filecoin_result() {
    let old = stored_job("gpu-prover-1");
    let new = rightful_write(&old);
    assert_eq!(
        admit(&job_policy(), &prover("gpu-prover-1", "job-a"), &old, &new),
        Ok(())
    );
    // Its next write adds a proof and leaves the others' entries as they were.
    let mut next = new.clone();
    next["status"]["proofs"]
        .as_array_mut()
        .unwrap()
        .push(proof(3, "gpu-prover-1", true));
    assert_eq!(
        admit(&job_policy(), &prover("gpu-prover-1", "job-a"), &new, &next),
        Ok(())
    );
    // Its first write, into a status without proofs.
    let mut bare = old.clone();
    bare["status"].as_object_mut().unwrap().remove("proofs");
    bare["status"]
        .as_object_mut()
        .unwrap()
        .remove("stageSeconds");
    let mut first = bare.clone();
    first["status"]["proofs"] = json!([proof(3, "gpu-prover-1", true)]);
    assert_eq!(
        admit(
            &job_policy(),
            &prover("gpu-prover-1", "job-a"),
            &bare,
            &first
        ),
        Ok(())
    );
}

#[test]
fn a_prover_cannot_write_a_job_assigned_to_another_pod() {
    let old = stored_job("gpu-prover-0");
    let mut new = rightful_write(&old);
    refused_because(
        admit(&job_policy(), &prover("gpu-prover-1", "job-a"), &old, &new),
        "only the status of the ProofJob assigned to its own pod",
    );
    // Relabelling in the same write changes nothing: the stored label decides.
    new["metadata"]["labels"]["proofpipe.dev/assigned-pod"] = json!("gpu-prover-1");
    refused_because(
        admit(&job_policy(), &prover("gpu-prover-1", "job-a"), &old, &new),
        "only the status of the ProofJob assigned to its own pod",
    );
    // Nor an unassigned job.
    let mut unassigned = stored_job("gpu-prover-1");
    unassigned["metadata"]["labels"] = json!({});
    let new = rightful_write(&unassigned);
    refused_because(
        admit(
            &job_policy(),
            &prover("gpu-prover-1", "job-a"),
            &unassigned,
            &new,
        ),
        "only the status of the ProofJob assigned to its own pod",
    );
}

#[test]
fn the_interpreter_leaves_out_only_the_proofs_rules() {
    let policies = policies();
    let skipped: Vec<&str> = policies
        .proof_job_status
        .iter()
        .chain(&policies.prover_pool_status)
        .filter(|v| needs_the_api_servers_cel(&v.expression))
        .map(|v| v.message.as_str())
        .collect();
    assert_eq!(
        skipped,
        [
            "a prover may add or change only status.proofs entries whose provedBy is its own pod",
            "a prover may not remove or replace another pod's verified status.proofs entries",
        ]
    );
    let variables: Vec<&str> = policies
        .variables
        .iter()
        .filter(|v| needs_the_api_servers_cel(&v.expression))
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(variables, ["oldProofs", "newProofs"]);
}

#[test]
fn a_prover_writes_no_filecoin_result_but_its_own() {
    let as_prover = prover("gpu-prover-1", "job-a");
    let why = "status.filecoin only as its own";
    let old = stored_job("gpu-prover-1");
    let mut stranger = rightful_write(&old);
    stranger["status"]["filecoin"]["provedBy"] = json!("gpu-prover-5");
    refused_because(admit(&job_policy(), &as_prover, &old, &stranger), why);

    // One another pod wrote stays, neither replaced nor removed.
    let mut theirs = old.clone();
    theirs["status"]["filecoin"] = json!({ "proof": "AAAA", "proofBytes": 1920, "verified": false, "provedBy": "gpu-prover-0" });
    let mut replaced = rightful_write(&theirs);
    replaced["status"]["filecoin"]["verified"] = json!(true);
    refused_because(admit(&job_policy(), &as_prover, &theirs, &replaced), why);
    let mut removed = rightful_write(&theirs);
    removed["status"]
        .as_object_mut()
        .unwrap()
        .remove("filecoin");
    refused_because(admit(&job_policy(), &as_prover, &theirs, &removed), why);
}

#[test]
fn a_prover_reports_a_failure_only_as_its_own() {
    let as_prover = prover("gpu-prover-1", "job-a");
    let why = "status.proverFailure only as its own";
    let old = stored_job("gpu-prover-1");
    let report = |pod: &str| {
        json!({ "pod": pod, "attempt": 2, "reason": "InvalidInput", "message": "bad C1",
                "permanent": true, "time": "2026-01-01T00:00:00Z" })
    };
    let mut own = old.clone();
    own["status"]["proverFailure"] = report("gpu-prover-1");
    assert_eq!(admit(&job_policy(), &as_prover, &old, &own), Ok(()));
    let mut forged = old.clone();
    forged["status"]["proverFailure"] = report("gpu-prover-5");
    refused_because(admit(&job_policy(), &as_prover, &old, &forged), why);
    // An earlier pod's report (history: another attempt) is replaced by this pod's own.
    let mut earlier = old.clone();
    earlier["status"]["proverFailure"] = report("gpu-prover-0");
    assert_eq!(admit(&job_policy(), &as_prover, &earlier, &own), Ok(()));
}

/// The status fields of `kind` in the generated CRDs.
fn status_fields(kind: &str) -> Vec<String> {
    let text = std::fs::read_to_string(chart().join("crds/proofpipe-crds.yaml")).unwrap();
    for document in serde_yaml_ng::Deserializer::from_str(&text) {
        let crd = Json::deserialize(document).unwrap();
        if crd["spec"]["names"]["kind"] == kind {
            let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
            return schema["properties"]["status"]["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
        }
    }
    panic!("no CRD of kind {kind}")
}

#[test]
fn a_prover_changes_no_operator_field_of_a_job() {
    let as_prover = prover("gpu-prover-1", "job-a");
    let old = stored_job("gpu-prover-1");
    let mut phase = rightful_write(&old);
    phase["status"]["phase"] = json!("Succeeded");
    refused_because(
        admit(&job_policy(), &as_prover, &old, &phase),
        "status.phase is the operator's",
    );
    // Every field the CRD declares, now and later, except the daemon's own three: a field
    // added to the status without a rule in the policy fails here.
    let fields = status_fields("ProofJob");
    assert!(fields.len() > 10, "{fields:?}");
    for field in fields {
        if ["proofs", "stageSeconds", "filecoin", "proverFailure"].contains(&field.as_str()) {
            continue;
        }
        let mut new = rightful_write(&old);
        new["status"][&field] = json!("set by a rogue prover");
        refused_because(
            admit(&job_policy(), &as_prover, &old, &new),
            &format!("status.{field} is the operator's"),
        );
        // Removing it is a change too, where it was set.
        if old["status"].get(&field).is_some() {
            let mut new = rightful_write(&old);
            new["status"].as_object_mut().unwrap().remove(&field);
            refused_because(
                admit(&job_policy(), &as_prover, &old, &new),
                &format!("status.{field} is the operator's"),
            );
        }
    }
}

#[test]
fn only_prover_tokens_bound_to_a_pod_are_checked_and_required() {
    let old = stored_job("gpu-prover-1");
    let mut phase = rightful_write(&old);
    phase["status"]["phase"] = json!("Succeeded");
    // The operator (another ServiceAccount) is not concerned by the policy.
    let mut operator = prover("gpu-prover-1", "job-a");
    operator["userInfo"]["username"] = json!("system:serviceaccount:proofpipe-system:proofpipe");
    operator["userInfo"]["extra"] = json!({});
    assert_eq!(admit(&job_policy(), &operator, &old, &phase), Ok(()));
    // A prover token without the pod binding is refused, however rightful the write.
    let mut unbound = prover("gpu-prover-1", "job-a");
    unbound["userInfo"].as_object_mut().unwrap().remove("extra");
    refused_because(
        admit(&job_policy(), &unbound, &old, &rightful_write(&old)),
        "bound service-account token",
    );
}

fn stored_pool() -> Json {
    let entry = |pod: &str, phase: &str| {
        json!({ "pod": pod, "phase": phase, "proofsCompleted": 3, "estimatedBytes": 1024,
                "lastReport": "2026-01-01T00:00:00Z",
                "buffers": { "synthesizing": 0, "queued": 0, "gpu": 0, "finalizing": 0 } })
    };
    json!({
        "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
        "metadata": { "name": "gpu", "namespace": "proving" },
        "spec": { "replicas": 3 },
        "status": {
            "replicas": 3, "readyReplicas": 3, "selector": "proofpipe.dev/pool=gpu",
            "queuedJobs": 1,
            "provers": [entry("gpu-prover-0", "Busy"), entry("gpu-prover-1", "Idle"),
                        entry("gpu-prover-2", "Idle")],
        },
    })
}

fn pool_policy() -> Vec<Validation> {
    policies().prover_pool_status
}

#[test]
fn a_prover_writes_only_its_own_entry_of_its_own_pool() {
    let as_prover = prover("gpu-prover-1", "gpu");
    let old = stored_pool();
    let mut own = old.clone();
    own["status"]["provers"][1]["phase"] = json!("Busy");
    own["status"]["provers"][1]["currentJob"] = json!("job-a");
    assert_eq!(admit(&pool_policy(), &as_prover, &old, &own), Ok(()));
    // Other entries in another order (a merge may reorder) are still the same entries.
    let mut reordered = own.clone();
    reordered["status"]["provers"]
        .as_array_mut()
        .unwrap()
        .reverse();
    assert_eq!(admit(&pool_policy(), &as_prover, &old, &reordered), Ok(()));
    // Its first report adds its entry.
    let mut without = old.clone();
    without["status"]["provers"]
        .as_array_mut()
        .unwrap()
        .remove(1);
    assert_eq!(admit(&pool_policy(), &as_prover, &without, &own), Ok(()));

    let why = "only its own entry of status.provers";
    let mut other = own.clone();
    other["status"]["provers"][0]["phase"] = json!("Idle");
    refused_because(admit(&pool_policy(), &as_prover, &old, &other), why);
    let mut removed = own.clone();
    removed["status"]["provers"]
        .as_array_mut()
        .unwrap()
        .remove(2);
    refused_because(admit(&pool_policy(), &as_prover, &old, &removed), why);
    let mut fake = own.clone();
    let mut entry = fake["status"]["provers"][1].clone();
    entry["pod"] = json!("gpu-prover-9");
    fake["status"]["provers"]
        .as_array_mut()
        .unwrap()
        .push(entry);
    refused_because(admit(&pool_policy(), &as_prover, &old, &fake), why);

    // Another pool's status, even its own entry there.
    let mut cpu = old.clone();
    cpu["metadata"]["name"] = json!("cpu");
    let mut cpu_new = own.clone();
    cpu_new["metadata"]["name"] = json!("cpu");
    refused_because(
        admit(
            &pool_policy(),
            &prover("gpu-prover-1", "cpu"),
            &cpu,
            &cpu_new,
        ),
        "only the status of its own ProverPool",
    );
    // A pool whose name extends another's is another pool.
    refused_because(
        admit(
            &pool_policy(),
            &prover("gpu-prover-1", "gpu-prover"),
            &old,
            &own,
        ),
        "only the status of its own ProverPool",
    );
}

#[test]
fn a_prover_changes_no_operator_field_of_a_pool() {
    let as_prover = prover("gpu-prover-1", "gpu");
    let old = stored_pool();
    let fields = status_fields("ProverPool");
    assert!(fields.len() > 8, "{fields:?}");
    for field in fields {
        if field == "provers" {
            continue;
        }
        let mut new = old.clone();
        new["status"][&field] = json!("set by a rogue prover");
        refused_because(
            admit(&pool_policy(), &as_prover, &old, &new),
            &format!("status.{field} is the operator's"),
        );
    }
}
