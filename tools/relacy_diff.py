#!/usr/bin/env python3
"""Runs generated Relacy programs side by side: real Relacy against this
project's checker, each under sched_full, and prints every program whose
verdicts differ.

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
                       [--workdir DIR] [--timeout SECONDS] [--keep]

Exit status: 0 if no program got different verdicts, 1 otherwise. Two
different failures (a program with a race and a deadlock, say) are listed
but count only with --strict: which one a search meets first depends on
its order, which this checker does not copy from Relacy's. A
program Relacy's full search does not decide within the timeout (its
search is exhaustive over interleavings, so three threads with condition
variables can take it minutes) is listed, not compared.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

MO_LOAD = ['relaxed', 'acquire', 'seq_cst']
MO_STORE = ['relaxed', 'release', 'seq_cst']
MO_RMW = ['relaxed', 'acquire', 'release', 'acq_rel', 'seq_cst']
MO_FENCE = ['acquire', 'release', 'acq_rel', 'seq_cst']


class Generator:
    """Random statements for one program; locals get unique names."""

    def __init__(self, rng):
        self.rng = rng
        self.next_local = 0

    def local(self, locals_):
        self.next_local += 1
        name = 'r%d' % self.next_local
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

    def program(self, idx):
        rng = self.rng
        n_threads = rng.choice([2, 2, 2, 3])
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

def source(n, seed, posix):
    rng = random.Random(seed)
    gen = PosixGenerator(rng) if posix else Generator(rng)
    out = ['// Generated by tools/relacy_diff.py --programs %d --seed %d%s.' %
           (n, seed, ' --posix' if posix else '')]
    if posix:  # relacy_std.hpp first: it replaces the standard headers
        out += ['#include "relacy/relacy_std.hpp"', '#include <cstdio>',
                '#include <cstdlib>', '']
    else:
        out += ['#include <cstdio>', '#include <cstdlib>',
                '#include "relacy/relacy.hpp"', '']
    out += [gen.program(i) for i in range(n)]
    out += ['', 'template <typename T>', 'void Run(int i) {',
            '  rl::test_params p;', '  p.search_type = rl::sched_full;',
            '  p.output_history = false;',
            '#ifndef RL_REAL', '  p.print_summary = false;', '#endif',
            '  rl::simulate<T>(p);',
            '  std::printf("P%d %s\\n", i, '
            'rl::test_result_str(p.test_result));',
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


def verdict(binary, i, timeout):
    try:
        out = subprocess.run([binary, str(i)], capture_output=True,
                             text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        return '(no verdict in %d s)' % timeout
    for line in out.splitlines():
        if line.startswith('P%d ' % i):
            return line.split(' ', 1)[1]
    return '(no verdict: exited without one)'


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
    ap.add_argument('--posix', action='store_true',
                    help='relacy_std.hpp programs with the POSIX shims')
    ap.add_argument('--keep', action='store_true',
                    help='keep the scratch directory')
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cxx = os.environ.get('CXX', 'g++')
    work = args.workdir or tempfile.mkdtemp(prefix='relacy_diff_')
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, 'programs.cpp')
    with open(src, 'w') as f:
        f.write(source(args.programs, args.seed, args.posix))
    real = os.path.join(work, 'real')
    ours = os.path.join(work, 'ours')
    engine = os.path.join(work, 'engine.o')
    build([cxx, '-O1', '-w', '-DRL_REAL', '-I', args.relacy, src, '-o', real],
          real + '.build')
    build([cxx, '-std=c++20', '-O2', '-c', '-I', root + '/verification',
           '-I', root, root + '/verification/internal/engine.cc', '-o',
           engine], engine + '.build')
    build([cxx, '-std=c++20', '-O1', '-w', '-I', root + '/verification',
           '-I', root, src, engine, '-o', ours], ours + '.build')
    same = differ = 0
    undecided = []  # Relacy's full search gave no verdict in time
    other_first = []  # both failed, each reporting another failure first
    counts = {}
    for i in range(args.programs):
        a = verdict(real, i, args.timeout)
        b = verdict(ours, i, args.timeout)
        if a == b:
            same += 1
            counts[a] = counts.get(a, 0) + 1
        elif a.startswith('(no verdict in') and not b.startswith('('):
            undecided.append('P%d (here %s)' % (i, b))
        elif (not args.strict and 'SUCCESS' not in (a, b) and
              not a.startswith('(') and not b.startswith('(')):
            other_first.append('P%d (Relacy %s, here %s)' % (i, a, b))
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
    if undecided:
        print('not compared, Relacy had no verdict in %d s: %s' %
              (args.timeout, ', '.join(undecided)))
    if not args.keep and not args.workdir and differ == 0:
        shutil.rmtree(work)
    return 0 if differ == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
