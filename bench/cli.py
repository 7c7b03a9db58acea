#!/usr/bin/env python3
"""CLI throughput through one relay on loopback, all peers measured in the same run.

  curl -T - | curl            the named peer for plain transfers
  httpipe write | read        plain, then age-rt (passphrase)
  age-rt encrypt, native      `cargo run --release --example age -- encrypt --format age-rt`
                              (no network: the named peer for encrypted transfers)
  zebrastream write | read    the ZebraStream CLI (zebrastream-io 0.5.4, .venv), plain and age-rt

Every transfer moves SIZE_MIB (default 2048) MiB of zeros from a producer process to a
consumer process through `httpipe-relay` (release); the time is from the producer's start
until both ended. Medians of RUNS (default 3), peers interleaved run by run so they share the
machine's load. MB = 10^6 bytes. Prints a Markdown table and the ratios; asserts nothing.

  python3 bench/cli.py                # builds what it needs (release)
  SIZE_MIB=512 RUNS=5 python3 bench/cli.py
  SKIP_ZEBRASTREAM=1 python3 bench/cli.py
  HTTPIPE_CLI_BEFORE=/path/to/an/older/httpipe python3 bench/cli.py   (before/after, one run)
"""
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
if not TARGET.is_absolute():
    TARGET = ROOT / TARGET
SIZE = int(os.environ.get("SIZE_MIB", "2048")) * 1024 * 1024
RUNS = int(os.environ.get("RUNS", "3"))
PASS = "bench passphrase"
ZS = ROOT / ".venv" / "bin" / "zebrastream"
BEFORE = os.environ.get("HTTPIPE_CLI_BEFORE", "")


def build():
    subprocess.run(["cargo", "build", "--release", "-q"],
                   cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "--example", "age"],
                   cwd=ROOT, check=True)


