#!/usr/bin/env python3
"""relacy_diff.py's reading of Relacy's printed history
(relacy_history_broken): which failing histories it sets apart as no
execution of the program, on canned outputs of Relacy."""
import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    'relacy_diff', os.path.join(HERE, 'relacy_diff.py'))
relacy_diff = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(relacy_diff)

HEAD = 'P0\nDESTROYING OWNED MUTEX\niteration: 7\n\nexecution history (9):\n'
TAIL = '\nthread 0:\n[0] 0: [CTOR BEGIN], in fiber_proc_impl\n'


def history(*events):
    return HEAD + ''.join('[%d] %s\n' % (k, e) for k, e in enumerate(events))


class HistoryBroken(unittest.TestCase):

    def judge(self, output):
        return relacy_diff.relacy_history_broken(output)

    def test_thread_acting_after_it_finished(self):
        # Relacy's seed-493 P13 (docs/verification.md, "Differences left").
        self.assertTrue(self.judge(history(
            '2: <0x1> mutex: exclusive lock, in thread, p.cpp(7)',
            '2: <0x1> mutex: exclusive unlock, in thread, p.cpp(8)',
            '2: [THREAD FINISHED], in fiber_proc_impl',
            '2: <0x2> fetch_or , prev=1, arg=2, new=3, in thread, p.cpp(5)',
            '0: [DTOR BEGIN], in fiber_proc_impl') + TAIL))

    def test_thread_acting_after_after_began(self):
        self.assertTrue(self.judge(history(
            '1: [THREAD FINISHED], in fiber_proc_impl',
            '0: [THREAD FINISHED], in fiber_proc_impl',
            '0: [AFTER BEGIN], in fiber_proc_impl',
            '2: <0x3> semaphore: post, in thread, p.cpp(12)') + TAIL))

    def test_after_and_verdict_on_the_last_fiber(self):
        # Relacy runs after() and reports on the fiber that ran last, under
        # that thread's number: not broken.
        self.assertFalse(self.judge(history(
            '0: [THREAD FINISHED], in fiber_proc_impl',
            '1: <0x2> atomic store, value=1, in thread, p.cpp(9)',
            '1: [THREAD FINISHED], in fiber_proc_impl',
            '1: [AFTER BEGIN], in fiber_proc_impl',
            '1: <0x2> atomic load, value=1, in after, p.cpp(20)',
            '1: memory deallocation: addr=0x4, in , (0)',
            '1: [DTOR BEGIN], in fiber_proc_impl',
            '1: MEMORY LEAK (memory leak detected), in fiber_proc_impl')
            + TAIL))
        self.assertFalse(self.judge(history(
            '1: [THREAD FINISHED], in fiber_proc_impl',
            '1: DEADLOCK (deadlock detected), in fiber_proc_impl') + TAIL))
        self.assertFalse(self.judge(history(
            '2: [THREAD FINISHED], in fiber_proc_impl',
            '2: unblocking thread 1, in on_finish, dyn_thread_ctx.hpp(60)')
            + TAIL))

    def test_only_the_last_iteration_is_judged(self):
        # An earlier iteration's thread 1 ends, the next one's runs again.
        self.assertFalse(self.judge(history(
            '1: [THREAD FINISHED], in fiber_proc_impl',
            '-1: ITERATION END, in simulate2',
            '1: <0x2> atomic store, value=1, in thread, p.cpp(9)',
            '1: [THREAD FINISHED], in fiber_proc_impl') + TAIL))
        self.assertTrue(self.judge(history(
            '-1: ITERATION END, in simulate2',
            '1: [THREAD FINISHED], in fiber_proc_impl',
            '1: <0x2> atomic store, value=1, in thread, p.cpp(9)') + TAIL))

    def test_no_history(self):
        self.assertFalse(self.judge('P0\nSUCCESS\n'))


if __name__ == '__main__':
    unittest.main(argv=sys.argv[:1])
