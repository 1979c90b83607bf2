<?php
/*
 * preload.php: opcache.preload of php-fpm-tuned, run once by the php-fpm
 * master: events.php's functions and the phpseclib3 classes of the RS256
 * check, compiled and linked once per pool instead of per request.
 */
declare(strict_types=1);

require __DIR__ . '/events.php';
require '/usr/share/php/phpseclib3/autoload.php';

// One check with a throwaway key loads (autoloads) every class it uses,
// so all of them are preloaded. The result does not matter.
const PRELOAD_MODULUS_BYTES = 256;
rsa_key_from("\x80" . str_repeat("\x01", PRELOAD_MODULUS_BYTES - 1),
    "\x01\x00\x01")->verify('x', str_repeat("\x00", PRELOAD_MODULUS_BYTES));
