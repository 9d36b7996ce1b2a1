#!/usr/bin/env python3
"""Boots a real Debian kernel under qemu-system-* (TCG) with an initramfs
holding the given binaries, runs commands in the guest, and reports.

  run_vm.py --init vm_init --file vm_test:/vm_test [--smp 4 | --smp 1,maxcpus=4]
            [--mem 512] [--timeout 280] -- /vm_test counters :: /vm_test hotplug

The architecture comes from the ELF header of --init (x86_64 or aarch64).
Kernels: $PERCPU_VM_CACHE/{amd64,arm64}/boot/vmlinuz-* (tools/setup.sh puts
them there; default /var/cache/percpu-vm). Dynamically linked binaries get
their loader and NEEDED libraries copied from the target's sysroot.
The guest's /init (vm/vm_init.cc) prints PERCPU-VM-RESULT / PERCPU-VM-DONE
lines; a guest line "PERCPU-VM-QMP: add" / "del" makes this harness hot-add
the next free vCPU slot (query-hotpluggable-cpus + device_add) or hot-remove
the last one it added (device_del) over QMP. Exit status 0 only if every
command passed; a missing qemu, kernel or DONE line, or the timeout, fails
with a message saying so. See docs/vm_lane.md.
"""

import argparse
import glob
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ARCHES = {
    62: dict(name="x86_64", deb="amd64", qemu="qemu-system-x86_64",
             machine=["-accel", "tcg", "-cpu", "max"], console="ttyS0",
             sysroot="/", triplet="x86_64-linux-gnu",
             hotplug_driver="max-x86_64-cpu",
             # Under a loaded host TCG's emulated timer can fail the
             # kernel's IO-APIC timer check ("IO-APIC + timer doesn't
             # work!" panic, seen once here); skip that check, as VM
             # images usually do.
             kernel_args=["no_timer_check"]),
    183: dict(name="aarch64", deb="arm64", qemu="qemu-system-aarch64",
              machine=["-M", "virt", "-accel", "tcg", "-cpu", "max"],
              console="ttyAMA0", sysroot="/usr/aarch64-linux-gnu",
              triplet="aarch64-linux-gnu", hotplug_driver=None,
              kernel_args=[]),
}


def fail(msg):
    print("run_vm: FAIL: " + msg, flush=True)
    sys.exit(1)


def elf_machine(path):
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        fail("%s is not an ELF file" % path)
    return int.from_bytes(head[18:20], "little")


def readelf(args, path):
    return subprocess.run(["readelf"] + args + [path], check=True,
                          capture_output=True, text=True).stdout


def interp_and_needed(path):
    interp = None
    for line in readelf(["-l", "-W"], path).splitlines():
        if "Requesting program interpreter:" in line:
            interp = line.split(":", 1)[1].strip().rstrip("]").strip()
    needed = []
    for line in readelf(["-d", "-W"], path).splitlines():
        if "(NEEDED)" in line:
            needed.append(line.split("[", 1)[1].split("]", 1)[0])
    return interp, needed


def find_lib(arch, name):
    root = arch["sysroot"]
    t = arch["triplet"]
    for d in ["lib", "lib/" + t, "usr/lib/" + t, "usr/lib", "lib64"]:
        p = os.path.join(root, d, name)
        if os.path.exists(p):
            return os.path.realpath(p)
    fail("library %s for %s not found under %s" % (name, arch["name"], root))


