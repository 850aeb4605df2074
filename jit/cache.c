/* cache.c: the on-disk kernel cache. An entry is a directory named by its
 * key (a SHA-256 in hex) holding one file per blob and a MANIFEST:
 *
 *     ctriton-cache 1
 *     <name> <length> <sha256 of the file>
 *     ...
 *
 * Writers build the entry in a private temporary directory and rename it
 * into place (atomic on POSIX); a reader trusts nothing it has not
 * checksummed, so a truncated or edited entry reads as corrupt and is
 * removed, never loaded.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jit/jit.h"

#define MANIFEST_MAGIC "ctriton-cache 1\n"

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
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* Removes a directory of plain files (an entry or a temporary one). */
static void rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char path[4096];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* Reads a whole file (NUL-terminated, malloc'ed); NULL if it cannot. */
static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	size_t got;
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
	}
	fclose(f);
	buf[n] = 0;
	*len = n;
	return buf;
}

static int write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int ok = fwrite(data, 1, len, f) == len;
	ok &= fflush(f) == 0;
	ok &= fclose(f) == 0;
	return ok ? 0 : -1;
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
	if (!*s || !strcmp(s, "MANIFEST") || s[0] == '.')
		return 0;
	for (; *s; s++)
		if (*s == '/' || *s == ' ' || *s == '\n')
			return 0;
	return 1;
}

int jit_cache_get(const char *root, const char *key, JitBlob **out, int *nout)
{
	char dir[4096], path[4200];
	snprintf(dir, sizeof dir, "%s/%s", root, key);
	snprintf(path, sizeof path, "%s/MANIFEST", dir);
	size_t mlen;
	char *man = read_file(path, &mlen);
	if (!man)
		return JIT_CACHE_MISS;
	int status = JIT_CACHE_CORRUPT;
	int n = 0, cap = 8;
	JitBlob *blobs = calloc(cap, sizeof *blobs);
	if (strncmp(man, MANIFEST_MAGIC, strlen(MANIFEST_MAGIC)) != 0)
		goto done;
	char *line = man + strlen(MANIFEST_MAGIC);
	while (*line) {
		char *nl = strchr(line, '\n');
		if (!nl)
			goto done; /* truncated manifest */
		*nl = 0;
		char name[32], sum[65], got[65];
		unsigned long long len;
		if (sscanf(line, "%31s %llu %64s", name, &len, sum) != 3 || !valid_name(name))
			goto done;
		if (n == cap)
			blobs = realloc(blobs, (size_t)(cap *= 2) * sizeof *blobs);
		JitBlob *b = &blobs[n];
		memset(b, 0, sizeof *b);
		snprintf(b->name, sizeof b->name, "%s", name);
		snprintf(path, sizeof path, "%s/%s", dir, name);
		b->data = read_file(path, &b->len);
		n++;
		if (!b->data || b->len != len)
			goto done;
		jit_sha256_hex(b->data, b->len, got);
		if (strcmp(got, sum) != 0)
			goto done;
		line = nl + 1;
	}
	status = JIT_CACHE_HIT;
done:
	free(man);
	if (status != JIT_CACHE_HIT) {
		jit_blobs_free(blobs, n);
		/* Move the bad entry aside first, so that a concurrent writer's
		 * fresh entry is never the one deleted. */
		char trash[4300];
		snprintf(trash, sizeof trash, "%s.bad.%ld.%ld", dir, (long)getpid(), (long)time(NULL));
		if (rename(dir, trash) == 0)
			rmtree(trash);
		return status;
	}
	*out = blobs;
	*nout = n;
	return JIT_CACHE_HIT;
}

int jit_cache_put(const char *root, const char *key, const JitBlob *blobs, int n, char *errbuf,
		  int errlen)
{
	char dir[4096], tmp[4200], path[4400];
	snprintf(dir, sizeof dir, "%s/%s", root, key);
	if (mkdirs(root) != 0) {
		snprintf(errbuf, errlen, "cannot create cache directory %s: %s", root, strerror(errno));
		return -1;
	}
	static unsigned counter;
	snprintf(tmp, sizeof tmp, "%s/tmp.%s.%ld.%u.%ld", root, key, (long)getpid(), counter++,
		 (long)clock());
	if (mkdir(tmp, 0777) != 0) {
		snprintf(errbuf, errlen, "cannot create %s: %s", tmp, strerror(errno));
		return -1;
	}
	size_t mcap = 64 + (size_t)n * 128, mlen = 0;
	char *man = malloc(mcap);
	mlen += (size_t)snprintf(man, mcap, "%s", MANIFEST_MAGIC);
	for (int i = 0; i < n; i++) {
		char sum[65];
		if (!valid_name(blobs[i].name)) {
			snprintf(errbuf, errlen, "bad cache blob name '%s'", blobs[i].name);
			goto fail;
		}
		snprintf(path, sizeof path, "%s/%s", tmp, blobs[i].name);
		if (write_file(path, blobs[i].data, blobs[i].len) != 0) {
			snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
			goto fail;
		}
		jit_sha256_hex(blobs[i].data, blobs[i].len, sum);
		mlen += (size_t)snprintf(man + mlen, mcap - mlen, "%s %zu %s\n", blobs[i].name,
					 blobs[i].len, sum);
	}
	snprintf(path, sizeof path, "%s/MANIFEST", tmp);
	if (write_file(path, man, mlen) != 0) {
		snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(errno));
		goto fail;
	}
	free(man);
	if (rename(tmp, dir) != 0) {
		/* Another process installed the same key first: keep theirs. */
		rmtree(tmp);
		if (errno != EEXIST && errno != ENOTEMPTY) {
			snprintf(errbuf, errlen, "cannot install cache entry %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	return 0;
fail:
	free(man);
	rmtree(tmp);
	return -1;
}
