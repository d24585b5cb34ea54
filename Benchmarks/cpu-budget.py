#!/usr/bin/env python3
"""Where a server's CPU went during one fan-out: its samples from `perf record -a -g -k mono`
between two CLOCK_MONOTONIC instants, in microseconds per woken poll, by bucket.

    cpu-budget.py PERF_DATA START_NS END_NS POLLS PID [PID ...]

Each sample goes to the first bucket whose system call is on its stack (a loopback send
includes delivering the bytes to the client, which runs inside the sender's call); samples
in no system call go to the library they were taken in. Prints one line per bucket,
"bucket<TAB>us-per-poll", then "total<TAB>us-per-poll". perf samples at 4,000 Hz (the
rate compare.sh records at), so each sample stands for 250 us of CPU.
"""
import collections
import re
import subprocess
import sys

SAMPLE_US = 1e6 / 4000
SYSTEM_CALLS = [
    ("send", ("sendmsg", "writev", "sendfile")),
    ("recv (EAGAIN included)", ("recvfrom", "sys_recv", "readv")),
    ("epoll_ctl", ("epoll_ctl",)),
    ("epoll_wait", ("epoll_wait",)),
    ("setsockopt", ("setsockopt",)),
    ("close, shutdown", ("sys_close", "shutdown")),
    ("eventfd, futex", ("ksys_read", "ksys_write", "futex")),
]


def library(frame):
    match = re.search(r"\(([^)]*)\)\s*$", frame)
    name = match.group(1).rsplit("/", 1)[-1] if match else "?"
    if "kernel" in name:
        return "kernel, other (page faults, interrupts)"
    if name.startswith("libswift"):
        return "user: Swift runtime"
    if name.startswith("libc.") or name.startswith("ld-linux"):
        return "user: libc (malloc, memcpy, locks)"
    if name.startswith("libmicrohttpd"):
        return "user: libmicrohttpd"
    if name.startswith("lookout"):
        return "user: Lookout's own code"
    if name.startswith("ngx_") or name == "nginx":
        return "user: nginx and Nchan"
    return "user: other libraries (Foundation, SQLite, vDSO)"


def main():
    perf_data, start_ns, end_ns, polls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    pids = ",".join(sys.argv[5:])
    window = f"{start_ns / 1e9:.6f},{end_ns / 1e9:.6f}"
    script = subprocess.run(
        ["perf", "script", "-i", perf_data, "--time", window, "--pid", pids, "-F", "pid,ip,sym,dso"],
        capture_output=True, text=True, check=True).stdout
    samples = []
    for line in script.splitlines():
        if line.strip() and not line.startswith("\t"):  # a sample's first line: its pid
            samples.append([])
        elif line.strip() and samples:
            samples[-1].append(line.strip())
    buckets = collections.Counter()
    for frames in samples:
        bucket = next((name for name, keys in SYSTEM_CALLS
                       if any(key in frame for frame in frames for key in keys)), None)
        buckets[bucket or library(frames[0] if frames else "")] += 1
    for name, count in buckets.most_common():
        print(f"{name}\t{count * SAMPLE_US / polls:.2f}")
    print(f"total\t{len(samples) * SAMPLE_US / polls:.2f}")


if __name__ == "__main__":
    main()
