/* cache.c: the on-disk kernel cache. An entry is one file named by its key
 * (a SHA-256 in hex), a text header followed by the blobs back to back:
 *
 *     ctriton-cache 4
 *     key <key>                      the entry's own key
 *     <name> <length> <check>        one line per blob, in file order
 *     end <check of the header lines above>
 *     <blob bytes>...
 *
 * A <check> is a 64-bit hash (16 hex digits) of the bytes, enough to catch
 * torn, truncated or edited files (the key, not the check, names the
 * contents). Writers write a private temporary file (mode 0600, named
 * tmp.<key>.<host>.<pid>.<n>) and rename it into place (atomic on POSIX;
 * the same key always holds the same contents, so the last rename winning
 * is fine). A reader trusts nothing it has not checked: a truncated,
 * extended or edited entry, or one whose header names another key (a file
 * copied or renamed), reads as corrupt and is removed, never loaded. A hit
 * reads the header and then only the blobs asked for (a launch needs the
 * metadata and the cubin, not the IR texts of every stage), each checked
 * before it is returned: one pread for the header and what follows it in
 * the first 16 KB, one for each blob asked for beyond.
 *
 * The directory is created 0700, and a directory owned by another user is
 * not used at all (its entries could be anyone's). A writer killed before
 * its rename leaves its temporary file behind; the next writer on the same
 * host removes the temporary files of processes that no longer exist.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jit/jit.h"

#define MAGIC "ctriton-cache 4\n"

/* A 64-bit hash, four independent multiply-rotate lanes over 32-byte
 * stripes, then the tail bytes and a final avalanche. Several GB/s, which
 * keeps checking a hit far below the cost of reading it. */
static uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t load64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

#define K1 0x9fb21c651e98df25ULL
#define K2 0xc2b2ae3d27d4eb4fULL
#define K3 0x165667b19e3779f9ULL

static uint64_t lane(uint64_t acc, uint64_t v)
{
	return rotl64(acc ^ (v * K2), 29) * K1;
}

static uint64_t check64_seeded(const void *data, size_t n, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t a = K1 ^ n ^ seed, b = K2 + n + seed, c = K3 - n - seed, d = ~n ^ seed;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		a = lane(a, load64(p + i));
		b = lane(b, load64(p + i + 8));
		c = lane(c, load64(p + i + 16));
		d = lane(d, load64(p + i + 24));
	}
	uint64_t h = rotl64(a, 1) + rotl64(b, 17) + rotl64(c, 33) + rotl64(d, 49);
	for (; i + 8 <= n; i += 8)
		h = rotl64(h ^ (load64(p + i) * K3), 31) * K1 + K2;
	for (; i < n; i++)
		h = rotl64(h ^ (p[i] * K1), 11) * K2;
	h ^= h >> 33;
	h *= K2;
	h ^= h >> 29;
	h *= K3;
	h ^= h >> 32;
	return h;
}

static uint64_t check64(const void *data, size_t n)
{
	return check64_seeded(data, n, 0);
}

/* Two seeds of check64 and the length: 128 bits that tell contents apart
 * (not against an adversary: anyone who can write the cache can write its
 * entries), at several GB/s where SHA-256 does 0.3. */
void jit_content_key(const void *data, size_t n, char out[JIT_CONTENT_KEY_SIZE])
{
	snprintf(out, JIT_CONTENT_KEY_SIZE, "%016llx%016llx-%zx",
		 (unsigned long long)check64_seeded(data, n, 0x6a09e667f3bcc908ULL),
		 (unsigned long long)check64_seeded(data, n, 0xbb67ae8584caa73bULL), n);
}

char *jit_cache_root(void)
{
	const char *d = getenv("CTRITON_CACHE_DIR");
	char buf[4096];
	if (d && *d)
		return strdup(d);
	const char *home = getenv("HOME");
	snprintf(buf, sizeof buf, "%s/.cache/ctriton", home && *home ? home : "/tmp");
	return strdup(buf);
}

/* mkdir -p. */
static int mkdirs(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0700) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* A key is a plain file name: letters, digits, '-' and '_'. */
static int valid_key(const char *k)
{
	size_t n = strlen(k);
	if (n == 0 || n > 128)
		return 0;
	for (; *k; k++)
		if (!((*k >= '0' && *k <= '9') || (*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      *k == '-' || *k == '_'))
			return 0;
	return 1;
}

/* 1 when root exists and belongs to another user: not to be used. */
static int foreign_dir(const char *root)
{
	struct stat st;
	return stat(root, &st) == 0 && st.st_uid != geteuid();
}

/* Removes the temporary files that writers on this host left behind when
 * they died before renaming them (tmp.<key>.<host>.<pid>.<n>). */
static void remove_orphans(const char *root, const char *host)
{
	DIR *d = opendir(root);
	if (!d)
		return;
	size_t hl = strlen(host);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "tmp.", 4) != 0)
			continue;
		const char *h = strchr(e->d_name + 4, '.'); /* after the key */
		if (!h || strncmp(h + 1, host, hl) != 0 || h[1 + hl] != '.')
			continue;
		char *end;
		long pid = strtol(h + 2 + hl, &end, 10);
		if (pid <= 0 || *end != '.' || pid == (long)getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue; /* alive, or not ours to ask */
		char path[4600];
		snprintf(path, sizeof path, "%s/%s", root, e->d_name);
		unlink(path);
	}
	closedir(d);
}

