/* launch.c: runs a compiled kernel over its grid. A pool of pthreads, one
 * per core less the caller, is created at the first launch and kept; each
 * launch publishes a job (kernel, params, grid) and every participant,
 * the calling thread included, takes chunks of linear program ids from an
 * atomic counter and calls the kernel's entry on them. Each participant
 * owns a scratch buffer (the kernel's block values) that grows as needed.
 *
 * Hand-off: a launch publishes one atomic word (generation << 16 | number
 * of participants). Workers spin on it for a short while after each job
 * (back-to-back launches then start without a wake-up through the kernel),
 * then sleep on a condition variable; the caller likewise spins briefly for
 * the last worker before sleeping.
 *
 * Launches are serialized by a mutex, so several Python threads may launch
 * at once. A failed device assert longjmps back to its participant, which
 * stops; the others stop at their next chunk and the launch reports the
 * first message.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu.h"

typedef struct Slot {
	CpuWorker w;
	void *scratch;
	int64_t cap;
} Slot;

enum { SPIN = 4000 }; /* polls (with a pause) before sleeping */

static struct {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	int nslots; /* pool threads + the caller (slot 0) */
	Slot *slots;
	_Atomic uint64_t word; /* generation << 16 | participants */
	atomic_int pending; /* workers of the current job still running */
	int sleepers;       /* workers waiting on `work` (under mu) */
	/* the job */
	BeCpuKernel *k;
	void **params;
	int grid[3];
	int total, chunk;
	atomic_int next;
	CpuLaunch launch;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static pthread_mutex_t launch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static bool slot_reserve(Slot *s, int64_t bytes)
{
	if (bytes < 64)
		bytes = 64;
	if (s->cap >= bytes)
		return true;
	free(s->scratch);
	s->cap = 0;
	size_t n = ((size_t)bytes + 63) & ~(size_t)63;
	s->scratch = aligned_alloc(64, n);
	if (!s->scratch)
		return false;
	s->cap = bytes;
	return true;
}

/* Runs chunks until the grid is done or something failed. */
static void run_chunks(Slot *s)
{
	s->w.launch = &pool.launch;
	if (setjmp(s->w.jb))
		return;
	BeCpuKernel *k = pool.k;
	while (!atomic_load(&pool.launch.failed)) {
		int start = atomic_fetch_add(&pool.next, pool.chunk);
		if (start >= pool.total)
			break;
		int end = start + pool.chunk < pool.total ? start + pool.chunk : pool.total;
		k->entry(pool.params, start, end, pool.grid[0], pool.grid[1], pool.grid[2], s->scratch, &s->w);
	}
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg)
{
	int idx = (int)(intptr_t)arg;
	uint64_t seen = 0;
	for (;;) {
		uint64_t w = atomic_load_explicit(&pool.word, memory_order_acquire);
		for (int i = 0; i < SPIN && w == seen; i++) {
			cpu_relax();
			w = atomic_load_explicit(&pool.word, memory_order_acquire);
		}
		if (w == seen) {
			pthread_mutex_lock(&pool.mu);
			pool.sleepers++;
			while ((w = atomic_load(&pool.word)) == seen)
				pthread_cond_wait(&pool.work, &pool.mu);
			pool.sleepers--;
			pthread_mutex_unlock(&pool.mu);
		}
		seen = w;
		if (idx >= (int)(w & 0xffff))
			continue;
		run_chunks(&pool.slots[idx]);
		if (atomic_fetch_sub(&pool.pending, 1) == 1) {
			pthread_mutex_lock(&pool.mu);
			pthread_cond_signal(&pool.done);
			pthread_mutex_unlock(&pool.mu);
		}
	}
	return NULL;
}

static void pool_init(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	if (n > 256)
		n = 256;
	pool.slots = calloc((size_t)n, sizeof(Slot));
	if (!pool.slots)
		abort();
	pool.nslots = 1;
	for (long i = 1; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker_main, (void *)(intptr_t)i) != 0)
			break;
		pthread_detach(t);
		pool.nslots++;
	}
}

int be_cpu_launch(BeCpuKernel *k, const int grid[3], void **params, int nthreads, char *errbuf,
		  int errlen)
{
	if (errbuf && errlen > 0)
		errbuf[0] = 0;
	if (!k) {
		if (errbuf && errlen > 0)
			snprintf(errbuf, (size_t)errlen, "cpu launch: no kernel");
		return -1;
	}
	int64_t total = 1;
	for (int d = 0; d < 3; d++) {
		if (grid[d] < 0) {
			if (errbuf && errlen > 0)
				snprintf(errbuf, (size_t)errlen, "cpu launch: negative grid size");
			return -1;
		}
		total *= grid[d];
	}
	if (total == 0)
		return 0;
	if (total > INT32_MAX) {
		if (errbuf && errlen > 0)
			snprintf(errbuf, (size_t)errlen, "cpu launch: grid of %lld programs is too large",
				 (long long)total);
		return -1;
	}
	pthread_once(&pool_once, pool_init);
	pthread_mutex_lock(&launch_mu);
	int active = nthreads > 0 && nthreads < pool.nslots ? nthreads : pool.nslots;
	if (active > total)
		active = (int)total;
	for (int i = 0; i < active; i++) {
		if (!slot_reserve(&pool.slots[i], k->scratch)) {
			pthread_mutex_unlock(&launch_mu);
			if (errbuf && errlen > 0)
				snprintf(errbuf, (size_t)errlen, "cpu launch: out of memory for %lld bytes of scratch",
					 (long long)k->scratch);
			return -1;
		}
	}
	pool.k = k;
	pool.params = params;
	memcpy(pool.grid, grid, sizeof pool.grid);
	pool.total = (int)total;
	int chunk = (int)(total / ((int64_t)active * 8));
	pool.chunk = chunk < 1 ? 1 : chunk;
	atomic_store(&pool.next, 0);
	atomic_store(&pool.launch.failed, 0);
	pool.launch.msg[0] = 0;
	pool.launch.k = k;
	pool.launch.params = params;
	pool.launch.ext = k->sanitize ? (const uint64_t *)params[k->nparams] : NULL;
	if (active > 1) {
		atomic_store(&pool.pending, active - 1);
		pthread_mutex_lock(&pool.mu);
		uint64_t gen = (atomic_load(&pool.word) >> 16) + 1;
		atomic_store_explicit(&pool.word, (gen << 16) | (uint64_t)active, memory_order_release);
		if (pool.sleepers)
			pthread_cond_broadcast(&pool.work);
		pthread_mutex_unlock(&pool.mu);
	}
	run_chunks(&pool.slots[0]);
	if (active > 1) {
		for (int i = 0; i < SPIN && atomic_load(&pool.pending) > 0; i++)
			cpu_relax();
		if (atomic_load(&pool.pending) > 0) {
			pthread_mutex_lock(&pool.mu);
			while (atomic_load(&pool.pending) > 0)
				pthread_cond_wait(&pool.done, &pool.mu);
			pthread_mutex_unlock(&pool.mu);
		}
	}
	int rc = 0;
	if (atomic_load(&pool.launch.failed)) {
		if (errbuf && errlen > 0)
			snprintf(errbuf, (size_t)errlen, "%s", pool.launch.msg);
		rc = -1;
	}
	pthread_mutex_unlock(&launch_mu);
	return rc;
}
