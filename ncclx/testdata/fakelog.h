/*
 * The call log both fakes keep, for the Go tests to read back: when
 * RSAG_FAKE_LOG names a file, every call that matters (allocations,
 * registrations, communicators, collectives, configs) appends one line to
 * it, "<call> key=value key=value ...". Each line is one write() to a file
 * opened with O_APPEND, so lines from the two libraries and from the ranks'
 * threads never interleave, and a thread's lines keep their order. Each
 * line ends with tid=<the calling thread>: in the tests every rank is a
 * goroutine locked to its own thread.
 */
#ifndef RSAG_FAKELOG_H
#define RSAG_FAKELOG_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static void fake_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fake_log(const char *fmt, ...) {
	const char *path = getenv("RSAG_FAKE_LOG");
	if (path == NULL || *path == 0) return;
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0) return;
	if (n > (int)sizeof line - 40) n = (int)sizeof line - 40;
	n += snprintf(line + n, 40, " tid=%d\n", (int)syscall(SYS_gettid));
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0) return;
	ssize_t w = write(fd, line, (size_t)n);
	(void)w;
	close(fd);
}

#endif
