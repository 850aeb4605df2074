/* jit.h: the runtime half of ctriton in C, the one interface of jit/
 * (except the CUDA driver loader, cuda.h): the compile driver, SHA-256 and
 * the on-disk cache. The Python bindings (python/src/runtime.c) call these;
 * nothing here knows about Python.
 *
 * Sections follow the source files: sha256.c, cache.c, compile.c.
 */
#ifndef CTRITON_JIT_H
#define CTRITON_JIT_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* ------------------------------------------------------------------------- */
/* SHA-256 (sha256.c)                                                        */
/* ------------------------------------------------------------------------- */

typedef struct JitSha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t nbuf;
} JitSha256;

void jit_sha256_init(JitSha256 *s);
void jit_sha256_update(JitSha256 *s, const void *data, size_t n);
void jit_sha256_final(JitSha256 *s, uint8_t out[32]);
/* Lower-case hex digest of data into out (65 bytes with the NUL). */
void jit_sha256_hex(const void *data, size_t n, char out[65]);

/* ------------------------------------------------------------------------- */
/* On-disk cache (cache.c)                                                   */
/* ------------------------------------------------------------------------- */

/* An entry is a directory <root>/<key>/ holding one file per blob and a
 * MANIFEST, written last, that lists every blob with its length and
 * SHA-256. Entries are written under a temporary name and renamed into place,
 * so readers see a whole entry or none, and concurrent writers of the same
 * key both succeed (the first rename wins, the other's copy is dropped). */

typedef struct JitBlob {
	char name[32]; /* "ttir", "ptx", "cubin", "meta", ... */
	void *data;    /* malloc'ed, NUL-terminated one past len */
	size_t len;
} JitBlob;

enum {
	JIT_CACHE_HIT = 0,
	JIT_CACHE_MISS = -1,    /* no entry */
	JIT_CACHE_CORRUPT = -2, /* an entry whose files fail their checksums */
};

/* The cache root: $CTRITON_CACHE_DIR, else $HOME/.cache/ctriton (malloc'ed). */
char *jit_cache_root(void);
/* Reads entry key under root. On a hit *blobs (malloc'ed, free with
 * jit_blobs_free) and *n are set. A corrupt entry is removed. */
int jit_cache_get(const char *root, const char *key, JitBlob **blobs, int *n);
/* Writes an entry; 0 on success, -1 with errbuf set. An existing entry of
 * the same key is kept (same key, same contents). */
int jit_cache_put(const char *root, const char *key, const JitBlob *blobs, int n, char *errbuf,
		  int errlen);
void jit_blobs_free(JitBlob *blobs, int n);

/* ------------------------------------------------------------------------- */
/* Compile driver (compile.c)                                                */
/* ------------------------------------------------------------------------- */

typedef enum JitBackend {
	JIT_BACKEND_CPU = 0,
	JIT_BACKEND_CUDA = 1,
} JitBackend;

typedef struct JitTarget {
	JitBackend backend;
	int arch;      /* cuda: 80, 90; cpu: 0 */
	int warp_size; /* cuda: 32; cpu: 1 */
} JitTarget;

/* What a compilation produced; every pointer malloc'ed and owned here. */
typedef struct JitKernel {
	char *name;        /* the kernel's symbol */
	char *ttir;        /* verified TTIR, printer text (or the input text) */
	char *ttgir;       /* cuda */
	char *llir;        /* LLVM IR */
	char *ptx;         /* cuda */
	char *asm_;        /* cpu: host assembly */
	void *cubin;       /* cuda, when ptxas was found */
	size_t cubin_len;
	char *sig;         /* the kernel's parameter types, ','-separated ("*fp32,i32") */
	int shared;        /* bytes of dynamic shared memory */
	int num_warps;
	int n_regs;        /* from ptxas -v; -1 when unknown */
	int n_spills;
	BeCpuKernel *cpu;  /* cpu: the jitted code */
} JitKernel;

/* Which stages to run: up to the backend's last, or stop after TTIR. */
enum {
	JIT_STOP_TTIR = 1, /* parse + verify only (compile-only without a backend) */
};

/* Compiles TTIR text for target: parse, verify, then the backend. Returns
 * NULL, or a malloc'ed "file:line:col: message" (out then holds whatever
 * stages succeeded). */
char *jit_compile(const char *ttir, const char *filename, const BeOptions *opt,
		  const JitTarget *target, int flags, JitKernel *out);
/* Assembles PTX into a cubin with ptxas ($CTRITON_PTXAS_PATH, the CUDA
 * toolkit, or PATH); 0 on success, 1 when ptxas is absent, -1 on an error
 * (message in errbuf). Fills k->cubin, n_regs, n_spills. */
int jit_ptxas(JitKernel *k, int arch, char *errbuf, int errlen);
void jit_kernel_free(JitKernel *k);

#endif
