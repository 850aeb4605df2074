/* cache_test.c: the on-disk cache of jit/cache.c. Entries round-trip, small
 * and large (blobs inside and past the first read), with only the blobs asked
 * for read; every truncation, every flipped byte of the header and of a blob,
 * odd header lines and an entry under another key's name read as corrupt and
 * are removed; a missing entry is a miss; the open/read/close steps read
 * blobs into the caller's buffers. jit_content_key follows every byte and
 * the length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/jit.h"
#include "tests/check.h"

static char root[512];

static char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *p = malloc((size_t)len + 1);
	*n = fread(p, 1, (size_t)len, f);
	fclose(f);
	return p;
}

static void write_all(const char *path, const char *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	fwrite(p, 1, n, f);
	fclose(f);
}

/* Puts key with a "meta" blob of nmeta bytes and a "cubin" of ncubin. */
static void put(const char *key, size_t nmeta, size_t ncubin)
{
	char *meta = malloc(nmeta + 1), *cubin = malloc(ncubin + 1);
	for (size_t i = 0; i < nmeta; i++)
		meta[i] = (char)('a' + i % 26);
	for (size_t i = 0; i < ncubin; i++)
		cubin[i] = (char)(i * 7);
	JitBlob b[2] = {{"meta", meta, nmeta}, {"cubin", cubin, ncubin}};
	char err[256];
	CHECK(jit_cache_put(root, key, b, 2, err, sizeof err) == 0, "put %s: %s", key, err);
	free(meta);
	free(cubin);
}

/* Gets key wanting only "meta" (or all): its status, checking the contents
 * of what was read on a hit. */
static int get(const char *key, int all, size_t nmeta, size_t ncubin)
{
	static const char *const want[] = {"meta"};
	JitBlob *b = NULL;
	int n = 0;
	int rc = jit_cache_get(root, key, all ? NULL : want, all ? 0 : 1, &b, &n);
	if (rc != JIT_CACHE_HIT)
		return rc;
	CHECK(n == 2 && !strcmp(b[0].name, "meta") && !strcmp(b[1].name, "cubin"), "blobs of %s", key);
	CHECK(b[0].len == nmeta && b[1].len == ncubin, "lengths of %s", key);
	for (size_t i = 0; b[0].data && i < nmeta; i++)
		if (((char *)b[0].data)[i] != (char)('a' + i % 26)) {
			CHECK(0, "meta byte %zu of %s", i, key);
			break;
		}
	CHECK(all ? b[1].data != NULL : b[1].data == NULL, "cubin of %s read only when asked", key);
	for (size_t i = 0; b[1].data && i < ncubin; i++)
		if (((char *)b[1].data)[i] != (char)(i * 7)) {
			CHECK(0, "cubin byte %zu of %s", i, key);
			break;
		}
	jit_blobs_free(b, n);
	return rc;
}

static void test_round_trip(void)
{
	/* inside the first 16 KB read, across its end, past it */
	size_t sizes[][2] = {{0, 0}, {10, 100}, {1000, 14000}, {1000, 15400}, {9000, 9000}, {50, 300000}};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		char key[64];
		snprintf(key, sizeof key, "rt%zu", i);
		put(key, sizes[i][0], sizes[i][1]);
		CHECK(get(key, 1, sizes[i][0], sizes[i][1]) == JIT_CACHE_HIT, "hit %s (all)", key);
		CHECK(get(key, 0, sizes[i][0], sizes[i][1]) == JIT_CACHE_HIT, "hit %s (meta)", key);
	}
	CHECK(get("nope", 1, 0, 0) == JIT_CACHE_MISS, "a missing entry is a miss");
	CHECK(get("../x", 1, 0, 0) == JIT_CACHE_MISS, "a key that is not a name is a miss");
}

/* Every damaged form of a good entry reads as corrupt and is removed. */
static void test_damage(size_t nmeta, size_t ncubin)
{
	char path[700];
	snprintf(path, sizeof path, "%s/dmg", root);
	put("dmg", nmeta, ncubin);
	size_t n;
	char *good = read_all(path, &n);
	char *bad = malloc(n + 16);
	int flips = 0, cuts = 0;
	for (size_t i = 0; i < n; i += (i < 400 ? 1 : 97)) { /* every header byte, then a sample */
		memcpy(bad, good, n);
		bad[i] ^= 0x20;
		write_all(path, bad, n);
		int rc = get("dmg", 1, nmeta, ncubin);
		flips += rc == JIT_CACHE_CORRUPT;
		CHECK(rc == JIT_CACHE_CORRUPT, "byte %zu flipped: %d", i, rc);
		CHECK(access(path, F_OK) != 0, "byte %zu flipped: removed", i);
	}
	for (size_t cut = 0; cut < n; cut += 61) {
		write_all(path, good, cut);
		int rc = get("dmg", 1, nmeta, ncubin);
		cuts += rc == JIT_CACHE_CORRUPT;
		CHECK(rc == JIT_CACHE_CORRUPT, "cut at %zu: %d", cut, rc);
	}
	memcpy(bad, good, n);
	memcpy(bad + n, "extra", 5);
	write_all(path, bad, n + 5);
	CHECK(get("dmg", 1, nmeta, ncubin) == JIT_CACHE_CORRUPT, "appended bytes");
	/* another key's entry under this name */
	put("other", nmeta, ncubin);
	char opath[700];
	snprintf(opath, sizeof opath, "%s/other", root);
	size_t on;
	char *other = read_all(opath, &on);
	write_all(path, other, on);
	CHECK(get("dmg", 1, nmeta, ncubin) == JIT_CACHE_CORRUPT, "another key's entry");
	CHECK(get("other", 1, nmeta, ncubin) == JIT_CACHE_HIT, "the other key itself");
	write_all(path, good, n);
	CHECK(get("dmg", 1, nmeta, ncubin) == JIT_CACHE_HIT, "the good entry back");
	printf("  entry of %zu bytes: %d flips, %d cuts read as corrupt\n", n, flips, cuts);
	free(other);
	free(bad);
	free(good);
}