def start_relay():
    relay = subprocess.Popen(
        [str(TARGET / "release" / "httpipe-relay"), "--http-port", "0", "--no-tls"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in relay.stdout:
        m = re.search(r"listening (http://\S+)", line)
        if m:
            return relay, m.group(1)
    raise SystemExit("relay did not start")


def producer_input():
    return subprocess.Popen(["head", "-c", str(SIZE), "/dev/zero"], stdout=subprocess.PIPE)


# CPU seconds (user + system) per GiB of the producer and consumer processes of each pair(),
# in call order: less sensitive to the machine's load than MB/s.
CPU = []


def reap(proc):
    """Waits for `proc`; returns its CPU seconds (user + system)."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime


def pair(consumer, producer, env=None):
    """Runs consumer first, then `head -c SIZE /dev/zero | producer`; returns MB/s."""
    env = {**os.environ, **(env or {})}
    c = subprocess.Popen(consumer, stdout=subprocess.PIPE, env=env)
    counter = subprocess.Popen(["wc", "-c"], stdin=c.stdout, stdout=subprocess.PIPE, text=True)
    c.stdout.close()
    time.sleep(0.2)
    t0 = time.perf_counter()
    src = producer_input()
    p = subprocess.Popen(producer, stdin=src.stdout, stdout=subprocess.DEVNULL, env=env)
    src.stdout.close()
    cpu = reap(p) + reap(c)
    got = int(counter.communicate()[0].strip() or 0)
    dt = time.perf_counter() - t0
    CPU.append(cpu / (SIZE / 2**30))
    if p.returncode or c.returncode or got != SIZE:
        print(f"  ! {producer[0]}: exit {p.returncode}/{c.returncode}, {got} bytes", file=sys.stderr)
        return float("nan")
    return SIZE / dt / 1e6


def encrypt_only():
    t0 = time.perf_counter()
    src = producer_input()
    age = TARGET / "release" / "examples" / "age"
    e = subprocess.Popen([str(age), "encrypt", "--format", "age-rt", "--passphrase-env", "BENCH_PASS"],
                         stdin=src.stdout, stdout=subprocess.DEVNULL,
                         env={**os.environ, "BENCH_PASS": PASS})
    src.stdout.close()
    CPU.append(reap(e) / (SIZE / 2**30))
    return SIZE / (time.perf_counter() - t0) / 1e6


def add(results, cpus, key, mbps):
    results[key].append(mbps)
    cpus[key].append(CPU[-1])


def main():
    build()
    relay, base = start_relay()
    hp = str(TARGET / "release" / "httpipe")
    connect = f"{base}/connect/v0/"
    zs = ZS.exists() and not os.environ.get("SKIP_ZEBRASTREAM")
    results = {k: [] for k in ["curl", "plain", "agert", "encrypt", "zs_plain", "zs_agert",
                               "b_plain", "b_agert"]}
    cpus = {k: [] for k in results}
    n = 0
    try:
        for run in range(RUNS):
            def path():
                nonlocal n
                n += 1
                return f"/bench/{os.getpid()}/{n}"
            p = path()
            add(results, cpus, "curl", pair(["curl", "-sS", base + p], ["curl", "-sS", "-T", "-", base + p]))
            p = path()
            add(results, cpus, "plain", pair([hp, "read", "-s", p, "-U", connect],
                                         [hp, "write", "-s", p, "-U", connect]))
            p = path()
            env = {"HTTPIPE_PASSPHRASE": PASS}
            add(results, cpus, "agert", pair([hp, "read", "-s", p, "-U", connect],
                                         [hp, "write", "-s", p, "-U", connect], env))
            add(results, cpus, "encrypt", encrypt_only())
            if BEFORE:
                p = path()
                add(results, cpus, "b_plain", pair([BEFORE, "read", "-s", p, "-U", connect],
                                               [BEFORE, "write", "-s", p, "-U", connect]))
                p = path()
                add(results, cpus, "b_agert", pair([BEFORE, "read", "-s", p, "-U", connect],
                                               [BEFORE, "write", "-s", p, "-U", connect], env))
            if zs:
                p = path()
                add(results, cpus, "zs_plain", pair([str(ZS), "read", "-s", p, "-U", connect, "-a", "x"],
                                                [str(ZS), "write", "-s", p, "-U", connect, "-a", "x"]))
                p = path()
                env = {"ZEBRASTREAM_PASSPHRASE": PASS}
                add(results, cpus, "zs_agert", pair([str(ZS), "read", "-s", p, "-U", connect, "-a", "x"],
                                                [str(ZS), "write", "-s", p, "-U", connect, "-a", "x"], env))
            print(f"run {run + 1}/{RUNS}: " + ", ".join(
                f"{k} {v[-1]:.0f}" for k, v in results.items() if v), file=sys.stderr)
    finally:
        relay.terminate()
    med = {k: statistics.median(v) for k, v in results.items() if v}
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"\n{SIZE >> 20} MiB per transfer, medians of {RUNS}, MB/s; {cpu}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    rows = [
        ("curl -T - → relay → curl", "curl"),
        ("httpipe write → relay → httpipe read (plain)", "plain"),
        ("age-rt encrypt, native, no network (`examples/age`)", "encrypt"),
        ("httpipe write → relay → httpipe read (age-rt passphrase)", "agert"),
        ("older httpipe (HTTPIPE_CLI_BEFORE), plain", "b_plain"),
        ("older httpipe (HTTPIPE_CLI_BEFORE), age-rt passphrase", "b_agert"),
        ("zebrastream write → relay → zebrastream read (plain)", "zs_plain"),
        ("zebrastream write → relay → zebrastream read (age-rt passphrase)", "zs_agert"),
    ]
    cmed = {k: statistics.median(v) for k, v in cpus.items() if v}
    print("| transfer | MB/s | producer + consumer CPU s/GiB |\n|---|---:|---:|")
    for name, k in rows:
        if k in med:
            c = f"{cmed[k]:.2f}" if k in cmed else "–"
            print(f"| {name} | {med[k]:.0f} | {c} |")
    print()
    print(f"httpipe plain / curl = {med['plain'] / med['curl']:.2f} (target >= 0.9)")
    print(f"httpipe age-rt / native age-rt encrypt = {med['agert'] / med['encrypt']:.2f} (target >= 0.8)")
    print(f"CPU per GiB, httpipe plain / curl = {cmed['plain'] / cmed['curl']:.2f}")
    if "b_plain" in med:
        print(f"CPU per GiB, older httpipe plain / curl = {cmed['b_plain'] / cmed['curl']:.2f}, "
              f"age-rt older / new = {cmed['b_agert'] / cmed['agert']:.2f}")
        print(f"older httpipe: plain / curl = {med['b_plain'] / med['curl']:.2f}, "
              f"age-rt / native encrypt = {med['b_agert'] / med['encrypt']:.2f}")
    if "zs_plain" in med:
        print(f"httpipe plain / zebrastream plain = {med['plain'] / med['zs_plain']:.2f}")
        print(f"httpipe age-rt / zebrastream age-rt = {med['agert'] / med['zs_agert']:.2f}")


if __name__ == "__main__":
    main()
