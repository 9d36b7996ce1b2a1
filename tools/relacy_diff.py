#!/usr/bin/env python3
"""Runs generated Relacy programs side by side: real Relacy against this
project's checker, each under sched_full (or each under its random
search), and prints every program whose verdicts differ.

A model checker's worst failure is a silent pass, and the hand-written
conformance suite only covers what someone thought of. This generates
small random programs in the dialect both checkers share (rl::atomic with
every memory order, fences, rl::var, rl::mutex, rl::condition_variable,
yielding spins, RL_ASSERT on values read, branches on them), builds one
file against a Relacy checkout and against verification/relacy/, runs each
program alone under a timeout in both, and compares the verdicts. Nothing
of Relacy is copied into the project: the builds happen in a scratch
directory. A difference is a place to look, not a verdict: Relacy's memory
model is not C++20's in a few documented places (docs/verification.md,
"Differences left").

  tools/relacy_diff.py /path/to/relacy [--programs N] [--seed S]
                       [--posix | --win32 | --heap | --dyn] [--strict]
                       [--search full|random] [--iterations N]
                       [--workdir DIR] [--timeout SECONDS] [--keep]

--search random: each side under its own random search instead
(sched_random with Relacy's default 1000 iterations; a fixed seed per
program here), as a Relacy test that sets no search runs. The samples
differ, so only a failure Relacy's run meets and this one's misses
counts as a difference (a silent pass where a Relacy user relied on the
default); a failure only this checker's run meets is listed apart.

--posix, --win32: relacy_std.hpp programs with the POSIX or the Win32
shims. --dyn: threads start and join rl::dyn_threads. --heap: programs
that publish nodes through an atomic pointer, read them and delete them
(the heap model). A free that an earlier access by another thread does
not happen before, or an access the free does not happen before, is a
C++20 data race this checker reports and Relacy may miss: such programs
are listed apart when Relacy passes.

Exit status: 0 if no program got different verdicts, 1 otherwise. Two
different failures (a program with a race and a deadlock, say) are listed
but count only with --strict: which one a search meets first depends on
its order, which this checker does not copy from Relacy's. A
program Relacy's full search does not decide within the timeout (its
search is exhaustive over interleavings, so three threads with condition
variables can take it minutes) is listed, not compared. A failure found
here where Relacy's full search passes is built and run once more with
Relacy's own random search (100,000 iterations) in place of its full
one: the same failure there is Relacy confirming it (its full search
missed it), listed apart and not counted. A failure Relacy's full search
reports and this checker does not, whose history in Relacy's own output
is no execution (an event of a thread's thread() code after its [THREAD
FINISHED], or after after() began), is listed apart and not counted where
Relacy's own random search passes too: Relacy's scheduler went wrong
(seen with timed waits).
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

# This checker's trace lines for a free (or end of lifetime) and an access
# by another thread that happens-before does not order: a C++20 data race
# (docs/verification.md, `smr` in "Relacy's examples side by side").
# Relacy does not look for the first two, and it finds the third only
# through a stale read, never by running the free between a thread's
# atomic load and its plain access (it schedules only at atomic
# operations). Relacy may pass such a program.
FREE_RACE_TRACES = ('is not ordered before its destruction',
                    'is not ordered before the free',
                    'does not happen before this access (they race)')
FREE_RACE_TAG = ' (a free racing with an access)'
# A failing trace with an acquire read that C++11's release sequences
# would have synchronized and C++20's do not (P0982): Relacy follows
# C++11 (its own modification_order_test).
P0982_TRACE = '(P0982; Relacy follows C++11)'
P0982_TAG = ' (a C++11-only release sequence)'
# The yield in a counted retry loop (SpinGenerator), a macro of the count
# so that Relacy can be built without it for the first 3 tries (the most a
# program asks about), yielding after those so that an unbounded spin's
# endless branch stays a yielding one (not a LIVELOCK in Relacy).
SPIN_YIELD = 'RL_DIFF_SPIN_YIELD'
# Where Relacy's full search passes and this checker reports a failure,
# Relacy's own random search of the program runs this many iterations; the
# same failure there confirms the one found here (Relacy's full search is
# incomplete with dynamic threads: docs/verification.md, P97 and P54).
RANDOM_CONFIRM_ITERATIONS = 100000

MO_LOAD = ['relaxed', 'acquire', 'seq_cst']
MO_STORE = ['relaxed', 'release', 'seq_cst']
MO_RMW = ['relaxed', 'acquire', 'release', 'acq_rel', 'seq_cst']
MO_FENCE = ['acquire', 'release', 'acq_rel', 'seq_cst']


class Generator:
    """Random statements for one program; locals get unique names."""

    # The dialect: its command-line flag (None: the default one) and help,
    # and its headers: relacy_std.hpp (first, as it replaces standard
    # headers) or relacy.hpp followed by INCLUDES.
    FLAG = None
    HELP = None
    STD_HEADER = False
    INCLUDES = []

    def __init__(self, rng):
        self.rng = rng
        self.next_local = 0

    def fresh(self, prefix):
        """A name no other local of the program has."""
        self.next_local += 1
        return '%s%d' % (prefix, self.next_local)

    def local(self, locals_):
        name = self.fresh('r')
        locals_.append(name)
        return name

    def statement(self, depth, locals_, held, n_mutex):
        rng = self.rng
        k = rng.random()
        a = rng.randrange(2)
        if k < 0.14:
            return ['v%d($) = %d;' % (a, rng.randrange(1, 3))]
        if k < 0.26:
            r = self.local(locals_)
            return ['int %s = v%d($);' % (r, a), '(void)%s;' % r]
        if k < 0.40:
            return ['a%d($).store(%d, rl::memory_order_%s);' %
                    (a, rng.randrange(1, 3), rng.choice(MO_STORE))]
        if k < 0.56:
            r = self.local(locals_)
            return ['int %s = a%d($).load(rl::memory_order_%s);' %
                    (r, a, rng.choice(MO_LOAD)), '(void)%s;' % r]
        if k < 0.64:
            r = self.local(locals_)
            return ['int %s = a%d($).fetch_add(1, rl::memory_order_%s);' %
                    (r, a, rng.choice(MO_RMW)), '(void)%s;' % r]
        if k < 0.67:
            r = self.local(locals_)
            op = rng.choice(['exchange(%d, ' % rng.randrange(1, 3),
                             'fetch_sub(1, ', 'fetch_or(2, '])
            return ['int %s = a%d($).%srl::memory_order_%s);' %
                    (r, a, op, rng.choice(MO_RMW)), '(void)%s;' % r]
        if k < 0.685:
            # An increment by a weak CAS loop (may fail spuriously).
            r = self.local(locals_)
            return ['int %s = a%d($).load(rl::memory_order_relaxed);' % (r, a),
                    'while (!a%d($).compare_exchange_weak(%s, %s + 1, '
                    'rl::memory_order_%s)) {}' % (a, r, r, rng.choice(MO_RMW))]
        if k < 0.70:
            r = self.local(locals_)
            return ['int %s = %d;' % (r, rng.randrange(2)),
                    'a%d($).compare_exchange_strong(%s, %d, '
                    'rl::memory_order_%s);' %
                    (a, r, rng.randrange(1, 3), rng.choice(MO_RMW))]
        if k < 0.76:
            return ['rl::atomic_thread_fence(rl::memory_order_%s, $);' %
                    rng.choice(MO_FENCE)]
        if k < 0.86 and depth < 2 and n_mutex > 0:
            m = rng.randrange(n_mutex)
            if m not in held:
                body = []
                for _ in range(rng.randrange(1, 3)):
                    body += self.statement(depth + 1, locals_, held | {m},
                                           n_mutex)
                return (['m%d.lock($);' % m] + ['  ' + b for b in body] +
                        ['m%d.unlock($);' % m])
        if k < 0.94 and locals_ and depth < 2:
            r = rng.choice(locals_)
            body = []
            inner = list(locals_)  # names declared inside stay inside
            for _ in range(rng.randrange(1, 3)):
                body += self.statement(depth + 1, inner, held, n_mutex)
            return (['if (%s == %d) {' % (r, rng.randrange(3))] +
                    ['  ' + b for b in body] + ['}'])
        if k < 0.955:
            return ['while (a%d($).load(rl::memory_order_%s) == 0) '
                    'rl::yield(1, $);' % (a, rng.choice(MO_LOAD))]
        if k < 0.975 and n_mutex > 0 and not held:
            return ['m0.lock($);', '  while (w($) == 0) cv.wait(m0, $);',
                    'm0.unlock($);']
        if k < 0.99 and n_mutex > 0 and not held:
            return ['m0.lock($);', '  w($) = 1;',
                    '  cv.%s($);' % rng.choice(['notify_one', 'notify_all']),
                    'm0.unlock($);']
        if locals_:
            return ['RL_ASSERT(%s != %d);' %
                    (rng.choice(locals_), rng.randrange(1, 3))]
        return ['v%d($) = 1;' % a]

    # Members beyond the atomics and vars, their set-up in before() and
    # their ends in after(): the dialect's objects.
    MEMBERS = ['rl::condition_variable cv;']
    SETUP = []
    TEARDOWN = []

    def program(self, idx, n_mutex=None):
        rng = self.rng
        n_threads = rng.choice([2, 2, 2, 3])
        if n_mutex is None:
            n_mutex = rng.choice([0, 1, 2])
        lines = ['struct P%d : rl::test_suite<P%d, %d> {' %
                 (idx, idx, n_threads),
                 '  rl::atomic<int> a0, a1;', '  rl::var<int> v0, v1, w;']
        lines += ['  ' + m for m in self.MEMBERS]
        lines += ['  rl::mutex m%d;' % m for m in range(n_mutex)]
        lines += ['  void before() {',
                  '    a0($) = 0; a1($) = 0; v0($) = 0; v1($) = 0; w($) = 0;']
        lines += ['    ' + x for x in self.SETUP]
        lines += ['  }', '  void thread(unsigned index) {']
        for t in range(n_threads):
            locals_ = []
            body = []
            for _ in range(rng.randrange(2, 5)):
                body += self.statement(0, locals_, frozenset(), n_mutex)
            lines.append('    if (index == %d) {' % t)
            lines += ['      ' + b for b in body]
            lines.append('    }')
        lines.append('  }')
        end = list(self.TEARDOWN)
        if rng.random() < 0.3:
            # A check of the final state, after every thread ended.
            what = rng.choice(['a0($).load(rl::memory_order_relaxed)',
                               'a1($).load(rl::memory_order_relaxed)',
                               'v0($)', 'v1($)'])
            end.insert(0, 'RL_ASSERT(%s != %d);' % (what, rng.randrange(1, 4)))
        if end:
            lines += ['  void after() {'] + ['    ' + x for x in end] + ['  }']
        lines.append('};')
        return '\n'.join(lines)


class PosixGenerator(Generator):
    """The relacy_std.hpp dialect: std::atomic and the POSIX shims
    (pthread mutex, reader-writer lock and condition variable, sem_t)."""

    FLAG = '--posix'
    HELP = 'relacy_std.hpp programs with the POSIX shims'
    STD_HEADER = True
    MEMBERS = ['pthread_mutex_t pm;', 'pthread_cond_t pc;',
               'pthread_rwlock_t rw;', 'sem_t s;']
    SETUP = ['pthread_mutex_init(&pm, 0);', 'pthread_cond_init(&pc, 0);',
             'pthread_rwlock_init(&rw, 0);', 'sem_init(&s, 0, 0);']
    TEARDOWN = ['pthread_mutex_destroy(&pm);', 'pthread_cond_destroy(&pc);',
                'pthread_rwlock_destroy(&rw);', 'sem_destroy(&s);']

    def statement(self, depth, locals_, held, n_mutex):
        rng = self.rng
        k = rng.random()
        if k < 0.55 or depth >= 2:
            return Generator.statement(self, depth, locals_, held, 0)
        if k < 0.65 and 'pm' not in held:
            timed = rng.random() < 0.3
            inner = list(locals_) if timed else locals_  # a block's stay in
            body = []
            for _ in range(rng.randrange(1, 3)):
                body += self.statement(depth + 1, inner, held | {'pm'}, 0)
            if timed:
                return (['if (pthread_mutex_timedlock(&pm, 0) == 0) {'] +
                        ['  ' + b for b in body] +
                        ['  pthread_mutex_unlock(&pm);', '}'])
            return (['pthread_mutex_lock(&pm);'] + ['  ' + b for b in body] +
                    ['pthread_mutex_unlock(&pm);'])
        if k < 0.73 and 'rw' not in held:
            write = rng.random() < 0.5
            body = self.statement(depth + 1, locals_, held | {'rw'}, 0)
            return (['pthread_rwlock_%s(&rw);' % ('wrlock' if write else
                                                  'rdlock')] +
                    ['  ' + b for b in body] + ['pthread_rwlock_unlock(&rw);'])
        if k < 0.79:
            return ['sem_post(&s);']
        if k < 0.85:
            return [rng.choice(['while (sem_wait(&s) != 0) {}',
                                'sem_wait(&s);',
                                'if (sem_trywait(&s) == 0) sem_post(&s);'])]
        if k < 0.92 and 'pm' not in held:
            wait = rng.choice(['pthread_cond_wait(&pc, &pm);',
                               'pthread_cond_timedwait(&pc, &pm, 0);'])
            return ['pthread_mutex_lock(&pm);',
                    '  while (w($) == 0) %s' % wait,
                    'pthread_mutex_unlock(&pm);']
        if 'pm' not in held:
            return ['pthread_mutex_lock(&pm);', '  w($) = 1;',
                    '  pthread_cond_%s(&pc);' %
                    rng.choice(['signal', 'broadcast']),
                    'pthread_mutex_unlock(&pm);']
        return ['v0($) = 1;']

class Win32Generator(Generator):
    """The Win32 shims of relacy_std.hpp: auto- and manual-reset events,
    a semaphore, a critical section, an SRW lock (exclusive and shared),
    waits on one object or on two (any, all), untimed, polled or timed."""

    FLAG = '--win32'
    HELP = ('relacy_std.hpp programs with the Win32 shims (events, '
            'semaphore, critical section, SRW lock)')
    STD_HEADER = True
    MEMBERS = Generator.MEMBERS + [
        'HANDLE ev_auto, ev_manual, sem;', 'HANDLE both[2];',
        'CRITICAL_SECTION cs;', 'SRWLOCK srw;']
    SETUP = ['ev_auto = CreateEvent(0, 0, 0, 0);',
             'ev_manual = CreateEvent(0, 1, 0, 0);',
             'sem = CreateSemaphore(0, 0, 2, 0);',
             'both[0] = ev_auto; both[1] = sem;',
             'InitializeCriticalSection(&cs);', 'InitializeSRWLock(&srw);']
    TEARDOWN = ['CloseHandle(ev_auto);', 'CloseHandle(ev_manual);',
                'CloseHandle(sem);', 'DeleteCriticalSection(&cs);',
                'DeleteSRWLock(&srw);']
    OBJECTS = ['ev_auto', 'ev_manual', 'sem']

    def statement(self, depth, locals_, held, n_mutex):
        rng = self.rng
        k = rng.random()
        if k < 0.5 or depth >= 2:
            return Generator.statement(self, depth, locals_, held, n_mutex)
        if k < 0.58:
            return [rng.choice(['SetEvent(ev_auto);', 'SetEvent(ev_manual);',
                                'ResetEvent(ev_manual);'])]
        if k < 0.64:
            return ['ReleaseSemaphore(sem, 1, 0);']
        if k < 0.76:
            obj = rng.choice(self.OBJECTS)
            timeout = rng.choice(['INFINITE', '0', '1'])
            if timeout == 'INFINITE':
                return ['WaitForSingleObject(%s, INFINITE);' % obj]
            r = self.local(locals_)
            return ['int %s = WaitForSingleObject(%s, %s) == WAIT_OBJECT_0;' %
                    (r, obj, timeout)]
        if k < 0.80:
            r = self.local(locals_)
            return ['int %s = (int)WaitForMultipleObjects(2, both, %s, %s);' %
                    (r, rng.choice(['0', '1']),
                     rng.choice(['INFINITE', '0']))]
        if k < 0.90 and 'cs' not in held:
            body = []
            for _ in range(rng.randrange(1, 3)):
                body += self.statement(depth + 1, locals_, held | {'cs'},
                                       n_mutex)
            return (['EnterCriticalSection(&cs);'] +
                    ['  ' + b for b in body] + ['LeaveCriticalSection(&cs);'])
        if 'srw' not in held:
            mode = rng.choice(['Exclusive', 'Shared'])
            body = self.statement(depth + 1, locals_, held | {'srw'},
                                  n_mutex)
            return (['AcquireSRWLock%s(&srw);' % mode] +
                    ['  ' + b for b in body] +
                    ['ReleaseSRWLock%s(&srw);' % mode])
        return ['SetEvent(ev_manual);']


class HeapGenerator(Generator):
    """The heap model: nodes made with new, published through an atomic
    pointer, read through it, swapped out and deleted (or leaked) by other
    threads. after() deletes the node left."""

    FLAG = '--heap'
    HELP = ('programs that publish, read and delete nodes (the heap model: '
            'leaks, use after free, races on freed memory)')
    MEMBERS = Generator.MEMBERS + ['struct Node { rl::var<int> x; };',
                                   'rl::atomic<Node*> p;']
    SETUP = ['p($) = 0;']
    TEARDOWN = ['delete p($).load(rl::memory_order_relaxed);']

    def statement(self, depth, locals_, held, n_mutex):
        rng = self.rng
        k = rng.random()
        if k < 0.5 or depth >= 2:
            return Generator.statement(self, depth, locals_, held, n_mutex)
        n = self.fresh('n')
        value = rng.randrange(1, 3)
        if k < 0.62:  # publish a node, delete the one it replaces
            return ['{', '  Node* %s = new Node;' % n,
                    '  %s->x($) = %d;' % (n, value),
                    '  delete p($).exchange(%s, rl::memory_order_%s);' %
                    (n, rng.choice(MO_RMW)), '}']
        if k < 0.78:  # read through the published pointer
            r = self.local(locals_)
            return ['int %s = 0;' % r, '{',
                    '  Node* %s = p($).load(rl::memory_order_%s);' %
                    (n, rng.choice(MO_LOAD)),
                    '  if (%s) %s = %s->x($);' % (n, r, n), '}']
        if k < 0.88:  # take the node out and delete it
            return ['{',
                    '  Node* %s = p($).exchange(0, rl::memory_order_%s);' %
                    (n, rng.choice(MO_RMW)),
                    '  if (%s) delete %s;' % (n, n), '}']
        if k < 0.95:  # publish without deleting the replaced node (a leak)
            return ['{', '  Node* %s = new Node;' % n,
                    '  %s->x($) = %d;' % (n, value),
                    '  p($).store(%s, rl::memory_order_%s);' %
                    (n, rng.choice(MO_STORE)), '}']
        # Take it out by a CAS from the value read, then delete it.
        return ['{',
                '  Node* %s = p($).load(rl::memory_order_%s);' %
                (n, rng.choice(MO_LOAD)),
                '  if (%s && p($).compare_exchange_strong(%s, 0, '
                'rl::memory_order_%s)) delete %s;' %
                (n, n, rng.choice(MO_RMW), n), '}']


class DynGenerator(Generator):
    """Dynamic threads (rl::dyn_thread): a thread starts a child that runs
    statements of its own on the suite's members, does more work, and
    joins it (or, now and then, leaves it running to the end)."""

    FLAG = '--dyn'
    HELP = 'threads that start, and mostly join, dynamic threads'
    INCLUDES = ['relacy/dyn_thread.hpp']
    N_CHILDREN = 2

    def program(self, idx):
        rng = self.rng
        # The children's bodies first (their statements use the members);
        # statement() then starts each at most once.
        n_mutex = rng.choice([0, 1, 2])
        self.unused = []  # a child starts no thread
        children = []
        for c in range(self.N_CHILDREN):
            locals_ = []
            body = []
            for _ in range(rng.randrange(1, 4)):
                body += Generator.statement(self, 0, locals_, frozenset(),
                                            n_mutex)
            children.append(['  void child%d() {' % c] +
                             ['    ' + b for b in body] + ['  }',
                             '  static void* Child%d(void* p) {' % c,
                             '    static_cast<P%d*>(p)->child%d();' % (idx, c),
                             '    return 0;', '  }'])
        self.unused = list(range(self.N_CHILDREN))
        text = Generator.program(self, idx, n_mutex)
        extra = ['  static size_t const dynamic_thread_count = %d;' %
                 self.N_CHILDREN]
        for c in children:
            extra += c
        return text.replace('  void before() {',
                            '\n'.join(extra) + '\n  void before() {', 1)

    def statement(self, depth, locals_, held, n_mutex):
        rng = self.rng
        if depth >= 2 or not self.unused or rng.random() >= 0.3:
            return Generator.statement(self, depth, locals_, held, n_mutex)
        c = self.unused.pop(rng.randrange(len(self.unused)))
        d = self.fresh('d')
        body = []
        inner = list(locals_)  # names declared inside stay inside
        for _ in range(rng.randrange(0, 3)):
            body += self.statement(depth + 1, inner, held, n_mutex)
        join = [] if rng.random() < 0.2 else ['  %s.join();' % d]
        return (['{', '  rl::dyn_thread %s;' % d,
                 '  %s.start(&Child%d, this);' % (d, c)] +
                ['  ' + b for b in body] + join + ['}'])


class SpinGenerator(Generator):
    """Retry loops that count their tries, the count kept in an int (a
    register), a double (an FP register where the ABI keeps one across
    calls), a volatile int (the stack), a static local or a thread_local
    (a global): "try N times, then the slow path"
    (N of 2 or 3), or a spin without a bound. After the loop a count from 1
    to 3 (at most N) is asserted against or runs a path of statements, or
    the count is published. A count below N means the loop was left by
    reading the write after exactly that many failed tries: waiting after
    each try it ran on, a stale one included (the writer numbered below
    the spinner). Relacy's full search runs a thread on for at most 3
    failed tries in a row while the writer is late, this checker for
    spin_bound + 2 (6) -- C++20 allows any number -- so a program asks for
    no more than 3: a bound of 4 reached, or two counted loops in a row in
    one thread, gave failures only this checker found (a Relacy miss; the
    first version of this dialect met three). One such loop per program."""

    FLAG = '--spin'
    HELP = 'retry loops that count their tries (bounded spins, slow paths)'
    # A static local or a thread_local (shared by all test threads: both
    # checkers run them on one OS thread) is assigned 0 at each entry.
    COUNT_TYPES = ['int', 'double', 'volatile int', 'static int',
                   'thread_local int']

    def program(self, idx, n_mutex=None):
        self.counted = False
        return Generator.program(self, idx, n_mutex)

    def statement(self, depth, locals_, held, n_mutex):
        rng = self.rng
        if depth >= 2 or self.counted or rng.random() >= 0.3:
            return Generator.statement(self, depth, locals_, held, n_mutex)
        self.counted = True
        c = self.fresh('c')
        cond = 'a%d($).load(rl::memory_order_%s) == 0' % (
            rng.randrange(2), rng.choice(MO_LOAD))
        if rng.random() < 0.5:
            n = rng.choice([2, 3])
            cond += ' && %s < %d' % (c, n)
        else:
            n = 3  # no bound: counts past 3 are checked by nobody
        want = rng.randrange(1, n + 1)
        lines = ['%s %s;' % (rng.choice(self.COUNT_TYPES), c),
                 '%s = 0;' % c, 'while (%s) {' % cond, '  %s = %s + 1;' % (c, c),
                 '  %s(%s);' % (SPIN_YIELD, c), '}']
        k = rng.random()
        if k < 0.4:
            return lines + ['RL_ASSERT(%s != %d);' % (c, want)]
        if k < 0.6:
            return lines + ['a%d($).store(static_cast<int>(%s), '
                            'rl::memory_order_%s);' %
                            (rng.randrange(2), c, rng.choice(MO_STORE))]
        body = []
        inner = list(locals_)  # names declared inside stay inside
        for _ in range(rng.randrange(1, 3)):
            body += Generator.statement(self, depth + 1, inner, held,
                                        n_mutex)
        return (lines + ['if (%s == %d) {' % (c, want)] +
                ['  ' + b for b in body] + ['}'])


DIALECTS = [PosixGenerator, Win32Generator, HeapGenerator, DynGenerator,
            SpinGenerator]


def source(n, seed, dialect=Generator, search='full', iterations=1000):
    gen = dialect(random.Random(seed))
    out = ['// Generated by tools/relacy_diff.py --programs %d --seed %d%s%s.'
           % (n, seed, ' ' + dialect.FLAG if dialect.FLAG else '',
              ' --search random --iterations %d' % iterations
              if search == 'random' else '')]
    if dialect.STD_HEADER:
        out += ['#include "relacy/relacy_std.hpp"', '#include <cstdio>',
                '#include <cstdlib>']
    else:
        out += ['#include <cstdio>', '#include <cstdlib>',
                '#include "relacy/relacy.hpp"']
    out += ['#include "%s"' % h for h in dialect.INCLUDES]
    # A counted loop's yield; main() builds Relacy once more without it to
    # confirm a failure Relacy's yield priority hides (see main()).
    out += ['#ifndef RL_DIFF_NO_SPIN_YIELD',
            '#define %s(count) rl::yield(1, $)' % SPIN_YIELD, '#else',
            '#define %s(count) if ((count) > 3) rl::yield(1, $)' % SPIN_YIELD,
            '#endif']
    # Only on this checker's side (Relacy's header defines `new` as a macro,
    # which a standard header included after it does not survive).
    out += ['#ifndef RL_REAL', '#include <sstream>', '#endif', '']
    out += [gen.program(i) for i in range(n)]
    # This checker's side tags a free that races with an earlier access
    # (its trace says so): main() lists those apart when Relacy passes.
    out += ['', 'template <typename T>', 'void Run(int i) {',
            '  rl::test_params p;']
    if search == 'random':
        # Each side's own random search with Relacy's default length; this
        # checker's seed is fixed per program, so a run repeats.
        out += ['  p.search_type = rl::sched_random;',
                '  p.iteration_count = %d;' % iterations,
                '#ifndef RL_REAL', '  p.seed = 1000 + i;', '#endif']
    else:
        # main() builds Relacy once more with its random search in place of
        # the full one, to confirm a failure Relacy's full search misses.
        out += ['#ifdef RL_DIFF_RANDOM_SEARCH',
                '  p.search_type = rl::sched_random;',
                '  p.iteration_count = RL_DIFF_RANDOM_SEARCH;', '#else',
                '  p.search_type = rl::sched_full;', '#endif']
    out += ['  p.output_history = false;',
            '  const char* tag = "";',
            '#ifndef RL_REAL', '  p.print_summary = false;',
            '  std::ostringstream trace;', '  p.output_history = true;',
            '  p.output_stream = &trace;', '#endif',
            '  rl::simulate<T>(p);',
            '#ifndef RL_REAL',
            '  for (const char* race : {%s})' %
            ', '.join('"%s"' % t for t in FREE_RACE_TRACES),
            '    if (trace.str().find(race) != std::string::npos) tag = "%s";'
            % FREE_RACE_TAG,
            '  if (!*tag && trace.str().find("%s") != std::string::npos)'
            % P0982_TRACE,
            '    tag = "%s";' % P0982_TAG,
            '#endif',
            '  std::printf("P%d %s%s\\n", i, '
            'rl::test_result_str(p.test_result), tag);',
            '}', '',
            'int main(int argc, char** argv) {',
            '  const int only = argc > 1 ? std::atoi(argv[1]) : -1;']
    out += ['  if (only < 0 || only == %d) Run<P%d>(%d);' % (i, i, i)
            for i in range(n)]
    out += ['}', '']
    return '\n'.join(out)


def build(cmd, log):
    with open(log, 'w') as f:
        if subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT) != 0:
            sys.exit('build failed: %s (see %s)' % (' '.join(cmd), log))


def run_program(binary, i, timeout):
    """Program i's output, or None if it ran past the timeout."""
    try:
        return subprocess.run([binary, str(i)], capture_output=True,
                              text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        return None


def verdict_in(out, i, timeout):
    """The verdict line of program i's output (run_program)."""
    if out is None:
        return '(no verdict in %d s)' % timeout
    for line in out.splitlines():
        if line.startswith('P%d ' % i):
            return line.split(' ', 1)[1]
    return '(no verdict: exited without one)'


def verdict(binary, i, timeout):
    return verdict_in(run_program(binary, i, timeout), i, timeout)


def relacy_history_broken(out):
    """Whether Relacy's printed history of a failing execution (out: the
    program's output) has an event of the suite's thread() code (located
    "in thread") after that thread's own [THREAD FINISHED] or after
    after() began: no execution of the program does that. (Relacy's own
    bookkeeping after a thread ends, after() and the verdict line are
    recorded under whichever thread's fiber ran last: not judged.)"""
    # The history's lines: "[k] T: what, in function, file(line)". It may
    # hold earlier iterations too: only the last one, after its last
    # ITERATION END, is judged.
    history = out.split('execution history', 1)
    if len(history) < 2:
        return False
    lines = history[1].split('\n\nthread ', 1)[0].splitlines()
    ends = [k for k, l in enumerate(lines) if 'ITERATION END' in l]
    if ends:
        lines = lines[ends[-1] + 1:]
    finished = set()
    after_began = False
    for line in lines:
        m = re.match(r'\[\d+\] (-?\d+): (.*)', line)
        if not m:
            continue
        tid, what = int(m.group(1)), m.group(2)
        if ', in thread, ' in what and (tid in finished or after_began):
            return True
        if what.startswith('[THREAD FINISHED]'):
            finished.add(tid)
        if what.startswith('[AFTER BEGIN]'):
            after_began = True
    return False


def program_text(programs, i):
    """Program i's suite in the generated source."""
    m = re.search(r'^struct P%d : .*?^};$' % i, programs, re.S | re.M)
    return m.group(0) if m else ''


def has_timed_wait(text):
    """Whether a program waits with a finite, non-zero timeout."""
    return bool(re.search(r'_timed(wait|lock)\(|wait_for\(|wait_until\(|'
                          r'WaitFor\w+\([^;]*, [1-9][0-9]*\)', text))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('relacy', help='a Relacy checkout (dvyukov/relacy)')
    ap.add_argument('--programs', type=int, default=200)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--workdir')
    ap.add_argument('--timeout', type=int, default=60,
                    help='seconds per program and checker')
    ap.add_argument('--strict', action='store_true',
                    help='two different failures count as a difference')
    dialects = ap.add_mutually_exclusive_group()
    for d in DIALECTS:
        dialects.add_argument(d.FLAG, dest='dialect', action='store_const',
                              const=d, default=Generator, help=d.HELP)
    ap.add_argument('--keep', action='store_true',
                    help='keep the scratch directory')
    ap.add_argument('--search', choices=['full', 'random'], default='full',
                    help='both sides under sched_full (default) or each '
                    'under its own random search (sched_random, Relacy\'s '
                    'default test_params)')
    ap.add_argument('--iterations', type=int, default=1000,
                    help='--search random: iterations per program')
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cxx = os.environ.get('CXX', 'g++')
    work = args.workdir or tempfile.mkdtemp(prefix='relacy_diff_')
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, 'programs.cpp')
    programs_text = source(args.programs, args.seed, args.dialect,
                           args.search, args.iterations)
    with open(src, 'w') as f:
        f.write(programs_text)
    real = os.path.join(work, 'real')
    ours = os.path.join(work, 'ours')
    engine = os.path.join(work, 'engine.o')

    relacy_built = set()

    def build_relacy(binary, *defines):
        # Relacy's build of this run's programs, once (a variant on the
        # first program that needs it). Not judged by the file: a reused
        # --workdir holds the binaries of earlier programs.
        if binary not in relacy_built:
            build([cxx, '-O1', '-w', '-DRL_REAL'] + list(defines) +
                  ['-I', args.relacy, src, '-o', binary], binary + '.build')
            relacy_built.add(binary)

    build_relacy(real)
    build([cxx, '-std=c++20', '-O2', '-c', '-I', root + '/verification',
           '-I', root, root + '/verification/internal/engine.cc', '-o',
           engine], engine + '.build')
    build([cxx, '-std=c++20', '-O1', '-w', '-I', root + '/verification',
           '-I', root, src, engine, '-o', ours], ours + '.build')
    same = differ = 0
    undecided = []  # Relacy's full search gave no verdict in time
    other_first = []  # both failed, each reporting another failure first
    free_races = []  # C++20 races on a free that Relacy does not check
    p0982 = []  # failures C++11's longer release sequences hide
    yield_hidden = []  # failures Relacy's yield priority hides
    real_no_yield = os.path.join(work, 'real_no_spin_yield')
    full_missed = []  # failures Relacy's own random search confirms
    timed_starved = []  # Relacy's full-search livelocks of timed waits
    broken_history = []  # Relacy's failing history is no execution
    real_random = os.path.join(work, 'real_random_search')

    def relacy_random_verdict(i):
        # Relacy's own random search of program i (a build of its own).
        build_relacy(real_random, '-DRL_DIFF_RANDOM_SEARCH=%d' %
                     RANDOM_CONFIRM_ITERATIONS)
        return verdict(real_random, i, args.timeout)

    only_here = []  # random: a failure only this checker's search met
    counts = {}
    for i in range(args.programs):
        # Relacy's output is kept: its history may be read below.
        real_out = run_program(real, i, args.timeout)
        a = verdict_in(real_out, i, args.timeout)
        b = verdict(ours, i, args.timeout)
        if a == 'SUCCESS' and b.endswith(FREE_RACE_TAG):
            free_races.append('P%d' % i)
            continue
        if a == 'SUCCESS' and b.endswith(P0982_TAG):
            p0982.append('P%d (%s)' % (i, b[:-len(P0982_TAG)]))
            continue
        for tag in (FREE_RACE_TAG, P0982_TAG):
            b = b[:-len(tag)] if b.endswith(tag) else b
        if (a == 'SUCCESS' and args.search == 'full' and
                args.dialect is SpinGenerator and not b.startswith('(')):
            # Relacy's full search blocks a thread that yields until the
            # others were scheduled (its yield priority), so it never runs
            # a spinner on while the writer is late. Without the counted
            # loop's yield for its first 3 tries it does (a yield is only a
            # scheduling hint; the program's C++ executions are the same):
            # the same failure there confirms one found here, and a
            # failure there that this checker passes is a silent pass.
            build_relacy(real_no_yield, '-DRL_DIFF_NO_SPIN_YIELD')
            c = verdict(real_no_yield, i, args.timeout)
            if b != 'SUCCESS' and c == b:
                yield_hidden.append('P%d (%s)' % (i, b))
                continue
            if b == 'SUCCESS' and c != 'SUCCESS' and not c.startswith('('):
                differ += 1
                print('P%d: Relacy SUCCESS, but %s without the counted '
                      'loop\'s first 3 yields; this checker SUCCESS' % (i, c))
                continue
        if (a == 'SUCCESS' and args.search == 'full' and
                not b.startswith('(') and b != 'SUCCESS'):
            # Relacy's full search is not always complete (with dynamic
            # threads it misses reachable interleavings): where its own
            # random search reports the same failure, Relacy confirms the
            # one found here.
            if relacy_random_verdict(i) == b:
                full_missed.append('P%d (%s)' % (i, b))
                continue
        if (a == 'LIVELOCK' and b == 'SUCCESS' and args.search == 'full' and
                has_timed_wait(program_text(programs_text, i))):
            # Relacy's full search lets a timed wait time out at once at
            # every try, so a thread looping on one can keep a mutex (or
            # the wake of one) from a thread that would end the loop: a
            # starving schedule no fair scheduler keeps to. Here a timeout
            # at once is not taken twice in a row by a thread ("Timed waits
            # end instead of a deadlock"). Where Relacy's own random search
            # passes too, no schedule it samples livelocks.
            if relacy_random_verdict(i) == 'SUCCESS':
                timed_starved.append('P%d' % i)
                continue
        if (b == 'SUCCESS' and args.search == 'full' and a != 'SUCCESS' and
                not a.startswith('(') and
                relacy_history_broken(real_out) and
                relacy_random_verdict(i) == 'SUCCESS'):
            broken_history.append('P%d (Relacy %s)' % (i, a))
            continue
        if a == b:
            same += 1
            counts[a] = counts.get(a, 0) + 1
        elif a.startswith('(no verdict in') and not b.startswith('('):
            undecided.append('P%d (here %s)' % (i, b))
        elif (not args.strict and 'SUCCESS' not in (a, b) and
              not a.startswith('(') and not b.startswith('(')):
            other_first.append('P%d (Relacy %s, here %s)' % (i, a, b))
        elif (args.search == 'random' and a == 'SUCCESS' and
              not b.startswith('(')):
            # Samples differ: a failure Relacy's run missed is no silent
            # pass here (the other direction is, and counts).
            only_here.append('P%d (%s)' % (i, b))
        else:
            differ += 1
            print('P%d: Relacy %s, this checker %s' % (i, a, b))
    print('%d of %d programs got the same verdict (%s); programs in %s' %
          (same, args.programs,
           ', '.join('%s %d' % kv for kv in sorted(counts.items())), src))
    if other_first:
        print('both failed, each reporting another failure first (a program '
              'with two bugs: the searches take different paths; --strict '
              'counts these): %s' % ', '.join(other_first))
    if free_races:
        print('C++20-correct here, not compared: a free and an access by '
              'another thread that happens-before does not order (a data '
              'race on freed memory; Relacy passes): %s' %
              ', '.join(free_races))
    if p0982:
        print('C++20-correct here, not compared: an acquire read that '
              'C++11\'s release sequence (Relacy\'s) synchronizes and '
              'C++20\'s does not (P0982): %s' % ', '.join(p0982))
    if yield_hidden:
        print('C++20-reachable here, not compared: Relacy\'s full search '
              'passes, and reports the same failure once the counted '
              'loop\'s first 3 rl::yields are taken out (its yield '
              'priority never runs the spinner on while the other thread '
              'is late): %s' %
              ', '.join(yield_hidden))
    if full_missed:
        print('C++20-reachable here, not compared: Relacy\'s full search '
              'passes, and Relacy\'s own random search (%d iterations) '
              'reports the same failure (its full search missed it): %s' %
              (RANDOM_CONFIRM_ITERATIONS, ', '.join(full_missed)))
    if timed_starved:
        print('not compared: Relacy\'s full search reports LIVELOCK through '
              'timed waits that time out at once at every try (a thread '
              'starves), its own random search (%d iterations) passes, and '
              'here a timeout at once is not taken twice in a row: %s' %
              (RANDOM_CONFIRM_ITERATIONS, ', '.join(timed_starved)))
    if broken_history:
        print('not compared: Relacy\'s full search reports a failure whose '
              'printed history is no execution (a thread\'s thread() code '
              'runs after its [THREAD FINISHED] or after after() began), '
              'and its own random search (%d iterations) passes: %s' %
              (RANDOM_CONFIRM_ITERATIONS, ', '.join(broken_history)))
    if only_here:
        print('random searches: a failure only this checker\'s run met '
              '(Relacy\'s run passed): %s' % ', '.join(only_here))
    if undecided:
        print('not compared, Relacy had no verdict in %d s: %s' %
              (args.timeout, ', '.join(undecided)))
    if not args.keep and not args.workdir and differ == 0:
        shutil.rmtree(work)
    return 0 if differ == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
