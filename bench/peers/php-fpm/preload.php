<?php
/*
 * preload.php: opcache.preload of php-fpm-tuned, run once by the php-fpm
 * master: events.php's functions compiled and linked once per pool
 * instead of bound on every request.
 */
declare(strict_types=1);

require __DIR__ . '/events.php';
