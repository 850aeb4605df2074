/* sha256.c: SHA-256 (FIPS 180-4), small and dependency-free. Used for the
 * on-disk cache's content addresses and for the checksums of its entries.
 * On x86-64 CPUs with the SHA extensions (cpuid 7: EBX bit 29, as glibc's
 * loader found it) the blocks
 * go through the SHA-NI round instructions, five to six times as fast as
 * the portable rounds, which run everywhere else (and in a build with
 * JIT_SHA256_PORTABLE defined: tests/jit/sha256_portable_test).
 */
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(JIT_SHA256_PORTABLE)
#include <immintrin.h>
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
#include <sys/platform/x86.h>
#else
#include <cpuid.h>
#endif
#define HAVE_SHANI_CODE 1
#endif

#include "jit/jit.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

/* Mixes one 64-byte block into the state. */
static void compress(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
			      K[i] + w[i];
		uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d;
	h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

#ifdef HAVE_SHANI_CODE
/* n 64-byte blocks through the SHA-NI instructions: the state as the two
 * registers the round instruction wants (ABEF, CDGH), four rounds a step,
 * the message schedule by sha256msg1/msg2 four words at a time. */
__attribute__((target("sha,sse4.1,ssse3"))) static void compress_shani(uint32_t h[8], const uint8_t *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1);  /* CDAB */
	__m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* EFGH */
	__m128i s0 = _mm_alignr_epi8(t, s1, 8);                                        /* ABEF */
	s1 = _mm_blend_epi16(s1, t, 0xF0);                                             /* CDGH */
	for (; n; n--, p += 64) {
		__m128i abef = s0, cdgh = s1, w[4];
		for (int i = 0; i < 16; i++) {
			__m128i m;
			if (i < 4) {
				m = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
			} else { /* W[t-16] + s0(W[t-15]) + W[t-7] + s1(W[t-2]), four at a time */
				m = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
				m = _mm_add_epi32(m, _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
				m = _mm_sha256msg2_epu32(m, w[(i + 3) & 3]);
			}
			w[i & 3] = m;
			__m128i k = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)&K[4 * i]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, k);
			s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(k, 0x0E));
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	t = _mm_shuffle_epi32(s0, 0x1B);   /* FEBA */
	s1 = _mm_shuffle_epi32(s1, 0xB1);  /* DCHG */
	s0 = _mm_blend_epi16(t, s1, 0xF0); /* DCBA */
	s1 = _mm_alignr_epi8(s1, t, 8);    /* HGFE */
	_mm_storeu_si128((__m128i *)&h[0], s0);
	_mm_storeu_si128((__m128i *)&h[4], s1);
}

#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
/* 1 when the CPU has the SHA extensions (and SSSE3, SSE4.1): what glibc's
 * loader read with CPUID at start-up (a CPUID here would be a VM exit in a
 * guest, about 10 us). */
static int have_shani(void)
{
	return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSE4_1) && CPU_FEATURE_ACTIVE(SSSE3);
}
#else
/* The same from CPUID, asked once (an older glibc). */
static int have_shani(void)
{
	static int known = -1;
	int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (v < 0) {
		unsigned a, b, c, d;
		v = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1) && __get_cpuid(1, &a, &b, &c, &d) &&
		    (c >> 19 & 1) && (c >> 9 & 1);
		__atomic_store_n(&known, v, __ATOMIC_RELAXED);
	}
	return v;
}
#endif
#endif

/* n 64-byte blocks into the state. */
static void compress_blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
#ifdef HAVE_SHANI_CODE
	if (have_shani()) {
		compress_shani(h, p, n);
		return;
	}
#endif
	for (; n; n--, p += 64)
		compress(h, p);
}

void jit_sha256_init(JitSha256 *s)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, h0, sizeof h0);
	s->len = 0;
	s->nbuf = 0;
}

void jit_sha256_update(JitSha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	s->len += n;
	if (s->nbuf) {
		size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
		memcpy(s->buf + s->nbuf, p, take);
		s->nbuf += take, p += take, n -= take;
		if (s->nbuf < 64)
			return;
		compress_blocks(s->h, s->buf, 1);
		s->nbuf = 0;
	}
	compress_blocks(s->h, p, n / 64);
	p += n / 64 * 64;
	n %= 64;
	memcpy(s->buf, p, n);
	s->nbuf = n;
}

void jit_sha256_final(JitSha256 *s, uint8_t out[32])
{
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = {0x80}; /* 0x80, zeros to 56 mod 64, the length in bits */
	size_t npad = (s->nbuf < 56 ? 56 : 120) - s->nbuf;
	for (int i = 0; i < 8; i++)
		pad[npad + i] = (uint8_t)(bits >> (56 - 8 * i));
	jit_sha256_update(s, pad, npad + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}

void jit_sha256_hex(const void *data, size_t n, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	JitSha256 s;
	uint8_t d[32];
	jit_sha256_init(&s);
	jit_sha256_update(&s, data, n);
	jit_sha256_final(&s, d);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[64] = 0;
}
