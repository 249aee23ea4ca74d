# Sourced by the scripts that run on the GPU machine, after they made their output folder:
#
#   source "$(dirname "$0")/gpu-machine.sh" "$out"
#
# Puts the driver's libraries on the library path, sets the log level (RUST_LOG, default
# info), and writes what the machine is to "$out/machine.txt" (the card, its driver and
# memory, the cores, the cgroup's memory limit), printing it too.
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/nvidia/lib64"
export RUST_LOG=${RUST_LOG:-info}
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv
    grep -m1 "model name" /proc/cpuinfo
    nproc
    cat /sys/fs/cgroup/memory.max 2>/dev/null
} > "$1/machine.txt" 2>&1
cat "$1/machine.txt"
