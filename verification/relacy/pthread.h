// Relacy's "relacy/pthread.h": the POSIX shims (pthread_mutex_t,
// pthread_cond_t, pthread_rwlock_t, sem_t, pthread_create, the Linux
// futex(), ...), which live in relacy_std.hpp here.
#ifndef PERCPU_VERIFICATION_RELACY_PTHREAD_H_
#define PERCPU_VERIFICATION_RELACY_PTHREAD_H_
#include "relacy_std.hpp"
#endif  // PERCPU_VERIFICATION_RELACY_PTHREAD_H_
