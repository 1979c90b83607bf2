/*
 * cfpm-token: key and token tool for cfpm's benchmark and tests.
 *
 * Run by hand or by the test and bench scripts, never by the server.
 *   keygen  makes an RSA key pair and its JWKS (jwt.key.pem, jwt.pub.pem,
 *           jwks.json) for the server's key setting;
 *   mint    prints one RS256 access token with the benchmark's claims,
 *           each of which can be changed or left out;
 *   sign    signs a given header and payload byte for byte, so tests can
 *           send hostile JSON with a valid signature;
 *   bench   writes the benchmark's token set into a directory.
 * Signatures are RSASSA-PKCS1-v1_5 with SHA-256 (RS256, RFC 7518 3.3).
 * The private key is never printed; tokens go to stdout or to files.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include "events/base64url.h"
#include "events/jwk.h"

/* The benchmark's token (SPEC "Benchmark tokens"). */
#define TOK_DEF_ISS	"https://auth.bench.local"
#define TOK_DEF_AUD	"events-api"
#define TOK_DEF_SUB	"client-bench"
#define TOK_DEF_CLIENT	"client-bench"
#define TOK_DEF_SCOPE	"events:read events:write"
#define TOK_DEF_KID	"bench-1"
#define TOK_DEF_TYP	"JWT"
#define TOK_DEF_EXP	604800		/* exp = now + 7 days */
#define TOK_DEF_NBF	(-60)		/* nbf = now - 60 s */

#define TOK_DEF_BITS	2048
#define TOK_MIN_BITS	2048		/* cfpm refuses smaller RSA keys */
#define TOK_MAX_BITS	16384
#define TOK_DEF_POOL	100
#define TOK_MAX_POOL	1000000
#define TOK_MAX_AUD	8		/* --aud repeated: an array */
#define TOK_MAX_PART	(1024 * 1024)	/* header or payload, bytes */
#define TOK_JTI_BYTES	16		/* random jti, printed as hex */

#define TOK_KEY_FILE	"jwt.key.pem"
#define TOK_PUB_FILE	"jwt.pub.pem"
#define TOK_JWKS_FILE	"jwks.json"
#define TOK_POOL_FILE	"pool.txt"

#define TOK_MODE_SECRET	0600		/* private key, tokens */
#define TOK_MODE_PUBLIC	0644		/* public key, JWKS */
#define TOK_MODE_DIR	0755

#define TOK_EXIT_USAGE	2		/* bad command line; errors exit 1 */

/* A private key and the digest it signs with, fetched once. */
struct signer {
	EVP_PKEY	*key;
	EVP_MD		*md;
};

/* What mint puts in a token. Strings are borrowed; NULL leaves it out. */
struct tok_claims {
	const char	*kid;
	const char	*typ;
	const char	*iss;
	const char	*aud[TOK_MAX_AUD];
	size_t		 naud;		/* 0: none, 1: a string, more: array */
	const char	*sub;
	const char	*client_id;
	const char	*scope;
	const char	*jti;		/* NULL: a random one, unless no_jti */
	int		 no_jti;
	int64_t		 now;
	int64_t		 exp, nbf, iat;	/* seconds from now */
	int		 has_exp, has_nbf, has_iat;
};

/* One file of the benchmark set, signed by the key or a throwaway one. */
struct bench_file {
	const char	*name;
	const char	*scope;
	int64_t		 exp, nbf, iat;
	int		 foreign;
};

static const struct bench_file bench_files[] = {
	{ "valid.jwt", TOK_DEF_SCOPE, TOK_DEF_EXP, TOK_DEF_NBF, 0, 0 },
	{ "readonly.jwt", "events:read", TOK_DEF_EXP, TOK_DEF_NBF, 0, 0 },
	{ "writeonly.jwt", "events:write", TOK_DEF_EXP, TOK_DEF_NBF, 0, 0 },
	{ "expired.jwt", TOK_DEF_SCOPE, -3600, -7200, -7200, 0 },
	{ "notyet.jwt", TOK_DEF_SCOPE, TOK_DEF_EXP, 3600, 0, 0 },
	{ "foreign.jwt", TOK_DEF_SCOPE, TOK_DEF_EXP, TOK_DEF_NBF, 0, 1 },
};

/* What the options of every command set; each command reads its own. */
struct tok_args {
	struct tok_claims c;	/* mint's claims; keygen's and bench's
				   kid, bench's now */
	const char	*key, *dir, *header, *payload;
	int64_t		 bits, pool;
	int		 force, distinct_sub;
	int		 aud_set;	/* the default aud replaced */
};

/* The commands, as bits: which take an option, which need it. */
enum {
	TOK_KEYGEN = 1 << 0,
	TOK_MINT = 1 << 1,
	TOK_SIGN = 1 << 2,
	TOK_BENCH = 1 << 3,
};

/* What an option does to struct tok_args. */
enum tok_opt_kind {
	TOK_OPT_STR,		/* field = the argument */
	TOK_OPT_NULL,		/* --no-X: field = NULL */
	TOK_OPT_INT,		/* field = the argument, in min..max */
	TOK_OPT_SET,		/* no argument: only the flag below */
	TOK_OPT_AUD,		/* --aud: one more audience (mint_aud) */
	TOK_OPT_NO_AUD,		/* --no-aud: none */
};

#define TOK_NONE	((size_t)-1)	/* no field, no flag */

