/*
 * readfile.c: whole-file reads with a size limit (any process).
 */
#include "util/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *
readfile(const char *path, size_t max, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	ssize_t n;
	int fd;

	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (st.st_size <= 0 || (size_t)st.st_size > max) {
		snprintf(err, errlen, "%s: empty or larger than %zu bytes",
		    path, max);
		goto fail;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "%s: short read", path);
			goto fail;
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	*len = got;
	return buf;
fail:
	if (fd != -1)
		close(fd);
	free(buf);
	return NULL;
}
