/*
 * readfile.h: read a small file whole (config, key material; any process).
 */
#ifndef CFPM_READFILE_H
#define CFPM_READFILE_H

#include <stddef.h>

/*
 * Reads path into a malloc'd, NUL-terminated buffer and sets *len.
 * A file that is empty, unreadable or larger than max bytes is an error:
 * NULL with "path: reason" in err (errlen bytes). The caller frees.
 */
char *readfile(const char *path, size_t max, size_t *len, char *err,
    size_t errlen);

#endif
