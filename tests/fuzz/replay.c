/*
 * replay.c: runs a fuzz target's corpus without libFuzzer (make check).
 *
 * Linked with one tests/fuzz/fuzz_*.c, it calls LLVMFuzzerInitialize() if
 * the target has one, then LLVMFuzzerTestOneInput() once per file and
 * prints TAP: "ok N - FILE", and the plan "1..N" at the end. Each input
 * runs in a child process, so a crash (abort, sanitizer report, signal) or
 * a hang (over $CFPM_REPLAY_TIMEOUT seconds, default 20) is a "not ok" for
 * that file and the rest still run.
 *
 *   replay_NAME [PATH...]
 *
 * A PATH that is a file is one input; a directory contributes its files
 * and the files of its subdirectories (one level), in name order. With no
 * PATH the corpus is $CFPM_SRCDIR/tests/fuzz/corpus/NAME plus, if it
 * exists, $CFPM_SRCDIR/tests/fuzz/regress/NAME, where NAME is the program
 * name after "replay_" (CFPM_SRCDIR defaults to ".").
 */
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

#pragma weak LLVMFuzzerInitialize

#define REPLAY_MAX_INPUT	(16 * 1024 * 1024)	/* larger is an error */
#define REPLAY_TIMEOUT		20	/* seconds per input (valgrind is slow) */

static int count;
static int failed;
static unsigned timeout = REPLAY_TIMEOUT;

static void
report(int pass, const char *path, const char *why)
{
	count++;
	if (!pass)
		failed++;
	printf("%s %d - %s%s%s\n", pass ? "ok" : "not ok", count, path,
	    why[0] != '\0' ? ": " : "", why);
	fflush(stdout);
}

/* Reads a whole file into a buffer of exactly its size (ASan sees past). */
static uint8_t *
read_file(const char *path, size_t *len, char *why, size_t whylen)
{
	FILE *f;
	struct stat st;
	uint8_t *buf = NULL;

	if ((f = fopen(path, "rb")) == NULL) {
		snprintf(why, whylen, "open: %s", strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &st) == -1 || st.st_size > REPLAY_MAX_INPUT) {
		snprintf(why, whylen, "stat failed or larger than %d bytes",
		    REPLAY_MAX_INPUT);
		goto done;
	}
	/* malloc(0) may return NULL: keep one byte, pass the true length. */
	if ((buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1)) == NULL) {
		snprintf(why, whylen, "out of memory");
		goto done;
	}
	if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		snprintf(why, whylen, "short read");
		free(buf);
		buf = NULL;
		goto done;
	}
	*len = (size_t)st.st_size;
done:
	fclose(f);
	return buf;
}

static void
run_file(const char *path)
{
	char why[128] = "";
	uint8_t *data;
	size_t len = 0;
	pid_t pid;
	int status;

	if ((data = read_file(path, &len, why, sizeof(why))) == NULL) {
		report(0, path, why);
		return;
	}
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) == -1) {
		snprintf(why, sizeof(why), "fork: %s", strerror(errno));
		report(0, path, why);
	} else if (pid == 0) {
		/* SIGALRM's default action ends a hung input. */
		alarm(timeout);
		LLVMFuzzerTestOneInput(data, len);
		free(data);
		/* exit(), not _exit(): LeakSanitizer checks at exit. */
		exit(0);
	} else {
		while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
			;
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
			snprintf(why, sizeof(why), "timed out after %u s",
			    timeout);
		else if (WIFSIGNALED(status))
			snprintf(why, sizeof(why), "killed by signal %d",
			    WTERMSIG(status));
		else if (WEXITSTATUS(status) != 0)
			snprintf(why, sizeof(why), "exit status %d",
			    WEXITSTATUS(status));
		report(why[0] == '\0', path, why);
	}
	free(data);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every file under dir, descending depth more directory levels. */
static void
run_dir(const char *dir, int depth)
{
	DIR *d;
	struct dirent *de;
	struct stat st;
	char **names = NULL, **tmp, path[PATH_MAX];
	size_t n = 0, cap = 0, i;

	if ((d = opendir(dir)) == NULL) {
		report(0, dir, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL) {
		/* Dot files: ".", "..", editor and libFuzzer leftovers. */
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((tmp = realloc(names, cap * sizeof(*names))) == NULL)
				abort();
			names = tmp;
		}
		if ((names[n++] = strdup(de->d_name)) == NULL)
			abort();
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), name_cmp);
	for (i = 0; i < n; i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
		    names[i]) >= sizeof(path))
			report(0, names[i], "path too long");
		else if (stat(path, &st) == -1)
			report(0, path, strerror(errno));
		else if (S_ISDIR(st.st_mode)) {
			if (depth > 0)
				run_dir(path, depth - 1);
		} else if (S_ISREG(st.st_mode))
			run_file(path);
		free(names[i]);
	}
	free(names);
}

static void
run_path(const char *path)
{
	struct stat st;

	if (stat(path, &st) == -1)
		report(0, path, strerror(errno));
	else if (S_ISDIR(st.st_mode))
		run_dir(path, 1);
	else
		run_file(path);
}

int
main(int argc, char **argv)
{
	const char *prog, *srcdir, *s;
	char path[PATH_MAX];
	struct stat st;
	int i;

	if ((s = getenv("CFPM_REPLAY_TIMEOUT")) != NULL && atoi(s) > 0)
		timeout = (unsigned)atoi(s);
	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (i = 1; i < argc; i++)
			run_path(argv[i]);
	} else {
		prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 :
		    argv[0];
		if (strncmp(prog, "lt-", 3) == 0)
			prog += 3;
		if (strncmp(prog, "replay_", 7) != 0 || prog[7] == '\0') {
			printf("Bail out! usage: replay_NAME [PATH...]: no "
			    "corpus name in %s\n", argv[0]);
			return 1;
		}
		prog += 7;
		if ((srcdir = getenv("CFPM_SRCDIR")) == NULL || *srcdir == '\0')
			srcdir = ".";
		snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/%s",
		    srcdir, prog);
		run_path(path);
		snprintf(path, sizeof(path), "%s/tests/fuzz/regress/%s",
		    srcdir, prog);
		if (stat(path, &st) == 0)
			run_path(path);
	}
	if (count == 0)
		report(0, "no inputs", "");
	printf("1..%d\n", count);
	return failed > 0;
}