/* One long option: the commands that take it and those that need it. */
struct tok_opt {
	const char	*name;
	unsigned	 cmds;		/* TOK_KEYGEN | ... */
	unsigned	 required;	/* commands that need it */
	enum tok_opt_kind kind;
	size_t		 field;		/* in struct tok_args */
	size_t		 flag;		/* an int there, set to value */
	int		 value;
	int64_t		 min, max;	/* TOK_OPT_INT */
};

#define TOK_ARG(f)	offsetof(struct tok_args, f)
#define OPT_STR(n, cmds, need, f) \
	{ n, cmds, need, TOK_OPT_STR, TOK_ARG(f), TOK_NONE, 0, 0, 0 }
#define OPT_NULL(n, cmds, f) \
	{ n, cmds, 0, TOK_OPT_NULL, TOK_ARG(f), TOK_NONE, 0, 0, 0 }
#define OPT_INT(n, cmds, f, lo, hi) \
	{ n, cmds, 0, TOK_OPT_INT, TOK_ARG(f), TOK_NONE, 0, lo, hi }
#define OPT_SET(n, cmds, flag, v) \
	{ n, cmds, 0, TOK_OPT_SET, TOK_NONE, TOK_ARG(flag), v, 0, 0 }
/* A claim time: its seconds from now, and its presence. */
#define OPT_TIME(n, f, has) \
	{ n, TOK_MINT, 0, TOK_OPT_INT, TOK_ARG(c.f), TOK_ARG(c.has), 1, \
	    INT64_MIN, INT64_MAX }

static const struct tok_opt tok_opts[] = {
	OPT_STR("key", TOK_MINT | TOK_SIGN | TOK_BENCH,
	    TOK_MINT | TOK_SIGN | TOK_BENCH, key),
	OPT_STR("dir", TOK_KEYGEN | TOK_BENCH, TOK_KEYGEN | TOK_BENCH, dir),
	OPT_STR("kid", TOK_KEYGEN | TOK_MINT | TOK_BENCH, 0, c.kid),
	OPT_NULL("no-kid", TOK_MINT, c.kid),
	OPT_INT("bits", TOK_KEYGEN, bits, TOK_MIN_BITS, TOK_MAX_BITS),
	OPT_SET("force", TOK_KEYGEN, force, 1),
	OPT_STR("typ", TOK_MINT, 0, c.typ),
	OPT_NULL("no-typ", TOK_MINT, c.typ),
	OPT_STR("iss", TOK_MINT, 0, c.iss),
	OPT_NULL("no-iss", TOK_MINT, c.iss),
	{ "aud", TOK_MINT, 0, TOK_OPT_AUD, TOK_NONE, TOK_NONE, 0, 0, 0 },
	{ "no-aud", TOK_MINT, 0, TOK_OPT_NO_AUD, TOK_NONE, TOK_NONE, 0, 0, 0 },
	OPT_STR("sub", TOK_MINT, 0, c.sub),
	OPT_NULL("no-sub", TOK_MINT, c.sub),
	OPT_STR("client-id", TOK_MINT, 0, c.client_id),
	OPT_NULL("no-client-id", TOK_MINT, c.client_id),
	OPT_STR("scope", TOK_MINT, 0, c.scope),
	OPT_NULL("no-scope", TOK_MINT, c.scope),
	{ "jti", TOK_MINT, 0, TOK_OPT_STR, TOK_ARG(c.jti), TOK_ARG(c.no_jti),
	    0, 0, 0 },
	OPT_SET("no-jti", TOK_MINT, c.no_jti, 1),
	OPT_TIME("exp", exp, has_exp),
	OPT_SET("no-exp", TOK_MINT, c.has_exp, 0),
	OPT_TIME("nbf", nbf, has_nbf),
	OPT_SET("no-nbf", TOK_MINT, c.has_nbf, 0),
	OPT_TIME("iat", iat, has_iat),
	OPT_SET("no-iat", TOK_MINT, c.has_iat, 0),
	OPT_INT("now", TOK_MINT | TOK_BENCH, c.now, 0, INT64_MAX),
	OPT_STR("header", TOK_SIGN, TOK_SIGN, header),
	OPT_STR("payload", TOK_SIGN, TOK_SIGN, payload),
	OPT_INT("pool", TOK_BENCH, pool, 1, TOK_MAX_POOL),
	OPT_SET("distinct-sub", TOK_BENCH, distinct_sub, 1),
};

#define NOPTS	(sizeof(tok_opts) / sizeof(tok_opts[0]))
#define TOK_OPT_VAL	256	/* getopt_long's value for tok_opts[0] */

struct cmd {
	const char	*name;
	unsigned	 bit;		/* TOK_KEYGEN, ... */
	int		(*run)(const struct cmd *, const struct tok_args *);
	const char	*usage;
};

static void	msg(const char *, ...) __attribute__((format(printf, 1, 2)));
static void	ossl_msg(const char *, ...)
		    __attribute__((format(printf, 1, 2)));
static int	cmd_keygen(const struct cmd *, const struct tok_args *);
static int	cmd_mint(const struct cmd *, const struct tok_args *);
static int	cmd_sign(const struct cmd *, const struct tok_args *);
static int	cmd_bench(const struct cmd *, const struct tok_args *);

