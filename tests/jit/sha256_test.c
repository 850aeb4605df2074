/* sha256_test.c: SHA-256 against the FIPS 180-4 examples (the empty string,
 * "abc", the 448-bit message, a million 'a's), and one-shot hashes against
 * the same bytes fed in pieces of every split, for lengths around the block
 * and padding boundaries. Built twice: with the CPU's SHA instructions where
 * it has them, and with the portable rounds only (sha256_portable_test). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"
#include "tests/check.h"

static void hex(const uint8_t d[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

int main(void)
{
	static const struct {
		const char *msg;
		const char *digest;
	} vectors[] = {
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	};
	char out[65];
	for (size_t i = 0; i < sizeof vectors / sizeof *vectors; i++) {
		jit_sha256_hex(vectors[i].msg, strlen(vectors[i].msg), out);
		CHECK(!strcmp(out, vectors[i].digest), "'%s': %s", vectors[i].msg, out);
	}
	char *million = malloc(1000000);
	memset(million, 'a', 1000000);
	jit_sha256_hex(million, 1000000, out);
	CHECK(!strcmp(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "a million a: %s", out);
	/* every split of lengths around 64 and 56 (the padding), and larger */
	unsigned char data[300];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 131 + 17);
	for (size_t n = 0; n <= sizeof data; n += n < 140 ? 1 : 37) {
		char whole[65];
		jit_sha256_hex(data, n, whole);
		for (size_t cut = 0; cut <= n; cut += n < 140 ? 1 : 13) {
			JitSha256 s;
			uint8_t d[32];
			jit_sha256_init(&s);
			jit_sha256_update(&s, data, cut);
			jit_sha256_update(&s, data + cut, n - cut);
			jit_sha256_final(&s, d);
			hex(d, out);
			CHECK(!strcmp(out, whole), "length %zu cut at %zu", n, cut);
		}
	}
	free(million);
	printf("%d checks, %d failures\n", checks, failures);
	return failures != 0;
}
