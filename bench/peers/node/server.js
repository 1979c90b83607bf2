'use strict';
/*
 * server.js: the events API (SPEC.md section 1) in Node.js, the
 * benchmark's Node peer: the cluster module (a primary that only forks
 * and replaces workers, one worker per core sharing the listening port),
 * node:http, pg.Pool and fast-jwt (RS256 only, key parsed once per
 * worker, no verified-token cache: every request verifies its token).
 *
 * Same contract as cfpm with auth.errors = rfc6750: the same claim checks
 * (alg, crit, typ, kid, iss, aud, exp, nbf, sub, scope words), the same
 * statuses and JSON bodies. Known difference: JSON.parse keeps the last
 * duplicate member instead of rejecting the token or body.
 *
 * Libraries come from bench/peers/node/node_modules (npm ci of the
 * committed package-lock.json, done by tools/install-deps --bench).
 * Run:
 *   node server.js --listen 127.0.0.1:8081 --workers 1 --pool 16 \
 *     --pg-host /dir --pg-port 5432 --pg-user postgres --pg-db events \
 *     --pubkey jwt.pub.pem [--kid bench-1 --issuer ... --audience ...]
 * --pool is the total number of database connections: each worker's
 * pg.Pool gets pool / workers of them (at least one).
 */
const cluster = require('node:cluster');
const fs = require('node:fs');
const http = require('node:http');
const { createVerifier } = require('fast-jwt');
const pg = require('pg');

const MAX_BODY = 64 * 1024;
const MAX_TOKEN = 8192;
const MAX_DEPTH = 64;
const MAX_ID = 9223372036854775807n;
const REALM = 'Bearer realm="events"';
const SQL_GET = "SELECT id, subject, kind, payload::text, " +
  "to_char(created_at AT TIME ZONE 'UTC', " +
  "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS created " +
  'FROM events WHERE id = $1 AND subject = $2';
const SQL_INSERT = 'INSERT INTO events (subject, kind, payload) ' +
  'VALUES ($1, $2, $3::jsonb) RETURNING id';

/* --name value pairs; every option has a default but the DB and key. */
function options(argv) {
  const o = {
    listen: '127.0.0.1:8081', workers: '1', pool: '8', 'pg-host': '',
    'pg-port': '5432', 'pg-user': 'postgres', 'pg-db': 'events',
    pubkey: '', kid: 'bench-1', issuer: 'https://auth.bench.local',
    audience: 'events-api',
  };
  for (let i = 0; i + 1 < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in o)) throw new Error('unknown option ' + argv[i]);
    o[k] = argv[i + 1];
  }
  return o;
}