def copy_runtime(arch, binary, root, done):
    """Copies the loader and NEEDED libraries of binary into root."""
    interp, needed = interp_and_needed(binary)
    if interp and interp not in done:
        done.add(interp)
        src = os.path.join(arch["sysroot"], interp.lstrip("/"))
        if not os.path.exists(src):
            src = find_lib(arch, os.path.basename(interp))
        dst = os.path.join(root, interp.lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(os.path.realpath(src), dst)
    for lib in needed:
        if lib in done:
            continue
        done.add(lib)
        src = find_lib(arch, lib)
        dst = os.path.join(root, "lib", arch["triplet"], lib)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(src, dst)
        copy_runtime(arch, src, root, done)


class Qmp:
    def __init__(self, path, deadline):
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                if time.time() > deadline:
                    fail("cannot connect to QMP at " + path)
                time.sleep(0.1)
        self.buf = b""
        self._read_reply(greeting=True)
        self.cmd("qmp_capabilities")
        self.added = []
        self.serial = 0

    def _read_reply(self, greeting=False):
        while True:
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    fail("QMP connection closed")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if greeting and "QMP" in msg:
                return msg
            if "return" in msg or "error" in msg:
                return msg
            # An asynchronous event (DEVICE_DELETED, ACPI_DEVICE_OST...).
            print("run_vm: qmp event: %s" % line.decode(), flush=True)

    def cmd(self, name, **args):
        req = {"execute": name}
        if args:
            req["arguments"] = args
        self.sock.sendall((json.dumps(req) + "\n").encode())
        reply = self._read_reply()
        print("run_vm: qmp %s -> %s" % (json.dumps(req), json.dumps(reply)),
              flush=True)
        return reply

    def add(self, driver):
        slots = self.cmd("query-hotpluggable-cpus").get("return", [])
        free = [s for s in slots if "qom-path" not in s]
        if not free:
            return False
        free.sort(key=lambda s: sorted(s["props"].items()))
        slot = free[0]
        # Never reuse an id: a deleted device may linger until the guest
        # acknowledged the removal.
        self.serial += 1
        dev_id = "vmcpu%d" % self.serial
        args = dict(slot["props"])
        args.pop("node-id", None)
        r = self.cmd("device_add", driver=slot.get("type", driver), id=dev_id,
                     **args)
        if "error" in r:
            return False
        self.added.append(dev_id)
        return True

    def delete(self):
        if not self.added:
            return False
        dev_id = self.added.pop()
        r = self.cmd("device_del", id=dev_id)
        if "error" in r:
            return False
        return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", required=True)
    ap.add_argument("--file", action="append", default=[],
                    help="SRC:DEST, copied into the initramfs")
    ap.add_argument("--smp", default="4")
    ap.add_argument("--mem", default="512")
    ap.add_argument("--timeout", type=int, default=280)
    ap.add_argument("--env", action="append", default=[],
                    help="VAR=VALUE for the guest's init environment")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        fail("no guest command given")
    expected = 1 + cmd.count("::")

    arch = ARCHES.get(elf_machine(a.init))
    if arch is None:
        fail("unsupported ELF machine in " + a.init)
    qemu = shutil.which(arch["qemu"])
    if qemu is None:
        fail("%s not found: run tools/setup.sh (packages qemu-system-x86, "
             "qemu-system-arm)" % arch["qemu"])
    cache = os.environ.get("PERCPU_VM_CACHE", "/var/cache/percpu-vm")
    kernels = sorted(glob.glob(os.path.join(cache, arch["deb"], "boot",
                                            "vmlinuz-*")))
    if not kernels:
        fail("no %s kernel under %s/%s/boot: run tools/setup.sh" %
             (arch["deb"], cache, arch["deb"]))
    kernel = kernels[-1]
    print("run_vm: %s guest, kernel %s, -smp %s -m %s" %
          (arch["name"], kernel, a.smp, a.mem), flush=True)

    # A short directory: the QMP socket path must fit sockaddr_un.
    work = tempfile.mkdtemp(prefix="pvm", dir="/tmp")
    try:
        root = os.path.join(work, "root")
        for d in ["proc", "sys", "dev", "tmp", "lib"]:
            os.makedirs(os.path.join(root, d), exist_ok=True)
        done = set()
        files = [(a.init, "/init")] + [tuple(f.split(":", 1)) for f in a.file]
        for src, dst in files:
            out = os.path.join(root, dst.lstrip("/"))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            shutil.copy(src, out)
            os.chmod(out, 0o755)
            copy_runtime(arch, src, root, done)
        initrd = os.path.join(work, "initrd.cpio")
        with open(initrd, "wb") as out:
            names = subprocess.run(["find", "."], cwd=root, check=True,
                                   capture_output=True).stdout
            subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root,
                           input=names, stdout=out, check=True)
        append = ["console=" + arch["console"], "quiet", "panic=-1"]
        append += arch["kernel_args"] + [
                  "PERCPU_VM_CMD_TIMEOUT_S=%d" % max(10, a.timeout - 40)]
        append += a.env + ["--"] + cmd
        qmp_path = os.path.join(work, "qmp")
        argv = [qemu] + arch["machine"] + [
            "-smp", a.smp, "-m", a.mem, "-nographic", "-no-reboot",
            "-kernel", kernel, "-initrd", initrd, "-append", " ".join(append),
            "-qmp", "unix:%s,server,nowait" % qmp_path]
        print("run_vm: " + " ".join(argv), flush=True)
        start = time.time()
        deadline = start + a.timeout
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        qmp = None
        results, done_line = [], None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        pending = b""
        timed_out = False
        while True:
            if time.time() > deadline:
                timed_out = True
                break
            if not sel.select(timeout=0.5):
                if proc.poll() is not None:
                    break
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            pending += chunk
            while b"\n" in pending:
                raw, pending = pending.split(b"\n", 1)
                line = raw.decode(errors="replace").rstrip("\r")
                print(line, flush=True)
                if line.startswith("PERCPU-VM-RESULT:"):
                    results.append(line)
                elif line.startswith("PERCPU-VM-DONE:"):
                    done_line = line
                elif line.startswith("PERCPU-VM-QMP:"):
                    what = line.split(":", 1)[1].strip()
                    if arch["hotplug_driver"] is None:
                        print("run_vm: no vCPU hotplug on %s" % arch["name"])
                        continue
                    if qmp is None:
                        qmp = Qmp(qmp_path, deadline)
                    ok = qmp.add(arch["hotplug_driver"]) if what == "add" \
                        else qmp.delete()
                    print("run_vm: qmp %s %s" % (what, "ok" if ok else "FAILED"),
                          flush=True)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        secs = time.time() - start
        print("run_vm: guest ran %.1f s" % secs, flush=True)
        if timed_out:
            fail("timeout after %d s (no power-off)" % a.timeout)
        if done_line is None:
            fail("the guest never printed PERCPU-VM-DONE (kernel panic, "
                 "init crash or console lost); qemu exit %s" % proc.returncode)
        passed = sum(1 for r in results if r.endswith(" exit=0"))
        if len(results) != expected or passed != expected:
            fail("%d of %d guest commands passed:\n  %s" %
                 (passed, expected, "\n  ".join(results)))
        print("run_vm: PASS (%d commands, %.1f s)" % (expected, secs))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
