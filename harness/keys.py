"""
keys.py: RSA key pairs, JWKS files and RS256 tokens for the tests and the
benchmark, made by cfpm-token (tools/cfpm-token.c); while the tool is not
built, by openssl and this module (the tests still run).
"""

import base64
import json
import os
import subprocess
import time

from . import paths
from .contract import AUDIENCE, ISSUER, KID, SCOPE, SUBJECT
from .proc import run

BENCH_TOKENS = ("valid", "readonly", "writeonly", "expired", "notyet",
                "foreign")
TOKEN_POOL = 8              # distinct valid tokens in a set by default
TOKEN_LIFETIME = 7 * 86400  # seconds a minted token is valid
CLAIMS_NBF_AGO = 60         # claims_json(): nbf this many seconds ago
CLAIMS_EXP_IN = 3600        # claims_json(): exp this many seconds ahead
RSA_BITS = 2048


def b64url(data):
    """base64url without padding, as text."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def claims_json(now, **kw):
    """The benchmark token's claims (iss, aud, sub, scope; nbf
    CLAIMS_NBF_AGO before now, exp CLAIMS_EXP_IN after) as compact JSON,
    for tokens signed with Keys.sign(); a keyword sets a claim, None
    leaves it out."""
    d = {"iss": ISSUER, "aud": AUDIENCE, "sub": SUBJECT, "scope": SCOPE,
         "nbf": now - CLAIMS_NBF_AGO, "exp": now + CLAIMS_EXP_IN}
    for k, v in kw.items():
        if v is None:
            d.pop(k, None)
        else:
            d[k] = v
    return json.dumps(d, separators=(",", ":"))


def write_jwks(path, *keys):
    """Writes one JWKS at path holding the keys of every Keys in keys (in
    order), through a temporary file and a rename (a reload never reads a
    half-written file). Returns path."""
    merged = []
    for k in keys:
        with open(k.jwks) as f:
            merged += json.load(f)["keys"]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"keys": merged}, f)
    os.rename(tmp, path)
    return path


class Keys:
    """An RSA key pair in directory: priv, pub (SPKI PEM) and jwks paths
    (jwks only from cfpm-token). tool: the cfpm-token binary."""

    def __init__(self, directory, kid=KID, tool=None):
        self.dir = directory
        self.kid = kid
        self.cfpm_token = tool or paths.CFPM_TOKEN
        os.makedirs(directory, exist_ok=True)
        self.priv = os.path.join(directory, "jwt.key.pem")
        self.pub = os.path.join(directory, "jwt.pub.pem")
        self.jwks = os.path.join(directory, "jwks.json")
        self.tool = os.access(self.cfpm_token, os.X_OK)
        if self.tool:
            rc, out, err = run([self.cfpm_token, "keygen", "--dir",
                                directory, "--kid", kid])
            if rc != 0:
                raise RuntimeError("cfpm-token keygen failed: %s" % err)
        else:
            rc, _, err = run(["openssl", "genpkey", "-algorithm", "RSA",
                              "-pkeyopt", "rsa_keygen_bits:%d" % RSA_BITS,
                              "-out", self.priv])
            if rc == 0:
                rc, _, err = run(["openssl", "pkey", "-in", self.priv,
                                  "-pubout", "-out", self.pub])
            if rc != 0:
                raise RuntimeError("openssl keygen failed: %s" % err)
        for p in (self.priv, self.pub):
            if not os.path.exists(p):
                raise RuntimeError("keygen did not write %s" % p)

    def sign(self, header, payload):
        """Signs raw header and payload text (str) with RS256; returns the
        compact token."""
        if self.tool:
            rc, out, err = run([self.cfpm_token, "sign", "--key", self.priv,
                                "--header", header, "--payload", payload])
            if rc != 0:
                raise RuntimeError("cfpm-token sign failed: %s" % err)
            return out.strip()
        signing_input = (b64url(header.encode()) + "." +
                         b64url(payload.encode())).encode()
        p = subprocess.run(["openssl", "dgst", "-sha256", "-sign",
                            self.priv], input=signing_input,
                           capture_output=True, timeout=30)
        if p.returncode != 0:
            raise RuntimeError("openssl dgst failed: %s" % p.stderr)
        return signing_input.decode() + "." + b64url(p.stdout)

    def mint(self, kid=KID, iss=ISSUER, aud=AUDIENCE, sub=SUBJECT,
             scope=SCOPE, exp=TOKEN_LIFETIME, nbf=-60, typ="JWT", now=None):
        """A token like the benchmark's; pass None to leave a member out
        (kid, scope, typ). exp/nbf are seconds from now."""
        if self.tool:
            argv = [self.cfpm_token, "mint", "--key", self.priv, "--iss",
                    iss, "--aud", aud, "--sub", sub, "--exp", str(exp),
                    "--nbf", str(nbf)]
            argv += ["--no-kid"] if kid is None else ["--kid", kid]
            argv += ["--no-scope"] if scope is None else ["--scope", scope]
            argv += ["--no-typ"] if typ is None else ["--typ", typ]
            if now is not None:
                argv += ["--now", str(now)]
            rc, out, err = run(argv)
            if rc != 0:
                raise RuntimeError("cfpm-token mint failed: %s" % err)
            return out.strip()
        t = int(time.time()) if now is None else now
        header = {"alg": "RS256"}
        if typ is not None:
            header["typ"] = typ
        if kid is not None:
            header["kid"] = kid
        claims = {"iss": iss, "aud": aud, "sub": sub, "client_id": sub,
                  "iat": t, "nbf": t + nbf, "exp": t + exp,
                  "jti": b64url(os.urandom(12))}
        if scope is not None:
            claims["scope"] = scope
        return self.sign(json.dumps(header, separators=(",", ":")),
                         json.dumps(claims, separators=(",", ":")))

    def bench(self, outdir, pool=TOKEN_POOL):
        """The benchmark token set, written into outdir by cfpm-token: a
        dict name -> token for each of BENCH_TOKENS, and 'pool': a list of
        pool distinct valid tokens (outdir/pool.txt)."""
        os.makedirs(outdir, exist_ok=True)
        toks = {}
        if self.tool:
            rc, out, err = run([self.cfpm_token, "bench", "--key",
                                self.priv, "--dir", outdir, "--pool",
                                str(pool)])
            if rc != 0:
                raise RuntimeError("cfpm-token bench failed: %s" % err)
            for n in BENCH_TOKENS:
                with open(os.path.join(outdir, n + ".jwt")) as f:
                    toks[n] = f.read().strip()
            with open(os.path.join(outdir, "pool.txt")) as f:
                toks["pool"] = [t.strip() for t in f if t.strip()]
            return toks
        toks["valid"] = self.mint()
        toks["readonly"] = self.mint(scope="events:read")
        toks["writeonly"] = self.mint(scope="events:write")
        toks["expired"] = self.mint(exp=-3600, nbf=-7200)
        toks["notyet"] = self.mint(nbf=3600)
        other = Keys(os.path.join(outdir, "foreign-key"),
                     tool=self.cfpm_token)
        toks["foreign"] = other.mint()
        toks["pool"] = [self.mint() for _ in range(pool)]
        return toks