static const struct cmd cmds[] = {
	{ "keygen", TOK_KEYGEN, cmd_keygen,
"usage: cfpm-token keygen --dir DIR [--kid KID] [--bits BITS] [--force]\n"
"  Writes DIR/jwt.key.pem (PKCS#8, mode 0600), DIR/jwt.pub.pem (SPKI) and\n"
"  DIR/jwks.json. Existing files are an error unless --force.\n"
"  --kid KID    key id in jwks.json (default " TOK_DEF_KID ")\n"
"  --bits BITS  RSA modulus size, 2048..16384 (default 2048)\n" },
	{ "mint", TOK_MINT, cmd_mint,
"usage: cfpm-token mint --key PRIV.pem [options]\n"
"  Prints one RS256 token. Defaults are the benchmark's; times are\n"
"  seconds from now and may be negative.\n"
"  --kid KID | --no-kid              header kid (default " TOK_DEF_KID ")\n"
"  --typ TYP | --no-typ              header typ (default " TOK_DEF_TYP ")\n"
"  --iss ISS | --no-iss              (default " TOK_DEF_ISS ")\n"
"  --aud AUD | --no-aud              (default " TOK_DEF_AUD ";\n"
"                                    repeat for an array)\n"
"  --sub SUB | --no-sub              (default " TOK_DEF_SUB ")\n"
"  --client-id ID | --no-client-id   (default " TOK_DEF_CLIENT ")\n"
"  --scope SCOPE | --no-scope        (default \"" TOK_DEF_SCOPE "\")\n"
"  --jti JTI | --no-jti              (default 16 random bytes, hex)\n"
"  --exp SECONDS | --no-exp          (default 604800)\n"
"  --nbf SECONDS | --no-nbf          (default -60)\n"
"  --iat SECONDS | --no-iat          (default 0)\n"
"  --now EPOCH                       current time (default: the clock)\n" },
	{ "sign", TOK_SIGN, cmd_sign,
"usage: cfpm-token sign --key PRIV.pem --header JSON --payload JSON\n"
"  Prints an RS256 token over the header and payload bytes as given\n"
"  (not parsed, not re-serialised).\n" },
	{ "bench", TOK_BENCH, cmd_bench,
"usage: cfpm-token bench --key PRIV.pem --dir OUTDIR [--pool N] [--kid KID]\n"
"                        [--distinct-sub] [--now EPOCH]\n"
"  Writes valid.jwt, readonly.jwt, writeonly.jwt, expired.jwt, notyet.jwt,\n"
"  foreign.jwt (signed by a throwaway key) and pool.txt (N tokens with\n"
"  distinct jti, default 100; --distinct-sub gives each its own sub).\n"
"  Files are mode 0600 and replaced if present.\n" },
};

#define NCMDS	(sizeof(cmds) / sizeof(cmds[0]))
#define NBENCH	(sizeof(bench_files) / sizeof(bench_files[0]))

