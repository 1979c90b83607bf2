<?php
/*
 * events.php: the functions of the events API (SPEC.md section 1) for
 * PHP-FPM, the benchmark's PHP peer; index.php (the front controller) with
 * consts.php includes it once per request, or opcache preloads it once
 * per pool (php-fpm-tuned: opcache.preload = preload.php).
 */
declare(strict_types=1);

/*
 * Sends a JSON reply. The status goes last: header('WWW-Authenticate: ..')
 * makes PHP switch the status to 401 by itself.
 */
function reply(int $status, string $body, array $headers = []): void
{
    header('Content-Type: application/json');
    foreach ($headers as $h) {
        header($h);
    }
    http_response_code($status);
    echo $body;
}

function fail(int $status, string $code, array $headers = []): void
{
    reply($status, '{"error":"' . $code . '"}', $headers);
}

/* The one persistent connection of this FPM child. */
function db(): PDO
{
    return new PDO(getenv('BENCH_PDO_DSN'), getenv('BENCH_DB_USER'), null, [
        PDO::ATTR_PERSISTENT => true,
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
    ]);
}

/* Runs sql with params via PQexecParams; returns the first row or null. */
function query(string $sql, array $params): ?array
{
    $st = db()->prepare($sql, [PDO::PGSQL_ATTR_DISABLE_PREPARES => true]);
    $st->execute($params);
    $row = $st->fetch(PDO::FETCH_NUM);
    return $row === false ? null : $row;
}

function db_fail(PDOException $e): void
{
    // SQLSTATE class 08: connection exceptions -> retryable 503.
    if (str_starts_with((string)$e->getCode(), '08')) {
        fail(503, 'unavailable');
    } else {
        fail(500, 'server_error');
    }
}

/* Strict base64url without padding; null if malformed. */
function b64url(string $s): ?string
{
    static $alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
        . '0123456789-_';
    if ($s === '' || strspn($s, $alphabet) !== strlen($s)
        || strlen($s) % 4 === 1) {
        return null;
    }
    $d = base64_decode(strtr($s, '-_', '+/'), true);
    return $d === false ? null : $d;
}

/* A JSON object from a token segment, or null. */
function segment_object(string $seg): ?stdClass
{
    $json = b64url($seg);
    if ($json === null) {
        return null;
    }
    $v = json_decode($json, false, 16);
    return $v instanceof stdClass ? $v : null;
}

/* A NumericDate: a finite JSON number (integer or fraction). */
function is_numeric_date($v): bool
{
    return is_int($v) || (is_float($v) && is_finite($v));
}

/*
 * The RS256 check of $sig over $data. BENCH_VERIFY=openssl: openssl_verify
 * with the key file's PEM string, read per request as firebase/php-jwt
 * does: OpenSSL 3.0 decodes the key on every call. BENCH_VERIFY=gmp: the
 * key's modulus and exponent, parsed once per pool and kept in APCu (a key
 * object cannot outlive a request; its numbers can), and RSASSA-PKCS1-v1_5
 * verification as RFC 8017 8.2.2 gives it: s^e mod n must equal the
 * encoding of the SHA-256 digest, compared whole (nothing is parsed).
 */
function signature_ok(string $data, string $sig): bool
{
    if (getenv('BENCH_VERIFY') === 'gmp') {
        [$n, $e] = rsa_numbers();
        return pkcs1_sha256_ok($n, $e, $data, $sig);
    }
    $pem = file_get_contents(getenv('BENCH_PUBKEY'));
    return openssl_verify($data, $sig, $pem, OPENSSL_ALGO_SHA256) === 1;
}

/* [modulus, exponent] of BENCH_PUBKEY as big-endian strings, via APCu. */
function rsa_numbers(): array
{
    $ne = apcu_fetch(APCU_KEY);
    if ($ne === false) {
        $d = openssl_pkey_get_details(openssl_pkey_get_public(
            file_get_contents(getenv('BENCH_PUBKEY'))));
        $ne = [$d['rsa']['n'], $d['rsa']['e']];
        apcu_store(APCU_KEY, $ne);
    }
    return $ne;
}

/* RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017 8.2.2, EMSA-PKCS1-v1_5). */
function pkcs1_sha256_ok(string $n, string $e, string $data, string $sig): bool
{
    $k = strlen(ltrim($n, "\0"));
    if (strlen($sig) !== $k) {
        return false;
    }
    $mod = gmp_import($n);
    $s = gmp_import($sig);
    if (gmp_cmp($s, $mod) >= 0) {
        return false;
    }
    $m = str_pad(gmp_export(gmp_powm($s, gmp_import($e), $mod)), $k, "\0",
        STR_PAD_LEFT);
    $t = SHA256_DIGEST_INFO . hash('sha256', $data, true);
    if ($k < strlen($t) + 11) {
        return false;
    }
    $em = "\x00\x01" . str_repeat("\xff", $k - strlen($t) - 3) . "\x00" . $t;
    return hash_equals($em, $m);
}

/* Verifies the token; returns its claims or null (invalid token). */
function verify(string $tok): ?stdClass
{
    if (strlen($tok) > MAX_TOKEN) {
        return null;
    }
    $seg = explode('.', $tok);
    if (count($seg) !== 3) {
        return null;
    }
    $h = segment_object($seg[0]);
    // alg is pinned: the header only has to match, never chooses.
    if ($h === null || ($h->alg ?? null) !== 'RS256'
        || property_exists($h, 'crit')) {
        return null;
    }
    $typ = $h->typ ?? 'JWT';
    $kid = $h->kid ?? getenv('BENCH_KID');
    if (($typ !== 'JWT' && $typ !== 'at+jwt') || $kid !== getenv('BENCH_KID')) {
        return null;
    }
    $sig = b64url($seg[2]);
    if ($sig === null) {
        return null;
    }
    if (!signature_ok($seg[0] . '.' . $seg[1], $sig)) {
        return null;
    }
    $c = segment_object($seg[1]);
    return ($c !== null && claims_ok($c, time())) ? $c : null;
}

/* iss, aud, exp, nbf, sub and scope types under the policy, at now. */
function claims_ok(stdClass $c, int $now): bool
{
    if (($c->iss ?? null) !== getenv('BENCH_ISSUER')) {
        return false;
    }
    $aud = $c->aud ?? null;
    $want = getenv('BENCH_AUDIENCE');
    if (!($aud === $want || (is_array($aud) && in_array($want, $aud, true)))) {
        return false;
    }
    if (!is_numeric_date($c->exp ?? null) || !($now < $c->exp)) {
        return false;
    }
    if (property_exists($c, 'nbf')
        && (!is_numeric_date($c->nbf) || $now < $c->nbf)) {
        return false;
    }
    $sub = $c->sub ?? null;
    if (!is_string($sub) || $sub === '' || str_contains($sub, "\0")) {
        return false;
    }
    return !property_exists($c, 'scope') || is_string($c->scope);
}

/*
 * Authenticates the request for scope; returns the claims, or null after
 * sending the 400/401/403 reply (RFC 6750).
 */
function authorize(string $scope): ?stdClass
{
    $h = $_SERVER['HTTP_AUTHORIZATION'] ?? '';
    $h = trim($h, " \t");
    $sp = strcspn($h, " \t");
    if ($h === '' || strcasecmp(substr($h, 0, $sp), 'Bearer') !== 0) {
        fail(401, 'unauthorized', [WWW_REALM]);
        return null;
    }
    $tok = ltrim(substr($h, $sp), " \t");
    if ($tok === '' || strcspn($tok, " \t") !== strlen($tok)) {
        fail(400, 'invalid_request',
            [WWW_REALM . ', error="invalid_request"']);
        return null;
    }
    $c = verify($tok);
    if ($c === null) {
        fail(401, 'invalid_token', [WWW_REALM . ', error="invalid_token"']);
        return null;
    }
    if (!in_array($scope, explode(' ', $c->scope ?? ''), true)) {
        fail(403, 'insufficient_scope', [WWW_REALM
            . ', error="insufficient_scope", scope="' . $scope . '"']);
        return null;
    }
    return $c;
}

