// Relacy-style programs written only with relacy_std.hpp's spellings
// (std::atomic, std::mutex, pthread_*, sem_*, malloc), compiled in their own
// translation unit (relacy_std_programs.cc) as a Relacy user would, and run
// by conformance_test. Each returns the verdict of an exhaustive search.
#ifndef PERCPU_VERIFICATION_RELACY_STD_PROGRAMS_H_
#define PERCPU_VERIFICATION_RELACY_STD_PROGRAMS_H_

#include "relacy/relacy.hpp"

namespace relacy_std_programs {

rl::test_result_e RelaxedPublication();    // DATA RACE
rl::test_result_e ReleasePublication();    // SUCCESS
rl::test_result_e StdMutexCounter();       // SUCCESS
rl::test_result_e PthreadMutexCounter();   // SUCCESS
rl::test_result_e PthreadUnlockedCounter();  // DATA RACE
rl::test_result_e SemHandOff();            // SUCCESS
rl::test_result_e SemMissingPost();        // DEADLOCK
rl::test_result_e SemUncheckedWait();      // DATA RACE (EINTR ignored)
rl::test_result_e PthreadCondPredicate();  // SUCCESS
rl::test_result_e PthreadCondNotDestroyed();  // RESOURCE LEAK
rl::test_result_e RwlockCounter();         // SUCCESS
rl::test_result_e RwlockReadersWrite();    // DATA RACE
rl::test_result_e RwlockNotDestroyed();    // RESOURCE LEAK
rl::test_result_e CondTimedWaitAlone();    // SUCCESS
rl::test_result_e CondWaitAlone();         // DEADLOCK
rl::test_result_e MutexTimedLockTimesOut();  // UNTIL CONDITION HIT
rl::test_result_e MutexTimedLockGivesUp();   // SUCCESS
rl::test_result_e MutexTimedLockSelf();      // RECURSION ON NON-RECURSIVE MUTEX
rl::test_result_e MutexTryLockSpelling();  // SUCCESS
rl::test_result_e FutexNoLostWake();       // SUCCESS
rl::test_result_e FutexWakeSynchronizes();  // UNTIL CONDITION HIT
rl::test_result_e FutexInterrupted();      // UNTIL CONDITION HIT
rl::test_result_e FutexNobodyWakes();      // DEADLOCK
rl::test_result_e FutexTimedNobodyWakes();  // SUCCESS
rl::test_result_e FutexWakeOneOfTwo();     // SUCCESS
rl::test_result_e MallocLeak();            // MEMORY LEAK
rl::test_result_e MallocFreed();           // SUCCESS
rl::test_result_e PthreadMutexDestroyedHeld();  // DESTROYING OWNED MUTEX
rl::test_result_e LifecycleMutexNotInit();  // USAGE OF NON INITIALIZED MUTEX
rl::test_result_e LifecycleMutexTwice();    // DOUBLE INITIALIZATION OF MUTEX
rl::test_result_e LifecycleMutexAfterDestroy();  // USAGE OF NON INIT. MUTEX
rl::test_result_e LifecycleCondNotInit();        // ... CONDITION VARIABLE
rl::test_result_e LifecycleSemTwice();           // DOUBLE INIT. OF SEMAPHORE
rl::test_result_e LifecycleSemAfterDestroy();    // ... NON INIT. SEMAPHORE
rl::test_result_e LifecycleReadToWrite();  // ATTEMPT TO UPGRADE SHARED ...
rl::test_result_e LifecycleWriteToRead();  // ATTEMPT TO UPGRADE EXCLUSIVE ...
rl::test_result_e LifecycleInitializersAndReinit();  // SUCCESS
rl::test_result_e CallocLeak();            // MEMORY LEAK
rl::test_result_e CallocZeroed();          // SUCCESS
rl::test_result_e CallocOverflow();        // SUCCESS (null)
rl::test_result_e ReallocMoves();          // SUCCESS
rl::test_result_e ReallocOldFreed();       // DOUBLE FREE
rl::test_result_e ReallocLeak();           // MEMORY LEAK
rl::test_result_e ReallocOfFreed();        // DOUBLE FREE
rl::test_result_e ReallocNullZero();       // SUCCESS

}  // namespace relacy_std_programs

#endif  // PERCPU_VERIFICATION_RELACY_STD_PROGRAMS_H_
