//! The container's termination message: why the daemon ended, for the pod's status.

/// Writes `message` to the termination-message file, if there is one to write (the kubelet
/// creates it; it caps the message at 4 KiB).
pub fn write_termination_message(path: &std::path::Path, message: &str) {
    let truncated: String = message.chars().take(4000).collect();
    // Only an existing file: outside a pod there is none, and the daemon must not create
    // one in /dev.
    match std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
    {
        Ok(mut file) => {
            if let Err(err) = std::io::Write::write_all(&mut file, truncated.as_bytes()) {
                tracing::debug!(path = %path.display(), %err, "termination message not written");
            }
        }
        Err(err) => tracing::debug!(path = %path.display(), %err, "no termination-message file"),
    }
}
