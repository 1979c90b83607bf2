<?php
/*
 * breakdown.php: CPU cost of each step of the PHP peer's request, outside
 * PHP-FPM (php CLI), with the peer's own functions (events.php): token
 * verification with the key as an SPKI PEM string, as an X.509
 * certificate string and as an already parsed key (the key decode is the
 * difference), RSASSA-PKCS1-v1_5 on GMP from the key's numbers
 * (php-fpm-tuned), the JSON work of a POST, and optionally the PDO round trip
 * of each query. The numbers in README.md come from it.
 *
 * Usage (pin it to one CPU; CPU time per call from getrusage):
 *   taskset -c 0 php -d apc.enable_cli=1 [-d opcache.enable_cli=1 \
 *     -d opcache.jit=tracing -d opcache.jit_buffer_size=64M] \
 *     breakdown.php [PDO_DSN [DB_USER]]
 * It makes its own RSA key, certificate and token; with a DSN it also
 * times GET's SELECT and POST's INSERT (run against the bench's seeded
 * database; the INSERT adds rows).
 */
declare(strict_types=1);

const CALLS = 2000;
const BODY = '{"kind":"page_view","payload":{"path":"/pricing","ms":182,'
    . '"ref":"newsletter"}}';

require __DIR__ . '/consts.php';
require __DIR__ . '/events.php';

/* CPU microseconds (user + system) of this process so far. */
function cpu_us(): float
{
    $r = getrusage();
    return ($r['ru_utime.tv_sec'] + $r['ru_stime.tv_sec']) * 1e6
        + $r['ru_utime.tv_usec'] + $r['ru_stime.tv_usec'];
}

/* CPU µs per call of $fn over CALLS calls (after one warm-up call). */
function per_call(callable $fn): float
{
    $fn();
    $t = cpu_us();
    for ($i = 0; $i < CALLS; $i++) {
        $fn();
    }
    return (cpu_us() - $t) / CALLS;
}

function b64(string $s): string
{
    return rtrim(strtr(base64_encode($s), '+/', '-_'), '=');
}

$dir = sys_get_temp_dir() . '/cfpm-php-breakdown-' . getmypid();
mkdir($dir);
$priv = openssl_pkey_new(['private_key_bits' => 2048,
    'private_key_type' => OPENSSL_KEYTYPE_RSA]);
$spki = openssl_pkey_get_details($priv)['key'];
$cert = '';
$csr = openssl_csr_new(['commonName' => 'bench-1'], $priv);
openssl_x509_export(openssl_csr_sign($csr, null, $priv, 3650), $cert);
file_put_contents("$dir/pub.pem", $spki);
file_put_contents("$dir/cert.pem", $cert);
$head = b64('{"alg":"RS256","typ":"JWT","kid":"bench-1"}');
$claims = b64(json_encode(['iss' => 'https://auth.bench.local',
    'aud' => 'events-api', 'sub' => 'client-bench',
    'scope' => 'events:read events:write', 'exp' => time() + 3600]));
openssl_sign("$head.$claims", $sig, $priv, OPENSSL_ALGO_SHA256);
$tok = "$head.$claims." . b64($sig);
putenv('BENCH_ISSUER=https://auth.bench.local');
putenv('BENCH_AUDIENCE=events-api');
putenv('BENCH_KID=bench-1');
$parsed = openssl_pkey_get_public($spki);

$rows = [];
putenv('BENCH_VERIFY=openssl');
foreach (['SPKI PEM string' => "$dir/pub.pem",
          'X.509 certificate string' => "$dir/cert.pem"] as $name => $file) {
    putenv("BENCH_PUBKEY=$file");
    if (verify($tok) === null) {
        fwrite(STDERR, "breakdown: verify() rejects the token ($name)\n");
        exit(1);
    }
    $rows["verify(), key as $name"] = per_call(fn() => verify($tok));
}
$data = "$head.$claims";
putenv('BENCH_VERIFY=gmp');
$rows['verify(), GMP, key numbers in APCu (php-fpm-tuned)'] = per_call(
    fn() => verify($tok));
$ne = rsa_numbers();
$rows['RSASSA-PKCS1-v1_5 on GMP alone (pkcs1_sha256_ok)'] = per_call(
    fn() => pkcs1_sha256_ok($ne[0], $ne[1], $data, $sig));
$rows['openssl_verify, parsed key (the RSA verify)'] = per_call(
    fn() => openssl_verify($data, $sig, $parsed, OPENSSL_ALGO_SHA256));
$rows['key decode: SPKI PEM (openssl_pkey_get_public)'] = per_call(
    fn() => openssl_pkey_get_public($spki));
$rows['key decode: certificate (openssl_pkey_get_public)'] = per_call(
    fn() => openssl_pkey_get_public($cert));
$rows['JSON: token segments + claims (no crypto)'] = per_call(
    fn() => segment_object($head) !== null
        && claims_ok(segment_object($claims), time()));
$rows['JSON: POST body decode + payload encode + reply'] = per_call(
    function (): string {
        $doc = json_decode(BODY, false, MAX_DEPTH);
        $p = json_encode($doc->payload, JSON_OUT | JSON_PRESERVE_ZERO_FRACTION);
        return $p . json_encode('client-bench', JSON_OUT);
    });
if (isset($argv[1])) {
    putenv('BENCH_PDO_DSN=' . $argv[1]);
    putenv('BENCH_DB_USER=' . ($argv[2] ?? 'postgres'));
    $rows['PDO: GET SELECT round trip (client CPU)'] = per_call(
        fn() => query(SQL_GET, [(string)random_int(1, 1000000),
            'client-bench']));
    $rows['PDO: POST INSERT round trip (client CPU)'] = per_call(
        fn() => query(SQL_INSERT, ['client-bench', 'page_view',
            '{"path":"/pricing"}']));
}
unlink("$dir/pub.pem");
unlink("$dir/cert.pem");
rmdir($dir);
printf("| step | CPU µs/call |\n| --- | ---: |\n");
foreach ($rows as $name => $us) {
    printf("| %s | %.1f |\n", $name, $us);
}
printf("\nJIT: %s\n", ini_get('opcache.jit') && ini_get('opcache.enable_cli')
    ? ini_get('opcache.jit') : 'off');