/* Header lines the writer never makes: corrupt, even with a right check. */
static void test_odd_headers(void)
{
	const char *lines[] = {
		"meta 3 0123456789abcdef",                    /* a check that is not the blob's */
		"meta 3 0123456789abcde",                     /* 15 digits */
		"meta 3 0123456789abcdef0",                   /* 17 */
		"meta x3 0123456789abcdef",                   /* not a number */
		"meta  3 0123456789abcdef",                   /* two spaces */
		"meta 99999999999999999999 0123456789abcdef", /* 20 digits */
		" 3 0123456789abcdef",                        /* no name */
		"end 0123456789abcdef",                       /* an end line whose check is wrong */
	};
	char path[700];
	snprintf(path, sizeof path, "%s/odd", root);
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
		char text[512];
		int k = snprintf(text, sizeof text, "ctriton-cache 4\nkey odd\n%s\nend 0000000000000000\nabc",
				 lines[i]);
		write_all(path, text, (size_t)k);
		JitBlob *b = NULL;
		int n = 0;
		CHECK(jit_cache_get(root, "odd", NULL, 0, &b, &n) == JIT_CACHE_CORRUPT, "header line '%s'", lines[i]);
	}
}

/* The steps the Python bindings take: open, read blobs into buffers of
 * their own, close; a blob that fails its check on read is corrupt and the
 * entry goes when closed as such. */
static void test_open_read(void)
{
	put("steps", 100, 30000);
	JitEntry *e = malloc(sizeof *e);
	CHECK(jit_cache_open(root, "steps", e) == JIT_CACHE_HIT && e->n == 2, "open");
	char *meta = malloc(e->blobs[0].len), *cubin = malloc(e->blobs[1].len);
	CHECK(jit_cache_read(e, 1, cubin) == 0 && jit_cache_read(e, 0, meta) == 0, "read both, any order");
	CHECK(meta[3] == 'd' && cubin[5] == 35, "the bytes");
	jit_cache_close(e, 0);
	char path[700];
	snprintf(path, sizeof path, "%s/steps", root);
	size_t n;
	char *good = read_all(path, &n);
	good[n - 100] ^= 1; /* in the cubin, past the first read */
	write_all(path, good, n);
	CHECK(jit_cache_open(root, "steps", e) == JIT_CACHE_HIT, "the header is still good");
	CHECK(jit_cache_read(e, 0, meta) == 0 && jit_cache_read(e, 1, cubin) != 0, "the cubin is not");
	jit_cache_close(e, 1);
	CHECK(access(path, F_OK) != 0, "removed when closed as corrupt");
	CHECK(jit_cache_open(root, "steps", e) == JIT_CACHE_MISS, "then a miss");
	free(good);
	free(meta);
	free(cubin);
	free(e);
}

static void test_content_key(void)
{
	char a[JIT_CONTENT_KEY_SIZE], b[JIT_CONTENT_KEY_SIZE];
	char data[5000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (char)(i * 31 + 7);
	jit_content_key(data, sizeof data, a);
	CHECK(strlen(a) == 32 + 1 + 4 && !strcmp(a + 32, "-1388"), "key %s: 128 bits and the length", a);
	int same = 0;
	for (size_t i = 0; i < sizeof data; i++) {
		data[i] ^= 1;
		jit_content_key(data, sizeof data, b);
		same += !strcmp(a, b);
		data[i] ^= 1;
	}
	CHECK(same == 0, "%d one-bit changes kept the key", same);
	jit_content_key(data, sizeof data - 1, b);
	CHECK(strcmp(a, b) != 0, "a shorter prefix has another key");
	jit_content_key(data, sizeof data, b);
	CHECK(!strcmp(a, b), "the same bytes, the same key");
	jit_content_key("", 0, b);
	CHECK(!strcmp(b + 32, "-0"), "the empty key %s", b);
}

int main(void)
{
	snprintf(root, sizeof root, "%s/ctriton-cache-test-XXXXXX",
		 getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_round_trip();
	test_damage(30, 200);    /* all in the first read */
	test_damage(500, 40000); /* the cubin past it */
	test_odd_headers();
	test_open_read();
	test_content_key();
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	printf("%d checks, %d failures\n", checks, failures);
	return failures != 0;
}