static void
msg(const char *fmt, ...)
{
	va_list ap;

	fputs("cfpm-token: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Like msg(), with OpenSSL's last error appended; clears the error queue. */
static void
ossl_msg(const char *fmt, ...)
{
	char reason[256];
	unsigned long e;
	va_list ap;

	fputs("cfpm-token: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if ((e = ERR_peek_last_error()) != 0) {
		ERR_error_string_n(e, reason, sizeof(reason));
		fprintf(stderr, ": %s", reason);
	}
	fputc('\n', stderr);
	ERR_clear_error();
}

static void
usage_all(FILE *fp)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		fprintf(fp, "%s", cmds[i].usage);
	fprintf(fp, "Run 'cfpm-token COMMAND -h' for one command.\n");
}

/* One command's usage: asked for (-h) on stdout, exit 0; else stderr, 2. */
static int
usage_cmd(const struct cmd *cmd, int asked)
{
	fprintf(asked ? stdout : stderr, "%s", cmd->usage);
	return asked ? 0 : TOK_EXIT_USAGE;
}

static int
parse_int(const char *opt, const char *s, int64_t min, int64_t max,
    int64_t *out)
{
	long long v;
	char *end;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0' || errno == ERANGE || v < min || v > max) {
		msg("--%s: not an integer in [%" PRId64 ", %" PRId64 "]: %s",
		    opt, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* now + off, refused if it does not fit in an int64_t. */
static int
time_add(int64_t now, int64_t off, int64_t *out)
{
	if ((off > 0 && now > INT64_MAX - off) ||
	    (off < 0 && now < INT64_MIN - off))
		return -1;
	*out = now + off;
	return 0;
}

/*
 * options: one table (tok_opts), one parse for every command
 */

/* --aud adds one (the first replaces the default), --no-aud empties. */
static int
mint_aud(struct tok_args *a, const char *aud)
{
	if (!a->aud_set)
		a->c.naud = 0;
	a->aud_set = 1;
	if (aud == NULL)
		return 0;
	if (a->c.naud == TOK_MAX_AUD) {
		msg("--aud: at most %d", TOK_MAX_AUD);
		return -1;
	}
	a->c.aud[a->c.naud++] = aud;
	return 0;
}

/* Applies option o with its argument (NULL if it takes none) to a. */
static int
tok_apply(struct tok_args *a, const struct tok_opt *o, const char *arg)
{
	char *base = (char *)a;

	switch (o->kind) {
	case TOK_OPT_STR:
		*(const char **)(void *)(base + o->field) = arg;
		break;
	case TOK_OPT_NULL:
		*(const char **)(void *)(base + o->field) = NULL;
		break;
	case TOK_OPT_INT:
		if (parse_int(o->name, arg, o->min, o->max,
		    (int64_t *)(void *)(base + o->field)) == -1)
			return -1;
		break;
	case TOK_OPT_SET:
		break;
	case TOK_OPT_AUD:
		return mint_aud(a, arg);
	case TOK_OPT_NO_AUD:
		return mint_aud(a, NULL);
	}
	if (o->flag != TOK_NONE)
		*(int *)(void *)(base + o->flag) = o->value;
	return 0;
}

/* 1 if an option o that cmd needs was not given. */
static int
tok_missing(const struct cmd *cmd, const struct tok_opt *o,
    const struct tok_args *a)
{
	return (o->required & cmd->bit) && *(const char *const *)(const void *)
	    ((const char *)a + o->field) == NULL;
}

/*
 * Parses argv (argv[0] names the tool in getopt's messages) into a, on
 * top of its defaults, with the options of tok_opts that cmd takes.
 * Returns 0, or -1 with *rc the exit status: -h printed the usage on
 * stdout (0), anything wrong printed it on stderr (TOK_EXIT_USAGE).
 */
static int
tok_parse(const struct cmd *cmd, int argc, char **argv, struct tok_args *a,
    int *rc)
{
	struct option lo[NOPTS + 2];
	size_t i, n = 0;
	int ch;

	for (i = 0; i < NOPTS; i++)
		if (tok_opts[i].cmds & cmd->bit)
			lo[n++] = (struct option){ tok_opts[i].name,
			    tok_opts[i].kind == TOK_OPT_STR ||
			    tok_opts[i].kind == TOK_OPT_INT ||
			    tok_opts[i].kind == TOK_OPT_AUD ? required_argument :
			    no_argument, NULL, TOK_OPT_VAL + (int)i };
	lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n] = (struct option){ NULL, 0, NULL, 0 };
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (ch < TOK_OPT_VAL || tok_apply(a, &tok_opts[ch -
		    TOK_OPT_VAL], optarg) == -1) {
			*rc = usage_cmd(cmd, ch == 'h');
			return -1;
		}
	}
	for (i = 0; i < NOPTS; i++)
		if (tok_missing(cmd, &tok_opts[i], a))
			break;
	if (optind != argc || i < NOPTS) {
		*rc = usage_cmd(cmd, 0);
		return -1;
	}
	return 0;
}

/* A directory that may exist already. */
static int
dir_make(const char *dir)
{
	struct stat st;

	if (mkdir(dir, TOK_MODE_DIR) == -1 && errno != EEXIST) {
		msg("%s: mkdir: %s", dir, strerror(errno));
		return -1;
	}
	if (stat(dir, &st) == -1) {
		msg("%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		msg("%s: not a directory", dir);
		return -1;
	}
	return 0;
}

static int
path_join(char *buf, size_t len, const char *dir, const char *name)
{
	int n;

	n = snprintf(buf, len, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= len) {
		msg("%s/%s: path too long", dir, name);
		return -1;
	}
	return 0;
}

/*
 * Opens path for writing with exactly mode, whatever the umask or an older
 * file said. Without force an existing file is an error (O_EXCL); a symlink
 * is never followed.
 */
static int
file_open(const char *path, mode_t mode, int force)
{
	int fd, flags;

	flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	flags |= force ? O_TRUNC : O_EXCL;
	if ((fd = open(path, flags, mode)) == -1) {
		msg("%s: %s", path, strerror(errno));
		return -1;
	}
	if (fchmod(fd, mode) == -1) {
		msg("%s: fchmod: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int
file_write(int fd, const char *path, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			msg("%s: write: %s", path, strerror(errno));
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Flushes to disk and closes fd, even on error. */
static int
file_close(int fd, const char *path)
{
	int rc = 0;

	if (fsync(fd) == -1) {
		msg("%s: fsync: %s", path, strerror(errno));
		rc = -1;
	}
	if (close(fd) == -1) {
		msg("%s: close: %s", path, strerror(errno));
		rc = -1;
	}
	return rc;
}

/* Writes a whole file: one token, or one newline-terminated line. */
static int
file_put(const char *path, mode_t mode, int force, const char *data,
    size_t len)
{
	int fd;

	if ((fd = file_open(path, mode, force)) == -1)
		return -1;
	if (file_write(fd, path, data, len) == -1) {
		close(fd);
		return -1;
	}
	return file_close(fd, path);
}

static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* Reads an unencrypted RSA private key (PKCS#8 or PKCS#1 PEM). */
static EVP_PKEY *
key_load(const char *path)
{
	EVP_PKEY *key = NULL;
	BIO *bio;

	if ((bio = BIO_new_file(path, "r")) == NULL) {
		ossl_msg("%s: cannot open", path);
		return NULL;
	}
	if ((key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase,
	    NULL)) == NULL) {
		ossl_msg("%s: no unencrypted PEM private key", path);
		goto fail;
	}
	if (!EVP_PKEY_is_a(key, "RSA")) {
		msg("%s: not an RSA key", path);
		goto fail;
	}
	BIO_free(bio);
	return key;
fail:
	EVP_PKEY_free(key);
	BIO_free(bio);
	return NULL;
}

static EVP_PKEY *
key_generate(int64_t bits)
{
	EVP_PKEY *key;

	if ((key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits)) == NULL)
		ossl_msg("RSA-%" PRId64 " key generation failed", bits);
	return key;
}

static void
signer_free(struct signer *s)
{
	EVP_MD_free(s->md);
	EVP_PKEY_free(s->key);
	s->md = NULL;
	s->key = NULL;
}

/* Takes ownership of key, even on failure. */
static int
signer_init(struct signer *s, EVP_PKEY *key)
{
	s->key = key;
	s->md = NULL;
	if (key == NULL)
		return -1;
	if ((s->md = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL) {
		ossl_msg("EVP_MD_fetch(SHA256)");
		signer_free(s);
		return -1;
	}
	return 0;
}

/* RS256 signature of len bytes of in; the caller frees it. */
static unsigned char *
rs256_sign(const struct signer *s, const char *in, size_t len,
    size_t *siglen)
{
	EVP_MD_CTX *mctx = NULL;
	EVP_PKEY_CTX *pctx = NULL;
	unsigned char *sig = NULL;
	size_t n = 0;

	if ((mctx = EVP_MD_CTX_new()) == NULL) {
		ossl_msg("EVP_MD_CTX_new");
		goto fail;
	}
	if (EVP_DigestSignInit(mctx, &pctx, s->md, NULL, s->key) != 1) {
		ossl_msg("EVP_DigestSignInit");
		goto fail;
	}
	/* RS256 is PKCS#1 v1.5: say so instead of trusting the default. */
	if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) <= 0) {
		ossl_msg("EVP_PKEY_CTX_set_rsa_padding");
		goto fail;
	}
	if (EVP_DigestSign(mctx, NULL, &n, (const unsigned char *)in,
	    len) != 1) {
		ossl_msg("EVP_DigestSign (size)");
		goto fail;
	}
	if ((sig = malloc(n)) == NULL) {
		msg("out of memory");
		goto fail;
	}
	if (EVP_DigestSign(mctx, sig, &n, (const unsigned char *)in,
	    len) != 1) {
		ossl_msg("EVP_DigestSign");
		goto fail;
	}
	EVP_MD_CTX_free(mctx);
	*siglen = n;
	return sig;
fail:
	free(sig);
	EVP_MD_CTX_free(mctx);
	return NULL;
}

/*
 * The JWS compact form: base64url(hdr) "." base64url(pl) "." base64url(sig),
 * NUL-terminated, in a buffer the caller frees.
 */
static char *
jws_compact(const struct signer *s, const char *hdr, size_t hlen,
    const char *pl, size_t plen)
{
	unsigned char *sig = NULL;
	char *tok = NULL;
	size_t cap, off, siglen;
	long n;
	int max;

	if (hlen > TOK_MAX_PART || plen > TOK_MAX_PART) {
		msg("header or payload longer than %d bytes", TOK_MAX_PART);
		goto fail;
	}
	if ((max = EVP_PKEY_get_size(s->key)) <= 0) {
		ossl_msg("EVP_PKEY_get_size");
		goto fail;
	}
	cap = BASE64URL_ENCODED_LEN(hlen) + 1 + BASE64URL_ENCODED_LEN(plen) +
	    1 + BASE64URL_ENCODED_LEN((size_t)max) + 1;
	if ((tok = malloc(cap)) == NULL) {
		msg("out of memory");
		goto fail;
	}
	if ((n = base64url_encode((const unsigned char *)hdr, hlen, tok,
	    cap)) < 0)
		goto fail_enc;
	off = (size_t)n;
	tok[off++] = '.';
	if ((n = base64url_encode((const unsigned char *)pl, plen, tok + off,
	    cap - off)) < 0)
		goto fail_enc;
	off += (size_t)n;
	if ((sig = rs256_sign(s, tok, off, &siglen)) == NULL)
		goto fail;
	tok[off++] = '.';
	if (base64url_encode(sig, siglen, tok + off, cap - off) < 0)
		goto fail_enc;
	free(sig);
	return tok;
fail_enc:
	msg("base64url_encode: buffer too small");
fail:
	free(sig);
	free(tok);
	return NULL;
}

static int
json_put_str(json_t *obj, const char *name, const char *val)
{
	if (val == NULL)
		return 0;
	if (json_object_set_new(obj, name, json_string(val)) == -1) {
		msg("%s: cannot put in JSON (not UTF-8?)", name);
		return -1;
	}
	return 0;
}

static int
json_put_time(json_t *obj, const char *name, int64_t now, int64_t off,
    int has)
{
	int64_t t;

	if (!has)
		return 0;
	if (time_add(now, off, &t) == -1) {
		msg("%s: now %+" PRId64 " is out of range", name, off);
		return -1;
	}
	if (json_object_set_new(obj, name, json_integer((json_int_t)t)) == -1) {
		msg("%s: cannot put in JSON", name);
		return -1;
	}
	return 0;
}

static int
json_put_aud(json_t *obj, const struct tok_claims *c)
{
	json_t *arr;
	size_t i;

	if (c->naud == 0)
		return 0;
	if (c->naud == 1)
		return json_put_str(obj, "aud", c->aud[0]);
	if ((arr = json_array()) == NULL ||
	    json_object_set_new(obj, "aud", arr) == -1) {
		msg("aud: cannot put in JSON");
		return -1;
	}
	for (i = 0; i < c->naud; i++) {
		if (json_array_append_new(arr, json_string(c->aud[i])) == -1) {
			msg("aud: cannot put in JSON (not UTF-8?)");
			return -1;
		}
	}
	return 0;
}

/* A random jti: TOK_JTI_BYTES bytes as lower-case hex. */
static int
jti_random(char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char rnd[TOK_JTI_BYTES];
	size_t i;

	if (len < sizeof(rnd) * 2 + 1)
		return -1;
	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		ossl_msg("RAND_bytes");
		return -1;
	}
	for (i = 0; i < sizeof(rnd); i++) {
		buf[i * 2] = hex[rnd[i] >> 4];
		buf[i * 2 + 1] = hex[rnd[i] & 15];
	}
	buf[i * 2] = '\0';
	return 0;
}

/* Compact header JSON in member order alg, typ, kid; caller frees. */
static char *
header_json(const struct tok_claims *c)
{
	json_t *obj;
	char *out = NULL;

	if ((obj = json_object()) == NULL) {
		msg("out of memory");
		return NULL;
	}
	if (json_put_str(obj, "alg", "RS256") == -1 ||
	    json_put_str(obj, "typ", c->typ) == -1 ||
	    json_put_str(obj, "kid", c->kid) == -1)
		goto fail;
	if ((out = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER)) == NULL)
		msg("json_dumps failed");
fail:
	json_decref(obj);
	return out;
}

/* Compact claims JSON; caller frees. */
static char *
payload_json(const struct tok_claims *c)
{
	char jti[TOK_JTI_BYTES * 2 + 1];
	const char *j = c->jti;
	json_t *obj;
	char *out = NULL;

	if (!c->no_jti && j == NULL) {
		if (jti_random(jti, sizeof(jti)) == -1)
			return NULL;
		j = jti;
	}
	if ((obj = json_object()) == NULL) {
		msg("out of memory");
		return NULL;
	}
	if (json_put_str(obj, "iss", c->iss) == -1 ||
	    json_put_str(obj, "sub", c->sub) == -1 ||
	    json_put_aud(obj, c) == -1 ||
	    json_put_time(obj, "exp", c->now, c->exp, c->has_exp) == -1 ||
	    json_put_time(obj, "nbf", c->now, c->nbf, c->has_nbf) == -1 ||
	    json_put_time(obj, "iat", c->now, c->iat, c->has_iat) == -1 ||
	    json_put_str(obj, "jti", c->no_jti ? NULL : j) == -1 ||
	    json_put_str(obj, "client_id", c->client_id) == -1 ||
	    json_put_str(obj, "scope", c->scope) == -1)
		goto fail;
	if ((out = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER)) == NULL)
		msg("json_dumps failed");
fail:
	json_decref(obj);
	return out;
}

/* One signed token for c; caller frees. */
static char *
tok_mint(const struct signer *s, const struct tok_claims *c)
{
	char *hdr = NULL, *pl = NULL, *tok = NULL;

	if ((hdr = header_json(c)) == NULL || (pl = payload_json(c)) == NULL)
		goto fail;
	tok = jws_compact(s, hdr, strlen(hdr), pl, strlen(pl));
fail:
	free(hdr);
	free(pl);
	return tok;
}

static void
claims_default(struct tok_claims *c, int64_t now)
{
	memset(c, 0, sizeof(*c));
	c->kid = TOK_DEF_KID;
	c->typ = TOK_DEF_TYP;
	c->iss = TOK_DEF_ISS;
	c->aud[0] = TOK_DEF_AUD;
	c->naud = 1;
	c->sub = TOK_DEF_SUB;
	c->client_id = TOK_DEF_CLIENT;
	c->scope = TOK_DEF_SCOPE;
	c->now = now;
	c->exp = TOK_DEF_EXP;
	c->nbf = TOK_DEF_NBF;
	c->iat = 0;
	c->has_exp = c->has_nbf = c->has_iat = 1;
}

/* Prints a token and a newline on stdout. */
static int
tok_print(const char *tok)
{
	if (tok == NULL)
		return -1;
	if (printf("%s\n", tok) < 0) {
		msg("stdout: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* One token file (token and newline) in dir. */
static int
tok_write(const char *dir, const char *name, const char *tok)
{
	char path[PATH_MAX];
	char *line;
	size_t len;
	int rc;

	if (path_join(path, sizeof(path), dir, name) == -1)
		return -1;
	len = strlen(tok);
	if ((line = malloc(len + 2)) == NULL) {
		msg("out of memory");
		return -1;
	}
	memcpy(line, tok, len);
	line[len] = '\n';
	line[len + 1] = '\0';
	rc = file_put(path, TOK_MODE_SECRET, 1, line, len + 1);
	free(line);
	return rc;
}

/*
 * keygen
 */

/* A key parameter (n or e) as unsigned big-endian base64url; caller frees. */
static char *
bn_param_b64(const EVP_PKEY *key, const char *name)
{
	unsigned char *bin = NULL;
	char *out = NULL;
	BIGNUM *bn = NULL;
	size_t cap;
	int len;

	if (EVP_PKEY_get_bn_param(key, name, &bn) != 1) {
		ossl_msg("EVP_PKEY_get_bn_param(%s)", name);
		goto fail;
	}
	if ((len = BN_num_bytes(bn)) <= 0) {
		msg("RSA parameter %s is zero", name);
		goto fail;
	}
	cap = BASE64URL_ENCODED_LEN((size_t)len) + 1;
	if ((bin = malloc((size_t)len)) == NULL ||
	    (out = malloc(cap)) == NULL) {
		msg("out of memory");
		goto fail;
	}
	if (BN_bn2bin(bn, bin) != len) {
		ossl_msg("BN_bn2bin(%s)", name);
		goto fail;
	}
	if (base64url_encode(bin, (size_t)len, out, cap) < 0) {
		msg("base64url_encode: buffer too small");
		goto fail;
	}
	free(bin);
	BN_free(bn);
	return out;
fail:
	free(out);
	free(bin);
	BN_free(bn);
	return NULL;
}

/* {"keys":[{kty, use, alg, kid, n, e}]} with a final newline; caller frees. */
static char *
jwks_json(const EVP_PKEY *key, const char *kid)
{
	char *n = NULL, *e = NULL, *out = NULL, *line = NULL;
	json_t *jwks = NULL;
	size_t len;

	if ((n = bn_param_b64(key, OSSL_PKEY_PARAM_RSA_N)) == NULL ||
	    (e = bn_param_b64(key, OSSL_PKEY_PARAM_RSA_E)) == NULL)
		goto fail;
	if ((jwks = json_pack("{s:[{s:s, s:s, s:s, s:s, s:s, s:s}]}", "keys",
	    "kty", "RSA", "use", "sig", "alg", "RS256", "kid", kid,
	    "n", n, "e", e)) == NULL) {
		msg("cannot build the JWKS (kid not UTF-8?)");
		goto fail;
	}
	if ((out = json_dumps(jwks, JSON_INDENT(2) |
	    JSON_PRESERVE_ORDER)) == NULL) {
		msg("json_dumps failed");
		goto fail;
	}
	len = strlen(out);
	if ((line = malloc(len + 2)) == NULL) {
		msg("out of memory");
		goto fail;
	}
	memcpy(line, out, len);
	memcpy(line + len, "\n", 2);
fail:
	free(out);
	json_decref(jwks);
	free(e);
	free(n);
	return line;
}

/*
 * Writes the three key files. All are opened before any is written, and
 * none that was opened is left behind on failure.
 */
static int
keygen_store(const char *dir, int force, const char *data[3],
    const size_t len[3])
{
	static const char *names[3] = {
		TOK_KEY_FILE, TOK_PUB_FILE, TOK_JWKS_FILE
	};
	static const mode_t modes[3] = {
		TOK_MODE_SECRET, TOK_MODE_PUBLIC, TOK_MODE_PUBLIC
	};
	char paths[3][PATH_MAX];
	int fds[3] = { -1, -1, -1 };
	int opened[3] = { 0, 0, 0 };
	int i, failed = 0;

	for (i = 0; i < 3; i++)
		if (path_join(paths[i], sizeof(paths[i]), dir, names[i]) == -1)
			return -1;
	for (i = 0; i < 3; i++) {
		if ((fds[i] = file_open(paths[i], modes[i], force)) == -1)
			goto fail;
		opened[i] = 1;
	}
	for (i = 0; i < 3; i++)
		if (file_write(fds[i], paths[i], data[i], len[i]) == -1)
			goto fail;
	for (i = 0; i < 3; i++) {
		if (file_close(fds[i], paths[i]) == -1)
			failed = 1;
		fds[i] = -1;
	}
	if (!failed)
		return 0;
fail:
	for (i = 0; i < 3; i++) {
		if (fds[i] != -1)
			close(fds[i]);
		if (opened[i])
			unlink(paths[i]);
	}
	return -1;
}

/* Renders the key files and stores them in dir. */
static int
keygen_write(const char *dir, const char *kid, int force,
    const EVP_PKEY *key)
{
	BIO *priv = NULL, *pub = NULL;
	const char *data[3];
	size_t len[3];
	char *jwks = NULL, *p;
	long n;
	int rc = -1;

	/* A secure-memory BIO: the private key's PEM is wiped when freed. */
	if ((priv = BIO_new(BIO_s_secmem())) == NULL ||
	    (pub = BIO_new(BIO_s_mem())) == NULL) {
		ossl_msg("BIO_new");
		goto fail;
	}
	if (PEM_write_bio_PKCS8PrivateKey(priv, key, NULL, NULL, 0, NULL,
	    NULL) != 1) {
		ossl_msg("PEM_write_bio_PKCS8PrivateKey");
		goto fail;
	}
	if (PEM_write_bio_PUBKEY(pub, key) != 1) {
		ossl_msg("PEM_write_bio_PUBKEY");
		goto fail;
	}
	if ((jwks = jwks_json(key, kid)) == NULL)
		goto fail;
	if ((n = BIO_get_mem_data(priv, &p)) <= 0) {
		ossl_msg("BIO_get_mem_data");
		goto fail;
	}
	data[0] = p;
	len[0] = (size_t)n;
	if ((n = BIO_get_mem_data(pub, &p)) <= 0) {
		ossl_msg("BIO_get_mem_data");
		goto fail;
	}
	data[1] = p;
	len[1] = (size_t)n;
	data[2] = jwks;
	len[2] = strlen(jwks);
	rc = keygen_store(dir, force, data, len);
fail:
	free(jwks);
	BIO_free(pub);
	BIO_free(priv);
	return rc;
}

static int
cmd_keygen(const struct cmd *cmd, const struct tok_args *a)
{
	EVP_PKEY *key;
	int rc;

	/* The server refuses a key set whose kid it could not match. */
	if (*a->c.kid == '\0' || strlen(a->c.kid) > JWK_MAX_KID) {
		msg("--kid: 1 to %d bytes", JWK_MAX_KID);
		return usage_cmd(cmd, 0);
	}
	if (dir_make(a->dir) == -1 || (key = key_generate(a->bits)) == NULL)
		return 1;
	rc = keygen_write(a->dir, a->c.kid, a->force, key) == -1 ? 1 : 0;
	EVP_PKEY_free(key);
	return rc;
}

/*
 * mint
 */

/* The clock, for --now's default. */
static int
now_default(int64_t *now)
{
	time_t t;

	if ((t = time(NULL)) == (time_t)-1) {
		msg("time: %s", strerror(errno));
		return -1;
	}
	*now = (int64_t)t;
	return 0;
}

/* Every option's default: the benchmark's claims at the clock's now. */
static int
tok_defaults(struct tok_args *a)
{
	int64_t now;

	if (now_default(&now) == -1)
		return -1;
	memset(a, 0, sizeof(*a));
	claims_default(&a->c, now);
	a->bits = TOK_DEF_BITS;
	a->pool = TOK_DEF_POOL;
	return 0;
}

/* mint and sign: one token signed with --key, printed. */
static int
tok_one(const struct tok_args *a, int verbatim)
{
	struct signer s;
	char *tok;
	int rc;

	if (signer_init(&s, key_load(a->key)) == -1)
		return 1;
	/* sign: verbatim, the bytes given are the bytes signed. */
	tok = verbatim ? jws_compact(&s, a->header, strlen(a->header),
	    a->payload, strlen(a->payload)) : tok_mint(&s, &a->c);
	rc = tok_print(tok) == -1 ? 1 : 0;
	free(tok);
	signer_free(&s);
	return rc;
}

static int
cmd_mint(const struct cmd *cmd, const struct tok_args *a)
{
	(void)cmd;
	return tok_one(a, 0);
}

/*
 * sign
 */

static int
cmd_sign(const struct cmd *cmd, const struct tok_args *a)
{
	(void)cmd;
	return tok_one(a, 1);
}

/*
 * bench
 */

/* The single-token files; foreign ones are signed by the throwaway key. */
static int
bench_files_write(const struct signer *s, const struct signer *foreign,
    const char *dir, const struct tok_claims *base)
{
	const struct bench_file *f;
	struct tok_claims c;
	char *tok;
	size_t i;
	int rc;

	for (i = 0; i < NBENCH; i++) {
		f = &bench_files[i];
		c = *base;
		c.scope = f->scope;
		c.exp = f->exp;
		c.nbf = f->nbf;
		c.iat = f->iat;
		if ((tok = tok_mint(f->foreign ? foreign : s, &c)) == NULL)
			return -1;
		rc = tok_write(dir, f->name, tok);
		free(tok);
		if (rc == -1)
			return -1;
	}
	return 0;
}

/* pool.txt: n tokens, one a line, each with its own random jti. */
static int
bench_pool_write(const struct signer *s, const char *dir,
    const struct tok_claims *base, int64_t n, int distinct_sub)
{
	char path[PATH_MAX], sub[64];
	struct tok_claims c = *base;
	char *tok = NULL;
	int64_t i;
	int fd;

	if (path_join(path, sizeof(path), dir, TOK_POOL_FILE) == -1)
		return -1;
	if ((fd = file_open(path, TOK_MODE_SECRET, 1)) == -1)
		return -1;
	for (i = 1; i <= n; i++) {
		if (distinct_sub) {
			snprintf(sub, sizeof(sub), "%s-%" PRId64, TOK_DEF_SUB,
			    i);
			c.sub = sub;
		}
		if ((tok = tok_mint(s, &c)) == NULL)
			goto fail;
		if (file_write(fd, path, tok, strlen(tok)) == -1 ||
		    file_write(fd, path, "\n", 1) == -1)
			goto fail;
		free(tok);
		tok = NULL;
	}
	return file_close(fd, path);
fail:
	free(tok);
	close(fd);
	return -1;
}

static int
bench_write(const char *keypath, const char *dir,
    const struct tok_claims *base, int64_t pool, int distinct_sub)
{
	struct signer s, foreign;
	int rc = -1;

	if (signer_init(&s, key_load(keypath)) == -1)
		return -1;
	/* Same size and kid as the real key: only the signature differs. */
	if (signer_init(&foreign, key_generate(EVP_PKEY_get_bits(s.key))) ==
	    -1)
		goto fail_s;
	if (bench_files_write(&s, &foreign, dir, base) == -1 ||
	    bench_pool_write(&s, dir, base, pool, distinct_sub) == -1)
		goto fail;
	rc = 0;
fail:
	signer_free(&foreign);
fail_s:
	signer_free(&s);
	return rc;
}

static int
cmd_bench(const struct cmd *cmd, const struct tok_args *a)
{
	(void)cmd;
	if (dir_make(a->dir) == -1 ||
	    bench_write(a->key, a->dir, &a->c, a->pool, a->distinct_sub) == -1)
		return 1;
	return 0;
}

int
main(int argc, char *argv[])
{
	static char progname[] = "cfpm-token";
	struct tok_args a;
	size_t i;
	int rc;

	if (argc < 2) {
		usage_all(stderr);
		return TOK_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage_all(stdout);
		return 0;
	}
	for (i = 0; i < NCMDS; i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			break;
	if (i == NCMDS) {
		msg("unknown command: %s", argv[1]);
		usage_all(stderr);
		return TOK_EXIT_USAGE;
	}
	/* getopt_long names argv[0] in its messages: the tool, not the verb. */
	argv[1] = progname;
	if (tok_defaults(&a) == -1)
		return 1;
	if (tok_parse(&cmds[i], argc - 1, argv + 1, &a, &rc) == 0)
		rc = cmds[i].run(&cmds[i], &a);
	if (fflush(stdout) == EOF || ferror(stdout)) {
		msg("stdout: write error");
		rc = 1;
	}
	return rc;
}