function reply(res, status, body, headers) {
  const h = { 'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body) };
  if (headers) Object.assign(h, headers);
  res.writeHead(status, h);
  res.end(body);
}

function fail(res, status, code, headers) {
  reply(res, status, '{"error":"' + code + '"}', headers);
}

/* The one token of an Authorization value: [token, 0] or [null, 401/400]. */
function bearer(h) {
  h = (h || '').replace(/^[ \t]+|[ \t]+$/g, '');
  const m = /[ \t]/.exec(h);
  const scheme = m ? h.slice(0, m.index) : h;
  if (h === '' || scheme.toLowerCase() !== 'bearer') return [null, 401];
  if (!m) return [null, 400];
  const tok = h.slice(m.index).replace(/^[ \t]+/, '');
  if (tok === '' || /[ \t]/.test(tok)) return [null, 400];
  return [tok, 0];
}

/* A finite JSON number. */
function isNumericDate(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

/* Application of the policy to a verified token: {sub, scope} or null. */
function checkToken(cfg, header, c, now) {
  if ('crit' in header) return null;
  if ('typ' in header && header.typ !== 'JWT' && header.typ !== 'at+jwt') {
    return null;
  }
  if ('kid' in header && header.kid !== cfg.kid) return null;
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return null;
  if (c.iss !== cfg.issuer) return null;
  const aud = c.aud;
  if (!(aud === cfg.audience ||
        (Array.isArray(aud) && aud.includes(cfg.audience)))) return null;
  if (!isNumericDate(c.exp) || !(now < c.exp)) return null;
  if ('nbf' in c && (!isNumericDate(c.nbf) || now < c.nbf)) return null;
  if (typeof c.sub !== 'string' || c.sub === '' || c.sub.includes('\0')) {
    return null;
  }
  if ('scope' in c && typeof c.scope !== 'string') return null;
  return { sub: c.sub, scope: c.scope || '' };
}

/* Authenticates req for scope; on failure it has replied and returns null. */
function authorize(cfg, req, res, scope) {
  const [tok, st] = bearer(req.headers.authorization);
  if (st === 401) {
    fail(res, 401, 'unauthorized', { 'WWW-Authenticate': REALM });
    return null;
  }
  if (st === 400) {
    fail(res, 400, 'invalid_request',
      { 'WWW-Authenticate': REALM + ', error="invalid_request"' });
    return null;
  }
  let c = null;
  if (tok.length <= MAX_TOKEN) {
    try {
      const t = cfg.verify(tok);
      c = checkToken(cfg, t.header, t.payload, Date.now() / 1000);
    } catch (e) {
      c = null;
    }
  }
  if (c === null) {
    fail(res, 401, 'invalid_token',
      { 'WWW-Authenticate': REALM + ', error="invalid_token"' });
    return null;
  }
  if (!c.scope.split(' ').includes(scope)) {
    fail(res, 403, 'insufficient_scope', { 'WWW-Authenticate': REALM +
      ', error="insufficient_scope", scope="' + scope + '"' });
    return null;
  }
  return c;
}

function dbFail(res, err) {
  console.error('database error: ' + err.message);
  fail(res, 503, 'unavailable');
}

/* Decimal digits, leading zeros allowed, 1..2^63-1, as a string; or null. */
function parseId(s) {
  if (s === '' || !/^[0-9]+$/.test(s)) return null;
  const t = s.replace(/^0+/, '');
  if (t === '' || t.length > 19 || BigInt(t) > MAX_ID) return null;
  return t;
}

async function getEvent(cfg, req, res, raw) {
  const c = authorize(cfg, req, res, 'events:read');
  if (c === null) return;
  const id = parseId(raw);
  if (id === null) {
    fail(res, 404, 'not_found');
    return;
  }
  let r;
  try {
    r = await cfg.db.query({ text: SQL_GET, values: [id, c.sub],
      rowMode: 'array' });
  } catch (e) {
    dbFail(res, e);
    return;
  }
  if (r.rows.length === 0) {
    fail(res, 404, 'not_found');
    return;
  }
  const row = r.rows[0];
  // payload is jsonb output: already JSON, embedded verbatim.
  reply(res, 200, '{"id":' + row[0] + ',"subject":' + JSON.stringify(row[1]) +
    ',"kind":' + JSON.stringify(row[2]) + ',"payload":' + row[3] +
    ',"created_at":"' + row[4] + '"}');
}

/* application/json, parameters allowed. */
function isJsonType(ct) {
  return (ct || '').split(';', 1)[0].replace(/^[ \t]+|[ \t]+$/g, '')
    .toLowerCase() === 'application/json';
}

/* JSON nesting (objects and arrays) of at most max. */
function depthOk(s, max) {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (inString && ch === '\\') {
      i++;
    } else if (inString) {
      inString = ch !== '"';
    } else if (ch === '"') {
      inString = true;
    } else if (ch === '{' || ch === '[') {
      if (++depth > max) return false;
    } else if (ch === '}' || ch === ']') {
      depth--;
    }
  }
  return true;
}

/* [kind, payload JSON text] of a request body, or null. */
function parseEvent(body) {
  let doc;
  try {
    if (!depthOk(body, MAX_DEPTH)) return null;
    doc = JSON.parse(body);
  } catch (e) {
    return null;
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    return null;
  }
  const p = doc.payload;
  if (typeof doc.kind !== 'string' || doc.kind === '' || p === null ||
      typeof p !== 'object' || Array.isArray(p)) return null;
  return [doc.kind, JSON.stringify(p)];
}

function postEvent(cfg, req, res) {
  const c = authorize(cfg, req, res, 'events:write');
  if (c === null) {
    req.resume();
    return;
  }
  if (Number(req.headers['content-length'] || 0) > MAX_BODY) {
    fail(res, 413, 'payload_too_large');
    req.resume();
    return;
  }
  if (!isJsonType(req.headers['content-type'])) {
    fail(res, 415, 'unsupported_media_type');
    req.resume();
    return;
  }
  const chunks = [];
  let size = 0;
  req.on('data', (d) => {
    size += d.length;
    if (size <= MAX_BODY) chunks.push(d);
  });
  req.on('end', async () => {
    if (size > MAX_BODY) {
      fail(res, 413, 'payload_too_large');
      return;
    }
    const ev = parseEvent(Buffer.concat(chunks).toString('utf8'));
    if (ev === null) {
      fail(res, 400, 'invalid_request');
      return;
    }
    try {
      const r = await cfg.db.query({ text: SQL_INSERT,
        values: [c.sub, ev[0], ev[1]], rowMode: 'array' });
      reply(res, 201, '{"id":' + r.rows[0][0] + '}');
    } catch (e) {
      dbFail(res, e);
    }
  });
}

async function health(cfg, res) {
  try {
    await cfg.db.query('SELECT 1');
    reply(res, 200, '{"status":"ok"}');
  } catch (e) {
    reply(res, 503, '{"status":"unavailable"}');
  }
}

/* Routes on the raw path (no percent-decoding), like cfpm. */
function route(cfg, req, res) {
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  const only = (method, fn) => {
    if (req.method === method) {
      fn();
    } else {
      req.resume();
      fail(res, 405, 'method_not_allowed', { Allow: method });
    }
  };
  if (path === '/auth') {
    only('GET', () => {
      const c = authorize(cfg, req, res, 'events:read');
      if (c !== null) {
        reply(res, 200, JSON.stringify({ sub: c.sub, scope: c.scope }));
      }
    });
  } else if (path === '/events') {
    only('POST', () => postEvent(cfg, req, res));
  } else if (path.startsWith('/events/')) {
    only('GET', () => getEvent(cfg, req, res, path.slice(8)));
  } else if (path === '/health') {
    only('GET', () => health(cfg, res));
  } else {
    req.resume();
    fail(res, 404, 'not_found');
  }
}

function worker(o) {
  const workers = Math.max(1, parseInt(o.workers, 10));
  const cfg = {
    kid: o.kid, issuer: o.issuer, audience: o.audience,
    // alg is pinned here: the header only has to match. Time claims are
    // checked by checkToken, like the other peers.
    verify: createVerifier({ key: fs.readFileSync(o.pubkey, 'utf8'),
      algorithms: ['RS256'], complete: true, cache: false,
      ignoreExpiration: true, ignoreNotBefore: true }),
    db: new pg.Pool({ host: o['pg-host'], port: parseInt(o['pg-port'], 10),
      user: o['pg-user'], database: o['pg-db'],
      max: Math.max(1, Math.floor(parseInt(o.pool, 10) / workers)),
      idleTimeoutMillis: 0 }),
  };
  cfg.db.on('error', (e) => console.error('idle client error: ' + e.message));
  const [host, port] = [o.listen.slice(0, o.listen.lastIndexOf(':')),
    parseInt(o.listen.slice(o.listen.lastIndexOf(':') + 1), 10)];
  const srv = http.createServer((req, res) => route(cfg, req, res));
  srv.keepAliveTimeout = 65000;
  srv.listen(port, host);
}

function primary(o) {
  const n = Math.max(1, parseInt(o.workers, 10));
  for (let i = 0; i < n; i++) cluster.fork();
  cluster.on('exit', (w, code, sig) => {
    console.error('worker ' + w.process.pid + ' exited (' + (sig || code) +
      '), replacing it');
    cluster.fork();
  });
  const stop = () => {
    cluster.removeAllListeners('exit');
    for (const id in cluster.workers) cluster.workers[id].process.kill();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const opts = options(process.argv.slice(2));
if (cluster.isPrimary) {
  primary(opts);
} else {
  worker(opts);
}
