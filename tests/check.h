/* check.h: the C tests' check: CHECK(cond, fmt, ...) counts a check and,
 * when cond is false, a failure, printed with its file and line. A test
 * ends by printing both counts and returning failures != 0. */
#ifndef CT_TESTS_CHECK_H
#define CT_TESTS_CHECK_H

#include <stdio.h>

static int failures, checks;

#define CHECK(c, ...)                                                         \
	do {                                                                  \
		checks++;                                                     \
		if (!(c)) {                                                   \
			failures++;                                           \
			fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
		}                                                             \
	} while (0)

#endif