void jit_blobs_free(JitBlob *blobs, int n)
{
	for (int i = 0; i < n; i++)
		free(blobs[i].data);
	free(blobs);
}

/* A blob name must be a plain file name. */
static int valid_name(const char *s)
{
	if (!*s || !strcmp(s, "end") || s[0] == '.')
		return 0;
	for (; *s; s++)
		if (*s == '/' || *s == ' ' || *s == '\n')
			return 0;
	return 1;
}

/* Reads exactly len bytes at off; 0 on success. */
static int read_at(int fd, void *dst, size_t len, off_t off)
{
	char *p = dst;
	while (len) {
		ssize_t got = pread(fd, p, len, off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		off += got;
		len -= (size_t)got;
	}
	return 0;
}

static int wanted(const char *name, const char *const *want, int nwant)
{
	if (!want)
		return 1;
	for (int i = 0; i < nwant; i++)
		if (!strcmp(name, want[i]))
			return 1;
	return 0;
}

int jit_cache_open(const char *root, const char *key, JitEntry *e)
{
	e->fd = -1;
	e->n = 0;
	if (!valid_key(key) || foreign_dir(root))
		return JIT_CACHE_MISS;
	snprintf(e->path, sizeof e->path, "%s/%s", root, key);
	e->fd = open(e->path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0)
		return JIT_CACHE_MISS;
	struct stat st;
	if (fstat(e->fd, &st) != 0) {
		close(e->fd);
		e->fd = -1;
		return JIT_CACHE_MISS;
	}
	e->ino = (unsigned long long)st.st_ino;
	e->dev = (unsigned long long)st.st_dev;
	/* One read for the header (the key line and 64 blobs of at most ~70
	 * bytes a line fit in its first 8 KB) and the blobs that follow it in
	 * the first 16 KB: a small entry (the metadata first) costs one read. */
	char head[8192];
	size_t flen = (size_t)st.st_size;
	e->cn = flen < sizeof e->chunk ? flen : sizeof e->chunk;
	size_t hn = e->cn < sizeof head - 1 ? e->cn : sizeof head - 1;
	if (read_at(e->fd, e->chunk, e->cn, 0) != 0)
		goto corrupt;
	memcpy(head, e->chunk, hn);
	head[hn] = 0;
	if (hn < strlen(MAGIC) || strncmp(head, MAGIC, strlen(MAGIC)) != 0)
		goto corrupt;
	char *line = head + strlen(MAGIC);
	/* the entry must be this key's */
	size_t kl = strlen(key);
	if (hn < (size_t)(line - head) + 5 + kl || strncmp(line, "key ", 4) != 0 ||
	    strncmp(line + 4, key, kl) != 0 || line[4 + kl] != '\n')
		goto corrupt;
	line += 5 + kl;
	size_t total = 0;
	for (;;) {
		char *nl = memchr(line, '\n', hn - (size_t)(line - head));
		if (!nl)
			goto corrupt; /* truncated header */
		if (!strncmp(line, "end ", 4)) {
			char want_sum[17];
			snprintf(want_sum, sizeof want_sum, "%016llx",
				 (unsigned long long)check64(head, (size_t)(line - head)));
			if (nl - line != 20 || memcmp(line + 4, want_sum, 16) != 0)
				goto corrupt;
			line = nl + 1;
			break;
		}
		/* "<name> <length> <16 hex digits>", as jit_cache_put writes it */
		const char *sp = memchr(line, ' ', (size_t)(nl - line));
		if (e->n == 64 || !sp || sp == line || sp - line > 31)
			goto corrupt;
		unsigned long long len = 0;
		const char *q = sp + 1;
		for (; q < nl && *q >= '0' && *q <= '9' && q - sp <= 19; q++)
			len = len * 10 + (unsigned long long)(*q - '0');
		if (q == sp + 1 || q >= nl || *q != ' ' || nl - (q + 1) != 16 || len > flen)
			goto corrupt;
		JitBlob *bl = &e->blobs[e->n];
		memcpy(bl->name, line, (size_t)(sp - line));
		bl->name[sp - line] = 0;
		bl->data = NULL;
		bl->len = (size_t)len;
		memcpy(e->sums[e->n], q + 1, 16);
		e->sums[e->n][16] = 0;
		if (!valid_name(bl->name))
			goto corrupt;
		total += (size_t)len;
		e->n++;
		line = nl + 1;
	}
	/* The payload must be exactly what the header announces. */
	size_t off = (size_t)(line - head);
	if (off + total != flen)
		goto corrupt;
	for (int i = 0; i < e->n; off += e->blobs[i].len, i++)
		e->offs[i] = off;
	return JIT_CACHE_HIT;
corrupt:
	jit_cache_close(e, 1);
	return JIT_CACHE_CORRUPT;
}

int jit_cache_read(JitEntry *e, int i, void *dst)
{
	size_t len = e->blobs[i].len, off = e->offs[i];
	if (off + len <= e->cn)
		memcpy(dst, e->chunk + off, len);
	else if (read_at(e->fd, dst, len, (off_t)off) != 0)
		return -1;
	char got[17];
	snprintf(got, sizeof got, "%016llx", (unsigned long long)check64(dst, len));
	return strcmp(got, e->sums[i]) != 0 ? -1 : 0;
}

void jit_cache_close(JitEntry *e, int corrupt)
{
	if (e->fd < 0)
		return;
	close(e->fd);
	e->fd = -1;
	/* Remove a bad entry, unless a writer has replaced it since. */
	struct stat now;
	if (corrupt && stat(e->path, &now) == 0 && (unsigned long long)now.st_ino == e->ino &&
	    (unsigned long long)now.st_dev == e->dev)
		unlink(e->path);
}

int jit_cache_get(const char *root, const char *key, const char *const *want, int nwant, JitBlob **out, int *nout)
{
	JitEntry *e = malloc(sizeof *e);
	if (!e)
		return JIT_CACHE_MISS;
	int rc = jit_cache_open(root, key, e);
	if (rc != JIT_CACHE_HIT) {
		free(e);
		return rc;
	}
	JitBlob *blobs = calloc(64, sizeof *blobs);
	int n = e->n;
	for (int i = 0; blobs && i < n; i++) {
		blobs[i] = e->blobs[i];
		if (!wanted(blobs[i].name, want, nwant))
			continue;
		char *data = malloc(blobs[i].len + 1);
		blobs[i].data = data;
		if (!data || jit_cache_read(e, i, data) != 0) {
			rc = data ? JIT_CACHE_CORRUPT : JIT_CACHE_MISS;
			break;
		}
		data[blobs[i].len] = 0;
	}
	if (!blobs)
		rc = JIT_CACHE_MISS;
	jit_cache_close(e, rc == JIT_CACHE_CORRUPT);
	free(e);
	if (rc != JIT_CACHE_HIT) {
		if (blobs)
			jit_blobs_free(blobs, n);
		return rc;
	}
	*out = blobs;
	*nout = n;
	return JIT_CACHE_HIT;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int jit_cache_put(const char *root, const char *key, const JitBlob *blobs, int n, char *errbuf,
		  int errlen)
{
	char path[4200], tmp[4600];
	if (!valid_key(key)) {
		snprintf(errbuf, errlen, "bad cache key '%.200s'", key);
		return -1;
	}
	if (foreign_dir(root)) {
		snprintf(errbuf, errlen, "cache directory %.3000s belongs to another user; not using it", root);
		return -1;
	}
	snprintf(path, sizeof path, "%s/%s", root, key);
	if (n > 64) {
		snprintf(errbuf, errlen, "too many cache blobs (%d)", n);
		return -1;
	}
	size_t hcap = 64 + strlen(key) + (size_t)n * 80, hlen = 0;
	char *head = malloc(hcap);
	hlen += (size_t)snprintf(head, hcap, "%skey %s\n", MAGIC, key);
	for (int i = 0; i < n; i++) {
		if (!valid_name(blobs[i].name)) {
			snprintf(errbuf, errlen, "bad cache blob name '%s'", blobs[i].name);
			free(head);
			return -1;
		}
		hlen += (size_t)snprintf(head + hlen, hcap - hlen, "%s %zu %016llx\n", blobs[i].name,
					 blobs[i].len,
					 (unsigned long long)check64(blobs[i].data, blobs[i].len));
	}
	hlen += (size_t)snprintf(head + hlen, hcap - hlen, "end %016llx\n",
				 (unsigned long long)check64(head, hlen));
	static unsigned counter; /* atomic: temporary names unique per thread */
	char host[64] = "host";
	if (gethostname(host, sizeof host - 1) != 0 || !host[0])
		strcpy(host, "host");
	host[sizeof host - 1] = 0;
	for (char *c = host; *c; c++)
		if (*c == '.' || *c == '/')
			*c = '_';
	snprintf(tmp, sizeof tmp, "%s/tmp.%s.%s.%ld.%u", root, key, host, (long)getpid(),
		 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
	remove_orphans(root, host);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT) {
		if (mkdirs(root) != 0) {
			snprintf(errbuf, errlen, "cannot create cache directory %s: %s", root,
				 strerror(errno));
			free(head);
			return -1;
		}
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		snprintf(errbuf, errlen, "cannot create %s: %s", tmp, strerror(errno));
		free(head);
		return -1;
	}
	int ok = write_all(fd, head, hlen) == 0;
	for (int i = 0; ok && i < n; i++)
		ok = write_all(fd, blobs[i].data, blobs[i].len) == 0;
	free(head);
	ok &= close(fd) == 0;
	if (!ok) {
		snprintf(errbuf, errlen, "cannot write %s: %s", tmp, strerror(errno));
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) != 0) {
		snprintf(errbuf, errlen, "cannot install cache entry %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}
