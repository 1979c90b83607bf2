<?php
/*
 * index.php: the events API (SPEC.md section 1) for PHP-FPM, the
 * benchmark's PHP peer. Every request nginx passes to the pool lands here.
 *
 * Same contract as cfpm with auth.errors = rfc6750: RS256 bearer token
 * verified on every request with openssl_verify as firebase/php-jwt does
 * (it is not packaged in Debian) or on GMP (BENCH_VERIFY), the
 * same claim checks (alg, crit, typ, kid, iss,
 * aud, exp, nbf, sub, scope words), the same statuses and JSON bodies.
 * One persistent PDO pgsql connection per FPM child; queries go out with
 * PQexecParams (one round trip, like cfpm's prepared statements).
 *
 * Configuration comes from the pool's env[] entries:
 *   BENCH_PDO_DSN  pgsql:host=...;port=...;dbname=events
 *   BENCH_DB_USER  database user
 *   BENCH_PUBKEY   SPKI PEM public key file
 *   BENCH_ISSUER, BENCH_AUDIENCE, BENCH_KID
 *   BENCH_VERIFY   openssl: openssl_verify with BENCH_PUBKEY's PEM string read
 *                  per request (php-fpm, as firebase/php-jwt does);
 *                  gmp: the key's numbers in APCu, RSASSA-PKCS1-v1_5 on
 *                  GMP (php-fpm-tuned; see README.md)
 * The functions are in events.php (preloaded by php-fpm-tuned).
 * Known differences from cfpm: json_decode keeps the last duplicate
 * member instead of rejecting the token or body.
 */
declare(strict_types=1);

require __DIR__ . '/consts.php';

// Preloaded functions are already declared (php-fpm-tuned).
if (!function_exists('route')) {
    require __DIR__ . '/events.php';
}

$uri = $_SERVER['REQUEST_URI'] ?? '/';
$q = strpos($uri, '?');
route($_SERVER['REQUEST_METHOD'] ?? 'GET',
    $q === false ? $uri : substr($uri, 0, $q));
