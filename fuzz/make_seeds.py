#!/usr/bin/env python3
"""Writes the hand-crafted seed inputs of fuzz/corpus/allocator_hotplug/.

The byte format is described at the top of fuzz/allocator_hotplug_harness.cc.
Each seed exercises one kind of operation (or one rule) so that the corpus
regression test covers every op even without a fuzzing run. Re-run after
changing the format:  python3 fuzz/make_seeds.py
Inputs found by the fuzzer are kept next to these (named crash-*, or
found-*) and are not touched by this script.
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "corpus", "allocator_hotplug")

(ALLOCATE, ALLOCATE_TYPED, FREE, DOUBLE_FREE, FREE_INTERIOR,
 FREE_OTHER_CPU_COPY, FREE_IN_CHUNK, FREE_FOREIGN, FREE_NULL, WRITE, VERIFY,
 SET_PRESENT, SET_ABSENT, ONLINE, OFFLINE, MIB_ADD, MIB_FOLD, U64_ADD,
 U64_FOLD, ARM_FAULT, RECREATE_MIBS, RESCAN, AT) = range(23)


class Seed:
    def __init__(self, possible=4, present=None, online=None, unit_shift=0,
                 bad_unit=0, limit_mode=0, limit_mult=0, flags=0, bad_shape=0):
        present = possible if present is None else present
        online = present if online is None else online
        if possible <= 8:
            h0 = possible - 1
        else:
            assert 60 <= possible <= 71
            h0 = next(b for b in range(224, 256) if 60 + b % 12 == possible)
        self.possible = possible
        self.b = bytearray([h0, present - 1, (online - 1) | (bad_shape << 4),
                            unit_shift | (bad_unit << 2), limit_mode,
                            limit_mult, flags])

    def cpu(self, c):
        # -1 .. possible encode directly; anything else via the special codes.
        specials = {self.possible + 1: 240, self.possible + 64: 241,
                    2**31 - 1: 242, -2**31: 243, 4096: 244, 4095: 245,
                    -2: 246}
        if -1 <= c <= self.possible:
            return c + 1
        return specials[c]

    def op(self, code, *args):
        self.b.append(code)
        for a in args:
            if isinstance(a, (bytes, bytearray)):
                self.b += a
            else:
                self.b.append(a & 0xff)
        return self

    # size: (mode, value) as decoded by DecodeSize.
    def alloc(self, mode, v, align_byte):
        return self.op(ALLOCATE, mode, struct.pack("<H", v), align_byte)

    def typed(self, kind, nmode=0, nv=0):
        return self.op(ALLOCATE_TYPED, kind, nmode, struct.pack("<H", nv))

    def free(self, idx):
        return self.op(FREE, struct.pack("<H", idx))

    def write(self, idx, all_cpus=True, cpu=0):
        return self.op(WRITE, struct.pack("<H", idx), 1 if all_cpus else 0, cpu)

    def verify_all(self):
        return self.op(VERIFY, 0)

    def hp(self, code, c):
        return self.op(code, self.cpu(c))

    def mib_add(self, c, item, delta_mode=1, delta=7, checked=0):
        return self.op(MIB_ADD, self.cpu(c), item, delta_mode, delta, checked)

    def u64_add(self, c, item, delta_mode=1, delta=5):
        return self.op(U64_ADD, self.cpu(c), item, delta_mode, delta)

    def write_to(self, name):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes(self.b))


# Alignment bytes (DecodeAlign): b % 8 selects the kind, b >> 3 the value.
def align_pow2(k):   # 2**k, k in 0..12
    return 1 | (k << 3)


ALIGN_DEFAULT = 0
ALIGN_PAGE = 7
ALIGN_OVER_PAGE = 4
ALIGN_ODD_24 = 5 | (4 << 3)
ALIGN_ODD_3 = 5
ALIGN_SIZE_MAX = 6 | (1 << 3)
ALIGN_TOP_BIT = 6


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {}

    seeds["empty"] = bytearray()
    seeds["header_only"] = Seed().b

    s = Seed()
    for mode, v in [(1, 7), (1, 15), (1, 63), (4, 100), (5, 2000),
                    (7, 0), (7, 5), (9, 3), (10, 12), (10, 5)]:
        s.alloc(mode, v, ALIGN_DEFAULT)
    s.verify_all()
    seeds["alloc_sizes"] = s.b

    s = Seed()
    for mode, v in [(0, 0), (8, 0), (8, 9), (11, 0), (11, 1), (11, 2),
                    (11, 3)]:
        s.alloc(mode, v, ALIGN_DEFAULT)
    seeds["alloc_bad_sizes"] = s.b

    s = Seed()
    for a in [align_pow2(0), align_pow2(3), align_pow2(4), align_pow2(6),
              align_pow2(7), align_pow2(12), ALIGN_PAGE]:
        s.alloc(1, 15, a).alloc(5, 300, a)
    s.verify_all()
    seeds["alloc_aligns"] = s.b

    s = Seed()
    for a in [ALIGN_ODD_3, ALIGN_ODD_24, 5 | (8 << 3), 5 | (10 << 3),
              ALIGN_OVER_PAGE, 4 | (2 << 3), ALIGN_SIZE_MAX, ALIGN_TOP_BIT]:
        s.alloc(1, 15, a)
    seeds["alloc_bad_aligns"] = s.b

    s = Seed()
    s.typed(0).typed(1).typed(2).typed(3).typed(4, 1, 5).typed(4, 2, 700)
    s.typed(4, 0).typed(4, 3, 0).typed(4, 4, 0).verify_all()
    seeds["alloc_typed"] = s.b

    s = Seed()
    s.alloc(1, 15, 0).alloc(5, 500, 0).free(2).free(2).free(0)
    s.op(DOUBLE_FREE, 0).op(DOUBLE_FREE, 1).op(DOUBLE_FREE, 2)
    seeds["free_and_double_free"] = s.b

    s = Seed()
    # Free, then reallocate the same size: the address comes back, and the
    # "double free" of it is a valid free of the new object.
    s.alloc(1, 31, 0).free(2).alloc(1, 31, 0).op(DOUBLE_FREE, 0)
    s.op(DOUBLE_FREE, 0)
    seeds["double_free_after_reuse"] = s.b

    s = Seed()
    s.alloc(5, 1000, 0).alloc(1, 23, 0)
    for idx, off in [(0, 0), (1, 7), (2, 3), (3, 64), (2, 999)]:
        s.op(FREE_INTERIOR, struct.pack("<H", idx), struct.pack("<H", off))
    seeds["free_interior"] = s.b

    s = Seed(possible=3)
    s.alloc(1, 15, 0).alloc(5, 900, 0)
    for idx in range(4):
        for c in range(3):
            s.op(FREE_OTHER_CPU_COPY, struct.pack("<H", idx), c)
    seeds["free_other_cpu_copy"] = s.b

    s = Seed()
    s.alloc(1, 15, 0)
    for off in [0, 1, 64, 4096, 4095, 8192, 12345, 0x7fffffff]:
        s.op(FREE_IN_CHUNK, 0, struct.pack("<I", off))
    seeds["free_in_chunk"] = s.b

    s = Seed()
    s.alloc(1, 15, 0)
    for k in range(7):
        s.op(FREE_FOREIGN, k)
    s.op(FREE_FOREIGN, 5 | 8).op(FREE_FOREIGN, 6 | 16)
    s.op(FREE_NULL).op(FREE_NULL)
    seeds["free_foreign_and_null"] = s.b

    s = Seed()
    s.alloc(1, 15, 0).alloc(5, 3000, 0).typed(2)
    s.write(2).write(3).write(4, False, 1).write(4, False, 3).verify_all()
    s.free(3).alloc(5, 3000, 0).verify_all()
    seeds["write_verify"] = s.b

    s = Seed(possible=4, present=4, online=4)
    s.alloc(1, 15, 0).alloc(5, 3000, 0).write(2).write(3)
    s.hp(OFFLINE, 3).verify_all().hp(ONLINE, 3).verify_all()
    s.hp(OFFLINE, 2).hp(SET_ABSENT, 2).verify_all().hp(SET_PRESENT, 2)
    s.verify_all().write(2).hp(ONLINE, 2).verify_all()
    seeds["write_across_hotplug"] = s.b

    s = Seed(possible=4, present=2, online=1)
    s.alloc(1, 15, 0).write(2).hp(SET_ABSENT, 1).free(2)
    s.hp(SET_PRESENT, 1).hp(SET_PRESENT, 3).alloc(1, 15, 0).verify_all()
    s.hp(SET_PRESENT, 2).hp(ONLINE, 2).write(2).verify_all()
    seeds["free_while_absent"] = s.b

    s = Seed(possible=4, present=3, online=2)
    for c in [-1, 4, 5, 68, 2**31 - 1, -2**31, 4096, 4095, -2]:
        for code in (SET_PRESENT, SET_ABSENT, ONLINE, OFFLINE):
            s.hp(code, c)
    seeds["hotplug_bad_ids"] = s.b

    s = Seed(possible=4, present=3, online=2)
    s.hp(OFFLINE, 0).hp(OFFLINE, 1)      # last online: refused
    s.hp(SET_ABSENT, 1)                   # online: refused
    s.hp(ONLINE, 3)                       # not present: refused
    s.hp(SET_ABSENT, 2).hp(SET_ABSENT, 2)  # second is a no-op
    s.hp(SET_PRESENT, 0).hp(ONLINE, 1).hp(OFFLINE, 2)  # no-ops
    s.hp(SET_PRESENT, 3).hp(ONLINE, 3).hp(OFFLINE, 1).hp(OFFLINE, 0)
    s.hp(OFFLINE, 3)
    seeds["hotplug_rules"] = s.b

    s = Seed(possible=4)
    for c in range(4):
        s.mib_add(c, c % 5, 1, 10 + c).mib_add(c, 4, 0)
    s.op(MIB_FOLD).hp(OFFLINE, 2).op(MIB_FOLD).mib_add(2, 0)
    s.mib_add(2, 0, checked=1).mib_add(-1, 0).mib_add(4, 0).mib_add(0, 5)
    s.mib_add(0, 6, checked=1).hp(ONLINE, 2).mib_add(2, 1, 2,
                                                      0).op(MIB_FOLD)
    s.hp(OFFLINE, 2).hp(SET_ABSENT, 2).hp(SET_PRESENT, 2).hp(ONLINE, 2)
    s.mib_add(2, 3, 3, 0).op(MIB_FOLD)
    seeds["mib_add_fold_hotplug"] = s.b

    s = Seed(possible=4, present=3, online=2)
    for c in [0, 1, 2, 3, -1, 4]:
        s.u64_add(c, 1).u64_add(c, 5).u64_add(c, 6)
    s.op(U64_FOLD).hp(OFFLINE, 1).u64_add(1, 2).op(U64_FOLD)
    s.hp(SET_ABSENT, 1).u64_add(1, 2).op(U64_FOLD).hp(SET_PRESENT, 3)
    s.u64_add(3, 0, 2, 0).op(U64_FOLD)
    seeds["u64_mib_overflow_and_fold"] = s.b

    s = Seed(possible=2)
    # Map failure: first allocation needing a new chunk fails, next works.
    s.op(ARM_FAULT, 0, 0).alloc(7, 0, 0).alloc(7, 0, 0).alloc(7, 0, 0)
    s.op(ARM_FAULT, 0, 1).alloc(7, 0, 0).alloc(7, 0, 0).alloc(7, 0, 0)
    seeds["fault_map"] = s.b

    s = Seed(possible=4, present=2, online=1)
    s.alloc(7, 0, 0).alloc(7, 0, 0).write(1).write(2)
    s.op(ARM_FAULT, 2, 0).hp(SET_PRESENT, 2)   # vetoed
    s.op(ARM_FAULT, 1, 0).hp(SET_PRESENT, 2)   # vetoed
    s.op(ARM_FAULT, 2, 0).op(ARM_FAULT, 1, 1).hp(SET_PRESENT, 3)
    s.hp(SET_PRESENT, 2).verify_all()
    s.op(ARM_FAULT, 2, 1).hp(SET_ABSENT, 1)    # reported, not vetoed
    s.hp(SET_PRESENT, 1).verify_all()
    seeds["fault_commit_decommit"] = s.b

    s = Seed(possible=2, limit_mode=3)   # one chunk only
    for _ in range(6):
        s.alloc(5, 1000, 0)
    s.free(0).free(1).alloc(5, 1000, 0).alloc(7, 0, 0)
    seeds["limit_one_chunk"] = s.b

    s = Seed(possible=2, limit_mode=6, limit_mult=1)  # not a multiple
    for _ in range(10):
        s.alloc(5, 3000, 0)
    seeds["limit_not_multiple"] = s.b

    s = Seed(possible=3, limit_mode=7, limit_mult=1)  # nothing fits
    s.alloc(1, 7, 0).typed(0).mib_add(0, 0).u64_add(0, 0).op(RECREATE_MIBS, 0)
    seeds["limit_zero"] = s.b

    s = Seed(possible=4)
    s.mib_add(1, 1).u64_add(2, 2).op(RECREATE_MIBS, 0).mib_add(1, 1)
    s.op(RECREATE_MIBS, 1).op(RECREATE_MIBS, 2).op(RECREATE_MIBS, 3)
    s.hp(OFFLINE, 3).op(RECREATE_MIBS, 0).hp(ONLINE, 3).op(MIB_FOLD)
    seeds["recreate_mibs"] = s.b

    s = Seed(possible=66, present=65, online=64)
    s.alloc(1, 15, 0).write(2).mib_add(63, 0).u64_add(64, 1)
    s.hp(ONLINE, 64).mib_add(64, 2).hp(OFFLINE, 63).hp(SET_ABSENT, 63)
    s.hp(SET_PRESENT, 65).hp(ONLINE, 65).u64_add(65, 3).verify_all()
    s.hp(OFFLINE, 64).hp(SET_ABSENT, 64).op(MIB_FOLD).op(U64_FOLD)
    seeds["topology_65_cpus"] = s.b

    s = Seed(possible=4, unit_shift=2, bad_unit=3)   # 4-page units
    s.alloc(7, 0, ALIGN_PAGE).alloc(7, 63, 0).alloc(5, 9000, ALIGN_PAGE)
    s.alloc(8, 0, 0).write(2).write(3).write(4).verify_all()
    seeds["unit_4_pages"] = s.b

    s = Seed(possible=3)
    s.alloc(1, 15, 0).op(RESCAN)
    for mode in range(4):
        for c in (-1, 0, 2, 3, 2**31 - 1):
            s.op(AT, mode, s.cpu(c), *( [0, 0] if mode == 3 else []))
    seeds["rescan_and_at"] = s.b

    s = Seed(possible=2, flags=3)   # no MIBs
    for _ in range(70):
        s.alloc(1, 7, 0)
    for _ in range(70):
        s.free(0)
    s.alloc(7, 0, 0).alloc(5, 2000, ALIGN_PAGE)
    seeds["slab_fill_then_large"] = s.b

    s = Seed(possible=2, flags=3)
    for k in range(6):
        s.alloc(5, 500, 0)
    s.free(1).free(2).free(1).alloc(5, 1400, 0).alloc(7, 0, 0)
    seeds["extent_coalesce"] = s.b

    s = Seed(bad_shape=5, bad_unit=4)
    s.alloc(1, 1, 0)
    seeds["create_bad_args"] = s.b

    for name, data in seeds.items():
        with open(os.path.join(OUT, "seed-" + name), "wb") as f:
            f.write(bytes(data))
    print("wrote %d seeds to %s" % (len(seeds), OUT))


if __name__ == "__main__":
    main()
