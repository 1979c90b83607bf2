/*
 * hello.c: the floor of the nginx + libfcgi architecture (a benchmark
 * reference point, not part of cfpm). Binds a unix socket itself (libfcgi's
 * FCGX_OpenSocket would unlink and exit on its own terms), forks N
 * children that each answer every request with 200 {"ok":true} through
 * FCGX_Accept_r, and waits. SIGTERM to the parent ends it and its
 * process group (the children).
 *
 * Build: gcc -O2 -o hello hello.c -lfcgi
 * Usage: hello SOCKET_PATH CHILDREN
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#define HELLO_BACKLOG		511
#define HELLO_MAX_CHILDREN	1024

static const char reply[] =
    "Status: 200 OK\r\nContent-Type: application/json\r\n\r\n{\"ok\":true}";

/* Parent: pass SIGTERM on to the children (its process group), leave. */
static void
on_term(int sig)
{
	(void)sig;
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	_exit(0);
}

/* Child: just leave. */
static void
on_term_child(int sig)
{
	(void)sig;
	_exit(0);
}

/* A listening unix socket at path (removed first: it is ours). */
static int
listen_unix(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		return -1;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(path, 0666) == -1 || listen(fd, HELLO_BACKLOG) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A child's accept loop; never returns. */
static void
serve(int fd)
{
	FCGX_Request req;

	signal(SIGTERM, on_term_child);
	signal(SIGINT, on_term_child);
	if (FCGX_InitRequest(&req, fd, 0) != 0)
		_exit(1);
	while (FCGX_Accept_r(&req) >= 0) {
		FCGX_PutStr(reply, sizeof(reply) - 1, req.out);
		FCGX_Finish_r(&req);
	}
	_exit(0);
}

int
main(int argc, char **argv)
{
	int fd, i, n;

	if (argc != 3 || (n = atoi(argv[2])) < 1 || n > HELLO_MAX_CHILDREN) {
		fprintf(stderr, "usage: hello SOCKET_PATH CHILDREN\n");
		return 2;
	}
	/* Ours before FCGX_Init, which only replaces default handlers. */
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	if ((fd = listen_unix(argv[1])) == -1) {
		perror(argv[1]);
		return 1;
	}
	if (FCGX_Init() != 0)
		return 1;
	for (i = 0; i < n; i++) {
		switch (fork()) {
		case -1:
			perror("fork");
			return 1;
		case 0:
			serve(fd);
		}
	}
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return 0;
}