function get_auth(): void
{
    $c = authorize('events:read');
    if ($c !== null) {
        reply(200, json_encode(['sub' => $c->sub, 'scope' => $c->scope],
            JSON_OUT));
    }
}

/* The id as a canonical decimal string, or null (-> 404). */
function parse_id(string $s): ?string
{
    if ($s === '' || !ctype_digit($s)) {
        return null;
    }
    $s = ltrim($s, '0');
    if ($s === '' || strlen($s) > 19
        || (strlen($s) === 19 && strcmp($s, MAX_ID) > 0)) {
        return null;
    }
    return $s;
}

function get_event(string $raw): void
{
    $c = authorize('events:read');
    if ($c === null) {
        return;
    }
    $id = parse_id($raw);
    if ($id === null) {
        fail(404, 'not_found');
        return;
    }
    try {
        $row = query(SQL_GET, [$id, $c->sub]);
    } catch (PDOException $e) {
        db_fail($e);
        return;
    }
    if ($row === null) {
        fail(404, 'not_found');
        return;
    }
    // payload is jsonb output: already JSON, embedded verbatim.
    reply(200, '{"id":' . $row[0] . ',"subject":'
        . json_encode($row[1], JSON_OUT) . ',"kind":'
        . json_encode($row[2], JSON_OUT) . ',"payload":' . $row[3]
        . ',"created_at":"' . $row[4] . '"}');
}

/* application/json, optionally with parameters. */
function is_json_type(string $ct): bool
{
    $type = strtolower(trim(explode(';', $ct, 2)[0], " \t"));
    return $type === 'application/json';
}

function post_event(): void
{
    $c = authorize('events:write');
    if ($c === null) {
        return;
    }
    if ((int)($_SERVER['CONTENT_LENGTH'] ?? 0) > MAX_BODY) {
        fail(413, 'payload_too_large');
        return;
    }
    if (!is_json_type($_SERVER['CONTENT_TYPE'] ?? '')) {
        fail(415, 'unsupported_media_type');
        return;
    }
    $body = file_get_contents('php://input');
    if (strlen($body) > MAX_BODY) {
        fail(413, 'payload_too_large');
        return;
    }
    $doc = json_decode($body, false, MAX_DEPTH);
    $kind = $doc->kind ?? null;
    if (!($doc instanceof stdClass) || !is_string($kind) || $kind === ''
        || !(($doc->payload ?? null) instanceof stdClass)) {
        fail(400, 'invalid_request');
        return;
    }
    $payload = json_encode($doc->payload,
        JSON_OUT | JSON_PRESERVE_ZERO_FRACTION);
    try {
        $row = query(SQL_INSERT, [$c->sub, $kind, $payload]);
    } catch (PDOException $e) {
        db_fail($e);
        return;
    }
    reply(201, '{"id":' . $row[0] . '}');
}

function health(): void
{
    try {
        query('SELECT 1', []);
        reply(200, '{"status":"ok"}');
    } catch (PDOException $e) {
        reply(503, '{"status":"unavailable"}');
    }
}

/* Routes on the raw path (no percent-decoding), like cfpm. */
function route(string $method, string $path): void
{
    $only = function (string $allowed, callable $fn) use ($method): void {
        if ($method === $allowed) {
            $fn();
        } else {
            fail(405, 'method_not_allowed', ['Allow: ' . $allowed]);
        }
    };
    if ($path === '/auth') {
        $only('GET', 'get_auth');
    } elseif ($path === '/events') {
        $only('POST', 'post_event');
    } elseif (str_starts_with($path, '/events/')) {
        $only('GET', fn() => get_event(substr($path, 8)));
    } elseif ($path === '/health') {
        $only('GET', 'health');
    } else {
        fail(404, 'not_found');
    }
}
